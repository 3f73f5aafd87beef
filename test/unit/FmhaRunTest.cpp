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
  r = run(b + " -b 1 --sq 8 --sk 8 --bench --iters 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.output,
            "fmha-run: error: --iters: '0' is not a positive integer\n");
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
