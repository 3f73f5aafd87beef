//===- Reference.cpp - float64 reference of attention ---------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace fmha::rt {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

bool sizeIs(const std::vector<double> &t, const char *name, int64_t expected,
            std::string *err) {
  if (static_cast<int64_t>(t.size()) == expected)
    return true;
  *err = std::string("reference: ") + name + " has " +
         std::to_string(t.size()) + " elements, expected " +
         std::to_string(expected);
  return false;
}

/// The scores of row i of (batch bi, query head h) against every key, and
/// which keys are visible. Returns the row's lse (-inf when no key is
/// visible) and fills p with the probabilities (0 for hidden keys).
struct Row {
  std::vector<double> x;  ///< scale * q.k before the softcap
  std::vector<double> p;  ///< softmax probabilities
  std::vector<bool> seen; ///< visible keys
  double lse = kNegInf;
};

Row computeRow(const ReferenceConfig &c, const std::vector<double> &q,
               const std::vector<double> &k, int64_t bi, int64_t h, int64_t i) {
  int64_t kvh = h / (c.hq / c.hk);
  double scale = c.effectiveScale();
  const double *qi = &q[((bi * c.hq + h) * c.sq + i) * c.d];
  Row r;
  r.x.assign(c.sk, 0.0);
  r.p.assign(c.sk, 0.0);
  r.seen.assign(c.sk, false);
  std::vector<double> s(c.sk, kNegInf);
  double m = kNegInf;
  for (int64_t j = 0; j < c.sk; ++j) {
    if (!c.mask.visible(i, j, c.sq, c.sk))
      continue;
    const double *kj = &k[((bi * c.hk + kvh) * c.sk + j) * c.d];
    double dot = 0.0;
    for (int64_t e = 0; e < c.d; ++e)
      dot += qi[e] * kj[e];
    r.x[j] = scale * dot;
    s[j] = c.softcap > 0.0 ? c.softcap * std::tanh(r.x[j] / c.softcap) : r.x[j];
    r.seen[j] = true;
    m = std::max(m, s[j]);
  }
  // A learned sink logit: one more term of the denominator, no value.
  const bool sink = !c.sinks.empty();
  if (sink)
    m = std::max(m, c.sinks[h]);
  if (m == kNegInf)
    return r;
  double sum = sink ? std::exp(c.sinks[h] - m) : 0.0;
  for (int64_t j = 0; j < c.sk; ++j)
    if (r.seen[j])
      sum += std::exp(s[j] - m);
  r.lse = m + std::log(sum);
  for (int64_t j = 0; j < c.sk; ++j)
    if (r.seen[j])
      r.p[j] = std::exp(s[j] - r.lse);
  return r;
}

bool checkInputs(const ReferenceConfig &c, const std::vector<double> &q,
                 const std::vector<double> &k, const std::vector<double> &v,
                 std::string *err) {
  std::string problem = c.validate();
  if (!problem.empty()) {
    *err = "reference: " + problem;
    return false;
  }
  return sizeIs(q, "q", c.b * c.hq * c.sq * c.d, err) &&
         sizeIs(k, "k", c.b * c.hk * c.sk * c.d, err) &&
         sizeIs(v, "v", c.b * c.hk * c.sk * c.dv, err);
}

} // namespace

double ReferenceConfig::effectiveScale() const {
  return scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(d));
}

std::string ReferenceConfig::validate() const {
  const int64_t dims[] = {b, hq, hk, sq, sk, d, dv};
  const char *names[] = {"B", "Hq", "Hk", "Sq", "Sk", "D", "Dv"};
  for (int i = 0; i < 7; ++i)
    if (dims[i] <= 0)
      return std::string(names[i]) + " must be positive, got " +
             std::to_string(dims[i]);
  if (hq % hk != 0)
    return "Hq (" + std::to_string(hq) + ") must be a multiple of Hk (" +
           std::to_string(hk) + ")";
  int64_t n = 1;
  for (int64_t dim : {b, hq, hk, sq, sk, d, dv})
    if (__builtin_mul_overflow(n, dim, &n))
      return "problem too large";
  if (!std::isfinite(scale))
    return "scale must be finite";
  if (!std::isfinite(softcap) || softcap < 0.0)
    return "softcap must be finite and non-negative";
  if (!sinks.empty() && static_cast<int64_t>(sinks.size()) != hq)
    return "sinks has " + std::to_string(sinks.size()) +
           " values, expected Hq = " + std::to_string(hq);
  for (double sink : sinks)
    if (!std::isfinite(sink))
      return "sinks must be finite";
  std::string maskErr = mask.validate();
  if (!maskErr.empty())
    return "invalid mask: " + maskErr;
  return {};
}

bool referenceForward(const ReferenceConfig &c, const std::vector<double> &q,
                      const std::vector<double> &k,
                      const std::vector<double> &v, ReferenceForward *out,
                      std::string *err) {
  if (!checkInputs(c, q, k, v, err))
    return false;
  out->o.assign(c.b * c.hq * c.sq * c.dv, 0.0);
  out->lse.assign(c.b * c.hq * c.sq, kNegInf);
  for (int64_t bi = 0; bi < c.b; ++bi) {
    for (int64_t h = 0; h < c.hq; ++h) {
      int64_t kvh = h / (c.hq / c.hk);
      for (int64_t i = 0; i < c.sq; ++i) {
        Row r = computeRow(c, q, k, bi, h, i);
        int64_t row = (bi * c.hq + h) * c.sq + i;
        out->lse[row] = r.lse;
        double *oi = &out->o[row * c.dv];
        for (int64_t j = 0; j < c.sk; ++j) {
          if (!r.seen[j])
            continue;
          const double *vj = &v[((bi * c.hk + kvh) * c.sk + j) * c.dv];
          for (int64_t e = 0; e < c.dv; ++e)
            oi[e] += r.p[j] * vj[e];
        }
      }
    }
  }
  return true;
}

bool referenceForwardVarlen(const ReferenceConfig &c,
                            const std::vector<int64_t> &cuQ,
                            const std::vector<int64_t> &cuK,
                            const std::vector<double> &q,
                            const std::vector<double> &k,
                            const std::vector<double> &v, ReferenceForward *out,
                            std::string *err) {
  ReferenceConfig whole = c;
  whole.b = 1;
  if (!checkInputs(whole, q, k, v, err))
    return false;
  for (auto [name, cu, total] : {std::tuple{"cu_seqlens_q", &cuQ, c.sq},
                                 std::tuple{"cu_seqlens_k", &cuK, c.sk}}) {
    bool ok = static_cast<int64_t>(cu->size()) == c.b + 1 && cu->front() == 0 &&
              cu->back() <= total;
    for (size_t n = 1; ok && n < cu->size(); ++n)
      ok = (*cu)[n] >= (*cu)[n - 1];
    if (!ok) {
      *err = std::string("reference: ") + name +
             " must be B + 1 = " + std::to_string(c.b + 1) +
             " offsets nondecreasing from 0 to at most " +
             std::to_string(total);
      return false;
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out->o.assign(c.hq * c.sq * c.dv, nan);
  out->lse.assign(c.hq * c.sq, nan);
  for (int64_t n = 0; n < c.b; ++n) {
    const int64_t q0 = cuQ[n], sq = cuQ[n + 1] - q0;
    const int64_t k0 = cuK[n], sk = cuK[n + 1] - k0;
    if (sq == 0)
      continue;
    // One sequence: a problem of its own, with one key more than it has
    // when it has none (hidden below), since the reference needs Sk > 0.
    ReferenceConfig one = c;
    one.b = 1;
    one.sq = sq;
    one.sk = std::max<int64_t>(sk, 1);
    auto rows = [](const std::vector<double> &t, int64_t heads, int64_t total,
                   int64_t first, int64_t count, int64_t width) {
      std::vector<double> part(heads * count * width, 0.0);
      for (int64_t h = 0; h < heads; ++h)
        std::copy_n(&t[(h * total + first) * width],
                    std::min(count, total - first) * width,
                    &part[h * count * width]);
      return part;
    };
    std::vector<double> kn = rows(k, c.hk, c.sk, k0, one.sk, c.d);
    std::vector<double> vn = rows(v, c.hk, c.sk, k0, one.sk, c.dv);
    ReferenceForward part;
    if (sk == 0) {
      // No key: every row has o = 0 and lse = the sink logit (or -inf).
      part.o.assign(c.hq * sq * c.dv, 0.0);
      part.lse.assign(c.hq * sq, kNegInf);
      if (!c.sinks.empty())
        for (int64_t h = 0; h < c.hq; ++h)
          std::fill_n(&part.lse[h * sq], sq, c.sinks[h]);
    } else if (!referenceForward(one, rows(q, c.hq, c.sq, q0, sq, c.d), kn, vn,
                                 &part, err)) {
      return false;
    }
    for (int64_t h = 0; h < c.hq; ++h) {
      std::copy_n(&part.o[h * sq * c.dv], sq * c.dv,
                  &out->o[(h * c.sq + q0) * c.dv]);
      std::copy_n(&part.lse[h * sq], sq, &out->lse[h * c.sq + q0]);
    }
  }
  return true;
}

bool referenceForwardPaged(
    const ReferenceConfig &c, int64_t pageSize, int64_t pages, int64_t maxPages,
    const std::vector<int64_t> &blockTable,
    const std::vector<int64_t> &seqlensK, const std::vector<int64_t> &cuQ,
    const std::vector<double> &q, const std::vector<double> &k,
    const std::vector<double> &v, ReferenceForward *out, std::string *err) {
  if (pageSize <= 0 || pages <= 0 || maxPages <= 0 ||
      static_cast<int64_t>(seqlensK.size()) != c.b ||
      static_cast<int64_t>(blockTable.size()) != c.b * maxPages ||
      static_cast<int64_t>(k.size()) != pages * c.hk * pageSize * c.d ||
      static_cast<int64_t>(v.size()) != pages * c.hk * pageSize * c.dv) {
    *err = "reference: a paged cache needs positive page size, pages and "
           "max_pages, seqlens_k [B], block_table [B, max_pages] and k, v "
           "[pages, Hk, page size, D]";
    return false;
  }
  // Each sequence's keys gathered back to back (its page j's rows, j in
  // table order): a variable-length batch of batch 1.
  std::vector<int64_t> cuK = {0};
  for (int64_t n = 0; n < c.b; ++n) {
    const int64_t len = seqlensK[n];
    if (len < 0 || len > maxPages * pageSize) {
      *err = "reference: seqlens_k[" + std::to_string(n) +
             "]=" + std::to_string(len) + " is outside the cache's [0, " +
             std::to_string(maxPages * pageSize) + "] keys";
      return false;
    }
    for (int64_t j = 0; j * pageSize < len; ++j) {
      const int64_t page = blockTable[n * maxPages + j];
      if (page < 0 || page >= pages) {
        *err = "reference: block_table[" + std::to_string(n) + ", " +
               std::to_string(j) + "]=" + std::to_string(page) +
               " is not one of the " + std::to_string(pages) + " pages";
        return false;
      }
    }
    cuK.push_back(cuK.back() + len);
  }
  const int64_t keys = std::max<int64_t>(cuK.back(), 1);
  auto gather = [&](const std::vector<double> &cache, int64_t width) {
    std::vector<double> out(c.hk * keys * width, 0.0);
    for (int64_t n = 0; n < c.b; ++n)
      for (int64_t h = 0; h < c.hk; ++h)
        for (int64_t j = 0; j < cuK[n + 1] - cuK[n]; ++j) {
          const int64_t page = blockTable[n * maxPages + j / pageSize];
          std::copy_n(
              &cache[((page * c.hk + h) * pageSize + j % pageSize) * width],
              width, &out[(h * keys + cuK[n] + j) * width]);
        }
    return out;
  };
  ReferenceConfig whole = c;
  whole.sk = keys;
  if (!cuQ.empty())
    return referenceForwardVarlen(whole, cuQ, cuK, q, gather(k, c.d),
                                  gather(v, c.dv), out, err);
  // Batch n's rows are sequence n of a batch of B * Sq rows.
  whole.sq = c.b * c.sq;
  std::vector<int64_t> rowOffsets;
  for (int64_t n = 0; n <= c.b; ++n)
    rowOffsets.push_back(n * c.sq);
  auto toSequences = [&](const std::vector<double> &t, int64_t width) {
    std::vector<double> packed(t.size());
    for (int64_t n = 0; n < c.b; ++n)
      for (int64_t h = 0; h < c.hq; ++h)
        std::copy_n(&t[(n * c.hq + h) * c.sq * width], c.sq * width,
                    &packed[(h * whole.sq + n * c.sq) * width]);
    return packed;
  };
  if (static_cast<int64_t>(q.size()) != c.b * c.hq * c.sq * c.d) {
    *err = "reference: q must be [B, Hq, Sq, D]";
    return false;
  }
  ReferenceForward packed;
  if (!referenceForwardVarlen(whole, rowOffsets, cuK, toSequences(q, c.d),
                              gather(k, c.d), gather(v, c.dv), &packed, err))
    return false;
  out->o.resize(c.b * c.hq * c.sq * c.dv);
  out->lse.resize(c.b * c.hq * c.sq);
  for (int64_t n = 0; n < c.b; ++n)
    for (int64_t h = 0; h < c.hq; ++h) {
      std::copy_n(&packed.o[(h * whole.sq + n * c.sq) * c.dv], c.sq * c.dv,
                  &out->o[(n * c.hq + h) * c.sq * c.dv]);
      std::copy_n(&packed.lse[h * whole.sq + n * c.sq], c.sq,
                  &out->lse[(n * c.hq + h) * c.sq]);
    }
  return true;
}

bool referenceBackward(const ReferenceConfig &c, const std::vector<double> &q,
                       const std::vector<double> &k,
                       const std::vector<double> &v,
                       const std::vector<double> &dO, ReferenceBackward *out,
                       std::string *err, const std::vector<double> *givenO) {
  if (!checkInputs(c, q, k, v, err) ||
      !sizeIs(dO, "dO", c.b * c.hq * c.sq * c.dv, err) ||
      (givenO && !sizeIs(*givenO, "o", c.b * c.hq * c.sq * c.dv, err)))
    return false;
  ReferenceForward fwd;
  if (!referenceForward(c, q, k, v, &fwd, err))
    return false;
  const std::vector<double> &oForDsum = givenO ? *givenO : fwd.o;
  double scale = c.effectiveScale();
  out->dq.assign(q.size(), 0.0);
  out->dk.assign(k.size(), 0.0);
  out->dv.assign(v.size(), 0.0);
  out->dqMagnitude.assign(q.size(), 0.0);
  out->dkMagnitude.assign(k.size(), 0.0);
  out->dvMagnitude.assign(v.size(), 0.0);
  out->dsinks.assign(c.sinks.size(), 0.0);
  out->dsinksMagnitude.assign(c.sinks.size(), 0.0);
  for (int64_t bi = 0; bi < c.b; ++bi) {
    for (int64_t h = 0; h < c.hq; ++h) {
      int64_t kvh = h / (c.hq / c.hk);
      for (int64_t i = 0; i < c.sq; ++i) {
        Row r = computeRow(c, q, k, bi, h, i);
        int64_t row = (bi * c.hq + h) * c.sq + i;
        const double *qi = &q[row * c.d];
        const double *doi = &dO[row * c.dv];
        const double *oi = &oForDsum[row * c.dv];
        double *dqi = &out->dq[row * c.d];
        double dsum = 0.0;
        for (int64_t e = 0; e < c.dv; ++e)
          dsum += doi[e] * oi[e];
        if (!c.sinks.empty()) {
          // d lse / d sink = P(sink); o moves by -P(sink) o.
          double pSink = std::exp(c.sinks[h] - r.lse);
          out->dsinks[h] -= pSink * dsum;
          out->dsinksMagnitude[h] += pSink * std::fabs(dsum);
        }
        for (int64_t j = 0; j < c.sk; ++j) {
          if (!r.seen[j])
            continue;
          int64_t kvRow = (bi * c.hk + kvh) * c.sk + j;
          const double *kj = &k[kvRow * c.d];
          const double *vj = &v[kvRow * c.dv];
          double dp = 0.0;
          for (int64_t e = 0; e < c.dv; ++e)
            dp += doi[e] * vj[e];
          // dS with respect to the (capped) score, then through the softcap:
          // d/dx [c * tanh(x / c)] = 1 - tanh(x / c)^2.
          double ds = r.p[j] * (dp - dsum);
          double dsMag = r.p[j] * (std::fabs(dp) + std::fabs(dsum));
          if (c.softcap > 0.0) {
            double t = std::tanh(r.x[j] / c.softcap);
            ds *= 1.0 - t * t;
            dsMag *= 1.0 - t * t;
          }
          double *dkj = &out->dk[kvRow * c.d];
          double *dvj = &out->dv[kvRow * c.dv];
          double *dqiMag = &out->dqMagnitude[row * c.d];
          double *dkjMag = &out->dkMagnitude[kvRow * c.d];
          double *dvjMag = &out->dvMagnitude[kvRow * c.dv];
          for (int64_t e = 0; e < c.d; ++e) {
            dqi[e] += scale * ds * kj[e];
            dkj[e] += scale * ds * qi[e];
            dqiMag[e] += scale * dsMag * std::fabs(kj[e]);
            dkjMag[e] += scale * dsMag * std::fabs(qi[e]);
          }
          for (int64_t e = 0; e < c.dv; ++e) {
            dvj[e] += r.p[j] * doi[e];
            dvjMag[e] += r.p[j] * std::fabs(doi[e]);
          }
        }
      }
    }
  }
  return true;
}

bool referenceMerge(int64_t rows, int64_t dv, const std::vector<double> &o1,
                    const std::vector<double> &lse1,
                    const std::vector<double> &o2,
                    const std::vector<double> &lse2, ReferenceForward *out,
                    std::string *err) {
  int64_t n = 0;
  if (rows < 0 || dv <= 0 || __builtin_mul_overflow(rows, dv, &n)) {
    *err = "reference merge: bad sizes rows=" + std::to_string(rows) +
           " dv=" + std::to_string(dv);
    return false;
  }
  if (!sizeIs(o1, "o1", n, err) || !sizeIs(o2, "o2", n, err) ||
      !sizeIs(lse1, "lse1", rows, err) || !sizeIs(lse2, "lse2", rows, err))
    return false;
  out->o.assign(n, 0.0);
  out->lse.assign(rows, kNegInf);
  for (int64_t r = 0; r < rows; ++r) {
    double a = lse1[r], b = lse2[r];
    if (a == kNegInf && b == kNegInf)
      continue;
    double m = std::max(a, b);
    double lse = m + std::log(std::exp(a - m) + std::exp(b - m));
    double w1 = a == kNegInf ? 0.0 : std::exp(a - lse);
    double w2 = b == kNegInf ? 0.0 : std::exp(b - lse);
    out->lse[r] = lse;
    for (int64_t e = 0; e < dv; ++e)
      out->o[r * dv + e] = w1 * o1[r * dv + e] + w2 * o2[r * dv + e];
  }
  return true;
}

} // namespace fmha::rt
