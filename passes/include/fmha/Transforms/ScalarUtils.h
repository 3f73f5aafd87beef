//===- ScalarUtils.h - f32 loads and rounded stores -------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The scalar element access the loop forms share (--fmha-tile-elementwise,
// the CPU lowering of the tile ops): arithmetic in f32, loads widen, stores
// round to the memref's element type.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TRANSFORMS_SCALARUTILS_H
#define FMHA_TRANSFORMS_SCALARUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mlir::fmha {

/// Loads an element of `memref` as f32.
inline Value loadAsF32(OpBuilder &b, Location loc, Value memref,
                       ValueRange indices) {
  Value v = memref::LoadOp::create(b, loc, memref, indices);
  if (!v.getType().isF32())
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}

/// Stores an f32 value into `memref`, rounding it to its element type.
inline void storeRounded(OpBuilder &b, Location loc, Value value, Value memref,
                         ValueRange indices) {
  Type elt = cast<MemRefType>(memref.getType()).getElementType();
  if (elt != value.getType())
    value = arith::TruncFOp::create(b, loc, elt, value);
  memref::StoreOp::create(b, loc, value, memref, indices);
}

} // namespace mlir::fmha

#endif // FMHA_TRANSFORMS_SCALARUTILS_H
