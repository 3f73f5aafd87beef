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

/// The plan of `meta`'s manifest (the legacyManifest of its version-1 abi)
/// for `args`, with the operands at the addresses `args` gives.
LaunchPlan planFor(const BundleMeta &meta, const LaunchArgs &args) {
  Manifest manifest = legacyManifest(meta);
  LaunchBinding binding;
  std::string err;
  EXPECT_TRUE(
      bindLaunch(manifest, args, 132, meta.indexBits, true, &binding, &err))
      << err;
  std::vector<const void *> addresses;
  for (const ManifestOperand &o : manifest.operands)
    addresses.push_back(args.tensors.at(o.name).data);
  LaunchPlan plan;
  EXPECT_TRUE(planLaunch(manifest, binding, addresses, nullptr, &plan, &err))
      << err;
  return plan;
}

const void *at(uintptr_t address) {
  return reinterpret_cast<const void *>(address);
}

TEST(GpuFlatV1, ParameterLayout) {
  BundleMeta m = fakeCudaMeta(DType::F16, 8, 2, 64, 32);
  for (int64_t bits : {64, 32}) {
    m.indexBits = bits;
    LaunchArgs args;
    args.size("b", 2).size("sq", 100).size("sk", 300);
    args.tensor("q", at(0x1000)).tensor("k", at(0x2000));
    args.tensor("v", at(0x3000)).tensor("o", at(0x4000));
    args.tensor("lse", at(0x5000));
    LaunchPlan plan = planFor(m, args);
    ASSERT_EQ(plan.launches.size(), 1u);
    const std::vector<uint64_t> want = {
        0x1000, 0x1000, 0,  2 * 8 * 100 * 64, 1, // q
        0x2000, 0x2000, 0,  2 * 2 * 300 * 64, 1, // k
        0x3000, 0x3000, 0,  2 * 2 * 300 * 32, 1, // v
        0x4000, 0x4000, 0,  2 * 8 * 100 * 32, 1, // o
        0x5000, 0x5000, 0,  2 * 8 * 100,      1, // lse
        2,      100,    300};                    // B, Sq, Sk
    EXPECT_EQ(plan.launches[0].params, want);
    // The manifest says which are 32 bits wide: the kernel's index type.
    const Manifest manifest = legacyManifest(m);
    EXPECT_EQ(manifest.kernels[0].params[2].type,
              bits == 32 ? ManifestParam::Type::I32 : ManifestParam::Type::I64);
    EXPECT_EQ(manifest.kernels[0].params[0].type, ManifestParam::Type::Ptr);
  }
}

TEST(GpuFlatV1, GridRule) {
  BundleMeta m = fakeCudaMeta(DType::F16, 8, 8, 64, 64);
  m.blockM = 64;
  m.blockThreads = 256;
  m.sharedBytes = 65536;
  auto dims = [&](int64_t b, int64_t sq) {
    LaunchArgs args;
    args.size("b", b).size("sq", sq).size("sk", 10);
    for (const char *name : {"q", "k", "v", "o", "lse"})
      args.tensor(name, at(0x1000));
    LaunchPlan plan = planFor(m, args);
    EXPECT_EQ(plan.launches.size(), 1u);
    return plan.launches.empty() ? LaunchDims() : plan.launches[0].dims;
  };
  LaunchDims d = dims(3, 129);
  EXPECT_EQ(d.grid[0], 3); // ceil(129 / 64)
  EXPECT_EQ(d.grid[1], 8);
  EXPECT_EQ(d.grid[2], 3);
  EXPECT_EQ(d.block[0], 256);
  EXPECT_EQ(d.block[1], 1);
  EXPECT_EQ(d.block[2], 1);
  EXPECT_EQ(d.sharedBytes, 65536);
  EXPECT_EQ(dims(1, 128).grid[0], 2);
  EXPECT_EQ(dims(1, 1).grid[0], 1);
}

} // namespace
