//===- Reference.h - float64 reference of attention -------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The float64 reference of DESIGN.md section 1, written as the plainest loops
// over double so that it can be checked by hand. Every test and
// `fmha-run --validate` compares against it. Tensors are flat row-major BHSD
// vectors: q [B,Hq,Sq,D], k [B,Hk,Sk,D], v [B,Hk,Sk,Dv], o and dO
// [B,Hq,Sq,Dv], lse [B,Hq,Sq]. Library FMHAReference (links only
// FMHASupport).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_REFERENCE_H
#define FMHA_RUNTIME_REFERENCE_H

#include "fmha/Support/MaskSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fmha::rt {

struct ReferenceConfig {
  int64_t b = 1, hq = 1, hk = 1, sq = 1, sk = 1, d = 1, dv = 1;
  MaskSpec mask;
  /// 0 means the default 1/sqrt(d).
  double scale = 0.0;
  /// 0 means no softcap; otherwise s = softcap * tanh(s / softcap).
  double softcap = 0.0;
  /// Learned sink logits [Hq] (empty: none): sinks[h] joins the softmax
  /// denominator of every row of query head h and carries no value.
  std::vector<double> sinks;

  double effectiveScale() const;
  /// Empty when the sizes are positive, hq % hk == 0, the mask and softcap
  /// are valid and sinks is empty or [Hq] of finite values; else the
  /// message.
  std::string validate() const;
};

struct ReferenceForward {
  std::vector<double> o;   ///< [B,Hq,Sq,Dv]; 0 for a row with no visible key.
  std::vector<double> lse; ///< [B,Hq,Sq]; -inf for a row with no visible key.
};

struct ReferenceBackward {
  std::vector<double> dq; ///< [B,Hq,Sq,D]
  std::vector<double> dk; ///< [B,Hk,Sk,D], summed over the Hq/Hk group.
  std::vector<double> dv; ///< [B,Hk,Sk,Dv], summed over the Hq/Hk group.
  /// The same sums over the magnitudes of their terms (|dS| bounded by
  /// P (|dP| + |Dsum|)): the scale of the rounding error any summation order
  /// makes, which the gradient itself can be far below where its terms
  /// cancel (with one visible key, dS = P (dP - Dsum) is 0 exactly).
  std::vector<double> dqMagnitude, dkMagnitude, dvMagnitude;
  /// With learned sinks: dsinks[h] = -sum_{b,i} e^{sinks[h] - lse} Dsum
  /// ([Hq]), and the sum of its terms' magnitudes.
  std::vector<double> dsinks, dsinksMagnitude;
};

/// Forward attention. Returns false (and sets *err) when the config does not
/// validate or a tensor has the wrong number of elements.
bool referenceForward(const ReferenceConfig &cfg, const std::vector<double> &q,
                      const std::vector<double> &k,
                      const std::vector<double> &v, ReferenceForward *out,
                      std::string *err);

/// Backward attention: the gradients of sum(o * dO) with o the reference
/// forward output (recomputed here, as are lse and Dsum = rowsum(dO * o)).
/// With `givenO`, Dsum is rowsum(dO * givenO) instead: the backward of
/// DESIGN.md section 1 takes o as an input, and a kernel given o rounded to
/// f16 or bf16 computes with that o (where Dsum nearly cancels dO v^T, with
/// few visible keys, the rounding of o moves dS by far more than the
/// kernel's own error).
bool referenceBackward(const ReferenceConfig &cfg, const std::vector<double> &q,
                       const std::vector<double> &k,
                       const std::vector<double> &v,
                       const std::vector<double> &dO, ReferenceBackward *out,
                       std::string *err,
                       const std::vector<double> *givenO = nullptr);

/// Forward attention over a variable-length batch (DESIGN.md section 1):
/// cfg.b sequences back to back along the sequence axis of q [1,Hq,Sq,D],
/// k [1,Hk,Sk,D] and v [1,Hk,Sk,Dv] (cfg.sq, cfg.sk the totals); sequence n
/// owns rows [cuQ[n], cuQ[n+1]) and keys [cuK[n], cuK[n+1]), the mask local
/// to it (each sequence run through referenceForward). o [1,Hq,Sq,Dv] and
/// lse [1,Hq,Sq]; rows past cuQ[b], which a kernel leaves untouched, are
/// NaN. Returns false (and sets *err) when the offsets are not b + 1 values
/// nondecreasing from 0 within the totals, or the config does not validate.
bool referenceForwardVarlen(const ReferenceConfig &cfg,
                            const std::vector<int64_t> &cuQ,
                            const std::vector<int64_t> &cuK,
                            const std::vector<double> &q,
                            const std::vector<double> &k,
                            const std::vector<double> &v, ReferenceForward *out,
                            std::string *err);

/// Forward attention over a paged K/V cache (DESIGN.md section 1): k and v
/// are `pages` pages [pages, Hk, pageSize, D (Dv)]; sequence n's keys are
/// the first seqlensK[n] of its pages blockTable[n * maxPages + j]. q, o
/// and lse are [B, Hq, Sq, ...] (cfg.b = B, cfg.sq = Sq), or with offsets
/// cuQ ([B + 1], chunked prefill) batch 1 holding the sequences' rows back
/// to back as in referenceForwardVarlen (rows past cuQ[B] NaN). cfg.sk is
/// not read. Returns false (and sets *err) when a length is outside the
/// cache's maxPages * pageSize keys, an entry it reads is not a page, or
/// the config does not validate.
bool referenceForwardPaged(
    const ReferenceConfig &cfg, int64_t pageSize, int64_t pages,
    int64_t maxPages, const std::vector<int64_t> &blockTable,
    const std::vector<int64_t> &seqlensK, const std::vector<int64_t> &cuQ,
    const std::vector<double> &q, const std::vector<double> &k,
    const std::vector<double> &v, ReferenceForward *out, std::string *err);

/// Merge of two partial results over disjoint key sets, `rows` rows of `dv`
/// values each: lse = logaddexp(lse1, lse2), o = o1 * exp(lse1 - lse) +
/// o2 * exp(lse2 - lse). A partial with lse = -inf weighs 0; both empty give
/// o = 0, lse = -inf.
bool referenceMerge(int64_t rows, int64_t dv, const std::vector<double> &o1,
                    const std::vector<double> &lse1,
                    const std::vector<double> &o2,
                    const std::vector<double> &lse2, ReferenceForward *out,
                    std::string *err);

} // namespace fmha::rt

#endif // FMHA_RUNTIME_REFERENCE_H
