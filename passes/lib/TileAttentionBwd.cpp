//===- TileAttentionBwd.cpp - Tile fmha.attention_bwd ---------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha.attention_bwd -> three parallel loops of tile ops (DESIGN.md section
// 1's gradients): Dsum = rowsum(dO o) per (b, hq, q tile); dK and dV per
// (b, hk, kv tile) over the q tiles of the heads of its group that see it;
// dQ per (b, hq, q tile), from an f32 accumulator the kv tiles add into
// atomically, or (deterministic) recomputed over the visible kv tiles in a
// fixed order. Each (q tile, kv tile) pair recomputes the scores, P from the
// lse, dP = dO V^T and dS = P (dP - Dsum).
//
// On memrefs (and tensors bridged to buffers) the tiles are views of the
// operands and stack scratch. With static tiles on tensors the tiles are
// values of static shapes as the forward's (q, k, v, o, dO padded with zeros
// past the edges of Sq and Sk and to the next power of two of the head dims,
// the lse with +inf so that padded rows have P = 0): each loop an scf.forall
// whose shared outs are Dsum, dK and dV, or dQ, the accumulators carried by
// the loops. dQ is recomputed per q tile when the op is deterministic;
// otherwise the dK/dV loop adds scale dS K into an f32 accumulator (a
// buffer all its iterations share, fmha.atomic_add), zeroed by the Dsum loop,
// and the last loop rounds it into dQ: one sweep over K and V instead of two.
// The dK/dV loop computes its tiles transposed (S^T = K Q^T, P^T, dP^T = V
// dO^T, dS^T: the keys as rows, FlashAttention-3's swapped products), so that
// every product of both loops is A B^T or A B with its rows in the loop's own
// tile: dV += P^T dO and dK += dS^T Q take P^T and dS^T as they come, as the
// forward's O += P V takes P.
//
//===----------------------------------------------------------------------===//

#include "TileAttentionUtils.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::tiling;

namespace {

/// What both tilings of the backward read off the op: the score
/// attributes, the index values of the problem's sizes and the tile counts.
struct BwdProblem {
  FloatAttr scale, one, softcap;
  Value zero, oneIndex, batch, sq, sk, numQTiles, numKvTiles;
  ScoreConfig scores;
};

BwdProblem emitBwdProblem(RewriterBase &rewriter, Location loc,
                          AttentionBwdOp op, Value q, Value k,
                          const TileAttentionOptions &options) {
  BwdProblem p;
  p.scale = rewriter.getF32FloatAttr(op.getScaleOrDefault());
  p.one = rewriter.getF32FloatAttr(1.0);
  p.softcap = op.getSoftcapAttr();
  IndexMath im{rewriter, loc};
  p.zero = im.c(0);
  p.oneIndex = im.c(1);
  p.batch = im.dim(q, 0);
  p.sq = im.dim(q, 2);
  p.sk = im.dim(k, 2);
  p.numQTiles = im.ceilDiv(p.sq, im.c(options.blockM));
  p.numKvTiles = im.ceilDiv(p.sk, im.c(options.blockN));
  p.scores = {
      op.getMaskSpec(), op.getMaskAttr(), p.scale, p.softcap, p.sq, p.sk};
  return p;
}

/// The backward on values with static tiles (the header says how).
LogicalResult tileAttentionBwdOnValues(RewriterBase &rewriter,
                                       AttentionBwdOp op,
                                       const TileAttentionOptions &options) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);

  Value q = op.getQ(), k = op.getK(), v = op.getV(), o = op.getO();
  Value lse = op.getLse(), dout = op.getDout();
  auto qType = cast<RankedTensorType>(q.getType());
  const int64_t hq = qType.getDimSize(1);
  const int64_t hk = cast<ShapedType>(k.getType()).getDimSize(1);
  const int64_t group = hq / hk;
  const int64_t d = qType.getDimSize(3);
  const int64_t dvDim = cast<ShapedType>(v.getType()).getDimSize(3);
  const int64_t dTile = int64_t(llvm::PowerOf2Ceil(d));
  const int64_t dvTile = int64_t(llvm::PowerOf2Ceil(dvDim));
  const int64_t bm = options.blockM, bn = options.blockN;
  ::fmha::MaskSpec mask = op.getMaskSpec();
  Type f32 = rewriter.getF32Type();
  OpFoldResult i0 = rewriter.getIndexAttr(0), i1 = rewriter.getIndexAttr(1);
  const BwdProblem pb = emitBwdProblem(rewriter, loc, op, q, k, options);
  IndexMath im{rewriter, loc};

  auto empty = [&](OpBuilder &b, ArrayRef<int64_t> shape, Type type) -> Value {
    return tensor::EmptyOp::create(b, loc, shape, type);
  };
  auto zeros = [&](OpBuilder &b, ArrayRef<int64_t> shape) -> Value {
    Value init = empty(b, shape, f32);
    return TileFillOp::create(b, loc, TypeRange{init.getType()}, init,
                              b.getF32FloatAttr(0.0))
        ->getResult(0);
  };
  /// c (+)= alpha op(a) op(b), the updated c.
  auto matmul = [&](OpBuilder &b, Value a, Value bv, Value c, FloatAttr alpha,
                    bool transposeA, bool transposeB, bool accumulate) {
    auto unit = [&](bool flag) { return flag ? b.getUnitAttr() : UnitAttr(); };
    return TileMatmulOp::create(b, loc, TypeRange{c.getType()}, a, bv, c, alpha,
                                unit(transposeA), unit(transposeB),
                                unit(accumulate), UnitAttr())
        ->getResult(0);
  };
  /// Rows [r0, r0 + rows) of the [B, H, S] f32 `source` as a static row
  /// vector of bm, padded with `pad`.
  auto rowTile = [&](OpBuilder &b, Value source, Value bi, Value h, Value r0,
                     Value rows, double pad) -> Value {
    Value slice = tileView(b, loc, source, {bi, h, r0}, {i1, i1, rows}, 1);
    Value padValue = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(pad));
    return tensor::createPadHighOp(RankedTensorType::get({bm}, f32), slice,
                                   padValue, /*nofold=*/false, loc, b);
  };
  /// One scf.forall over (b, heads, tiles) of `rows` rows each with `outs`
  /// shared: `body` builds the iteration and returns, for each out, the tile
  /// to insert, its offsets and its sizes. The loop says its tiles' rows
  /// (`fmha.loop_rows`): the dK/dV loop's are keys (block-n), the others'
  /// queries (block-m), and fmha-assign-layouts{warp-rows} gives each loop
  /// the warps of its rows.
  struct Insert {
    Value tile;
    SmallVector<OpFoldResult> offsets, sizes;
  };
  auto forallOver = [&](Value heads, Value tiles, int64_t rows, ValueRange outs,
                        function_ref<SmallVector<Insert>(
                            OpBuilder &, Value, Value, Value, ValueRange)>
                            body) {
    auto forall = scf::ForallOp::create(
        rewriter, loc, getAsOpFoldResult(ValueRange{pb.batch, heads, tiles}),
        outs,
        /*mapping=*/std::nullopt);
    forall->setAttr(kLoopRowsAttr, rewriter.getI64IntegerAttr(rows));
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(forall.getBody());
    SmallVector<Insert> inserts =
        body(rewriter, forall.getInductionVar(0), forall.getInductionVar(1),
             forall.getInductionVar(2), forall.getRegionIterArgs());
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [insert, out] :
         llvm::zip_equal(inserts, forall.getRegionIterArgs()))
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, insert.tile, out, insert.offsets, insert.sizes,
          SmallVector<OpFoldResult>(insert.offsets.size(), i1));
    return SmallVector<Value>(forall.getResults());
  };
  /// The f32 accumulator `acc` in the element type of `out`, its rows and
  /// columns in range, for the out tile at (bi, h, r0).
  auto outTile = [&](OpBuilder &b, Value acc, Value out, Value bi, Value h,
                     Value r0, Value rows, int64_t cols) {
    auto accType = cast<RankedTensorType>(acc.getType());
    Value init = empty(b, accType.getShape(), getElementTypeOrSelf(out));
    Value stored =
        TileStoreOp::create(b, loc, TypeRange{init.getType()}, acc, init)
            ->getResult(0);
    return Insert{
        tileView(b, loc, stored, {i0, i0}, {rows, b.getIndexAttr(cols)}, 2),
        {bi, h, r0, i0},
        {i1, i1, rows, b.getIndexAttr(cols)}};
  };

  /// A q tile's rows [r0, r1) and its static tiles.
  struct QTile {
    Value r0, r1, rows, q, dout, lse, dsum;
  };
  auto qTileAt = [&](OpBuilder &b, Value dsum, Value bi, Value h, Value qt) {
    IndexMath m{b, loc};
    QTile t;
    t.r0 = m.mul(qt, m.c(bm));
    t.rows = m.min(m.c(bm), m.sub(pb.sq, t.r0));
    t.r1 = m.add(t.r0, t.rows);
    t.q = paddedInputTile(b, loc, q, {bi, h, t.r0, i0}, t.rows, bm, d);
    t.dout =
        paddedInputTile(b, loc, dout, {bi, h, t.r0, i0}, t.rows, bm, dvDim);
    // Rows past Sq get P = exp(s - inf) = 0: no term in dK and dV.
    t.lse = rowTile(b, lse, bi, h, t.r0, t.rows,
                    std::numeric_limits<double>::infinity());
    t.dsum = rowTile(b, dsum, bi, h, t.r0, t.rows, 0.0);
    return t;
  };
  /// The static kv tile kt of kv head kvh: keys [c0, c0 + bn) padded past Sk.
  struct KvTile {
    Value c0, cols, k, v;
  };
  auto kvTileAt = [&](OpBuilder &b, Value bi, Value kvh, Value kt) {
    IndexMath m{b, loc};
    KvTile t;
    t.c0 = m.mul(kt, m.c(bn));
    t.cols = m.min(m.c(bn), m.sub(pb.sk, t.c0));
    t.k = paddedInputTile(b, loc, k, {bi, kvh, t.c0, i0}, t.cols, bn, d);
    t.v = paddedInputTile(b, loc, v, {bi, kvh, t.c0, i0}, t.cols, bn, dvDim);
    return t;
  };
  /// P and dS of one (q tile, kv tile) pair: the scores (the element mask on
  /// tiles that cross a mask edge or Sk), P from the lse, dP = dO V^T and
  /// dS = P (dP - Dsum). `transposed` gives P^T and dS^T instead (keys as
  /// rows: S^T = K Q^T, dP^T = V dO^T), the form whose rows are the dK/dV
  /// loop's (the rows of dV += P^T dO and dK += dS^T Q).
  auto gradTile = [&](OpBuilder &b, const QTile &t, const KvTile &kv,
                      bool transposed) {
    IndexMath m{b, loc};
    SmallVector<int64_t> shape = transposed ? SmallVector<int64_t>{bn, bm}
                                            : SmallVector<int64_t>{bm, bn};
    UnitAttr transposedAttr = transposed ? b.getUnitAttr() : UnitAttr();
    Value s = emitScores(b, loc, pb.scores, t.q, kv.k, empty(b, shape, f32),
                         t.r0, t.r1, kv.c0, m.add(kv.c0, m.c(bn)),
                         /*padded=*/true, transposed);
    Value pInit = empty(b, shape, f32);
    Value p = TileBwdProbsOp::create(b, loc, TypeRange{pInit.getType()}, s,
                                     t.lse, pInit, transposedAttr)
                  ->getResult(0);
    Value dp = transposed
                   ? matmul(b, kv.v, t.dout, empty(b, shape, f32), pb.one,
                            /*transposeA=*/false, /*transposeB=*/true,
                            /*accumulate=*/false)
                   : matmul(b, t.dout, kv.v, empty(b, shape, f32), pb.one,
                            /*transposeA=*/false, /*transposeB=*/true,
                            /*accumulate=*/false);
    Value ds = TileBwdDsOp::create(b, loc, TypeRange{dp.getType()}, p, t.dsum,
                                   pb.softcap ? s : Value(), dp, pb.softcap,
                                   transposedAttr)
                   ->getResult(0);
    return std::make_pair(p, ds);
  };

  // Not deterministic: dQ's f32 accumulator, [B, Hq, q tiles x bm, D
  // padded] (whole tiles: no edge), the launch manifest's workspace
  // "dq_accum".
  Value dqAcc;
  if (!op.getDeterministic()) {
    auto alloc = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic, hq, ShapedType::kDynamic, dTile},
                        f32),
        ValueRange{pb.batch, im.mul(pb.numQTiles, im.c(bm))});
    alloc->setAttr("fmha.workspace", rewriter.getStringAttr("dq_accum"));
    dqAcc = alloc;
  }
  /// The accumulator's tile of q tile r0 / bm of head h.
  auto dqAccTile = [&](OpBuilder &b, Value bi, Value h, Value r0) {
    return tileView(b, loc, dqAcc, {bi, h, r0, i0},
                    {i1, i1, b.getIndexAttr(bm), b.getIndexAttr(dTile)}, 2);
  };

  // --- 1. Dsum = rowsum(dO o) per (b, hq, q tile), into a buffer of its
  // own (freed after the dQ loop: bufferization adds no deallocation); the
  // dQ accumulator's tile zeroed. ---
  Value dsumInit = bufferization::AllocTensorOp::create(
      rewriter, loc,
      RankedTensorType::get({ShapedType::kDynamic, hq, ShapedType::kDynamic},
                            f32),
      ValueRange{pb.batch, pb.sq});
  Value dsum = forallOver(
      im.c(hq), pb.numQTiles, bm, dsumInit,
      [&](OpBuilder &b, Value bi, Value h, Value qt, ValueRange) {
        IndexMath m{b, loc};
        Value r0 = m.mul(qt, m.c(bm));
        Value rows = m.min(m.c(bm), m.sub(pb.sq, r0));
        Value doTile =
            paddedInputTile(b, loc, dout, {bi, h, r0, i0}, rows, bm, dvDim);
        Value oTile =
            paddedInputTile(b, loc, o, {bi, h, r0, i0}, rows, bm, dvDim);
        Value init = empty(b, {bm}, f32);
        Value rowDot = TileRowDotOp::create(b, loc, TypeRange{init.getType()},
                                            doTile, oTile, init)
                           ->getResult(0);
        if (dqAcc)
          TileStoreOp::create(b, loc, TypeRange{}, zeros(b, {bm, dTile}),
                              dqAccTile(b, bi, h, r0));
        return SmallVector<Insert>{{tileView(b, loc, rowDot, {i0}, {rows}, 1),
                                    {bi, h, r0},
                                    {i1, i1, rows}}};
      })[0];

  // --- 2. dK and dV per (b, hk, kv tile), over the q heads of its group. ---
  SmallVector<Value> dkdv = forallOver(
      im.c(hk), pb.numKvTiles, bn, ValueRange{op.getDk(), op.getDv()},
      [&](OpBuilder &b, Value bi, Value kvh, Value kt, ValueRange outs) {
        IndexMath m{b, loc};
        KvTile kv = kvTileAt(b, bi, kvh, kt);
        QLoopBounds qb = emitQLoopBounds(
            b, loc, mask, kv.c0, m.add(kv.c0, kv.cols), pb.sq, pb.sk, bm);
        auto heads = scf::ForOp::create(
            b, loc, pb.zero, m.c(group), pb.oneIndex,
            ValueRange{zeros(b, {bn, dTile}), zeros(b, {bn, dvTile})},
            [&](OpBuilder &hb, Location, Value g, ValueRange accs) {
              IndexMath hm{hb, loc};
              Value h = hm.add(hm.mul(kvh, hm.c(group)), g);
              auto qLoop = scf::ForOp::create(
                  hb, loc, qb.begin, qb.end, pb.oneIndex, accs,
                  [&](OpBuilder &qb2, Location, Value qt, ValueRange acc) {
                    QTile t = qTileAt(qb2, dsum, bi, h, qt);
                    auto [pT, dsT] = gradTile(qb2, t, kv, /*transposed=*/true);
                    // dV += P^T dO; dK += scale dS^T Q.
                    Value dvAcc = matmul(qb2, pT, t.dout, acc[1], pb.one,
                                         /*transposeA=*/false,
                                         /*transposeB=*/false,
                                         /*accumulate=*/true);
                    Value dkAcc = matmul(qb2, dsT, t.q, acc[0], pb.scale,
                                         /*transposeA=*/false,
                                         /*transposeB=*/false,
                                         /*accumulate=*/true);
                    // dQ += scale dS K, shared with the other kv tiles.
                    if (dqAcc)
                      AtomicAddOp::create(
                          qb2, loc,
                          matmul(qb2, dsT, kv.k, zeros(qb2, {bm, dTile}),
                                 pb.scale, /*transposeA=*/true,
                                 /*transposeB=*/false, /*accumulate=*/false),
                          dqAccTile(qb2, bi, h, t.r0));
                    scf::YieldOp::create(qb2, loc, ValueRange{dkAcc, dvAcc});
                  });
              qLoop->setAttr("fmha.q_loop", hb.getUnitAttr());
              scf::YieldOp::create(hb, loc, qLoop.getResults());
            });
        heads->setAttr("fmha.group_loop", b.getUnitAttr());
        return SmallVector<Insert>{
            outTile(b, heads.getResult(0), outs[0], bi, kvh, kv.c0, kv.cols, d),
            outTile(b, heads.getResult(1), outs[1], bi, kvh, kv.c0, kv.cols,
                    dvDim)};
      });

  // --- 3. dQ per (b, hq, q tile): the accumulator rounded, or recomputed
  // over its visible kv tiles in order. ---
  Value dqAccValues;
  if (dqAcc)
    dqAccValues = bufferization::ToTensorOp::create(
        rewriter, loc,
        RankedTensorType::get(cast<MemRefType>(dqAcc.getType()).getShape(),
                              f32),
        dqAcc, /*restrict=*/true, /*writable=*/false);
  Value dq = forallOver(
      im.c(hq), pb.numQTiles, bm, op.getDq(),
      [&](OpBuilder &b, Value bi, Value h, Value qt, ValueRange outs) {
        IndexMath m{b, loc};
        if (dqAcc) {
          Value r0 = m.mul(qt, m.c(bm));
          Value rows = m.min(m.c(bm), m.sub(pb.sq, r0));
          Value acc =
              tileView(b, loc, dqAccValues, {bi, h, r0, i0},
                       {i1, i1, b.getIndexAttr(bm), b.getIndexAttr(dTile)}, 2);
          return SmallVector<Insert>{
              outTile(b, acc, outs[0], bi, h, r0, rows, d)};
        }
        Value kvHead = group == 1 ? h : m.div(h, m.c(group));
        QTile t = qTileAt(b, dsum, bi, h, qt);
        KvLoopBounds bounds =
            emitKvLoopBounds(b, loc, mask, t.r0, t.r1, pb.sq, pb.sk, bn);
        Value acc = zeros(b, {bm, dTile});
        auto kvLoop = [&](Value lb, Value ub, StringRef name) {
          auto loop = scf::ForOp::create(
              b, loc, lb, ub, pb.oneIndex, acc,
              [&](OpBuilder &lb2, Location, Value kt, ValueRange in) {
                KvTile kv = kvTileAt(lb2, bi, kvHead, kt);
                Value ds = gradTile(lb2, t, kv, /*transposed=*/false).second;
                // dQ += scale dS K.
                scf::YieldOp::create(lb2, loc,
                                     matmul(lb2, ds, kv.k, in[0], pb.scale,
                                            /*transposeA=*/false,
                                            /*transposeB=*/false,
                                            /*accumulate=*/true));
              });
          loop->setAttr("fmha.kv_loop", b.getStringAttr(name));
          acc = loop.getResult(0);
        };
        if (bounds.sinkEnd)
          kvLoop(pb.zero, bounds.sinkEnd, "sink");
        kvLoop(bounds.begin, bounds.end, "window");
        return SmallVector<Insert>{
            outTile(b, acc, outs[0], bi, h, t.r0, t.rows, d)};
      })[0];

  bufferization::DeallocTensorOp::create(rewriter, loc, dsum);
  if (dqAcc)
    memref::DeallocOp::create(rewriter, loc, dqAcc);
  rewriter.replaceOp(op, ValueRange{dq, dkdv[0], dkdv[1]});
  return success();
}

} // namespace

LogicalResult
mlir::fmha::tileAttentionBwd(RewriterBase &rewriter, AttentionBwdOp op,
                             const TileAttentionOptions &options) {
  if (failed(checkTileSizes(op, options)))
    return failure();
  if (options.staticTiles && isa<RankedTensorType>(op.getQ().getType()))
    return tileAttentionBwdOnValues(rewriter, op, options);
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);

  bool onTensors = isa<RankedTensorType>(op.getQ().getType());
  Value q, k, v, o, lse, dout, dq, dk, dv;
  if (onTensors) {
    q = toBuffer(rewriter, loc, op.getQ());
    k = toBuffer(rewriter, loc, op.getK());
    v = toBuffer(rewriter, loc, op.getV());
    o = toBuffer(rewriter, loc, op.getO());
    lse = toBuffer(rewriter, loc, op.getLse());
    dout = toBuffer(rewriter, loc, op.getDout());
    dq = allocLike(rewriter, loc, op.getDq());
    dk = allocLike(rewriter, loc, op.getDk());
    dv = allocLike(rewriter, loc, op.getDv());
  } else {
    q = op.getQ(), k = op.getK(), v = op.getV(), o = op.getO();
    lse = op.getLse(), dout = op.getDout();
    dq = op.getDq(), dk = op.getDk(), dv = op.getDv();
  }

  auto qType = cast<MemRefType>(q.getType());
  auto kType = cast<MemRefType>(k.getType());
  auto vType = cast<MemRefType>(v.getType());
  const int64_t hq = qType.getDimSize(1), hk = kType.getDimSize(1);
  const int64_t group = hq / hk;
  const int64_t d = qType.getDimSize(3), dvDim = vType.getDimSize(3);
  const int64_t bm = options.blockM, bn = options.blockN;
  const bool deterministic = op.getDeterministic();
  ::fmha::MaskSpec mask = op.getMaskSpec();
  Type f32 = rewriter.getF32Type();
  OpFoldResult i0 = rewriter.getIndexAttr(0), i1 = rewriter.getIndexAttr(1);
  const BwdProblem pb = emitBwdProblem(rewriter, loc, op, q, k, options);
  FloatAttr scaleAttr = pb.scale, oneAttr = pb.one, softcapAttr = pb.softcap;
  Value zero = pb.zero, one = pb.oneIndex, batch = pb.batch;
  Value sq = pb.sq, sk = pb.sk;
  IndexMath im{rewriter, loc};

  // Dsum = rowsum(dO * o) per query row, and (atomic mode) the f32 dQ
  // accumulator that kv tiles add into.
  int64_t dyn = ShapedType::kDynamic;
  Value dsum = memref::AllocOp::create(rewriter, loc,
                                       MemRefType::get({dyn, hq, dyn}, f32),
                                       ValueRange{batch, sq});
  Value dqAccAll;
  if (!deterministic)
    dqAccAll = memref::AllocOp::create(rewriter, loc,
                                       MemRefType::get({dyn, hq, dyn, d}, f32),
                                       ValueRange{batch, sq});

  /// c (+)= alpha op(a) op(b) (fmha.tile_matmul).
  auto matmul = [&](OpBuilder &b, Value a, Value bv, Value c, FloatAttr alpha,
                    bool transposeA, bool transposeB, bool accumulate,
                    bool atomic) {
    auto unit = [&](bool flag) { return flag ? b.getUnitAttr() : UnitAttr(); };
    TileMatmulOp::create(b, loc, TypeRange{}, a, bv, c, alpha, unit(transposeA),
                         unit(transposeB), unit(accumulate), unit(atomic));
  };
  /// A parallel loop over (b, head, tile) whose body `body` builds.
  auto parallelOver = [&](Value heads, Value tiles,
                          function_ref<void(Value, Value, Value)> body) {
    auto loop = scf::ParallelOp::create(
        rewriter, loc, ValueRange{zero, zero, zero},
        ValueRange{batch, heads, tiles}, ValueRange{one, one, one});
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVars()[0], loop.getInductionVars()[1],
         loop.getInductionVars()[2]);
  };
  auto scratch = [&](ArrayRef<int64_t> shape) -> Value {
    return memref::AllocaOp::create(rewriter, loc, MemRefType::get(shape, f32));
  };
  /// The rows [r0, r0 + rows) of query tile qt of head h.
  struct QTile {
    Value r0, r1, rows, q, dout, lse, dsum;
  };
  auto qTileAt = [&](OpBuilder &b, Value bi, Value h, Value qt) {
    IndexMath m{b, loc};
    QTile t;
    t.r0 = m.mul(qt, m.c(bm));
    t.rows = m.min(m.c(bm), m.sub(sq, t.r0));
    t.r1 = m.add(t.r0, t.rows);
    t.q = tileView(b, loc, q, {bi, h, t.r0, i0},
                   {i1, i1, t.rows, b.getIndexAttr(d)}, 2);
    t.dout = tileView(b, loc, dout, {bi, h, t.r0, i0},
                      {i1, i1, t.rows, b.getIndexAttr(dvDim)}, 2);
    t.lse = tileView(b, loc, lse, {bi, h, t.r0}, {i1, i1, t.rows}, 1);
    t.dsum = tileView(b, loc, dsum, {bi, h, t.r0}, {i1, i1, t.rows}, 1);
    return t;
  };

  // --- 1. Dsum (and a zeroed dQ accumulator), per (b, hq, q tile). ---
  parallelOver(im.c(hq), pb.numQTiles, [&](Value bi, Value h, Value qt) {
    QTile t = qTileAt(rewriter, bi, h, qt);
    Value oTile = tileView(rewriter, loc, o, {bi, h, t.r0, i0},
                           {i1, i1, t.rows, rewriter.getIndexAttr(dvDim)}, 2);
    TileRowDotOp::create(rewriter, loc, TypeRange{}, t.dout, oTile, t.dsum);
    if (dqAccAll) {
      Value acc = tileView(rewriter, loc, dqAccAll, {bi, h, t.r0, i0},
                           {i1, i1, t.rows, rewriter.getIndexAttr(d)}, 2);
      TileFillOp::create(rewriter, loc, TypeRange{}, acc,
                         rewriter.getF32FloatAttr(0.0));
    }
  });

  /// The shared middle of both loops: scores of one (q tile, kv tile) pair
  /// (element mask only where the tile crosses a mask edge), P from the lse,
  /// then dP = dO V^T and dS in `dpTile`. `withP` runs between P and dP.
  auto emitGradTile = [&](OpBuilder &b, const QTile &t, Value c0, Value c1,
                          Value kTile, Value vTile, Value sTile, Value pTile,
                          Value dpTile, function_ref<void(OpBuilder &)> withP) {
    emitScores(b, loc, pb.scores, t.q, kTile, sTile, t.r0, t.r1, c0, c1);
    TileBwdProbsOp::create(b, loc, TypeRange{}, sTile, t.lse, pTile);
    if (withP)
      withP(b);
    matmul(b, t.dout, vTile, dpTile, oneAttr,
           /*transpose_a=*/false, /*transpose_b=*/true,
           /*accumulate=*/false, /*atomic=*/false);
    TileBwdDsOp::create(b, loc, TypeRange{}, pTile, t.dsum,
                        softcapAttr ? sTile : Value(), dpTile, softcapAttr);
  };

  // --- 2. dK and dV per (b, hk, kv tile), over the q heads of its group. ---
  parallelOver(im.c(hk), pb.numKvTiles, [&](Value bi, Value kvh, Value kt) {
    IndexMath m{rewriter, loc};
    Value c0 = m.mul(kt, m.c(bn));
    Value cols = m.min(m.c(bn), m.sub(sk, c0));
    Value c1 = m.add(c0, cols);
    Value kTile = tileView(rewriter, loc, k, {bi, kvh, c0, i0},
                           {i1, i1, cols, rewriter.getIndexAttr(d)}, 2);
    Value vTile = tileView(rewriter, loc, v, {bi, kvh, c0, i0},
                           {i1, i1, cols, rewriter.getIndexAttr(dvDim)}, 2);
    Value dkAcc = tileView(rewriter, loc, scratch({bn, d}), {i0, i0},
                           {cols, rewriter.getIndexAttr(d)}, 2);
    Value dvAcc = tileView(rewriter, loc, scratch({bn, dvDim}), {i0, i0},
                           {cols, rewriter.getIndexAttr(dvDim)}, 2);
    Value sBuf = scratch({bm, bn}), pBuf = scratch({bm, bn}),
          dpBuf = scratch({bm, bn});
    TileFillOp::create(rewriter, loc, TypeRange{}, dkAcc,
                       rewriter.getF32FloatAttr(0.0));
    TileFillOp::create(rewriter, loc, TypeRange{}, dvAcc,
                       rewriter.getF32FloatAttr(0.0));
    QLoopBounds qb = emitQLoopBounds(rewriter, loc, mask, c0, c1, sq, sk, bm);
    auto heads = scf::ForOp::create(rewriter, loc, zero, m.c(group), one);
    heads->setAttr("fmha.group_loop", rewriter.getUnitAttr());
    {
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPointToStart(heads.getBody());
      Value h = m.add(m.mul(kvh, m.c(group)), heads.getInductionVar());
      auto qLoop = scf::ForOp::create(rewriter, loc, qb.begin, qb.end, one);
      qLoop->setAttr("fmha.q_loop", rewriter.getUnitAttr());
      rewriter.setInsertionPointToStart(qLoop.getBody());
      QTile t = qTileAt(rewriter, bi, h, qLoop.getInductionVar());
      Value sTile = tileView(rewriter, loc, sBuf, {i0, i0}, {t.rows, cols}, 2);
      Value pTile = tileView(rewriter, loc, pBuf, {i0, i0}, {t.rows, cols}, 2);
      Value dpTile =
          tileView(rewriter, loc, dpBuf, {i0, i0}, {t.rows, cols}, 2);
      emitGradTile(rewriter, t, c0, c1, kTile, vTile, sTile, pTile, dpTile,
                   [&](OpBuilder &b) {
                     // dV += P^T dO
                     matmul(b, pTile, t.dout, dvAcc, oneAttr,
                            /*transpose_a=*/true,
                            /*transpose_b=*/false,
                            /*accumulate=*/true,
                            /*atomic=*/false);
                   });
      // dK += scale dS^T Q
      matmul(rewriter, dpTile, t.q, dkAcc, scaleAttr,
             /*transpose_a=*/true, /*transpose_b=*/false,
             /*accumulate=*/true, /*atomic=*/false);
      if (dqAccAll) {
        // dQ += scale dS K, shared with the other kv tiles.
        Value acc = tileView(rewriter, loc, dqAccAll, {bi, h, t.r0, i0},
                             {i1, i1, t.rows, rewriter.getIndexAttr(d)}, 2);
        matmul(rewriter, dpTile, kTile, acc, scaleAttr,
               /*transpose_a=*/false, /*transpose_b=*/false,
               /*accumulate=*/true, /*atomic=*/true);
      }
    }
    TileStoreOp::create(rewriter, loc, TypeRange{}, dkAcc,
                        tileView(rewriter, loc, dk, {bi, kvh, c0, i0},
                                 {i1, i1, cols, rewriter.getIndexAttr(d)}, 2));
    TileStoreOp::create(rewriter, loc, TypeRange{}, dvAcc,
                        tileView(rewriter, loc, dv, {bi, kvh, c0, i0},
                                 {i1, i1, cols, rewriter.getIndexAttr(dvDim)},
                                 2));
  });

  // --- 3. dQ per (b, hq, q tile): from the accumulator, or (deterministic)
  // recomputed over the visible kv tiles in a fixed order. ---
  parallelOver(im.c(hq), pb.numQTiles, [&](Value bi, Value h, Value qt) {
    QTile t = qTileAt(rewriter, bi, h, qt);
    Value dqTile = tileView(rewriter, loc, dq, {bi, h, t.r0, i0},
                            {i1, i1, t.rows, rewriter.getIndexAttr(d)}, 2);
    if (dqAccAll) {
      TileStoreOp::create(rewriter, loc, TypeRange{},
                          tileView(rewriter, loc, dqAccAll, {bi, h, t.r0, i0},
                                   {i1, i1, t.rows, rewriter.getIndexAttr(d)},
                                   2),
                          dqTile);
      return;
    }
    IndexMath m{rewriter, loc};
    Value kvHead = group == 1 ? h : m.div(h, m.c(group));
    Value dqAcc = tileView(rewriter, loc, scratch({bm, d}), {i0, i0},
                           {t.rows, rewriter.getIndexAttr(d)}, 2);
    Value sBuf = scratch({bm, bn}), pBuf = scratch({bm, bn}),
          dpBuf = scratch({bm, bn});
    TileFillOp::create(rewriter, loc, TypeRange{}, dqAcc,
                       rewriter.getF32FloatAttr(0.0));
    KvLoopBounds bounds =
        emitKvLoopBounds(rewriter, loc, mask, t.r0, t.r1, sq, sk, bn);
    auto emitKvLoop = [&](Value lb, Value ub, StringRef name) {
      auto loop = scf::ForOp::create(rewriter, loc, lb, ub, one);
      loop->setAttr("fmha.kv_loop", rewriter.getStringAttr(name));
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      IndexMath bi2{rewriter, loc};
      Value c0 = bi2.mul(loop.getInductionVar(), bi2.c(bn));
      Value cols = bi2.min(bi2.c(bn), bi2.sub(sk, c0));
      Value kTile = tileView(rewriter, loc, k, {bi, kvHead, c0, i0},
                             {i1, i1, cols, rewriter.getIndexAttr(d)}, 2);
      Value vTile = tileView(rewriter, loc, v, {bi, kvHead, c0, i0},
                             {i1, i1, cols, rewriter.getIndexAttr(dvDim)}, 2);
      Value sTile = tileView(rewriter, loc, sBuf, {i0, i0}, {t.rows, cols}, 2);
      Value pTile = tileView(rewriter, loc, pBuf, {i0, i0}, {t.rows, cols}, 2);
      Value dpTile =
          tileView(rewriter, loc, dpBuf, {i0, i0}, {t.rows, cols}, 2);
      emitGradTile(rewriter, t, c0, bi2.add(c0, cols), kTile, vTile, sTile,
                   pTile, dpTile, nullptr);
      matmul(rewriter, dpTile, kTile, dqAcc, scaleAttr,
             /*transpose_a=*/false, /*transpose_b=*/false,
             /*accumulate=*/true, /*atomic=*/false);
    };
    if (bounds.sinkEnd)
      emitKvLoop(zero, bounds.sinkEnd, "sink");
    emitKvLoop(bounds.begin, bounds.end, "window");
    TileStoreOp::create(rewriter, loc, TypeRange{}, dqAcc, dqTile);
  });

  memref::DeallocOp::create(rewriter, loc, dsum);
  if (dqAccAll)
    memref::DeallocOp::create(rewriter, loc, dqAccAll);

  if (onTensors) {
    SmallVector<Value> results;
    Value buffers[] = {dq, dk, dv};
    Value inits[] = {op.getDq(), op.getDk(), op.getDv()};
    for (int i = 0; i < 3; ++i)
      results.push_back(bufferization::ToTensorOp::create(
          rewriter, loc, inits[i].getType(), buffers[i], /*restrict=*/true,
          /*writable=*/true));
    rewriter.replaceOp(op, results);
  } else {
    rewriter.eraseOp(op);
  }
  return success();
}
