//===- FmhaTileOps.cpp - The tile ops of the tiled attention ---*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Memory effects and verifiers of the tile ops (fmha.tile_*): the forward's
// online-softmax steps and the backward's products, on values or buffers.
//
//===----------------------------------------------------------------------===//

#include "FmhaOpsHelpers.h"

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::detail;

/// Two static sizes that differ (a dynamic size matches anything).
static bool clash(int64_t x, int64_t y) {
  return !ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y;
}

//===----------------------------------------------------------------------===//
// Tile ops
//===----------------------------------------------------------------------===//

#define FMHA_TILE_DPS_EFFECTS(OpTy, ReadsInits)                                \
  void OpTy::getEffects(                                                       \
      SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>      \
          &effects) {                                                          \
    addDpsEffects(*this, effects, ReadsInits);                                 \
  }
FMHA_TILE_DPS_EFFECTS(TileInitOp, false)
FMHA_TILE_DPS_EFFECTS(TileQKOp, false)
FMHA_TILE_DPS_EFFECTS(TileSoftmaxOp, true)
FMHA_TILE_DPS_EFFECTS(TilePVOp, true)
FMHA_TILE_DPS_EFFECTS(TileFinalizeOp, false)
FMHA_TILE_DPS_EFFECTS(TileFillOp, false)
FMHA_TILE_DPS_EFFECTS(TileStoreOp, false)
FMHA_TILE_DPS_EFFECTS(TileRowDotOp, false)
FMHA_TILE_DPS_EFFECTS(TileBwdProbsOp, false)
FMHA_TILE_DPS_EFFECTS(TileBwdDsOp, true)
#undef FMHA_TILE_DPS_EFFECTS

// c is read only when the product accumulates into it.
void TileMatmulOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addDpsEffects(*this, effects, getAccumulate());
}

LogicalResult TileInitOp::verify() { return verifyTileOperands(*this); }
LogicalResult TileSoftmaxOp::verify() { return verifyTileOperands(*this); }
LogicalResult TilePVOp::verify() { return verifyTileOperands(*this); }
LogicalResult TileFinalizeOp::verify() { return verifyTileOperands(*this); }

LogicalResult TileQKOp::verify() {
  if (failed(verifyTileOperands(*this)))
    return failure();
  if (!getMaskCoords().empty() && getMaskCoords().size() != 4)
    return emitOpError() << "expects 4 mask coordinates [row0, col0, Sq, Sk], "
                            "got "
                         << getMaskCoords().size();
  int64_t dq = dimOf(getQ(), 1), dk = dimOf(getK(), 1);
  if (clash(dq, dk))
    return emitOpError() << "'k' head dim (" << dk << ") must equal 'q' head "
                         << "dim (" << dq << ")";
  // The scores' rows are the queries, or the keys when transposed.
  int64_t rows = dimOf(getTransposed() ? getK() : getQ(), 0);
  int64_t cols = dimOf(getTransposed() ? getQ() : getK(), 0);
  if (clash(rows, dimOf(getS(), 0)) || clash(cols, dimOf(getS(), 1)))
    return emitOpError() << "'s' must be " << rows << "x" << cols
                         << (getTransposed() ? " (keys x queries)"
                                             : " (queries x keys)")
                         << ", got " << dimOf(getS(), 0) << "x"
                         << dimOf(getS(), 1);
  return success();
}

LogicalResult TileFillOp::verify() { return verifyTileOperands(*this); }
/// The row vector `vec` of an op on the tile `tile` has one element per row
/// of the tile, or per column when `transposed`.
static LogicalResult verifyRowVector(Operation *op, Value tile, Value vec,
                                     StringRef name, bool transposed) {
  int64_t along = dimOf(tile, transposed ? 1 : 0);
  if (!clash(along, dimOf(vec, 0)))
    return success();
  return op->emitOpError() << "'" << name << "' must have one element per "
                           << (transposed ? "column" : "row") << " (" << along
                           << "), got " << dimOf(vec, 0);
}

LogicalResult TileBwdProbsOp::verify() {
  if (failed(verifyTileOperands(*this)))
    return failure();
  return verifyRowVector(*this, getS(), getLse(), "lse", getTransposed());
}

LogicalResult TileStoreOp::verify() {
  if (failed(verifyTileOperands(*this, /*valuesIntoBuffer=*/true)))
    return failure();
  for (int64_t i = 0; i < 2; ++i) {
    int64_t a = dimOf(getSrc(), i), b = dimOf(getDst(), i);
    if (clash(a, b))
      return emitOpError() << "'dst' dim " << i << " (" << b
                           << ") must equal 'src' dim " << i << " (" << a
                           << ")";
  }
  return success();
}

LogicalResult TileMatmulOp::verify() {
  if (failed(verifyTileOperands(*this)))
    return failure();
  int64_t m = dimOf(getA(), getTransposeA() ? 1 : 0);
  int64_t ka = dimOf(getA(), getTransposeA() ? 0 : 1);
  int64_t kb = dimOf(getB(), getTransposeB() ? 1 : 0);
  int64_t n = dimOf(getB(), getTransposeB() ? 0 : 1);
  if (clash(ka, kb))
    return emitOpError() << "reduction sizes differ: " << ka << " in 'a', "
                         << kb << " in 'b'";
  if (clash(m, dimOf(getC(), 0)) || clash(n, dimOf(getC(), 1)))
    return emitOpError() << "'c' must be " << m << "x" << n << ", got "
                         << dimOf(getC(), 0) << "x" << dimOf(getC(), 1);
  if (getAtomic() && !getAccumulate())
    return emitOpError() << "'atomic' requires 'accumulate'";
  if (getAtomic() && isa<TensorType>(getC().getType()))
    return emitOpError() << "'atomic' adds into a buffer that parallel "
                            "iterations share: it takes memrefs, not tensors";
  return success();
}

LogicalResult TileRowDotOp::verify() {
  if (failed(verifyTileOperands(*this)))
    return failure();
  if (clash(dimOf(getA(), 0), dimOf(getB(), 0)) ||
      clash(dimOf(getA(), 1), dimOf(getB(), 1)))
    return emitOpError() << "'a' and 'b' must have the same shape";
  if (clash(dimOf(getA(), 0), dimOf(getOut(), 0)))
    return emitOpError() << "'out' must have one element per row of 'a'";
  return success();
}

LogicalResult TileBwdDsOp::verify() {
  if (failed(verifyTileOperands(*this)))
    return failure();
  if (bool(getS()) != bool(getSoftcapAttr()))
    return emitOpError() << "takes the capped scores exactly when it has a "
                            "'softcap'";
  return verifyRowVector(*this, getP(), getDsum(), "dsum", getTransposed());
}

LogicalResult AtomicAddOp::verify() {
  auto value = cast<ShapedType>(getValue().getType());
  MemRefType dest = getDest().getType();
  if (!value.hasStaticShape() || !dest.hasStaticShape() ||
      dest.getShape() != value.getShape())
    return emitOpError() << "adds a " << value << " into " << dest
                         << ": both need the same static shape";
  if (auto tensor = dyn_cast<RankedTensorType>(value))
    return verifyTileEncoding(*this, "value", tensor);
  return success();
}
