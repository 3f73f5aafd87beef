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

//===----------------------------------------------------------------------===//
// LayoutAttr
//===----------------------------------------------------------------------===//

namespace {

std::vector<::fmha::TileCoord> basesOf(ArrayRef<int64_t> flat) {
  std::vector<::fmha::TileCoord> bases;
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    bases.push_back({flat[i], flat[i + 1]});
  return bases;
}

SmallVector<int64_t> flatten(const std::vector<::fmha::TileCoord> &bases) {
  SmallVector<int64_t> flat;
  for (::fmha::TileCoord basis : bases) {
    flat.push_back(basis.row);
    flat.push_back(basis.col);
  }
  return flat;
}

/// `[[r, c], ...]` into `flat`.
ParseResult parseBases(AsmParser &parser, SmallVectorImpl<int64_t> &flat) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int64_t row, col;
        if (parser.parseLSquare() || parser.parseInteger(row) ||
            parser.parseComma() || parser.parseInteger(col) ||
            parser.parseRSquare())
          return failure();
        flat.push_back(row);
        flat.push_back(col);
        return success();
      });
}

void printBases(AsmPrinter &printer, ArrayRef<int64_t> flat) {
  printer << "[";
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    printer << (i ? ", [" : "[") << flat[i] << ", " << flat[i + 1] << "]";
  printer << "]";
}

} // namespace

::fmha::LinearLayout LayoutAttr::getLayout() const {
  return ::fmha::LinearLayout(getRows(), getCols(), basesOf(getRegisters()),
                              basesOf(getLanes()), basesOf(getWarps()));
}

LayoutAttr LayoutAttr::get(MLIRContext *context,
                           const ::fmha::LinearLayout &layout) {
  using ::fmha::LayoutInput;
  return LayoutAttr::get(context, layout.getRows(), layout.getCols(),
                         flatten(layout.getBases(LayoutInput::Register)),
                         flatten(layout.getBases(LayoutInput::Lane)),
                         flatten(layout.getBases(LayoutInput::Warp)));
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t rows, int64_t cols,
                                 ArrayRef<int64_t> registers,
                                 ArrayRef<int64_t> lanes,
                                 ArrayRef<int64_t> warps) {
  for (ArrayRef<int64_t> flat : {registers, lanes, warps})
    if (flat.size() % 2 != 0)
      return emitError() << "invalid layout: each basis is a [row, col] pair";
  std::string message = ::fmha::LinearLayout(rows, cols, basesOf(registers),
                                             basesOf(lanes), basesOf(warps))
                            .validate();
  if (!message.empty())
    return emitError() << "invalid layout: " << message;
  return success();
}

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> shape;
  SmallVector<int64_t> bases[3];
  const char *names[] = {"register", "lane", "warp"};
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/false))
    return {};
  if (shape.size() != 2) {
    parser.emitError(loc) << "a layout is of a rows x cols tile, got "
                          << shape.size() << " dims";
    return {};
  }
  for (int i = 0; i < 3; ++i) {
    if (parser.parseComma() || parser.parseKeyword(names[i]) ||
        parser.parseEqual() || parseBases(parser, bases[i]))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<LayoutAttr>(loc, parser.getContext(), shape[0],
                                       shape[1], bases[0], bases[1], bases[2]);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<" << getRows() << "x" << getCols() << ", register = ";
  printBases(printer, getRegisters());
  printer << ", lane = ";
  printBases(printer, getLanes());
  printer << ", warp = ";
  printBases(printer, getWarps());
  printer << ">";
}
