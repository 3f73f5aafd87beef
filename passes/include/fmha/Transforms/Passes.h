//===- Passes.h - FMHA transformation passes --------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TRANSFORMS_PASSES_H
#define FMHA_TRANSFORMS_PASSES_H

#include "fmha/Dialect/FmhaOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace fmha {

#define GEN_PASS_DECL
#include "fmha/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fmha/Transforms/Passes.h.inc"

/// The rows of each tile of an `scf.forall` the backward's tiling on values
/// makes (an integer attribute on the loop): block-n for the dK/dV loop,
/// whose rows are keys, block-m for the Dsum and dQ loops.
/// fmha-assign-layouts{warp-rows} gives such a loop rows / warp-rows warps.
inline constexpr llvm::StringLiteral kLoopRowsAttr = "fmha.loop_rows";

/// Tile sizes of the flash-attention loop nest.
struct TileAttentionOptions {
  int64_t blockM = 64;
  int64_t blockN = 64;
  /// The forward's tiles of a static shape (tensors only): q, k and v tiles
  /// padded with zeros at the edges of Sq and Sk, the scratch `tensor.empty`,
  /// the o and lse tiles sliced back to the rows in range.
  bool staticTiles = false;
  /// The forward's q tiles in reverse order under a mask with a right
  /// bound: the tiles that see the most keys first.
  bool longestFirst = false;
};

/// Rewrites `op` into the tiled flash-attention form. Emits a diagnostic and
/// fails on options it cannot honour.
LogicalResult tileAttention(RewriterBase &rewriter, AttentionOp op,
                            const TileAttentionOptions &options);

/// Rewrites `op` into the tiled backward form: Dsum per q tile; dK and dV per
/// kv tile, summed over the q heads of its group in registers of the loop
/// (no atomics); dQ either added atomically by the kv tiles into an f32
/// accumulator or, with `deterministic`, recomputed per q tile over its kv
/// tiles in a fixed order.
LogicalResult tileAttentionBwd(RewriterBase &rewriter, AttentionBwdOp op,
                               const TileAttentionOptions &options);

/// Adds the pattern that applies `tileAttention` to every fmha.attention.
void populateFmhaTileAttentionPatterns(RewritePatternSet &patterns,
                                       const TileAttentionOptions &options);

} // namespace fmha
} // namespace mlir

#endif // FMHA_TRANSFORMS_PASSES_H
