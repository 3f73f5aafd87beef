//===- FmhaDialect.cpp - FMHA dialect ---------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaDialect.h"
#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fmha;

#include "fmha/Dialect/FmhaOpsDialect.cpp.inc"

namespace {

/// Register layouts are long: printed IR names each one once, at the top
/// (`#layout = #fmha.layout<...>`, `#layout1`, ...), and types refer to it.
struct FmhaOpAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (!isa<LayoutAttr>(attr))
      return AliasResult::NoAlias;
    os << "layout";
    return AliasResult::OverridableAlias;
  }
};

} // namespace

void FmhaDialect::initialize() {
  addInterfaces<FmhaOpAsmInterface>();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "fmha/Dialect/FmhaOps.cpp.inc"
      >();
}
