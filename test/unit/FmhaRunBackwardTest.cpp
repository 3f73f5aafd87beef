//===- FmhaRunBackwardTest.cpp - fmha-run on backward bundles -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Runs the fmha-run binary on kind=bwd bundles around the backward plumbing
// fakes (PlumbingBwdKernel.cpp). The fakes compute no gradient: they check
// the descriptors and inputs they get (they write NaN when o, lse or dO hold
// NaN or a shape is off) and write constants, dq = 1, dk = 2, dv = 3 (or 0,
// or nothing). So these tests check fmha-run's plumbing and its validation
// verdicts, not a backward kernel.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Npy.h"
#include "fmha/Runtime/Reference.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::CommandResult;
using fmha::test::TempDir;

namespace {

class FmhaRunBwd : public ::testing::Test {
protected:
  std::string bundle(const std::string &kernel, DType t, int64_t hq, int64_t hk,
                     int64_t d, int64_t dv, const char *mask = "0",
                     bool deterministic = false) {
    std::string path = dir_.file(kernel + std::to_string(counter_++) + ".fmha");
    BundleMeta m = fmha::test::plumbingBwdMeta(kernel, t, hq, hk, d, dv, mask);
    m.deterministic = deterministic;
    std::string err;
    EXPECT_TRUE(writeBundle(path, m, fmha::test::testKernelBinary(), &err))
        << err;
    return path;
  }

  CommandResult run(const std::string &args) {
    return fmha::test::runCommand(std::string(FMHA_RUN_PATH) + " " + args);
  }

  NpyArray read(const std::string &path) {
    NpyArray a;
    std::string err;
    EXPECT_TRUE(readNpy(path, &a, &err)) << err;
    return a;
  }

  TempDir dir_;
  int counter_ = 0;
};

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

bool allEqual(const std::vector<float> &v, float want) {
  for (float x : v)
    if (!(x == want))
      return false;
  return !v.empty();
}

TEST_F(FmhaRunBwd, GradCheckFailsOnWrongGradients) {
  // Constant "gradients" disagree with the finite differences of the
  // forward: one line a tensor, then FAIL naming each, exit 1.
  std::string b =
      bundle("plumbing_bwd_const_f32", DType::F32, 4, 2, 16, 8, "t");
  CommandResult r = run(b + " -b 1 --sq 5 --sk 7 --grad-check");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  for (const char *g : {"\ngrad-check dq: finite_difference=",
                        "\ngrad-check dk: finite_difference=",
                        "\ngrad-check dv: finite_difference="})
    EXPECT_TRUE(contains(r.output, g)) << r.output;
  EXPECT_TRUE(contains(r.output, "\ngrad-check FAIL: dq off by ")) << r.output;
  EXPECT_TRUE(contains(r.output, "; dk off by ")) << r.output;
  EXPECT_TRUE(contains(r.output, "; dv off by ")) << r.output;
}

TEST_F(FmhaRunBwd, ValidateReportsEachGradient) {
  // The constants are not the gradients: FAIL, exit 1, one line a tensor,
  // and no NaN (the fake got finite o, lse, dO and consistent shapes).
  std::string b =
      bundle("plumbing_bwd_const_f32", DType::F32, 4, 2, 16, 8, "t");
  CommandResult r = run(b + " -b 2 --sq 9 --sk 13 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "kernel plumbing_bwd_const_f32 (host, f32, "
                                 "bwd, mask=t, "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "problem B=2 Hq=4 Hk=2 Sq=9 Sk=13 D=16 Dv=8: "
                                 "first run "))
      << r.output;
  for (const char *g :
       {"\ndq: max_abs_err=", "\ndk: max_abs_err=", "\ndv: max_abs_err="})
    EXPECT_TRUE(contains(r.output, g)) << r.output;
  EXPECT_TRUE(contains(r.output, "\nFAIL: dq error ")) << r.output;
  EXPECT_TRUE(contains(r.output, "; dk error ")) << r.output;
  EXPECT_TRUE(contains(r.output, "; dv error ")) << r.output;
  EXPECT_FALSE(contains(r.output, "NaN")) << r.output;
  EXPECT_FALSE(contains(r.output, "deterministic")) << r.output;
  // --bwd asserts the kind; without --validate there is no verdict.
  r = run(b + " -b 1 --sq 3 --sk 3 --bwd");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "PASS")) << r.output;
}

TEST_F(FmhaRunBwd, UnwrittenOutputsAreNaN) {
  std::string b = bundle("plumbing_bwd_nothing_f32", DType::F32, 2, 1, 8, 4);
  CommandResult r = run(b + " -b 1 --sq 3 --sk 5 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dq: max_abs_err=nan rel_err=nan\n"))
      << r.output;
  EXPECT_TRUE(
      contains(r.output, "\nFAIL: 48 NaN in dq; 40 NaN in dk; 20 NaN in dv\n"))
      << r.output;
}

TEST_F(FmhaRunBwd, SaveWritesInputsAndGradients) {
  std::string b = bundle("plumbing_bwd_const_f32", DType::F32, 4, 2, 8, 4, "b");
  std::string out = dir_.file("out");
  CommandResult r = run(b + " -b 2 --sq 5 --sk 3 --seed 7 --save " + out);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "saved q.npy k.npy v.npy do.npy o.npy "
                                 "lse.npy dq.npy dk.npy dv.npy to " +
                                     out))
      << r.output;
  struct Want {
    const char *file;
    std::vector<int64_t> shape;
  } wants[] = {{"q.npy", {2, 4, 5, 8}},  {"k.npy", {2, 2, 3, 8}},
               {"v.npy", {2, 2, 3, 4}},  {"do.npy", {2, 4, 5, 4}},
               {"o.npy", {2, 4, 5, 4}},  {"lse.npy", {2, 4, 5}},
               {"dq.npy", {2, 4, 5, 8}}, {"dk.npy", {2, 2, 3, 8}},
               {"dv.npy", {2, 2, 3, 4}}};
  for (const Want &w : wants)
    EXPECT_EQ(read(out + "/" + w.file).shape, w.shape) << w.file;
  EXPECT_TRUE(allEqual(read(out + "/dq.npy").data, 1.0f));
  EXPECT_TRUE(allEqual(read(out + "/dk.npy").data, 2.0f));
  EXPECT_TRUE(allEqual(read(out + "/dv.npy").data, 3.0f));

  // o and lse are the float64 reference forward's over the saved q, k, v
  // (b with Sq > Sk: the first rows see no key, lse -inf, o 0).
  NpyArray q = read(out + "/q.npy"), k = read(out + "/k.npy"),
           v = read(out + "/v.npy");
  ReferenceConfig cfg;
  cfg.b = 2;
  cfg.hq = 4;
  cfg.hk = 2;
  cfg.sq = 5;
  cfg.sk = 3;
  cfg.d = 8;
  cfg.dv = 4;
  cfg.mask = *MaskSpec::parse("b");
  cfg.scale = static_cast<float>(1 / std::sqrt(8.0)); // the bundle's, a float
  ReferenceForward ref;
  std::string err;
  ASSERT_TRUE(referenceForward(
      cfg, std::vector<double>(q.data.begin(), q.data.end()),
      std::vector<double>(k.data.begin(), k.data.end()),
      std::vector<double>(v.data.begin(), v.data.end()), &ref, &err))
      << err;
  NpyArray o = read(out + "/o.npy"), lse = read(out + "/lse.npy");
  ASSERT_EQ(o.data.size(), ref.o.size());
  for (size_t i = 0; i < o.data.size(); ++i)
    EXPECT_EQ(o.data[i], static_cast<float>(ref.o[i])) << i;
  ASSERT_EQ(lse.data.size(), ref.lse.size());
  for (size_t i = 0; i < lse.data.size(); ++i)
    EXPECT_EQ(lse.data[i], static_cast<float>(ref.lse[i])) << i;
  EXPECT_TRUE(std::isinf(lse.data[0]) && lse.data[0] < 0);

  // q, k, v come from the generator as for a forward bundle of the same
  // signature; dO is drawn after them.
  BundleMeta fwd =
      fmha::test::testMeta("naive_f32_b", DType::F32, 4, 2, 8, 4, "b");
  std::string fwdPath = dir_.file("fwd.fmha"), fwdOut = dir_.file("fwdout");
  ASSERT_TRUE(writeBundle(fwdPath, fwd, fmha::test::testKernelBinary(), &err))
      << err;
  r = run(fwdPath + " -b 2 --sq 5 --sk 3 --seed 7 --save " + fwdOut);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const char *f : {"q.npy", "k.npy", "v.npy"})
    EXPECT_EQ(read(fwdOut + "/" + f).data, read(out + "/" + f).data) << f;
  EXPECT_NE(read(out + "/do.npy").data,
            std::vector<float>(read(out + "/do.npy").data.size(), 0.0f));
}

TEST_F(FmhaRunBwd, LoadReadsDoAndOptionallyOAndLse) {
  std::string b = bundle("plumbing_bwd_const_f32", DType::F32, 2, 1, 8, 4);
  std::string in = dir_.file("in");
  CommandResult r = run(b + " -b 1 --sq 4 --sk 6 --save " + in);
  ASSERT_EQ(r.exitCode, 0) << r.output;

  // q, k, v, do, o and lse from the directory; the sizes from the files.
  std::string out = dir_.file("out");
  r = run(b + " --load " + in + " --save " + out);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "problem B=1 Hq=2 Hk=1 Sq=4 Sk=6 "))
      << r.output;
  for (const char *f :
       {"q.npy", "k.npy", "v.npy", "do.npy", "o.npy", "lse.npy"})
    EXPECT_EQ(read(in + "/" + f).data, read(out + "/" + f).data) << f;

  // The loaded lse reaches the kernel: a NaN in it makes the fake write NaN.
  NpyArray lse = read(in + "/lse.npy");
  lse.data[2] = std::nanf("");
  std::string err;
  ASSERT_TRUE(writeNpy(in + "/lse.npy", lse.shape, lse.data.data(), &err))
      << err;
  r = run(b + " --load " + in + " --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "FAIL: 64 NaN in dq; 48 NaN in dk; 24 NaN in "
                                 "dv"))
      << r.output;

  // Without o.npy the reference forward supplies o and lse again.
  std::remove((in + "/o.npy").c_str());
  r = run(b + " --load " + in + " --save " + out);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_FALSE(std::isnan(read(out + "/lse.npy").data[2]));

  // do.npy is required, with o's shape.
  std::remove((in + "/do.npy").c_str());
  r = run(b + " --load " + in);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "fmha-run: error: ")) << r.output;
  EXPECT_TRUE(contains(r.output, in + "/do.npy")) << r.output;
  NpyArray q = read(in + "/q.npy");
  ASSERT_TRUE(writeNpy(in + "/do.npy", q.shape, q.data.data(), &err)) << err;
  r = run(b + " --load " + in);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: npy '" + in +
                          "/do.npy': shape (1, 2, 4, 8) does not match the "
                          "expected (1, 2, 4, 4)\n");
}

TEST_F(FmhaRunBwd, ZeroReferenceNeedsZeroOutput) {
  // dO = 0 makes every reference gradient 0: rel_err would divide by zero.
  std::string zero = bundle("plumbing_bwd_zero_f32", DType::F32, 2, 1, 8, 4);
  std::string one = bundle("plumbing_bwd_const_f32", DType::F32, 2, 1, 8, 4);
  std::string in = dir_.file("in");
  CommandResult r = run(zero + " -b 1 --sq 4 --sk 6 --save " + in);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  NpyArray dO = read(in + "/do.npy");
  std::fill(dO.data.begin(), dO.data.end(), 0.0f);
  std::string err;
  ASSERT_TRUE(writeNpy(in + "/do.npy", dO.shape, dO.data.data(), &err)) << err;

  r = run(zero + " --load " + in + " --validate");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dq: max_abs_err=0.000e+00 "
                                 "rel_err=0.000e+00 (reference is all 0)\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "\nPASS (f32: rel_err <= 1e-05 for dq, dk, "
                                 "dv)\n"))
      << r.output;

  r = run(one + " --load " + in + " --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dq: max_abs_err=1.000e+00 rel_err=inf "
                                 "(reference is all 0)\n"))
      << r.output;
  // dO = 0 also makes the magnitudes of the gradients' terms 0: the bound
  // is 0.
  EXPECT_TRUE(contains(r.output, "FAIL: dq error 8 > 0 (rel_err inf); dk "
                                 "error 13.8564065 > 0 (rel_err inf); dv "
                                 "error 14.6969385 > 0 (rel_err inf)\n"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "nan")) << r.output;
}

TEST_F(FmhaRunBwd, DeterministicBundlesAreRunTwice) {
  std::string b = bundle("plumbing_bwd_const_f32", DType::F32, 2, 2, 8, 8, "0",
                         /*deterministic=*/true);
  CommandResult r = run(b + " -b 1 --sq 3 --sk 3 --validate");
  EXPECT_EQ(r.exitCode, 1) << r.output; // the constants are not gradients
  EXPECT_TRUE(contains(r.output, "(host, f32, bwd, deterministic, mask=0"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "\ndeterministic: a second run gave "
                                 "bit-identical dq, dk, dv\nFAIL: "))
      << r.output;
}

TEST_F(FmhaRunBwd, HalfPrecisionStorage) {
  std::string b = bundle("plumbing_bwd_const_f16", DType::F16, 2, 1, 8, 8);
  std::string out = dir_.file("out");
  CommandResult r = run(b + " -b 1 --sq 2 --sk 3 --dtype f16 --save " + out);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(allEqual(read(out + "/dq.npy").data, 1.0f));
  EXPECT_TRUE(allEqual(read(out + "/dk.npy").data, 2.0f));
  EXPECT_TRUE(allEqual(read(out + "/dv.npy").data, 3.0f));
}

TEST_F(FmhaRunBwd, Bench) {
  std::string b = bundle("plumbing_bwd_const_f32", DType::F32, 2, 1, 8, 8, "t");
  CommandResult r = run(b + " -b 1 --sq 8 --sk 8 --bench --iters 3 "
                            "--warmup 1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "bench: iters=3 warmup=1 median_ms="))
      << r.output;
  EXPECT_TRUE(contains(r.output, " input_copies=4 (visible pairs only; "
                                 "backward = 2.5x forward FLOPs)\n"))
      << r.output;
}

TEST_F(FmhaRunBwd, KindFlagAndForwardBundles) {
  BundleMeta fwd = fmha::test::testMeta("naive_f32", DType::F32, 2, 1, 8, 4);
  std::string path = dir_.file("fwd.fmha"), err;
  ASSERT_TRUE(writeBundle(path, fwd, fmha::test::testKernelBinary(), &err))
      << err;
  CommandResult r = run(path + " -b 1 --sq 3 --sk 3 --bwd");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(r.output, "fmha-run: error: --bwd: bundle '" + path +
                          "' is a forward kernel (kind=fwd)\n");
  // A forward bundle still runs as before without the flag.
  r = run(path + " -b 1 --sq 3 --sk 3 --validate");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\nPASS")) << r.output;
  EXPECT_FALSE(contains(r.output, "bwd")) << r.output;
  // --show-mask alone works on a backward bundle.
  std::string b = bundle("plumbing_bwd_const_f32", DType::F32, 2, 1, 8, 4, "t");
  r = run(b + " --show-mask --sq 2 --sk 2");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "mask t (Sq=2, Sk=2)")) << r.output;
}

} // namespace
