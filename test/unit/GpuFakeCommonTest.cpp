//===- GpuFakeCommonTest.cpp - What every GPU backend does alike ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Tests of a GPU backend over its fake library that do not depend on the
// vendor: launches (the fake checks the gpu-flat-v1 parameters and the grid
// and computes the result with the float64 reference) over device and host
// buffers, the grid limits, API errors in messages, events and the C API.
// Linked into the CUDA and the HIP fake-device executables, whose
// fakeTarget() says which backend runs.
//
//===----------------------------------------------------------------------===//

#include "GpuFakeTest.h"

#include "fmha/Runtime/fmha_runtime.h"

#include <cstdlib>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::test;

namespace {

TEST(GpuFake, Backend) {
  Expected<Backend *> b = getBackend(fakeTarget().target);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ((*b)->description(), fakeTarget().description);
  EXPECT_EQ((*b)->deviceOrdinal(), fakeTarget().device);
  EXPECT_EQ((*b)->target(), fakeTarget().target);
  fakeTarget().expectThreadStateKept();
}

TEST(GpuFake, RunDeviceBuffersAndHostBuffers) {
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
    BundleMeta m = fakeMeta(c.dtype, c.hq, c.hk, c.d, c.dv, c.mask);
    Expected<std::unique_ptr<Kernel>> k = loadFake(m);
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
    ForwardArgs a{q.get(), kk.get(), v.get(), o.get(),
                  static_cast<float *>(lse.get())};
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
    std::snprintf(grid, sizeof(grid), "grid=%lld,%lld,%lld block=%lld,1,1",
                  static_cast<long long>((c.sq + 15) / 16),
                  static_cast<long long>(c.hq), static_cast<long long>(c.b),
                  static_cast<long long>(m.blockThreads));
    EXPECT_TRUE(contains(readLog(), grid)) << readLog();
    Expected<LaunchPlan> plan = (*k)->plan(Kernel::sizesOf(p));
    ASSERT_TRUE(plan.ok()) << plan.message();
    ASSERT_EQ(plan->launches.size(), 1u);
    EXPECT_EQ(plan->launches[0].dims.grid[0], (c.sq + 15) / 16);
    EXPECT_EQ(plan->launches[0].dims.block[0], m.blockThreads);

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
    s = (*k)->runHost(p, data.args(o2, l2));
    ASSERT_TRUE(s.ok()) << s.message();
    expectMatches(m, data, o2, l2);
    fakeTarget().expectThreadStateKept();
  }
}

TEST(GpuFake, LoadErrors) {
  const auto &want = fakeTarget().loadErrors;
  BundleMeta m = fakeMeta(DType::BF16, 4, 2, 16, 16, "b");
  std::string bytes, err;

  // Not a module the library takes.
  ASSERT_TRUE(serializeBundle(m, "garbage", &bytes, &err));
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "g.fmha");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::LoadFailed);
  EXPECT_EQ(k.message(), want.badImage);

  // The kernel symbol is not in the module.
  BundleMeta other = m;
  other.kernel = "other_kernel";
  ASSERT_TRUE(serializeBundle(other, fakeModule(m), &bytes, &err));
  k = Kernel::loadBytes(bytes, "g.fmha");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), want.missingKernel);

  // More dynamic shared memory than the device has.
  BundleMeta big = m;
  big.sharedBytes = fakeTarget().sharedLimit + 1;
  k = loadFake(big);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), want.sharedOverLimit);
  big.sharedBytes = fakeTarget().sharedLimit - 32448;
  k = loadFake(big, "static_shared=40000\n");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), want.staticPlusShared);

  // The compiled kernel cannot run block_threads threads.
  k = loadFake(m, "max_threads=64\n");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), want.maxThreads);

  // A backward bundle without its dkdv kernel; a binary format of the
  // other vendor.
  BundleMeta bwd =
      fakeGpuBwdMeta(fakeTarget().target, DType::BF16, 4, 2, 16, 16, "b");
  k = loadFake(bwd, "omit=dkdv\n");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), want.backward);
  BundleMeta wrong = m;
  wrong.binaryFormat = m.binaryFormat == BinaryFormat::Hsaco
                           ? BinaryFormat::Cubin
                           : BinaryFormat::Hsaco;
  Expected<std::unique_ptr<LoadedKernel>> loaded =
      (*getBackend(fakeTarget().target))->load(wrong, fakeModule(m), "w.fmha");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::BadBundle);
  EXPECT_EQ(loaded.message(), want.wrongFormat);
  fakeTarget().expectThreadStateKept();
}

TEST(GpuFake, GridLimitsLaunchNothing) {
  BundleMeta m = fakeMeta(DType::BF16, 65536, 65536, 1, 1);
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Problem p = makeProblem(m, 1, 1, 1);
  std::vector<uint16_t> q(65536), o(65536);
  std::vector<float> lse(65536);
  ForwardArgs h{q.data(), q.data(), q.data(), o.data(), lse.data()};
  clearLog();
  Status s = (*k)->runHost(p, h);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel 'fmha_fwd': grid.y = 65536 exceeds the "
                         "device limit 65535; nothing was launched");
  EXPECT_EQ((*k)->plan(Kernel::sizesOf(p)).message(), s.message());
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();

  m = fakeMeta(DType::BF16, 1, 1, 1, 1);
  k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  p = makeProblem(m, 65536, 1, 1);
  s = (*k)->runHost(p, h);
  EXPECT_EQ(s.message(), "kernel 'fmha_fwd': grid.z = b = 65536 exceeds "
                         "the device limit 65535; nothing was launched");
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
}

TEST(GpuFake, Index32LimitLaunchesNothing) {
  // A bundle with 32-bit indices takes buffers of up to kMaxIndex32Elements
  // elements; one more and the run is refused before anything is launched
  // (the pointers are never read).
  static uint16_t h16[1];
  static float h32[1];
  const int64_t d = 128, rowsAtLimit = kMaxIndex32Elements / d;
  ASSERT_EQ(rowsAtLimit * d, kMaxIndex32Elements);
  BundleMeta m = fakeMeta(DType::BF16, 1, 1, d, d);
  m.indexBits = 32;
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  ForwardArgs f{h16, h16, h16, h16, h32};
  clearLog();
  Status s = (*k)->run(makeProblem(m, 1, rowsAtLimit + 1, 8), f);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), index32TooLarge("q", (rowsAtLimit + 1) * d));
  s = (*k)->run(makeProblem(m, 1, 8, rowsAtLimit + 1), f);
  EXPECT_EQ(s.message(), index32TooLarge("k", (rowsAtLimit + 1) * d));
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
  // At the limit the kernel is launched (and the fake refuses the
  // pointers, which hold one element).
  s = (*k)->run(makeProblem(m, 1, rowsAtLimit, 8), f);
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed) << s.message();
  EXPECT_TRUE(contains(readLog(), "launch")) << readLog();
  // The same bundle with 64-bit indices launches the larger problem.
  m.indexBits = 64;
  k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  clearLog();
  s = (*k)->run(makeProblem(m, 1, rowsAtLimit + 1, 8), f);
  EXPECT_EQ(s.code(), ErrorCode::LaunchFailed) << s.message();
  EXPECT_TRUE(contains(readLog(), "launch")) << readLog();

  // The backward checks the same buffers (dQ's accumulator is q's size).
  BundleMeta bm =
      fakeGpuBwdMeta(fakeTarget().target, DType::BF16, 2, 1, d, d, "0");
  bm.indexBits = 32;
  k = loadFake(bm);
  ASSERT_TRUE(k.ok()) << k.message();
  BackwardArgs bargs{h16, h16, h16, h16, h32, h16, h16, h16, h16};
  clearLog();
  s = (*k)->runBackward(makeProblem(bm, 1, rowsAtLimit / 2 + 1, 8), bargs);
  EXPECT_EQ(s.message(), index32TooLarge("q", (rowsAtLimit / 2 + 1) * 2 * d));
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
}

TEST(GpuFake, ApiErrorsNameTheCall) {
  BundleMeta m = fakeMeta(DType::BF16, 2, 2, 8, 8);
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Problem p = makeProblem(m, 1, 20, 20);
  Data data = makeData(m, p, 1);
  std::vector<uint16_t> o(p.oElements());
  std::vector<float> lse(p.lseElements());
  const std::string failVar = fakeTarget().envPrefix + "_FAIL";
  for (const InjectedFailure &f : fakeTarget().runFailures) {
    setenv(failVar.c_str(), f.fail, 1);
    Status s = (*k)->runHost(p, data.args(o, lse));
    unsetenv(failVar.c_str());
    EXPECT_EQ(s.code(), ErrorCode::LaunchFailed) << f.fail;
    EXPECT_EQ(s.message(), f.message);
  }

  const std::string memoryVar = fakeTarget().envPrefix + "_MEMORY";
  setenv(memoryVar.c_str(), "1000", 1);
  Expected<void *> mem = (*k)->backend().allocate(4096);
  unsetenv(memoryVar.c_str());
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.status().code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(mem.message(), fakeTarget().outOfMemory);
  fakeTarget().expectThreadStateKept();
}

TEST(GpuFake, Timer) {
  Backend &be = **getBackend(fakeTarget().target);
  Expected<std::unique_ptr<StreamTimer>> t = be.createTimer();
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_TRUE((*t)->start(nullptr).ok());
  ASSERT_TRUE((*t)->stop(nullptr).ok());
  Expected<double> ms = (*t)->elapsedMs();
  ASSERT_TRUE(ms.ok()) << ms.message();
  EXPECT_GE(*ms, 0.0);
  // Reading a stop mark never recorded is an API error, reported.
  Expected<std::unique_ptr<StreamTimer>> u = be.createTimer();
  ASSERT_TRUE((*u)->start(nullptr).ok());
  Expected<double> bad = (*u)->elapsedMs();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), fakeTarget().timerNotRecorded);
  fakeTarget().expectThreadStateKept();
}

TEST(GpuFake, CApiDevicePointers) {
  const int target = fakeTarget().capiTarget;
  BundleMeta m = fakeMeta(DType::F16, 4, 2, 16, 8, "b:3,0,1");
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, fakeModule(m), &bytes, &err));
  fmhaKernel kernel = nullptr;
  ASSERT_EQ(fmhaKernelLoadBytes(bytes.data(), bytes.size(), &kernel),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  fmhaKernelInfo info;
  ASSERT_EQ(fmhaKernelGetInfo(kernel, &info), FMHA_SUCCESS);
  EXPECT_EQ(info.target, target);
  EXPECT_EQ(info.block_threads, m.blockThreads);
  EXPECT_EQ(info.shared_bytes, 0);
  EXPECT_STREQ(info.abi, "manifest");
  EXPECT_EQ(info.bundle_version, 2);
  EXPECT_EQ(info.num_kernels, 1);
  EXPECT_STREQ(info.binary_format, toString(m.binaryFormat));
  int device = -2;
  ASSERT_EQ(fmhaKernelGetDevice(kernel, &device), FMHA_SUCCESS);
  EXPECT_EQ(device, fakeTarget().device);
  const char *desc = nullptr;
  ASSERT_EQ(fmhaBackendDescription(target, &desc), FMHA_SUCCESS);
  EXPECT_EQ(desc, fakeTarget().description);
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
    ASSERT_EQ(fmhaDeviceMalloc(target, sizes[i], &d[i]), FMHA_SUCCESS)
        << fmhaGetLastError();
  const std::vector<uint16_t> *inputs[3] = {&data.q, &data.k, &data.v};
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(fmhaMemcpyHostToDevice(target, d[i], inputs[i]->data(), sizes[i]),
              FMHA_SUCCESS);
  fmhaProblem cp = {p.b, p.hq, p.hk, p.sq, p.sk, p.d, p.dv};
  ASSERT_EQ(fmhaKernelRunForwardDevice(kernel, &cp, d[0], d[1], d[2], d[3],
                                       static_cast<float *>(d[4]), nullptr),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  ASSERT_EQ(fmhaDeviceSynchronize(target, nullptr), FMHA_SUCCESS);
  std::vector<uint16_t> o(p.oElements());
  std::vector<float> lse(p.lseElements());
  ASSERT_EQ(fmhaMemcpyDeviceToHost(target, o.data(), d[3], sizes[3]),
            FMHA_SUCCESS);
  ASSERT_EQ(fmhaMemcpyDeviceToHost(target, lse.data(), d[4], sizes[4]),
            FMHA_SUCCESS);
  expectMatches(m, data, o, lse);

  // The host-pointer entry point copies for a GPU bundle.
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
  EXPECT_STREQ(fmhaGetLastError(), "kernel 'fmha_fwd': grid.z = b = 70000 "
                                   "exceeds the device limit 65535; nothing "
                                   "was launched");
  for (void *ptr : d)
    EXPECT_EQ(fmhaDeviceFree(target, ptr), FMHA_SUCCESS);
  EXPECT_EQ(fmhaDeviceFree(target, nullptr), FMHA_SUCCESS);
  fmhaKernelDestroy(kernel);
  fakeTarget().expectThreadStateKept();
}

TEST(GpuFake, FailedRunsFreeTheirDeviceMemory) {
  // runHost puts q, k, v, o and lse on the device in that order. With the
  // device's memory limited so that the i-th allocation fails, and with an
  // injected launch failure after all five, the run fails with the error
  // and frees what it took: afterwards the whole limit can be allocated.
  BundleMeta m = fakeMeta(DType::F16, 4, 2, 16, 8, "b:3,0,1");
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Backend &be = (*k)->backend();
  Problem p = makeProblem(m, 2, 21, 30);
  Data data = makeData(m, p, 11);
  std::vector<uint16_t> o(p.oElements());
  std::vector<float> lse(p.lseElements());
  const size_t bytes[] = {size_t(p.qElements()) * 2, size_t(p.kElements()) * 2,
                          size_t(p.vElements()) * 2, size_t(p.oElements()) * 2,
                          size_t(p.lseElements()) * 4};
  const std::string memoryVar = fakeTarget().envPrefix + "_MEMORY";
  auto allocateAll = [&](size_t limit) {
    Expected<void *> all = be.allocate(limit);
    ASSERT_TRUE(all.ok()) << "device memory left allocated: " << all.message();
    be.deallocate(*all);
  };
  size_t taken = 0;
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    size_t limit = taken + bytes[i] - 1;
    setenv(memoryVar.c_str(), std::to_string(limit).c_str(), 1);
    Status s = (*k)->runHost(p, data.args(o, lse));
    EXPECT_EQ(s.code(), ErrorCode::OutOfMemory) << s.message();
    allocateAll(limit);
    unsetenv(memoryVar.c_str());
    taken += bytes[i];
  }
  const std::string failVar = fakeTarget().envPrefix + "_FAIL";
  setenv(memoryVar.c_str(), std::to_string(taken).c_str(), 1);
  for (const InjectedFailure &f : fakeTarget().runFailures) {
    SCOPED_TRACE(f.fail);
    setenv(failVar.c_str(), f.fail, 1);
    Status s = (*k)->runHost(p, data.args(o, lse));
    unsetenv(failVar.c_str());
    EXPECT_EQ(s.code(), ErrorCode::LaunchFailed) << s.message();
    allocateAll(taken);
  }
  // Within the limit, the same run passes.
  Status s = (*k)->runHost(p, data.args(o, lse));
  unsetenv(memoryVar.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  expectMatches(m, data, o, lse);
  fakeTarget().expectThreadStateKept();
}

} // namespace
