//===- FmhaOps.h - FMHA operations ------------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHAOPS_H
#define FMHA_DIALECT_FMHAOPS_H

#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#define GET_OP_CLASSES
#include "fmha/Dialect/FmhaOps.h.inc"

namespace mlir::fmha {
/// On a `vector.contract` of two tiles: its reduction runs over the first
/// `fmha.k_extent` elements only, both operands being zeros past them (a
/// head dim padded to the tile's power of two). The matrix-instruction
/// distributions skip the k steps past it.
inline constexpr llvm::StringLiteral kReductionExtentAttrName = "fmha.k_extent";
} // namespace mlir::fmha

#endif // FMHA_DIALECT_FMHAOPS_H
