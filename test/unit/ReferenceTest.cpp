//===- ReferenceTest.cpp - The float64 reference on hand-checked cases ----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Reference.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fmha;
using namespace fmha::rt;
using fmha::test::randomNormal;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

ReferenceConfig config(int64_t b, int64_t hq, int64_t hk, int64_t sq,
                       int64_t sk, int64_t d, int64_t dv,
                       const char *mask = "0", double scale = 0,
                       double softcap = 0) {
  ReferenceConfig c;
  c.b = b;
  c.hq = hq;
  c.hk = hk;
  c.sq = sq;
  c.sk = sk;
  c.d = d;
  c.dv = dv;
  c.mask = *MaskSpec::parse(mask);
  c.scale = scale;
  c.softcap = softcap;
  return c;
}

ReferenceForward forward(const ReferenceConfig &c, const std::vector<double> &q,
                         const std::vector<double> &k,
                         const std::vector<double> &v) {
  ReferenceForward out;
  std::string err;
  EXPECT_TRUE(referenceForward(c, q, k, v, &out, &err)) << err;
  return out;
}

TEST(Reference, OneKeyGivesV) {
  ReferenceConfig c = config(1, 1, 1, 3, 1, 2, 3);
  std::vector<double> q = {1, 2, -1, 0.5, 3, 3};
  std::vector<double> k = {0.25, -2};
  std::vector<double> v = {7, -1, 2};
  ReferenceForward r = forward(c, q, k, v);
  double scale = 1 / std::sqrt(2.0);
  for (int i = 0; i < 3; ++i) {
    for (int e = 0; e < 3; ++e)
      EXPECT_DOUBLE_EQ(r.o[i * 3 + e], v[e]);
    // lse of one score is the score.
    EXPECT_DOUBLE_EQ(r.lse[i], scale * (q[2 * i] * 0.25 - 2 * q[2 * i + 1]));
  }
}

TEST(Reference, UniformScoresGiveMeanOfV) {
  // q = 0: every score is 0, p = 1/Sk, lse = log(Sk).
  ReferenceConfig c = config(1, 1, 1, 2, 4, 3, 2);
  std::vector<double> q(6, 0.0), k = randomNormal(12, 1);
  std::vector<double> v = {1, 10, 2, 20, 3, 30, 6, 60};
  ReferenceForward r = forward(c, q, k, v);
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(r.o[i * 2 + 0], 3.0);
    EXPECT_DOUBLE_EQ(r.o[i * 2 + 1], 30.0);
    EXPECT_DOUBLE_EQ(r.lse[i], std::log(4.0));
  }
}

TEST(Reference, TwoKeysByHand) {
  // d = 1, scale 1: scores 0 and log 3 give p = 1/4, 3/4.
  ReferenceConfig c = config(1, 1, 1, 1, 2, 1, 1, "0", 1.0);
  ReferenceForward r = forward(c, {1.0}, {0.0, std::log(3.0)}, {4.0, 8.0});
  EXPECT_NEAR(r.o[0], 0.25 * 4 + 0.75 * 8, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(4.0), 1e-14);
}

TEST(Reference, SoftcapByHand) {
  // Scores x = 0 and x = 3 with softcap 2: s = 2 tanh(x / 2).
  ReferenceConfig c = config(1, 1, 1, 1, 2, 1, 1, "0", 1.0, 2.0);
  ReferenceForward r = forward(c, {1.0}, {0.0, 3.0}, {1.0, 0.0});
  double s1 = 2.0 * std::tanh(1.5);
  EXPECT_NEAR(r.o[0], 1.0 / (1.0 + std::exp(s1)), 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(1.0 + std::exp(s1)), 1e-14);
}

TEST(Reference, CausalFirstRowSeesFirstKey) {
  ReferenceConfig c = config(1, 1, 1, 4, 4, 2, 2, "t");
  std::vector<double> q = randomNormal(8, 2), k = randomNormal(8, 3),
                      v = randomNormal(8, 4);
  ReferenceForward r = forward(c, q, k, v);
  EXPECT_DOUBLE_EQ(r.o[0], v[0]);
  EXPECT_DOUBLE_EQ(r.o[1], v[1]);
  EXPECT_DOUBLE_EQ(r.lse[0], (q[0] * k[0] + q[1] * k[1]) / std::sqrt(2.0));
  // Row 1 sees keys 0 and 1 only: changing key 2 changes nothing there.
  std::vector<double> k2 = k, v2 = v;
  k2[4] += 5;
  v2[4] += 5;
  ReferenceForward r2 = forward(c, q, k2, v2);
  EXPECT_EQ(r2.o[2], r.o[2]);
  EXPECT_EQ(r2.lse[1], r.lse[1]);
  EXPECT_NE(r2.o[4], r.o[4]);
}

TEST(Reference, FullyMaskedRowIsZeroAndMinusInf) {
  // b with Sq = 3 > Sk = 1: row i sees j <= i - 2, so rows 0 and 1 see
  // nothing.
  ReferenceConfig c = config(1, 1, 1, 3, 1, 2, 2, "b");
  std::vector<double> q = randomNormal(6, 5), k = {0.5, 1.0}, v = {3.0, -4.0};
  ReferenceForward r = forward(c, q, k, v);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r.lse[i], -kInf);
    EXPECT_EQ(r.o[2 * i], 0.0);
    EXPECT_EQ(r.o[2 * i + 1], 0.0);
    EXPECT_FALSE(std::isnan(r.o[2 * i]));
  }
  EXPECT_DOUBLE_EQ(r.o[4], 3.0);
  EXPECT_DOUBLE_EQ(r.o[5], -4.0);
}

TEST(Reference, GqaEqualsRepeatedKv) {
  // Hq = 6, Hk = 2: head h reads kv head h / 3, as np.repeat(k, 3, axis=1).
  const int64_t b = 2, hq = 6, hk = 2, sq = 3, sk = 5, d = 4, dv = 3;
  std::vector<double> q = randomNormal(b * hq * sq * d, 6),
                      k = randomNormal(b * hk * sk * d, 7),
                      v = randomNormal(b * hk * sk * dv, 8);
  std::vector<double> kr, vr;
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t h = 0; h < hq; ++h) {
      int64_t g = h / (hq / hk);
      auto kBegin = k.begin() + (bi * hk + g) * sk * d;
      auto vBegin = v.begin() + (bi * hk + g) * sk * dv;
      kr.insert(kr.end(), kBegin, kBegin + sk * d);
      vr.insert(vr.end(), vBegin, vBegin + sk * dv);
    }
  }
  for (const char *mask : {"0", "b:1,0,1"}) {
    ReferenceForward gqa =
        forward(config(b, hq, hk, sq, sk, d, dv, mask), q, k, v);
    ReferenceForward mha =
        forward(config(b, hq, hq, sq, sk, d, dv, mask), q, kr, vr);
    EXPECT_EQ(gqa.o, mha.o) << mask;
    EXPECT_EQ(gqa.lse, mha.lse) << mask;
  }
}

TEST(Reference, MergeOfSplitKeysEqualsFull) {
  const int64_t sq = 4, sk = 7, split = 3, d = 3, dv = 2;
  std::vector<double> q = randomNormal(sq * d, 9), k = randomNormal(sk * d, 10),
                      v = randomNormal(sk * dv, 11);
  ReferenceForward full = forward(config(1, 1, 1, sq, sk, d, dv), q, k, v);
  std::vector<double> k1(k.begin(), k.begin() + split * d),
      k2(k.begin() + split * d, k.end());
  std::vector<double> v1(v.begin(), v.begin() + split * dv),
      v2(v.begin() + split * dv, v.end());
  ReferenceForward p1 = forward(config(1, 1, 1, sq, split, d, dv), q, k1, v1);
  ReferenceForward p2 =
      forward(config(1, 1, 1, sq, sk - split, d, dv), q, k2, v2);
  ReferenceForward merged;
  std::string err;
  ASSERT_TRUE(referenceMerge(sq, dv, p1.o, p1.lse, p2.o, p2.lse, &merged, &err))
      << err;
  for (size_t i = 0; i < full.o.size(); ++i)
    EXPECT_NEAR(merged.o[i], full.o[i], 1e-13);
  for (size_t i = 0; i < full.lse.size(); ++i)
    EXPECT_NEAR(merged.lse[i], full.lse[i], 1e-13);
}

TEST(Reference, MergeWithEmptyPartials) {
  // Row 0: second partial empty; row 1: first empty; row 2: both empty;
  // row 3: equal lse, so the mean.
  std::vector<double> o1 = {1, 2, 9, 9, 9, 9, 1, 3};
  std::vector<double> lse1 = {0.5, -kInf, -kInf, 2.0};
  std::vector<double> o2 = {9, 9, 5, 6, 9, 9, 3, 5};
  std::vector<double> lse2 = {-kInf, 1.5, -kInf, 2.0};
  ReferenceForward m;
  std::string err;
  ASSERT_TRUE(referenceMerge(4, 2, o1, lse1, o2, lse2, &m, &err)) << err;
  EXPECT_EQ(m.o[0], 1);
  EXPECT_EQ(m.o[1], 2);
  EXPECT_EQ(m.lse[0], 0.5);
  EXPECT_EQ(m.o[2], 5);
  EXPECT_EQ(m.o[3], 6);
  EXPECT_EQ(m.lse[1], 1.5);
  EXPECT_EQ(m.o[4], 0);
  EXPECT_EQ(m.o[5], 0);
  EXPECT_EQ(m.lse[2], -kInf);
  EXPECT_NEAR(m.o[6], 2, 1e-15);
  EXPECT_NEAR(m.o[7], 4, 1e-15);
  EXPECT_NEAR(m.lse[3], 2.0 + std::log(2.0), 1e-15);
}

// A variable-length batch against the softmax written out here over each
// sequence's own keys, the mask's coordinates local to the sequence: an
// empty sequence, one with no keys (o = 0, lse = the sink logit), a
// bottom-right mask whose offset is each sequence's Sk - Sq, and rows past
// the last offset (NaN: untouched).
TEST(Reference, VarlenIsEachSequenceOnItsOwn) {
  const int64_t hq = 4, hk = 2, d = 3, dv = 2, sqTotal = 12, skTotal = 15;
  const std::vector<int64_t> cuQ = {0, 4, 4, 6, 10}, cuK = {0, 7, 9, 9, 14};
  ReferenceConfig c =
      config(4, hq, hk, sqTotal, skTotal, d, dv, "b:2,0", 0.5, 0);
  c.sinks = {0.3, -1.0, 2.0, 0.0};
  std::vector<double> q = randomNormal(hq * sqTotal * d, 21),
                      k = randomNormal(hk * skTotal * d, 22),
                      v = randomNormal(hk * skTotal * dv, 23);
  ReferenceForward ref;
  std::string err;
  ASSERT_TRUE(referenceForwardVarlen(c, cuQ, cuK, q, k, v, &ref, &err)) << err;
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t g = h / (hq / hk);
    for (int64_t i = 0; i < sqTotal; ++i) {
      const int64_t row = h * sqTotal + i;
      int64_t n = 0;
      while (n < 4 && !(cuQ[n] <= i && i < cuQ[n + 1]))
        ++n;
      if (n == 4) { // past cu_q[B]
        EXPECT_TRUE(std::isnan(ref.lse[row])) << "row " << i;
        EXPECT_TRUE(std::isnan(ref.o[row * dv])) << "row " << i;
        continue;
      }
      const int64_t li = i - cuQ[n], lq = cuQ[n + 1] - cuQ[n];
      const int64_t lk = cuK[n + 1] - cuK[n];
      // b:2,0 local: key lj visible iff li + (lk - lq) - 2 <= lj <= li +
      // (lk - lq).
      double denom = std::exp(c.sinks[h]);
      std::vector<double> o(dv, 0.0);
      for (int64_t lj = 0; lj < lk; ++lj) {
        const int64_t diag = li + lk - lq;
        if (lj < diag - 2 || lj > diag)
          continue;
        const int64_t j = cuK[n] + lj;
        double s = 0;
        for (int64_t e = 0; e < d; ++e)
          s += q[row * d + e] * k[(g * skTotal + j) * d + e];
        const double p = std::exp(0.5 * s);
        denom += p;
        for (int64_t e = 0; e < dv; ++e)
          o[e] += p * v[(g * skTotal + j) * dv + e];
      }
      EXPECT_NEAR(ref.lse[row], std::log(denom), 1e-12) << "row " << i;
      for (int64_t e = 0; e < dv; ++e)
        EXPECT_NEAR(ref.o[row * dv + e], o[e] / denom, 1e-12) << "row " << i;
    }
  }
  // Offsets that fall, run past the tensors or miss an entry.
  for (const std::vector<int64_t> &bad : std::vector<std::vector<int64_t>>{
           {0, 4, 3, 6, 10}, {0, 4, 4, 6, 13}, {1, 4, 4, 6, 10}, {0, 4, 6}}) {
    EXPECT_FALSE(referenceForwardVarlen(c, bad, cuK, q, k, v, &ref, &err));
    EXPECT_EQ(err, "reference: cu_seqlens_q must be B + 1 = 5 offsets "
                   "nondecreasing from 0 to at most 12");
  }
}

// A paged cache against the contiguous reference of each sequence on its
// own: K/V scattered over pages in a shuffled order (spare pages and
// entries past each sequence hold garbage that must not be read), an
// empty cache (o = 0, lse = the sink logit), and chunked prefill.
TEST(Reference, PagedIsEachSequenceOnItsOwnCache) {
  const int64_t b = 3, hq = 4, hk = 2, sq = 5, d = 3, dv = 2, page = 4;
  const int64_t pages = 8, maxPages = 3;
  const std::vector<int64_t> lengths = {10, 0, 7};
  // Sequence n's key j in page table[n][j / page]; 99 past its pages.
  const std::vector<int64_t> table = {6, 1, 4, 99, 99, 99, 0, 7, 99};
  ReferenceConfig c = config(b, hq, hk, sq, 1, d, dv, "b:2,0", 0.5, 0);
  c.sinks = {0.3, -1.0, 2.0, 0.0};
  std::vector<double> q = randomNormal(b * hq * sq * d, 31),
                      k = randomNormal(pages * hk * page * d, 32),
                      v = randomNormal(pages * hk * page * dv, 33);
  ReferenceForward ref;
  std::string err;
  ASSERT_TRUE(referenceForwardPaged(c, page, pages, maxPages, table, lengths,
                                    {}, q, k, v, &ref, &err))
      << err;
  for (int64_t n = 0; n < b; ++n) {
    const int64_t len = lengths[n];
    std::vector<double> qn(q.begin() + n * hq * sq * d,
                           q.begin() + (n + 1) * hq * sq * d);
    std::vector<double> kn(hk * std::max<int64_t>(len, 1) * d, 0.0),
        vn(hk * std::max<int64_t>(len, 1) * dv, 0.0);
    for (int64_t h = 0; h < hk; ++h)
      for (int64_t j = 0; j < len; ++j) {
        const int64_t slot =
            (table[n * maxPages + j / page] * hk + h) * page + j % page;
        std::copy_n(&k[slot * d], d, &kn[(h * len + j) * d]);
        std::copy_n(&v[slot * dv], dv, &vn[(h * len + j) * dv]);
      }
    ReferenceForward own;
    if (len > 0) {
      ReferenceConfig one = c;
      one.b = 1;
      one.sk = len;
      ASSERT_TRUE(referenceForward(one, qn, kn, vn, &own, &err)) << err;
    }
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t row = (n * hq + h) * sq + i, mine = h * sq + i;
        EXPECT_NEAR(ref.lse[row], len ? own.lse[mine] : c.sinks[h], 1e-12)
            << "sequence " << n << " row " << i;
        for (int64_t e = 0; e < dv; ++e)
          EXPECT_NEAR(ref.o[row * dv + e], len ? own.o[mine * dv + e] : 0.0,
                      1e-12)
              << "sequence " << n << " row " << i;
      }
  }
  // Chunked prefill: the rows of sequence n of a batch-1 q against cache n
  // give its rows of the batched run above.
  const std::vector<int64_t> cuQ = {0, 5, 10, 15};
  std::vector<double> packed(hq * b * sq * d);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t h = 0; h < hq; ++h)
      std::copy_n(&q[(n * hq + h) * sq * d], sq * d,
                  &packed[(h * b * sq + n * sq) * d]);
  ReferenceConfig chunked = c;
  chunked.sq = b * sq;
  ReferenceForward cref;
  ASSERT_TRUE(referenceForwardPaged(chunked, page, pages, maxPages, table,
                                    lengths, cuQ, packed, k, v, &cref, &err))
      << err;
  for (int64_t n = 0; n < b; ++n)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < sq; ++i)
        EXPECT_EQ(cref.lse[h * b * sq + n * sq + i],
                  ref.lse[(n * hq + h) * sq + i]);
  // A length past the cache, an entry it reads that is not a page.
  EXPECT_FALSE(referenceForwardPaged(c, page, pages, maxPages, table,
                                     {13, 0, 7}, {}, q, k, v, &ref, &err));
  EXPECT_EQ(err, "reference: seqlens_k[0]=13 is outside the cache's [0, 12] "
                 "keys");
  EXPECT_FALSE(referenceForwardPaged(c, page, pages, maxPages, table,
                                     {10, 1, 7}, {}, q, k, v, &ref, &err));
  EXPECT_EQ(err, "reference: block_table[1, 0]=99 is not one of the 8 pages");
  // A table of the wrong size.
  EXPECT_FALSE(referenceForwardPaged(c, page, pages, maxPages + 1, table,
                                     lengths, {}, q, k, v, &ref, &err));
  EXPECT_EQ(err, "reference: a paged cache needs positive page size, pages "
                 "and max_pages, seqlens_k [B], block_table [B, max_pages] "
                 "and k, v [pages, Hk, page size, D]");
}

TEST(Reference, LearnedSinksFoldAfterTheSoftmax) {
  // DESIGN.md's fold of a sink logit after the fact: lse' = logaddexp(lse,
  // sink), o' = o e^{lse - lse'}; a row with no visible key (b, Sq > Sk)
  // gets o = 0 and lse = sink.
  ReferenceConfig c = config(2, 4, 2, 5, 3, 3, 2, "b:1,0", 0.6, 2.0);
  std::vector<double> q = randomNormal(2 * 4 * 5 * 3, 1),
                      k = randomNormal(2 * 2 * 3 * 3, 2),
                      v = randomNormal(2 * 2 * 3 * 2, 3);
  ReferenceForward plain = forward(c, q, k, v);
  c.sinks = {0.5, -3.0, 1.25, 8.0};
  ReferenceForward sunk = forward(c, q, k, v);
  for (int64_t row = 0; row < 2 * 4 * 5; ++row) {
    double sink = c.sinks[(row / 5) % 4];
    double lse = plain.lse[row];
    double folded = lse == -kInf
                        ? sink
                        : std::max(lse, sink) +
                              std::log(std::exp(lse - std::max(lse, sink)) +
                                       std::exp(sink - std::max(lse, sink)));
    EXPECT_NEAR(sunk.lse[row], folded, 1e-12) << "row " << row;
    double weight = lse == -kInf ? 0.0 : std::exp(lse - folded);
    for (int e = 0; e < 2; ++e)
      EXPECT_NEAR(sunk.o[row * 2 + e], plain.o[row * 2 + e] * weight, 1e-12)
          << "row " << row;
  }
  // Rows 0 and 1 of the b mask with Sq 5 > Sk 3 see no key.
  EXPECT_EQ(sunk.lse[0], c.sinks[0]);
  EXPECT_EQ(sunk.o[0], 0.0);
}

TEST(Reference, Errors) {
  ReferenceForward out;
  std::string err;
  EXPECT_FALSE(referenceForward(config(1, 3, 2, 1, 1, 1, 1), {0, 0, 0}, {0, 0},
                                {0, 0}, &out, &err));
  EXPECT_EQ(err, "reference: Hq (3) must be a multiple of Hk (2)");
  EXPECT_FALSE(
      referenceForward(config(1, 1, 1, 2, 1, 1, 1), {0}, {0}, {0}, &out, &err));
  EXPECT_EQ(err, "reference: q has 1 elements, expected 2");
  EXPECT_FALSE(
      referenceForward(config(1, 1, 1, 0, 1, 1, 1), {}, {0}, {0}, &out, &err));
  EXPECT_EQ(err, "reference: Sq must be positive, got 0");
  EXPECT_FALSE(referenceMerge(2, 1, {0, 0}, {0, 0}, {0}, {0, 0}, &out, &err));
  EXPECT_EQ(err, "reference: o2 has 1 elements, expected 2");
  ReferenceConfig c = config(1, 2, 1, 1, 1, 1, 1);
  c.sinks = {0.0};
  EXPECT_FALSE(referenceForward(c, {0, 0}, {0}, {0}, &out, &err));
  EXPECT_EQ(err, "reference: sinks has 1 values, expected Hq = 2");
  c.sinks = {0.0, std::nan("")};
  EXPECT_FALSE(referenceForward(c, {0, 0}, {0}, {0}, &out, &err));
  EXPECT_EQ(err, "reference: sinks must be finite");
}

//===----------------------------------------------------------------------===//
// Backward against central finite differences of the forward
//===----------------------------------------------------------------------===//

double loss(const ReferenceConfig &c, const std::vector<double> &q,
            const std::vector<double> &k, const std::vector<double> &v,
            const std::vector<double> &dO) {
  ReferenceForward r = forward(c, q, k, v);
  double s = 0;
  for (size_t i = 0; i < r.o.size(); ++i)
    s += r.o[i] * dO[i];
  return s;
}

void checkGradients(ReferenceConfig c, unsigned seed) {
  std::vector<double> sinks = c.sinks;
  std::vector<double> q = randomNormal(c.b * c.hq * c.sq * c.d, seed),
                      k = randomNormal(c.b * c.hk * c.sk * c.d, seed + 1),
                      v = randomNormal(c.b * c.hk * c.sk * c.dv, seed + 2),
                      dO = randomNormal(c.b * c.hq * c.sq * c.dv, seed + 3);
  ReferenceBackward g;
  std::string err;
  ASSERT_TRUE(referenceBackward(c, q, k, v, dO, &g, &err)) << err;
  const double eps = 1e-5;
  struct Input {
    const char *name;
    std::vector<double> *x;
    const std::vector<double> *grad;
  } inputs[] = {{"q", &q, &g.dq},
                {"k", &k, &g.dk},
                {"v", &v, &g.dv},
                {"sinks", &sinks, &g.dsinks}};
  for (const Input &in : inputs) {
    for (size_t i = 0; i < in.x->size(); ++i) {
      double saved = (*in.x)[i];
      (*in.x)[i] = saved + eps;
      c.sinks = sinks;
      double up = loss(c, q, k, v, dO);
      (*in.x)[i] = saved - eps;
      c.sinks = sinks;
      double down = loss(c, q, k, v, dO);
      (*in.x)[i] = saved;
      c.sinks = sinks;
      double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR((*in.grad)[i], numeric, 1e-7 * (1 + std::fabs(numeric)))
          << in.name << "[" << i << "] mask " << c.mask.str();
    }
  }
}

TEST(ReferenceBackward, MatchesFiniteDifferences) {
  checkGradients(config(1, 2, 2, 3, 4, 3, 2), 20);
}

TEST(ReferenceBackward, GqaTwoToOneWithCausalMask) {
  checkGradients(config(2, 4, 2, 3, 5, 2, 3, "b"), 30);
}

TEST(ReferenceBackward, WindowSinkSoftcapAndScale) {
  checkGradients(config(1, 2, 1, 5, 6, 3, 2, "t:1,0,2", 0.7, 1.5), 40);
}

TEST(ReferenceBackward, LearnedSinksMatchFiniteDifferences) {
  // dsinks too, with GQA, a window with sink tokens (independent of the
  // learned sinks), softcap, and rows that see no key (b with Sq > Sk).
  ReferenceConfig c = config(2, 4, 2, 5, 6, 3, 2, "b:1,0,2", 0.7, 1.5);
  c.sinks = {0.3, -1.2, 2.0, 0.0};
  checkGradients(c, 60);
  ReferenceConfig empty = config(1, 2, 1, 4, 2, 2, 2, "b");
  empty.sinks = {1.5, -0.5};
  checkGradients(empty, 70);
}

TEST(ReferenceBackward, FullyMaskedRowsHaveNoGradient) {
  // b with Sq = 4 > Sk = 2: rows 0 and 1 see nothing.
  ReferenceConfig c = config(1, 2, 1, 4, 2, 2, 2, "b");
  checkGradients(c, 50);
  std::vector<double> q = randomNormal(16, 1), k = randomNormal(4, 2),
                      v = randomNormal(4, 3), dO = randomNormal(16, 4);
  ReferenceBackward g;
  std::string err;
  ASSERT_TRUE(referenceBackward(c, q, k, v, dO, &g, &err)) << err;
  for (int h = 0; h < 2; ++h)
    for (int e = 0; e < 4; ++e)
      EXPECT_EQ(g.dq[h * 8 + e], 0.0);
}

TEST(ReferenceBackward, MagnitudesBoundTheGradients) {
  // Sk = 1: every row sees the one key with P = 1, so dS = dP - Dsum = 0 and
  // dq = dk = 0 exactly, while the magnitudes of their terms are not 0.
  ReferenceConfig one = config(1, 2, 1, 5, 1, 4, 3);
  std::vector<double> q = randomNormal(40, 9), k = randomNormal(4, 10),
                      v = randomNormal(3, 11), dO = randomNormal(30, 12);
  ReferenceBackward g;
  std::string err;
  ASSERT_TRUE(referenceBackward(one, q, k, v, dO, &g, &err)) << err;
  for (size_t i = 0; i < g.dq.size(); ++i) {
    EXPECT_NEAR(g.dq[i], 0.0, 1e-15);
    EXPECT_GT(g.dqMagnitude[i], 0.0);
  }
  for (size_t i = 0; i < g.dk.size(); ++i) {
    EXPECT_NEAR(g.dk[i], 0.0, 1e-14);
    EXPECT_GT(g.dkMagnitude[i], 0.0);
  }
  // In general each magnitude bounds its gradient (triangle inequality).
  ReferenceConfig c = config(2, 4, 2, 6, 7, 3, 5, "b:2,1,1", 0.5, 3.0);
  q = randomNormal(144, 13), k = randomNormal(84, 14),
  v = randomNormal(140, 15), dO = randomNormal(240, 16);
  ASSERT_TRUE(referenceBackward(c, q, k, v, dO, &g, &err)) << err;
  for (size_t i = 0; i < g.dq.size(); ++i)
    EXPECT_LE(std::fabs(g.dq[i]), g.dqMagnitude[i] + 1e-12);
  for (size_t i = 0; i < g.dk.size(); ++i)
    EXPECT_LE(std::fabs(g.dk[i]), g.dkMagnitude[i] + 1e-12);
  for (size_t i = 0; i < g.dv.size(); ++i)
    EXPECT_LE(std::fabs(g.dv[i]), g.dvMagnitude[i] + 1e-12);
}

TEST(ReferenceBackward, GivenOFeedsDsumOnly) {
  ReferenceConfig c = config(1, 2, 1, 3, 5, 4, 3, "t:2,0");
  std::vector<double> q = randomNormal(24, 5), k = randomNormal(20, 6),
                      v = randomNormal(15, 7), dO = randomNormal(18, 8);
  ReferenceBackward exact, same, moved;
  std::string err;
  ASSERT_TRUE(referenceBackward(c, q, k, v, dO, &exact, &err)) << err;
  ReferenceForward fwd = forward(c, q, k, v);
  ASSERT_TRUE(referenceBackward(c, q, k, v, dO, &same, &err, &fwd.o)) << err;
  EXPECT_EQ(same.dq, exact.dq);
  EXPECT_EQ(same.dk, exact.dk);
  EXPECT_EQ(same.dv, exact.dv);
  // Moving o by delta moves Dsum of each row by dO . delta, so dS by
  // -P * (dO . delta): dq and dk change, dv = P^T dO does not.
  std::vector<double> o = fwd.o;
  for (double &x : o)
    x += 0.01;
  ASSERT_TRUE(referenceBackward(c, q, k, v, dO, &moved, &err, &o)) << err;
  EXPECT_EQ(moved.dv, exact.dv);
  EXPECT_NE(moved.dq, exact.dq);
  EXPECT_NE(moved.dk, exact.dk);
  EXPECT_FALSE(referenceBackward(c, q, k, v, dO, &moved, &err, &k));
  EXPECT_EQ(err, "reference: o has 20 elements, expected 18");
}

} // namespace
