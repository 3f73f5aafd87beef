//===- FmhaRunTest.cpp - The fmha-run tool end to end ---------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Runs the fmha-run binary on bundles around the naive test kernels
// (TestKernel.cpp) and checks its output and exit status.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Npy.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::CommandResult;
using fmha::test::TempDir;
using fmha::test::testMeta;

namespace {

class FmhaRun : public ::testing::Test {
protected:
  /// Writes a bundle for a test kernel and returns its path.
  std::string bundle(const std::string &kernel, DType t, int64_t hq, int64_t hk,
                     int64_t d, int64_t dv, const char *mask = "0",
                     float scale = 0, float softcap = 0) {
    std::string path = dir_.file(kernel + std::to_string(counter_++) + ".fmha");
    std::string err;
    EXPECT_TRUE(writeBundle(
        path, testMeta(kernel, t, hq, hk, d, dv, mask, scale, softcap),
        fmha::test::testKernelBinary(), &err))
        << err;
    return path;
  }

  CommandResult run(const std::string &args) {
    return fmha::test::runCommand(std::string(FMHA_RUN_PATH) + " " + args);
  }

  TempDir dir_;
  int counter_ = 0;
};

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

TEST_F(FmhaRun, HelpAndVersion) {
  CommandResult r = run("--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_TRUE(contains(r.output, "USAGE: fmha-run FILE"));
  EXPECT_TRUE(contains(r.output, "--show-mask"));
  EXPECT_TRUE(contains(r.output, "visible (i,j) pairs")) << r.output;
  EXPECT_TRUE(contains(r.output, "$FMHA_HIP_LIBRARY")) << r.output;
  r = run("-h");
  EXPECT_EQ(r.exitCode, 0);
  r = run("--version");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_TRUE(contains(r.output, "fmha-run (FMHA) 0.1.0")) << r.output;
}

TEST_F(FmhaRun, ValidatePassesForCorrectKernels) {
  struct Case {
    std::string bundle, args;
  } cases[] = {
      {bundle("naive_f32", DType::F32, 4, 2, 16, 8), "-b 2 --sq 9 --sk 13"},
      {bundle("naive_f32_b", DType::F32, 2, 2, 8, 8, "b"),
       "-b=1 --sq=7 --sk=3"}, // rows without keys: o = 0, lse = -inf
      {bundle("naive_f32_sink", DType::F32, 2, 1, 8, 4, "t:3,0,2", 0.25f, 5.0f),
       "-b 1 -sq 12 -sk 12 --mask t:3,0,2 --scale 0.25 --softcap=5"},
      {bundle("naive_f16_xb", DType::F16, 2, 2, 16, 16, "xb:5"),
       "-b 2 --sq 8 --sk 20 --dtype f16 --seed 5"},
      {bundle("naive_bf16_t", DType::BF16, 4, 1, 32, 16, "t"),
       "-b 1 --sq 16 --sk 16 --hq 4 --hk 1 -d 32 --dv 16"},
  };
  for (const Case &c : cases) {
    CommandResult r = run(c.bundle + " " + c.args + " --validate");
    EXPECT_EQ(r.exitCode, 0) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "max_abs_err=")) << r.output;
    EXPECT_TRUE(contains(r.output, " rel_err=")) << r.output;
    EXPECT_TRUE(contains(r.output, " lse_max_abs_err=")) << r.output;
    EXPECT_TRUE(contains(r.output, "\nPASS")) << r.output;
  }
}

TEST_F(FmhaRun, ValidateFailsForFlawedKernels) {
  struct Case {
    std::string bundle, args, reason;
  } cases[] = {
      {bundle("flawed_perturb_f32", DType::F32, 1, 1, 8, 8),
       "-b 1 --sq 4 --sk 4", "rel_err"},
      {bundle("flawed_no_output_f32", DType::F32, 1, 1, 8, 8),
       "-b 1 --sq 4 --sk 4", "32 NaN in o"},
      {bundle("flawed_lse_f32_b", DType::F32, 1, 1, 8, 8, "b"),
       "-b 1 --sq 6 --sk 4",
       "2 lse rows where -inf does not match the reference (first: b=0 h=0 "
       "i=0, got 0, reference -inf)"},
  };
  for (const Case &c : cases) {
    CommandResult r = run(c.bundle + " " + c.args + " --validate");
    EXPECT_EQ(r.exitCode, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "\nFAIL: ")) << r.output;
    EXPECT_TRUE(contains(r.output, c.reason)) << r.output;
  }
}

TEST_F(FmhaRun, SignatureFlagsMustMatchBundle) {
  std::string b = bundle("naive_f32", DType::F32, 16, 4, 64, 32);
  struct Case {
    const char *args, *message;
  } cases[] = {
      {"--hq=8", "--hq=8 does not match the bundle (hq=16)"},
      {"--hk 2", "--hk=2 does not match the bundle (hk=4)"},
      {"-d 128", "-d=128 does not match the bundle (d=64)"},
      {"--dv=64", "--dv=64 does not match the bundle (dv=32)"},
      {"--dtype f16", "--dtype=f16 does not match the bundle (dtype=f32)"},
      {"--mask t", "--mask=t does not match the bundle (mask=0)"},
      {"--scale 0.5", "--scale=0.5 does not match the bundle (scale=0.125)"},
      {"--softcap 30", "--softcap=30 does not match the bundle (softcap=0)"},
      {"--block-m 32", "--block-m=32 does not match the bundle (block_m=64)"},
  };
  for (const Case &c : cases) {
    CommandResult r = run(b + " -b 1 --sq 4 --sk 4 " + c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args;
    EXPECT_EQ(r.output, std::string("fmha-run: error: ") + c.message + "\n");
  }
  // Matching values are accepted, including the default scale spelled out.
  CommandResult r = run(b + " -b 1 --sq 4 --sk 4 --hq 16 --hk=4 -d 64 --dv 32 "
                            "--dtype f32 --mask none --scale 0.125 "
                            "--softcap 0 --validate");
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(FmhaRun, UsageErrors) {
  std::string b = bundle("naive_f32", DType::F32, 2, 2, 8, 8);
  std::string bad = dir_.file("bad.fmha");
  fmha::test::writeBytes(bad, "FMHA-BUNDLE 1\ntarget=cpu\n\n");
  struct Case {
    std::string args, message;
  } cases[] = {
      {b + " -b 1 --sq 4 --sk 4 --frobnicate",
       "unknown option '--frobnicate'; see --help"},
      {b + " -b 1 --sq 4 --sk four", "--sk: 'four' is not a positive integer"},
      {b + " -b 0 --sq 4 --sk 4", "-b: '0' is not a positive integer"},
      {b + " -b 1 --sq 4 --sk", "--sk requires a value"},
      {b + " -b 1 --sq 4 --sk 4 --sq 5", "--sq given more than once"},
      {b + " --sq 4 --sk 4", "-b is required (or --load DIR)"},
      {b + " -b 1 --sk 4", "--sq is required (or --load DIR)"},
      {b + " -b 1 --sq 4 --sk 4 --mask q",
       "--mask: unknown mask spec 'q': expected one of 0, none, t, b, t:L,R, "
       "b:L,R, t:L,R,S, b:L,R,S, xt:W, xb:W"},
      {b + " -b 1 --sq 4 --sk 4 --dtype f64",
       "--dtype: 'f64' is not one of f32, f16, bf16"},
      {b + " -b 1 --sq 4 --sk 4 --validate=maybe",
       "--validate: 'maybe' is not a boolean (true or false)"},
      {b + " " + b + " -b 1",
       "unexpected argument '" + b + "' (one bundle FILE at most)"},
      {"-b 1 --sq 4 --sk 4", "no bundle FILE given; see --help"},
      {dir_.file("missing.fmha") + " -b 1 --sq 4 --sk 4",
       "bundle '" + dir_.file("missing.fmha") +
           "': cannot open file: No such file or directory"},
      {bad + " -b 1 --sq 4 --sk 4", "bundle '" + bad + "': missing key 'chip'"},
      {b + " -b 1 --sq 4 --sk 4 --load " + dir_.file("nowhere"),
       "npy '" + dir_.file("nowhere") +
           "/q.npy': cannot open file: No such file or directory"},
  };
  for (const Case &c : cases) {
    CommandResult r = run(c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output, "fmha-run: error: " + c.message + "\n") << c.args;
  }
}

TEST_F(FmhaRun, SaveThenLoadReproduces) {
  std::string b = bundle("naive_f16_xb", DType::F16, 2, 1, 8, 4, "xb:5");
  std::string out1 = dir_.file("run1/nested"), out2 = dir_.file("run2");
  CommandResult r =
      run(b + " -b 2 --sq 5 --sk 7 --seed 9 --save " + out1 + " --validate");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "saved q.npy k.npy v.npy o.npy lse.npy"));
  NpyArray q, o, lse;
  std::string err;
  ASSERT_TRUE(readNpy(out1 + "/q.npy", &q, &err)) << err;
  EXPECT_EQ(q.shape, (std::vector<int64_t>{2, 2, 5, 8}));
  ASSERT_TRUE(readNpy(out1 + "/lse.npy", &lse, &err)) << err;
  EXPECT_EQ(lse.shape, (std::vector<int64_t>{2, 2, 5}));
  // The saved inputs are already f16 values.
  for (float x : q.data)
    EXPECT_EQ(x, roundToHalf(x));

  // Loading them back (sizes from the files) gives the same outputs.
  r = run(b + " --load " + out1 + " --save " + out2 + " --validate");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  ASSERT_TRUE(readNpy(out1 + "/o.npy", &o, &err)) << err;
  NpyArray o2;
  ASSERT_TRUE(readNpy(out2 + "/o.npy", &o2, &err)) << err;
  EXPECT_EQ(o.data, o2.data);

  // Given sizes must agree with the files.
  r = run(b + " --load " + out1 + " --sq 6");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output, "fmha-run: error: npy '" + out1 +
                          "/q.npy': shape (2, 2, 5, 8) does not match the "
                          "expected (2, 2, 6, 8)\n");
  std::string other = bundle("naive_f32", DType::F32, 4, 1, 8, 4);
  r = run(other + " --load " + out1);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output, "fmha-run: error: npy '" + out1 +
                          "/q.npy': shape (2, 2, 5, 8) does not match the "
                          "expected (2, 4, 5, 8)\n");
}

TEST_F(FmhaRun, ShowMaskWithoutBundle) {
  CommandResult r =
      run("--show-mask --mask t --sq 4 --sk 4 --block-m 2 --block-n 2");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output,
            "mask t (Sq=4, Sk=4): rows 0..3, columns 0..3; 1 visible, . "
            "hidden\n"
            "1...\n"
            "11..\n"
            "111.\n"
            "1111\n"
            "kv tiles (block_m=2, block_n=2): 2 q tiles x 2 kv tiles; F full, "
            "P partial (element mask), . skipped\n"
            "q tile    0: P.\n"
            "q tile    1: FP\n"
            "visited 3 of 4 tiles (1 full, 2 partial, 1 skipped)\n");
  // A sliding window with sinks, Sq != Sk, remainder tiles.
  r = run("--show-mask --mask=b:2,0,1 --sq 5 --sk 7 --block-m 2 "
          "--block-n 3");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(
      contains(r.output, "111....\n1111...\n1.111..\n1..111.\n1...111\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "q tile    2: PPF\n")) << r.output;
  r = run("--show-mask --sq 4");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output, "fmha-run: error: --show-mask needs --sq and --sk\n");
  r = run("--show-mask --sq 4 --sk 4 --validate");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output,
            "fmha-run: error: no bundle FILE given (needed to run a kernel)\n");
}

TEST_F(FmhaRun, ShowMaskUsesBundleTiles) {
  std::string b = bundle("naive_f32_b", DType::F32, 1, 1, 8, 8, "b");
  CommandResult r = run(b + " --show-mask --sq 100 --sk 200");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "kv tiles (block_m=64, block_n=32): 2 q "
                                 "tiles x 7 kv tiles"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "q tile    0: FFFPPP.\n")) << r.output;
}

TEST_F(FmhaRun, Bench) {
  std::string b = bundle("naive_f32", DType::F32, 2, 2, 8, 8);
  CommandResult r = run(b + " -b 1 --sq 8 --sk 8 --bench --iters 5 --warmup 1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bench: iters=5 warmup=1 median_ms="))
      << r.output;
  EXPECT_TRUE(contains(r.output, "GFLOP/s=")) << r.output;
  EXPECT_TRUE(contains(r.output, "TFLOP/s=")) << r.output;
  r = run(b + " -b 1 --sq 8 --sk 8 --bench --iters 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output,
            "fmha-run: error: --iters: '0' is not a positive integer\n");
}

//===----------------------------------------------------------------------===//
// GPU bundles (the fake libraries of FakeCuda.cpp and FakeHip.cpp, or none)
//===----------------------------------------------------------------------===//

/// One GPU target through its fake library, and what fmha-run says.
struct GpuCase {
  const char *name;
  Target target;
  const char *libraryVar; ///< FMHA_CUDA_LIBRARY
  const char *fake;       ///< the fake library
  const char *fakeVar;    ///< FMHA_FAKE_CUDA
  const char *description;
  const char *badModule; ///< part of the message for a module the fake rejects
  const char *launchFail, *launchMessage; ///< an injected launch failure
  const char *missingLibrary;             ///< the message without the library
};

const GpuCase kGpuCases[] = {
    {"cuda", Target::Cuda, "FMHA_CUDA_LIBRARY", FMHA_FAKE_CUDA_PATH,
     "FMHA_FAKE_CUDA", "cuda: FMHA fake GPU (sm_90, device 0)",
     "': cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT "
     "compilation failed)",
     "cuLaunchKernel=701",
     "fmha-run: error: cuLaunchKernel failed: "
     "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for "
     "launch); kernel 'fmha_fwd', grid (1,2,1), block (128,1,1), shared 0 "
     "bytes\n",
     "CUDA driver not found: dlopen /nonexistent/lib.so failed: "
     "/nonexistent/lib.so: cannot open shared object file: No such file or "
     "directory"},
    {"hip", Target::Hip, "FMHA_HIP_LIBRARY", FMHA_FAKE_HIP_PATH,
     "FMHA_FAKE_HIP", "hip: FMHA fake AMD GPU (304 CUs, wave64, device 0)",
     "': hipModuleLoadData failed: hipErrorInvalidImage (device kernel image "
     "is invalid); bundle chip gfx942, binary_format hsaco, device FMHA fake "
     "AMD GPU\n",
     "hipModuleLaunchKernel=701",
     "fmha-run: error: hipModuleLaunchKernel failed: "
     "hipErrorLaunchOutOfResources (too many resources requested for "
     "launch); kernel 'fmha_fwd', grid (1,2,1), block (256,1,1), shared 0 "
     "bytes\n",
     "HIP runtime not found: dlopen /nonexistent/lib.so failed: "
     "/nonexistent/lib.so: cannot open shared object file: No such file or "
     "directory"},
};

void PrintTo(const GpuCase &c, std::ostream *os) { *os << c.name; }

class FmhaRunGpu : public FmhaRun,
                   public ::testing::WithParamInterface<GpuCase> {
protected:
  std::string gpuBundle(DType t, int64_t hq, int64_t hk, int64_t d, int64_t dv,
                        const char *mask = "0", const std::string &extra = "",
                        int64_t sharedBytes = 0) {
    BundleMeta m =
        fmha::test::fakeGpuMeta(GetParam().target, t, hq, hk, d, dv, mask);
    m.sharedBytes = sharedBytes;
    std::string path = dir_.file(std::string(GetParam().name) +
                                 std::to_string(counter_++) + ".fmha");
    std::string err;
    EXPECT_TRUE(writeBundle(path, m, fmha::test::fakeModule(m, extra), &err))
        << err;
    return path;
  }
  /// A gpu-bwd-v1 bundle for the fake library.
  std::string gpuBwdBundle(DType t, int64_t hq, int64_t hk, int64_t d,
                           int64_t dv, const char *mask, bool deterministic,
                           const std::string &extra = "") {
    BundleMeta m = fmha::test::fakeGpuBwdMeta(GetParam().target, t, hq, hk, d,
                                              dv, mask, deterministic);
    std::string path = dir_.file(std::string(GetParam().name) + "-bwd" +
                                 std::to_string(counter_++) + ".fmha");
    std::string err;
    EXPECT_TRUE(writeBundle(path, m, fmha::test::fakeModule(m, extra), &err))
        << err;
    return path;
  }
  /// A bundle of `m` (any kind) for the fake library.
  std::string gpuBundleOf(const BundleMeta &m, const std::string &extra = "") {
    std::string path =
        dir_.file(std::string(GetParam().name) + "-" + toString(m.kind) +
                  std::to_string(counter_++) + ".fmha");
    std::string err;
    EXPECT_TRUE(writeBundle(path, m, fmha::test::fakeModule(m, extra), &err))
        << err;
    return path;
  }
  /// fmha-run with `env` ("VAR=x ...") in front.
  CommandResult runWith(const std::string &env, const std::string &args) {
    return fmha::test::runCommand("env " + env + " " + FMHA_RUN_PATH + " " +
                                  args);
  }
  /// fmha-run with the fake library in its one-device mode.
  CommandResult runFake(const std::string &args,
                        const std::string &moreEnv = "") {
    const GpuCase &c = GetParam();
    return runWith(std::string(c.libraryVar) + "=" + c.fake + " " + c.fakeVar +
                       "=device " + moreEnv,
                   args);
  }
};

TEST_P(FmhaRunGpu, MissingLibraryIsExit2) {
  std::string b = gpuBundle(DType::BF16, 4, 2, 16, 16, "b");
  CommandResult r =
      runWith(std::string(GetParam().libraryVar) + "=/nonexistent/lib.so",
              b + " -b 1 --sq 8 --sk 8 --validate");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: bundle '" + b +
                          "': " + GetParam().missingLibrary + "\n");
  // Not even a module: the library is looked for first.
  std::string fake = dir_.file("fake.fmha");
  BundleMeta m =
      fmha::test::fakeGpuMeta(GetParam().target, DType::F16, 2, 2, 8, 8);
  std::string err;
  ASSERT_TRUE(writeBundle(fake, m, "not a module", &err)) << err;
  r = runWith(std::string(GetParam().libraryVar) + "=/nonexistent/lib.so",
              fake + " -b 1 --sq 8 --sk 8");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, GetParam().missingLibrary)) << r.output;
}

TEST_P(FmhaRunGpu, ValidateBenchSaveLoad) {
  struct Case {
    std::string bundle, args;
  } cases[] = {
      {gpuBundle(DType::BF16, 8, 2, 32, 32, "b"), "-b 2 --sq 33 --sk 50"},
      {gpuBundle(DType::F16, 4, 1, 16, 16, "t:7,0,3"), "-b 1 --sq 1 --sk 40"},
      {gpuBundle(DType::BF16, 2, 2, 16, 8, "0", "", 65536),
       "-b 3 --sq 17 --sk 5"},
  };
  for (const Case &c : cases) {
    CommandResult r = runFake(c.bundle + " " + c.args + " --validate");
    EXPECT_EQ(r.exitCode, 0) << c.args << "\n" << r.output;
    EXPECT_TRUE(
        contains(r.output, std::string("(") + GetParam().description + ","))
        << r.output;
    EXPECT_TRUE(contains(r.output, "launch fmha_fwd grid=(")) << r.output;
    EXPECT_TRUE(contains(r.output, "\nPASS")) << r.output;
  }
  CommandResult r = runFake(cases[0].bundle + " " + cases[0].args);
  BundleMeta m = fmha::test::fakeGpuMeta(GetParam().target, DType::BF16, 8, 2,
                                         32, 32, "b");
  EXPECT_TRUE(contains(r.output, "launch fmha_fwd grid=(3,8,2) block=(" +
                                     std::to_string(m.blockThreads) +
                                     ",1,1) shared_bytes=0\n"))
      << r.output;

  r = runFake(cases[0].bundle + " -b 1 --sq 20 --sk 20 --bench --iters 6 "
                                "--warmup 2");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bench: iters=6 warmup=2 median_ms="))
      << r.output;
  EXPECT_TRUE(contains(r.output, " GFLOP/s=")) << r.output;
  EXPECT_TRUE(contains(r.output, " TFLOP/s=")) << r.output;
  EXPECT_TRUE(contains(r.output, " input_copies=4 ")) << r.output;

  std::string out1 = dir_.file("gpu-save"), out2 = dir_.file("gpu-save2");
  r = runFake(cases[1].bundle + " " + cases[1].args + " --save " + out1);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  r = runFake(cases[1].bundle + " --load " + out1 + " --validate --save " +
              out2);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "problem B=1 Hq=4 Hk=1 Sq=1 Sk=40"))
      << r.output;
  NpyArray o1, o2;
  std::string err;
  ASSERT_TRUE(readNpy(out1 + "/o.npy", &o1, &err)) << err;
  ASSERT_TRUE(readNpy(out2 + "/o.npy", &o2, &err)) << err;
  EXPECT_EQ(o1.data, o2.data);
}

TEST_P(FmhaRunGpu, FailuresThroughTheLibrary) {
  // A wrong result is caught by --validate (exit 1).
  std::string flawed =
      gpuBundle(DType::BF16, 2, 2, 16, 16, "0", "flaw=perturb\n");
  CommandResult r = runFake(flawed + " -b 1 --sq 4 --sk 4 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "\nFAIL: rel_err")) << r.output;

  // A module the library rejects.
  std::string bad = dir_.file("bad.fmha");
  BundleMeta m =
      fmha::test::fakeGpuMeta(GetParam().target, DType::F16, 2, 2, 8, 8);
  std::string err;
  ASSERT_TRUE(writeBundle(bad, m, "junk", &err)) << err;
  r = runFake(bad + " -b 1 --sq 4 --sk 4");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, GetParam().badModule)) << r.output;

  // A grid over the limit: nothing runs.
  std::string wide = gpuBundle(DType::F16, 2, 2, 1, 1);
  r = runFake(wide + " -b 70000 --sq 1 --sk 1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: kernel 'fmha_fwd': grid.z = b = "
                      "70000 exceeds the device limit 65535; nothing was "
                      "launched\n");

  // A launch error.
  std::string ok = gpuBundle(DType::F16, 2, 2, 8, 8);
  r = runFake(ok + " -b 1 --sq 4 --sk 4", std::string(GetParam().fakeVar) +
                                              "_FAIL=" + GetParam().launchFail);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, GetParam().launchMessage);
}

TEST_P(FmhaRunGpu, Backward) {
  // Atomic and deterministic, GQA, MQA, Sq != Sk off the tile grid.
  struct Case {
    std::string bundle, args;
    bool deterministic;
  } cases[] = {
      {gpuBwdBundle(DType::BF16, 8, 2, 32, 32, "b", false),
       "-b 2 --sq 33 --sk 50", false},
      {gpuBwdBundle(DType::F16, 4, 1, 16, 16, "t:7,0,3", true),
       "-b 1 --sq 40 --sk 17", true},
      {gpuBwdBundle(DType::BF16, 8, 1, 16, 16, "0", false),
       "-b 1 --sq 1 --sk 70", false},
  };
  BundleMeta m = fmha::test::fakeGpuBwdMeta(GetParam().target, DType::BF16, 8,
                                            2, 32, 32, "b");
  for (const Case &c : cases) {
    CommandResult r = runFake(c.bundle + " " + c.args + " --validate");
    EXPECT_EQ(r.exitCode, 0) << c.args << "\n" << r.output;
    for (const char *g :
         {"\ndq: max_abs_err=", "\ndk: max_abs_err=", "\ndv: max_abs_err="})
      EXPECT_TRUE(contains(r.output, g)) << r.output;
    EXPECT_EQ(contains(r.output, "deterministic: a second run gave "
                                 "bit-identical dq, dk, dv\n"),
              c.deterministic)
        << r.output;
    EXPECT_TRUE(contains(r.output, "\nPASS")) << r.output;
  }
  // The launch lines: prep and dq per q tile, dkdv per kv tile (block_n
  // 32), the workspace: dsum (2*8*33 floats = 2112 bytes), dqacc at 2304.
  CommandResult r = runFake(cases[0].bundle + " " + cases[0].args);
  const std::string block =
      " block=(" + std::to_string(m.blockThreads) + ",1,1) shared_bytes=0\n";
  EXPECT_TRUE(contains(
      r.output, "launch fmha_bwd_prep grid=(3,8,2)" + block +
                    "launch fmha_bwd_dkdv grid=(2,2,2)" + block +
                    "launch fmha_bwd_dq grid=(3,8,2)" + block + "workspace " +
                    std::to_string(2304 + 2 * 8 * 33 * 32 * 4) +
                    " bytes (dsum, dqacc)\n"))
      << r.output;

  // --grad-check: the finite differences of the forward agree.
  r = runFake(cases[1].bundle + " -b 1 --sq 9 --sk 12 --grad-check");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\ngrad-check PASS\n")) << r.output;

  // --bench: every run is the three kernels.
  r = runFake(cases[0].bundle + " -b 1 --sq 20 --sk 20 --bench --iters 3 "
                                "--warmup 1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bench: iters=3 warmup=1 median_ms="))
      << r.output;
  EXPECT_TRUE(contains(r.output, "backward = 2.5x forward FLOPs")) << r.output;

  // --save then --load: the same gradients, bit for bit.
  std::string out1 = dir_.file("bwd-save"), out2 = dir_.file("bwd-save2");
  r = runFake(cases[1].bundle + " " + cases[1].args + " --validate --save " +
              out1);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  r = runFake(cases[1].bundle + " --load " + out1 + " --validate --save " +
              out2);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "problem B=1 Hq=4 Hk=1 Sq=40 Sk=17"))
      << r.output;
  for (const char *f : {"/dq.npy", "/dk.npy", "/dv.npy"}) {
    NpyArray a, b;
    std::string err;
    ASSERT_TRUE(readNpy(out1 + f, &a, &err)) << err;
    ASSERT_TRUE(readNpy(out2 + f, &b, &err)) << err;
    EXPECT_EQ(a.data, b.data) << f;
  }
}

TEST_P(FmhaRunGpu, BackwardFailures) {
  // A wrong dq: FAIL naming it, exit 1.
  std::string flawed =
      gpuBwdBundle(DType::BF16, 2, 2, 16, 16, "t", false, "flaw=perturb\n");
  CommandResult r = runFake(flawed + " -b 1 --sq 4 --sk 4 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "\nFAIL: dq error ")) << r.output;
  r = runFake(flawed + " -b 1 --sq 4 --sk 4 --grad-check");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "\ngrad-check FAIL: dq off by ")) << r.output;

  // A module without its dq kernel: exit 2, the kernel named.
  std::string missing =
      gpuBwdBundle(DType::BF16, 2, 2, 16, 16, "t", true, "omit=dq\n");
  r = runFake(missing + " -b 1 --sq 4 --sk 4 --validate");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "kernel 'fmha_bwd_dq' not found in the "
                                 "module (the manifest names fmha_bwd_prep, "
                                 "fmha_bwd_dkdv, fmha_bwd_dq)"))
      << r.output;

  // The workspace does not fit in the device's memory: exit 2, no crash.
  std::string ok = gpuBwdBundle(DType::F16, 2, 2, 8, 8, "0", false);
  r = runFake(ok + " -b 1 --sq 64 --sk 4",
              std::string(GetParam().fakeVar) + "_MEMORY=5000");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "fmha-run: error: ")) << r.output;

  // A launch error names the failing kernel.
  r = runFake(ok + " -b 1 --sq 4 --sk 4", std::string(GetParam().fakeVar) +
                                              "_FAIL=" + GetParam().launchFail);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "kernel 'fmha_bwd_prep', grid (1,2,1)"))
      << r.output;
}

TEST_P(FmhaRunGpu, MergeAndAccumulate) {
  // gpu-merge-v1: the fake checks the launch and merges in f32; --validate
  // holds it against referenceMerge (empty partials included).
  const Target target = GetParam().target;
  BundleMeta merge = fmha::test::fakeGpuMergeMeta(target, DType::BF16, 4, 16);
  std::string mergeBundle = gpuBundleOf(merge);
  for (const char *args : {" -b 2 --sq 33", " -b 1 --sq 1", " -b 3 --sq 70"}) {
    CommandResult r = runFake(mergeBundle + args + " --validate");
    EXPECT_EQ(r.exitCode, 0) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "kernel fmha_merge (" +
                                       std::string(GetParam().description) +
                                       ", bf16, merge)\n"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "\nPASS")) << r.output;
  }
  CommandResult r = runFake(
      gpuBundleOf(fmha::test::fakeGpuMergeMeta(target, DType::F16, 2, 8)) +
      " -b 1 --sq 9 --validate");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "merge B=1 H=2 S=9 Dv=8: ")) << r.output;

  // gpu-acc-v1: acc += x over n, then over n - 1 from element 1.
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    std::string acc = gpuBundleOf(fmha::test::fakeGpuAccMeta(target, t));
    for (const char *n : {" -n 1", " -n 1000", " -n 4099"}) {
      r = runFake(acc + n + " --validate");
      EXPECT_EQ(r.exitCode, 0) << toString(t) << n << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "\nacc: max_abs_err=")) << r.output;
      EXPECT_TRUE(contains(r.output, "\nPASS")) << r.output;
    }
  }

  // A wrong result fails --validate (exit 1).
  r = runFake(gpuBundleOf(merge, "flaw=perturb\n") + " -b 1 --sq 4 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "\nFAIL: ")) << r.output;
  r = runFake(gpuBundleOf(fmha::test::fakeGpuAccMeta(target, DType::BF16),
                          "flaw=perturb\n") +
              " -n 100 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "\nFAIL: acc rel_err ")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Targets, FmhaRunGpu, ::testing::ValuesIn(kGpuCases),
                         [](const ::testing::TestParamInfo<GpuCase> &info) {
                           return std::string(info.param.name);
                         });

TEST_F(FmhaRun, CudaWithoutDeviceIsExit2) {
  std::string b = dir_.file("cuda.fmha"), err;
  BundleMeta m = fmha::test::fakeCudaMeta(DType::BF16, 4, 2, 16, 16, "b");
  ASSERT_TRUE(writeBundle(b, m, fmha::test::fakeModule(m), &err)) << err;
  CommandResult r =
      fmha::test::runCommand("env FMHA_CUDA_LIBRARY=" FMHA_FAKE_CUDA_PATH
                             " FMHA_FAKE_CUDA=none " FMHA_RUN_PATH " " +
                             b + " -b 1 --sq 8 --sk 8");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: bundle '" + b +
                          "': no CUDA device: cuInit failed: "
                          "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
                          "detected)\n");
}

//===----------------------------------------------------------------------===//
// hip bundles without an AMD GPU: the fake runtime, Debian's real one
//===----------------------------------------------------------------------===//

class FmhaRunHip : public FmhaRun {
protected:
  std::string hipBundle() {
    std::string path = dir_.file("hip" + std::to_string(counter_++) + ".fmha");
    BundleMeta m =
        fmha::test::fakeGpuMeta(Target::Hip, DType::F16, 4, 2, 16, 16, "b");
    std::string err;
    EXPECT_TRUE(writeBundle(path, m, fmha::test::fakeModule(m), &err)) << err;
    return path;
  }
  CommandResult runWith(const std::string &env, const std::string &args) {
    return fmha::test::runCommand("env " + env + " " + FMHA_RUN_PATH + " " +
                                  args);
  }
  /// What the HIP backend adds when the machine has no /dev/kfd.
  static std::string kfdNote() {
    return access("/dev/kfd", F_OK) == 0
               ? ""
               : "; /dev/kfd is missing: no ROCm kernel driver (amdgpu) on "
                 "this machine";
  }
};

TEST_F(FmhaRunHip, NoDeviceIsExit2) {
  // The fake answers as ROCm 5.2 does without a GPU.
  std::string b = hipBundle();
  CommandResult r =
      runWith("FMHA_HIP_LIBRARY=" FMHA_FAKE_HIP_PATH " FMHA_FAKE_HIP=none",
              b + " -b 1 --sq 8 --sk 8 --validate");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: bundle '" + b +
                          "': no AMD GPU found (hipGetDeviceCount: "
                          "hipErrorNoDevice (no ROCm-capable device is "
                          "detected); hipInit: hipErrorInvalidDevice "
                          "(invalid device ordinal)" +
                          kfdNote() + ")\n");
}

TEST_F(FmhaRunHip, DeviceFromTheEnvironment) {
  std::string b = hipBundle();
  CommandResult r = runWith("FMHA_HIP_LIBRARY=" FMHA_FAKE_HIP_PATH
                            " FMHA_FAKE_HIP=device FMHA_FAKE_HIP_DEVICES=2 "
                            "FMHA_HIP_DEVICE=1",
                            b + " -b 2 --sq 20 --sk 30 --validate");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "(hip: FMHA fake AMD GPU (304 CUs, wave64, "
                                 "device 1), f16, mask=b"))
      << r.output;
  r = runWith("FMHA_HIP_LIBRARY=" FMHA_FAKE_HIP_PATH
              " FMHA_FAKE_HIP=device FMHA_HIP_DEVICE=2",
              b + " -b 2 --sq 20 --sk 30");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: bundle '" + b +
                          "': FMHA_HIP_DEVICE=2 but the HIP runtime reports "
                          "1 device(s)\n");
}

TEST_F(FmhaRunHip, DefaultLibraryNames) {
  // Without FMHA_HIP_LIBRARY: libamdhip64.so, .so.5, .so.6, .so.7. Either
  // none is installed, or one is and (no AMD GPU here) reports no device.
  if (access("/dev/kfd", F_OK) == 0)
    GTEST_SKIP() << "/dev/kfd exists: this machine may have an AMD GPU";
  std::string b = hipBundle();
  CommandResult r = runWith("-u FMHA_HIP_LIBRARY", b + " -b 1 --sq 8 --sk 8");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  const std::string prefix = "fmha-run: error: bundle '" + b + "': ";
  const std::string notFound =
      prefix + "HIP runtime not found: dlopen libamdhip64.so failed: "
               "libamdhip64.so: cannot open shared object file: No such file "
               "or directory (also tried libamdhip64.so.5, libamdhip64.so.6, "
               "libamdhip64.so.7)\n";
  EXPECT_TRUE(r.output == notFound ||
              r.output.rfind(prefix + "no AMD GPU found (", 0) == 0)
      << r.output;
}

/// Debian's HIP runtime (package libamdhip64-5), found by its file name.
std::string debianHipRuntime() {
  for (const char *dir :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
        "/usr/lib"}) {
    std::string path = std::string(dir) + "/libamdhip64.so.5";
    if (access(path.c_str(), R_OK) == 0)
      return path;
  }
  return "";
}

TEST_F(FmhaRunHip, DebianRuntimeWithoutGpuReportsNoDevice) {
  // The real library: dlopen, every symbol, hipInit and hipGetDeviceCount
  // run; on a machine without an AMD GPU the answer is "no AMD GPU found".
  std::string library = debianHipRuntime();
  if (library.empty())
    GTEST_SKIP() << "Debian's HIP runtime is not installed (package "
                    "libamdhip64-5, libamdhip64.so.5; scripts/setup.sh "
                    "installs it)";
  if (access("/dev/kfd", F_OK) == 0)
    GTEST_SKIP() << "/dev/kfd exists: this machine may have an AMD GPU, so "
                    "the no-device answer cannot be checked";
  std::string b = hipBundle();
  for (const std::string &env :
       {"FMHA_HIP_LIBRARY=" + library, std::string("-u FMHA_HIP_LIBRARY")}) {
    SCOPED_TRACE(env);
    CommandResult r = runWith(env, b + " -b 1 --sq 8 --sk 8 --validate");
    EXPECT_EQ(r.exitCode, 2) << r.output;
    // One line: the bundle, no device, the answers of the runtime's calls
    // and the missing kernel driver.
    const std::string prefix = "fmha-run: error: bundle '" + b +
                               "': no AMD GPU found (hipGetDeviceCount: ";
    EXPECT_EQ(r.output.rfind(prefix, 0), 0u) << r.output;
    EXPECT_TRUE(contains(r.output, kfdNote() + ")\n")) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  }
}

TEST_F(FmhaRun, PlainRunPrintsSummary) {
  std::string b = bundle("naive_f32", DType::F32, 2, 1, 8, 8);
  CommandResult r = run(b + " -b 1 --sq 3 --sk 5");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "kernel naive_f32 (host, f32, mask=0"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "problem B=1 Hq=2 Hk=1 Sq=3 Sk=5 D=8 Dv=8"))
      << r.output;
}

} // namespace
