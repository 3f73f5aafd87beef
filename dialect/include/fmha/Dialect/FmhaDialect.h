//===- FmhaDialect.h - FMHA dialect -----------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHADIALECT_H
#define FMHA_DIALECT_FMHADIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dialect.h"

#include "fmha/Dialect/FmhaOpsDialect.h.inc"

#endif // FMHA_DIALECT_FMHADIALECT_H
