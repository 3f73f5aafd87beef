//===- CudaFakeDeviceTest.cpp - CUDA backend over the fake driver ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend against FakeCuda.cpp in its one-device mode: module
// loading and its errors, the opt-in of large shared memory, launches (the
// fake checks the gpu-flat-v1 parameters and the grid and computes the
// result with the float64 reference), the grid limits, driver errors in
// messages, memory, events, and that the caller's context is left alone.
// Its own executable: the process keeps its CUDA backend once created, so
// the environment is set in main() before any test runs.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Runtime/Runtime.h"
#include "fmha/Runtime/fmha_runtime.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <limits>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::fakeCudaMeta;
using fmha::test::fakeCudaModule;
using fmha::test::TempDir;

namespace {

std::string gLogPath;

std::string readLog() { return fmha::test::readBytes(gLogPath); }
void clearLog() { fmha::test::writeBytes(gLogPath, ""); }

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

Expected<std::unique_ptr<Kernel>> load(const BundleMeta &meta,
                                       const std::string &extra = "") {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(meta, fakeCudaModule(meta, extra), &bytes, &err))
      << err;
  return Kernel::loadBytes(bytes, "fake.fmha");
}

Problem makeProblem(const BundleMeta &m, int64_t b, int64_t sq, int64_t sk) {
  Problem p;
  p.b = b;
  p.hq = m.hq;
  p.hk = m.hk;
  p.sq = sq;
  p.sk = sk;
  p.d = m.d;
  p.dv = m.dv;
  return p;
}

/// Host data of one problem in the kernel's storage, and its reference.
struct Data {
  std::vector<uint16_t> q, k, v;
  ReferenceForward ref;
};

Data makeData(const BundleMeta &m, const Problem &p, unsigned seed) {
  Data data;
  std::vector<double> in[3];
  int64_t counts[3] = {p.qElements(), p.kElements(), p.vElements()};
  std::vector<uint16_t> *out[3] = {&data.q, &data.k, &data.v};
  for (int t = 0; t < 3; ++t) {
    std::vector<double> x = fmha::test::randomNormal(counts[t], seed + t);
    for (double &e : x) {
      uint16_t h = m.dtype == DType::F16
                       ? floatToHalfBits(static_cast<float>(e))
                       : floatToBFloat16Bits(static_cast<float>(e));
      out[t]->push_back(h);
      e = m.dtype == DType::F16 ? halfBitsToFloat(h) : bfloat16BitsToFloat(h);
    }
    in[t] = x;
  }
  ReferenceConfig cfg;
  cfg.b = p.b;
  cfg.hq = p.hq;
  cfg.hk = p.hk;
  cfg.sq = p.sq;
  cfg.sk = p.sk;
  cfg.d = p.d;
  cfg.dv = p.dv;
  cfg.mask = m.mask;
  cfg.scale = m.scale;
  cfg.softcap = m.softcap;
  std::string err;
  EXPECT_TRUE(referenceForward(cfg, in[0], in[1], in[2], &data.ref, &err))
      << err;
  return data;
}

void expectMatches(const BundleMeta &m, const Data &data,
                   const std::vector<uint16_t> &o,
                   const std::vector<float> &lse) {
  ASSERT_EQ(o.size(), data.ref.o.size());
  for (size_t i = 0; i < o.size(); ++i) {
    double got = m.dtype == DType::F16 ? halfBitsToFloat(o[i])
                                       : bfloat16BitsToFloat(o[i]);
    ASSERT_NEAR(got, data.ref.o[i], 1e-2 * (1 + std::fabs(data.ref.o[i])))
        << "o[" << i << "]";
  }
  ASSERT_EQ(lse.size(), data.ref.lse.size());
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(data.ref.lse[i]))
      ASSERT_EQ(lse[i], data.ref.lse[i]) << "lse[" << i << "]";
    else
      ASSERT_NEAR(lse[i], data.ref.lse[i], 1e-4 * (1 + std::fabs(lse[i])))
          << "lse[" << i << "]";
  }
}

/// The fake driver's cuCtxGetCurrent, to check that the backend leaves the
/// calling thread's context as it found it.
void *currentContext() {
  void *lib = dlopen(FMHA_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr);
  using Fn = int (*)(void **);
  auto fn = reinterpret_cast<Fn>(dlsym(lib, "cuCtxGetCurrent"));
  void *ctx = reinterpret_cast<void *>(1);
  EXPECT_EQ(fn(&ctx), 0);
  dlclose(lib);
  return ctx;
}

TEST(CudaFake, Backend) {
  Expected<Backend *> b = getBackend(Target::Cuda);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ((*b)->description(), "cuda: FMHA fake GPU (sm_90, device 0)");
  EXPECT_EQ((*b)->deviceOrdinal(), 0);
  EXPECT_EQ((*b)->target(), Target::Cuda);
  EXPECT_EQ(currentContext(), nullptr);
}

TEST(CudaFake, RunDeviceBuffersAndHostBuffers) {
  struct Case {
    DType dtype;
    int64_t hq, hk, d, dv;
    const char *mask;
    int64_t b, sq, sk;
  } cases[] = {
      {DType::BF16, 4, 4, 16, 16, "0", 2, 33, 17},
      {DType::F16, 8, 2, 32, 16, "b", 1, 40, 70},    // GQA, Sk > Sq
      {DType::BF16, 4, 1, 16, 16, "t", 2, 50, 20},   // MQA, Sq > Sk
      {DType::F16, 2, 2, 8, 8, "b:5,0,2", 3, 1, 37}, // decode, sinks
      {DType::BF16, 6, 3, 16, 8, "xt:7", 1, 19, 19},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.mask);
    BundleMeta m = fakeCudaMeta(c.dtype, c.hq, c.hk, c.d, c.dv, c.mask);
    Expected<std::unique_ptr<Kernel>> k = load(m);
    ASSERT_TRUE(k.ok()) << k.message();
    Problem p = makeProblem(m, c.b, c.sq, c.sk);
    Data data = makeData(m, p, 7);

    // Device buffers through the C++ API.
    Backend &be = (*k)->backend();
    auto upload = [&](const std::vector<uint16_t> &h) {
      Expected<DeviceBuffer> buf = DeviceBuffer::allocate(be, h.size() * 2);
      EXPECT_TRUE(buf.ok()) << buf.message();
      EXPECT_TRUE(be.copyToDevice(buf->get(), h.data(), h.size() * 2).ok());
      return buf.take();
    };
    DeviceBuffer q = upload(data.q), kk = upload(data.k), v = upload(data.v);
    DeviceBuffer o = DeviceBuffer::allocate(be, p.oElements() * 2).take();
    DeviceBuffer lse = DeviceBuffer::allocate(be, p.lseElements() * 4).take();
    ASSERT_TRUE(be.fill(o.get(), 0xFF, p.oElements() * 2, nullptr).ok());
    ForwardArgs a;
    a.q = q.get();
    a.k = kk.get();
    a.v = v.get();
    a.o = o.get();
    a.lse = static_cast<float *>(lse.get());
    clearLog();
    Status s = (*k)->run(p, a);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(be.synchronize(nullptr).ok());
    std::vector<uint16_t> oh(p.oElements());
    std::vector<float> lh(p.lseElements());
    ASSERT_TRUE(be.copyToHost(oh.data(), o.get(), oh.size() * 2).ok());
    ASSERT_TRUE(be.copyToHost(lh.data(), lse.get(), lh.size() * 4).ok());
    expectMatches(m, data, oh, lh);
    char grid[128];
    std::snprintf(grid, sizeof(grid), "grid=%lld,%lld,%lld block=128,1,1",
                  static_cast<long long>((c.sq + 15) / 16),
                  static_cast<long long>(c.hq), static_cast<long long>(c.b));
    EXPECT_TRUE(contains(readLog(), grid)) << readLog();

    // lse may be null: the runtime gives the kernel scratch space.
    std::fill(oh.begin(), oh.end(), 0xFFFF);
    ASSERT_TRUE(be.fill(o.get(), 0xFF, p.oElements() * 2, nullptr).ok());
    a.lse = nullptr;
    s = (*k)->run(p, a);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(be.copyToHost(oh.data(), o.get(), oh.size() * 2).ok());
    expectMatches(m, data, oh, lh);

    // Host buffers: the runtime copies.
    std::vector<uint16_t> o2(p.oElements(), 0xFFFF);
    std::vector<float> l2(p.lseElements(), NAN);
    ForwardArgs h;
    h.q = data.q.data();
    h.k = data.k.data();
    h.v = data.v.data();
    h.o = o2.data();
    h.lse = l2.data();
    s = (*k)->runHost(p, h);
    ASSERT_TRUE(s.ok()) << s.message();
    expectMatches(m, data, o2, l2);
    EXPECT_EQ(currentContext(), nullptr);
  }
}

TEST(CudaFake, LoadErrors) {
  BundleMeta m = fakeCudaMeta(DType::BF16, 4, 2, 16, 16, "b");
  std::string bytes, err;

  // Not a module the driver takes: the JIT log is in the message.
  ASSERT_TRUE(serializeBundle(m, "garbage", &bytes, &err));
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "g.fmha");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::LoadFailed);
  EXPECT_EQ(k.message(),
            "bundle 'g.fmha': cuModuleLoadDataEx failed: "
            "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed); bundle "
            "chip sm_90a, binary_format ptx, device sm_90; JIT log: fake "
            "ptxas fatal: line 1: expected FAKE-CUDA-MODULE (this fake runs "
            "fake modules only)");

  // The kernel symbol is not in the module.
  BundleMeta other = m;
  other.kernel = "other_kernel";
  ASSERT_TRUE(serializeBundle(other, fakeCudaModule(m), &bytes, &err));
  k = Kernel::loadBytes(bytes, "g.fmha");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), "bundle 'g.fmha': cuModuleGetFunction failed: "
                         "CUDA_ERROR_NOT_FOUND (named symbol not found); "
                         "kernel 'other_kernel' not found in the module");

  // More dynamic shared memory than the device has.
  BundleMeta big = m;
  big.sharedBytes = 232449;
  k = load(big);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), "bundle 'fake.fmha': shared_bytes=232449 exceeds the "
                         "device's opt-in limit of 232448 bytes of shared "
                         "memory per block (FMHA fake GPU)");
  big.sharedBytes = 200000;
  k = load(big, "static_shared=40000\n");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), "bundle 'fake.fmha': static shared memory (40000 "
                         "bytes) plus shared_bytes=200000 exceeds the "
                         "device's opt-in limit of 232448 bytes per block");

  // The compiled kernel cannot run block_threads threads.
  k = load(m, "max_threads=64\n");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), "bundle 'fake.fmha': kernel 'fmha_fwd' runs at most "
                         "64 threads per block (96 registers per thread), the "
                         "bundle's block_threads is 128");

  // A backward bundle, a bundle for another ABI.
  BundleMeta bwd = m;
  bwd.kind = KernelKind::Backward;
  k = load(bwd);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(),
            "bundle 'fake.fmha': the cuda backend has no backward ABI yet");
  EXPECT_EQ(currentContext(), nullptr);
}

TEST(CudaFake, LargeSharedMemoryIsOptedIn) {
  BundleMeta m = fakeCudaMeta(DType::F16, 2, 2, 8, 8, "t");
  m.sharedBytes = 100000;
  clearLog();
  Expected<std::unique_ptr<Kernel>> k = load(m);
  ASSERT_TRUE(k.ok()) << k.message();
  EXPECT_TRUE(contains(readLog(), "set max dynamic shared 100000"))
      << readLog();
  Problem p = makeProblem(m, 1, 20, 20);
  Data data = makeData(m, p, 3);
  std::vector<uint16_t> o(p.oElements());
  std::vector<float> lse(p.lseElements());
  ForwardArgs h;
  h.q = data.q.data();
  h.k = data.k.data();
  h.v = data.v.data();
  h.o = o.data();
  h.lse = lse.data();
  Status s = (*k)->runHost(p, h);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(readLog(), "shared=100000")) << readLog();
  expectMatches(m, data, o, lse);

  // At 48 KiB or below nothing is set.
  m.sharedBytes = 48 * 1024;
  clearLog();
  k = load(m);
  ASSERT_TRUE(k.ok()) << k.message();
  EXPECT_FALSE(contains(readLog(), "set max dynamic shared")) << readLog();
}

TEST(CudaFake, GridLimitsLaunchNothing) {
  BundleMeta m = fakeCudaMeta(DType::BF16, 65536, 65536, 1, 1);
  Expected<std::unique_ptr<Kernel>> k = load(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Problem p = makeProblem(m, 1, 1, 1);
  std::vector<uint16_t> q(65536), o(65536);
  std::vector<float> lse(65536);
  ForwardArgs h;
  h.q = q.data();
  h.k = q.data();
  h.v = q.data();
  h.o = o.data();
  h.lse = lse.data();
  clearLog();
  Status s = (*k)->runHost(p, h);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "grid y = Hq = 65536 exceeds the device limit "
                         "65535; nothing was launched");
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();

  m = fakeCudaMeta(DType::BF16, 1, 1, 1, 1);
  k = load(m);
  ASSERT_TRUE(k.ok()) << k.message();
  p = makeProblem(m, 65536, 1, 1);
  s = (*k)->runHost(p, h);
  EXPECT_EQ(s.message(), "grid z = B = 65536 exceeds the device limit "
                         "65535; nothing was launched");
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
}

TEST(CudaFake, DriverErrorsNameTheCall) {
  BundleMeta m = fakeCudaMeta(DType::BF16, 2, 2, 8, 8);
  Expected<std::unique_ptr<Kernel>> k = load(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Problem p = makeProblem(m, 1, 20, 20);
  Data data = makeData(m, p, 1);
  std::vector<uint16_t> o(p.oElements());
  std::vector<float> lse(p.lseElements());
  ForwardArgs h;
  h.q = data.q.data();
  h.k = data.k.data();
  h.v = data.v.data();
  h.o = o.data();
  h.lse = lse.data();

  setenv("FMHA_FAKE_CUDA_FAIL", "cuLaunchKernel=701", 1);
  Status s = (*k)->runHost(p, h);
  unsetenv("FMHA_FAKE_CUDA_FAIL");
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed);
  EXPECT_EQ(s.message(), "cuLaunchKernel failed: "
                         "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many "
                         "resources requested for launch); kernel 'fmha_fwd', "
                         "grid (2,2,1), block (128,1,1), shared 0 bytes");

  setenv("FMHA_FAKE_CUDA_FAIL", "cuCtxSynchronize=700", 1);
  s = (*k)->runHost(p, h);
  unsetenv("FMHA_FAKE_CUDA_FAIL");
  EXPECT_EQ(s.message(), "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS "
                         "(an illegal memory access was encountered)");

  setenv("FMHA_FAKE_CUDA_MEMORY", "1000", 1);
  Expected<void *> mem = (*k)->backend().allocate(4096);
  unsetenv("FMHA_FAKE_CUDA_MEMORY");
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.status().code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(mem.message(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out "
                           "of memory); allocating 4096 bytes on FMHA fake "
                           "GPU");
  EXPECT_EQ(currentContext(), nullptr);
}

TEST(CudaFake, Timer) {
  Backend &be = **getBackend(Target::Cuda);
  Expected<std::unique_ptr<StreamTimer>> t = be.createTimer();
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_TRUE((*t)->start(nullptr).ok());
  ASSERT_TRUE((*t)->stop(nullptr).ok());
  Expected<double> ms = (*t)->elapsedMs();
  ASSERT_TRUE(ms.ok()) << ms.message();
  EXPECT_GE(*ms, 0.0);
  // Reading a stop mark never recorded is a driver error, reported.
  Expected<std::unique_ptr<StreamTimer>> u = be.createTimer();
  ASSERT_TRUE((*u)->start(nullptr).ok());
  Expected<double> bad = (*u)->elapsedMs();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "cuEventElapsedTime failed: "
                           "CUDA_ERROR_INVALID_HANDLE (invalid resource "
                           "handle)");
}

TEST(CudaFake, CApiDevicePointers) {
  BundleMeta m = fakeCudaMeta(DType::F16, 4, 2, 16, 8, "b:3,0,1");
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, fakeCudaModule(m), &bytes, &err));
  fmhaKernel kernel = nullptr;
  ASSERT_EQ(fmhaKernelLoadBytes(bytes.data(), bytes.size(), &kernel),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  fmhaKernelInfo info;
  ASSERT_EQ(fmhaKernelGetInfo(kernel, &info), FMHA_SUCCESS);
  EXPECT_EQ(info.target, FMHA_TARGET_CUDA);
  EXPECT_EQ(info.block_threads, 128);
  EXPECT_EQ(info.shared_bytes, 0);
  EXPECT_STREQ(info.abi, "gpu-flat-v1");
  EXPECT_STREQ(info.binary_format, "ptx");
  int device = -2;
  ASSERT_EQ(fmhaKernelGetDevice(kernel, &device), FMHA_SUCCESS);
  EXPECT_EQ(device, 0);
  const char *desc = nullptr;
  ASSERT_EQ(fmhaBackendDescription(FMHA_TARGET_CUDA, &desc), FMHA_SUCCESS);
  EXPECT_STREQ(desc, "cuda: FMHA fake GPU (sm_90, device 0)");
  EXPECT_EQ(fmhaBackendDescription(7, &desc), FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(fmhaGetLastError(), "fmhaBackendDescription: unknown target 7 "
                                   "(FMHA_TARGET_CPU, _CUDA or _HIP)");

  Problem p = makeProblem(m, 2, 9, 12);
  Data data = makeData(m, p, 11);
  void *d[5] = {};
  size_t sizes[5] = {data.q.size() * 2, data.k.size() * 2, data.v.size() * 2,
                     static_cast<size_t>(p.oElements()) * 2,
                     static_cast<size_t>(p.lseElements()) * 4};
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(fmhaDeviceMalloc(FMHA_TARGET_CUDA, sizes[i], &d[i]), FMHA_SUCCESS)
        << fmhaGetLastError();
  ASSERT_EQ(
      fmhaMemcpyHostToDevice(FMHA_TARGET_CUDA, d[0], data.q.data(), sizes[0]),
      FMHA_SUCCESS);
  ASSERT_EQ(
      fmhaMemcpyHostToDevice(FMHA_TARGET_CUDA, d[1], data.k.data(), sizes[1]),
      FMHA_SUCCESS);
  ASSERT_EQ(
      fmhaMemcpyHostToDevice(FMHA_TARGET_CUDA, d[2], data.v.data(), sizes[2]),
      FMHA_SUCCESS);
  fmhaProblem cp = {p.b, p.hq, p.hk, p.sq, p.sk, p.d, p.dv};
  ASSERT_EQ(fmhaKernelRunForwardDevice(kernel, &cp, d[0], d[1], d[2], d[3],
                                       static_cast<float *>(d[4]), nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  ASSERT_EQ(fmhaDeviceSynchronize(FMHA_TARGET_CUDA, nullptr), FMHA_SUCCESS);
  std::vector<uint16_t> o(p.oElements());
  std::vector<float> lse(p.lseElements());
  ASSERT_EQ(fmhaMemcpyDeviceToHost(FMHA_TARGET_CUDA, o.data(), d[3], sizes[3]),
            FMHA_SUCCESS);
  ASSERT_EQ(
      fmhaMemcpyDeviceToHost(FMHA_TARGET_CUDA, lse.data(), d[4], sizes[4]),
      FMHA_SUCCESS);
  expectMatches(m, data, o, lse);

  // The host-pointer entry point copies for a cuda bundle.
  std::vector<uint16_t> o2(p.oElements(), 0xFFFF);
  std::vector<float> lse2(p.lseElements(), NAN);
  ASSERT_EQ(fmhaKernelRunForward(kernel, &cp, data.q.data(), data.k.data(),
                                 data.v.data(), o2.data(), lse2.data(),
                                 nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  expectMatches(m, data, o2, lse2);

  // Errors: a mismatching problem, a grid over the limit.
  cp.hq = 8;
  EXPECT_EQ(fmhaKernelRunForwardDevice(kernel, &cp, d[0], d[1], d[2], d[3],
                                       static_cast<float *>(d[4]), nullptr),
            FMHA_ERROR_PROBLEM_MISMATCH);
  EXPECT_STREQ(fmhaGetLastError(), "problem Hq=8 does not match bundle Hq=4");
  cp.hq = 4;
  cp.b = 70000;
  EXPECT_EQ(fmhaKernelRunForwardDevice(kernel, &cp, d[0], d[1], d[2], d[3],
                                       static_cast<float *>(d[4]), nullptr),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(fmhaGetLastError(), "grid z = B = 70000 exceeds the device "
                                   "limit 65535; nothing was launched");
  for (void *ptr : d)
    EXPECT_EQ(fmhaDeviceFree(FMHA_TARGET_CUDA, ptr), FMHA_SUCCESS);
  EXPECT_EQ(fmhaDeviceFree(FMHA_TARGET_CUDA, nullptr), FMHA_SUCCESS);
  fmhaKernelDestroy(kernel);
  EXPECT_EQ(currentContext(), nullptr);
}

} // namespace

int main(int argc, char **argv) {
  // Before any test: the process keeps the CUDA backend it first creates.
  static TempDir dir;
  gLogPath = dir.file("fake-cuda.log");
  setenv("FMHA_CUDA_LIBRARY", FMHA_FAKE_CUDA_PATH, 1);
  setenv("FMHA_FAKE_CUDA", "device", 1);
  setenv("FMHA_FAKE_CUDA_LOG", gLogPath.c_str(), 1);
  unsetenv("FMHA_FAKE_CUDA_FAIL");
  unsetenv("FMHA_CUDA_DEVICE");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
