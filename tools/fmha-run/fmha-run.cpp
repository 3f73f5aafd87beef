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

#include "RunKinds.h"
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
using namespace fmha::runtool;

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
      "every run.\nA bundle with learned sink logits (sinks=1) takes sinks "
      "[Hq] (float32): drawn\nafter the other inputs with standard "
      "deviation 2, or sinks.npy with --load;\n--save writes it.\n"
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
  for (int64_t bi = 0; bi < p.batch(); ++bi)
    for (int64_t h = 0; h < p.hq; ++h) {
      const int64_t kind = (h / group) % 4;
      float *x = &q[((bi * p.hq + h) * p.sq) * p.d];
      for (int64_t i = 0; i < p.sq * p.d; ++i)
        x[i] = kind == 2 ? 3.0f * x[i] : kind < 2 ? 0.3f * x[i] + 1.0f : x[i];
    }
  for (int64_t bi = 0; bi < p.batch(); ++bi)
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
  // A paged bundle's K/V are the cache's pages: k_cache.npy, v_cache.npy.
  const int64_t pageSize = meta ? meta->pageSize : 0;
  if (loadDir) {
    qIn = loadInput(*loadDir, "q.npy");
    kIn = loadInput(*loadDir, pageSize ? "k_cache.npy" : "k.npy");
    vIn = loadInput(*loadDir, pageSize ? "v_cache.npy" : "v.npy");
    b = b.value_or(qIn.shape[0]);
    sq = sq.value_or(qIn.shape[2]);
    if (!pageSize)
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
  // A variable-length batch: B, Sq and Sk from the lengths (of a paged
  // cache, Sk from the cache).
  const bool varlen = meta->varlen;
  std::vector<int32_t> cuQ, cuK;
  if (cl.has("seqlens-q") && !varlen)
    fail("--seqlens-q applies to variable-length bundles (varlen=1, "
         "fmha-compile --varlen)");
  if (cl.has("seqlens-k") && !varlen && !pageSize)
    fail("--seqlens-k applies to variable-length bundles (varlen=1, "
         "fmha-compile --varlen) and paged ones (page_size, fmha-compile "
         "--page-size)");
  for (const char *flag : {"pages", "max-pages"})
    if (cl.has(flag) && !pageSize)
      fail(flagName(flag) + " applies to paged bundles (page_size, "
                            "fmha-compile --page-size)");
  if (varlen && loadDir) {
    // cu_seqlens_q.npy and cu_seqlens_k.npy beside q, k, v (batch 1).
    for (const char *flag : {"b", "seqlens-q", "seqlens-k"})
      if (cl.has(flag))
        fail(flagName(flag) +
             ": --load reads a variable-length batch's "
             "lengths from cu_seqlens_q.npy and " +
             (pageSize ? "seqlens_k.npy" : "cu_seqlens_k.npy"));
    cuQ = loadOffsets(*loadDir, "cu_seqlens_q.npy");
    b = static_cast<int64_t>(cuQ.size()) - 1;
    check(checkSeqlens("cu_seqlens_q.npy", cuQ.data(), *b, *sq));
    if (!pageSize) {
      cuK = loadOffsets(*loadDir, "cu_seqlens_k.npy");
      if (cuQ.size() != cuK.size())
        fail("cu_seqlens_q.npy holds " + std::to_string(cuQ.size()) +
             " offsets, cu_seqlens_k.npy " + std::to_string(cuK.size()) +
             ": B + 1 each");
      check(checkSeqlens("cu_seqlens_k.npy", cuK.data(), *b, *sk));
    }
  } else if (varlen) {
    if (cl.has("b"))
      fail("-b: a variable-length bundle's B is the number of --seqlens-q "
           "lengths");
    std::optional<std::vector<int64_t>> lq = cl.lengths("seqlens-q",
                                                        kMaxSequence),
                                        lk = cl.lengths("seqlens-k",
                                                        kMaxSequence);
    if (!lq || (!lk && !pageSize))
      fail("a variable-length bundle (varlen=1) needs --seqlens-q and "
           "--seqlens-k");
    // A paged cache's lengths (--seqlens-k) are pagedCache's to check.
    if (!pageSize && lq->size() != lk->size())
      fail("--seqlens-q gives " + std::to_string(lq->size()) +
           " lengths, --seqlens-k " + std::to_string(lk->size()) +
           ": one of each per sequence");
    auto offsets = [](const std::vector<int64_t> &lengths, const char *flag,
                      std::optional<int64_t> &total) {
      std::vector<int32_t> cu = {0};
      int64_t sum = 0;
      for (int64_t length : lengths) {
        sum += length;
        if (sum > kMaxSequence)
          fail(flagName(flag) + ": the lengths sum past 2^30 tokens");
        cu.push_back(static_cast<int32_t>(sum));
      }
      const char *totalFlag = flag[8] == 'q' ? "sq" : "sk";
      if (total && *total < sum)
        fail(flagName(totalFlag) + "=" + std::to_string(*total) +
             " is less than the " + std::to_string(sum) + " rows of " +
             flagName(flag));
      // At least one row, so that every tensor has one.
      total = total.value_or(std::max<int64_t>(sum, 1));
      return cu;
    };
    cuQ = offsets(*lq, "seqlens-q", sq);
    if (!pageSize)
      cuK = offsets(*lk, "seqlens-k", sk);
    b = static_cast<int64_t>(lq->size());
  }
  // A paged cache: Sk is the longest a sequence may be (max_pages * P).
  PagedCache cache;
  if (pageSize) {
    if (inputKind == "stress")
      fail("--inputs=stress reshapes contiguous K; a paged bundle's cache "
           "takes --inputs=normal");
    cache = pagedCache(cl, pageSize, b, sk, loadDir, loadDir ? kIn.shape[0] : 0,
                       seed);
    sk = cache.maxPages * pageSize;
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
  p.varlen = varlen;
  p.pageSize = pageSize;
  p.pages = cache.pages;
  p.maxPages = cache.maxPages;
  check(p.validate());
  if (pageSize)
    check(checkPaged(p, cache.blockTable.data(), cache.seqlensK.data()));

  // Inputs, rounded to the dtype. dO (backward only) comes after q, k, v
  // from the same generator, so that q, k, v equal the forward's.
  std::vector<float> q, k, v, dO, sinks;
  if (loadDir) {
    std::string err;
    const int64_t batch = p.batch();
    if (!checkNpyShape(qIn, joinPath(*loadDir, "q.npy"),
                       {batch, p.hq, p.sq, p.d}, &err) ||
        !checkNpyShape(kIn,
                       joinPath(*loadDir, pageSize ? "k_cache.npy" : "k.npy"),
                       {p.kvBatch(), p.hk, p.kvRows(), p.d}, &err) ||
        !checkNpyShape(vIn,
                       joinPath(*loadDir, pageSize ? "v_cache.npy" : "v.npy"),
                       {p.kvBatch(), p.hk, p.kvRows(), p.dv}, &err))
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
    if (sig.sinks) {
      NpyArray sinksIn = loadInput(*loadDir, "sinks.npy", /*rank=*/1);
      if (!checkNpyShape(sinksIn, joinPath(*loadDir, "sinks.npy"), {p.hq},
                         &err))
        fail(err);
      sinks = std::move(sinksIn.data);
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
    // Learned sink logits after every other input (which stay the same as
    // without them): normal with standard deviation 2, about the spread of
    // a row's largest scores, so that the sink takes a share of each row.
    if (sig.sinks) {
      sinks.resize(p.hq);
      for (float &x : sinks)
        x = static_cast<float>(2.0 * rng.next());
    }
    // The cache's slots no sequence holds are NaN: a kernel must not read
    // them.
    if (pageSize) {
      poisonUnusedSlots(p, cache, p.d, k);
      poisonUnusedSlots(p, cache, p.dv, v);
    }
  }
  for (float x : sinks)
    if (!std::isfinite(x))
      fail("sinks.npy: the learned sink logits must be finite");
  for (std::vector<float> *t : {&q, &k, &v, &dO})
    for (float &x : *t)
      x = roundTo(x, sig.dtype);

  check(kernel.checkProblem(p));
  Inputs in{q, k, v, dO, sinks, cuQ, cuK, cache.blockTable, cache.seqlensK};
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
