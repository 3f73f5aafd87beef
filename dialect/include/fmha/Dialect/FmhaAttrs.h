//===- FmhaAttrs.h - FMHA attributes ----------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHAATTRS_H
#define FMHA_DIALECT_FMHAATTRS_H

#include "fmha/Support/LinearLayout.h"
#include "fmha/Support/MaskSpec.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "fmha/Dialect/FmhaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fmha/Dialect/FmhaAttrs.h.inc"

#endif // FMHA_DIALECT_FMHAATTRS_H
