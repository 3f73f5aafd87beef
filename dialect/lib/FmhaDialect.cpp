//===- FmhaDialect.cpp - FMHA dialect ---------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaDialect.h"
#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fmha;

#include "fmha/Dialect/FmhaOpsDialect.cpp.inc"

void FmhaDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "fmha/Dialect/FmhaOps.cpp.inc"
      >();
}
