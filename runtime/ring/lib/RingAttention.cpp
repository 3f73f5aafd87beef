//===- RingAttention.cpp - Sequence-parallel attention over a ring --------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Ring/RingAttention.h"

#include <chrono>
#include <cstring>
#include <limits>
#include <utility>

namespace fmha::ring {

using rt::BundleMeta;
using rt::ErrorCode;
using rt::Kernel;
using rt::KernelKind;
using rt::Status;

Transport::~Transport() = default;

std::vector<int64_t> ringChunks(int rank, int ranks, bool zigzag) {
  if (!zigzag)
    return {rank};
  return {rank, 2 * int64_t(ranks) - 1 - rank};
}

namespace {

bool isCausal(const MaskSpec &m) {
  return !m.isNone() && !m.hasLeft() && m.right == 0 && m.sink == 0;
}

Status bad(const std::string &message) {
  return Status::error(ErrorCode::ProblemMismatch, message);
}

/// The sizes of one block pair.
rt::Problem pairProblem(const BundleMeta &m, const RingConfig &c) {
  rt::Problem p;
  p.b = c.b;
  p.hq = m.hq;
  p.hk = m.hk;
  p.sq = c.chunk;
  p.sk = c.chunk;
  p.d = m.d;
  p.dv = m.dv;
  return p;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace

Status checkRingKernels(const RingKernels &k, const RingConfig &c) {
  if (c.b <= 0 || c.chunk <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: batch and chunk length must be positive");
  struct Role {
    const char *name;
    const Kernel *kernel;
    KernelKind kind;
    bool causal, needed;
  } roles[] = {
      {"forward", k.fwd, KernelKind::Forward, false, true},
      {"causal forward", k.fwdCausal, KernelKind::Forward, true, c.causal},
      {"merge", k.merge, KernelKind::Merge, false, true},
      {"backward", k.bwd, KernelKind::Backward, false, c.backward},
      {"causal backward", k.bwdCausal, KernelKind::Backward, true,
       c.backward && c.causal},
      {"accumulate", k.accumulate, KernelKind::Accumulate, false, c.backward}};
  const BundleMeta *ref = k.fwd ? &k.fwd->meta() : nullptr;
  for (const Role &r : roles) {
    if (!r.kernel) {
      if (r.needed)
        return Status::error(ErrorCode::InvalidArgument,
                             std::string("ring: no ") + r.name + " bundle");
      continue;
    }
    const BundleMeta &m = r.kernel->meta();
    const std::string who = std::string("ring: the ") + r.name + " bundle '" +
                            r.kernel->name() + "'";
    if (m.target != c.target)
      return bad(who + " has target " + rt::toString(m.target) +
                 "; this ring runs " + rt::toString(c.target) + " bundles" +
                 (c.target == rt::Target::Cpu ? " (fmha-ring --target cuda "
                                                "runs cuda bundles)"
                                              : ""));
    if (m.kind != r.kind)
      return bad(who + " has kind=" + rt::toString(m.kind) + ", expected " +
                 rt::toString(r.kind));
    const bool attention =
        r.kind == KernelKind::Forward || r.kind == KernelKind::Backward;
    if (attention) {
      if (r.causal && !isCausal(m.mask))
        return bad(who + " has mask " + m.mask.str() +
                   ", expected a causal mask (t or b)");
      if (!r.causal && !m.mask.isNone())
        return bad(who + " has mask " + m.mask.str() + ", expected 0");
    }
    if (!ref)
      continue;
    if (m.dtype != ref->dtype)
      return bad(who + " has dtype " + rt::toString(m.dtype) +
                 ", the forward bundle " + rt::toString(ref->dtype));
    if (r.kind == KernelKind::Accumulate)
      continue; // acc += x over a count: no heads
    bool sameHeads = r.kind == KernelKind::Merge
                         ? m.hq == ref->hq && m.dv == ref->dv
                         : m.hq == ref->hq && m.hk == ref->hk &&
                               m.d == ref->d && m.dv == ref->dv;
    if (!sameHeads)
      return bad(who + " has hq=" + std::to_string(m.hq) +
                 " hk=" + std::to_string(m.hk) + " d=" + std::to_string(m.d) +
                 " dv=" + std::to_string(m.dv) +
                 ", which does not fit the forward bundle's hq=" +
                 std::to_string(ref->hq) + " hk=" + std::to_string(ref->hk) +
                 " d=" + std::to_string(ref->d) +
                 " dv=" + std::to_string(ref->dv));
    if (attention && (m.effectiveScale() != ref->effectiveScale() ||
                      m.softcap != ref->softcap))
      return bad(who + " has another scale or softcap than the forward "
                       "bundle");
  }
  return pairProblem(k.fwd->meta(), c).validate();
}

Status runRing(Transport &t, const RingKernels &k, const RingConfig &c,
               const RingInputs &in, RingOutputs *out, RingTimes *times) {
  if (c.target != rt::Target::Cpu)
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: runRing runs cpu bundles; device rings run "
                         "through runRingDevice");
  Status checked = checkRingKernels(k, c);
  if (!checked.ok())
    return checked;
  const BundleMeta &meta = k.fwd->meta();
  const int rank = t.rank(), n = t.size();
  const std::vector<int64_t> mine = ringChunks(rank, n, c.zigzag);
  const size_t m = mine.size();
  const rt::Problem p = pairProblem(meta, c);
  const size_t elem = rt::dtypeSize(meta.dtype);
  const size_t qBytes = p.qElements() * elem, kBytes = p.kElements() * elem,
               vBytes = p.vElements() * elem, oBytes = p.oElements() * elem;
  const size_t lseCount = p.lseElements();
  auto sized = [&](const std::vector<std::vector<unsigned char>> &t,
                   size_t bytes) {
    if (t.size() != m)
      return false;
    for (const auto &x : t)
      if (x.size() != bytes)
        return false;
    return true;
  };
  if (!sized(in.q, qBytes) || !sized(in.k, kBytes) || !sized(in.v, vBytes) ||
      (c.backward && !sized(in.dO, oBytes)))
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: rank " + std::to_string(rank) + " expects " +
                             std::to_string(m) +
                             " chunks of q, k, v (and dO) of the block size");
  RingTimes local;
  local.kernelCalls = 0;

  // The K/V packet: per local chunk of its owner, k then v.
  const size_t kvChunk = kBytes + vBytes;
  std::vector<unsigned char> kvCur(m * kvChunk), kvNext(m * kvChunk);
  for (size_t j = 0; j < m; ++j) {
    std::memcpy(&kvCur[j * kvChunk], in.k[j].data(), kBytes);
    std::memcpy(&kvCur[j * kvChunk + kBytes], in.v[j].data(), vBytes);
  }
  const std::vector<unsigned char> kvOwn = kvCur;

  // What a (q chunk, kv chunk) pair runs: nullptr = skipped.
  auto pick = [&](int64_t gi, int64_t gj, const Kernel *full,
                  const Kernel *causal) -> const Kernel * {
    if (!c.causal)
      return full;
    if (gj > gi)
      return nullptr;
    return gj == gi ? causal : full;
  };

  // --- Forward ---
  auto f0 = std::chrono::steady_clock::now();
  out->o.assign(m, std::vector<unsigned char>(oBytes, 0));
  out->lse.assign(
      m, std::vector<float>(lseCount, -std::numeric_limits<float>::infinity()));
  std::vector<unsigned char> oTmp(oBytes);
  std::vector<float> lseTmp(lseCount);
  const rt::MergeProblem mp{c.b, meta.hq, c.chunk, meta.dv};
  for (int s = 0; s < n; ++s) {
    int src = (rank - s + n) % n;
    std::vector<int64_t> theirs = ringChunks(src, n, c.zigzag);
    bool shift = s + 1 < n;
    if (shift) {
      Status st = t.startShift(kvCur.data(), kvNext.data(), kvCur.size());
      if (!st.ok())
        return st;
    }
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < theirs.size(); ++j) {
        const Kernel *kern = pick(mine[i], theirs[j], k.fwd, k.fwdCausal);
        if (!kern) {
          ++local.skippedPairs;
          continue;
        }
        rt::ForwardArgs fa;
        fa.q = in.q[i].data();
        fa.k = &kvCur[j * kvChunk];
        fa.v = &kvCur[j * kvChunk + kBytes];
        fa.o = oTmp.data();
        fa.lse = lseTmp.data();
        Status st = kern->run(p, fa);
        if (!st.ok())
          return st;
        rt::MergeArgs ma;
        ma.o1 = out->o[i].data();
        ma.lse1 = out->lse[i].data();
        ma.o2 = oTmp.data();
        ma.lse2 = lseTmp.data();
        ma.o = out->o[i].data();
        ma.lse = out->lse[i].data();
        st = k.merge->runMerge(mp, ma);
        if (!st.ok())
          return st;
        local.kernelCalls += 2;
      }
    }
    if (shift) {
      auto w0 = std::chrono::steady_clock::now();
      Status st = t.waitShifts();
      local.waitMs += msSince(w0);
      if (!st.ok())
        return st;
      std::swap(kvCur, kvNext);
    }
  }
  local.forwardMs = msSince(f0);

  // --- Backward ---
  if (c.backward) {
    auto b0 = std::chrono::steady_clock::now();
    kvCur = kvOwn;
    const size_t dkCount = p.kElements(), dvCount = p.vElements();
    const size_t dkvChunk = dkCount + dvCount;
    std::vector<float> dkvCur(m * dkvChunk, 0.0f), dkvNext(m * dkvChunk);
    out->dq.assign(m, std::vector<float>(p.qElements(), 0.0f));
    std::vector<unsigned char> dqTmp(qBytes), dkTmp(kBytes), dvTmp(vBytes);
    for (int s = 0; s < n; ++s) {
      int src = (rank - s + n) % n;
      std::vector<int64_t> theirs = ringChunks(src, n, c.zigzag);
      bool shift = s + 1 < n;
      if (shift) {
        Status st = t.startShift(kvCur.data(), kvNext.data(), kvCur.size());
        if (!st.ok())
          return st;
      }
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < theirs.size(); ++j) {
          const Kernel *kern = pick(mine[i], theirs[j], k.bwd, k.bwdCausal);
          if (!kern) {
            ++local.skippedPairs;
            continue;
          }
          rt::BackwardArgs ba;
          ba.q = in.q[i].data();
          ba.k = &kvCur[j * kvChunk];
          ba.v = &kvCur[j * kvChunk + kBytes];
          ba.o = out->o[i].data();
          ba.lse = out->lse[i].data();
          ba.dO = in.dO[i].data();
          ba.dq = dqTmp.data();
          ba.dk = dkTmp.data();
          ba.dv = dvTmp.data();
          Status st = kern->runBackward(p, ba);
          if (!st.ok())
            return st;
          ++local.kernelCalls;
          // dq of chunk i and the travelling dK/dV sums of kv chunk j
          // (float32), by the accumulate bundle.
          float *dkv = &dkvCur[j * dkvChunk];
          const struct {
            const unsigned char *x;
            float *acc;
            size_t count;
          } sums[] = {{dqTmp.data(), out->dq[i].data(), out->dq[i].size()},
                      {dkTmp.data(), dkv, dkCount},
                      {dvTmp.data(), dkv + dkCount, dvCount}};
          for (const auto &sum : sums) {
            rt::AccumulateArgs aa;
            aa.x = sum.x;
            aa.acc = sum.acc;
            st = k.accumulate->runAccumulate(static_cast<int64_t>(sum.count),
                                             aa);
            if (!st.ok())
              return st;
          }
          local.kernelCalls += 3;
        }
      }
      // dK/dV move on after this step's sums; after the last step the
      // shift brings them home.
      Status st = t.startShift(dkvCur.data(), dkvNext.data(),
                               dkvCur.size() * sizeof(float));
      if (!st.ok())
        return st;
      auto w0 = std::chrono::steady_clock::now();
      st = t.waitShifts();
      local.waitMs += msSince(w0);
      if (!st.ok())
        return st;
      if (shift)
        std::swap(kvCur, kvNext);
      std::swap(dkvCur, dkvNext);
    }
    out->dk.assign(m, {});
    out->dv.assign(m, {});
    for (size_t j = 0; j < m; ++j) {
      out->dk[j].assign(dkvCur.begin() + j * dkvChunk,
                        dkvCur.begin() + j * dkvChunk + dkCount);
      out->dv[j].assign(dkvCur.begin() + j * dkvChunk + dkCount,
                        dkvCur.begin() + (j + 1) * dkvChunk);
    }
    local.backwardMs = msSince(b0);
  }
  if (times)
    *times = local;
  return Status::success();
}

} // namespace fmha::ring
