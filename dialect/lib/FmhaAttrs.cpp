//===- FmhaAttrs.cpp - FMHA attributes --------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fmha;

#include "fmha/Dialect/FmhaEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fmha/Dialect/FmhaAttrs.cpp.inc"

void FmhaDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fmha/Dialect/FmhaAttrs.cpp.inc"
      >();
}

::fmha::MaskSpec MaskAttr::getSpec() const {
  ::fmha::MaskSpec spec;
  spec.kind = static_cast<::fmha::MaskKind>(getKind());
  spec.left = getLeft();
  spec.right = getRight();
  spec.sink = getSink();
  return spec;
}

std::string MaskAttr::getSpecString() const { return getSpec().str(); }

MaskAttr MaskAttr::get(MLIRContext *context, const ::fmha::MaskSpec &spec) {
  return MaskAttr::get(context, static_cast<MaskKind>(spec.kind), spec.left,
                       spec.right, spec.sink);
}

LogicalResult MaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               MaskKind kind, int64_t left, int64_t right,
                               int64_t sink) {
  ::fmha::MaskSpec spec;
  spec.kind = static_cast<::fmha::MaskKind>(kind);
  spec.left = left;
  spec.right = right;
  spec.sink = sink;
  std::string message = spec.validate();
  if (!message.empty())
    return emitError() << "invalid mask: " << message;
  return success();
}

Attribute MaskAttr::parse(AsmParser &parser, Type) {
  std::string text;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseString(&text) || parser.parseGreater())
    return {};
  std::string error;
  std::optional<::fmha::MaskSpec> spec = ::fmha::MaskSpec::parse(text, &error);
  if (!spec) {
    parser.emitError(loc) << error;
    return {};
  }
  return MaskAttr::get(parser.getContext(), *spec);
}

void MaskAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << getSpecString() << "\">";
}
