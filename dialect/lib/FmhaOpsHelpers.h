//===- FmhaOpsHelpers.h - Verification helpers of the fmha ops --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What FmhaOps.cpp (the problem-level ops) and FmhaTileOps.cpp (the tile
// ops) share; private to the dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_LIB_FMHAOPSHELPERS_H
#define FMHA_DIALECT_LIB_FMHAOPSHELPERS_H

#include "fmha/Dialect/FmhaOps.h"

namespace mlir::fmha::detail {

/// Size of dim `dim` of the shaped value `v` (ShapedType::kDynamic if
/// dynamic).
int64_t dimOf(Value v, unsigned dim);

/// Memory effects of a destination-style fmha op on memrefs: inputs are read,
/// inits are written (and read too with `readsInits`).
void addDpsEffects(
    DestinationStyleOpInterface op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects,
    bool readsInits = false);

/// `layout` fits a tile of `shape`: a rows x cols layout for a 2-D tile,
/// rows x 1 for a row vector. `what` names the value and `type` is printed in
/// messages.
LogicalResult verifyLayoutShape(Operation *op, const Twine &what,
                                LayoutAttr layout, ArrayRef<int64_t> shape,
                                Type type);

/// A tensor tile may carry a register layout (#fmha.layout) of its static
/// shape. `what` names the value in messages.
LogicalResult verifyTileEncoding(Operation *op, const Twine &what,
                                 RankedTensorType tensor);

/// A tile op takes all tensors (values) or all memrefs (buffers), each
/// tensor with a valid encoding; with `valuesIntoBuffer` also tensor ins
/// with a memref out (written in place).
LogicalResult verifyTileOperands(Operation *op, bool valuesIntoBuffer = false);

} // namespace mlir::fmha::detail

#endif // FMHA_DIALECT_LIB_FMHAOPSHELPERS_H
