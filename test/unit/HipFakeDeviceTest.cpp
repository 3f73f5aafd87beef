//===- HipFakeDeviceTest.cpp - HIP backend over the fake runtime ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The HIP backend against FakeHip.cpp with two devices, bound to device 1
// ($FMHA_HIP_DEVICE) while the test thread's current device stays 0: every
// call has to switch devices and switch back, and the fake checks that
// modules, memory and launches are on device 1. What every GPU backend does
// (GpuFakeCommonTest.cpp) with HIP's messages, LDS without an opt-in, and
// HIP's 32-bit work-item count. Its own executable: the process keeps its
// HIP backend once created, so the environment is set in main().
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

/// The fake runtime's hipGetDevice: the test thread stays on device 0.
void expectDeviceZero() {
  void *lib = dlopen(FMHA_FAKE_HIP_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using Fn = int (*)(int *);
  auto fn = reinterpret_cast<Fn>(dlsym(lib, "hipGetDevice"));
  int device = -1;
  EXPECT_EQ(fn(&device), 0);
  dlclose(lib);
  EXPECT_EQ(device, 0);
}

FakeTarget gTarget = {
    Target::Hip,
    FMHA_TARGET_HIP,
    "FMHA_FAKE_HIP",
    "",
    1,
    "hip: FMHA fake AMD GPU (304 CUs, wave64, device 1)",
    expectDeviceZero,
    65536,
    {"bundle 'g.fmha': hipModuleLoadData failed: hipErrorInvalidImage "
     "(device kernel image is invalid); bundle chip gfx942, binary_format "
     "hsaco, device FMHA fake AMD GPU",
     "bundle 'g.fmha': hipModuleGetFunction failed: hipErrorNotFound (named "
     "symbol not found); kernel 'other_kernel' not found in the module",
     "bundle 'fake.fmha': kernel 'fmha_fwd': shared_bytes=65537 exceeds the "
     "device's limit of "
     "65536 bytes of shared memory per block (FMHA fake AMD GPU)",
     "bundle 'fake.fmha': kernel 'fmha_fwd': static shared memory (40000 "
     "bytes) plus "
     "shared_bytes=33088 exceeds the device's limit of 65536 bytes per block",
     "bundle 'fake.fmha': kernel 'fmha_fwd' runs at most 64 threads per block "
     "(96 registers per thread), the manifest launches it with 256",
     "bundle 'fake.fmha': hipModuleGetFunction failed: hipErrorNotFound "
     "(named symbol not found); kernel 'fmha_bwd_dkdv' not found in the "
     "module (the manifest names fmha_bwd_prep, fmha_bwd_dkdv, "
     "fmha_bwd_dq)",
     "bundle 'w.fmha': the hip backend runs target hip, binary_format hsaco, "
     "manifests of call gpu only"},
    {{"hipModuleLaunchKernel=701",
      "hipModuleLaunchKernel failed: hipErrorLaunchOutOfResources (too many "
      "resources requested for launch); kernel 'fmha_fwd', grid (2,2,1), "
      "block (256,1,1), shared 0 bytes"},
     {"hipModuleLaunchKernel=12345",
      "hipModuleLaunchKernel failed: hipError_t 12345; kernel 'fmha_fwd', "
      "grid (2,2,1), block (256,1,1), shared 0 bytes"},
     {"hipDeviceSynchronize=700",
      "hipDeviceSynchronize failed: hipErrorIllegalAddress (an illegal memory "
      "access was encountered)"},
     {"hipMemcpy=1",
      "hipMemcpy(HostToDevice) failed: hipErrorInvalidValue (invalid "
      "argument)"},
     {"hipSetDevice=101",
      "hipSetDevice failed: hipErrorInvalidDevice (invalid device ordinal)"}},
    "hipMalloc failed: hipErrorOutOfMemory (out of memory); allocating 4096 "
    "bytes on FMHA fake AMD GPU",
    "hipEventElapsedTime failed: hipErrorInvalidHandle (invalid resource "
    "handle)",
    4294967295,
};

TEST(HipFake, LaunchesRunOnTheBoundDevice) {
  BundleMeta m = fakeMeta(DType::BF16, 4, 2, 16, 16, "b");
  clearLog();
  expectRunsHost(m, 2, 30, 40);
  EXPECT_TRUE(contains(readLog(), "grid=2,4,2 block=256,1,1 shared=0 B=2 "
                                  "Sq=30 Sk=40 device=1"))
      << readLog();
  expectDeviceZero();
}

TEST(HipFake, LdsUpToTheLimitNeedsNoOptIn) {
  BundleMeta m = fakeMeta(DType::F16, 2, 2, 8, 8, "t");
  m.sharedBytes = 65536;
  clearLog();
  expectRunsHost(m, 1, 20, 20);
  EXPECT_TRUE(contains(readLog(), "shared=65536")) << readLog();
  EXPECT_FALSE(contains(readLog(), "set max dynamic shared")) << readLog();
}

TEST(HipFake, WorkItemCountFits32Bits) {
  // grid.x * block.x must stay below 2^32: with 1024 threads a block at
  // most 4194303 blocks in x.
  BundleMeta m = fakeMeta(DType::F16, 1, 1, 1, 1);
  m.blockM = 1;
  m.blockThreads = 1024;
  Expected<std::unique_ptr<Kernel>> k = loadFake(m);
  ASSERT_TRUE(k.ok()) << k.message();
  Problem p = makeProblem(m, 1, 4194303, 1);
  Expected<LaunchPlan> plan = (*k)->plan(Kernel::sizesOf(p));
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->launches[0].dims.grid[0], 4194303);
  p.sq = 4194304;
  const std::string want = "kernel 'fmha_fwd': grid.x = sq = 4194304 "
                           "exceeds the device limit 4194303; nothing was "
                           "launched";
  EXPECT_EQ((*k)->plan(Kernel::sizesOf(p)).message(), want);
  // The pointers are never read: the launch is refused first.
  static uint16_t dummy[1];
  static float lse[1];
  ForwardArgs a;
  a.q = a.k = a.v = a.o = dummy;
  a.lse = lse;
  clearLog();
  Status s = (*k)->run(p, a);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), want);
  EXPECT_FALSE(contains(readLog(), "launch")) << readLog();
}

} // namespace

const FakeTarget &fmha::test::fakeTarget() { return gTarget; }

int main(int argc, char **argv) {
  // Two devices, the backend on device 1, the test thread on device 0.
  return runFakeDeviceTests(argc, argv, gTarget,
                            {{"FMHA_HIP_LIBRARY", FMHA_FAKE_HIP_PATH},
                             {"FMHA_FAKE_HIP_DEVICES", "2"},
                             {"FMHA_HIP_DEVICE", "1"}});
}
