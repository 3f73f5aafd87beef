//===- BackwardTest.cpp - The backward entry points' plumbing -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Kernel::runBackward, runBackwardHost and the C API's backward functions:
// kind checks, null pointers, problem checks and the host backward ABI's
// plumbing. No backward kernel computes gradients here: the kernels are the
// plumbing fakes of PlumbingBwdKernel.cpp, which check the descriptors they
// get and write constants (dq = 1, dk = 2, dv = 3).
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Runtime.h"
#include "fmha/Runtime/fmha_runtime.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::plumbingBwdMeta;
using fmha::test::testKernelBinary;
using fmha::test::testMeta;

namespace {

std::string bundleBytes(const BundleMeta &meta) {
  std::string bytes, err;
  EXPECT_TRUE(serializeBundle(meta, testKernelBinary(), &bytes, &err)) << err;
  return bytes;
}

std::unique_ptr<Kernel> load(const BundleMeta &meta) {
  Expected<std::unique_ptr<Kernel>> k =
      Kernel::loadBytes(bundleBytes(meta), "test.fmha");
  EXPECT_TRUE(k.ok()) << k.message();
  return k.ok() ? k.take() : nullptr;
}

Problem makeProblem(const BundleMeta &m, int64_t b, int64_t sq, int64_t sk) {
  Problem p;
  p.b = b;
  p.hq = m.hq;
  p.hk = m.hk;
  p.sq = sq;
  p.sk = sk;
  p.d = m.d;
  p.dv = m.dv;
  return p;
}

/// f32 buffers of one backward call: inputs with finite values, outputs NaN.
struct Buffers {
  std::vector<float> q, k, v, o, lse, dO, dq, dk, dv;

  explicit Buffers(const Problem &p) {
    float nan = std::numeric_limits<float>::quiet_NaN();
    q.assign(p.qElements(), 0.5f);
    k.assign(p.kElements(), -0.25f);
    v.assign(p.vElements(), 1.5f);
    o.assign(p.oElements(), 0.75f);
    lse.assign(p.lseElements(), 2.0f);
    lse[0] = -std::numeric_limits<float>::infinity(); // a row with no key
    dO.assign(p.oElements(), -1.0f);
    dq.assign(p.qElements(), nan);
    dk.assign(p.kElements(), nan);
    dv.assign(p.vElements(), nan);
  }

  BackwardArgs args() {
    BackwardArgs a;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.o = o.data();
    a.lse = lse.data();
    a.dO = dO.data();
    a.dq = dq.data();
    a.dk = dk.data();
    a.dv = dv.data();
    return a;
  }

  bool outputsAll(float wantDq, float wantDk, float wantDv) const {
    auto all = [](const std::vector<float> &t, float want) {
      for (float x : t)
        if (!(x == want))
          return false;
      return true;
    };
    return all(dq, wantDq) && all(dk, wantDk) && all(dv, wantDv);
  }

  bool outputsUntouched() const {
    auto allNaN = [](const std::vector<float> &t) {
      for (float x : t)
        if (!std::isnan(x))
          return false;
      return true;
    };
    return allNaN(dq) && allNaN(dk) && allNaN(dv);
  }
};

TEST(Backward, FlopsAreTwoAndAHalfTimesForward) {
  for (const char *spec : {"0", "t", "b:3,2,1"}) {
    MaskSpec mask = *MaskSpec::parse(spec);
    Problem p;
    p.b = 3;
    p.hq = 8;
    p.hk = 2;
    p.sq = 17;
    p.sk = 33;
    p.d = 64;
    p.dv = 32;
    EXPECT_EQ(backwardFlops(p, mask), 2.5 * forwardFlops(p, mask)) << spec;
    EXPECT_GT(backwardFlops(p, mask), 0.0);
  }
}

TEST(Backward, DefaultCheckLaunchAcceptsEverything) {
  // The host has no launch limits: LoadedKernel's default check.
  struct HostLike final : LoadedKernel {
    Status launch(const LaunchPlan &, void *) override {
      return Status::success();
    }
  } kernel;
  PlannedLaunch launch;
  launch.dims.grid[0] = int64_t(1) << 40;
  EXPECT_TRUE(kernel.checkLaunch(launch).ok());
}

TEST(Backward, HostAbiPlumbing) {
  // GQA (Hq/Hk = 2), Sq != Sk, D != Dv: every shape differs.
  BundleMeta meta =
      plumbingBwdMeta("plumbing_bwd_const_f32", DType::F32, 4, 2, 8, 4);
  meta.deterministic = true;
  std::unique_ptr<Kernel> kernel = load(meta);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->meta().kind, KernelKind::Backward);
  EXPECT_TRUE(kernel->meta().deterministic);
  Problem p = makeProblem(meta, 2, 5, 7);

  Buffers direct(p);
  Status s = kernel->runBackward(p, direct.args());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(direct.outputsAll(1, 2, 3));
  // A host kernel needs no workspace.
  Expected<size_t> workspace = kernel->backwardWorkspaceBytes(p);
  ASSERT_TRUE(workspace.ok()) << workspace.message();
  EXPECT_EQ(*workspace, 0u);

  Buffers host(p);
  s = kernel->runBackwardHost(p, host.args());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(host.outputsAll(1, 2, 3));

  // The fake's own check: a NaN in lse is not plumbing it accepts.
  Buffers poisoned(p);
  poisoned.lse[3] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(kernel->runBackward(p, poisoned.args()).ok());
  EXPECT_TRUE(std::isnan(poisoned.dq[0]) && std::isnan(poisoned.dk[0]) &&
              std::isnan(poisoned.dv[0]));

  // f16: the descriptors carry 16-bit elements.
  BundleMeta half =
      plumbingBwdMeta("plumbing_bwd_const_f16", DType::F16, 2, 1, 8, 8);
  std::unique_ptr<Kernel> halfKernel = load(half);
  ASSERT_TRUE(halfKernel);
  Problem hp = makeProblem(half, 1, 3, 4);
  uint16_t one = floatToHalfBits(1.0f);
  std::vector<uint16_t> q(hp.qElements(), one), k(hp.kElements(), one),
      v(hp.vElements(), one), o(hp.oElements(), one), dO(hp.oElements(), one),
      dq(hp.qElements(), 0xFFFF), dk(hp.kElements(), 0xFFFF),
      dv(hp.vElements(), 0xFFFF);
  std::vector<float> lse(hp.lseElements(), 0.0f);
  BackwardArgs a;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.o = o.data();
  a.lse = lse.data();
  a.dO = dO.data();
  a.dq = dq.data();
  a.dk = dk.data();
  a.dv = dv.data();
  s = halfKernel->runBackwardHost(hp, a);
  ASSERT_TRUE(s.ok()) << s.message();
  for (uint16_t x : dq)
    EXPECT_EQ(x, floatToHalfBits(1.0f));
  for (uint16_t x : dk)
    EXPECT_EQ(x, floatToHalfBits(2.0f));
  for (uint16_t x : dv)
    EXPECT_EQ(x, floatToHalfBits(3.0f));
}

TEST(Backward, KindMismatch) {
  BundleMeta fwdMeta = testMeta("naive_f32", DType::F32, 2, 1, 4, 4);
  BundleMeta bwdMeta =
      plumbingBwdMeta("plumbing_bwd_const_f32", DType::F32, 2, 1, 4, 4);
  std::unique_ptr<Kernel> fwd = load(fwdMeta), bwd = load(bwdMeta);
  ASSERT_TRUE(fwd && bwd);
  Problem p = makeProblem(fwdMeta, 1, 3, 3);
  const std::string fwdMessage =
      "bundle 'test.fmha' is a forward kernel (kind=fwd); run it with run "
      "(C API: fmhaKernelRunForward)";
  const std::string bwdMessage =
      "bundle 'test.fmha' is a backward kernel (kind=bwd); run it with "
      "runBackward (C API: fmhaKernelRunBackward)";

  Buffers b(p);
  for (Status s :
       {fwd->runBackward(p, b.args()), fwd->runBackwardHost(p, b.args())}) {
    EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
    EXPECT_EQ(s.message(), fwdMessage);
  }
  EXPECT_TRUE(b.outputsUntouched());

  std::vector<float> q(p.qElements()), k(p.kElements()), v(p.vElements()),
      o(p.oElements()), lse(p.lseElements());
  ForwardArgs fa;
  fa.q = q.data();
  fa.k = k.data();
  fa.v = v.data();
  fa.o = o.data();
  fa.lse = lse.data();
  for (Status s : {bwd->run(p, fa), bwd->runHost(p, fa)}) {
    EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
    EXPECT_EQ(s.message(), bwdMessage);
  }
  // The kind is checked first, before the problem and the pointers.
  Problem bad = p;
  bad.hq = 3;
  EXPECT_EQ(fwd->runBackward(bad, BackwardArgs()).message(), fwdMessage);
  EXPECT_EQ(bwd->run(bad, ForwardArgs()).message(), bwdMessage);
}

TEST(Backward, ProblemAndPointerChecks) {
  BundleMeta meta =
      plumbingBwdMeta("plumbing_bwd_const_f32", DType::F32, 4, 2, 8, 4);
  std::unique_ptr<Kernel> kernel = load(meta);
  ASSERT_TRUE(kernel);
  Problem p = makeProblem(meta, 1, 3, 5);

  Problem bad = p;
  bad.dv = 8;
  Buffers b(p);
  for (Status s : {kernel->runBackward(bad, b.args()),
                   kernel->runBackwardHost(bad, b.args())}) {
    EXPECT_EQ(s.code(), ErrorCode::ProblemMismatch);
    EXPECT_EQ(s.message(), "problem Dv=8 does not match bundle Dv=4");
  }
  bad = p;
  bad.sk = 0;
  Status s = kernel->runBackward(bad, b.args());
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "problem Sk must be positive, got 0");
  EXPECT_TRUE(b.outputsUntouched());

  const char *names[] = {"q", "k", "v", "o", "lse", "dO", "dq", "dk", "dv"};
  for (int i = 0; i < 9; ++i) {
    BackwardArgs a = b.args();
    const void **slots[] = {&a.q, &a.k, &a.v, &a.o};
    if (i < 4)
      *slots[i] = nullptr;
    else if (i == 4)
      a.lse = nullptr;
    else if (i == 5)
      a.dO = nullptr;
    else
      *(i == 6 ? &a.dq : i == 7 ? &a.dk : &a.dv) = nullptr;
    for (Status st :
         {kernel->runBackward(p, a), kernel->runBackwardHost(p, a)}) {
      EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << names[i];
      EXPECT_EQ(st.message(), std::string("null pointer for ") + names[i]);
    }
  }
  EXPECT_TRUE(b.outputsUntouched());
}

TEST(Backward, CApi) {
  BundleMeta bwdMeta =
      plumbingBwdMeta("plumbing_bwd_const_f32", DType::F32, 2, 1, 4, 3, "t");
  std::string bytes = bundleBytes(bwdMeta);
  fmhaKernel bwd = nullptr, fwd = nullptr;
  ASSERT_EQ(fmhaKernelLoadBytes(bytes.data(), bytes.size(), &bwd), FMHA_SUCCESS)
      << fmhaGetLastError();
  std::string fwdBytes =
      bundleBytes(testMeta("naive_f32", DType::F32, 2, 1, 4, 3, "t"));
  ASSERT_EQ(fmhaKernelLoadBytes(fwdBytes.data(), fwdBytes.size(), &fwd),
            FMHA_SUCCESS)
      << fmhaGetLastError();
  fmhaKernelInfo info;
  ASSERT_EQ(fmhaKernelGetInfo(bwd, &info), FMHA_SUCCESS);
  EXPECT_EQ(info.kind, FMHA_KIND_BWD);

  fmhaProblem cp = {2, 2, 1, 3, 4, 4, 3};
  Problem p = makeProblem(bwdMeta, 2, 3, 4);
  using RunFn = int (*)(fmhaKernel, const fmhaProblem *, const void *,
                        const void *, const void *, const void *, const float *,
                        const void *, void *, void *, void *, void *);
  struct Entry {
    RunFn fn;
    const char *name;
  } entries[] = {{fmhaKernelRunBackward, "fmhaKernelRunBackward"},
                 {fmhaKernelRunBackwardDevice, "fmhaKernelRunBackwardDevice"}};
  for (const Entry &e : entries) {
    Buffers b(p);
    ASSERT_EQ(e.fn(bwd, &cp, b.q.data(), b.k.data(), b.v.data(), b.o.data(),
                   b.lse.data(), b.dO.data(), b.dq.data(), b.dk.data(),
                   b.dv.data(), nullptr),
              FMHA_SUCCESS)
        << e.name << ": " << fmhaGetLastError();
    EXPECT_TRUE(b.outputsAll(1, 2, 3)) << e.name;

    Buffers c(p);
    EXPECT_EQ(e.fn(nullptr, &cp, c.q.data(), c.k.data(), c.v.data(), c.o.data(),
                   c.lse.data(), c.dO.data(), c.dq.data(), c.dk.data(),
                   c.dv.data(), nullptr),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(fmhaGetLastError()),
              std::string(e.name) + ": null kernel or problem");
    EXPECT_EQ(e.fn(bwd, nullptr, c.q.data(), c.k.data(), c.v.data(), c.o.data(),
                   c.lse.data(), c.dO.data(), c.dq.data(), c.dk.data(),
                   c.dv.data(), nullptr),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(fmhaGetLastError()),
              std::string(e.name) + ": null kernel or problem");
    EXPECT_EQ(e.fn(bwd, &cp, c.q.data(), c.k.data(), c.v.data(), c.o.data(),
                   nullptr, c.dO.data(), c.dq.data(), c.dk.data(), c.dv.data(),
                   nullptr),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(fmhaGetLastError(), "null pointer for lse");
    EXPECT_EQ(e.fn(bwd, &cp, c.q.data(), c.k.data(), c.v.data(), c.o.data(),
                   c.lse.data(), c.dO.data(), nullptr, c.dk.data(), c.dv.data(),
                   nullptr),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(fmhaGetLastError(), "null pointer for dq");
    fmhaProblem wrong = cp;
    wrong.hq = 4;
    EXPECT_EQ(e.fn(bwd, &wrong, c.q.data(), c.k.data(), c.v.data(), c.o.data(),
                   c.lse.data(), c.dO.data(), c.dq.data(), c.dk.data(),
                   c.dv.data(), nullptr),
              FMHA_ERROR_PROBLEM_MISMATCH);
    EXPECT_STREQ(fmhaGetLastError(), "problem Hq=4 does not match bundle Hq=2");
    // A forward bundle run backward.
    EXPECT_EQ(e.fn(fwd, &cp, c.q.data(), c.k.data(), c.v.data(), c.o.data(),
                   c.lse.data(), c.dO.data(), c.dq.data(), c.dk.data(),
                   c.dv.data(), nullptr),
              FMHA_ERROR_PROBLEM_MISMATCH);
    EXPECT_STREQ(fmhaGetLastError(),
                 "bundle '<memory>' is a forward kernel (kind=fwd); run it "
                 "with run (C API: fmhaKernelRunForward)");
    EXPECT_TRUE(c.outputsUntouched()) << e.name;
  }
  // A backward bundle run forward, on host and device memory.
  Buffers c(p);
  EXPECT_EQ(fmhaKernelRunForward(bwd, &cp, c.q.data(), c.k.data(), c.v.data(),
                                 c.dq.data(), nullptr, nullptr),
            FMHA_ERROR_PROBLEM_MISMATCH);
  EXPECT_STREQ(fmhaGetLastError(),
               "bundle '<memory>' is a backward kernel (kind=bwd); run it "
               "with runBackward (C API: fmhaKernelRunBackward)");
  EXPECT_EQ(fmhaKernelRunForwardDevice(bwd, &cp, c.q.data(), c.k.data(),
                                       c.v.data(), c.dq.data(), c.lse.data(),
                                       nullptr),
            FMHA_ERROR_PROBLEM_MISMATCH);
  EXPECT_TRUE(c.outputsUntouched());
  fmhaKernelDestroy(bwd);
  fmhaKernelDestroy(fwd);
}

} // namespace
