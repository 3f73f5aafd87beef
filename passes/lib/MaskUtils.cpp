//===- MaskUtils.cpp - Mask arithmetic emitted as IR ----------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Window bounds and sink counts larger than any sequence behave as
/// unbounded; capping them at 2^30 (the runtime's limit on Sq and Sk) keeps
/// the index arithmetic free of overflow, in 32-bit kernel indices too.
constexpr int64_t kBoundCap = int64_t(1) << 30;

} // namespace

Value IndexMath::c(int64_t v) {
  if (shape)
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(shape, b.getIndexAttr(v)));
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value IndexMath::truth() {
  if (shape)
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(shape.clone(b.getI1Type()),
                               b.getBoolAttr(true)));
  return arith::ConstantIntOp::create(b, loc, 1, 1);
}
Value IndexMath::add(Value x, Value y) { return fold<arith::AddIOp>(x, y); }
Value IndexMath::sub(Value x, Value y) { return fold<arith::SubIOp>(x, y); }
Value IndexMath::mul(Value x, Value y) { return fold<arith::MulIOp>(x, y); }
Value IndexMath::div(Value x, Value y) { return fold<arith::DivSIOp>(x, y); }
Value IndexMath::rem(Value x, Value y) { return fold<arith::RemSIOp>(x, y); }
Value IndexMath::ceilDiv(Value x, Value y) {
  return fold<arith::CeilDivSIOp>(x, y);
}
Value IndexMath::min(Value x, Value y) { return fold<arith::MinSIOp>(x, y); }
Value IndexMath::max(Value x, Value y) { return fold<arith::MaxSIOp>(x, y); }
Value IndexMath::cmp(arith::CmpIPredicate p, Value x, Value y) {
  return fold<arith::CmpIOp>(p, x, y);
}
Value IndexMath::le(Value x, Value y) {
  return cmp(arith::CmpIPredicate::sle, x, y);
}
Value IndexMath::lt(Value x, Value y) {
  return cmp(arith::CmpIPredicate::slt, x, y);
}
Value IndexMath::select(Value cond, Value x, Value y) {
  return fold<arith::SelectOp>(cond, x, y);
}
Value IndexMath::andOpt(Value x, Value y) {
  return x ? (y ? fold<arith::AndIOp>(x, y) : x) : y;
}
Value IndexMath::addOpt(Value x, Value y) { return y ? add(x, y) : x; }
Value IndexMath::offset(const ::fmha::MaskSpec &mask, Value sq, Value sk) {
  return mask.kind == ::fmha::MaskKind::BottomRight ? sub(sk, sq) : Value();
}
Value IndexMath::dim(Value shaped, int64_t i) {
  auto type = cast<ShapedType>(shaped.getType());
  if (!type.isDynamicDim(i))
    return c(type.getDimSize(i));
  if (isa<TensorType>(type))
    return tensor::DimOp::create(b, loc, shaped, i);
  return memref::DimOp::create(b, loc, shaped, i);
}

KvLoopBounds mlir::fmha::emitKvLoopBounds(OpBuilder &b, Location loc,
                                          const ::fmha::MaskSpec &mask,
                                          Value r0, Value r1, Value sq,
                                          Value sk, int64_t blockN) {
  IndexMath im{b, loc};
  Value zero = im.c(0), one = im.c(1), bn = im.c(blockN);
  Value numKvTiles = im.ceilDiv(sk, bn);
  KvLoopBounds bounds{Value(), zero, numKvTiles};
  if (mask.isNone())
    return bounds;
  Value off = im.offset(mask, sq, sk);
  Value jlo = zero, jhi = im.sub(sk, one);
  if (mask.hasLeft())
    jlo = im.max(
        zero, im.sub(im.addOpt(r0, off), im.c(std::min(mask.left, kBoundCap))));
  if (mask.hasRight())
    jhi = im.min(jhi, im.add(im.addOpt(im.sub(r1, one), off),
                             im.c(std::min(mask.right, kBoundCap))));
  if (mask.hasLeft() || mask.hasRight()) {
    Value empty = im.cmp(arith::CmpIPredicate::sgt, jlo, jhi);
    bounds.begin = im.select(empty, numKvTiles, im.div(jlo, bn));
    bounds.end = im.select(empty, numKvTiles, im.add(im.div(jhi, bn), one));
  }
  if (mask.sink > 0) {
    Value sinkKeys = im.min(im.c(std::min(mask.sink, kBoundCap)), sk);
    Value sinkTiles = im.ceilDiv(sinkKeys, bn);
    // Sink tiles before the window get the leading loop; those after it
    // extend the main loop (the union is then one interval).
    bounds.sinkEnd = im.min(sinkTiles, bounds.begin);
    bounds.end = im.max(bounds.end, sinkTiles);
  }
  return bounds;
}

QLoopBounds mlir::fmha::emitQLoopBounds(OpBuilder &b, Location loc,
                                        const ::fmha::MaskSpec &mask, Value c0,
                                        Value c1, Value sq, Value sk,
                                        int64_t blockM) {
  IndexMath im{b, loc};
  Value zero = im.c(0), one = im.c(1), bm = im.c(blockM);
  Value numQTiles = im.ceilDiv(sq, bm);
  QLoopBounds bounds{zero, numQTiles};
  if (mask.isNone() || (!mask.hasLeft() && !mask.hasRight()))
    return bounds;
  Value off = im.offset(mask, sq, sk);
  Value ilo = zero, ihi = im.sub(sq, one);
  if (mask.hasRight())
    ilo = im.max(
        zero,
        im.sub(c0, im.addOpt(im.c(std::min(mask.right, kBoundCap)), off)));
  if (mask.hasLeft()) {
    Value last = im.add(im.sub(im.sub(c1, one), off ? off : zero),
                        im.c(std::min(mask.left, kBoundCap)));
    ihi = im.min(ihi, last);
  }
  Value empty = im.cmp(arith::CmpIPredicate::sgt, ilo, ihi);
  bounds.begin = im.select(empty, zero, im.div(ilo, bm));
  bounds.end = im.select(empty, zero, im.add(im.div(ihi, bm), one));
  if (mask.sink > 0) {
    Value hasSink = im.lt(c0, im.c(std::min(mask.sink, kBoundCap)));
    bounds.begin = im.select(hasSink, zero, bounds.begin);
    bounds.end = im.select(hasSink, numQTiles, bounds.end);
  }
  return bounds;
}

Value mlir::fmha::emitKvTileIsFull(OpBuilder &b, Location loc,
                                   const ::fmha::MaskSpec &mask, Value r0,
                                   Value r1, Value c0, Value c1, Value sq,
                                   Value sk) {
  IndexMath im{b, loc};
  if (mask.isNone())
    return arith::ConstantIntOp::create(b, loc, 1, 1);
  Value off = im.offset(mask, sq, sk), one = im.c(1);
  Value full;
  if (mask.hasLeft())
    full = im.andOpt(full, im.le(im.sub(im.addOpt(im.sub(r1, one), off),
                                        im.c(std::min(mask.left, kBoundCap))),
                                 c0));
  if (mask.hasRight())
    full =
        im.andOpt(full, im.le(im.sub(c1, one),
                              im.add(im.addOpt(r0, off),
                                     im.c(std::min(mask.right, kBoundCap)))));
  if (!full) // No window edge: every key is visible.
    return arith::ConstantIntOp::create(b, loc, 1, 1);
  if (mask.sink > 0)
    full = arith::OrIOp::create(
        b, loc, full, im.le(c1, im.c(std::min(mask.sink, kBoundCap))));
  return full;
}

Value mlir::fmha::emitVisible(OpBuilder &b, Location loc,
                              const ::fmha::MaskSpec &mask, Value row,
                              Value col, Value sq, Value sk) {
  IndexMath im{b, loc, dyn_cast<VectorType>(row.getType())};
  if (mask.isNone())
    return im.truth();
  Value diag = im.addOpt(row, im.offset(mask, sq, sk));
  Value visible;
  if (mask.hasLeft())
    visible = im.andOpt(
        visible, im.cmp(arith::CmpIPredicate::sge, col,
                        im.sub(diag, im.c(std::min(mask.left, kBoundCap)))));
  if (mask.hasRight())
    visible = im.andOpt(
        visible,
        im.le(col, im.add(diag, im.c(std::min(mask.right, kBoundCap)))));
  if (!visible)
    return im.truth();
  if (mask.sink > 0)
    visible =
        arith::OrIOp::create(b, loc, visible,
                             im.cmp(arith::CmpIPredicate::slt, col,
                                    im.c(std::min(mask.sink, kBoundCap))));
  return visible;
}
