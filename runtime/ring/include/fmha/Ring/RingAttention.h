//===- RingAttention.h - Sequence-parallel attention over a ring -*- C++
//-*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Ring attention: the sequence (Sq = Sk = S) is cut into chunks of `chunk`
// rows; each rank holds its chunks of q, k, v (and dO) and every kernel is a
// compiled bundle (nothing here computes attention):
//
// Placement. Contiguous: N chunks, rank r holds chunk r. Zigzag: 2N chunks,
// rank r holds chunks r and 2N-1-r, so that under a causal mask every rank
// has the same work.
//
// Forward. The K/V chunks of a rank travel around the ring, one step at a
// time (sent to rank + 1 while the current step computes). At each step,
// every local q chunk i meets every visiting kv chunk j: under a causal mask
// a pair with j > i is skipped, j == i runs the causal bundle (mask `t` on a
// c x c block: block-aligned offsets), j < i the unmasked bundle, which
// writes a partial (o, lse); the merge bundle folds it into the running
// (o, lse) of chunk i, which starts empty (o = 0, lse = -inf). Without a
// mask every pair runs the unmasked bundle.
//
// Backward. With the final o and lse, the backward bundle of a pair (same
// choice of bundle) gives exactly that pair's share of dq, dk, dv (its P
// uses the global lse, its Dsum the global o). dq accumulates on the rank;
// dk and dv accumulate in a buffer that travels with its K/V chunks and, one
// last shift after the final step, arrives back at the owner. The
// accumulations (float32 sums of the kernels' outputs, which are in their
// dtype) run the accumulate bundle (kind=acc, fmha.accumulate) too.
//
// GQA: Hq a multiple of Hk, as the bundles state. Every buffer is host
// memory: the driver runs cpu bundles (DeviceRing.h runs cuda bundles).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RING_RINGATTENTION_H
#define FMHA_RING_RINGATTENTION_H

#include "fmha/Ring/Transport.h"
#include "fmha/Runtime/Runtime.h"

#include <cstdint>
#include <vector>

namespace fmha::ring {

/// The compiled kernels of a ring. fwdCausal and bwdCausal are needed for a
/// causal ring only; bwd, bwdCausal and accumulate for the backward only.
struct RingKernels {
  const rt::Kernel *fwd = nullptr;       ///< kind=fwd, mask 0
  const rt::Kernel *fwdCausal = nullptr; ///< kind=fwd, mask t (or b)
  const rt::Kernel *merge = nullptr;     ///< kind=merge
  const rt::Kernel *bwd = nullptr;       ///< kind=bwd, mask 0
  const rt::Kernel *bwdCausal = nullptr; ///< kind=bwd, mask t (or b)
  /// kind=acc: the f32 sums of the backward's dq, dk, dv partials.
  const rt::Kernel *accumulate = nullptr;
};

struct RingConfig {
  int64_t b = 1;
  /// Rows of one chunk; S = chunk * (number of chunks).
  int64_t chunk = 1;
  bool causal = false;
  bool zigzag = false;
  bool backward = false;
  /// The bundles' target: cpu (runRing, host memory) or cuda
  /// (runRingDevice, DeviceRing.h).
  rt::Target target = rt::Target::Cpu;
};

/// The global chunk indices rank `rank` of `ranks` holds, in local order.
std::vector<int64_t> ringChunks(int rank, int ranks, bool zigzag);

/// Checks the kernels against each other and the config: kinds, masks
/// (0 and causal), one dtype (the accumulate's x too), hq, hk, d, dv (the
/// merge's H = hq, its Dv = dv), one scale and softcap, the config's
/// target, and the bundles the config needs.
/// The problem of a block pair is Problem{b, hq, hk, chunk, chunk, d, dv}.
rt::Status checkRingKernels(const RingKernels &kernels,
                            const RingConfig &config);

/// One rank's tensors, one entry per local chunk (ringChunks order), each a
/// contiguous BHSD buffer in the kernels' dtype (f16/bf16 as raw bits):
/// q [B,Hq,c,D], k [B,Hk,c,D], v [B,Hk,c,Dv], dO [B,Hq,c,Dv].
struct RingInputs {
  std::vector<std::vector<unsigned char>> q, k, v, dO;
};

/// One rank's results per local chunk: o [B,Hq,c,Dv] in the dtype, lse
/// [B,Hq,c] float32; dq, dk, dv as float32 sums (backward only).
struct RingOutputs {
  std::vector<std::vector<unsigned char>> o;
  std::vector<std::vector<float>> lse, dq, dk, dv;
};

/// Per-rank timings of the last run (milliseconds).
struct RingTimes {
  double forwardMs = 0, backwardMs = 0;
  /// Time spent in waitShifts (communication not hidden by compute).
  double waitMs = 0;
  int64_t kernelCalls = 0, skippedPairs = 0;
};

/// Runs the ring forward (and backward when config.backward) on this rank.
/// Every rank must call it with the same config and kernels. A failure on
/// one rank is returned there; the others may then wait for it (the tool
/// aborts the job).
rt::Status runRing(Transport &transport, const RingKernels &kernels,
                   const RingConfig &config, const RingInputs &in,
                   RingOutputs *out, RingTimes *times = nullptr);

} // namespace fmha::ring

#endif // FMHA_RING_RINGATTENTION_H
