//===- VectorMath.h - Vector arithmetic of the tile ops ---------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The vector arithmetic --fmha-vectorize-tiles builds the tile ops from:
// splats, the f32 operations, casts between element types, contractions.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_PASSES_VECTORMATH_H
#define FMHA_PASSES_VECTORMATH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::fmha {

/// Vector arithmetic of one tile op, f32 unless said.
struct VectorMath {
  OpBuilder &b;
  Location loc;

  Value splat(VectorType type, double value) {
    auto element = llvm::cast<FloatType>(type.getElementType());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
  }
  Value negInf(VectorType type) {
    return splat(type, -std::numeric_limits<double>::infinity());
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  /// `x` in `element` (an extension or truncation; nothing when equal).
  Value cast(Value x, Type element) {
    auto type = llvm::cast<VectorType>(x.getType());
    if (type.getElementType() == element)
      return x;
    VectorType to = type.clone(element);
    if (element.getIntOrFloatBitWidth() >
        type.getElementType().getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    return arith::TruncFOp::create(b, loc, to, x);
  }
  /// A row vector (rows) over the columns of `type` (rows x cols).
  Value rows(Value row, VectorType type) {
    auto rowType = llvm::cast<VectorType>(row.getType());
    VectorType column =
        VectorType::get({type.getDimSize(0), 1}, rowType.getElementType());
    Value shaped = vector::ShapeCastOp::create(b, loc, column, row);
    return vector::BroadcastOp::create(
        b, loc, type.clone(rowType.getElementType()), shaped);
  }
  /// A column vector (cols) down the rows of `type` (rows x cols).
  Value cols(Value col, VectorType type) {
    auto colType = llvm::cast<VectorType>(col.getType());
    return vector::BroadcastOp::create(
        b, loc, type.clone(colType.getElementType()), col);
  }
  /// `vec` (one element per query) over the tile `type`: along its rows, or
  /// along its columns when the tile is transposed (keys as rows).
  Value perQuery(Value vec, VectorType type, bool transposed) {
    return transposed ? cols(vec, type) : rows(vec, type);
  }
  /// The reduction of a rows x cols tile along its columns into `acc`.
  Value reduceRows(Value tile, Value acc, vector::CombiningKind kind) {
    return vector::MultiDimReductionOp::create(
        b, loc, tile, acc, ArrayRef<bool>{false, true}, kind);
  }
  /// c (+)= sum over k of a[i, k] b[k, j]; `bTransposed` reads b as [j, k],
  /// `aTransposed` a as [k, i].
  Value contract(Value lhs, Value rhs, Value acc, bool bTransposed,
                 bool aTransposed = false) {
    MLIRContext *ctx = b.getContext();
    AffineExpr i, j, k;
    bindDims(ctx, i, j, k);
    SmallVector<AffineMap> maps = {
        AffineMap::get(3, 0,
                       aTransposed ? ArrayRef<AffineExpr>{k, i}
                                   : ArrayRef<AffineExpr>{i, k},
                       ctx),
        AffineMap::get(3, 0,
                       bTransposed ? ArrayRef<AffineExpr>{j, k}
                                   : ArrayRef<AffineExpr>{k, j},
                       ctx),
        AffineMap::get(3, 0, {i, j}, ctx)};
    auto parallel =
        vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel);
    auto reduction =
        vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction);
    return vector::ContractionOp::create(
        b, loc, lhs, rhs, acc, b.getAffineMapArrayAttr(maps),
        b.getArrayAttr({parallel, parallel, reduction}));
  }
};

} // namespace mlir::fmha

#endif // FMHA_PASSES_VECTORMATH_H
