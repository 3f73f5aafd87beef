//===- TileAttention.cpp - Tile fmha.attention into flash form ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha.attention -> scf.parallel (b, hq, q-tile) { kv-tile loops of
// fmha.tile_qk / tile_softmax / tile_pv; tile_finalize } on memrefs; on
// tensors the same on values: scf.forall (b, hq, q-tile) with o and lse as
// shared outs, the kv loops carrying m, l and acc, each tile op returning its
// updated outs (One-Shot Bufferize turns it into the memref form). The
// backward's tiling is in TileAttentionBwd.cpp.
//
// The kv loop bounds come from the mask (the same arithmetic as
// fmha::kvTileBounds in support/, which `fmha-run --show-mask` prints): for the
// q tile holding rows [r0, r1) and the diagonal offset off (0 for top-left,
// Sk - Sq for bottom-right), the visible keys through the window lie in
//   [jlo, jhi] = [max(0, r0 + off - L), min(Sk - 1, r1 - 1 + off + R)],
// so the main loop visits kv tiles [jlo / BN, jhi / BN]; sink tiles before it
// get a leading loop and sink tiles after it extend the main loop; a tile gets
// the element mask only when some key of it is hidden from some row of the q
// tile.
//
//===----------------------------------------------------------------------===//

#include "TileAttentionUtils.h"
#include "fmha/Transforms/MaskUtils.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHATILEATTENTIONPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace mlir::fmha::tiling {

/// A rank-reducing view `source[offsets][sizes]` with unit strides that drops
/// the leading unit dims: a subview of a memref, a slice of a tensor.
Value tileView(OpBuilder &b, Location loc, Value source,
               ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
               int64_t keepRank) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  SmallVector<int64_t> keptShape;
  for (OpFoldResult size : sizes.take_back(keepRank)) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    keptShape.push_back(constant ? *constant : ShapedType::kDynamic);
  }
  if (auto tensorType = dyn_cast<RankedTensorType>(source.getType())) {
    auto type = RankedTensorType::get(keptShape, tensorType.getElementType());
    return tensor::ExtractSliceOp::create(b, loc, type, source, offsets, sizes,
                                          strides);
  }
  auto sourceType = cast<MemRefType>(source.getType());
  auto type = memref::SubViewOp::inferRankReducedResultType(
      keptShape, sourceType, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(type), source,
                                   offsets, sizes, strides);
}

/// The outs of a tile op once it ran: its results on tensors, the outs
/// themselves on memrefs.
SmallVector<Value> updatedOuts(Operation *op) {
  if (op->getNumResults())
    return SmallVector<Value>(op->getResults());
  return SmallVector<Value>(
      cast<DestinationStyleOpInterface>(op).getDpsInits());
}

/// What a loop or branch carries: the values on tensors, nothing on memrefs
/// (the buffers are updated in place).
SmallVector<Value> carried(ValueRange state) {
  SmallVector<Value> values;
  for (Value v : state)
    if (isa<TensorType>(v.getType()))
      values.push_back(v);
  return values;
}

/// The result types of a tile op with outs `outs`: theirs on tensors (the op
/// returns its updated outs), none on memrefs (it writes them in place).
SmallVector<Type> resultTypesFor(ValueRange outs) {
  return llvm::to_vector(ValueRange(carried(outs)).getTypes());
}

/// A read-only memref view of an input tensor (the backward's bridge to its
/// tiles on memrefs).
Value toBuffer(RewriterBase &rewriter, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  return bufferization::ToBufferOp::create(rewriter, loc, memrefType, tensor,
                                           /*read_only=*/true);
}

/// A fresh buffer shaped like the tensor `like`.
Value allocLike(RewriterBase &rewriter, Location loc, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dynSizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynSizes.push_back(tensor::DimOp::create(rewriter, loc, like, i));
  return memref::AllocOp::create(
      rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
      dynSizes);
}

LogicalResult checkTileSizes(Operation *op,
                             const TileAttentionOptions &options) {
  if (options.blockM > 0 && options.blockN > 0)
    return success();
  return op->emitOpError() << "tile sizes must be positive, got block-m="
                           << options.blockM << " block-n=" << options.blockN;
}

/// Scores of the q tile rows [r0, r1) against the kv tile keys [c0, c1) into
/// `s`: the element mask only when the tile crosses a mask edge or, with
/// `padded` (a static tile of keys [c0, c1) that may reach past Sk), the end
/// of K. With `transposed`, `s` takes the keys as rows (S^T = K Q^T).
/// Returns the updated `s`.
Value emitScores(OpBuilder &b, Location loc, const ScoreConfig &cfg, Value q,
                 Value k, Value s, Value r0, Value r1, Value c0, Value c1,
                 bool padded, bool transposed) {
  auto emitQK = [&](OpBuilder &qb, bool masked) {
    SmallVector<Value> coords;
    if (masked)
      coords = {r0, c0, cfg.sq, cfg.sk};
    auto op =
        TileQKOp::create(qb, loc, resultTypesFor(s), q, k, s, coords, cfg.scale,
                         cfg.softcap, masked ? cfg.maskAttr : MaskAttr(),
                         transposed ? qb.getUnitAttr() : UnitAttr());
    return updatedOuts(op).front();
  };
  if (cfg.mask.isNone() && !padded)
    return emitQK(b, /*masked=*/false);
  Value full =
      emitKvTileIsFull(b, loc, cfg.mask, r0, r1, c0, c1, cfg.sq, cfg.sk);
  if (padded) {
    IndexMath im{b, loc};
    full = b.createOrFold<arith::AndIOp>(loc, full, im.le(c1, cfg.sk));
  }
  auto branch = scf::IfOp::create(
      b, loc, full,
      [&](OpBuilder &then, Location) {
        scf::YieldOp::create(then, loc,
                             carried(emitQK(then, /*masked=*/false)));
      },
      [&](OpBuilder &els, Location) {
        scf::YieldOp::create(els, loc, carried(emitQK(els, /*masked=*/true)));
      });
  return branch.getNumResults() ? branch.getResult(0) : s;
}

Value paddedInputTile(OpBuilder &b, Location loc, Value source,
                      ArrayRef<OpFoldResult> offsets, Value extent,
                      int64_t tileRows, int64_t cols, TypedAttr pad) {
  OpFoldResult i1 = b.getIndexAttr(1);
  Value slice = tileView(b, loc, source, offsets,
                         {i1, i1, extent, b.getIndexAttr(cols)}, 2);
  auto type =
      RankedTensorType::get({tileRows, int64_t(llvm::PowerOf2Ceil(cols))},
                            getElementTypeOrSelf(source.getType()));
  if (!pad)
    pad = b.getZeroAttr(type.getElementType());
  Value padValue = arith::ConstantOp::create(b, loc, pad);
  return tensor::createPadHighOp(type, slice, padValue, /*nofold=*/false, loc,
                                 b);
}

Value readOffset(OpBuilder &b, Location loc, Value offsets,
                 ValueRange indices) {
  Value offset =
      isa<RankedTensorType>(offsets.getType())
          ? Value(tensor::ExtractOp::create(b, loc, offsets, indices))
          : Value(memref::LoadOp::create(b, loc, offsets, indices));
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), offset);
}

VarlenTile emitVarlenTile(OpBuilder &b, Location loc, Value offsets,
                          Value count, Value tile, int64_t blockM) {
  IndexMath im{b, loc};
  Value zero = im.c(0), one = im.c(1), bm = im.c(blockM);
  // Over the sequences n: the tiles before n (`before`), the offset
  // cu[n] (`start`), and once found the sequence, its first tile and its
  // first row (count, 0, 0 until then).
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one,
      ValueRange{zero, readOffset(b, loc, offsets, zero), count, zero, zero},
      [&](OpBuilder &lb, Location, Value n, ValueRange it) {
        IndexMath li{lb, loc};
        Value before = it[0], start = it[1];
        Value end = readOffset(lb, loc, offsets, li.add(n, li.c(1)));
        Value after = li.add(before, li.ceilDiv(li.sub(end, start), bm));
        Value hit = li.andOpt(li.cmp(arith::CmpIPredicate::eq, it[2], count),
                              li.lt(tile, after));
        scf::YieldOp::create(lb, loc,
                             ValueRange{after, end, li.select(hit, n, it[2]),
                                        li.select(hit, before, it[3]),
                                        li.select(hit, start, it[4])});
      });
  VarlenTile t;
  t.active = im.lt(loop.getResult(2), count);
  t.seq = im.select(t.active, loop.getResult(2), zero);
  t.qt = im.select(t.active, im.sub(tile, loop.getResult(3)), zero);
  t.qBase = loop.getResult(4);
  // Within the offsets when there is no sequence (count = 0).
  t.next = im.min(im.add(t.seq, one), count);
  Value end = readOffset(b, loc, offsets, t.next);
  t.sq = im.select(t.active, im.sub(end, t.qBase), zero);
  return t;
}

} // namespace mlir::fmha::tiling

using namespace mlir::fmha::tiling;

LogicalResult mlir::fmha::tileAttention(RewriterBase &rewriter, AttentionOp op,
                                        const TileAttentionOptions &options) {
  if (failed(checkTileSizes(op, options)))
    return failure();
  if (options.staticTiles && !isa<RankedTensorType>(op.getQ().getType()))
    return op.emitOpError()
           << "static-tiles tiles the forward on tensors (its tiles are "
              "values); got memrefs";
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);

  // On tensors the tiled form is on values too: the q tiles are an
  // scf.forall whose shared outs are o and lse, the running max, sum and
  // accumulator are carried by the kv loops, and each tile op returns its
  // updated outs. On memrefs the same ops write buffers in place under an
  // scf.parallel.
  const bool onTensors = isa<RankedTensorType>(op.getQ().getType());
  auto qType = cast<ShapedType>(op.getQ().getType());
  auto kType = cast<ShapedType>(op.getK().getType());
  auto vType = cast<ShapedType>(op.getV().getType());
  const int64_t hq = qType.getDimSize(1), hk = kType.getDimSize(1);
  const int64_t d = qType.getDimSize(3), dv = vType.getDimSize(3);
  const int64_t bm = options.blockM, bn = options.blockN;
  ::fmha::MaskSpec mask = op.getMaskSpec();
  MaskAttr maskAttr = op.getMaskAttr();
  FloatAttr scaleAttr = rewriter.getF32FloatAttr(op.getScaleOrDefault());
  FloatAttr softcapAttr = op.getSoftcapAttr();
  Type f32 = rewriter.getF32Type();
  Value q = op.getQ(), k = op.getK(), v = op.getV();

  IndexMath im{rewriter, loc};
  Value zero = im.c(0), one = im.c(1);
  Value batch = im.dim(q, 0), sq = im.dim(q, 2), sk = im.dim(k, 2);
  Value numQTiles = im.ceilDiv(sq, im.c(bm));
  // A variable-length batch: N sequences back to back along the sequence
  // axis of batch 1. The q tiles of all of them are one axis, the tiles of
  // sequence 0, then of 1, ...: at most ceil(Sq / BM) + N of them (each
  // sequence's last tile may be partial), a size of the operands, so that
  // a GPU grid needs no read of the offsets on the host; each iteration
  // finds its sequence by a scan of the offsets (VarlenTile).
  const bool varlen = op.isVarlen();
  Value cuQ = op.getCuSeqlensQ(), cuK = op.getCuSeqlensK();
  // A paged cache: k and v are [pages, Hk, P, D], each kv tile within one
  // page (block-n divides P), its page read from the batch's table row; of
  // static tiles, a kv tile may also span whole pages (P divides block-n),
  // one slice of each.
  const bool paged = op.isPaged();
  Value table = op.getBlockTable(), seqlensK = op.getSeqlensK();
  const int64_t pageSize = kType.getDimSize(2);
  const bool multiPage =
      paged && options.staticTiles && bn > pageSize && bn % pageSize == 0;
  if (paged && pageSize % bn != 0 && !multiPage)
    return op.emitOpError()
           << "the page size of a paged cache (" << pageSize
           << ") must be a multiple of block-n (" << bn
           << "): a kv tile lies within one page"
           << (options.staticTiles ? " or, of static tiles, spans whole pages"
                                   : " (static tiles may span whole pages)");
  Value numSeqs;
  if (varlen) {
    numSeqs = im.sub(im.dim(cuQ, 0), one);
    batch = one;
    numQTiles = im.add(numQTiles, numSeqs);
  }

  // The outs of the whole op: the shared outs of the scf.forall on tensors.
  SmallVector<Value> outs = {op.getO()};
  if (op.getLse())
    outs.push_back(op.getLse());
  scf::ForallOp forall;
  Value b, h, qt, o, lse;
  if (onTensors) {
    forall = scf::ForallOp::create(
        rewriter, loc,
        getAsOpFoldResult(ValueRange{batch, im.c(hq), numQTiles}), outs,
        /*mapping=*/std::nullopt);
    rewriter.setInsertionPointToStart(forall.getBody());
    b = forall.getInductionVar(0);
    h = forall.getInductionVar(1);
    qt = forall.getInductionVar(2);
    o = forall.getRegionIterArgs()[0];
    if (op.getLse())
      lse = forall.getRegionIterArgs()[1];
  } else {
    auto parallel = scf::ParallelOp::create(
        rewriter, loc, ValueRange{zero, zero, zero},
        ValueRange{batch, im.c(hq), numQTiles}, ValueRange{one, one, one});
    // scf.parallel is an automatic allocation scope: the allocas below are
    // per-iteration scratch (m, l, acc and the score tile).
    rewriter.setInsertionPointToStart(parallel.getBody());
    b = parallel.getInductionVars()[0];
    h = parallel.getInductionVars()[1];
    qt = parallel.getInductionVars()[2];
    o = op.getO();
    lse = op.getLse();
  }

  // The tile's sequence n of a variable-length batch: its rows and keys
  // start at qBase and kBase of batch 0, its own Sq and Sk the mask's; a
  // tile past the last sequence's is inactive (no rows, no kv tiles).
  // Of a paged cache, the table row and Sk are the batch's (the sequence's
  // with cu_seqlens_q: chunked prefill).
  Value qBase = zero, kBase = zero, active, tableRow = b;
  if (varlen) {
    VarlenTile tile = emitVarlenTile(rewriter, loc, cuQ, numSeqs, qt, bm);
    active = tile.active;
    qt = tile.qt;
    qBase = tile.qBase;
    sq = tile.sq;
    tableRow = tile.seq;
    if (cuK) {
      kBase = readOffset(rewriter, loc, cuK, tile.seq);
      sk = im.sub(readOffset(rewriter, loc, cuK, tile.next), kBase);
    }
    numQTiles = im.ceilDiv(sq, im.c(bm));
  }
  if (paged && active) {
    // An inactive tile (there may be no sequence at all) reads no length.
    auto read = scf::IfOp::create(
        rewriter, loc, active,
        [&](OpBuilder &then, Location) {
          scf::YieldOp::create(then, loc,
                               readOffset(then, loc, seqlensK, tableRow));
        },
        [&](OpBuilder &els, Location) {
          scf::YieldOp::create(els, loc, zero);
        });
    sk = read.getResult(0);
  } else if (paged) {
    sk = readOffset(rewriter, loc, seqlensK, tableRow);
  }
  ScoreConfig scores{mask, maskAttr, scaleAttr, softcapAttr, sq, sk};
  // Longest first: under a right bound, later q tiles see more keys.
  if (options.longestFirst && mask.hasRight())
    qt = im.sub(im.sub(numQTiles, one), qt);
  if (active) // an inactive tile reads no row at row 0
    qt = im.select(active, qt, zero);
  Value kvHead = hq == hk ? h : im.div(h, im.c(hq / hk));
  Value r0 = im.mul(qt, im.c(bm));
  Value rows = im.min(im.c(bm), im.sub(sq, r0));
  if (active)
    rows = im.select(active, rows, zero);
  Value r1 = im.add(r0, rows);
  // The tile's first row in the tensors.
  Value row0 = im.add(qBase, r0);

  OpFoldResult i0 = rewriter.getIndexAttr(0), i1 = rewriter.getIndexAttr(1);
  SmallVector<OpFoldResult> oOffsets = {b, h, row0, i0};
  SmallVector<OpFoldResult> oSizes = {i1, i1, rows, rewriter.getIndexAttr(dv)};
  SmallVector<OpFoldResult> lseOffsets = {b, h, row0},
                            lseSizes = {i1, i1, rows};
  // With static tiles, the slices in range padded with zeros to `tileRows`
  // and to the tile's head dim: the next power of two (the register
  // layouts' shapes; the matrix instructions' K and N where D is 80, 96 or
  // 192), the padding zeros in the products and never written out.
  const bool padded = options.staticTiles;
  const int64_t dvTile = padded ? int64_t(llvm::PowerOf2Ceil(dv)) : dv;
  auto inputTile = [&](OpBuilder &builder, Value source,
                       ArrayRef<OpFoldResult> offsets, Value extent,
                       int64_t tileRows, int64_t cols) -> Value {
    if (padded)
      return paddedInputTile(builder, loc, source, offsets, extent, tileRows,
                             cols);
    return tileView(builder, loc, source, offsets,
                    {i1, i1, extent, builder.getIndexAttr(cols)}, 2);
  };
  Value qTile = inputTile(rewriter, q, {b, h, row0, i0}, rows, bm, d);

  // Scratch of a static tile shape, viewed at the tile's extent: on tensors
  // an alloc_tensor each (distinct buffers, never merged by CSE; the CPU
  // pipeline puts them on the stack), allocas on memrefs. Static tiles are
  // values of the whole shape (tensor.empty; registers on the GPU).
  auto scratch = [&](ArrayRef<int64_t> shape, Type type) -> Value {
    if (padded)
      return tensor::EmptyOp::create(rewriter, loc, shape, type);
    if (onTensors)
      return bufferization::AllocTensorOp::create(
          rewriter, loc, RankedTensorType::get(shape, type), ValueRange{});
    return memref::AllocaOp::create(rewriter, loc,
                                    MemRefType::get(shape, type));
  };
  Value oTile, lseTile;
  if (padded) {
    oTile = scratch({bm, dvTile}, getElementTypeOrSelf(o.getType()));
    if (lse)
      lseTile = scratch({bm}, f32);
  } else {
    oTile = tileView(rewriter, loc, o, oOffsets, oSizes, 2);
    if (lse)
      lseTile = tileView(rewriter, loc, lse, lseOffsets, lseSizes, 1);
  }
  Value mTile = scratch({bm}, f32), lTile = scratch({bm}, f32);
  Value accTile = scratch({bm, dvTile}, f32);
  Value sBuf = padded ? Value() : scratch({bm, bn}, f32);
  if (!padded) {
    mTile = tileView(rewriter, loc, mTile, {i0}, {rows}, 1);
    lTile = tileView(rewriter, loc, lTile, {i0}, {rows}, 1);
    accTile = tileView(rewriter, loc, accTile, {i0, i0},
                       {rows, rewriter.getIndexAttr(dv)}, 2);
  }
  // The running max, sum and accumulator of the q tile; a learned sink
  // logit starts the max and the sum (its term, with no value).
  Value sink;
  if (Value sinks = op.getSinks())
    sink = onTensors ? Value(tensor::ExtractOp::create(rewriter, loc, sinks,
                                                       ValueRange{h}))
                     : Value(memref::LoadOp::create(rewriter, loc, sinks,
                                                    ValueRange{h}));
  SmallVector<Value> state = {mTile, lTile, accTile};
  state = updatedOuts(TileInitOp::create(rewriter, loc, resultTypesFor(state),
                                         mTile, lTile, accTile, sink));

  // --- Mask-derived kv tile bounds for this q tile (MaskUtils.h). ---
  KvLoopBounds bounds =
      emitKvLoopBounds(rewriter, loc, mask, r0, r1, sq, sk, bn);
  if (active) {
    bounds.end = im.select(active, bounds.end, bounds.begin);
    if (bounds.sinkEnd)
      bounds.sinkEnd = im.select(active, bounds.sinkEnd, zero);
  }

  // A kv tile over bn / P whole pages of the cache: the concatenation of a
  // padded slice of each page. The tile starts at a page (c0 a multiple of
  // P); a page past the sequence's last (its slice empty) takes that last
  // page's table entry, so that no entry past the length is read.
  auto pagesTile = [&](OpBuilder &builder, Value cache, Value c0, Value cols,
                       int64_t width) {
    IndexMath bi{builder, loc};
    Value first = bi.div(c0, bi.c(pageSize));
    Value last = bi.div(bi.sub(sk, bi.c(1)), bi.c(pageSize));
    SmallVector<Value> pieces;
    for (int64_t j = 0; j < bn / pageSize; ++j) {
      Value entry = bi.min(bi.add(first, bi.c(j)), last);
      Value page = readOffset(builder, loc, table, {tableRow, entry});
      Value keys = bi.max(
          bi.c(0), bi.min(bi.c(pageSize), bi.sub(cols, bi.c(j * pageSize))));
      pieces.push_back(paddedInputTile(
          builder, loc, cache, {page, kvHead, i0, i0}, keys, pageSize, width));
    }
    return tensor::ConcatOp::create(builder, loc, /*dim=*/0, pieces)
        .getResult();
  };

  // One kv tile: scores (element mask only on tiles that cross a mask
  // edge), online softmax, accumulate. Returns the updated state.
  auto emitVisit = [&](OpBuilder &builder, Value kt, ValueRange in) {
    IndexMath bi{builder, loc};
    Value c0 = bi.mul(kt, bi.c(bn));
    Value cols = bi.min(bi.c(bn), bi.sub(sk, c0));
    // The tile's first key in k and v: of batch b (a sequence's from its
    // offset), or of a page of the cache.
    OpFoldResult kvBatch = b;
    Value key0 = bi.add(kBase, c0);
    Value kTile, vTile;
    if (multiPage) {
      kTile = pagesTile(builder, k, c0, cols, d);
      vTile = pagesTile(builder, v, c0, cols, dv);
    } else {
      if (paged) {
        kvBatch = readOffset(builder, loc, table,
                             {tableRow, bi.div(c0, bi.c(pageSize))});
        key0 = bi.rem(c0, bi.c(pageSize));
      }
      kTile = inputTile(builder, k, {kvBatch, kvHead, key0, i0}, cols, bn, d);
      vTile = inputTile(builder, v, {kvBatch, kvHead, key0, i0}, cols, bn, dv);
    }
    Value sTile = padded
                      ? tensor::EmptyOp::create(builder, loc, {bm, bn}, f32)
                      : tileView(builder, loc, sBuf, {i0, i0}, {rows, cols}, 2);
    sTile = emitScores(builder, loc, scores, qTile, kTile, sTile, r0, r1, c0,
                       bi.add(c0, padded ? bi.c(bn) : cols), padded);
    SmallVector<Value> softmaxOuts = {sTile, in[0], in[1], in[2]};
    SmallVector<Value> next = updatedOuts(TileSoftmaxOp::create(
        builder, loc, resultTypesFor(softmaxOuts), sTile, in[0], in[1], in[2]));
    Value acc =
        updatedOuts(TilePVOp::create(builder, loc, resultTypesFor(next[3]),
                                     next[0], vTile, next[3]))
            .front();
    return SmallVector<Value>{next[1], next[2], acc};
  };

  auto emitKvLoop = [&](Value lb, Value ub, StringRef name) {
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, one, carried(state),
        [&](OpBuilder &builder, Location, Value kt, ValueRange args) {
          SmallVector<Value> next =
              emitVisit(builder, kt, onTensors ? args : ValueRange(state));
          scf::YieldOp::create(builder, loc, carried(next));
        });
    loop->setAttr("fmha.kv_loop", rewriter.getStringAttr(name));
    if (onTensors)
      state = SmallVector<Value>(loop.getResults());
  };
  if (bounds.sinkEnd)
    emitKvLoop(zero, bounds.sinkEnd, "sink");
  emitKvLoop(bounds.begin, bounds.end, "window");

  SmallVector<Value> tileOuts = {oTile};
  if (lseTile)
    tileOuts.push_back(lseTile);
  SmallVector<Value> written = updatedOuts(
      TileFinalizeOp::create(rewriter, loc, resultTypesFor(tileOuts), state[0],
                             state[1], state[2], oTile, lseTile));

  if (!onTensors) {
    rewriter.eraseOp(op);
    return success();
  }
  // Each q tile's o and lse rows go back into the shared outs (of a static
  // tile, the rows in range).
  if (padded) {
    written[0] = tileView(rewriter, loc, written[0], {i0, i0},
                          {rows, rewriter.getIndexAttr(dv)}, 2);
    if (lse)
      written[1] = tileView(rewriter, loc, written[1], {i0}, {rows}, 1);
  }
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> oStrides(4, i1), lseStrides(3, i1);
  tensor::ParallelInsertSliceOp::create(rewriter, loc, written[0], o, oOffsets,
                                        oSizes, oStrides);
  if (lse)
    tensor::ParallelInsertSliceOp::create(rewriter, loc, written[1], lse,
                                          lseOffsets, lseSizes, lseStrides);
  rewriter.replaceOp(op, forall.getResults());
  return success();
}

namespace {

struct TileAttentionPattern : OpRewritePattern<AttentionOp> {
  TileAttentionPattern(MLIRContext *context, TileAttentionOptions options)
      : OpRewritePattern(context), options(options) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    return tileAttention(rewriter, op, options);
  }

  TileAttentionOptions options;
};

struct FmhaTileAttentionPass
    : mlir::fmha::impl::FmhaTileAttentionPassBase<FmhaTileAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    TileAttentionOptions tileOptions{blockM, blockN, staticTiles, longestFirst};
    IRRewriter rewriter(&getContext());
    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      LogicalResult result = success();
      if (auto fwd = dyn_cast<AttentionOp>(op))
        result = tileAttention(rewriter, fwd, tileOptions);
      else if (auto bwd = dyn_cast<AttentionBwdOp>(op);
               bwd && (backwardOnTensors ||
                       !isa<RankedTensorType>(bwd.getQ().getType())))
        result = tileAttentionBwd(rewriter, bwd, tileOptions);
      if (failed(result))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

void mlir::fmha::populateFmhaTileAttentionPatterns(
    RewritePatternSet &patterns, const TileAttentionOptions &options) {
  patterns.add<TileAttentionPattern>(patterns.getContext(), options);
}
