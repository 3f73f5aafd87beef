//===- DeviceRing.cpp - Ring attention on CUDA devices --------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Ring/DeviceRing.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

namespace fmha::ring {

using rt::BundleMeta;
using rt::DeviceBuffer;
using rt::ErrorCode;
using rt::Kernel;
using rt::Status;

#define FMHA_TRY(expr)                                                         \
  do {                                                                         \
    Status status_ = (expr);                                                   \
    if (!status_.ok())                                                         \
      return status_;                                                          \
  } while (false)

namespace {

/// Waits for every rank (the transport's host agreement).
Status barrier(Transport &t) {
  rt::Expected<bool> all = t.allOk(true);
  if (!all.ok())
    return all.status();
  if (!*all)
    return Status::error(ErrorCode::LaunchFailed,
                         "ring: another rank failed before the timed run");
  return Status::success();
}

} // namespace

Status runRingDevice(Transport &t, CudaRingDevice &dev, const RingKernels &k,
                     const RingConfig &c, const RingInputs &in,
                     RingOutputs *out, DeviceRingTimes *times, RingMode mode,
                     int iterations) {
  if (c.target != rt::Target::Cuda)
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: runRingDevice runs cuda bundles");
  FMHA_TRY(checkRingKernels(k, c));
  if (iterations < 1)
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: iterations must be positive");
  const BundleMeta &meta = k.fwd->meta();
  rt::Backend &backend = k.fwd->backend();
  if (backend.deviceOrdinal() != dev.ordinal())
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: the bundles run on device " +
                             std::to_string(backend.deviceOrdinal()) +
                             ", the ring's streams are on device " +
                             std::to_string(dev.ordinal()) +
                             " (set FMHA_CUDA_DEVICE)");
  const int rank = t.rank(), n = t.size();
  const std::vector<int64_t> mine = ringChunks(rank, n, c.zigzag);
  const size_t m = mine.size();
  rt::Problem p;
  p.b = c.b;
  p.hq = meta.hq;
  p.hk = meta.hk;
  p.sq = p.sk = c.chunk;
  p.d = meta.d;
  p.dv = meta.dv;
  const size_t elem = rt::dtypeSize(meta.dtype);
  const size_t qBytes = p.qElements() * elem, kBytes = p.kElements() * elem,
               vBytes = p.vElements() * elem, oBytes = p.oElements() * elem;
  const size_t lseCount = p.lseElements();
  if (in.q.size() != m || in.k.size() != m || in.v.size() != m ||
      (c.backward && in.dO.size() != m))
    return Status::error(ErrorCode::InvalidArgument,
                         "ring: rank " + std::to_string(rank) + " expects " +
                             std::to_string(m) + " chunks of q, k, v");
  for (size_t i = 0; i < m; ++i)
    if (in.q[i].size() != qBytes || in.k[i].size() != kBytes ||
        in.v[i].size() != vBytes || (c.backward && in.dO[i].size() != oBytes))
      return Status::error(ErrorCode::InvalidArgument,
                           "ring: a chunk of q, k or v has the wrong size");

  // Device memory: q chunks, two K/V packets (current, next), and per local
  // chunk the running (o, lse), plus one step partial.
  auto alloc = [&](size_t bytes) {
    return DeviceBuffer::allocate(backend, bytes);
  };
  const size_t kvChunk = kBytes + vBytes;
  std::vector<DeviceBuffer> q, o, lse;
  for (size_t i = 0; i < m; ++i) {
    for (auto *list : {&q, &o}) {
      rt::Expected<DeviceBuffer> b = alloc(list == &q ? qBytes : oBytes);
      if (!b.ok())
        return b.status();
      list->push_back(b.take());
    }
    rt::Expected<DeviceBuffer> l = alloc(lseCount * sizeof(float));
    if (!l.ok())
      return l.status();
    lse.push_back(l.take());
    FMHA_TRY(backend.copyToDevice(q[i].get(), in.q[i].data(), qBytes));
  }
  rt::Expected<DeviceBuffer> kvOwnB = alloc(m * kvChunk),
                             kvAB = alloc(m * kvChunk),
                             kvBB = alloc(m * kvChunk), oTmpB = alloc(oBytes),
                             lseTmpB = alloc(lseCount * sizeof(float));
  for (auto *b : {&kvOwnB, &kvAB, &kvBB, &oTmpB, &lseTmpB})
    if (!b->ok())
      return b->status();
  DeviceBuffer kvOwn = kvOwnB.take(), kvA = kvAB.take(), kvB = kvBB.take(),
               oTmp = oTmpB.take(), lseTmp = lseTmpB.take();
  {
    std::vector<unsigned char> packet(m * kvChunk);
    for (size_t j = 0; j < m; ++j) {
      std::memcpy(&packet[j * kvChunk], in.k[j].data(), kBytes);
      std::memcpy(&packet[j * kvChunk + kBytes], in.v[j].data(), vBytes);
    }
    FMHA_TRY(backend.copyToDevice(kvOwn.get(), packet.data(), packet.size()));
  }
  void *stream = dev.computeStream();
  auto pick = [&](int64_t gi, int64_t gj) -> const Kernel * {
    if (!c.causal)
      return k.fwd;
    if (gj > gi)
      return nullptr;
    return gj == gi ? k.fwdCausal : k.fwd;
  };
  const rt::MergeProblem mp{c.b, meta.hq, c.chunk, meta.dv};
  DeviceRingTimes local;
  local.stepMs.assign(n, 0.0);
  const bool compute = mode != RingMode::CommOnly;
  const bool comm = mode != RingMode::ComputeOnly && n > 1;
  struct StepMarks {
    int step;
    void *from, *to;
  };
  std::vector<StepMarks> steps;
  FMHA_TRY(dev.synchronize());
  // Every rank starts its clock together: a rank still copying its inputs
  // would otherwise hold up the first shift and count in the other's time.
  FMHA_TRY(barrier(t));
  rt::Expected<void *> start = dev.mark(stream);
  if (!start.ok())
    return start.status();
  for (int it = 0; it < iterations; ++it) {
    // Step 0 reads this rank's own K/V packet in place; the packet that
    // arrives for step s + 1 lands in the buffer step s - 1 read.
    void *cur = kvOwn.get();
    void *next = kvA.get(), *spare = kvB.get();
    // A chunk's first visible pair writes its (o, lse) directly: merging
    // into an empty (0, -inf) partial is the identity, so neither the fill
    // nor that merge is needed. Chunks no pair reaches are filled after.
    std::vector<bool> written(m, false);
    rt::Expected<void *> prev = dev.mark(stream);
    if (!prev.ok())
      return prev.status();
    for (int s = 0; s < n; ++s) {
      const int src = (rank - s + n) % n;
      const std::vector<int64_t> theirs = ringChunks(src, n, c.zigzag);
      const bool shift = comm && s + 1 < n;
      if (shift)
        FMHA_TRY(t.startShift(cur, next, m * kvChunk));
      for (size_t i = 0; compute && i < m; ++i) {
        for (size_t j = 0; j < theirs.size(); ++j) {
          const Kernel *kern = pick(mine[i], theirs[j]);
          if (!kern) {
            ++local.skippedPairs;
            continue;
          }
          const unsigned char *kv =
              static_cast<const unsigned char *>(cur) + j * kvChunk;
          rt::ForwardArgs fa;
          fa.q = q[i].get();
          fa.k = kv;
          fa.v = kv + kBytes;
          const bool first = !written[i];
          fa.o = first ? o[i].get() : oTmp.get();
          fa.lse = static_cast<float *>(first ? lse[i].get() : lseTmp.get());
          FMHA_TRY(kern->run(p, fa, stream));
          written[i] = true;
          if (first) {
            ++local.kernelCalls;
            continue;
          }
          rt::MergeArgs ma;
          ma.o1 = ma.o = o[i].get();
          ma.lse1 = ma.lse = static_cast<float *>(lse[i].get());
          ma.o2 = oTmp.get();
          ma.lse2 = static_cast<const float *>(lseTmp.get());
          FMHA_TRY(k.merge->runMerge(mp, ma, stream));
          local.kernelCalls += 2;
        }
      }
      if (shift) {
        FMHA_TRY(t.waitShifts());
        // The packet just read becomes the next receive buffer (the
        // shift after this one starts after this step's kernels).
        void *done = cur == kvOwn.get() ? spare : cur;
        cur = next;
        next = done;
      }
      rt::Expected<void *> end = dev.mark(stream);
      if (!end.ok())
        return end.status();
      steps.push_back({s, *prev, *end}); // read after the run: no host wait
      prev = end;
    }
    for (size_t i = 0; i < m; ++i) {
      if (written[i])
        continue;
      FMHA_TRY(backend.fill(o[i].get(), 0, oBytes, stream));
      FMHA_TRY(dev.fill32(lse[i].get(), 0xFF800000u, lseCount)); // -inf
    }
  }
  rt::Expected<void *> stop = dev.mark(stream);
  if (!stop.ok())
    return stop.status();
  FMHA_TRY(dev.synchronize());
  rt::Expected<double> total = dev.eventMs(*start, *stop);
  if (!total.ok())
    return total.status();
  local.forwardMs = *total / iterations;
  for (const StepMarks &sm : steps) {
    rt::Expected<double> ms = dev.eventMs(sm.from, sm.to);
    if (!ms.ok())
      return ms.status();
    local.stepMs[sm.step] += *ms / iterations;
  }
  local.kernelCalls /= iterations;
  local.skippedPairs /= iterations;
  if (c.backward) {
    // The backward of the last forward's (o, lse): per step, each pair's
    // backward bundle gives its share of dq, dk, dv (in the dtype), added
    // in f32 on the device into dq (kept) and into the dK/dV packet that
    // travels with its K/V and comes home after the last step.
    const size_t dkCount = p.kElements(), dvCount = p.vElements();
    const size_t dkvChunk = dkCount + dvCount;
    std::vector<DeviceBuffer> dO, dq;
    for (size_t i = 0; i < m; ++i) {
      rt::Expected<DeviceBuffer> a = alloc(oBytes),
                                 b = alloc(p.qElements() * sizeof(float));
      if (!a.ok() || !b.ok())
        return !a.ok() ? a.status() : b.status();
      dO.push_back(a.take());
      dq.push_back(b.take());
      FMHA_TRY(backend.copyToDevice(dO[i].get(), in.dO[i].data(), oBytes));
      FMHA_TRY(backend.fill(dq[i].get(), 0, dq[i].size(), stream));
    }
    rt::Expected<DeviceBuffer> dkvAB = alloc(m * dkvChunk * sizeof(float)),
                               dkvBB = alloc(m * dkvChunk * sizeof(float)),
                               dqTB = alloc(qBytes), dkTB = alloc(kBytes),
                               dvTB = alloc(vBytes);
    for (auto *b : {&dkvAB, &dkvBB, &dqTB, &dkTB, &dvTB})
      if (!b->ok())
        return b->status();
    DeviceBuffer dkvA = dkvAB.take(), dkvB = dkvBB.take(), dqT = dqTB.take(),
                 dkT = dkTB.take(), dvT = dvTB.take();
    float *dkvCur = static_cast<float *>(dkvA.get());
    float *dkvNext = static_cast<float *>(dkvB.get());
    FMHA_TRY(backend.fill(dkvCur, 0, dkvA.size(), stream));
    auto pickB = [&](int64_t gi, int64_t gj) -> const Kernel * {
      if (!c.causal)
        return k.bwd;
      if (gj > gi)
        return nullptr;
      return gj == gi ? k.bwdCausal : k.bwd;
    };
    FMHA_TRY(dev.synchronize());
    FMHA_TRY(barrier(t)); // as for the forward's clock
    rt::Expected<void *> b0 = dev.mark(stream);
    if (!b0.ok())
      return b0.status();
    void *cur = kvOwn.get(), *next = kvA.get(), *spare = kvB.get();
    // The dK/dV packet of step s travels during step s + 1's backward
    // kernels: the compute stream waits for it only before the first dK/dV
    // sum of step s + 1 (the step's kernels need only the K/V packet).
    bool dkvInFlight = false;
    for (int s = 0; s < n; ++s) {
      const int src = (rank - s + n) % n;
      const std::vector<int64_t> theirs = ringChunks(src, n, c.zigzag);
      const bool shift = s + 1 < n;
      if (shift)
        FMHA_TRY(t.startShift(cur, next, m * kvChunk));
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < theirs.size(); ++j) {
          const Kernel *kern = pickB(mine[i], theirs[j]);
          if (!kern)
            continue;
          const unsigned char *kv =
              static_cast<const unsigned char *>(cur) + j * kvChunk;
          rt::BackwardArgs ba;
          ba.q = q[i].get();
          ba.k = kv;
          ba.v = kv + kBytes;
          ba.o = o[i].get();
          ba.lse = static_cast<const float *>(lse[i].get());
          ba.dO = dO[i].get();
          ba.dq = dqT.get();
          ba.dk = dkT.get();
          ba.dv = dvT.get();
          FMHA_TRY(kern->runBackward(p, ba, stream));
          // The f32 sums, by the accumulate bundle on the compute stream.
          float *dkv = dkvCur + j * dkvChunk;
          const struct {
            const void *x;
            float *acc;
            int64_t count;
          } sums[] = {
              {dqT.get(), static_cast<float *>(dq[i].get()), p.qElements()},
              {dkT.get(), dkv, static_cast<int64_t>(dkCount)},
              {dvT.get(), dkv + dkCount, static_cast<int64_t>(dvCount)}};
          for (size_t si = 0; si < std::size(sums); ++si) {
            const auto &sum = sums[si];
            if (si > 0 && dkvInFlight) { // dk, dv: into the arrived packet
              FMHA_TRY(t.waitShifts());
              dkvInFlight = false;
            }
            rt::AccumulateArgs aa;
            aa.x = sum.x;
            aa.acc = sum.acc;
            FMHA_TRY(k.accumulate->runAccumulate(sum.count, aa, stream));
          }
          local.kernelCalls += 4;
        }
      }
      // The next step's kernels read the K/V packet that arrived: wait for
      // it before the dK/dV shift is queued behind it on the comm stream.
      // (A dK/dV packet no sum of this step waited for is covered too.)
      if (shift || dkvInFlight) {
        FMHA_TRY(t.waitShifts());
        dkvInFlight = false;
      }
      // dK/dV move on after this step's sums; after the last step the
      // shift brings them home.
      if (n > 1) {
        FMHA_TRY(t.startShift(dkvCur, dkvNext, m * dkvChunk * sizeof(float)));
        dkvInFlight = true;
      }
      if (shift) {
        void *done = cur == kvOwn.get() ? spare : cur;
        cur = next;
        next = done;
      }
      if (n > 1)
        std::swap(dkvCur, dkvNext);
    }
    if (dkvInFlight)
      FMHA_TRY(t.waitShifts());
    rt::Expected<void *> b1 = dev.mark(stream);
    if (!b1.ok())
      return b1.status();
    FMHA_TRY(dev.synchronize());
    rt::Expected<double> bms = dev.eventMs(*b0, *b1);
    if (!bms.ok())
      return bms.status();
    local.backwardMs = *bms;
    if (out) {
      out->dq.assign(m, std::vector<float>(p.qElements()));
      out->dk.assign(m, std::vector<float>(dkCount));
      out->dv.assign(m, std::vector<float>(dvCount));
      std::vector<float> home(m * dkvChunk);
      FMHA_TRY(
          backend.copyToHost(home.data(), dkvCur, home.size() * sizeof(float)));
      for (size_t i = 0; i < m; ++i) {
        FMHA_TRY(backend.copyToHost(out->dq[i].data(), dq[i].get(),
                                    out->dq[i].size() * sizeof(float)));
        std::copy(home.begin() + i * dkvChunk,
                  home.begin() + i * dkvChunk + dkCount, out->dk[i].begin());
        std::copy(home.begin() + i * dkvChunk + dkCount,
                  home.begin() + (i + 1) * dkvChunk, out->dv[i].begin());
      }
    }
  }
  if (out) {
    out->o.assign(m, std::vector<unsigned char>(oBytes));
    out->lse.assign(m, std::vector<float>(lseCount));
    for (size_t i = 0; i < m; ++i) {
      FMHA_TRY(backend.copyToHost(out->o[i].data(), o[i].get(), oBytes));
      FMHA_TRY(backend.copyToHost(out->lse[i].data(), lse[i].get(),
                                  lseCount * sizeof(float)));
    }
  }
  if (times)
    *times = local;
  return Status::success();
}

} // namespace fmha::ring
