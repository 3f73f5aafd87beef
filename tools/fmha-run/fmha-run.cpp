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

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Half.h"
#include "fmha/Runtime/Npy.h"
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
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

using namespace fmha;
using namespace fmha::rt;
using namespace fmha::runopt;

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
      "Exit status: 0 ok, 1 validation failed, 2 error.\n");
}

//===----------------------------------------------------------------------===//
// Inputs and conversions
//===----------------------------------------------------------------------===//

/// splitmix64 with Box-Muller normals.
class Normal {
public:
  explicit Normal(uint64_t seed) : state_(seed) {}
  double next() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    // u1 in (0, 1] so that log(u1) is finite; u2 in [0, 1).
    double u1 = static_cast<double>((bits() >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(bits() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    double theta = 2.0 * M_PI * u2;
    spare_ = r * std::sin(theta);
    hasSpare_ = true;
    return r * std::cos(theta);
  }

private:
  uint64_t bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  double spare_ = 0.0;
  bool hasSpare_ = false;
};

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

struct Tolerance {
  double rel, lse;
};

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

/// Prints the errors and PASS/FAIL; returns whether it passed.
bool validate(const Problem &p, const Signature &sig,
              const std::vector<float> &q, const std::vector<float> &k,
              const std::vector<float> &v, const std::vector<float> &o,
              const std::vector<float> &lse) {
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
  ReferenceForward ref;
  std::string err;
  if (!referenceForward(cfg, toDouble(q), toDouble(k), toDouble(v), &ref, &err))
    fail(err);

  int64_t nanO = 0, nanLse = 0, infMismatch = 0, firstBadRow = -1;
  double maxAbs = 0, diff2 = 0, ref2 = 0, o2 = 0, lseMax = 0, lseWorst = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    if (std::isnan(o[i])) {
      ++nanO;
      continue;
    }
    double dlt = static_cast<double>(o[i]) - ref.o[i];
    maxAbs = std::max(maxAbs, std::fabs(dlt));
    diff2 += dlt * dlt;
    ref2 += ref.o[i] * ref.o[i];
    o2 += static_cast<double>(o[i]) * o[i];
  }
  Tolerance tol = toleranceFor(sig.dtype);
  for (size_t r = 0; r < lse.size(); ++r) {
    double got = lse[r], want = ref.lse[r];
    if (std::isnan(got)) {
      ++nanLse;
      continue;
    }
    bool wantInf = std::isinf(want), gotInf = std::isinf(got);
    if (wantInf || gotInf) {
      if (got != want) {
        ++infMismatch;
        if (firstBadRow < 0)
          firstBadRow = static_cast<int64_t>(r);
      }
      continue;
    }
    double e = std::fabs(got - want);
    lseMax = std::max(lseMax, e);
    lseWorst = std::max(lseWorst, e / (1.0 + std::fabs(want)));
  }
  double rel = ref2 > 0  ? std::sqrt(diff2 / ref2)
               : o2 == 0 ? 0.0
                         : std::numeric_limits<double>::infinity();
  if (nanO)
    rel = maxAbs = std::numeric_limits<double>::quiet_NaN();
  std::printf("max_abs_err=%.3e rel_err=%.3e lse_max_abs_err=%.3e\n", maxAbs,
              rel, lseMax);
  std::vector<std::string> reasons;
  if (nanO)
    reasons.push_back(std::to_string(nanO) + " NaN in o");
  if (nanLse)
    reasons.push_back(std::to_string(nanLse) + " NaN in lse");
  if (infMismatch) {
    int64_t r = firstBadRow;
    int64_t i = r % p.sq, h = (r / p.sq) % p.hq, b = r / (p.sq * p.hq);
    reasons.push_back(std::to_string(infMismatch) +
                      " lse rows where -inf does not match the reference "
                      "(first: b=" +
                      std::to_string(b) + " h=" + std::to_string(h) + " i=" +
                      std::to_string(i) + ", got " + formatReal(lse[r]) +
                      ", reference " + formatReal(ref.lse[r]) + ")");
  }
  if (!nanO && !(rel <= tol.rel))
    reasons.push_back("rel_err " + formatReal(rel) + " > " +
                      formatReal(tol.rel));
  if (lseWorst > tol.lse)
    reasons.push_back("lse error exceeds " + formatReal(tol.lse) +
                      "*(1+|lse|)");
  if (reasons.empty()) {
    std::printf("PASS (%s: rel_err <= %g, |lse-ref| <= %g*(1+|ref|))\n",
                toString(sig.dtype), tol.rel, tol.lse);
    return true;
  }
  std::string all;
  for (const std::string &r : reasons)
    all += (all.empty() ? "" : "; ") + r;
  std::printf("FAIL: %s\n", all.c_str());
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
  bool showMaskRequested = cl.flag("show-mask");
  bool runRequested = cl.flag("validate") || cl.flag("bench") ||
                      cl.has("save") || cl.has("load") || !showMaskRequested;

  // The signature: from the bundle, or (--show-mask without FILE) the flags.
  Signature sig;
  std::optional<BundleMeta> meta;
  if (cl.file()) {
    BundleMeta m;
    std::string binary, err;
    if (!readBundle(*cl.file(), &m, &binary, &err))
      fail(err);
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
  if (!b)
    fail("-b is required (or --load DIR)");
  if (!sq)
    fail("--sq is required (or --load DIR)");
  if (!sk)
    fail("--sk is required (or --load DIR)");
  if (meta->kind != KernelKind::Forward)
    fail("bundle '" + *cl.file() +
         "' holds a backward kernel; fmha-run runs forward kernels only");

  // Load first: a missing driver or a bad binary fails before any work.
  Expected<std::unique_ptr<Kernel>> loaded = Kernel::loadFile(*cl.file());
  if (!loaded.ok())
    fail(loaded.message());
  Kernel &kernel = **loaded;
  Backend &backend = kernel.backend();

  Problem p;
  p.b = *b;
  p.hq = sig.hq;
  p.hk = sig.hk;
  p.sq = *sq;
  p.sk = *sk;
  p.d = sig.d;
  p.dv = sig.dv;
  check(p.validate());

  // Inputs, rounded to the dtype.
  std::vector<float> q, k, v;
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
  } else {
    Normal rng(seed);
    q.resize(p.qElements());
    k.resize(p.kElements());
    v.resize(p.vElements());
    for (std::vector<float> *t : {&q, &k, &v})
      for (float &x : *t)
        x = static_cast<float>(rng.next());
  }
  for (std::vector<float> *t : {&q, &k, &v})
    for (float &x : *t)
      x = roundTo(x, sig.dtype);

  check(kernel.checkProblem(p));
  std::optional<LaunchDims> launch;
  if (kernel.meta().target != Target::Cpu) {
    Expected<LaunchDims> dims = kernel.launchDims(p);
    check(dims.status());
    launch = *dims;
  }

  auto upload = [&](const std::vector<unsigned char> &bytes) {
    Expected<DeviceBuffer> buf = DeviceBuffer::allocate(backend, bytes.size());
    if (!buf.ok())
      fail(buf.message());
    check(backend.copyToDevice(buf->get(), bytes.data(), bytes.size()));
    return buf.take();
  };
  auto allocate = [&](size_t bytes) {
    Expected<DeviceBuffer> buf = DeviceBuffer::allocate(backend, bytes);
    if (!buf.ok())
      fail(buf.message());
    return buf.take();
  };
  std::vector<unsigned char> qBytes = toStorage(q, sig.dtype);
  std::vector<unsigned char> kBytes = toStorage(k, sig.dtype);
  std::vector<unsigned char> vBytes = toStorage(v, sig.dtype);
  DeviceBuffer qBuf = upload(qBytes);
  DeviceBuffer kBuf = upload(kBytes);
  DeviceBuffer vBuf = upload(vBytes);
  const size_t oSize =
      static_cast<size_t>(p.oElements()) * dtypeSize(sig.dtype);
  const size_t lseSize = static_cast<size_t>(p.lseElements()) * sizeof(float);
  DeviceBuffer oBuf = allocate(oSize);
  DeviceBuffer lseBuf = allocate(lseSize);
  ForwardArgs args;
  args.q = qBuf.get();
  args.k = kBuf.get();
  args.v = vBuf.get();
  args.o = oBuf.get();
  args.lse = static_cast<float *>(lseBuf.get());

  // Every run starts from NaN in o and lse (0xFF bytes are NaN in f32, f16
  // and bf16), so that an element the kernel leaves unwritten shows.
  auto poison = [&]() {
    check(backend.fill(oBuf.get(), 0xFF, oSize, nullptr));
    check(backend.fill(lseBuf.get(), 0xFF, lseSize, nullptr));
  };
  auto wallRun = [&]() {
    poison();
    check(backend.synchronize(nullptr));
    auto t0 = std::chrono::steady_clock::now();
    check(kernel.run(p, args));
    check(backend.synchronize(nullptr));
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  double firstMs = wallRun();
  std::vector<unsigned char> oBytes(oSize);
  std::vector<float> lse(p.lseElements());
  check(backend.copyToHost(oBytes.data(), oBuf.get(), oSize));
  check(backend.copyToHost(lse.data(), lseBuf.get(), lseSize));
  std::vector<float> o = fromStorage(oBytes, sig.dtype);

  std::printf("kernel %s (%s, %s, mask=%s, scale=%s, softcap=%s, block "
              "%lldx%lld)\n",
              kernel.meta().kernel.c_str(), backend.description().c_str(),
              toString(sig.dtype), sig.mask.str().c_str(),
              formatReal(sig.scale).c_str(), formatReal(sig.softcap).c_str(),
              static_cast<long long>(sig.blockM),
              static_cast<long long>(sig.blockN));
  if (launch)
    std::printf("launch grid=(%lld,%lld,%lld) block=(%lld,1,1) "
                "shared_bytes=%lld abi=%s\n",
                static_cast<long long>(launch->grid[0]),
                static_cast<long long>(launch->grid[1]),
                static_cast<long long>(launch->grid[2]),
                static_cast<long long>(launch->block[0]),
                static_cast<long long>(launch->sharedBytes),
                kernel.meta().abi.c_str());
  std::printf("problem B=%lld Hq=%lld Hk=%lld Sq=%lld Sk=%lld D=%lld "
              "Dv=%lld: first run %.3f ms\n",
              static_cast<long long>(p.b), static_cast<long long>(p.hq),
              static_cast<long long>(p.hk), static_cast<long long>(p.sq),
              static_cast<long long>(p.sk), static_cast<long long>(p.d),
              static_cast<long long>(p.dv), firstMs);

  bool passed = true;
  if (cl.flag("validate"))
    passed = validate(p, sig, q, k, v, o, lse);

  if (std::optional<std::string> dir = cl.str("save")) {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    if (ec)
      fail("--save: cannot create directory '" + *dir + "': " + ec.message());
    struct Out {
      const char *file;
      std::vector<int64_t> shape;
      const std::vector<float> *data;
    } outs[] = {{"q.npy", {p.b, p.hq, p.sq, p.d}, &q},
                {"k.npy", {p.b, p.hk, p.sk, p.d}, &k},
                {"v.npy", {p.b, p.hk, p.sk, p.dv}, &v},
                {"o.npy", {p.b, p.hq, p.sq, p.dv}, &o},
                {"lse.npy", {p.b, p.hq, p.sq}, &lse}};
    for (const Out &out : outs) {
      std::string err;
      if (!writeNpy(joinPath(*dir, out.file), out.shape, out.data->data(),
                    &err))
        fail(err);
    }
    std::printf("saved q.npy k.npy v.npy o.npy lse.npy to %s\n", dir->c_str());
  }

  if (cl.flag("bench")) {
    // Small inputs rotate among up to 4 copies (the first is the one above),
    // at most 256 MiB of inputs in all.
    const size_t inputBytes = qBytes.size() + kBytes.size() + vBytes.size();
    const size_t kRotationBudget = size_t(256) << 20;
    size_t copies = std::max<size_t>(
        1,
        std::min<size_t>(4, kRotationBudget / std::max<size_t>(inputBytes, 1)));
    std::vector<DeviceBuffer> extra;
    std::vector<ForwardArgs> argSets{args};
    for (size_t c = 1; c < copies; ++c) {
      extra.push_back(upload(qBytes));
      extra.push_back(upload(kBytes));
      extra.push_back(upload(vBytes));
      ForwardArgs a = args;
      a.q = extra[extra.size() - 3].get();
      a.k = extra[extra.size() - 2].get();
      a.v = extra[extra.size() - 1].get();
      argSets.push_back(a);
    }
    for (int64_t i = 0; i < warmup; ++i) {
      poison();
      check(kernel.run(p, argSets[i % copies]));
    }
    // One timer a run, all queued before any is read, so that the device
    // never waits for the host between runs; the NaN fill before each run
    // lies outside its timed span.
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
      check(kernel.run(p, argSets[i % copies]));
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
    double flops = forwardFlops(p, sig.mask);
    double gflops = median > 0 ? flops / (median * 1e6) : 0.0;
    std::printf("bench: iters=%lld warmup=%lld median_ms=%.4f min_ms=%.4f "
                "GFLOP/s=%.2f TFLOP/s=%.3f input_copies=%zu (visible pairs "
                "only)\n",
                static_cast<long long>(iters), static_cast<long long>(warmup),
                median, times.front(), gflops, gflops / 1e3, copies);
  }
  return passed ? 0 : 1;
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
