//===- VectorizeTiles.cpp - The forward's static tiles as vectors ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-vectorize-tiles: the static tiles of the forward and the backward
// on values (--fmha-tile-attention{static-tiles=1}, typed or not by
// --fmha-assign-layouts) become vectors, and the tile ops the generic
// vector ops they are made of:
//
//   q, k, v tiles    vector.transfer_read of a slice of the operand that
//                    may run past its rows (a tensor.pad of the slice: the
//                    rows past it read 0)
//   tile_init        splat constants
//   tile_qk          vector.contract (i, j, d), scale and softcap, the element
//                    mask as a select on the rows' and keys' indices
//   tile_softmax     vector.multi_reduction (row max, with the running max as
//                    its accumulator; row sum), exp, broadcasts of rows
//   tile_pv          p in v's element type, vector.contract (i, j, c) into acc
//   tile_finalize    acc / l, m + log l, in o's element type
//   tile_fill        a splat constant; tile_store a cast to the out's type
//                    (into a buffer out: a vector.transfer_write of it)
//   tile_matmul      vector.contract whose maps read a or b transposed in
//                    place, the operands in the narrower element type (P and
//                    dS as the matrix instructions take them), alpha after
//   atomic_add       the same op on the tile's vector
//   tile_row_dot     products and a row sum (the backward's Dsum)
//   tile_bwd_probs   exp(s - lse), 0 on rows with lse = -inf
//   tile_bwd_ds      p (dp - dsum) [times 1 - (s / cap)^2], 0 where p = 0
//   output tiles     vector.transfer_write into the slice of the shared out
//                    they go to, the rows past it not written
//
// A row vector (m, l, lse) broadcasts over a tile's columns through a
// shape_cast to rows x 1. Where a tile had a #fmha.layout, its vector is
// anchored in it by fmha.to_layout right where it is made, so that the
// distribution to lanes finds each tile's layout at its definition. The pass
// walks the function in order, keeping each tile's vector; the kv loops and
// branches are retyped in place and the tile-level ops erased at the end.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/MaskUtils.h"
#include "fmha/Transforms/Passes.h"

#include "VectorMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAVECTORIZETILESPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// A static tile of rank 1 or 2 (what the tile level holds in registers).
bool isTileType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         (tensor.getRank() == 1 || tensor.getRank() == 2);
}

VectorType vectorTypeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return VectorType::get(tensor.getShape(), tensor.getElementType());
}

struct TileVectorizer {
  /// Each tile (a tensor value) and its vector.
  llvm::DenseMap<Value, Value> vectors;
  /// The tile-level ops, erased once every use has moved to the vectors.
  SmallVector<Operation *> replaced;

  /// The vector of a tile: a value retyped in place (loop arguments and
  /// results) is its own vector.
  Value vectorOf(Value tile) const {
    if (isa<VectorType>(tile.getType()))
      return tile;
    return vectors.lookup(tile);
  }

  /// `vector` anchored in the layout `tensorType` had, if any.
  static Value anchor(OpBuilder &b, Location loc, Value vector,
                      Type tensorType) {
    auto tensor = dyn_cast<RankedTensorType>(tensorType);
    auto layout =
        tensor ? dyn_cast_or_null<LayoutAttr>(tensor.getEncoding()) : nullptr;
    if (!layout)
      return vector;
    return ToLayoutOp::create(b, loc, vector.getType(), vector, layout);
  }

  void define(OpBuilder &b, Value tile, Value vector) {
    vectors[tile] = anchor(b, tile.getLoc(), vector, tile.getType());
  }

  /// A tile op's results are `results` (anchored in their layouts); the op
  /// goes with the tile level.
  LogicalResult replaceTileOp(OpBuilder &b, Operation *op,
                              ArrayRef<Value> results) {
    for (auto [tile, vector] : llvm::zip_equal(op->getResults(), results))
      define(b, tile, vector);
    replaced.push_back(op);
    return success();
  }

  /// The vectors of a tile op's operands; a diagnostic when one has none.
  FailureOr<SmallVector<Value>> operandVectors(Operation *op) {
    SmallVector<Value> out;
    for (Value operand : op->getOperands()) {
      if (!isa<TensorType, VectorType>(operand.getType())) {
        out.push_back(operand);
        continue;
      }
      Value vector = vectorOf(operand);
      if (!vector && operand.getDefiningOp<tensor::EmptyOp>()) {
        out.push_back(Value()); // An out only written.
        continue;
      }
      if (!vector)
        return op->emitOpError()
               << "fmha-vectorize-tiles: operand #" << out.size()
               << " is not a static tile (tile with "
                  "--fmha-tile-attention=\"static-tiles=1\")";
      out.push_back(vector);
    }
    return out;
  }

  /// Indices of a slice's offsets and the map from the sliced tensor to the
  /// dims it keeps.
  static std::pair<SmallVector<Value>, AffineMap>
  sliceAccess(OpBuilder &b, Location loc, tensor::ExtractSliceOp slice) {
    SmallVector<Value> indices;
    for (OpFoldResult offset : slice.getMixedOffsets())
      indices.push_back(getValueOrCreateConstantIndexOp(b, loc, offset));
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<AffineExpr> kept;
    for (int64_t d = 0; d < slice.getSourceType().getRank(); ++d)
      if (!dropped.test(d))
        kept.push_back(b.getAffineDimExpr(d));
    return {indices, AffineMap::get(slice.getSourceType().getRank(), 0, kept,
                                    b.getContext())};
  }

  static bool hasUnitStrides(OffsetSizeAndStrideOpInterface op) {
    return llvm::all_of(op.getMixedStrides(), [](OpFoldResult stride) {
      return isConstantIntValue(stride, 1);
    });
  }

  /// The dims along which a tile of `type` lies within `slice`: not a
  /// dynamic one (the rows, which may end before the tile's) nor a static one
  /// shorter than the tile's (a head dim padded to the tile's); reads past
  /// the others give the padding.
  static SmallVector<bool> inBoundsOf(ShapedType slice, VectorType type) {
    SmallVector<bool> inBounds;
    for (int64_t d = 0; d < type.getRank(); ++d)
      inBounds.push_back(slice.getDimSize(d) == type.getDimSize(d));
    return inBounds;
  }

  /// A tile read from an operand: a `tensor.pad` of a slice (zeros past the
  /// rows in range) is a read of the slice that may run past its rows; a
  /// static slice is a read of the operand.
  LogicalResult readTile(Operation *op, tensor::ExtractSliceOp slice,
                         Attribute padding) {
    if (!hasUnitStrides(slice))
      return op->emitOpError()
             << "fmha-vectorize-tiles: a tile read with non-unit strides";
    OpBuilder b(op);
    Location loc = op->getLoc();
    VectorType type = vectorTypeOf(op->getResult(0).getType());
    Value paddingValue = arith::ConstantOp::create(
        b, loc,
        cast<TypedAttr>(padding ? padding
                                : b.getZeroAttr(type.getElementType())));
    Value read;
    if (slice.getType().hasStaticShape()) {
      auto [indices, map] = sliceAccess(b, loc, slice);
      read = vector::TransferReadOp::create(
          b, loc, type, slice.getSource(), indices, AffineMapAttr::get(map),
          paddingValue, Value(),
          b.getBoolArrayAttr(inBoundsOf(slice.getType(), type)));
    } else {
      // Out of bounds along a dynamic dim of the slice (its rows) or one
      // shorter than the tile's (a head dim padded to the tile's) reads the
      // padding.
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      read = vector::TransferReadOp::create(
          b, loc, type, slice.getResult(),
          SmallVector<Value>(type.getRank(), zero),
          AffineMapAttr::get(b.getMultiDimIdentityMap(type.getRank())),
          paddingValue, Value(),
          b.getBoolArrayAttr(inBoundsOf(slice.getType(), type)));
    }
    define(b, op->getResult(0), read);
    replaced.push_back(op);
    return success();
  }

  LogicalResult visitPad(tensor::PadOp pad) {
    auto slice = pad.getSource().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !isTileType(pad.getType()) ||
        !llvm::all_of(pad.getMixedLowPad(), [](OpFoldResult low) {
          return isConstantIntValue(low, 0);
        }))
      return pad.emitOpError()
             << "fmha-vectorize-tiles: a padded tile is a slice of an "
                "operand padded at its high end";
    Attribute padding;
    if (Value value = pad.getConstantPaddingValue())
      matchPattern(value, m_Constant(&padding));
    if (!padding)
      return pad.emitOpError()
             << "fmha-vectorize-tiles: a tile's padding is a constant";
    return readTile(pad, slice, padding);
  }

  /// A tile made of tiles along its rows (a kv tile over several pages of
  /// a paged cache): their vectors inserted at their rows into a vector of
  /// zeros.
  LogicalResult visitConcat(tensor::ConcatOp concat) {
    if (!isTileType(concat.getType()) || concat.getDim() != 0)
      return success();
    OpBuilder b(concat);
    Location loc = concat.getLoc();
    VectorType type = vectorTypeOf(concat.getType());
    Value tile = VectorMath{b, loc}.splat(type, 0);
    int64_t row = 0;
    for (Value input : concat.getInputs()) {
      Value piece = vectorOf(input);
      if (!piece)
        return concat.emitOpError()
               << "fmha-vectorize-tiles: a tile made of tiles that are "
                  "not static tiles";
      tile = vector::InsertStridedSliceOp::create(b, loc, piece, tile,
                                                  ArrayRef<int64_t>{row, 0},
                                                  ArrayRef<int64_t>{1, 1});
      row += cast<VectorType>(piece.getType()).getDimSize(0);
    }
    define(b, concat.getResult(), tile);
    replaced.push_back(concat);
    return success();
  }

  LogicalResult visitTileInit(TileInitOp op) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    VectorType rowType = vectorTypeOf(op.getM().getType());
    // A learned sink logit: m = sink, l = 1 (its term of the sum).
    Value sink = op.getSink();
    return replaceTileOp(
        b, op,
        {sink
             ? Value(vector::BroadcastOp::create(b, op.getLoc(), rowType, sink))
             : vm.negInf(rowType),
         vm.splat(vectorTypeOf(op.getL().getType()), sink ? 1 : 0),
         vm.splat(vectorTypeOf(op.getAcc().getType()), 0)});
  }

  /// The columns of the tile `tile` holds before its zero padding, where
  /// it is (through layout conversions) a slice padded along its columns
  /// with zeros.
  static std::optional<int64_t> paddedCols(Value tile) {
    while (auto convert = tile.getDefiningOp<ConvertLayoutOp>())
      tile = convert.getSource();
    // A tile of page slices (visitConcat): each padded alike.
    if (auto concat = tile.getDefiningOp<tensor::ConcatOp>())
      tile = concat.getInputs().front();
    auto pad = tile.getDefiningOp<tensor::PadOp>();
    Value padding = pad ? pad.getConstantPaddingValue() : Value();
    if (!padding || !(matchPattern(padding, m_AnyZeroFloat()) ||
                      matchPattern(padding, m_Zero())))
      return std::nullopt;
    auto source = cast<RankedTensorType>(pad.getSource().getType());
    const int64_t cols = source.getDimSize(source.getRank() - 1);
    if (ShapedType::isDynamic(cols) ||
        cols >= pad.getResultType().getDimSize(source.getRank() - 1))
      return std::nullopt;
    return cols;
  }

  /// Marks the contraction `product` with fmha.k_extent where one of
  /// `tiles` (operands whose columns it reduces) is zero-padded along them:
  /// the fewest columns any of them holds.
  static void markReductionExtent(OpBuilder &b, Value product,
                                  ArrayRef<Value> tiles) {
    std::optional<int64_t> extent;
    for (Value tile : tiles)
      if (std::optional<int64_t> cols = paddedCols(tile))
        extent = std::min(*cols, extent.value_or(*cols));
    if (extent)
      product.getDefiningOp()->setAttr(kReductionExtentAttrName,
                                       b.getI64IntegerAttr(*extent));
  }

  LogicalResult visitTileQK(TileQKOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    VectorMath vm{b, loc};
    VectorType type = vectorTypeOf(op.getS().getType());
    const bool transposed = op.getTransposed();
    // S = Q K^T, or S^T = K Q^T.
    Value s = transposed ? vm.contract(vs[1], vs[0], vm.splat(type, 0),
                                       /*bTransposed=*/true)
                         : vm.contract(vs[0], vs[1], vm.splat(type, 0),
                                       /*bTransposed=*/true);
    // A padded head dim: the products stop at the last column of D.
    markReductionExtent(b, s, {op.getQ(), op.getK()});
    s = vm.mul(s, vm.splat(type, op.getScale().convertToDouble()));
    if (std::optional<APFloat> cap = op.getSoftcap()) {
      double c = cap->convertToDouble();
      Value t = math::TanhOp::create(b, loc, vm.mul(s, vm.splat(type, 1 / c)));
      s = vm.mul(vm.splat(type, c), t);
    }
    if (ValueRange coords = op.getMaskCoords(); !coords.empty()) {
      // visible(r0 + i, c0 + j) and c0 + j < Sk, on index vectors.
      VectorType index = type.clone(b.getIndexType());
      auto splat = [&](Value x) {
        return vector::BroadcastOp::create(b, loc, index, x).getResult();
      };
      int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
      Value rowIds = vector::StepOp::create(
          b, loc, VectorType::get({rows}, b.getIndexType()));
      Value colIds = vector::StepOp::create(
          b, loc, VectorType::get({cols}, b.getIndexType()));
      // The query and key of each element: rows and columns, swapped when
      // transposed.
      Value row = arith::AddIOp::create(b, loc, vm.rows(rowIds, index),
                                        splat(coords[transposed ? 1 : 0]));
      Value col = arith::AddIOp::create(b, loc, vm.cols(colIds, index),
                                        splat(coords[transposed ? 0 : 1]));
      Value query = transposed ? col : row, key = transposed ? row : col;
      Value sk = splat(coords[3]);
      ::fmha::MaskSpec mask =
          op.getMaskAttr() ? op.getMaskAttr().getSpec() : ::fmha::MaskSpec{};
      Value visible =
          emitVisible(b, loc, mask, query, key, splat(coords[2]), sk);
      Value inK =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, key, sk);
      visible = arith::AndIOp::create(b, loc, visible, inK);
      s = vm.select(visible, s, vm.negInf(type));
    }
    return replaceTileOp(b, op, {s});
  }

  LogicalResult visitTileSoftmax(TileSoftmaxOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value s = vs[0], m = vs[1], l = vs[2], acc = vs[3];
    auto tile = cast<VectorType>(s.getType());
    auto row = cast<VectorType>(m.getType());
    Value mNew = vm.reduceRows(s, m, vector::CombiningKind::MAXIMUMF);
    // A row whose keys are all hidden so far keeps m = -inf; subtracting 0
    // instead keeps exp(-inf - m) = 0 rather than NaN.
    Value allHidden = vm.cmp(arith::CmpFPredicate::OEQ, mNew, vm.negInf(row));
    Value mSafe = vm.select(allHidden, vm.splat(row, 0), mNew);
    Value alpha = vm.exp(vm.sub(m, mSafe));
    Value p = vm.exp(vm.sub(s, vm.rows(mSafe, tile)));
    Value lNew = vm.reduceRows(p, vm.mul(l, alpha), vector::CombiningKind::ADD);
    Value accNew = vm.mul(acc, vm.rows(alpha, cast<VectorType>(acc.getType())));
    return replaceTileOp(b, op, {p, mNew, lNew, accNew});
  }

  LogicalResult visitTilePV(TilePVOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value v = vs[1];
    // P enters the product in V's element type, as the matrix instructions
    // take it.
    Value p = vm.cast(vs[0], cast<VectorType>(v.getType()).getElementType());
    return replaceTileOp(b, op,
                         {vm.contract(p, v, vs[2], /*bTransposed=*/false)});
  }

  LogicalResult visitTileFinalize(TileFinalizeOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value m = vs[0], l = vs[1], acc = vs[2];
    auto row = cast<VectorType>(l.getType());
    auto tile = cast<VectorType>(acc.getType());
    Value any = vm.cmp(arith::CmpFPredicate::OGT, l, vm.splat(row, 0));
    Value safeL = vm.select(any, l, vm.splat(row, 1));
    Value inv = arith::DivFOp::create(b, op.getLoc(), vm.splat(row, 1), safeL);
    Value anyTile = vector::BroadcastOp::create(
        b, op.getLoc(), tile.clone(b.getI1Type()),
        vector::ShapeCastOp::create(
            b, op.getLoc(),
            VectorType::get({row.getDimSize(0), 1}, b.getI1Type()), any));
    Value o =
        vm.select(anyTile, vm.mul(acc, vm.rows(inv, tile)), vm.splat(tile, 0));
    Type oElement = cast<ShapedType>(op.getO().getType()).getElementType();
    SmallVector<Value> results = {vm.cast(o, oElement)};
    if (op.getLse()) {
      Value logL = math::LogOp::create(b, op.getLoc(), safeL);
      results.push_back(vm.select(any, vm.add(m, logL), vm.negInf(row)));
    }
    return replaceTileOp(b, op, results);
  }

  // --- The backward's tile ops. ---

  LogicalResult visitTileFill(TileFillOp op) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    return replaceTileOp(b, op,
                         {vm.splat(vectorTypeOf(op.getDst().getType()),
                                   op.getValue().convertToDouble())});
  }

  LogicalResult visitTileStore(TileStoreOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value stored = vm.cast(
        vs[0], cast<ShapedType>(op.getDst().getType()).getElementType());
    auto buffer = dyn_cast<MemRefType>(op.getDst().getType());
    if (!buffer)
      return replaceTileOp(b, op, {stored});
    // A value into a buffer of its static shape (the dQ accumulator's zeros).
    if (!buffer.hasStaticShape())
      return op->emitOpError() << "fmha-vectorize-tiles: writes a value into "
                                  "a buffer of dynamic shape "
                               << buffer;
    Value zero = arith::ConstantIndexOp::create(b, op.getLoc(), 0);
    vector::TransferWriteOp::create(b, op.getLoc(), stored, op.getDst(),
                                    ValueRange{zero, zero},
                                    ArrayRef<bool>{true, true});
    replaced.push_back(op);
    return success();
  }

  /// c (+)= alpha op(a) op(b): one contraction whose maps read the
  /// transposed operands in place, its operands in the narrower element type
  /// (the matrix instructions' inputs: P and dS in dO's and K's), alpha
  /// applied to the product.
  LogicalResult visitTileMatmul(TileMatmulOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value lhs = vs[0], rhs = vs[1];
    Type el = cast<VectorType>(lhs.getType()).getElementType();
    Type er = cast<VectorType>(rhs.getType()).getElementType();
    if (el.getIntOrFloatBitWidth() > er.getIntOrFloatBitWidth())
      lhs = vm.cast(lhs, er);
    else
      rhs = vm.cast(rhs, el);
    VectorType type = vectorTypeOf(op.getC().getType());
    const double alpha = op.getAlpha().convertToDouble();
    const bool fused = op.getAccumulate() && alpha == 1.0;
    Value r = vm.contract(lhs, rhs, fused ? vs[2] : vm.splat(type, 0),
                          op.getTransposeB(), op.getTransposeA());
    // A padded reduction dim (a column dim of an operand): the products stop
    // where its columns do.
    SmallVector<Value> reducedByColumns;
    if (!op.getTransposeA())
      reducedByColumns.push_back(op.getA());
    if (op.getTransposeB())
      reducedByColumns.push_back(op.getB());
    markReductionExtent(b, r, reducedByColumns);
    if (alpha != 1.0)
      r = vm.mul(r, vm.splat(type, alpha));
    if (op.getAccumulate() && !fused)
      r = vm.add(vs[2], r);
    return replaceTileOp(b, op, {r});
  }

  LogicalResult visitTileRowDot(TileRowDotOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Type f32 = b.getF32Type();
    Value products = vm.mul(vm.cast(vs[0], f32), vm.cast(vs[1], f32));
    return replaceTileOp(
        b, op,
        {vm.reduceRows(products,
                       vm.splat(vectorTypeOf(op.getOut().getType()), 0),
                       vector::CombiningKind::ADD)});
  }

  /// p = exp(s - lse), 0 on a row with lse = -inf (no visible key).
  LogicalResult visitTileBwdProbs(TileBwdProbsOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value s = vs[0], lse = vs[1];
    auto tile = cast<VectorType>(s.getType());
    auto row = cast<VectorType>(lse.getType());
    const bool transposed = op.getTransposed();
    Value none = vm.cmp(arith::CmpFPredicate::OEQ, lse, vm.negInf(row));
    Value p = vm.exp(vm.sub(s, vm.perQuery(lse, tile, transposed)));
    return replaceTileOp(
        b, op,
        {vm.select(vm.perQuery(none, tile, transposed), vm.splat(tile, 0), p)});
  }

  /// dS = P (dP - Dsum) [(1 - (s / cap)^2)], 0 where P = 0.
  LogicalResult visitTileBwdDs(TileBwdDsOp op, ArrayRef<Value> vs) {
    OpBuilder b(op);
    VectorMath vm{b, op.getLoc()};
    Value p = vs[0], dsum = vs[1], dp = vs.back();
    auto tile = cast<VectorType>(p.getType());
    Value ds =
        vm.mul(p, vm.sub(dp, vm.perQuery(dsum, tile, op.getTransposed())));
    if (std::optional<APFloat> cap = op.getSoftcap()) {
      Value t = vm.mul(vs[2], vm.splat(tile, 1.0 / cap->convertToDouble()));
      ds = vm.mul(ds, vm.sub(vm.splat(tile, 1.0), vm.mul(t, t)));
    }
    Value hidden = vm.cmp(arith::CmpFPredicate::OEQ, p, vm.splat(tile, 0));
    return replaceTileOp(b, op, {vm.select(hidden, vm.splat(tile, 0), ds)});
  }

  /// A loop carries the vectors of its tile inits.
  void visitFor(scf::ForOp loop) {
    for (auto [init, arg, result] :
         llvm::zip(loop.getInitArgsMutable(), loop.getRegionIterArgs(),
                   loop.getResults())) {
      Value vector = vectorOf(init.get());
      if (!vector)
        continue;
      init.set(vector);
      arg.setType(vector.getType());
      result.setType(vector.getType());
    }
  }

  /// A yield gives the vectors of its tiles; a branch returns what its
  /// `then` region yields.
  void visitYield(scf::YieldOp yield) {
    for (OpOperand &operand : yield->getOpOperands())
      if (Value vector = vectorOf(operand.get()))
        operand.set(vector);
    auto branch = dyn_cast<scf::IfOp>(yield->getParentOp());
    if (branch && yield->getParentRegion() == &branch.getThenRegion())
      for (auto [result, value] :
           llvm::zip(branch.getResults(), yield.getOperands()))
        result.setType(value.getType());
  }

  /// An o or lse tile (or its rows in range) going back into the shared
  /// out: a write into the slice of the out it fills (the rows past the
  /// slice are not written).
  LogicalResult visitParallelInsert(tensor::ParallelInsertSliceOp insert) {
    Value source = insert.getSource(), tile = vectorOf(source);
    if (!tile) {
      auto rows = source.getDefiningOp<tensor::ExtractSliceOp>();
      if (!rows || !(tile = vectorOf(rows.getSource())))
        return success(); // Not a tile of the forward.
      if (!hasUnitStrides(rows) ||
          !llvm::all_of(rows.getMixedOffsets(),
                        [](OpFoldResult offset) {
                          return isConstantIntValue(offset, 0);
                        }) ||
          rows.getType().getRank() != rows.getSourceType().getRank())
        return insert.emitOpError()
               << "fmha-vectorize-tiles: the rows of a tile in range are a "
                  "leading slice of it";
      replaced.push_back(rows);
    }
    auto forall = insert->getParentOfType<scf::ForallOp>();
    OpBuilder b(forall.getTerminator());
    Location loc = insert.getLoc();
    auto destType = tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
        insert.getSourceType().getRank(), insert.getDestType(),
        insert.getMixedSizes());
    Value dest = tensor::ExtractSliceOp::create(
        b, loc, cast<RankedTensorType>(destType), insert.getDest(),
        insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
    auto type = cast<VectorType>(tile.getType());
    // Out of bounds along a dynamic dim of the slice (the rows past Sq) or
    // past a static one shorter than the tile's (a padded head dim) is not
    // written.
    SmallVector<bool> inBounds = inBoundsOf(cast<ShapedType>(destType), type);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto write = vector::TransferWriteOp::create(
        b, loc, tile, dest, SmallVector<Value>(type.getRank(), zero),
        AffineMapAttr::get(b.getMultiDimIdentityMap(type.getRank())),
        b.getBoolArrayAttr(inBounds));
    insert.getSourceMutable().assign(write.getResult());
    return success();
  }

  LogicalResult visit(Operation *op) {
    if (auto pad = dyn_cast<tensor::PadOp>(op))
      return visitPad(pad);
    if (auto concat = dyn_cast<tensor::ConcatOp>(op))
      return visitConcat(concat);
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // A static tile sliced from an operand without padding.
      if (isTileType(slice.getType()) && !vectorOf(slice.getSource()) &&
          !slice->use_empty())
        return readTile(slice, slice, Attribute());
      return success();
    }
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      if (isTileType(empty.getType()))
        replaced.push_back(empty);
      return success();
    }
    if (auto convert = dyn_cast<ConvertLayoutOp>(op)) {
      Value source = vectorOf(convert.getSource());
      if (!source)
        return convert.emitOpError()
               << "fmha-vectorize-tiles: converts a value that is not a "
                  "static tile";
      OpBuilder b(op);
      define(b, convert.getResult(), source);
      replaced.push_back(op);
      return success();
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      visitFor(loop);
      return success();
    }
    if (auto yield = dyn_cast<scf::YieldOp>(op)) {
      visitYield(yield);
      return success();
    }
    if (auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op))
      return visitParallelInsert(insert);
    // A tile in register order and back: the same op on its vector,
    // anchored in the result's layout.
    if (isa<PackTileOp, UnpackTileOp>(op)) {
      if (!isa<TensorType>(op->getOperand(0).getType()))
        return success();
      Value tile = vectorOf(op->getOperand(0));
      if (!tile)
        return op->emitOpError() << "fmha-vectorize-tiles: rearranges a "
                                    "value that is not a static tile";
      OpBuilder b(op);
      VectorType type = vectorTypeOf(op->getResult(0).getType());
      auto order = op->getAttrOfType<LayoutAttr>("order");
      Value made =
          isa<PackTileOp>(op)
              ? PackTileOp::create(b, op->getLoc(), type, tile, order)
                    .getResult()
              : UnpackTileOp::create(b, op->getLoc(), type, tile, order)
                    .getResult();
      define(b, op->getResult(0), made);
      replaced.push_back(op);
      return success();
    }
    if (auto add = dyn_cast<AtomicAddOp>(op)) {
      if (!isa<TensorType>(add.getValue().getType()))
        return success();
      Value tile = vectorOf(add.getValue());
      if (!tile)
        return add.emitOpError() << "fmha-vectorize-tiles: adds a value that "
                                    "is not a static tile";
      OpBuilder b(op);
      AtomicAddOp::create(b, add.getLoc(), tile, add.getDest());
      replaced.push_back(op);
      return success();
    }
    if (!isa<TileInitOp, TileQKOp, TileSoftmaxOp, TilePVOp, TileFinalizeOp,
             TileFillOp, TileStoreOp, TileMatmulOp, TileRowDotOp,
             TileBwdProbsOp, TileBwdDsOp>(op))
      return success();
    if (isa<MemRefType>(op->getOperand(0).getType()))
      return op->emitOpError()
             << "fmha-vectorize-tiles: takes the tiled attention on tensors "
                "(tile ops on values, not buffers)";
    if (auto init = dyn_cast<TileInitOp>(op))
      return visitTileInit(init);
    if (auto fill = dyn_cast<TileFillOp>(op))
      return visitTileFill(fill);
    FailureOr<SmallVector<Value>> vs = operandVectors(op);
    if (failed(vs))
      return failure();
    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](TileQKOp qk) { return visitTileQK(qk, *vs); })
        .Case([&](TileSoftmaxOp sm) { return visitTileSoftmax(sm, *vs); })
        .Case([&](TilePVOp pv) { return visitTilePV(pv, *vs); })
        .Case([&](TileFinalizeOp f) { return visitTileFinalize(f, *vs); })
        .Case([&](TileStoreOp st) { return visitTileStore(st, *vs); })
        .Case([&](TileMatmulOp mm) { return visitTileMatmul(mm, *vs); })
        .Case([&](TileRowDotOp rd) { return visitTileRowDot(rd, *vs); })
        .Case([&](TileBwdProbsOp pr) { return visitTileBwdProbs(pr, *vs); })
        .Case([&](TileBwdDsOp ds) { return visitTileBwdDs(ds, *vs); });
  }

  LogicalResult run(Operation *root) {
    SmallVector<Operation *> ops;
    root->walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops)
      if (failed(visit(op)))
        return failure();
    // Every use of a tile has moved to its vector, except among the
    // tile-level ops themselves.
    for (Operation *op : llvm::reverse(replaced)) {
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!llvm::is_contained(replaced, user))
            return user->emitOpError()
                   << "fmha-vectorize-tiles: uses a tile outside the tile "
                      "ops (only the kv loops, their branches and the "
                      "shared outs may)";
    }
    for (Operation *op : llvm::reverse(replaced)) {
      op->dropAllUses();
      op->erase();
    }
    return success();
  }
};

struct FmhaVectorizeTilesPass
    : mlir::fmha::impl::FmhaVectorizeTilesPassBase<FmhaVectorizeTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    TileVectorizer vectorizer;
    if (failed(vectorizer.run(getOperation())))
      signalPassFailure();
  }
};

} // namespace
