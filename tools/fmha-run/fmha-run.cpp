//===- fmha-run.cpp - Load a bundle, run, validate, benchmark -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Runs one attention problem through a bundle with the FMHA runtime, checks it
// against the float64 reference (--validate), times it (--bench), reads and
// writes .npy tensors (--load/--save) and draws the mask and the kv tiles the
// kernel visits (--show-mask). Links no MLIR: it runs wherever the runtime
// does.
//
// Exit status: 0 success, 1 --validate failed, 2 any error (bad option,
// missing file, bad bundle, mismatch with the bundle, launch failure).
//
//===----------------------------------------------------------------------===//

#include "RunOptions.h"
#include "Validation.h"

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Npy.h"
#include "fmha/Runtime/Random.h"
#include "fmha/Runtime/Reference.h"
#include "fmha/Runtime/Runtime.h"
#include "fmha/Support/MaskSpec.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::runopt;
using namespace fmha::validation;

namespace {

void printHelp() {
  std::printf(
      "OVERVIEW: run an FMHA bundle on one attention problem\n\n"
      "USAGE: fmha-run FILE -b N --sq N --sk N [options]\n"
      "       fmha-run --show-mask --mask SPEC --sq N --sk N "
      "[--block-m N --block-n N]\n\n"
      "Options take --flag=value or --flag value; one dash works too.\n"
      "The signature options (--hq --hk -d --dv --mask --dtype --scale "
      "--softcap)\ndefault to the bundle's and must match it when given.\n\n"
      "OPTIONS:\n");
  for (const OptionDef &o : kOptions) {
    std::string left = flagName(o.name);
    if (o.metavar)
      left += std::string(" ") + o.metavar;
    std::printf("  %-18s %s\n", left.c_str(), o.help);
  }
  std::printf(
      "\nInputs are standard normal values from a splitmix64 generator "
      "(--seed),\nrounded to the dtype; o and lse are set to NaN before "
      "every run.\n"
      "--validate prints max_abs_err, rel_err = ||o-ref||_2/||ref||_2 and\n"
      "lse_max_abs_err (over finite entries; -inf rows must match exactly, "
      "NaN fails).\nIt passes when rel_err <= 1e-5 (f32), 2e-3 (f16), 1e-2 "
      "(bf16) and every\n|lse-ref| <= t*(1+|ref|), t = 1e-4 (f32), 5e-3 "
      "(f16), 2e-2 (bf16).\n"
      "--bench counts FLOPs as 2*(D+Dv)*B*Hq*(visible (i,j) pairs): only "
      "pairs the\nmask leaves visible are counted. Each run is timed on its "
      "own (CUDA or HIP\nevents for GPU bundles, the wall clock on the "
      "host); small inputs rotate among\nup to 4 copies so that runs do "
      "not reuse one copy's cache lines.\n"
      "cuda bundles need the CUDA driver (libcuda.so.1, or the file in\n"
      "$FMHA_CUDA_LIBRARY) and run on $FMHA_CUDA_DEVICE (default 0).\n"
      "hip bundles need the HIP runtime (libamdhip64.so, .so.5, .so.6 or "
      ".so.7, or the\nfile in $FMHA_HIP_LIBRARY) and an AMD GPU, and run on "
      "$FMHA_HIP_DEVICE\n(default 0).\n"
      "Backward bundles (kind=bwd): dO is drawn after q, k, v from the same "
      "generator;\no and lse are the float64 reference forward's (o rounded "
      "to the dtype) unless\n--load DIR has o.npy and lse.npy, or --fwd FILE "
      "names a forward bundle to run\nfor them; dq, dk, dv are "
      "set to NaN before every run.\n--validate prints max_abs_err and "
      "rel_err for each of dq, dk, dv (the reference's Dsum takes the o\n"
      "given to the kernel) and passes when ||out-ref|| <= t (||ref|| + "
      "||mag|| / 10),\nt the rel_err bound above and mag the reference's "
      "sum of the magnitudes of\neach gradient's terms (a gradient whose "
      "terms cancel is exact only up to\ntheir rounding); a deterministic=1 "
      "bundle must also give the "
      "same bits on a\nsecond run. --grad-check compares <dx, u> for random "
      "unit u with central\nfinite differences of sum(o * dO) (the float64 "
      "forward), within the bound\ntimes max(||dx||, 1).\n"
      "--bench counts 2.5x the forward FLOPs. cuda and hip backward bundles "
      "(abi\ngpu-bwd-v1) launch their prep, dkdv and dq kernels on one "
      "stream with a\nworkspace the runtime keeps (dsum, and dqacc unless "
      "deterministic); the launch\nlines show the grids and the workspace "
      "size; every run (timed or not) is all\nthree kernels.\n"
      "Merge bundles (kind=merge): -b N --sq S; o1, o2 are drawn like q, lse1 "
      "and\nlse2 with standard deviation 4, and fixed rows are empty (lse "
      "-inf) in one or\nboth partials; --validate compares o and lse with "
      "the float64 merge at the\nforward's bounds.\n"
      "Accumulate bundles (kind=acc): -n N; acc (f32) and x (the dtype) "
      "standard normal;\nthe kernel runs on all N elements, then on the "
      "N-1 from element 1 (pointers\noff the vector alignment); "
      "--validate compares acc with the float64 sums\n(rel_err <= 1e-6: "
      "one f32 rounding an addition).\n"
      "Exit status: 0 ok, 1 validation failed, 2 error.\n");
}

//===----------------------------------------------------------------------===//
// Inputs and conversions
//===----------------------------------------------------------------------===//

float roundTo(float x, DType t) {
  switch (t) {
  case DType::F32:
    return x;
  case DType::F16:
    return roundToHalf(x);
  case DType::BF16:
    return roundToBFloat16(x);
  }
  return x;
}

/// The kernel's storage bytes for `values` (already representable).
std::vector<unsigned char> toStorage(const std::vector<float> &values,
                                     DType t) {
  std::vector<unsigned char> out(values.size() * dtypeSize(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[4 * i], &values[i], 4);
    } else {
      uint16_t h = t == DType::F16 ? floatToHalfBits(values[i])
                                   : floatToBFloat16Bits(values[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

std::vector<float> fromStorage(const std::vector<unsigned char> &bytes,
                               DType t) {
  size_t n = bytes.size() / dtypeSize(t);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i], &bytes[4 * i], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[2 * i], 2);
      out[i] = t == DType::F16 ? halfBitsToFloat(h) : bfloat16BitsToFloat(h);
    }
  }
  return out;
}

std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

//===----------------------------------------------------------------------===//
// --show-mask
//===----------------------------------------------------------------------===//

/// The largest Sq, Sk, block-m and block-n --show-mask takes (a bundle's
/// limit for tile sizes); the mask arithmetic stays far from overflow.
constexpr int64_t kMaxShowMaskSize = INT32_MAX;
/// --show-mask counts the visited tiles of at most this many (q tile, kv
/// tile) pairs; a larger grid would take minutes to hours.
constexpr int64_t kMaxCountedTiles = int64_t(1) << 26;

void showMask(const MaskSpec &mask, int64_t sq, int64_t sk, int64_t blockM,
              int64_t blockN) {
  const int64_t maxRows = 32, maxCols = 64, maxTiles = 128;
  int64_t rows = std::min(sq, maxRows), cols = std::min(sk, maxCols);
  std::printf("mask %s (Sq=%lld, Sk=%lld): rows 0..%lld, columns 0..%lld; "
              "1 visible, . hidden\n",
              mask.str().c_str(), static_cast<long long>(sq),
              static_cast<long long>(sk), static_cast<long long>(rows - 1),
              static_cast<long long>(cols - 1));
  for (int64_t i = 0; i < rows; ++i) {
    std::string line;
    for (int64_t j = 0; j < cols; ++j)
      line += mask.visible(i, j, sq, sk) ? '1' : '.';
    std::printf("%s\n", line.c_str());
  }
  int64_t numQ = (sq + blockM - 1) / blockM, numKv = (sk + blockN - 1) / blockN;
  std::printf("kv tiles (block_m=%lld, block_n=%lld): %lld q tiles x %lld kv "
              "tiles; F full, P partial (element mask), . skipped\n",
              static_cast<long long>(blockM), static_cast<long long>(blockN),
              static_cast<long long>(numQ), static_cast<long long>(numKv));
  int64_t full = 0, partial = 0;
  const bool count = numQ <= kMaxCountedTiles / numKv;
  for (int64_t qt = 0; qt < (count ? numQ : std::min(numQ, maxTiles)); ++qt) {
    // Count over the visited ranges only; draw the first tiles.
    KvTileBounds b = kvTileBounds(mask, qt * blockM, blockM, blockN, sq, sk);
    auto countRange = [&](int64_t lo, int64_t hi) {
      for (int64_t kt = lo; kt < hi; ++kt)
        (classifyTile(mask, qt, kt, blockM, blockN, sq, sk) == TileVisit::Full
             ? full
             : partial)++;
    };
    if (count) {
      countRange(0, b.sinkEnd);
      countRange(b.begin, b.end);
    }
    if (qt >= maxTiles)
      continue;
    std::string line;
    for (int64_t kt = 0; kt < std::min(numKv, maxTiles); ++kt) {
      TileVisit v = classifyTile(mask, qt, kt, blockM, blockN, sq, sk);
      line += v == TileVisit::Full ? 'F' : v == TileVisit::Partial ? 'P' : '.';
    }
    if (numKv > maxTiles)
      line += " ...";
    std::printf("q tile %4lld: %s\n", static_cast<long long>(qt), line.c_str());
  }
  if (numQ > maxTiles)
    std::printf("... (%lld more q tiles)\n",
                static_cast<long long>(numQ - maxTiles));
  double total = static_cast<double>(numQ) * static_cast<double>(numKv);
  if (!count) {
    std::printf("visited tiles not counted: %.0f tiles are more than the "
                "%lld --show-mask counts\n",
                total, static_cast<long long>(kMaxCountedTiles));
    return;
  }
  std::printf("visited %lld of %.0f tiles (%lld full, %lld partial, %.0f "
              "skipped)\n",
              static_cast<long long>(full + partial), total,
              static_cast<long long>(full), static_cast<long long>(partial),
              total - static_cast<double>(full + partial));
}

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

/// Prints the errors and PASS/FAIL; returns whether it passed.
bool validate(const Problem &p, const Signature &sig,
              const std::vector<float> &q, const std::vector<float> &k,
              const std::vector<float> &v, const std::vector<float> &o,
              const std::vector<float> &lse) {
  ReferenceForward ref;
  std::string err;
  if (!referenceForward(referenceConfig(p, sig), toDouble(q), toDouble(k),
                        toDouble(v), &ref, &err))
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
/// run changed.
bool validateBackward(const Problem &p, const Signature &sig,
                      const std::vector<float> &q, const std::vector<float> &k,
                      const std::vector<float> &v, const std::vector<float> &o,
                      const std::vector<float> &dO,
                      const std::vector<float> &dq,
                      const std::vector<float> &dk,
                      const std::vector<float> &dv,
                      const std::optional<std::string> &changedOnRerun) {
  ReferenceBackward ref;
  std::string err;
  const std::vector<double> givenO = toDouble(o);
  if (!referenceBackward(referenceConfig(p, sig), toDouble(q), toDouble(k),
                         toDouble(v), toDouble(dO), &ref, &err, &givenO))
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
  if (changedOnRerun) {
    if (changedOnRerun->empty())
      std::printf("deterministic: a second run gave bit-identical dq, dk, "
                  "dv\n");
    else
      reasons.push_back("deterministic=1 but a second run changed " +
                        *changedOnRerun);
  }
  return printVerdict(reasons, sig.dtype, "rel_err <= %g for dq, dk, dv");
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
bool gradCheck(const Problem &p, const Signature &sig,
               const std::vector<float> &q, const std::vector<float> &k,
               const std::vector<float> &v, const std::vector<float> &o,
               const std::vector<float> &dO, const std::vector<float> &dq,
               const std::vector<float> &dk, const std::vector<float> &dv,
               uint64_t seed) {
  ReferenceConfig cfg = referenceConfig(p, sig);
  std::vector<double> x[3] = {toDouble(q), toDouble(k), toDouble(v)};
  const std::vector<double> dOut = toDouble(dO);
  ReferenceBackward given, exact;
  {
    std::string err;
    const std::vector<double> givenO = toDouble(o);
    if (!referenceBackward(cfg, x[0], x[1], x[2], dOut, &given, &err,
                           &givenO) ||
        !referenceBackward(cfg, x[0], x[1], x[2], dOut, &exact, &err))
      fail(err);
  }
  const std::vector<double> *givenGrads[3] = {&given.dq, &given.dk, &given.dv};
  const std::vector<double> *exactGrads[3] = {&exact.dq, &exact.dk, &exact.dv};
  auto loss = [&]() {
    ReferenceForward fwd;
    std::string err;
    if (!referenceForward(cfg, x[0], x[1], x[2], &fwd, &err))
      fail(err);
    double sum = 0.0;
    for (size_t i = 0; i < fwd.o.size(); ++i)
      sum += fwd.o[i] * dOut[i];
    return sum;
  };
  const double tol = toleranceFor(sig.dtype).rel;
  const std::vector<float> *grads[3] = {&dq, &dk, &dv};
  const char *names[3] = {"dq", "dk", "dv"};
  std::vector<std::string> reasons;
  for (int t = 0; t < 3; ++t) {
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

//===----------------------------------------------------------------------===//
// Main flow
//===----------------------------------------------------------------------===//

std::string joinPath(const std::string &dir, const char *file) {
  return (std::filesystem::path(dir) / file).string();
}

NpyArray loadInput(const std::string &dir, const char *file) {
  NpyArray a;
  std::string err;
  if (!readNpy(joinPath(dir, file), &a, &err))
    fail(err);
  if (a.shape.size() != 4)
    fail("npy '" + joinPath(dir, file) +
         "': expected a 4-d BHSD array, got "
         "shape " +
         formatShape(a.shape));
  return a;
}

void check(const Status &s) {
  if (!s.ok())
    fail(s.message());
}

/// The inputs, rounded to the dtype; dO is empty for a forward bundle.
struct Inputs {
  const std::vector<float> &q, &k, &v, &dO;
};

/// --warmup and --iters.
struct BenchCounts {
  int64_t warmup, iters;
};

/// Buffers on the kernel's backend.
class Device {
public:
  explicit Device(Backend &backend) : backend_(backend) {}
  DeviceBuffer upload(const std::vector<unsigned char> &bytes) {
    DeviceBuffer buf = allocate(bytes.size());
    check(backend_.copyToDevice(buf.get(), bytes.data(), bytes.size()));
    return buf;
  }
  DeviceBuffer allocate(size_t bytes) {
    Expected<DeviceBuffer> buf = DeviceBuffer::allocate(backend_, bytes);
    if (!buf.ok())
      fail(buf.message());
    return buf.take();
  }
  std::vector<unsigned char> download(const DeviceBuffer &buf) {
    std::vector<unsigned char> bytes(buf.size());
    check(backend_.copyToHost(bytes.data(), buf.get(), buf.size()));
    return bytes;
  }
  /// 0xFF bytes are NaN in f32, f16 and bf16: an element the kernel leaves
  /// unwritten shows.
  void poison(const DeviceBuffer &buf) {
    check(backend_.fill(buf.get(), 0xFF, buf.size(), nullptr));
  }

private:
  Backend &backend_;
};

/// The launch line of a GPU bundle (empty for cpu).
/// A forward problem's buffers on the device: q, k, v uploaded, room for o
/// and lse, and the kernel arguments that point at them.
/// --layout: how the attention tensors lie in memory. BSHD stores the
/// logical [B, H, S, D] tensor as [B, S, H, D] and passes its strides.
struct MemoryLayout {
  bool bshd = false;

  /// `x` (logical BHSD, row-major) in memory order.
  std::vector<float> toMemory(const std::vector<float> &x, int64_t b, int64_t h,
                              int64_t s, int64_t d) const {
    return bshd ? permute(x, b, h, s, d, /*toBshd=*/true) : x;
  }
  /// Memory order back to logical BHSD.
  std::vector<float> fromMemory(const std::vector<float> &x, int64_t b,
                                int64_t h, int64_t s, int64_t d) const {
    return bshd ? permute(x, b, h, s, d, /*toBshd=*/false) : x;
  }
  /// The strides (elements) of a logical [B, H, S, D] tensor; empty for
  /// contiguous BHSD.
  std::vector<int64_t> strides(int64_t h, int64_t s, int64_t d) const {
    if (!bshd)
      return {};
    return {s * h * d, d, h * d, 1};
  }

private:
  static std::vector<float> permute(const std::vector<float> &x, int64_t b,
                                    int64_t h, int64_t s, int64_t d,
                                    bool toBshd) {
    std::vector<float> y(x.size());
    for (int64_t ib = 0; ib < b; ++ib)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t is = 0; is < s; ++is) {
          const int64_t bhsd = ((ib * h + ih) * s + is) * d;
          const int64_t bshd = ((ib * s + is) * h + ih) * d;
          std::copy_n(&x[toBshd ? bhsd : bshd], d, &y[toBshd ? bshd : bhsd]);
        }
    return y;
  }
};
MemoryLayout gLayout;

/// The storage bytes of q, k and v in gLayout's memory order.
struct InputBytes {
  std::vector<unsigned char> q, k, v;
};
InputBytes inputBytes(const Problem &p, const Signature &sig,
                      const Inputs &in) {
  const MemoryLayout &L = gLayout;
  return {toStorage(L.toMemory(in.q, p.b, p.hq, p.sq, p.d), sig.dtype),
          toStorage(L.toMemory(in.k, p.b, p.hk, p.sk, p.d), sig.dtype),
          toStorage(L.toMemory(in.v, p.b, p.hk, p.sk, p.dv), sig.dtype)};
}

/// The forward of `p` on `args` in gLayout's memory order.
Status launchForward(const Kernel &kernel, const Problem &p,
                     const ForwardArgs &args) {
  if (!gLayout.bshd)
    return kernel.run(p, args);
  LaunchArgs la = Kernel::sizesOf(p);
  la.tensor("q", args.q, gLayout.strides(p.hq, p.sq, p.d))
      .tensor("k", args.k, gLayout.strides(p.hk, p.sk, p.d))
      .tensor("v", args.v, gLayout.strides(p.hk, p.sk, p.dv))
      .tensor("o", args.o, gLayout.strides(p.hq, p.sq, p.dv));
  if (args.lse)
    la.tensor("lse", args.lse);
  return kernel.launch(la);
}

/// The backward of `p` on `args` in gLayout's memory order.
Status launchBackward(const Kernel &kernel, const Problem &p,
                      const BackwardArgs &args) {
  if (!gLayout.bshd)
    return kernel.runBackward(p, args);
  LaunchArgs la = Kernel::sizesOf(p);
  auto q = gLayout.strides(p.hq, p.sq, p.d),
       k = gLayout.strides(p.hk, p.sk, p.d),
       v = gLayout.strides(p.hk, p.sk, p.dv),
       o = gLayout.strides(p.hq, p.sq, p.dv);
  la.tensor("q", args.q, q)
      .tensor("k", args.k, k)
      .tensor("v", args.v, v)
      .tensor("o", args.o, o)
      .tensor("lse", args.lse)
      .tensor("dO", args.dO, o)
      .tensor("dq", args.dq, q)
      .tensor("dk", args.dk, k)
      .tensor("dv", args.dv, v);
  return kernel.launch(la);
}

struct ForwardBuffers {
  ForwardBuffers(Device &dev, const Problem &p, DType dtype,
                 const std::vector<unsigned char> &qBytes,
                 const std::vector<unsigned char> &kBytes,
                 const std::vector<unsigned char> &vBytes)
      : q(dev.upload(qBytes)), k(dev.upload(kBytes)), v(dev.upload(vBytes)),
        o(dev.allocate(static_cast<size_t>(p.oElements()) * dtypeSize(dtype))),
        lse(dev.allocate(static_cast<size_t>(p.lseElements()) *
                         sizeof(float))) {
    args.q = q.get();
    args.k = k.get();
    args.v = v.get();
    args.o = o.get();
    args.lse = static_cast<float *>(lse.get());
  }
  DeviceBuffer q, k, v, o, lse;
  ForwardArgs args;
};

/// The launches of a GPU bundle for `sizes` (every grid checked against
/// the device), or nullopt for a cpu bundle.
std::optional<LaunchPlan> launchFor(const Kernel &kernel,
                                    const LaunchArgs &sizes) {
  if (kernel.meta().target == Target::Cpu)
    return std::nullopt;
  Expected<LaunchPlan> plan = kernel.plan(sizes);
  check(plan.status());
  return *plan;
}

/// Wall-clock time of one run from poisoned outputs.
double timeFirstRun(Backend &backend, const std::function<void()> &poison,
                    const std::function<Status()> &launch) {
  poison();
  check(backend.synchronize(nullptr));
  auto t0 = std::chrono::steady_clock::now();
  check(launch());
  check(backend.synchronize(nullptr));
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

/// Prints a line per launch of `plan` and its workspace.
void printLaunches(const Kernel &kernel, const LaunchPlan &plan,
                   size_t workspaceBytes) {
  const Manifest &m = kernel.meta().manifest;
  for (const PlannedLaunch &launch : plan.launches) {
    const LaunchDims &d = launch.dims;
    std::printf(
        "launch %s grid=(%lld,%lld,%lld) block=(%lld,%lld,%lld) "
        "shared_bytes=%lld\n",
        m.kernels[launch.kernel].symbol.c_str(),
        static_cast<long long>(d.grid[0]), static_cast<long long>(d.grid[1]),
        static_cast<long long>(d.grid[2]), static_cast<long long>(d.block[0]),
        static_cast<long long>(d.block[1]), static_cast<long long>(d.block[2]),
        static_cast<long long>(d.sharedBytes));
  }
  if (!m.workspaces.empty()) {
    std::string names;
    for (const ManifestWorkspace &w : m.workspaces)
      names += (names.empty() ? "" : ", ") + w.name;
    std::printf("workspace %zu bytes (%s)\n", workspaceBytes, names.c_str());
  }
}

void printRunHeader(const Kernel &kernel, const Signature &sig,
                    const std::optional<LaunchPlan> &launch, const Problem &p,
                    double firstMs) {
  const BundleMeta &m = kernel.meta();
  std::string kind =
      m.kind == KernelKind::Backward
          ? std::string(", bwd") + (m.deterministic ? ", deterministic" : "")
          : "";
  std::printf("kernel %s (%s, %s%s, mask=%s, scale=%s, softcap=%s, block "
              "%lldx%lld)\n",
              m.kernel.c_str(), kernel.backend().description().c_str(),
              toString(sig.dtype), kind.c_str(), sig.mask.str().c_str(),
              formatReal(sig.scale).c_str(), formatReal(sig.softcap).c_str(),
              static_cast<long long>(sig.blockM),
              static_cast<long long>(sig.blockN));
  if (launch) {
    Expected<size_t> bytes = kernel.workspaceBytes(Kernel::sizesOf(p));
    check(bytes.status());
    printLaunches(kernel, *launch, *bytes);
  }
  std::printf("problem B=%lld Hq=%lld Hk=%lld Sq=%lld Sk=%lld D=%lld "
              "Dv=%lld: first run %.3f ms\n",
              static_cast<long long>(p.b), static_cast<long long>(p.hq),
              static_cast<long long>(p.hk), static_cast<long long>(p.sq),
              static_cast<long long>(p.sk), static_cast<long long>(p.d),
              static_cast<long long>(p.dv), firstMs);
}

struct SavedTensor {
  const char *file;
  std::vector<int64_t> shape;
  const std::vector<float> *data;
};

void saveTensors(const std::string &dir,
                 const std::vector<SavedTensor> &tensors) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    fail("--save: cannot create directory '" + dir + "': " + ec.message());
  std::string names;
  for (const SavedTensor &t : tensors) {
    std::string err;
    if (!writeNpy(joinPath(dir, t.file), t.shape, t.data->data(), &err))
      fail(err);
    names += (names.empty() ? "" : " ") + std::string(t.file);
  }
  std::printf("saved %s to %s\n", names.c_str(), dir.c_str());
}

/// How many copies of the inputs --bench rotates among: up to 4, at most
/// 256 MiB of inputs in all.
size_t rotationCopies(size_t inputBytes) {
  const size_t kRotationBudget = size_t(256) << 20;
  return std::max<size_t>(
      1,
      std::min<size_t>(4, kRotationBudget / std::max<size_t>(inputBytes, 1)));
}

/// --bench: `warmup` untimed runs, then `iters` timed ones; run i uses input
/// copy i % copies. poison() precedes every run, outside its timed span.
/// Prints the bench line with `flops` per run.
void bench(Backend &backend, BenchCounts counts, size_t copies, double flops,
           const char *note, const std::function<void()> &poison,
           const std::function<Status(size_t)> &launch) {
  const int64_t warmup = counts.warmup, iters = counts.iters;
  for (int64_t i = 0; i < warmup; ++i) {
    poison();
    check(launch(static_cast<size_t>(i) % copies));
  }
  // One timer a run, all queued before any is read, so that the device
  // never waits for the host between runs.
  std::vector<std::unique_ptr<StreamTimer>> timers;
  for (int64_t i = 0; i < iters; ++i) {
    Expected<std::unique_ptr<StreamTimer>> t = backend.createTimer();
    if (!t.ok())
      fail(t.message());
    timers.push_back(t.take());
  }
  for (int64_t i = 0; i < iters; ++i) {
    poison();
    check(timers[i]->start(nullptr));
    check(launch(static_cast<size_t>(i) % copies));
    check(timers[i]->stop(nullptr));
  }
  std::vector<double> times;
  for (auto &t : timers) {
    Expected<double> ms = t->elapsedMs();
    if (!ms.ok())
      fail(ms.message());
    times.push_back(*ms);
  }
  check(backend.synchronize(nullptr));
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  double median =
      n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  double gflops = median > 0 ? flops / (median * 1e6) : 0.0;
  std::printf("bench: iters=%lld warmup=%lld median_ms=%.4f min_ms=%.4f "
              "GFLOP/s=%.2f TFLOP/s=%.3f input_copies=%zu (%s)\n",
              static_cast<long long>(iters), static_cast<long long>(warmup),
              median, times.front(), gflops, gflops / 1e3, copies, note);
}

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
  ForwardBuffers bufs(dev, p, sig.dtype, qBytes, kBytes, vBytes);
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
      fromStorage(dev.download(oBuf), sig.dtype), p.b, p.hq, p.sq, p.dv);
  std::vector<float> lse(p.lseElements());
  check(backend.copyToHost(lse.data(), lseBuf.get(), lseBuf.size()));

  printRunHeader(kernel, sig, launch, p, firstMs);

  bool passed = true;
  if (cl.flag("validate"))
    passed = validate(p, sig, in.q, in.k, in.v, o, lse);

  if (std::optional<std::string> dir = cl.str("save"))
    saveTensors(*dir, {{"q.npy", {p.b, p.hq, p.sq, p.d}, &in.q},
                       {"k.npy", {p.b, p.hk, p.sk, p.d}, &in.k},
                       {"v.npy", {p.b, p.hk, p.sk, p.dv}, &in.v},
                       {"o.npy", {p.b, p.hq, p.sq, p.dv}, &o},
                       {"lse.npy", {p.b, p.hq, p.sq}, &lse}});

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
    bench(backend, counts, copies, forwardFlops(p, sig.mask),
          "visible pairs only", poison,
          [&](size_t c) { return launchForward(kernel, p, argSets[c]); });
  }
  return passed ? 0 : 1;
}

/// Why the forward bundle `f` cannot give the o and lse of the backward
/// bundle `b`'s problem, or "" when it can.
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
  return "";
}

/// o (rounded to the dtype's values) and lse of `fwd`, a forward bundle,
/// run once on the inputs.
void runForwardFor(Kernel &fwd, const Problem &p, const Signature &sig,
                   const Inputs &in, std::vector<float> *o,
                   std::vector<float> *lse) {
  Backend &backend = fwd.backend();
  Device dev(backend);
  const MemoryLayout &L = gLayout;
  InputBytes bytes = inputBytes(p, sig, in);
  ForwardBuffers bufs(dev, p, sig.dtype, bytes.q, bytes.k, bytes.v);
  check(launchForward(fwd, p, bufs.args));
  *o = L.fromMemory(fromStorage(dev.download(bufs.o), sig.dtype), p.b, p.hq,
                    p.sq, p.dv);
  lse->assign(p.lseElements(), 0.0f);
  check(backend.copyToHost(lse->data(), bufs.lse.get(), bufs.lse.size()));
  std::printf("o and lse from forward bundle '%s'\n", fwd.name().c_str());
}

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
    if (!referenceForward(referenceConfig(p, sig), toDouble(in.q),
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
    return a;
  };
  // Every run starts from NaN in dq, dk and dv.
  auto poison = [&]() {
    dev.poison(dqBuf);
    dev.poison(dkBuf);
    dev.poison(dvBuf);
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
                   {"dv", &dvBytes, &dvBuf}};
      for (const Pair &pr : pairs)
        if (dev.download(*pr.buf) != *pr.first)
          *changed += (changed->empty() ? "" : ", ") + std::string(pr.name);
    }
    passed = validateBackward(p, sig, in.q, in.k, in.v, o, in.dO, dq, dk, dv,
                              changed);
  }

  if (cl.flag("grad-check"))
    passed = gradCheck(p, sig, in.q, in.k, in.v, o, in.dO, dq, dk, dv,
                       cl.unsignedInteger("seed").value_or(0)) &&
             passed;

  if (std::optional<std::string> dir = cl.str("save"))
    saveTensors(*dir, {{"q.npy", {p.b, p.hq, p.sq, p.d}, &in.q},
                       {"k.npy", {p.b, p.hk, p.sk, p.d}, &in.k},
                       {"v.npy", {p.b, p.hk, p.sk, p.dv}, &in.v},
                       {"do.npy", {p.b, p.hq, p.sq, p.dv}, &in.dO},
                       {"o.npy", {p.b, p.hq, p.sq, p.dv}, &o},
                       {"lse.npy", {p.b, p.hq, p.sq}, &lse},
                       {"dq.npy", {p.b, p.hq, p.sq, p.d}, &dq},
                       {"dk.npy", {p.b, p.hk, p.sk, p.d}, &dk},
                       {"dv.npy", {p.b, p.hk, p.sk, p.dv}, &dv}});

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

/// The partials of a merge: o1, o2 standard normal, lse1, lse2 normal with
/// standard deviation 4 (weights far from equal), and empty partials (lse
/// -inf) on a fixed pattern of rows: lse1 on rows r % 7 == 3, lse2 on rows
/// r % 5 == 1, both on rows r % 11 == 4 (and wherever the two patterns
/// meet). An empty partial's o stays random: the kernel must not read it
/// into the sum.
struct MergeInputs {
  std::vector<float> o1, lse1, o2, lse2;
};

MergeInputs mergeInputs(const MergeProblem &p, DType dtype, uint64_t seed) {
  Normal rng(seed);
  MergeInputs in;
  in.o1.resize(p.oElements());
  in.o2.resize(p.oElements());
  in.lse1.resize(p.lseElements());
  in.lse2.resize(p.lseElements());
  for (std::vector<float> *t : {&in.o1, &in.o2})
    for (float &x : *t)
      x = roundTo(static_cast<float>(rng.next()), dtype);
  for (std::vector<float> *t : {&in.lse1, &in.lse2})
    for (float &x : *t)
      x = static_cast<float>(4.0 * rng.next());
  const float negInf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < p.lseElements(); ++r) {
    if (r % 7 == 3 || r % 11 == 4)
      in.lse1[r] = negInf;
    if (r % 5 == 1 || r % 11 == 4)
      in.lse2[r] = negInf;
  }
  return in;
}

/// A kind=merge bundle: -b N --sq S (S rows per head); --validate against
/// referenceMerge, --bench.
int runMergeKernel(const CommandLine &cl, Kernel &kernel, const MergeProblem &p,
                   const Signature &sig, uint64_t seed, BenchCounts counts) {
  Backend &backend = kernel.backend();
  Device dev(backend);
  MergeInputs in = mergeInputs(p, sig.dtype, seed);
  DeviceBuffer o1 = dev.upload(toStorage(in.o1, sig.dtype));
  DeviceBuffer o2 = dev.upload(toStorage(in.o2, sig.dtype));
  auto floats = [](const std::vector<float> &v) {
    std::vector<unsigned char> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
  };
  DeviceBuffer lse1 = dev.upload(floats(in.lse1));
  DeviceBuffer lse2 = dev.upload(floats(in.lse2));
  DeviceBuffer oBuf =
      dev.allocate(static_cast<size_t>(p.oElements()) * dtypeSize(sig.dtype));
  DeviceBuffer lseBuf =
      dev.allocate(static_cast<size_t>(p.lseElements()) * sizeof(float));
  MergeArgs args;
  args.o1 = o1.get();
  args.lse1 = static_cast<const float *>(lse1.get());
  args.o2 = o2.get();
  args.lse2 = static_cast<const float *>(lse2.get());
  args.o = oBuf.get();
  args.lse = static_cast<float *>(lseBuf.get());
  auto poison = [&]() {
    dev.poison(oBuf);
    dev.poison(lseBuf);
  };
  double firstMs =
      timeFirstRun(backend, poison, [&] { return kernel.runMerge(p, args); });
  std::vector<float> o = fromStorage(dev.download(oBuf), sig.dtype);
  std::vector<float> lse(p.lseElements());
  check(backend.copyToHost(lse.data(), lseBuf.get(), lseBuf.size()));
  std::printf("kernel %s (%s, %s, merge)\n", kernel.meta().kernel.c_str(),
              backend.description().c_str(), toString(sig.dtype));
  std::printf("merge B=%lld H=%lld S=%lld Dv=%lld: first run %.3f ms\n",
              static_cast<long long>(p.b), static_cast<long long>(p.h),
              static_cast<long long>(p.s), static_cast<long long>(p.dv),
              firstMs);
  bool passed = true;
  if (cl.flag("validate")) {
    ReferenceForward ref;
    std::string err;
    if (!referenceMerge(p.lseElements(), p.dv, toDouble(in.o1),
                        toDouble(in.lse1), toDouble(in.o2), toDouble(in.lse2),
                        &ref, &err))
      fail(err);
    std::vector<std::string> reasons;
    judgeOutputs(p.h, p.s, sig.dtype, o, lse, ref, &reasons);
    passed = printVerdict(reasons, sig.dtype,
                          "rel_err <= %g, |lse-ref| <= %g*(1+|ref|)");
  }
  if (cl.flag("bench"))
    bench(backend, counts, 1, 0.0, "merge: no FLOPs counted", poison,
          [&](size_t) { return kernel.runMerge(p, args); });
  return passed ? 0 : 1;
}

/// A kind=acc bundle: -n N. acc += x over all N elements, then over the
/// N - 1 from element 1 (misaligned for the vector path); --validate against
/// the float64 sums, --bench.
int runAccumulateKernel(const CommandLine &cl, Kernel &kernel, int64_t n,
                        DType dtype, uint64_t seed, BenchCounts counts) {
  Backend &backend = kernel.backend();
  Device dev(backend);
  Normal rng(seed);
  std::vector<float> acc0(n), x(n);
  for (float &a : acc0)
    a = static_cast<float>(rng.next());
  for (float &v : x)
    v = roundTo(static_cast<float>(rng.next()), dtype);
  std::vector<unsigned char> accBytes(n * sizeof(float));
  std::memcpy(accBytes.data(), acc0.data(), accBytes.size());
  DeviceBuffer xBuf = dev.upload(toStorage(x, dtype));
  DeviceBuffer accBuf = dev.upload(accBytes);
  const size_t elt = dtypeSize(dtype);
  AccumulateArgs all, tail;
  all.x = xBuf.get();
  all.acc = static_cast<float *>(accBuf.get());
  tail.x = static_cast<const unsigned char *>(xBuf.get()) + elt;
  tail.acc = all.acc + 1;
  double firstMs = timeFirstRun(
      backend, [] {}, [&] { return kernel.runAccumulate(n, all); });
  check(kernel.runAccumulate(n - 1, tail));
  check(backend.synchronize(nullptr));
  std::vector<float> got(n);
  check(backend.copyToHost(got.data(), accBuf.get(), accBuf.size()));
  std::printf("kernel %s (%s, %s, acc)\n", kernel.meta().kernel.c_str(),
              backend.description().c_str(), toString(dtype));
  std::printf("accumulate n=%lld: first run %.3f ms\n",
              static_cast<long long>(n), firstMs);
  bool passed = true;
  if (cl.flag("validate")) {
    std::vector<double> ref(n);
    for (int64_t i = 0; i < n; ++i)
      ref[i] = double(acc0[i]) + double(x[i]) + (i > 0 ? double(x[i]) : 0.0);
    TensorErrors e = compareTensor(got, ref);
    std::printf("acc: max_abs_err=%.3g rel_err=%.3g\n", e.maxAbs, e.rel);
    std::vector<std::string> reasons;
    if (e.nan)
      reasons.push_back("acc has " + std::to_string(e.nan) + " NaN");
    else if (!(e.rel <= 1e-6))
      reasons.push_back("acc rel_err " + std::to_string(e.rel) + " > 1e-6");
    passed = printVerdict(reasons, dtype, "acc rel_err <= 1e-6");
  }
  if (cl.flag("bench"))
    bench(
        backend, counts, 1, 0.0, "accumulate: no FLOPs counted", [] {},
        [&](size_t) { return kernel.runAccumulate(n, all); });
  return passed ? 0 : 1;
}

/// --inputs stress: reshapes the standard normal q and k so that the online
/// softmax's running row max moves a lot. By kv head g (and the q heads of
/// its group), g mod 4:
///   0: the scores rise along the keys, by about 0.008 sqrt(D) per key in
///      base 2 (2.9 per 32 keys at D = 128): the max moves past the lazy
///      rescaling's slack of 8 every few kv tiles and is stale in between;
///   1: the same ramp falling along the keys (the max is set at the start);
///   2: q and k times 3 (scores of a few tens, jumps both ways);
///   3: unchanged.
/// With the default scale 1/sqrt(D); other scales shift the slopes.
void stressInputs(const Problem &p, std::vector<float> &q,
                  std::vector<float> &k) {
  const int64_t group = p.hq / p.hk;
  const double step = 0.008 / 1.4426950408889634; // per key, per element
  for (int64_t bi = 0; bi < p.b; ++bi)
    for (int64_t h = 0; h < p.hq; ++h) {
      const int64_t kind = (h / group) % 4;
      float *x = &q[((bi * p.hq + h) * p.sq) * p.d];
      for (int64_t i = 0; i < p.sq * p.d; ++i)
        x[i] = kind == 2 ? 3.0f * x[i] : kind < 2 ? 0.3f * x[i] + 1.0f : x[i];
    }
  for (int64_t bi = 0; bi < p.b; ++bi)
    for (int64_t g = 0; g < p.hk; ++g) {
      const int64_t kind = g % 4;
      float *x = &k[((bi * p.hk + g) * p.sk) * p.d];
      for (int64_t j = 0; j < p.sk; ++j)
        for (int64_t c = 0; c < p.d; ++c) {
          float &e = x[j * p.d + c];
          if (kind < 2)
            e = 0.3f * e +
                static_cast<float>(step * (kind == 0 ? j : p.sk - 1 - j));
          else if (kind == 2)
            e *= 3.0f;
        }
    }
}

int run(int argc, char **argv) {
  CommandLine cl;
  cl.parse(argc, argv);
  if (cl.flag("help")) {
    printHelp();
    return 0;
  }
  if (cl.flag("version")) {
    std::printf("fmha-run (FMHA) %s\n", versionString());
    return 0;
  }
  // Options used late are checked now, before anything runs.
  int64_t iters = cl.integer("iters", 1).value_or(20);
  int64_t warmup = cl.integer("warmup", 0).value_or(3);
  uint64_t seed = cl.unsignedInteger("seed").value_or(0);
  if (std::optional<int64_t> threads = cl.integer("threads", 1)) {
    if (*threads > kMaxHostThreads)
      fail("--threads takes 1 to " + std::to_string(kMaxHostThreads) +
           ", not " + std::to_string(*threads));
    Status set = setHostThreads(static_cast<int>(*threads));
    if (!set.ok())
      fail(set.message());
  }
  const std::string inputKind = cl.str("inputs").value_or("normal");
  if (inputKind != "normal" && inputKind != "stress")
    fail("--inputs takes normal or stress, not '" + inputKind + "'");
  if (cl.has("inputs") && cl.has("load"))
    fail("--inputs draws the inputs; --load reads them: give one of them");
  const std::string layout = cl.str("layout").value_or("bhsd");
  if (layout != "bhsd" && layout != "bshd")
    fail("--layout takes bhsd or bshd, not '" + layout + "'");
  gLayout.bshd = layout == "bshd";
  bool showMaskRequested = cl.flag("show-mask");
  bool runRequested = cl.flag("validate") || cl.flag("bench") ||
                      cl.flag("grad-check") || cl.has("save") ||
                      cl.has("load") || !showMaskRequested;

  // The signature: from the bundle, or (--show-mask without FILE) the flags.
  Signature sig;
  std::optional<BundleMeta> meta;
  if (cl.file()) {
    BundleMeta m;
    std::string binary, err;
    if (!readBundle(*cl.file(), &m, &binary, &err))
      fail(err);
    if (cl.flag("print-manifest")) {
      // The bundle as this runtime reads it, without its binary.
      std::string bytes;
      if (!serializeBundle(m, binary, &bytes, &err))
        fail(err);
      std::fwrite(bytes.data(), 1, bytes.size() - binary.size(), stdout);
      // FNV-1a of the binary: equal bundles of two versions show it.
      uint64_t hash = 0xcbf29ce484222325ull;
      for (unsigned char c : binary)
        hash = (hash ^ c) * 0x100000001b3ull;
      std::printf("bundle_version=%d\nbinary_fnv1a=%016llx\n", m.formatVersion,
                  static_cast<unsigned long long>(hash));
      return 0;
    }
    meta = m;
    sig = signatureFromBundle(cl, m);
  } else {
    if (runRequested)
      fail(showMaskRequested ? "no bundle FILE given (needed to run a kernel)"
                             : "no bundle FILE given; see --help");
    if (std::optional<std::string> m = cl.str("mask")) {
      std::string err;
      std::optional<MaskSpec> spec = MaskSpec::parse(*m, &err);
      if (!spec)
        fail("--mask: " + err);
      sig.mask = *spec;
    }
    sig.blockM = cl.integer("block-m", 1).value_or(64);
    sig.blockN = cl.integer("block-n", 1).value_or(64);
  }

  // Sizes: flags, else --load's files.
  std::optional<int64_t> b = cl.integer("b", 1), sq = cl.integer("sq", 1),
                         sk = cl.integer("sk", 1);
  NpyArray qIn, kIn, vIn;
  std::optional<std::string> loadDir = cl.str("load");
  if (loadDir) {
    qIn = loadInput(*loadDir, "q.npy");
    kIn = loadInput(*loadDir, "k.npy");
    vIn = loadInput(*loadDir, "v.npy");
    b = b.value_or(qIn.shape[0]);
    sq = sq.value_or(qIn.shape[2]);
    sk = sk.value_or(kIn.shape[2]);
  }
  if (showMaskRequested) {
    if (!sq || !sk)
      fail("--show-mask needs --sq and --sk");
    if (*sq > kMaxShowMaskSize || *sk > kMaxShowMaskSize ||
        sig.blockM > kMaxShowMaskSize || sig.blockN > kMaxShowMaskSize)
      fail("--show-mask takes --sq, --sk, --block-m and --block-n up to " +
           std::to_string(kMaxShowMaskSize));
    showMask(sig.mask, *sq, *sk, sig.blockM, sig.blockN);
    if (!runRequested)
      return 0;
  }
  if (meta->kind == KernelKind::Accumulate) {
    for (const char *flag : {"load", "save", "grad-check", "bwd", "fwd", "b",
                             "sq", "sk", "inputs"})
      if (cl.has(flag))
        fail(flagName(flag) + " does not apply to an accumulate bundle "
                              "(kind=acc; it takes -n)");
    std::optional<int64_t> n = cl.integer("n", 1);
    if (!n)
      fail("an accumulate bundle (kind=acc) needs -n (the element count)");
    Expected<std::unique_ptr<Kernel>> loaded = Kernel::loadFile(*cl.file());
    if (!loaded.ok())
      fail(loaded.message());
    return runAccumulateKernel(cl, **loaded, *n, sig.dtype, seed,
                               {warmup, iters});
  }
  if (cl.has("n"))
    fail("-n applies to accumulate bundles (kind=acc) only");
  if (meta->kind == KernelKind::Merge) {
    for (const char *flag :
         {"load", "save", "grad-check", "bwd", "fwd", "sk", "inputs"})
      if (cl.has(flag))
        fail(flagName(flag) + " does not apply to a merge bundle (kind=merge; "
                              "it takes -b and --sq)");
    if (!b || !sq)
      fail("a merge bundle (kind=merge) needs -b and --sq (S)");
    Expected<std::unique_ptr<Kernel>> loaded = Kernel::loadFile(*cl.file());
    if (!loaded.ok())
      fail(loaded.message());
    MergeProblem p;
    p.b = *b;
    p.h = sig.hq;
    p.s = *sq;
    p.dv = sig.dv;
    check((*loaded)->checkMergeProblem(p));
    return runMergeKernel(cl, **loaded, p, sig, seed, {warmup, iters});
  }
  if (!b)
    fail("-b is required (or --load DIR)");
  if (!sq)
    fail("--sq is required (or --load DIR)");
  if (!sk)
    fail("--sk is required (or --load DIR)");
  const bool backward = meta->kind == KernelKind::Backward;
  if (cl.flag("bwd") && !backward)
    fail("--bwd: bundle '" + *cl.file() + "' is a forward kernel (kind=fwd)");

  if (cl.has("fwd") && !backward)
    fail("--fwd applies to backward bundles (kind=bwd); '" + *cl.file() +
         "' is a forward kernel");

  // Load first: a missing driver or a bad binary fails before any work.
  Expected<std::unique_ptr<Kernel>> loaded = Kernel::loadFile(*cl.file());
  if (!loaded.ok())
    fail(loaded.message());
  Kernel &kernel = **loaded;
  std::unique_ptr<Kernel> fwdKernel;
  if (std::optional<std::string> fwdFile = cl.str("fwd")) {
    Expected<std::unique_ptr<Kernel>> f = Kernel::loadFile(*fwdFile);
    if (!f.ok())
      fail("--fwd: " + f.message());
    fwdKernel = f.take();
    std::string why = forwardForBackwardMismatch(fwdKernel->meta(), *meta);
    if (!why.empty())
      fail("--fwd: bundle '" + *fwdFile + "' " + why);
  }

  Problem p;
  p.b = *b;
  p.hq = sig.hq;
  p.hk = sig.hk;
  p.sq = *sq;
  p.sk = *sk;
  p.d = sig.d;
  p.dv = sig.dv;
  check(p.validate());

  // Inputs, rounded to the dtype. dO (backward only) comes after q, k, v
  // from the same generator, so that q, k, v equal the forward's.
  std::vector<float> q, k, v, dO;
  if (loadDir) {
    std::string err;
    if (!checkNpyShape(qIn, joinPath(*loadDir, "q.npy"), {p.b, p.hq, p.sq, p.d},
                       &err) ||
        !checkNpyShape(kIn, joinPath(*loadDir, "k.npy"), {p.b, p.hk, p.sk, p.d},
                       &err) ||
        !checkNpyShape(vIn, joinPath(*loadDir, "v.npy"),
                       {p.b, p.hk, p.sk, p.dv}, &err))
      fail(err);
    q = std::move(qIn.data);
    k = std::move(kIn.data);
    v = std::move(vIn.data);
    if (backward) {
      NpyArray doIn = loadInput(*loadDir, "do.npy");
      if (!checkNpyShape(doIn, joinPath(*loadDir, "do.npy"),
                         {p.b, p.hq, p.sq, p.dv}, &err))
        fail(err);
      dO = std::move(doIn.data);
    }
  } else {
    Normal rng(seed);
    q.resize(p.qElements());
    k.resize(p.kElements());
    v.resize(p.vElements());
    if (backward)
      dO.resize(p.oElements());
    for (std::vector<float> *t : {&q, &k, &v, &dO})
      for (float &x : *t)
        x = static_cast<float>(rng.next());
    if (inputKind == "stress")
      stressInputs(p, q, k);
  }
  for (std::vector<float> *t : {&q, &k, &v, &dO})
    for (float &x : *t)
      x = roundTo(x, sig.dtype);

  check(kernel.checkProblem(p));
  Inputs in{q, k, v, dO};
  BenchCounts counts{warmup, iters};
  return backward ? runBackwardKernel(cl, kernel, fwdKernel.get(), p, sig, in,
                                      counts)
                  : runForwardKernel(cl, kernel, p, sig, in, counts);
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const ToolError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fmha-run: error: %s\n", e.message.c_str());
    return 2;
  } catch (const std::bad_alloc &) {
    std::fflush(stdout);
    std::fprintf(stderr, "fmha-run: error: out of memory\n");
    return 2;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fmha-run: error: %s\n", e.what());
    return 2;
  }
}
