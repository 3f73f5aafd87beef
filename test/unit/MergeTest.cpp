//===- MergeTest.cpp - kind=merge bundles: metadata and runtime checks ----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The metadata rules of kind=merge, the kind checks between run, runBackward
// and runMerge, and the shape and pointer checks of runMerge and its C API.
// The merge arithmetic itself is compiled by fmha-compile --merge and checked
// against referenceMerge by test/Tools/fmha-compile-merge.test and the ring
// tests; the bundles here borrow a naive test kernel's symbol and are never
// launched as merges.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"
#include "fmha/Runtime/fmha_runtime.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <vector>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::testKernelBinary;
using fmha::test::testMeta;

namespace {

BundleMeta mergeMeta(int64_t h, int64_t dv) {
  BundleMeta m = testMeta("naive_f32", DType::F32, h, h, dv, dv);
  m.kind = KernelKind::Merge;
  return m;
}

std::unique_ptr<Kernel> load(const BundleMeta &meta) {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(meta, testKernelBinary(), &bytes, &err)) << err;
  Expected<std::unique_ptr<Kernel>> k = Kernel::loadBytes(bytes, "m.fmha");
  EXPECT_TRUE(k.ok()) << k.message();
  return k.ok() ? k.take() : nullptr;
}

TEST(Merge, KindSpellingAndRoundTrip) {
  EXPECT_STREQ(toString(KernelKind::Merge), "merge");
  EXPECT_EQ(parseKernelKind("merge"), KernelKind::Merge);
  std::string bytes, err, binary;
  ASSERT_TRUE(serializeBundle(mergeMeta(3, 8), "x", &bytes, &err)) << err;
  EXPECT_NE(bytes.find("\nkind=merge\n"), std::string::npos);
  BundleMeta back;
  ASSERT_TRUE(parseBundle(bytes, "m", &back, &binary, &err)) << err;
  EXPECT_EQ(back.kind, KernelKind::Merge);
  EXPECT_EQ(back.hq, 3);
  EXPECT_EQ(back.dv, 8);
}

TEST(Merge, MetadataRules) {
  BundleMeta m = mergeMeta(4, 16);
  EXPECT_EQ(m.validate(), "");
  m.hk = 2;
  EXPECT_EQ(m.validate(), "a merge kernel (kind=merge) needs hk = hq and "
                          "d = dv, got hq=4 hk=2 d=16 dv=16");
  m = mergeMeta(4, 16);
  m.d = 8;
  EXPECT_NE(m.validate().find("needs hk = hq and d = dv"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    m = mergeMeta(4, 16);
    if (i == 0)
      m.mask = *MaskSpec::parse("t");
    if (i == 1)
      m.scale = 0.5f;
    if (i == 2)
      m.softcap = 30.0f;
    EXPECT_EQ(m.validate(), "a merge kernel (kind=merge) needs mask=0, "
                            "scale=0 and softcap=0");
  }
}

TEST(Merge, KindMismatch) {
  std::unique_ptr<Kernel> merge = load(mergeMeta(2, 4));
  std::unique_ptr<Kernel> fwd =
      load(testMeta("naive_f32", DType::F32, 2, 2, 4, 4));
  ASSERT_TRUE(merge && fwd);
  Problem p;
  p.b = 1, p.hq = 2, p.hk = 2, p.sq = 3, p.sk = 3, p.d = 4, p.dv = 4;
  std::vector<float> buf(64);
  ForwardArgs fa;
  fa.q = fa.k = fa.v = buf.data();
  fa.o = buf.data();
  fa.lse = buf.data();
  Status s = merge->run(p, fa);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "bundle 'm.fmha' is a merge kernel (kind=merge); run "
                         "it with runMerge (C API: fmhaKernelRunMerge)");
  MergeProblem mp{1, 2, 3, 4};
  MergeArgs ma;
  ma.o1 = ma.o2 = buf.data();
  ma.lse1 = ma.lse2 = buf.data();
  ma.o = buf.data();
  ma.lse = buf.data();
  s = fwd->runMerge(mp, ma);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "bundle 'm.fmha' is not a merge kernel (kind=fwd)");
}

TEST(Merge, ShapeAndPointerChecks) {
  std::unique_ptr<Kernel> merge = load(mergeMeta(2, 4));
  ASSERT_TRUE(merge);
  std::vector<float> buf(64);
  MergeArgs ma;
  ma.o1 = ma.o2 = buf.data();
  ma.lse1 = ma.lse2 = buf.data();
  ma.o = buf.data();
  ma.lse = buf.data();
  Status s = merge->runMerge(MergeProblem{1, 3, 2, 4}, ma);
  EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
  EXPECT_EQ(s.message(), "merge problem H=3 does not match bundle H=2");
  s = merge->runMerge(MergeProblem{1, 2, 2, 8}, ma);
  EXPECT_EQ(s.message(), "merge problem Dv=8 does not match bundle Dv=4");
  s = merge->runMerge(MergeProblem{1, 2, 0, 4}, ma);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "merge problem S must be positive, got 0");
  s = merge->runMerge(MergeProblem{INT64_MAX / 2, 2, 1 << 20, 4}, ma);
  EXPECT_NE(s.message().find("overflows 64 bits"), std::string::npos);
  MergeArgs noLse2 = ma;
  noLse2.lse2 = nullptr;
  s = merge->runMerge(MergeProblem{1, 2, 2, 4}, noLse2);
  EXPECT_EQ(s.message(), "null pointer for lse2");

  // The C API reports the same.
  fmhaKernel handle = nullptr;
  std::string bytes, err;
  ASSERT_TRUE(
      serializeBundle(mergeMeta(2, 4), testKernelBinary(), &bytes, &err));
  ASSERT_EQ(fmhaKernelLoadBytes(bytes.data(), bytes.size(), &handle),
            FMHA_SUCCESS);
  fmhaKernelInfo info;
  ASSERT_EQ(fmhaKernelGetInfo(handle, &info), FMHA_SUCCESS);
  EXPECT_EQ(info.kind, FMHA_KIND_MERGE);
  fmhaMergeProblem cp{1, 5, 2, 4};
  EXPECT_EQ(fmhaKernelRunMerge(handle, &cp, buf.data(), buf.data(), buf.data(),
                               buf.data(), buf.data(), buf.data(), nullptr),
            FMHA_ERROR_PROBLEM_MISMATCH);
  EXPECT_STREQ(fmhaGetLastError(),
               "merge problem H=5 does not match bundle H=2");
  EXPECT_EQ(fmhaKernelRunMerge(handle, nullptr, buf.data(), buf.data(),
                               buf.data(), buf.data(), buf.data(), buf.data(),
                               nullptr),
            FMHA_ERROR_INVALID_ARGUMENT);
  fmhaKernelDestroy(handle);
}

} // namespace
