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

#endif // FMHA_DIALECT_FMHAOPS_H
