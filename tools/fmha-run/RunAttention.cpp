//===- RunAttention.cpp - fmha-run on forward and backward bundles -------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "RunKinds.h"
#include "Validation.h"

#include "fmha/Runtime/Random.h"
#include "fmha/Runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

using namespace fmha::validation;

namespace fmha::runtool {
namespace {

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

ReferenceConfig referenceConfig(const Problem &p, const Signature &sig) {
  ReferenceConfig cfg;
  cfg.b = p.b;
  cfg.hq = p.hq;
  cfg.hk = p.hk;
  cfg.sq = p.sq;
  cfg.sk = p.sk;
  cfg.d = p.d;
  cfg.dv = p.dv;
  cfg.mask = sig.mask;
  cfg.scale = sig.scale;
  cfg.softcap = sig.softcap;
  return cfg;
}

/// The reference of `p` on the inputs `in` (their learned sinks too).
ReferenceConfig referenceConfig(const Problem &p, const Signature &sig,
                                const Inputs &in) {
  ReferenceConfig cfg = referenceConfig(p, sig);
  cfg.sinks = toDouble(in.sinks);
  return cfg;
}

/// A variable-length batch's o and lse against `ref` on the rows its
/// sequences own ([0, rows) of each head); the rows past them must be
/// untouched (still the NaN every run starts from). Prints the errors and
/// PASS/FAIL; returns whether it passed.
bool validateRows(const Problem &p, const Signature &sig, int64_t rows,
                  const std::vector<float> &o, const std::vector<float> &lse,
                  const ReferenceForward &ref) {
  std::vector<float> ownO, ownLse;
  ReferenceForward own;
  int64_t written = 0;
  for (int64_t h = 0; h < p.hq; ++h) {
    const int64_t first = h * p.sq;
    ownLse.insert(ownLse.end(), &lse[first], &lse[first] + rows);
    own.lse.insert(own.lse.end(), &ref.lse[first], &ref.lse[first] + rows);
    ownO.insert(ownO.end(), &o[first * p.dv], &o[(first + rows) * p.dv]);
    own.o.insert(own.o.end(), &ref.o[first * p.dv],
                 &ref.o[(first + rows) * p.dv]);
    for (int64_t i = rows; i < p.sq; ++i)
      written += !std::isnan(lse[first + i]) ||
                 std::any_of(&o[(first + i) * p.dv], &o[(first + i + 1) * p.dv],
                             [](float x) { return !std::isnan(x); });
  }
  std::vector<std::string> reasons;
  if (rows > 0)
    judgeOutputs(p.hq, rows, sig.dtype, ownO, ownLse, own, &reasons);
  std::printf("rows past cu_seqlens_q[B]=%lld: %lld of %lld written\n",
              static_cast<long long>(rows), static_cast<long long>(written),
              static_cast<long long>(p.hq * (p.sq - rows)));
  if (written)
    reasons.push_back(std::to_string(written) +
                      " rows past cu_seqlens_q[B] written");
  return printVerdict(reasons, sig.dtype,
                      "rel_err <= %g, |lse-ref| <= %g*(1+|ref|)");
}

/// Prints the errors and PASS/FAIL; returns whether it passed.
bool validate(const Problem &p, const Signature &sig, const Inputs &in,
              const std::vector<float> &o, const std::vector<float> &lse) {
  ReferenceForward ref;
  std::string err;
  if (p.paged()) {
    const std::vector<int64_t> table(in.blockTable.begin(),
                                     in.blockTable.end()),
        lengths(in.seqlensK.begin(), in.seqlensK.end()),
        cuQ(in.cuSeqlensQ.begin(), in.cuSeqlensQ.end());
    if (!referenceForwardPaged(referenceConfig(p, sig, in), p.pageSize, p.pages,
                               p.maxPages, table, lengths, cuQ, toDouble(in.q),
                               toDouble(in.k), toDouble(in.v), &ref, &err))
      fail(err);
    if (p.varlen)
      return validateRows(p, sig, cuQ.back(), o, lse, ref);
  } else if (p.varlen) {
    const std::vector<int64_t> cuQ(in.cuSeqlensQ.begin(), in.cuSeqlensQ.end()),
        cuK(in.cuSeqlensK.begin(), in.cuSeqlensK.end());
    if (!referenceForwardVarlen(referenceConfig(p, sig, in), cuQ, cuK,
                                toDouble(in.q), toDouble(in.k), toDouble(in.v),
                                &ref, &err))
      fail(err);
    return validateRows(p, sig, cuQ.back(), o, lse, ref);
  }
  if (!p.paged() &&
      !referenceForward(referenceConfig(p, sig, in), toDouble(in.q),
                        toDouble(in.k), toDouble(in.v), &ref, &err))
    fail(err);
  std::vector<std::string> reasons;
  judgeOutputs(p.hq, p.sq, sig.dtype, o, lse, ref, &reasons);
  return printVerdict(reasons, sig.dtype,
                      "rel_err <= %g, |lse-ref| <= %g*(1+|ref|)");
}

/// --validate for a backward bundle: dq, dk, dv against the float64
/// reference gradients, one line each, then PASS or FAIL. The reference's
/// Dsum takes the o the kernel was given (rounded to the dtype).
/// `changedOnRerun` (deterministic bundles only) names the outputs a second
/// run changed. With learned sinks, dsinks against the reference's too.
bool validateBackward(const Problem &p, const Signature &sig, const Inputs &in,
                      const std::vector<float> &o, const std::vector<float> &dq,
                      const std::vector<float> &dk,
                      const std::vector<float> &dv,
                      const std::vector<float> &dsinks,
                      const std::optional<std::string> &changedOnRerun) {
  ReferenceBackward ref;
  std::string err;
  const std::vector<double> givenO = toDouble(o);
  if (!referenceBackward(referenceConfig(p, sig, in), toDouble(in.q),
                         toDouble(in.k), toDouble(in.v), toDouble(in.dO), &ref,
                         &err, &givenO))
    fail(err);
  struct Grad {
    const char *name;
    const std::vector<float> &got;
    const std::vector<double> &want, &magnitude;
  } grads[] = {{"dq", dq, ref.dq, ref.dqMagnitude},
               {"dk", dk, ref.dk, ref.dkMagnitude},
               {"dv", dv, ref.dv, ref.dvMagnitude}};
  std::vector<std::string> reasons;
  for (const Grad &g : grads)
    judgeGradient(g.name, g.got, g.want, g.magnitude, sig.dtype, &reasons);
  if (sig.sinks)
    judgeGradient("dsinks", dsinks, ref.dsinks, ref.dsinksMagnitude, sig.dtype,
                  &reasons);
  if (changedOnRerun) {
    if (changedOnRerun->empty())
      std::printf("deterministic: a second run gave bit-identical dq, dk, "
                  "dv%s\n",
                  sig.sinks ? ", dsinks" : "");
    else
      reasons.push_back("deterministic=1 but a second run changed " +
                        *changedOnRerun);
  }
  return printVerdict(reasons, sig.dtype,
                      sig.sinks ? "rel_err <= %g for dq, dk, dv, dsinks"
                                : "rel_err <= %g for dq, dk, dv");
}

/// --grad-check for a backward bundle: the kernel's gradients against the
/// derivative of the forward itself, independent of any backward formula.
/// For each input x in (q, k, v) and a random direction u (unit norm), the
/// central difference (L(x + eps u) - L(x - eps u)) / (2 eps) of
/// L = sum(o * dO), o from the float64 reference forward, must match
/// <dx, u> within t * max(||dx||, 1), t the --validate rel_err bound of the
/// dtype (a gradient within that relative error moves <dx, u> by at most
/// that), plus the shift that the o the kernel was given (rounded to the
/// dtype) makes: |<dx_ref(given o) - dx_ref(exact o), u>| of the float64
/// reference backward. (Dsum = rowsum(dO * o) nearly cancels dO v^T where
/// few keys matter, so with f16/bf16 o a small dq can move by several
/// times t: seed 11003 of the random conformance, bf16, Sq = 1.)
bool gradCheck(const Problem &p, const Signature &sig, const Inputs &in,
               const std::vector<float> &o, const std::vector<float> &dq,
               const std::vector<float> &dk, const std::vector<float> &dv,
               const std::vector<float> &dsinks, uint64_t seed) {
  ReferenceConfig cfg = referenceConfig(p, sig, in);
  // q, k, v and, with learned sinks, the sinks (the loss reads them from
  // cfg).
  std::vector<double> x[4] = {toDouble(in.q), toDouble(in.k), toDouble(in.v),
                              cfg.sinks};
  const int inputs = sig.sinks ? 4 : 3;
  const std::vector<double> dOut = toDouble(in.dO);
  ReferenceBackward given, exact;
  {
    std::string err;
    const std::vector<double> givenO = toDouble(o);
    if (!referenceBackward(cfg, x[0], x[1], x[2], dOut, &given, &err,
                           &givenO) ||
        !referenceBackward(cfg, x[0], x[1], x[2], dOut, &exact, &err))
      fail(err);
  }
  const std::vector<double> *givenGrads[4] = {&given.dq, &given.dk, &given.dv,
                                              &given.dsinks};
  const std::vector<double> *exactGrads[4] = {&exact.dq, &exact.dk, &exact.dv,
                                              &exact.dsinks};
  auto loss = [&]() {
    ReferenceForward fwd;
    std::string err;
    if (sig.sinks)
      cfg.sinks = x[3];
    if (!referenceForward(cfg, x[0], x[1], x[2], &fwd, &err))
      fail(err);
    double sum = 0.0;
    for (size_t i = 0; i < fwd.o.size(); ++i)
      sum += fwd.o[i] * dOut[i];
    return sum;
  };
  const double tol = toleranceFor(sig.dtype).rel;
  const std::vector<float> *grads[4] = {&dq, &dk, &dv, &dsinks};
  const char *names[4] = {"dq", "dk", "dv", "dsinks"};
  std::vector<std::string> reasons;
  for (int t = 0; t < inputs; ++t) {
    Normal normal(seed ^ (0x6772616463686bull + t)); // "gradchk"
    std::vector<double> dir(x[t].size());
    double norm = 0.0;
    for (double &u : dir) {
      u = normal.next();
      norm += u * u;
    }
    norm = std::sqrt(norm);
    double analytic = 0.0, gradNorm = 0.0, roundingShift = 0.0;
    for (size_t i = 0; i < dir.size(); ++i) {
      analytic += double((*grads[t])[i]) * dir[i] / norm;
      gradNorm += double((*grads[t])[i]) * (*grads[t])[i];
      roundingShift +=
          ((*givenGrads[t])[i] - (*exactGrads[t])[i]) * dir[i] / norm;
    }
    gradNorm = std::sqrt(gradNorm);
    const double eps = 1e-4;
    std::vector<double> saved = x[t];
    for (size_t i = 0; i < dir.size(); ++i)
      x[t][i] = saved[i] + eps * dir[i] / norm;
    double plus = loss();
    for (size_t i = 0; i < dir.size(); ++i)
      x[t][i] = saved[i] - eps * dir[i] / norm;
    double minus = loss();
    x[t] = saved;
    double numeric = (plus - minus) / (2 * eps);
    double err = std::fabs(numeric - analytic);
    // Absolute near 0, as --validate's all-0 rule.
    double bound = tol * std::max(gradNorm, 1.0) + std::fabs(roundingShift);
    std::printf("grad-check %s: finite_difference=%.6e kernel=%.6e "
                "abs_err=%.3e bound=%.3e (o rounding %.3e)\n",
                names[t], numeric, analytic, err, bound,
                std::fabs(roundingShift));
    if (!(err <= bound))
      reasons.push_back(std::string(names[t]) + " off by " + formatReal(err) +
                        " > " + formatReal(bound));
  }
  if (reasons.empty()) {
    std::printf("grad-check PASS\n");
    return true;
  }
  std::string all;
  for (const std::string &r : reasons)
    all += (all.empty() ? "" : "; ") + r;
  std::printf("grad-check FAIL: %s\n", all.c_str());
  return false;
}

} // namespace

int runForwardKernel(const CommandLine &cl, Kernel &kernel, const Problem &p,
                     const Signature &sig, const Inputs &in,
                     BenchCounts counts) {
  Backend &backend = kernel.backend();
  Device dev(backend);
  std::optional<LaunchPlan> launch = launchFor(kernel, Kernel::sizesOf(p));
  const MemoryLayout &L = gLayout;
  InputBytes bytes = inputBytes(p, sig, in);
  const std::vector<unsigned char> &qBytes = bytes.q, &kBytes = bytes.k,
                                   &vBytes = bytes.v;
  ForwardBuffers bufs(dev, p, sig.dtype, qBytes, kBytes, vBytes, in);
  DeviceBuffer &oBuf = bufs.o, &lseBuf = bufs.lse;
  ForwardArgs args = bufs.args;

  // Every run starts from NaN in o and lse.
  auto poison = [&]() {
    dev.poison(oBuf);
    dev.poison(lseBuf);
  };
  double firstMs = timeFirstRun(backend, poison,
                                [&] { return launchForward(kernel, p, args); });
  std::vector<float> o = L.fromMemory(
      fromStorage(dev.download(oBuf), sig.dtype), p.batch(), p.hq, p.sq, p.dv);
  std::vector<float> lse(p.lseElements());
  check(backend.copyToHost(lse.data(), lseBuf.get(), lseBuf.size()));

  printRunHeader(kernel, sig, launch, p, firstMs);

  bool passed = true;
  if (cl.flag("validate"))
    passed = validate(p, sig, in, o, lse);

  if (std::optional<std::string> dir = cl.str("save")) {
    const int64_t b = p.batch();
    const int64_t kvB = p.kvBatch(), kvS = p.kvRows();
    std::vector<SavedTensor> saved = {
        {"q.npy", {b, p.hq, p.sq, p.d}, &in.q},
        {p.paged() ? "k_cache.npy" : "k.npy", {kvB, p.hk, kvS, p.d}, &in.k},
        {p.paged() ? "v_cache.npy" : "v.npy", {kvB, p.hk, kvS, p.dv}, &in.v},
        {"o.npy", {b, p.hq, p.sq, p.dv}, &o},
        {"lse.npy", {b, p.hq, p.sq}, &lse}};
    if (sig.sinks)
      saved.push_back({"sinks.npy", {p.hq}, &in.sinks});
    for (auto [file, cu] : {std::pair{"cu_seqlens_q.npy", &in.cuSeqlensQ},
                            std::pair{"cu_seqlens_k.npy", &in.cuSeqlensK},
                            std::pair{"seqlens_k.npy", &in.seqlensK}})
      if (!cu->empty())
        saved.push_back(
            {file, {static_cast<int64_t>(cu->size())}, nullptr, cu});
    if (p.paged())
      saved.push_back(
          {"block_table.npy", {p.b, p.maxPages}, nullptr, &in.blockTable});
    saveTensors(*dir, saved);
  }

  if (cl.flag("bench")) {
    // Small inputs rotate among copies (the first is the one above).
    size_t copies =
        rotationCopies(qBytes.size() + kBytes.size() + vBytes.size());
    std::vector<DeviceBuffer> extra;
    std::vector<ForwardArgs> argSets{args};
    for (size_t c = 1; c < copies; ++c) {
      extra.push_back(dev.upload(qBytes));
      extra.push_back(dev.upload(kBytes));
      extra.push_back(dev.upload(vBytes));
      ForwardArgs a = args;
      a.q = extra[extra.size() - 3].get();
      a.k = extra[extra.size() - 2].get();
      a.v = extra[extra.size() - 1].get();
      argSets.push_back(a);
    }
    bench(backend, counts, copies,
          p.varlen || p.paged()
              ? forwardFlops(p, sig.mask,
                             p.varlen ? in.cuSeqlensQ.data() : nullptr,
                             p.paged() ? nullptr : in.cuSeqlensK.data(),
                             p.paged() ? in.seqlensK.data() : nullptr)
              : forwardFlops(p, sig.mask),
          "visible pairs only", poison,
          [&](size_t c) { return launchForward(kernel, p, argSets[c]); });
  }
  return passed ? 0 : 1;
}

std::string forwardForBackwardMismatch(const BundleMeta &f,
                                       const BundleMeta &b) {
  auto differs = [](const std::string &what, const std::string &mine,
                    const std::string &theirs) {
    return "has " + what + " " + mine + ", the backward bundle " + theirs;
  };
  if (f.kind != KernelKind::Forward)
    return std::string("has kind=") + toString(f.kind) +
           "; --fwd takes a forward bundle";
  if (f.target != b.target)
    return differs("target", toString(f.target), toString(b.target));
  if (f.dtype != b.dtype)
    return differs("dtype", toString(f.dtype), toString(b.dtype));
  auto dims = [](const BundleMeta &m) {
    return "hq=" + std::to_string(m.hq) + " hk=" + std::to_string(m.hk) +
           " d=" + std::to_string(m.d) + " dv=" + std::to_string(m.dv);
  };
  if (dims(f) != dims(b))
    return "has " + dims(f) + ", the backward bundle " + dims(b);
  if (f.mask.str() != b.mask.str())
    return differs("mask", f.mask.str(), b.mask.str());
  if (f.effectiveScale() != b.effectiveScale())
    return differs("scale", std::to_string(f.effectiveScale()),
                   std::to_string(b.effectiveScale()));
  if (f.softcap != b.softcap)
    return differs("softcap", std::to_string(f.softcap),
                   std::to_string(b.softcap));
  if (f.sinks != b.sinks)
    return differs("sinks", f.sinks ? "1" : "0", b.sinks ? "1" : "0");
  return "";
}

namespace {

/// o (rounded to the dtype's values) and lse of `fwd`, a forward bundle,
/// run once on the inputs.
void runForwardFor(Kernel &fwd, const Problem &p, const Signature &sig,
                   const Inputs &in, std::vector<float> *o,
                   std::vector<float> *lse) {
  Backend &backend = fwd.backend();
  Device dev(backend);
  const MemoryLayout &L = gLayout;
  InputBytes bytes = inputBytes(p, sig, in);
  ForwardBuffers bufs(dev, p, sig.dtype, bytes.q, bytes.k, bytes.v, in);
  check(launchForward(fwd, p, bufs.args));
  *o = L.fromMemory(fromStorage(dev.download(bufs.o), sig.dtype), p.b, p.hq,
                    p.sq, p.dv);
  lse->assign(p.lseElements(), 0.0f);
  check(backend.copyToHost(lse->data(), bufs.lse.get(), bufs.lse.size()));
  std::printf("o and lse from forward bundle '%s'\n", fwd.name().c_str());
}

} // namespace

int runBackwardKernel(const CommandLine &cl, Kernel &kernel, Kernel *fwd,
                      const Problem &p, const Signature &sig, const Inputs &in,
                      BenchCounts counts) {
  Backend &backend = kernel.backend();
  Device dev(backend);
  // A GPU backward: every grid and the workspace, checked before any run.
  std::optional<LaunchPlan> launch = launchFor(kernel, Kernel::sizesOf(p));

  // o and lse, the forward's: from --load DIR when it has both o.npy and
  // lse.npy, from the --fwd bundle, else the float64 reference forward (o
  // rounded to the dtype, lse to float32).
  std::vector<float> o, lse;
  std::optional<std::string> loadDir = cl.str("load");
  auto exists = [](const std::string &path) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  };
  if (loadDir && exists(joinPath(*loadDir, "o.npy")) &&
      exists(joinPath(*loadDir, "lse.npy"))) {
    NpyArray oIn = loadInput(*loadDir, "o.npy"), lseIn;
    std::string err;
    if (!checkNpyShape(oIn, joinPath(*loadDir, "o.npy"),
                       {p.b, p.hq, p.sq, p.dv}, &err) ||
        !readNpy(joinPath(*loadDir, "lse.npy"), &lseIn, &err) ||
        !checkNpyShape(lseIn, joinPath(*loadDir, "lse.npy"), {p.b, p.hq, p.sq},
                       &err))
      fail(err);
    if (fwd)
      fail("--fwd and --load's o.npy/lse.npy both give o and lse; use one");
    o = std::move(oIn.data);
    lse = std::move(lseIn.data);
  } else if (fwd) {
    runForwardFor(*fwd, p, sig, in, &o, &lse);
  } else {
    ReferenceForward fwd;
    std::string err;
    if (!referenceForward(referenceConfig(p, sig, in), toDouble(in.q),
                          toDouble(in.k), toDouble(in.v), &fwd, &err))
      fail(err);
    o.assign(fwd.o.begin(), fwd.o.end());
    lse.assign(fwd.lse.begin(), fwd.lse.end());
  }
  for (float &x : o)
    x = roundTo(x, sig.dtype);

  const MemoryLayout &L = gLayout;
  InputBytes bytes = inputBytes(p, sig, in);
  const std::vector<unsigned char> &qBytes = bytes.q, &kBytes = bytes.k,
                                   &vBytes = bytes.v;
  std::vector<unsigned char> oBytes =
      toStorage(L.toMemory(o, p.b, p.hq, p.sq, p.dv), sig.dtype);
  std::vector<unsigned char> lseBytes = toStorage(lse, DType::F32);
  std::vector<unsigned char> doBytes =
      toStorage(L.toMemory(in.dO, p.b, p.hq, p.sq, p.dv), sig.dtype);
  DeviceBuffer dqBuf = dev.allocate(qBytes.size());
  DeviceBuffer dkBuf = dev.allocate(kBytes.size());
  DeviceBuffer dvBuf = dev.allocate(vBytes.size());
  // Learned sinks: the sinks in, their gradient out (float32 [Hq]).
  DeviceBuffer sinksBuf, dsinksBuf;
  if (sig.sinks) {
    sinksBuf = dev.upload(std::vector<unsigned char>(
        reinterpret_cast<const unsigned char *>(in.sinks.data()),
        reinterpret_cast<const unsigned char *>(in.sinks.data() +
                                                in.sinks.size())));
    dsinksBuf = dev.allocate(p.hq * sizeof(float));
  }

  // Input copies for --bench's rotation; the first is the one every other
  // run uses.
  struct InputSet {
    DeviceBuffer q, k, v, o, lse, dO;
  };
  std::vector<InputSet> sets;
  auto addSet = [&]() {
    sets.push_back({dev.upload(qBytes), dev.upload(kBytes), dev.upload(vBytes),
                    dev.upload(oBytes), dev.upload(lseBytes),
                    dev.upload(doBytes)});
  };
  addSet();
  auto argsFor = [&](size_t c) {
    BackwardArgs a;
    a.q = sets[c].q.get();
    a.k = sets[c].k.get();
    a.v = sets[c].v.get();
    a.o = sets[c].o.get();
    a.lse = static_cast<const float *>(sets[c].lse.get());
    a.dO = sets[c].dO.get();
    a.dq = dqBuf.get();
    a.dk = dkBuf.get();
    a.dv = dvBuf.get();
    if (sig.sinks) {
      a.sinks = static_cast<const float *>(sinksBuf.get());
      a.dsinks = static_cast<float *>(dsinksBuf.get());
    }
    return a;
  };
  // Every run starts from NaN in dq, dk, dv (and dsinks).
  auto poison = [&]() {
    dev.poison(dqBuf);
    dev.poison(dkBuf);
    dev.poison(dvBuf);
    if (sig.sinks)
      dev.poison(dsinksBuf);
  };
  auto runOnce = [&]() { return launchBackward(kernel, p, argsFor(0)); };
  double firstMs = timeFirstRun(backend, poison, runOnce);
  std::vector<unsigned char> dqBytes = dev.download(dqBuf);
  std::vector<unsigned char> dkBytes = dev.download(dkBuf);
  std::vector<unsigned char> dvBytes = dev.download(dvBuf);
  std::vector<float> dq =
      L.fromMemory(fromStorage(dqBytes, sig.dtype), p.b, p.hq, p.sq, p.d);
  std::vector<float> dk =
      L.fromMemory(fromStorage(dkBytes, sig.dtype), p.b, p.hk, p.sk, p.d);
  std::vector<float> dv =
      L.fromMemory(fromStorage(dvBytes, sig.dtype), p.b, p.hk, p.sk, p.dv);
  std::vector<unsigned char> dsinksBytes;
  std::vector<float> dsinks;
  if (sig.sinks) {
    dsinksBytes = dev.download(dsinksBuf);
    dsinks = fromStorage(dsinksBytes, DType::F32);
  }

  printRunHeader(kernel, sig, launch, p, firstMs);

  bool passed = true;
  if (cl.flag("validate")) {
    // A deterministic bundle must give the same bits on a second run.
    std::optional<std::string> changed;
    if (kernel.meta().deterministic) {
      timeFirstRun(backend, poison, runOnce);
      changed = "";
      struct Pair {
        const char *name;
        const std::vector<unsigned char> *first;
        const DeviceBuffer *buf;
      } pairs[] = {{"dq", &dqBytes, &dqBuf},
                   {"dk", &dkBytes, &dkBuf},
                   {"dv", &dvBytes, &dvBuf},
                   {"dsinks", &dsinksBytes, &dsinksBuf}};
      for (const Pair &pr : pairs)
        if ((sig.sinks || pr.buf != &dsinksBuf) &&
            dev.download(*pr.buf) != *pr.first)
          *changed += (changed->empty() ? "" : ", ") + std::string(pr.name);
    }
    passed = validateBackward(p, sig, in, o, dq, dk, dv, dsinks, changed);
  }

  if (cl.flag("grad-check"))
    passed = gradCheck(p, sig, in, o, dq, dk, dv, dsinks,
                       cl.unsignedInteger("seed").value_or(0)) &&
             passed;

  if (std::optional<std::string> dir = cl.str("save")) {
    std::vector<SavedTensor> saved = {
        {"q.npy", {p.b, p.hq, p.sq, p.d}, &in.q},
        {"k.npy", {p.b, p.hk, p.sk, p.d}, &in.k},
        {"v.npy", {p.b, p.hk, p.sk, p.dv}, &in.v},
        {"do.npy", {p.b, p.hq, p.sq, p.dv}, &in.dO},
        {"o.npy", {p.b, p.hq, p.sq, p.dv}, &o},
        {"lse.npy", {p.b, p.hq, p.sq}, &lse},
        {"dq.npy", {p.b, p.hq, p.sq, p.d}, &dq},
        {"dk.npy", {p.b, p.hk, p.sk, p.d}, &dk},
        {"dv.npy", {p.b, p.hk, p.sk, p.dv}, &dv}};
    if (sig.sinks) {
      saved.push_back({"sinks.npy", {p.hq}, &in.sinks});
      saved.push_back({"dsinks.npy", {p.hq}, &dsinks});
    }
    saveTensors(*dir, saved);
  }

  if (cl.flag("bench")) {
    size_t copies =
        rotationCopies(qBytes.size() + kBytes.size() + vBytes.size() +
                       oBytes.size() + lseBytes.size() + doBytes.size());
    while (sets.size() < copies)
      addSet();
    bench(backend, counts, copies, backwardFlops(p, sig.mask),
          "visible pairs only; backward = 2.5x forward FLOPs", poison,
          [&](size_t c) { return launchBackward(kernel, p, argsFor(c)); });
  }
  return passed ? 0 : 1;
}

} // namespace fmha::runtool
