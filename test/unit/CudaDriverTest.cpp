//===- CudaDriverTest.cpp - CUDA backend without a usable driver ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend's failures before it has a device (missing library,
// library without the driver functions, no device, a failing cuInit), the
// gpu-flat-v1 parameter packing and the grid rule. None of these creates a
// working backend, so they share a process with the other unit tests; the
// tests that need a (fake) device are in CudaFakeDeviceTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::fakeCudaMeta;
using fmha::test::fakeModule;
using fmha::test::ScopedEnv;
using fmha::test::startsWith;

namespace {

Status cudaBackendError() { return fmha::test::backendError(Target::Cuda); }

std::string cudaBundle() {
  BundleMeta m = fakeCudaMeta(DType::BF16, 4, 2, 16, 16, "b");
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(m, fakeModule(m), &bytes, &err)) << err;
  return bytes;
}

TEST(CudaDriver, MissingLibrary) {
  ScopedEnv env;
  env.set("FMHA_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  Status s = cudaBackendError();
  EXPECT_EQ(s.message(), "CUDA driver not found: dlopen "
                         "/nonexistent/libcuda.so.1 failed: "
                         "/nonexistent/libcuda.so.1: cannot open shared "
                         "object file: No such file or directory");
  // Loading a cuda bundle names the bundle and the driver problem.
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(cudaBundle(), "a");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::BackendUnavailable);
  EXPECT_TRUE(startsWith(k.message(), "bundle 'a': CUDA driver not found: "
                                      "dlopen /nonexistent/libcuda.so.1 "
                                      "failed: "))
      << k.message();
  // A failure is not cached: the next call tries again.
  s = cudaBackendError();
  EXPECT_TRUE(startsWith(s.message(), "CUDA driver not found")) << s.message();
}

TEST(CudaDriver, DefaultLibraryName) {
  ScopedEnv env;
  env.set("FMHA_CUDA_LIBRARY", nullptr);
  if (void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  Status s = cudaBackendError();
  EXPECT_TRUE(startsWith(s.message(), "CUDA driver not found: dlopen "
                                      "libcuda.so.1 failed: libcuda.so.1: "))
      << s.message();
  env.set("FMHA_CUDA_LIBRARY", ""); // empty: the default name too
  s = cudaBackendError();
  EXPECT_TRUE(startsWith(s.message(), "CUDA driver not found: dlopen "
                                      "libcuda.so.1 failed: "))
      << s.message();
}

TEST(CudaDriver, LibraryWithoutDriverFunctions) {
  ScopedEnv env;
  env.set("FMHA_CUDA_LIBRARY", FMHA_TEST_KERNEL_PATH);
  Status s = cudaBackendError();
  EXPECT_TRUE(startsWith(s.message(), std::string("CUDA driver '") +
                                          FMHA_TEST_KERNEL_PATH +
                                          "' lacks cuGetErrorName: "))
      << s.message();
}

TEST(CudaDriver, NoDevice) {
  ScopedEnv env;
  env.set("FMHA_CUDA_LIBRARY", FMHA_FAKE_CUDA_PATH);
  env.set("FMHA_FAKE_CUDA", nullptr); // the fake's default: no device
  Status s = cudaBackendError();
  EXPECT_EQ(s.message(), "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE "
                         "(no CUDA-capable device is detected)");
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(cudaBundle(), "a");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), "bundle 'a': no CUDA device: cuInit failed: "
                         "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
                         "detected)");
}

TEST(CudaDriver, InitFailures) {
  fmha::test::expectBackendErrors(
      Target::Cuda,
      {{{{"FMHA_CUDA_LIBRARY", FMHA_FAKE_CUDA_PATH},
         {"FMHA_FAKE_CUDA", "device"},
         {"FMHA_FAKE_CUDA_DEVICES", "0"}},
        "no CUDA device: the driver reports 0 devices"},
       {{{"FMHA_FAKE_CUDA_DEVICES", nullptr},
         {"FMHA_FAKE_CUDA_FAIL", "cuInit=3"}},
        "the CUDA driver did not initialize: cuInit failed: "
        "CUDA_ERROR_NOT_INITIALIZED (initialization error)"},
       {{{"FMHA_FAKE_CUDA_FAIL", "cuInit=12345"}},
        "the CUDA driver did not initialize: cuInit failed: CUresult 12345"},
       {{{"FMHA_FAKE_CUDA_FAIL", "cuDevicePrimaryCtxRetain=101"}},
        "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_INVALID_DEVICE (invalid "
        "device ordinal)"},
       {{{"FMHA_FAKE_CUDA_FAIL", "cuDeviceGetAttribute=1"}},
        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR) failed: "
        "CUDA_ERROR_INVALID_VALUE (invalid argument)"},
       {{{"FMHA_FAKE_CUDA_FAIL", nullptr}, {"FMHA_CUDA_DEVICE", "3"}},
        "FMHA_CUDA_DEVICE=3 but the driver reports 1 device(s)"},
       {{{"FMHA_CUDA_DEVICE", "gpu0"}},
        "FMHA_CUDA_DEVICE='gpu0' is not a device number"}});
}

TEST(GpuFlatV1, ParameterLayout) {
  Problem p;
  p.b = 2;
  p.hq = 8;
  p.hk = 2;
  p.sq = 100;
  p.sk = 300;
  p.d = 64;
  p.dv = 32;
  ForwardArgs a;
  a.q = reinterpret_cast<const void *>(uintptr_t(0x1000));
  a.k = reinterpret_cast<const void *>(uintptr_t(0x2000));
  a.v = reinterpret_cast<const void *>(uintptr_t(0x3000));
  a.o = reinterpret_cast<void *>(uintptr_t(0x4000));
  a.lse = reinterpret_cast<float *>(uintptr_t(0x5000));
  uint64_t v[kGpuFlatV1NumParams];
  packGpuFlatV1(p, a, v);
  const uint64_t want[28] = {0x1000, 0x1000, 0,  2 * 8 * 100 * 64, 1, // q
                             0x2000, 0x2000, 0,  2 * 2 * 300 * 64, 1, // k
                             0x3000, 0x3000, 0,  2 * 2 * 300 * 32, 1, // v
                             0x4000, 0x4000, 0,  2 * 8 * 100 * 32, 1, // o
                             0x5000, 0x5000, 0,  2 * 8 * 100,      1, // lse
                             2,      100,    300}; // B, Sq, Sk
  for (int i = 0; i < 28; ++i)
    EXPECT_EQ(v[i], want[i]) << "parameter " << i;
}

TEST(GpuFlatV1, GridRuleAndLimits) {
  BundleMeta m = fakeCudaMeta(DType::F16, 8, 8, 64, 64);
  m.blockM = 64;
  m.blockThreads = 256;
  m.sharedBytes = 65536;
  Problem p;
  p.b = 3;
  p.hq = 8;
  p.hk = 8;
  p.sq = 129;
  p.sk = 10;
  p.d = p.dv = 64;
  Expected<LaunchDims> d = gpuLaunchDims(m, p);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->grid[0], 3); // ceil(129 / 64)
  EXPECT_EQ(d->grid[1], 8);
  EXPECT_EQ(d->grid[2], 3);
  EXPECT_EQ(d->block[0], 256);
  EXPECT_EQ(d->block[1], 1);
  EXPECT_EQ(d->block[2], 1);
  EXPECT_EQ(d->sharedBytes, 65536);
  p.sq = 128;
  EXPECT_EQ(gpuLaunchDims(m, p)->grid[0], 2);
  p.sq = 1;
  EXPECT_EQ(gpuLaunchDims(m, p)->grid[0], 1);

  p.hq = p.hk = 65536;
  d = gpuLaunchDims(m, p);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.message(), "grid y = Hq = 65536 exceeds the device limit "
                         "65535; nothing was launched");
  p.hq = p.hk = 65535;
  EXPECT_TRUE(gpuLaunchDims(m, p).ok());
  p.b = 65536;
  EXPECT_EQ(gpuLaunchDims(m, p).message(),
            "grid z = B = 65536 exceeds the device limit 65535; nothing was "
            "launched");
  p.b = 1;
  p.sq = int64_t(64) * 2147483648LL;
  EXPECT_EQ(gpuLaunchDims(m, p).message(),
            "grid x = ceil(Sq / block_m) = 2147483648 exceeds the device "
            "limit 2147483647; nothing was launched");
  p.sq = 4;
  BundleMeta cpu = fmha::test::testMeta("k", DType::F32, 8, 8, 64, 64);
  EXPECT_EQ(gpuLaunchDims(cpu, p).message(),
            "the bundle states no GPU launch (block_m and block_threads must "
            "be positive)");
}

} // namespace
