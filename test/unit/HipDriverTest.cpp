//===- HipDriverTest.cpp - HIP backend without a usable device ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The HIP backend's failures before it has a device, over a missing
// library, a library without the HIP functions and the fake runtime
// (FakeHip.cpp) without devices or with injected failures; and the search
// for a vendor library (GpuBackend.h) on its own. None of these creates a
// working backend, so they share a process with the other unit tests; the
// tests with a (fake) device are in HipFakeDeviceTest.cpp, the ones with
// Debian's real runtime in FmhaRunTest.cpp (in a child process).
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"

#include "GpuBackend.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::ScopedEnv;
using fmha::test::startsWith;

namespace {

Status hipBackendError() { return fmha::test::backendError(Target::Hip); }

/// What the backend adds when the machine has no /dev/kfd.
std::string kfdNote() {
  return access("/dev/kfd", F_OK) == 0
             ? ""
             : "; /dev/kfd is missing: no ROCm kernel driver (amdgpu) on "
               "this machine";
}

std::string hipBundle() {
  BundleMeta m =
      fmha::test::fakeGpuMeta(Target::Hip, DType::BF16, 4, 2, 16, 16, "b");
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(m, fmha::test::fakeModule(m), &bytes, &err))
      << err;
  return bytes;
}

TEST(HipDriver, MissingLibrary) {
  ScopedEnv env;
  env.set("FMHA_HIP_LIBRARY", "/nonexistent/libamdhip64.so");
  const std::string want =
      "HIP runtime not found: dlopen /nonexistent/libamdhip64.so failed: "
      "/nonexistent/libamdhip64.so: cannot open shared object file: No such "
      "file or directory";
  EXPECT_EQ(hipBackendError().message(), want);
  // Loading a hip bundle names the bundle and the missing library.
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(hipBundle(), "a");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), ErrorCode::BackendUnavailable);
  EXPECT_EQ(k.message(), "bundle 'a': " + want);
  // A failure is not cached: the next call tries again.
  EXPECT_EQ(hipBackendError().message(), want);
}

TEST(HipDriver, LibraryWithoutHipFunctions) {
  ScopedEnv env;
  env.set("FMHA_HIP_LIBRARY", FMHA_TEST_KERNEL_PATH);
  Status s = hipBackendError();
  EXPECT_TRUE(startsWith(s.message(), std::string("HIP runtime '") +
                                          FMHA_TEST_KERNEL_PATH +
                                          "' lacks hipGetErrorName: "))
      << s.message();
}

TEST(HipDriver, NoDevice) {
  ScopedEnv env;
  env.set("FMHA_HIP_LIBRARY", FMHA_FAKE_HIP_PATH);
  env.set("FMHA_FAKE_HIP", nullptr); // the fake's default: ROCm 5.2, no GPU
  const std::string want = "no AMD GPU found (hipGetDeviceCount: "
                           "hipErrorNoDevice (no ROCm-capable device is "
                           "detected); hipInit: hipErrorInvalidDevice "
                           "(invalid device ordinal)" +
                           kfdNote() + ")";
  EXPECT_EQ(hipBackendError().message(), want);
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(hipBundle(), "a");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.message(), "bundle 'a': " + want);
}

TEST(HipDriver, InitFailures) {
  fmha::test::expectBackendErrors(
      Target::Hip,
      {// hipInit succeeds but there is no device.
       {{{"FMHA_HIP_LIBRARY", FMHA_FAKE_HIP_PATH},
         {"FMHA_FAKE_HIP", "device"},
         {"FMHA_FAKE_HIP_DEVICES", "0"}},
        "no AMD GPU found (hipGetDeviceCount: 0 devices" + kfdNote() + ")"},
       {{{"FMHA_FAKE_HIP_DEVICES", nullptr},
         {"FMHA_FAKE_HIP_FAIL", "hipGetDeviceCount=100"}},
        "no AMD GPU found (hipGetDeviceCount: hipErrorNoDevice (no "
        "ROCm-capable device is detected)" +
            kfdNote() + ")"},
       {{{"FMHA_FAKE_HIP_FAIL", "hipInit=3"}},
        "the HIP runtime did not initialize: hipInit failed: "
        "hipErrorNotInitialized (initialization error)"},
       // hipGetErrorName calls every code it does not know hipErrorUnknown.
       {{{"FMHA_FAKE_HIP_FAIL", "hipInit=4242"}},
        "the HIP runtime did not initialize: hipInit failed: hipError_t 4242"},
       {{{"FMHA_FAKE_HIP_FAIL", "hipInit=999"}},
        "the HIP runtime did not initialize: hipInit failed: hipErrorUnknown "
        "(unknown error)"},
       {{{"FMHA_FAKE_HIP_FAIL", "hipGetDeviceCount=1"}},
        "hipGetDeviceCount failed: hipErrorInvalidValue (invalid argument)"},
       {{{"FMHA_FAKE_HIP_FAIL", "hipDeviceGetName=101"}},
        "hipDeviceGetName failed: hipErrorInvalidDevice (invalid device "
        "ordinal)"},
       {{{"FMHA_FAKE_HIP_FAIL", "hipDeviceGetAttribute=1"}},
        "hipDeviceGetAttribute(MultiprocessorCount) failed: "
        "hipErrorInvalidValue (invalid argument)"},
       {{{"FMHA_FAKE_HIP_FAIL", nullptr}, {"FMHA_HIP_DEVICE", "3"}},
        "FMHA_HIP_DEVICE=3 but the HIP runtime reports 1 device(s)"},
       {{{"FMHA_HIP_DEVICE", "-1"}},
        "FMHA_HIP_DEVICE='-1' is not a device number"}});
}

TEST(ApiLibrary, SearchOrderAndMessages) {
  using fmha::rt::detail::openApiLibrary;
  ScopedEnv env;
  env.set("FMHA_TEST_LIBRARY", nullptr);
  void *handle = nullptr;
  std::string opened;
  // None exists: the first name's reason, and the others tried.
  Status s = openApiLibrary("Test library", "FMHA_TEST_LIBRARY",
                            {"/nonexistent/a.so", "/nonexistent/b.so"}, &handle,
                            &opened);
  EXPECT_EQ(s.code(), ErrorCode::BackendUnavailable);
  EXPECT_EQ(s.message(), "Test library not found: dlopen /nonexistent/a.so "
                         "failed: /nonexistent/a.so: cannot open shared object "
                         "file: No such file or directory (also tried "
                         "/nonexistent/b.so)");
  // One exists but does not load: its reason is the one shown.
  fmha::test::TempDir dir;
  std::string junk = dir.file("junk.so");
  fmha::test::writeBytes(junk, "not an ELF file");
  s = openApiLibrary("Test library", "FMHA_TEST_LIBRARY",
                     {"/nonexistent/a.so", junk.c_str()}, &handle, &opened);
  EXPECT_TRUE(startsWith(s.message(), "Test library not found: dlopen " + junk +
                                          " failed: " + junk + ": "))
      << s.message();
  EXPECT_NE(s.message().find(" (also tried /nonexistent/a.so)"),
            std::string::npos)
      << s.message();
  // The first that loads wins; the environment variable replaces the list.
  s = openApiLibrary("Test library", "FMHA_TEST_LIBRARY",
                     {"/nonexistent/a.so", FMHA_TEST_KERNEL_PATH}, &handle,
                     &opened);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(opened, FMHA_TEST_KERNEL_PATH);
  dlclose(handle);
  env.set("FMHA_TEST_LIBRARY", "/nonexistent/c.so");
  s = openApiLibrary("Test library", "FMHA_TEST_LIBRARY",
                     {FMHA_TEST_KERNEL_PATH}, &handle, &opened);
  EXPECT_TRUE(startsWith(s.message(), "Test library not found: dlopen "
                                      "/nonexistent/c.so failed: "))
      << s.message();
}

} // namespace
