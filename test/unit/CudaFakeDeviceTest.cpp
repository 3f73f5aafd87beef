//===- CudaFakeDeviceTest.cpp - CUDA backend over the fake driver ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend against FakeCuda.cpp in its one-device mode: what every
// GPU backend does (GpuFakeCommonTest.cpp) with the driver's messages, the
// opt-in of large shared memory, and that the caller's context is left
// alone. Its own executable: the process keeps its CUDA backend once
// created, so the environment is set in main() before any test runs.
//
//===----------------------------------------------------------------------===//

#include "GpuFakeTest.h"

#include "fmha/Runtime/fmha_runtime.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::test;

namespace {

/// The fake driver's cuCtxGetCurrent, to check that the backend leaves the
/// calling thread's context as it found it (none).
void expectNoContext() {
  void *lib = dlopen(FMHA_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using Fn = int (*)(void **);
  auto fn = reinterpret_cast<Fn>(dlsym(lib, "cuCtxGetCurrent"));
  void *ctx = reinterpret_cast<void *>(1);
  EXPECT_EQ(fn(&ctx), 0);
  dlclose(lib);
  EXPECT_EQ(ctx, nullptr);
}

FakeTarget gTarget = {
    Target::Cuda,
    FMHA_TARGET_CUDA,
    "FMHA_FAKE_CUDA",
    "",
    0,
    "cuda: FMHA fake GPU (sm_90, device 0)",
    expectNoContext,
    232448,
    {"bundle 'g.fmha': cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a "
     "PTX JIT compilation failed); bundle chip sm_90a, binary_format ptx, "
     "device sm_90; JIT log: fake ptxas fatal: line 1: expected "
     "FAKE-CUDA-MODULE (this fake runs fake modules only)",
     "bundle 'g.fmha': cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND "
     "(named symbol not found); kernel 'other_kernel' not found in the module",
     "bundle 'fake.fmha': kernel 'fmha_fwd': shared_bytes=232449 exceeds the "
     "device's opt-in "
     "limit of 232448 bytes of shared memory per block (FMHA fake GPU)",
     "bundle 'fake.fmha': kernel 'fmha_fwd': static shared memory (40000 "
     "bytes) plus "
     "shared_bytes=200000 exceeds the device's opt-in limit of 232448 bytes "
     "per block",
     "bundle 'fake.fmha': kernel 'fmha_fwd' runs at most 64 threads per block "
     "(96 registers per thread), the manifest launches it with 128",
     "bundle 'fake.fmha': cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND "
     "(named symbol not found); kernel 'fmha_bwd_dkdv' not found in the "
     "module (the manifest names fmha_bwd_prep, fmha_bwd_dkdv, "
     "fmha_bwd_dq)",
     "bundle 'w.fmha': the cuda backend runs target cuda, binary_format cubin "
     "or ptx, manifests of call gpu only"},
    {{"cuLaunchKernel=701",
      "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many "
      "resources requested for launch); kernel 'fmha_fwd', grid (2,2,1), "
      "block (128,1,1), shared 0 bytes"},
     {"cuCtxSynchronize=700",
      "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory "
      "access was encountered)"},
     {"cuMemcpyHtoD_v2=1",
      "cuMemcpyHtoD failed: CUDA_ERROR_INVALID_VALUE (invalid argument)"},
     {"cuCtxGetCurrent=201",
      "cuCtxGetCurrent failed: CUDA_ERROR_INVALID_CONTEXT (invalid device "
      "context)"}},
    "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory); allocating "
    "4096 bytes on FMHA fake GPU",
    "cuEventElapsedTime failed: CUDA_ERROR_INVALID_HANDLE (invalid resource "
    "handle)",
    0,
};

TEST(CudaFake, LargeSharedMemoryIsOptedIn) {
  BundleMeta m = fakeMeta(DType::F16, 2, 2, 8, 8, "t");
  m.sharedBytes = 100000;
  clearLog();
  expectRunsHost(m, 1, 20, 20);
  EXPECT_TRUE(contains(readLog(), "set max dynamic shared 100000"))
      << readLog();
  EXPECT_TRUE(contains(readLog(), "shared=100000")) << readLog();

  // At 48 KiB or below nothing is set.
  m.sharedBytes = 48 * 1024;
  clearLog();
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  EXPECT_FALSE(contains(readLog(), "set max dynamic shared")) << readLog();
}

TEST(CudaFake, BackwardKernelsAreEachOptedIn) {
  BundleMeta m =
      fakeGpuBwdMeta(Target::Cuda, DType::BF16, 2, 1, 8, 8, "t", true);
  m.sharedBytes = 100000;
  clearLog();
  std::string bytes, err;
  ASSERT_TRUE(serializeBundle(m, fakeModule(m), &bytes, &err)) << err;
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "b.fmha");
  ASSERT_TRUE(k.ok()) << k.message();
  std::string log = readLog();
  size_t count = 0;
  for (size_t at = log.find("set max dynamic shared 100000");
       at != std::string::npos;
       at = log.find("set max dynamic shared 100000", at + 1))
    ++count;
  EXPECT_EQ(count, 3u) << log;
  // The fake refuses a launch of a function not opted in: all three run.
  Problem p = makeProblem(m, 1, 20, 20);
  std::vector<uint16_t> in(p.qElements(), 0), dq(p.qElements()),
      dk(p.kElements()), dv(p.vElements());
  std::vector<float> lse(p.lseElements(), 0.0f);
  BackwardArgs a;
  a.q = a.k = a.v = a.o = a.dO = in.data();
  a.lse = lse.data();
  a.dq = dq.data();
  a.dk = dk.data();
  a.dv = dv.data();
  Status s = (*k)->runBackwardHost(p, a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(readLog(), "kernel=fmha_bwd_dq")) << readLog();
}

} // namespace

const FakeTarget &fmha::test::fakeTarget() { return gTarget; }

int main(int argc, char **argv) {
  return runFakeDeviceTests(argc, argv, gTarget,
                            {{"FMHA_CUDA_LIBRARY", FMHA_FAKE_CUDA_PATH},
                             {"FMHA_CUDA_DEVICE", nullptr}});
}
