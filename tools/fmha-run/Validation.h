//===- Validation.h - Outputs against the float64 reference -----*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The checks of fmha-run --validate, shared with fmha-run's merge mode and
// fmha-ring: rel_err = ||got-ref||_2 / ||ref||_2 per tensor, lse by
// |got-ref| <= t*(1+|ref|) with -inf rows matching exactly, NaN failing, at
// the dtype's tolerances. Library FMHAValidation (runtime and reference
// only, no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_RUN_VALIDATION_H
#define FMHA_TOOLS_FMHA_RUN_VALIDATION_H

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Reference.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fmha::validation {

struct Tolerance {
  double rel, lse;
};

/// rel: 1e-5 (f32), 2e-3 (f16), 1e-2 (bf16); lse: 1e-4, 5e-3, 2e-2.
Tolerance toleranceFor(rt::DType t);

/// The errors of one output tensor against its reference.
struct TensorErrors {
  int64_t nan = 0;
  double maxAbs = 0;
  /// ||got-ref||_2 / ||ref||_2; when ||ref|| is 0: 0 if got is all 0, else
  /// inf (no division by zero). NaN when got has a NaN.
  double rel = 0;
  bool refZero = false;
};

TensorErrors compareTensor(const std::vector<float> &got,
                           const std::vector<double> &ref);

/// The errors of an lse output against its reference: finite entries by
/// |got-ref| (and |got-ref|/(1+|ref|)); -inf entries must match exactly.
struct LseErrors {
  int64_t nan = 0, infMismatch = 0, firstBadRow = -1;
  double maxAbs = 0, worst = 0;
};

LseErrors compareLse(const std::vector<float> &lse,
                     const std::vector<double> &ref);

/// Prints "max_abs_err=... rel_err=... lse_max_abs_err=..." for o and lse
/// [B, H, S] against `ref` and appends a reason per failed check.
void judgeOutputs(int64_t h, int64_t s, rt::DType dtype,
                  const std::vector<float> &o, const std::vector<float> &lse,
                  const rt::ReferenceForward &ref,
                  std::vector<std::string> *reasons);

/// Prints "NAME: max_abs_err=... rel_err=..." for a gradient and appends a
/// reason when it fails: ||got - want|| <= t (||want|| + ||magnitude|| / 10),
/// t the dtype's rel bound and `magnitude` the reference's sum of the
/// magnitudes of the gradient's terms (ReferenceBackward): where the terms
/// cancel, and a gradient of 0 is 0 only up to rounding, the rounding of
/// the terms is what any correct kernel leaves.
void judgeGradient(const char *name, const std::vector<float> &got,
                   const std::vector<double> &want,
                   const std::vector<double> &magnitude, rt::DType dtype,
                   std::vector<std::string> *reasons);

/// Prints "PASS (DTYPE: <bounds>)" (bounds: a printf format taking the rel
/// and lse tolerances) or "FAIL: reason; reason"; returns whether it passed.
bool printVerdict(const std::vector<std::string> &reasons, rt::DType dtype,
                  const char *bounds);

} // namespace fmha::validation

#endif // FMHA_TOOLS_FMHA_RUN_VALIDATION_H
