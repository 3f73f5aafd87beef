//===- TileAttention.cpp - Tile fmha.attention into flash form ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha.attention -> scf.parallel (b, hq, q-tile) { kv-tile loops of
// fmha.tile_qk / tile_softmax / tile_pv; tile_finalize }.
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

#include "fmha/Transforms/MaskUtils.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHATILEATTENTIONPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// A rank-reducing subview `source[offsets][sizes]` with unit strides that
/// drops the leading unit dims.
Value tileView(OpBuilder &b, Location loc, Value source,
               ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
               int64_t keepRank) {
  auto sourceType = cast<MemRefType>(source.getType());
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  SmallVector<int64_t> keptShape;
  for (OpFoldResult size : sizes.take_back(keepRank)) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    keptShape.push_back(constant ? *constant : ShapedType::kDynamic);
  }
  auto type = memref::SubViewOp::inferRankReducedResultType(
      keptShape, sourceType, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(type), source,
                                   offsets, sizes, strides);
}

struct AttentionOperands {
  Value q, k, v, o, lse;
};

/// Bridges tensor operands to memrefs: inputs through to_buffer, outputs
/// into fresh allocations that become the op's results.
AttentionOperands bufferize(RewriterBase &rewriter, AttentionOp op) {
  Location loc = op.getLoc();
  auto toBuffer = [&](Value tensor) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    return bufferization::ToBufferOp::create(rewriter, loc, memrefType, tensor,
                                             /*read_only=*/true);
  };
  auto alloc = [&](Value like) -> Value {
    auto type = cast<RankedTensorType>(like.getType());
    SmallVector<Value> dynSizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynSizes.push_back(tensor::DimOp::create(rewriter, loc, like, i));
    return memref::AllocOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        dynSizes);
  };
  AttentionOperands m;
  m.q = toBuffer(op.getQ());
  m.k = toBuffer(op.getK());
  m.v = toBuffer(op.getV());
  m.o = alloc(op.getO());
  if (op.getLse())
    m.lse = alloc(op.getLse());
  return m;
}

} // namespace

LogicalResult mlir::fmha::tileAttention(RewriterBase &rewriter, AttentionOp op,
                                        const TileAttentionOptions &options) {
  if (options.blockM <= 0 || options.blockN <= 0)
    return op.emitOpError()
           << "tile sizes must be positive, got block-m=" << options.blockM
           << " block-n=" << options.blockN;
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);

  bool onTensors = isa<RankedTensorType>(op.getQ().getType());
  AttentionOperands m;
  if (onTensors)
    m = bufferize(rewriter, op);
  else
    m = {op.getQ(), op.getK(), op.getV(), op.getO(), op.getLse()};

  auto qType = cast<MemRefType>(m.q.getType());
  auto kType = cast<MemRefType>(m.k.getType());
  auto vType = cast<MemRefType>(m.v.getType());
  const int64_t hq = qType.getDimSize(1), hk = kType.getDimSize(1);
  const int64_t d = qType.getDimSize(3), dv = vType.getDimSize(3);
  const int64_t bm = options.blockM, bn = options.blockN;
  ::fmha::MaskSpec mask = op.getMaskSpec();
  MaskAttr maskAttr = op.getMaskAttr();
  FloatAttr scaleAttr = rewriter.getF32FloatAttr(op.getScaleOrDefault());
  FloatAttr softcapAttr = op.getSoftcapAttr();
  Type f32 = rewriter.getF32Type();

  IndexMath im{rewriter, loc};
  Value zero = im.c(0), one = im.c(1);
  Value batch = im.dim(m.q, 0), sq = im.dim(m.q, 2), sk = im.dim(m.k, 2);
  Value numQTiles = im.ceilDiv(sq, im.c(bm));

  auto parallel = scf::ParallelOp::create(
      rewriter, loc, ValueRange{zero, zero, zero},
      ValueRange{batch, im.c(hq), numQTiles}, ValueRange{one, one, one});
  // scf.parallel is an automatic allocation scope: the allocas below are
  // per-iteration scratch (m, l, acc and the score tile).
  rewriter.setInsertionPointToStart(parallel.getBody());

  Value b = parallel.getInductionVars()[0];
  Value h = parallel.getInductionVars()[1];
  Value qt = parallel.getInductionVars()[2];
  Value kvHead = hq == hk ? h : im.div(h, im.c(hq / hk));
  Value r0 = im.mul(qt, im.c(bm));
  Value rows = im.min(im.c(bm), im.sub(sq, r0));
  Value r1 = im.add(r0, rows);

  OpFoldResult i0 = rewriter.getIndexAttr(0), i1 = rewriter.getIndexAttr(1);
  Value qTile = tileView(rewriter, loc, m.q, {b, h, r0, i0},
                         {i1, i1, rows, rewriter.getIndexAttr(d)}, 2);
  Value oTile = tileView(rewriter, loc, m.o, {b, h, r0, i0},
                         {i1, i1, rows, rewriter.getIndexAttr(dv)}, 2);
  Value lseTile;
  if (m.lse)
    lseTile = tileView(rewriter, loc, m.lse, {b, h, r0}, {i1, i1, rows}, 1);

  auto scratch = [&](ArrayRef<int64_t> shape) -> Value {
    return memref::AllocaOp::create(rewriter, loc, MemRefType::get(shape, f32));
  };
  Value mBuf = scratch({bm}), lBuf = scratch({bm});
  Value accBuf = scratch({bm, dv}), sBuf = scratch({bm, bn});
  Value mTile = tileView(rewriter, loc, mBuf, {i0}, {rows}, 1);
  Value lTile = tileView(rewriter, loc, lBuf, {i0}, {rows}, 1);
  Value accTile = tileView(rewriter, loc, accBuf, {i0, i0},
                           {rows, rewriter.getIndexAttr(dv)}, 2);
  TileInitOp::create(rewriter, loc, mTile, lTile, accTile);

  // --- Mask-derived kv tile bounds for this q tile (MaskUtils.h). ---
  KvLoopBounds bounds =
      emitKvLoopBounds(rewriter, loc, mask, r0, r1, sq, sk, bn);

  // One kv tile: scores (element mask only on tiles that cross a mask
  // edge), online softmax, accumulate.
  auto emitVisit = [&](OpBuilder &builder, Value kt) {
    IndexMath bi{builder, loc};
    Value c0 = bi.mul(kt, bi.c(bn));
    Value cols = bi.min(bi.c(bn), bi.sub(sk, c0));
    Value kTile = tileView(builder, loc, m.k, {b, kvHead, c0, i0},
                           {i1, i1, cols, builder.getIndexAttr(d)}, 2);
    Value vTile = tileView(builder, loc, m.v, {b, kvHead, c0, i0},
                           {i1, i1, cols, builder.getIndexAttr(dv)}, 2);
    Value sTile = tileView(builder, loc, sBuf, {i0, i0}, {rows, cols}, 2);
    auto emitQK = [&](OpBuilder &qb, bool masked) {
      SmallVector<Value> coords;
      if (masked)
        coords = {r0, c0, sq, sk};
      TileQKOp::create(qb, loc, qTile, kTile, sTile, coords, scaleAttr,
                       softcapAttr, masked ? maskAttr : MaskAttr());
    };
    if (mask.isNone()) {
      emitQK(builder, /*masked=*/false);
    } else {
      Value full = emitKvTileIsFull(builder, loc, mask, r0, r1, c0,
                                    bi.add(c0, cols), sq, sk);
      scf::IfOp::create(
          builder, loc, full,
          [&](OpBuilder &then, Location) {
            emitQK(then, /*masked=*/false);
            scf::YieldOp::create(then, loc);
          },
          [&](OpBuilder &els, Location) {
            emitQK(els, /*masked=*/true);
            scf::YieldOp::create(els, loc);
          });
    }
    TileSoftmaxOp::create(builder, loc, sTile, mTile, lTile, accTile);
    TilePVOp::create(builder, loc, sTile, vTile, accTile);
  };

  auto emitKvLoop = [&](Value lb, Value ub, StringRef name) {
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, one, ValueRange{},
        [&](OpBuilder &builder, Location, Value kt, ValueRange) {
          emitVisit(builder, kt);
          scf::YieldOp::create(builder, loc);
        });
    loop->setAttr("fmha.kv_loop", rewriter.getStringAttr(name));
  };
  if (bounds.sinkEnd)
    emitKvLoop(zero, bounds.sinkEnd, "sink");
  emitKvLoop(bounds.begin, bounds.end, "window");

  TileFinalizeOp::create(rewriter, loc, mTile, lTile, accTile, oTile, lseTile);

  // Replace the op.
  if (onTensors) {
    rewriter.setInsertionPointAfter(parallel);
    SmallVector<Value> results;
    results.push_back(bufferization::ToTensorOp::create(
        rewriter, loc, op.getO().getType(), m.o, /*restrict=*/true,
        /*writable=*/true));
    if (m.lse)
      results.push_back(bufferization::ToTensorOp::create(
          rewriter, loc, op.getLse().getType(), m.lse, /*restrict=*/true,
          /*writable=*/true));
    rewriter.replaceOp(op, results);
  } else {
    rewriter.eraseOp(op);
  }
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
    TileAttentionOptions tileOptions{blockM, blockN};
    IRRewriter rewriter(&getContext());
    bool failedAny = false;
    getOperation()->walk([&](AttentionOp op) {
      if (failed(tileAttention(rewriter, op, tileOptions)))
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
