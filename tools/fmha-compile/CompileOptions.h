//===- CompileOptions.h - fmha-compile's command line -----------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha-compile's options (LLVM command-line options in `category`) and the
// check of the signature they describe, apart from the tool so that the
// option fuzzer (fuzz/) runs them in process: nothing here exits.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_COMPILE_COMPILEOPTIONS_H
#define FMHA_TOOLS_FMHA_COMPILE_COMPILEOPTIONS_H

#include "fmha/Runtime/Bundle.h"

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fmha::compile {

extern llvm::cl::OptionCategory category;
extern llvm::cl::opt<std::string> target, chip, dtype, mask, emit, output, mma,
    cudaBinary, rescale, strides;
extern llvm::cl::opt<int64_t> hq, hk, headDim, headDimV, blockM, blockN,
    warpRows, mfma, indexBits, bundleVersion, kvStages, pageSize;
extern llvm::cl::opt<double> scale, softcap;
extern llvm::cl::opt<bool> bwd, deterministic, merge, accumulate, qInShared,
    fromTensors, staticTiles, vectorTiles, deferPV, sinks, varlen, dqAtomics,
    bulkAdd;

/// The kernel symbol of every bundle fmha-compile writes.
inline constexpr const char *kKernelName = "fmha_fwd";
inline constexpr const char *kBwdKernelName = "fmha_bwd";
inline constexpr const char *kMergeKernelName = "fmha_merge";
inline constexpr const char *kAccumulateKernelName = "fmha_acc";

/// The bundle metadata the parsed options describe (DESIGN.md section 1),
/// checked; or std::nullopt and the message (without "fmha-compile: error:").
std::optional<rt::BundleMeta> bundleMetaFromOptions(std::string *error);

} // namespace fmha::compile

#endif // FMHA_TOOLS_FMHA_COMPILE_COMPILEOPTIONS_H
