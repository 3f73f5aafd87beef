//===- Validation.cpp - Outputs against the float64 reference -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "Validation.h"

#include "RunOptions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fmha::validation {

using rt::DType;

Tolerance toleranceFor(DType t) {
  switch (t) {
  case DType::F32:
    return {1e-5, 1e-4};
  case DType::F16:
    return {2e-3, 5e-3};
  case DType::BF16:
    return {1e-2, 2e-2};
  }
  return {0, 0};
}

TensorErrors compareTensor(const std::vector<float> &got,
                           const std::vector<double> &ref) {
  TensorErrors e;
  double diff2 = 0, ref2 = 0, got2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) {
      ++e.nan;
      continue;
    }
    double dlt = static_cast<double>(got[i]) - ref[i];
    e.maxAbs = std::max(e.maxAbs, std::fabs(dlt));
    diff2 += dlt * dlt;
    ref2 += ref[i] * ref[i];
    got2 += static_cast<double>(got[i]) * got[i];
  }
  // All of ref, also where got is NaN.
  e.refZero =
      std::all_of(ref.begin(), ref.end(), [](double x) { return x == 0; });
  e.rel = ref2 > 0    ? std::sqrt(diff2 / ref2)
          : got2 == 0 ? 0.0
                      : std::numeric_limits<double>::infinity();
  if (e.nan)
    e.rel = e.maxAbs = std::numeric_limits<double>::quiet_NaN();
  return e;
}

LseErrors compareLse(const std::vector<float> &lse,
                     const std::vector<double> &ref) {
  LseErrors e;
  for (size_t r = 0; r < lse.size(); ++r) {
    double got = lse[r], want = ref[r];
    if (std::isnan(got)) {
      ++e.nan;
      continue;
    }
    bool wantInf = std::isinf(want), gotInf = std::isinf(got);
    if (wantInf || gotInf) {
      if (got != want) {
        ++e.infMismatch;
        if (e.firstBadRow < 0)
          e.firstBadRow = static_cast<int64_t>(r);
      }
      continue;
    }
    double d = std::fabs(got - want);
    e.maxAbs = std::max(e.maxAbs, d);
    e.worst = std::max(e.worst, d / (1.0 + std::fabs(want)));
  }
  return e;
}

void judgeOutputs(int64_t h, int64_t s, rt::DType dtype,
                  const std::vector<float> &o, const std::vector<float> &lse,
                  const rt::ReferenceForward &ref,
                  std::vector<std::string> *reasons) {
  TensorErrors oErr = compareTensor(o, ref.o);
  LseErrors l = compareLse(lse, ref.lse);
  Tolerance tol = toleranceFor(dtype);
  std::printf("max_abs_err=%.3e rel_err=%.3e lse_max_abs_err=%.3e\n",
              oErr.maxAbs, oErr.rel, l.maxAbs);
  if (oErr.nan)
    reasons->push_back(std::to_string(oErr.nan) + " NaN in o");
  if (l.nan)
    reasons->push_back(std::to_string(l.nan) + " NaN in lse");
  if (l.infMismatch) {
    int64_t r = l.firstBadRow;
    int64_t i = r % s, hh = (r / s) % h, b = r / (s * h);
    reasons->push_back(std::to_string(l.infMismatch) +
                       " lse rows where -inf does not match the reference "
                       "(first: b=" +
                       std::to_string(b) + " h=" + std::to_string(hh) +
                       " i=" + std::to_string(i) + ", got " +
                       runopt::formatReal(lse[r]) + ", reference " +
                       runopt::formatReal(ref.lse[r]) + ")");
  }
  if (!oErr.nan && !(oErr.rel <= tol.rel))
    reasons->push_back("rel_err " + runopt::formatReal(oErr.rel) + " > " +
                       runopt::formatReal(tol.rel));
  if (l.worst > tol.lse)
    reasons->push_back("lse error exceeds " + runopt::formatReal(tol.lse) +
                       "*(1+|lse|)");
}

void judgeGradient(const char *name, const std::vector<float> &got,
                   const std::vector<double> &want,
                   const std::vector<double> &magnitude, rt::DType dtype,
                   std::vector<std::string> *reasons) {
  Tolerance tol = toleranceFor(dtype);
  TensorErrors e = compareTensor(got, want);
  double diff2 = 0, want2 = 0, magnitude2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = static_cast<double>(got[i]) - want[i];
    diff2 += d * d;
    want2 += want[i] * want[i];
    magnitude2 += magnitude[i] * magnitude[i];
  }
  double err = std::sqrt(diff2);
  double bound = tol.rel * (std::sqrt(want2) + std::sqrt(magnitude2) / 10);
  std::printf("%s: max_abs_err=%.3e rel_err=%.3e%s\n", name, e.maxAbs, e.rel,
              e.refZero ? " (reference is all 0)" : "");
  if (e.nan)
    reasons->push_back(std::to_string(e.nan) + " NaN in " + name);
  else if (!(err <= bound))
    reasons->push_back(std::string(name) + " error " + runopt::formatReal(err) +
                       " > " + runopt::formatReal(bound) + " (rel_err " +
                       runopt::formatReal(e.rel) + ")");
}

bool printVerdict(const std::vector<std::string> &reasons, rt::DType dtype,
                  const char *bounds) {
  if (reasons.empty()) {
    Tolerance tol = toleranceFor(dtype);
    std::string format = std::string("PASS (%s: ") + bounds + ")\n";
    std::printf(format.c_str(), rt::toString(dtype), tol.rel, tol.lse);
    return true;
  }
  std::string all;
  for (const std::string &r : reasons)
    all += (all.empty() ? "" : "; ") + r;
  std::printf("FAIL: %s\n", all.c_str());
  return false;
}

} // namespace fmha::validation
