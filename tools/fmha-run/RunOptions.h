//===- RunOptions.h - fmha-run's command line -------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha-run's own option parser and the checks of its signature flags against
// a bundle, apart from the tool so that the option fuzzer (fuzz/) calls them
// in process. Every error is a thrown ToolError (the tool prints
// "fmha-run: error: MESSAGE" and exits 2); nothing here exits the process.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_RUN_RUNOPTIONS_H
#define FMHA_TOOLS_FMHA_RUN_RUNOPTIONS_H

#include "fmha/Runtime/Bundle.h"
#include "fmha/Support/MaskSpec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fmha::runopt {

/// A usage or input error: printed as "fmha-run: error: MESSAGE", exit 2.
struct ToolError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message);

struct OptionDef {
  const char *name;
  bool takesValue;
  const char *metavar;
  const char *help;
};

inline constexpr OptionDef kOptions[] = {
    {"b", true, "N", "batch size B (required unless --load gives it)"},
    {"hq", true, "N", "query heads (default: the bundle's)"},
    {"hk", true, "N", "key/value heads (default: the bundle's)"},
    {"sq", true, "N", "query length Sq (required unless --load gives it)"},
    {"sk", true, "N", "key length Sk (required unless --load gives it)"},
    {"d", true, "N", "head dim of q and k (default: the bundle's)"},
    {"dv", true, "N", "head dim of v and o (default: the bundle's)"},
    {"mask", true, "SPEC",
     "mask spec: 0, t, b, t:L,R[,S], b:L,R[,S], xt:W, xb:W "
     "(default: the bundle's)"},
    {"dtype", true, "T", "f32, f16 or bf16 (default: the bundle's)"},
    {"scale", true, "X",
     "softmax scale, 0 = 1/sqrt(d) (default: the "
     "bundle's)"},
    {"softcap", true, "X", "score softcap, 0 = none (default: the bundle's)"},
    {"seqlens-q", true, "L0,L1,...",
     "a variable-length bundle (varlen=1): each sequence's query count "
     "(0 allowed); B is their number, Sq their sum unless --sq gives more "
     "rows (which the kernel must leave untouched)"},
    {"seqlens-k", true, "L0,L1,...",
     "a variable-length bundle: each sequence's key count, as many as "
     "--seqlens-q; Sk their sum unless --sk gives more. A paged bundle "
     "(page_size=P): each sequence's cache length (B their number, or "
     "--seqlens-q's; without it every sequence has --sk keys)"},
    {"pages", true, "N",
     "a paged bundle: the cache's pages (default: the pages the lengths "
     "fill; more leave pages no table entry names)"},
    {"max-pages", true, "M",
     "a paged bundle: the block table's entries a sequence (default: the "
     "longest sequence's pages; entries past a sequence's pages hold "
     "2^31 - 1, never read)"},
    {"seed", true, "N", "seed of the random inputs (default 0)"},
    {"inputs", true, "KIND",
     "normal (default): standard normal q, k, v; stress: q and k reshaped "
     "so that the softmax's row max rises or falls along the keys or jumps "
     "(by kv head), for the online rescaling"},
    {"n", true, "N", "element count of an accumulate bundle (kind=acc)"},
    {"bwd", false, nullptr,
     "assert that the bundle is a backward kernel (kind=bwd); without it "
     "the bundle's kind decides"},
    {"validate", false, nullptr,
     "compare o and lse (backward: dq, dk, dv) with the float64 reference; "
     "exit 1 on FAIL"},
    {"grad-check", false, nullptr,
     "backward: check dq, dk, dv against central finite differences of "
     "sum(o * dO), o the float64 reference forward, along random directions; "
     "exit 1 on FAIL"},
    {"bench", false, nullptr,
     "time --iters runs after --warmup runs (CUDA or HIP events on a GPU); "
     "print "
     "the median ms, GFLOP/s and TFLOP/s"},
    {"iters", true, "N", "timed runs for --bench (default 20)"},
    {"warmup", true, "N", "untimed runs before --bench (default 3)"},
    {"threads", true, "N",
     "cpu bundles: threads that run the kernel's parallel loops (default "
     "$FMHA_NUM_THREADS, else every hardware thread; 1: the calling thread "
     "alone)"},
    {"fwd", true, "FILE",
     "backward: o and lse from this forward bundle (same target, dtype, "
     "heads, dims, mask, scale, softcap) run on the inputs, instead of the "
     "float64 reference forward (which takes minutes at long sequences)"},
    {"load", true, "DIR",
     "read q.npy, k.npy, v.npy (BHSD, float32 or float16; backward: also "
     "do.npy, and o.npy with lse.npy when both exist) instead of random "
     "inputs"},
    {"save", true, "DIR",
     "write q, k, v (as used), o and lse (backward: also do, dq, dk, dv) as "
     "float32 .npy files to DIR (created if missing)"},
    {"layout", true, "L",
     "memory order of the attention tensors: bhsd (default) or bshd "
     "(FlashAttention's [B, S, H, D], passed as strides: the bundle must "
     "take strided operands, fmha-compile --strides=any); lse stays "
     "[B, H, S]; --load and --save stay BHSD"},
    {"show-mask", false, nullptr,
     "draw the mask (first 32 rows, 64 columns) and the kv tiles visited "
     "per q tile"},
    {"block-m", true, "N",
     "q tile size for --show-mask without a bundle "
     "(default 64)"},
    {"block-n", true, "N",
     "kv tile size for --show-mask without a bundle "
     "(default 64)"},
    {"print-manifest", false, nullptr,
     "print the bundle's header keys and its launch manifest (for a "
     "version-1 bundle, the manifest this runtime gives it) and exit; "
     "needs no driver"},
    {"help", false, nullptr, "print this help"},
    {"version", false, nullptr, "print the version"},
};

/// How an option is written in messages: -b, -d, --hq, --show-mask.
std::string flagName(const std::string &name);

class CommandLine {
public:
  /// Throws ToolError on a usage error.
  void parse(int argc, const char *const *argv);

  const std::optional<std::string> &file() const { return file_; }
  bool has(const std::string &name) const { return values_.count(name); }
  bool flag(const std::string &name) const {
    auto it = values_.find(name);
    return it != values_.end() && it->second == "true";
  }
  std::optional<std::string> str(const std::string &name) const {
    auto it = values_.find(name);
    if (it == values_.end())
      return std::nullopt;
    return it->second;
  }

  /// An integer option >= `min`.
  std::optional<int64_t> integer(const std::string &name, int64_t min) const;

  /// A comma-separated list of non-negative integers, each at most `max`.
  std::optional<std::vector<int64_t>> lengths(const std::string &name,
                                              int64_t max) const;

  std::optional<uint64_t> unsignedInteger(const std::string &name) const;

  /// A finite floating-point option >= 0.
  std::optional<double> nonNegativeReal(const std::string &name) const;

private:
  std::optional<std::string> file_;
  std::map<std::string, std::string> values_;
};

/// %.9g, as bundles write their reals.
std::string formatReal(double x);

struct Signature {
  int64_t hq = 0, hk = 0, d = 0, dv = 0;
  rt::DType dtype = rt::DType::F32;
  MaskSpec mask;
  double scale = 0.0; // effective
  double softcap = 0.0;
  /// The bundle takes learned sink logits (an operand sinks, f32 [Hq]).
  bool sinks = false;
  int64_t blockM = 64, blockN = 64;
};

/// Takes the bundle's signature and checks every signature flag against it.
Signature signatureFromBundle(const CommandLine &cl,
                              const rt::BundleMeta &meta);

} // namespace fmha::runopt

#endif // FMHA_TOOLS_FMHA_RUN_RUNOPTIONS_H
