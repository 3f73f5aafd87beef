//===- fmha-ring.cpp - Ring attention over MPI ranks, checked -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Run under `mpirun -np N`: every rank loads the bundles, draws the whole
// problem from the seed (q, k, v, then dO, standard normal rounded to the
// dtype, as fmha-run draws them), keeps its chunks, runs the ring forward
// and backward (runtime/ring), and rank 0 gathers o, lse, dq, dk, dv and
// checks them against the float64 reference on the full sequence with
// fmha-run's metric and tolerances. Exit status: 0 PASS, 1 FAIL, 2 error
// (bad flags, a bundle that is missing or of the wrong kind, an MPI
// failure); every rank exits with the same status.
//
//===----------------------------------------------------------------------===//

#include "Validation.h"

#include "fmha/Ring/DeviceRing.h"
#include "fmha/Ring/MpiTransport.h"
#include "fmha/Ring/RingAttention.h"
#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Random.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Runtime/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace fmha;
using namespace fmha::ring;
using rt::DType;

namespace {

struct ToolError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) { throw ToolError{message}; }

const char *const kValueFlags[] = {
    "fwd", "fwd-causal", "merge", "bwd",    "bwd-causal", "acc",
    "b",   "seq",        "seed",  "target", "check",      "bench"};
const char *const kBoolFlags[] = {"causal", "zigzag", "help"};

void printHelp() {
  std::printf(
      "OVERVIEW: ring attention over MPI ranks, checked against the float64 "
      "reference\n\n"
      "USAGE: mpirun -np N fmha-ring --fwd F --merge F [--fwd-causal F] "
      "[--bwd F --acc F [--bwd-causal F]]\n"
      "                              --seq S [-b N] [--causal] [--zigzag] "
      "[--seed N]\n\n"
      "  --fwd F          forward bundle, mask 0 (its dtype, hq, hk, d, dv "
      "define the problem)\n"
      "  --fwd-causal F   forward bundle, mask t (needed with --causal)\n"
      "  --merge F        merge bundle (fmha-compile --merge)\n"
      "  --bwd F          backward bundle, mask 0: also run and check the "
      "backward\n"
      "  --bwd-causal F   backward bundle, mask t (needed with --bwd "
      "--causal)\n"
      "  --acc F          accumulate bundle (fmha-compile --accumulate, the "
      "dtype's): the f32\n"
      "                   sums of the backward's dq, dk, dv (needed with "
      "--bwd)\n"
      "  --seq S          total sequence length (Sq = Sk); a multiple of N "
      "(2N with --zigzag)\n"
      "  -b N             batch (default 1)\n"
      "  --causal         causal mask over the whole sequence\n"
      "  --zigzag         rank r holds chunks r and 2N-1-r\n"
      "  --seed N         seed of the inputs (default 0)\n"
      "  --target T       cpu (default: cpu bundles, MPI) or cuda (cuda "
      "bundles, one GPU a rank:\n"
      "                   $FMHA_CUDA_DEVICE, else the local rank; NCCL "
      "shifts, libnccl.so.2 or\n"
      "                   $FMHA_NCCL_LIBRARY)\n"
      "  --check C        reference (float64, default for cpu), single (the "
      "same bundles on the\n"
      "                   whole sequence on rank 0's device, default for "
      "cuda) or none\n"
      "  --bench N        cuda: after the check, time N rings, their kernels "
      "alone and their\n"
      "                   shifts alone (the fraction of communication "
      "hidden)\n\n"
      "Exit status: 0 PASS, 1 FAIL, 2 error.\n");
}

std::map<std::string, std::string> parseFlags(int argc, char **argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-')
      fail("unexpected argument '" + arg + "'; see --help");
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1), value;
    size_t eq = name.find('=');
    bool hasValue = eq != std::string::npos;
    if (hasValue) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    bool takesValue = false, known = false;
    for (const char *f : kValueFlags)
      if (name == f)
        known = takesValue = true;
    for (const char *f : kBoolFlags)
      if (name == f)
        known = true;
    if (!known)
      fail("unknown option '" + arg + "'; see --help");
    if (takesValue && !hasValue) {
      if (i + 1 >= argc)
        fail("option '--" + name + "' needs a value");
      value = argv[++i];
    } else if (!takesValue) {
      if (hasValue)
        fail("option '--" + name + "' takes no value");
      value = "true";
    }
    if (flags.count(name))
      fail("option '--" + name + "' given twice");
    flags[name] = value;
  }
  return flags;
}

int64_t integer(const std::map<std::string, std::string> &flags,
                const std::string &name, int64_t fallback, int64_t min) {
  auto it = flags.find(name);
  if (it == flags.end())
    return fallback;
  const std::string &s = it->second;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno == ERANGE || v < min)
    fail("--" + name + " expects an integer >= " + std::to_string(min) +
         ", got '" + s + "'");
  return v;
}

float toFloat(const unsigned char *p, DType t) {
  if (t == DType::F32) {
    float x;
    std::memcpy(&x, p, 4);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::F16 ? rt::halfBitsToFloat(h) : rt::bfloat16BitsToFloat(h);
}

void store(float x, unsigned char *p, DType t) {
  if (t == DType::F32) {
    std::memcpy(p, &x, 4);
    return;
  }
  uint16_t h =
      t == DType::F16 ? rt::floatToHalfBits(x) : rt::floatToBFloat16Bits(x);
  std::memcpy(p, &h, 2);
}

/// A full [B, H, S, X] tensor of values representable in the dtype.
struct Full {
  int64_t b, h, s, x;
  std::vector<float> data;
};

Full draw(rt::Normal &rng, int64_t b, int64_t h, int64_t s, int64_t x,
          DType t) {
  Full f{b, h, s, x, std::vector<float>(b * h * s * x)};
  for (float &v : f.data) {
    unsigned char bytes[4];
    store(static_cast<float>(rng.next()), bytes, t);
    v = toFloat(bytes, t);
  }
  return f;
}

/// Rows [g*c, (g+1)*c) of every (b, h) of `f`, as dtype bytes.
std::vector<unsigned char> chunkOf(const Full &f, int64_t g, int64_t c,
                                   DType t) {
  size_t elem = rt::dtypeSize(t);
  std::vector<unsigned char> out(f.b * f.h * c * f.x * elem);
  size_t o = 0;
  for (int64_t bh = 0; bh < f.b * f.h; ++bh)
    for (int64_t r = 0; r < c; ++r)
      for (int64_t e = 0; e < f.x; ++e, ++o)
        store(f.data[(bh * f.s + g * c + r) * f.x + e], &out[o * elem], t);
  return out;
}

/// Writes chunk g ([B*H, c, x] floats at `src`) into the full [B, H, S, x].
void placeChunk(std::vector<float> &full, int64_t bh, int64_t s, int64_t x,
                int64_t g, int64_t c, const float *src) {
  for (int64_t i = 0; i < bh; ++i)
    for (int64_t r = 0; r < c; ++r)
      std::memcpy(&full[(i * s + g * c + r) * x], &src[(i * c + r) * x],
                  x * sizeof(float));
}

std::unique_ptr<rt::Kernel> loadKernel(const std::string &path) {
  rt::Expected<std::unique_ptr<rt::Kernel>> k = rt::Kernel::loadFile(path);
  if (!k.ok())
    fail(k.message());
  return k.take();
}

int run(Transport &t, int argc, char **argv) {
  std::map<std::string, std::string> flags = parseFlags(argc, argv);
  if (flags.count("help")) {
    if (t.rank() == 0)
      printHelp();
    return 0;
  }
  for (const char *required : {"fwd", "merge", "seq"})
    if (!flags.count(required))
      fail(std::string("--") + required + " is required; see --help");
  RingConfig config;
  config.causal = flags.count("causal");
  config.zigzag = flags.count("zigzag");
  config.backward = flags.count("bwd");
  if (config.causal && !flags.count("fwd-causal"))
    fail("--causal needs --fwd-causal (a forward bundle with mask t)");
  if (config.causal && config.backward && !flags.count("bwd-causal"))
    fail("--causal with --bwd needs --bwd-causal (a backward bundle with "
         "mask t)");
  if (!config.backward && flags.count("bwd-causal"))
    fail("--bwd-causal needs --bwd");
  if (config.backward && !flags.count("acc"))
    fail("--bwd needs --acc (an accumulate bundle: fmha-compile "
         "--accumulate)");
  if (!config.backward && flags.count("acc"))
    fail("--acc needs --bwd");
  std::string target = flags.count("target") ? flags["target"] : "cpu";
  if (target != "cpu" && target != "cuda")
    fail("--target expects cpu or cuda, got '" + target + "'");
  const bool cuda = target == "cuda";
  config.target = cuda ? rt::Target::Cuda : rt::Target::Cpu;
  std::string check = flags.count("check") ? flags["check"]
                      : cuda               ? "single"
                                           : "reference";
  if (check != "reference" && check != "single" && check != "none")
    fail("--check expects reference, single or none, got '" + check + "'");
  if (check == "single" && !cuda)
    fail("--check single needs --target cuda");
  int64_t benchIters = integer(flags, "bench", 0, 1);
  if (benchIters && !cuda)
    fail("--bench needs --target cuda");
  config.b = integer(flags, "b", 1, 1);
  int64_t seq = integer(flags, "seq", 0, 1);
  uint64_t seed = static_cast<uint64_t>(integer(flags, "seed", 0, 0));
  int64_t chunks = int64_t(t.size()) * (config.zigzag ? 2 : 1);
  if (seq % chunks != 0)
    fail("--seq " + std::to_string(seq) + " is not a multiple of the " +
         std::to_string(chunks) + " chunks of " + std::to_string(t.size()) +
         " ranks" + (config.zigzag ? " (zigzag: 2 a rank)" : ""));
  config.chunk = seq / chunks;

  // cuda: one device a rank, NCCL between them. Every rank learns whether
  // every other got this far, so none waits for one that gave up.
  std::unique_ptr<CudaRingDevice> device;
  std::unique_ptr<Transport> nccl;
  if (cuda) {
    auto together = [&](const rt::Status &s, const char *what) {
      rt::Expected<bool> all = t.allOk(s.ok());
      if (!s.ok())
        fail(s.message());
      if (!all.ok())
        fail(all.message());
      if (!*all)
        fail(std::string(what) + " failed on another rank");
    };
    together(loadNccl(), "loading NCCL");
    int ordinal = t.rank();
    for (const char *var :
         {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
      if (const char *v = std::getenv(var)) {
        ordinal = std::atoi(v);
        break;
      }
    if (const char *v = std::getenv("FMHA_CUDA_DEVICE"); v && *v)
      ordinal = std::atoi(v);
    else
      setenv("FMHA_CUDA_DEVICE", std::to_string(ordinal).c_str(), 1);
    rt::Expected<std::unique_ptr<CudaRingDevice>> created =
        CudaRingDevice::create(ordinal);
    together(created.ok() ? rt::Status::success() : created.status(),
             "opening the CUDA device");
    device = created.take();
    rt::Expected<std::unique_ptr<Transport>> made =
        createNcclTransport(t, *device);
    if (!made.ok())
      fail(made.message());
    nccl = made.take();
  }

  std::map<std::string, std::unique_ptr<rt::Kernel>> loaded;
  for (const char *role :
       {"fwd", "fwd-causal", "merge", "bwd", "bwd-causal", "acc"})
    if (flags.count(role))
      loaded[role] = loadKernel(flags[role]);
  auto get = [&](const char *role) {
    auto it = loaded.find(role);
    return it == loaded.end() ? nullptr : it->second.get();
  };
  RingKernels kernels;
  kernels.fwd = get("fwd");
  kernels.fwdCausal = config.causal ? get("fwd-causal") : nullptr;
  kernels.merge = get("merge");
  kernels.bwd = get("bwd");
  kernels.bwdCausal = config.causal ? get("bwd-causal") : nullptr;
  kernels.accumulate = get("acc");
  rt::Status ok = checkRingKernels(kernels, config);
  if (!ok.ok())
    fail(ok.message());

  const rt::BundleMeta &m = kernels.fwd->meta();
  const DType dt = m.dtype;
  rt::Normal rng(seed);
  Full q = draw(rng, config.b, m.hq, seq, m.d, dt);
  Full k = draw(rng, config.b, m.hk, seq, m.d, dt);
  Full v = draw(rng, config.b, m.hk, seq, m.dv, dt);
  Full dO = config.backward ? draw(rng, config.b, m.hq, seq, m.dv, dt)
                            : Full{0, 0, 0, 0, {}};
  const std::vector<int64_t> mine =
      ringChunks(t.rank(), t.size(), config.zigzag);
  const int64_t c = config.chunk;
  RingInputs in;
  for (int64_t g : mine) {
    in.q.push_back(chunkOf(q, g, c, dt));
    in.k.push_back(chunkOf(k, g, c, dt));
    in.v.push_back(chunkOf(v, g, c, dt));
    if (config.backward)
      in.dO.push_back(chunkOf(dO, g, c, dt));
  }
  return [&]() -> int {
    RingOutputs out;
    RingTimes times;
    DeviceRingTimes deviceTimes;
    rt::Status ran = cuda ? runRingDevice(*nccl, *device, kernels, config, in,
                                          &out, &deviceTimes)
                          : runRing(t, kernels, config, in, &out, &times);
    if (cuda) {
      times.forwardMs = deviceTimes.forwardMs;
      times.backwardMs = deviceTimes.backwardMs;
      times.kernelCalls = deviceTimes.kernelCalls;
      times.skippedPairs = deviceTimes.skippedPairs;
    }
    if (!ran.ok()) {
      std::fflush(stdout);
      std::fprintf(stderr, "fmha-ring: error: rank %d: %s\n", t.rank(),
                   ran.message().c_str());
      std::fflush(stderr);
      mpiAbort(2); // the other ranks may wait for this one
    }
    // Pack this rank's results (float32), gather them everywhere.
    const int64_t bhq = config.b * m.hq, bhk = config.b * m.hk;
    const int64_t nO = bhq * c * m.dv, nL = bhq * c, nQ = bhq * c * m.d,
                  nK = bhk * c * m.d, nV = bhk * c * m.dv;
    const int64_t perChunk = nO + nL + (config.backward ? nQ + nK + nV : 0);
    std::vector<float> packed;
    for (size_t i = 0; i < mine.size(); ++i) {
      for (int64_t e = 0; e < nO; ++e)
        packed.push_back(toFloat(&out.o[i][e * rt::dtypeSize(dt)], dt));
      packed.insert(packed.end(), out.lse[i].begin(), out.lse[i].end());
      if (config.backward) {
        packed.insert(packed.end(), out.dq[i].begin(), out.dq[i].end());
        packed.insert(packed.end(), out.dk[i].begin(), out.dk[i].end());
        packed.insert(packed.end(), out.dv[i].begin(), out.dv[i].end());
      }
    }
    std::vector<float> all(packed.size() * t.size());
    rt::Status gathered =
        t.allGather(packed.data(), all.data(), packed.size() * sizeof(float));
    if (!gathered.ok())
      fail(gathered.message());
    if (benchIters) {
      // Time the ring, its kernels alone and its shifts alone; every rank
      // reports, rank 0 prints the slowest rank's figures.
      double figures[4] = {0, 0, 0, 0};
      std::vector<double> steps;
      const RingMode modes[3] = {RingMode::Full, RingMode::ComputeOnly,
                                 RingMode::CommOnly};
      RingConfig forwardOnly = config; // the bench times the forward
      forwardOnly.backward = false;
      rt::Status warm = runRingDevice(*nccl, *device, kernels, forwardOnly, in,
                                      nullptr, nullptr, RingMode::Full, 1);
      for (int i = 0; warm.ok() && i < 3; ++i) {
        DeviceRingTimes bt;
        warm = runRingDevice(*nccl, *device, kernels, forwardOnly, in, nullptr,
                             &bt, modes[i], static_cast<int>(benchIters));
        figures[i] = bt.forwardMs;
        if (i == 0)
          steps = bt.stepMs;
      }
      if (warm.ok() && config.backward) {
        // One more forward and backward, warm (the check's run loaded the
        // backward's workspace and the accumulation kernel).
        DeviceRingTimes bt;
        warm = runRingDevice(*nccl, *device, kernels, config, in, nullptr, &bt,
                             RingMode::Full, 1);
        figures[3] = bt.backwardMs;
      }
      if (!warm.ok()) {
        std::fprintf(stderr, "fmha-ring: error: rank %d: %s\n", t.rank(),
                     warm.message().c_str());
        std::fflush(stderr);
        mpiAbort(2);
      }
      std::vector<double> mineB(figures, figures + 4);
      mineB.insert(mineB.end(), steps.begin(), steps.end());
      std::vector<double> allB(mineB.size() * t.size());
      rt::Status g =
          t.allGather(mineB.data(), allB.data(), mineB.size() * sizeof(double));
      if (!g.ok())
        fail(g.message());
      if (t.rank() == 0) {
        std::vector<double> worst(mineB.size(), 0.0);
        for (int r = 0; r < t.size(); ++r)
          for (size_t i = 0; i < mineB.size(); ++i)
            worst[i] = std::max(worst[i], allB[r * mineB.size() + i]);
        double exposed = std::max(0.0, worst[0] - worst[1]);
        double hidden =
            worst[2] > 0 ? std::clamp(1.0 - exposed / worst[2], 0.0, 1.0) : 1.0;
        std::printf("bench: ring %.3f ms, kernels alone %.3f ms, shifts "
                    "alone %.3f ms, communication hidden %.3f (%lld "
                    "iterations, slowest rank)\n",
                    worst[0], worst[1], worst[2], hidden,
                    static_cast<long long>(benchIters));
        if (config.backward)
          std::printf("bench: backward ring %.3f ms (one run, slowest "
                      "rank)\n",
                      worst[3]);
        std::printf("bench: step ms");
        for (size_t i = 4; i < worst.size(); ++i)
          std::printf(" %.3f", worst[i]);
        std::printf("\n");
      }
    }
    std::printf("rank %d: chunks", t.rank());
    for (int64_t g : mine)
      std::printf(" %lld", static_cast<long long>(g));
    std::printf(": forward %.2f ms, backward %.2f ms, waiting %.2f ms, %lld "
                "kernel calls, %lld block pairs skipped\n",
                times.forwardMs, times.backwardMs, times.waitMs,
                static_cast<long long>(times.kernelCalls),
                static_cast<long long>(times.skippedPairs));
    std::fflush(stdout);
    if (t.rank() != 0)
      return -1; // rank 0 decides
    std::vector<float> o(bhq * seq * m.dv), lse(bhq * seq), dq, dk, dv;
    if (config.backward) {
      dq.resize(bhq * seq * m.d);
      dk.resize(bhk * seq * m.d);
      dv.resize(bhk * seq * m.dv);
    }
    for (int r = 0; r < t.size(); ++r) {
      std::vector<int64_t> theirs = ringChunks(r, t.size(), config.zigzag);
      for (size_t i = 0; i < theirs.size(); ++i) {
        const float *p = &all[(r * theirs.size() + i) * perChunk];
        int64_t g = theirs[i];
        placeChunk(o, bhq, seq, m.dv, g, c, p);
        placeChunk(lse, bhq, seq, 1, g, c, p + nO);
        if (config.backward) {
          placeChunk(dq, bhq, seq, m.d, g, c, p + nO + nL);
          placeChunk(dk, bhk, seq, m.d, g, c, p + nO + nL + nQ);
          placeChunk(dv, bhk, seq, m.dv, g, c, p + nO + nL + nQ + nK);
        }
      }
    }
    rt::ReferenceConfig cfg;
    cfg.b = config.b;
    cfg.hq = m.hq;
    cfg.hk = m.hk;
    cfg.sq = cfg.sk = seq;
    cfg.d = m.d;
    cfg.dv = m.dv;
    cfg.mask = config.causal ? kernels.fwdCausal->meta().mask : MaskSpec{};
    cfg.scale = m.effectiveScale();
    cfg.softcap = m.softcap;
    rt::ReferenceForward ref;
    rt::ReferenceBackward refB; // --check single: the one-device gradients
    std::string err;
    std::vector<double> qd, kd, vd;
    if (check == "reference") {
      qd.assign(q.data.begin(), q.data.end());
      kd.assign(k.data.begin(), k.data.end());
      vd.assign(v.data.begin(), v.data.end());
    }
    if (check == "none") {
      std::printf("ring: no check (--check none)\n");
      return 0;
    }
    if (check == "single") {
      // The same bundle on the whole sequence on this device.
      const rt::Kernel *whole = config.causal ? kernels.fwdCausal : kernels.fwd;
      rt::Problem wp{config.b, m.hq, m.hk, seq, seq, m.d, m.dv};
      auto bytesOf = [&](const Full &f) {
        std::vector<unsigned char> out(f.data.size() * rt::dtypeSize(dt));
        for (size_t e = 0; e < f.data.size(); ++e)
          store(f.data[e], &out[e * rt::dtypeSize(dt)], dt);
        return out;
      };
      std::vector<unsigned char> qb = bytesOf(q), kb = bytesOf(k),
                                 vb = bytesOf(v);
      std::vector<unsigned char> ob(wp.oElements() * rt::dtypeSize(dt));
      std::vector<float> lb(wp.lseElements());
      rt::ForwardArgs wa;
      wa.q = qb.data();
      wa.k = kb.data();
      wa.v = vb.data();
      wa.o = ob.data();
      wa.lse = lb.data();
      rt::Status ran1 = whole->runHost(wp, wa);
      if (!ran1.ok())
        fail("single-device attention: " + ran1.message());
      ref.o.resize(wp.oElements());
      for (size_t e = 0; e < ref.o.size(); ++e)
        ref.o[e] = toFloat(&ob[e * rt::dtypeSize(dt)], dt);
      ref.lse.assign(lb.begin(), lb.end());
      if (config.backward) {
        // The backward bundle on the whole sequence, from the one-device
        // forward's o and lse (magnitudes 0: a plain relative error).
        const rt::Kernel *wholeB =
            config.causal ? kernels.bwdCausal : kernels.bwd;
        std::vector<unsigned char> dOb = bytesOf(dO);
        std::vector<unsigned char> dqb(qb.size()), dkb(kb.size()),
            dvb(vb.size());
        rt::BackwardArgs wb;
        wb.q = qb.data();
        wb.k = kb.data();
        wb.v = vb.data();
        wb.o = ob.data();
        wb.lse = lb.data();
        wb.dO = dOb.data();
        wb.dq = dqb.data();
        wb.dk = dkb.data();
        wb.dv = dvb.data();
        rt::Status ranB = wholeB->runBackwardHost(wp, wb);
        if (!ranB.ok())
          fail("single-device backward: " + ranB.message());
        auto widen = [&](const std::vector<unsigned char> &bytes,
                         std::vector<double> *to, std::vector<double> *mag) {
          size_t count = bytes.size() / rt::dtypeSize(dt);
          to->resize(count);
          for (size_t e = 0; e < count; ++e)
            (*to)[e] = toFloat(&bytes[e * rt::dtypeSize(dt)], dt);
          mag->assign(count, 0.0);
        };
        widen(dqb, &refB.dq, &refB.dqMagnitude);
        widen(dkb, &refB.dk, &refB.dkMagnitude);
        widen(dvb, &refB.dv, &refB.dvMagnitude);
      }
      std::printf("ring: checked against bundle '%s' on the whole sequence "
                  "on one device\n",
                  whole->name().c_str());
    } else if (!rt::referenceForward(cfg, qd, kd, vd, &ref, &err)) {
      fail(err);
    }
    std::printf("ring: %d ranks (%s), %s, B=%lld Hq=%lld Hk=%lld S=%lld "
                "D=%lld Dv=%lld, %s%s, chunk %lld\n",
                t.size(),
                (nccl ? nccl->description() : t.description()).c_str(),
                rt::toString(dt), static_cast<long long>(config.b),
                static_cast<long long>(m.hq), static_cast<long long>(m.hk),
                static_cast<long long>(seq), static_cast<long long>(m.d),
                static_cast<long long>(m.dv), config.causal ? "causal" : "full",
                config.zigzag ? ", zigzag" : "", static_cast<long long>(c));
    std::vector<std::string> reasons;
    validation::judgeOutputs(m.hq, seq, dt, o, lse, ref, &reasons);
    if (config.backward) {
      if (check == "reference") {
        std::vector<double> dOd(dO.data.begin(), dO.data.end());
        // Dsum from the o the ring's backward used (its forward's, rounded
        // to the dtype), as fmha-run does.
        std::vector<double> givenO(o.begin(), o.end());
        if (!rt::referenceBackward(cfg, qd, kd, vd, dOd, &refB, &err, &givenO))
          fail(err);
      }
      validation::judgeGradient("dq", dq, refB.dq, refB.dqMagnitude, dt,
                                &reasons);
      validation::judgeGradient("dk", dk, refB.dk, refB.dkMagnitude, dt,
                                &reasons);
      validation::judgeGradient("dv", dv, refB.dv, refB.dvMagnitude, dt,
                                &reasons);
    }
    return validation::printVerdict(
               reasons, dt,
               config.backward
                   ? "rel_err <= %g for o, dq, dk, dv; |lse-ref| <= "
                     "%g*(1+|ref|)"
                   : "rel_err <= %g, |lse-ref| <= %g*(1+|ref|)")
               ? 0
               : 1;
  }();
}

} // namespace

int main(int argc, char **argv) {
  rt::Expected<std::unique_ptr<Transport>> created =
      createMpiTransport(&argc, &argv);
  if (!created.ok()) {
    std::fprintf(stderr, "fmha-ring: error: %s\n", created.message().c_str());
    return 2;
  }
  std::unique_ptr<Transport> t = created.take();
  int status = 0;
  std::string message;
  try {
    status = run(*t, argc, argv);
  } catch (const ToolError &e) {
    status = 2;
    message = e.message;
  } catch (const std::bad_alloc &) {
    status = 2;
    message = "out of memory";
  }
  // Every rank ends with rank 0's verdict or the first error: all ranks
  // reach this gather (a rank failing inside the ring aborts the job).
  int mine[2] = {status, t->rank()};
  std::vector<int> all(2 * t->size());
  rt::Status gathered = t->allGather(mine, all.data(), sizeof(mine));
  if (!gathered.ok()) {
    std::fprintf(stderr, "fmha-ring: error: %s\n", gathered.message().c_str());
    return 2;
  }
  int final = all[0] < 0 ? 0 : all[0];
  for (int r = 0; r < t->size(); ++r)
    if (all[2 * r] == 2)
      final = 2;
  if (!message.empty()) {
    // Each rank meets the same bad input: rank 0 reports it, others only
    // what rank 0 did not see.
    if (t->rank() == 0 || all[0] != 2) {
      std::fflush(stdout);
      std::fprintf(stderr, "fmha-ring: error: %s%s\n",
                   t->rank() == 0
                       ? ""
                       : ("rank " + std::to_string(t->rank()) + ": ").c_str(),
                   message.c_str());
    }
  }
  std::fflush(stdout);
  return final;
}
