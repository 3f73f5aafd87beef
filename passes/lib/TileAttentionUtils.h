//===- TileAttentionUtils.h - What the tilings share ------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Helpers of --fmha-tile-attention shared by the forward's tiling
// (TileAttention.cpp) and the backward's (TileAttentionBwd.cpp); private to
// the passes library.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_PASSES_LIB_TILEATTENTIONUTILS_H
#define FMHA_PASSES_LIB_TILEATTENTIONUTILS_H

#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::fmha::tiling {

/// A rank-reducing view `source[offsets][sizes]` with unit strides that drops
/// the leading unit dims: a subview of a memref, a slice of a tensor.
Value tileView(OpBuilder &b, Location loc, Value source,
               ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
               int64_t keepRank);

/// The outs of a tile op once it ran: its results on tensors, the outs
/// themselves on memrefs.
SmallVector<Value> updatedOuts(Operation *op);

/// What a loop or branch carries: the values on tensors, nothing on memrefs
/// (the buffers are updated in place).
SmallVector<Value> carried(ValueRange state);

/// The result types of a tile op with outs `outs`: theirs on tensors (the op
/// returns its updated outs), none on memrefs (it writes them in place).
SmallVector<Type> resultTypesFor(ValueRange outs);

/// A read-only memref view of an input tensor (the backward's bridge to its
/// tiles on memrefs).
Value toBuffer(RewriterBase &rewriter, Location loc, Value tensor);

/// A fresh buffer shaped like the tensor `like`.
Value allocLike(RewriterBase &rewriter, Location loc, Value like);

/// Positive tile sizes, or an error on `op`.
LogicalResult checkTileSizes(Operation *op,
                             const TileAttentionOptions &options);

/// The mask of one problem and the attributes of its score tiles.
struct ScoreConfig {
  ::fmha::MaskSpec mask;
  MaskAttr maskAttr;
  FloatAttr scale, softcap;
  Value sq, sk;
};

/// Scores of the q tile rows [r0, r1) against the kv tile keys [c0, c1) into
/// `s`: the element mask only when the tile crosses a mask edge or, with
/// `padded` (a static tile of keys [c0, c1) that may reach past Sk), the end
/// of K. With `transposed`, `s` takes the keys as rows (S^T = K Q^T).
/// Returns the updated `s`.
Value emitScores(OpBuilder &b, Location loc, const ScoreConfig &cfg, Value q,
                 Value k, Value s, Value r0, Value r1, Value c0, Value c1,
                 bool padded = false, bool transposed = false);

/// A static tile of `tileRows` x the next power of two of `cols` columns:
/// the slice `source[offsets][extent rows, cols]` (rank 4, BHSD) padded with
/// `pad` past its rows and columns.
Value paddedInputTile(OpBuilder &b, Location loc, Value source,
                      ArrayRef<OpFoldResult> offsets, Value extent,
                      int64_t tileRows, int64_t cols, TypedAttr pad = {});

/// Element `indices` of an i32 table (a tensor or a memref: a variable-length
/// batch's offsets, a paged cache's block table or lengths) as an index.
Value readOffset(OpBuilder &b, Location loc, Value offsets, ValueRange indices);

/// Where flattened q tile `tile` of a variable-length batch lies: the tiles
/// of `blockM` rows of sequence 0, then of 1, ... of the `count` sequences
/// whose `offsets` (i32 [count + 1]) bound them (a loop over the offsets).
struct VarlenTile {
  Value active; ///< i1: the tile is one of a sequence's
  Value seq;    ///< its sequence (0 when inactive)
  Value next;   ///< seq + 1, at most count (an index into the offsets)
  Value qt;     ///< its tile within the sequence (0 when inactive)
  Value qBase;  ///< the sequence's first row
  Value sq;     ///< the sequence's rows (0 when inactive)
};
VarlenTile emitVarlenTile(OpBuilder &b, Location loc, Value offsets,
                          Value count, Value tile, int64_t blockM);

} // namespace mlir::fmha::tiling

#endif // FMHA_PASSES_LIB_TILEATTENTIONUTILS_H
