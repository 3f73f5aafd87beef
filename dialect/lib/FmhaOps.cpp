//===- FmhaOps.cpp - FMHA operations ----------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaOps.h"
#include "FmhaOpsHelpers.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::detail;

//===----------------------------------------------------------------------===//
// Verification helpers
//===----------------------------------------------------------------------===//

namespace {

std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

std::string shapeStr(ShapedType t) {
  std::string s = "[";
  llvm::interleave(
      t.getShape(), [&](int64_t d) { s += dimStr(d); }, [&] { s += ", "; });
  return s + "]";
}

/// Checks the operand kinds and ranks of one named operand.
class OperandChecker {
public:
  explicit OperandChecker(Operation *op) : op(op) {}

  /// All shaped operands are tensors, or all are memrefs.
  LogicalResult checkUniformKind(ArrayRef<std::pair<StringRef, Value>> named) {
    bool firstIsTensor = isa<RankedTensorType>(named.front().second.getType());
    for (auto [name, value] : named.drop_front()) {
      if (isa<RankedTensorType>(value.getType()) != firstIsTensor)
        return op->emitOpError()
               << "operands must be all tensors or all memrefs, but '" << name
               << "' is a " << (firstIsTensor ? "memref" : "tensor")
               << " while '" << named.front().first << "' is a "
               << (firstIsTensor ? "tensor" : "memref");
    }
    if (!firstIsTensor && op->getNumResults() != 0)
      return op->emitOpError()
             << "on memrefs has no results, got " << op->getNumResults();
    return success();
  }

  LogicalResult checkRank(StringRef name, Value v, int64_t rank,
                          StringRef layout) {
    auto t = cast<ShapedType>(v.getType());
    if (t.getRank() != rank)
      return op->emitOpError() << "'" << name << "' must have rank " << rank
                               << " " << layout << ", got rank " << t.getRank();
    return success();
  }

  LogicalResult checkStatic(StringRef name, Value v, unsigned dim,
                            StringRef what) {
    auto t = cast<ShapedType>(v.getType());
    if (t.isDynamicDim(dim))
      return op->emitOpError() << "'" << name << "' " << what << " (dim " << dim
                               << ") must be static";
    if (t.getDimSize(dim) <= 0)
      return op->emitOpError()
             << "'" << name << "' " << what << " (dim " << dim
             << ") must be positive, got " << t.getDimSize(dim);
    return success();
  }

  /// When both sizes are static they must agree.
  LogicalResult checkDim(StringRef name, Value v, unsigned dim, StringRef what,
                         int64_t expected, StringRef from) {
    int64_t actual = cast<ShapedType>(v.getType()).getDimSize(dim);
    if (ShapedType::isDynamic(actual) || ShapedType::isDynamic(expected) ||
        actual == expected)
      return success();
    return op->emitOpError()
           << "'" << name << "' " << what << " (dim " << dim << ") is "
           << actual << ", expected " << expected << " as in '" << from << "'";
  }

  /// Every one of `named` has f32 elements.
  LogicalResult checkF32(ArrayRef<std::pair<StringRef, Value>> named) {
    Type f32 = Float32Type::get(op->getContext());
    for (auto [name, value] : named)
      if (failed(checkElementType(name, value, f32, "")))
        return failure();
    return success();
  }

  /// An lse-like `name` [B, H, S] has the first three sizes of `ref`
  /// [B, H, S, Dv] where both are static.
  LogicalResult checkRowsOf(StringRef name, Value v, StringRef from,
                            Value ref) {
    static constexpr StringRef what[] = {"batch B", "head count H",
                                         "sequence length S"};
    for (unsigned dim = 0; dim < 3; ++dim)
      if (failed(checkDim(name, v, dim, what[dim],
                          cast<ShapedType>(ref.getType()).getDimSize(dim),
                          from)))
        return failure();
    return success();
  }

  LogicalResult checkElementType(StringRef name, Value v, Type expected,
                                 StringRef from) {
    Type actual = cast<ShapedType>(v.getType()).getElementType();
    if (actual == expected)
      return success();
    InFlightDiagnostic diag = op->emitOpError();
    diag << "'" << name << "' element type " << actual << " must be "
         << expected;
    if (!from.empty())
      diag << " as in '" << from << "'";
    return diag;
  }

  /// `name` has exactly the shape of `ref` (dynamic sizes are compatible).
  LogicalResult checkSameShape(StringRef name, Value v, StringRef refName,
                               Value ref) {
    auto t = cast<ShapedType>(v.getType());
    auto r = cast<ShapedType>(ref.getType());
    if (t.getRank() == r.getRank() &&
        succeeded(verifyCompatibleShape(t.getShape(), r.getShape())))
      return success();
    return op->emitOpError()
           << "'" << name << "' shape " << shapeStr(t) << " must match '"
           << refName << "' shape " << shapeStr(r);
  }

  LogicalResult checkPositive(StringRef name, FloatAttr attr) {
    if (!attr)
      return success();
    double value = attr.getValueAsDouble();
    if (!(value > 0.0) || !std::isfinite(value))
      return op->emitOpError()
             << "'" << name << "' must be positive and finite, got " << value;
    return success();
  }

private:
  Operation *op;
};

/// Verifies q [B,Hq,Sq,D], k [B,Hk,Sk,D], v [B,Hk,Sk,Dv], o [B,Hq,Sq,Dv] and
/// the optional lse [B,Hq,Sq] (f32) against one another (DESIGN.md section 1).
LogicalResult verifyAttentionSignature(Operation *op, Value q, Value k, Value v,
                                       Value o, Value lse, FloatAttr scale,
                                       FloatAttr softcap) {
  OperandChecker c(op);
  SmallVector<std::pair<StringRef, Value>> named = {
      {"q", q}, {"k", k}, {"v", v}, {"o", o}};
  if (lse)
    named.push_back({"lse", lse});
  if (failed(c.checkUniformKind(named)))
    return failure();

  if (failed(c.checkRank("q", q, 4, "[B, Hq, Sq, D]")) ||
      failed(c.checkRank("k", k, 4, "[B, Hk, Sk, D]")) ||
      failed(c.checkRank("v", v, 4, "[B, Hk, Sk, Dv]")) ||
      failed(c.checkRank("o", o, 4, "[B, Hq, Sq, Dv]")) ||
      (lse && failed(c.checkRank("lse", lse, 3, "[B, Hq, Sq]"))))
    return failure();

  Type elt = cast<ShapedType>(q.getType()).getElementType();
  if (failed(c.checkElementType("k", k, elt, "q")) ||
      failed(c.checkElementType("v", v, elt, "q")) ||
      (lse && failed(c.checkElementType(
                  "lse", lse, Float32Type::get(op->getContext()), ""))))
    return failure();

  if (failed(c.checkStatic("q", q, 1, "head count Hq")) ||
      failed(c.checkStatic("q", q, 3, "head dim D")) ||
      failed(c.checkStatic("k", k, 1, "head count Hk")) ||
      failed(c.checkStatic("k", k, 3, "head dim D")) ||
      failed(c.checkStatic("v", v, 1, "head count Hk")) ||
      failed(c.checkStatic("v", v, 3, "head dim Dv")) ||
      failed(c.checkStatic("o", o, 1, "head count Hq")) ||
      failed(c.checkStatic("o", o, 3, "head dim Dv")) ||
      (lse && failed(c.checkStatic("lse", lse, 1, "head count Hq"))))
    return failure();

  int64_t b = dimOf(q, 0), hq = dimOf(q, 1), sq = dimOf(q, 2), d = dimOf(q, 3);
  int64_t hk = dimOf(k, 1), sk = dimOf(k, 2), dv = dimOf(v, 3);
  if (failed(c.checkDim("k", k, 3, "head dim D", d, "q")) ||
      failed(c.checkDim("v", v, 1, "head count Hk", hk, "k")) ||
      failed(c.checkDim("o", o, 1, "head count Hq", hq, "q")) ||
      failed(c.checkDim("o", o, 3, "head dim Dv", dv, "v")))
    return failure();
  if (hq % hk != 0)
    return op->emitOpError()
           << "Hq (" << hq << ") must be a multiple of Hk (" << hk << ")";

  // Batch and sequence lengths, where static.
  int64_t bk = dimOf(k, 0);
  if (failed(c.checkDim("k", k, 0, "batch B", b, "q")) ||
      failed(c.checkDim("v", v, 0, "batch B", ShapedType::isDynamic(b) ? bk : b,
                        ShapedType::isDynamic(b) ? "k" : "q")) ||
      failed(c.checkDim("o", o, 0, "batch B", b, "q")) ||
      failed(c.checkDim("v", v, 2, "sequence length Sk", sk, "k")) ||
      failed(c.checkDim("o", o, 2, "sequence length Sq", sq, "q")))
    return failure();
  if (lse && (failed(c.checkDim("lse", lse, 0, "batch B", b, "q")) ||
              failed(c.checkDim("lse", lse, 1, "head count Hq", hq, "q")) ||
              failed(c.checkDim("lse", lse, 2, "sequence length Sq", sq, "q"))))
    return failure();

  return success(succeeded(c.checkPositive("scale", scale)) &&
                 succeeded(c.checkPositive("softcap", softcap)));
}

/// Verifies the optional learned sink logits `sinks` f32 [Hq] of an attention
/// op whose q is `q` (DESIGN.md section 1, learned sink logits).
LogicalResult verifySinks(Operation *op, Value sinks, Value q) {
  if (!sinks)
    return success();
  OperandChecker c(op);
  SmallVector<std::pair<StringRef, Value>> named = {{"q", q}, {"sinks", sinks}};
  return success(succeeded(c.checkUniformKind(named)) &&
                 succeeded(c.checkRank("sinks", sinks, 1, "[Hq]")) &&
                 succeeded(c.checkElementType(
                     "sinks", sinks, Float32Type::get(op->getContext()), "")) &&
                 succeeded(c.checkDim("sinks", sinks, 0, "head count Hq",
                                      dimOf(q, 1), "q")));
}

/// Verifies the optional variable-length offsets `cuQ`, `cuK` (i32 [N + 1],
/// both or neither) of an attention op: its tensors then hold batch 1
/// (DESIGN.md section 1, variable-length batches).
LogicalResult verifyVarlen(Operation *op, Value cuQ, Value cuK,
                           ArrayRef<std::pair<StringRef, Value>> batched) {
  if (!cuQ && !cuK)
    return success();
  if (!cuQ || !cuK)
    return op->emitOpError()
           << "takes cu_seqlens_q and cu_seqlens_k together, got only "
           << (cuQ ? "cu_seqlens_q" : "cu_seqlens_k");
  OperandChecker c(op);
  SmallVector<std::pair<StringRef, Value>> named = {
      batched.front(), {"cu_seqlens_q", cuQ}, {"cu_seqlens_k", cuK}};
  if (failed(c.checkUniformKind(named)) ||
      failed(c.checkRank("cu_seqlens_q", cuQ, 1, "[N + 1]")) ||
      failed(c.checkRank("cu_seqlens_k", cuK, 1, "[N + 1]")) ||
      failed(c.checkSameShape("cu_seqlens_k", cuK, "cu_seqlens_q", cuQ)))
    return failure();
  if (int64_t n = dimOf(cuQ, 0); n == 0)
    return op->emitOpError()
           << "'cu_seqlens_q' needs N + 1 >= 1 offsets, got none";
  for (auto [name, value] : batched)
    if (dimOf(value, 0) != 1)
      return op->emitOpError()
             << "'" << name
             << "' of a variable-length batch (cu_seqlens) has batch 1, its "
                "sequence axis holding every sequence; got batch "
             << dimStr(dimOf(value, 0));
  return success();
}

::fmha::MaskSpec maskSpecOf(std::optional<MaskAttr> mask) {
  return mask && *mask ? mask->getSpec() : ::fmha::MaskSpec{};
}

/// Rewrites the mask attribute into its simplest form for the static
/// sequence lengths of q and k (a mask that hides nothing disappears).
LogicalResult simplifyMaskAttr(Operation *op, MaskAttr mask, Value q, Value k,
                               PatternRewriter &rewriter) {
  if (!mask)
    return failure();
  auto staticOr = [](int64_t size) {
    return ShapedType::isDynamic(size) ? int64_t(-1) : size;
  };
  ::fmha::MaskSpec spec = mask.getSpec();
  ::fmha::MaskSpec simple =
      spec.simplified(staticOr(dimOf(q, 2)), staticOr(dimOf(k, 2)));
  if (simple.isNone()) {
    rewriter.modifyOpInPlace(op, [&] { op->removeAttr("mask"); });
    return success();
  }
  if (simple == spec)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    op->setAttr("mask", MaskAttr::get(op->getContext(), simple));
  });
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Helpers the tile ops share (FmhaOpsHelpers.h)
//===----------------------------------------------------------------------===//

namespace mlir::fmha::detail {

int64_t dimOf(Value v, unsigned dim) {
  return cast<ShapedType>(v.getType()).getDimSize(dim);
}

/// Memory effects of a destination-style fmha op on memrefs: inputs are read,
/// inits are written (and read too with `readsInits`).
void addDpsEffects(
    DestinationStyleOpInterface op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects,
    bool readsInits) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    bool init = op.isDpsInit(&operand);
    if (init)
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    if (!init || readsInits)
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

/// `layout` fits a tile of `shape`: a rows x cols layout for a 2-D tile,
/// rows x 1 for a row vector (one value per row of a tile) or 1 x cols for a
/// column vector (one per column). `what` names the value and `type` is
/// printed in messages.
LogicalResult verifyLayoutShape(Operation *op, const Twine &what,
                                LayoutAttr layout, ArrayRef<int64_t> shape,
                                Type type) {
  if (shape.size() != 1 && shape.size() != 2)
    return op->emitOpError() << what << ": a tile with a layout has rank 1 or "
                             << "2, got " << type;
  SmallVector<int64_t> expected = {layout.getRows()};
  if (shape.size() == 2)
    expected.push_back(layout.getCols());
  else if (layout.getRows() == 1)
    expected = {layout.getCols()};
  else if (layout.getCols() != 1)
    return op->emitOpError()
           << what << ": the layout of a vector has 1 column (a row vector) "
           << "or 1 row (a column vector), got " << layout.getRows() << "x"
           << layout.getCols();
  if (shape != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << what << ": the tile's shape must be the layout's ("
           << layout.getRows() << "x" << layout.getCols() << "), got " << type;
  return success();
}

/// A tile op takes all tensors (values) or all memrefs (buffers). A tensor
/// tile may carry a register layout (#fmha.layout) of its static shape.
/// `what` names the value in messages.
LogicalResult verifyTileEncoding(Operation *op, const Twine &what,
                                 RankedTensorType tensor) {
  if (!tensor.getEncoding())
    return success();
  auto layout = dyn_cast<LayoutAttr>(tensor.getEncoding());
  if (!layout)
    return op->emitOpError()
           << what << ": a tile's encoding is a #fmha.layout, got "
           << tensor.getEncoding();
  return verifyLayoutShape(op, what, layout, tensor.getShape(), tensor);
}

LogicalResult verifyTileOperands(Operation *op) {
  std::optional<bool> tensors;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<ShapedType>(operand.getType()))
      continue;
    bool isTensor = isa<TensorType>(operand.getType());
    if (tensors && *tensors != isTensor)
      return op->emitOpError() << "takes all tensors or all memrefs, not both";
    tensors = isTensor;
    auto tensor = dyn_cast<RankedTensorType>(operand.getType());
    if (tensor &&
        failed(verifyTileEncoding(op, "operand #" + Twine(i), tensor)))
      return failure();
  }
  return success();
}

} // namespace mlir::fmha::detail

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  return success(succeeded(verifyAttentionSignature(
                     *this, getQ(), getK(), getV(), getO(), getLse(),
                     getScaleAttr(), getSoftcapAttr())) &&
                 succeeded(verifySinks(*this, getSinks(), getQ())) &&
                 succeeded(verifyVarlen(*this, getCuSeqlensQ(), getCuSeqlensK(),
                                        batchedOperands())));
}

SmallVector<std::pair<StringRef, Value>> AttentionOp::batchedOperands() {
  SmallVector<std::pair<StringRef, Value>> named = {
      {"q", getQ()}, {"k", getK()}, {"v", getV()}, {"o", getO()}};
  if (getLse())
    named.push_back({"lse", getLse()});
  return named;
}

::fmha::MaskSpec AttentionOp::getMaskSpec() { return maskSpecOf(getMask()); }

/// The `scale` attribute, or 1/sqrt(D) of `q` when it is absent.
static double scaleOrDefault(std::optional<APFloat> scale, Value q) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(dimOf(q, 3)));
}

double AttentionOp::getScaleOrDefault() {
  return scaleOrDefault(getScale(), getQ());
}

LogicalResult AttentionOp::canonicalize(AttentionOp op,
                                        PatternRewriter &rewriter) {
  // A variable-length batch's Sq and Sk are each sequence's, not the
  // tensors'.
  if (op.isVarlen())
    return failure();
  return simplifyMaskAttr(op, op.getMaskAttr(), op.getQ(), op.getK(), rewriter);
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addDpsEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// AttentionOp: TilingInterface
//===----------------------------------------------------------------------===//
//
// The parallel dims are B, Hq and Sq (on tensors). A tile of query heads
// [h0, h0 + hs) reads kv heads [h0 / g, (h0 + hs) / g) with g = Hq / Hk, so
// hs must be a multiple of g; K and V keep every key. Sq may be tiled only
// without a mask: a mask needs the absolute row index (and Sq itself for
// `b`), which a tile's own op no longer has.

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t d = 0; d < 3; ++d) {
    OpFoldResult size;
    if (!ShapedType::isDynamic(dimOf(getQ(), d)))
      size = b.getIndexAttr(dimOf(getQ(), d));
    else if (isa<RankedTensorType>(getQ().getType()))
      size = tensor::DimOp::create(b, loc, getQ(), d).getResult();
    else
      size = memref::DimOp::create(b, loc, getQ(), d).getResult();
    domain.push_back(Range{zero, size, one});
  }
  return domain;
}

/// Whether `size` is all of dim `d` of `source` (untiled).
static bool isWholeDim(OpFoldResult size, Value source, int64_t d) {
  if (std::optional<int64_t> c = getConstantIntValue(size))
    return *c == dimOf(source, d);
  auto dim = dyn_cast<Value>(size).getDefiningOp<tensor::DimOp>();
  if (!dim)
    return false;
  std::optional<int64_t> index = getConstantIntValue(dim.getIndex());
  return index && *index == d && dim.getSource().getType() == source.getType();
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  if (!isa<RankedTensorType>(getQ().getType()))
    return emitOpError() << "is tiled through TilingInterface on tensors only";
  const int64_t hq = dimOf(getQ(), 1), hk = dimOf(getK(), 1);
  const int64_t group = hq / hk;
  std::optional<int64_t> headTile = getConstantIntValue(sizes[1]);
  if (!headTile || *headTile % group != 0)
    return emitOpError()
           << "head tiles must be a constant multiple of Hq / Hk (" << group
           << ") so that each reads whole kv heads";
  if (!getMaskSpec().isNone() &&
      !(isConstantIntValue(offsets[2], 0) && isWholeDim(sizes[2], getQ(), 2)))
    return emitOpError()
           << "cannot tile the query sequence under mask '"
           << getMaskSpec().str()
           << "': the mask needs absolute row indices; tile B and Hq only";
  if (isVarlen() &&
      !(isConstantIntValue(offsets[2], 0) && isWholeDim(sizes[2], getQ(), 2)))
    return emitOpError() << "cannot tile the query sequence of a "
                            "variable-length batch (cu_seqlens): tile Hq only";

  OpFoldResult zero = b.getIndexAttr(0);
  auto slice = [&](Value source, ArrayRef<OpFoldResult> offs,
                   ArrayRef<OpFoldResult> szs) -> Value {
    auto type = cast<RankedTensorType>(source.getType());
    SmallVector<OpFoldResult> offsets(offs), sizes(szs);
    for (int64_t d = offsets.size(); d < type.getRank(); ++d) {
      offsets.push_back(zero);
      sizes.push_back(tensor::getMixedSize(b, loc, source, d));
    }
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                          strides);
  };
  AffineExpr h;
  bindDims(b.getContext(), h);
  OpFoldResult kvOffset = affine::makeComposedFoldedAffineApply(
      b, loc, h.floorDiv(group), {offsets[1]});
  OpFoldResult kvSize = b.getIndexAttr(*headTile / group);
  OpFoldResult keys = tensor::getMixedSize(b, loc, getK(), 2);
  SmallVector<OpFoldResult> qOffsets(offsets), qSizes(sizes);
  SmallVector<OpFoldResult> kvOffsets = {offsets[0], kvOffset, zero};
  SmallVector<OpFoldResult> kvSizes = {sizes[0], kvSize, keys};

  SmallVector<Value> operands = {slice(getQ(), qOffsets, qSizes),
                                 slice(getK(), kvOffsets, kvSizes),
                                 slice(getV(), kvOffsets, kvSizes)};
  if (getSinks()) // The sink logits of the tile's query heads.
    operands.push_back(slice(getSinks(), {offsets[1]}, {sizes[1]}));
  if (isVarlen()) // Every sequence's offsets (B is 1, Sq whole).
    operands.append({getCuSeqlensQ(), getCuSeqlensK()});
  const size_t inputs = operands.size();
  operands.push_back(slice(getO(), qOffsets, qSizes));
  if (getLse())
    operands.push_back(slice(getLse(), qOffsets, qSizes));
  SmallVector<Type> resultTypes;
  for (Value init : ArrayRef<Value>(operands).drop_front(inputs))
    resultTypes.push_back(init.getType());
  Operation *tiled = mlir::clone(b, getOperation(), resultTypes, operands);
  SmallVector<Operation *> slices;
  for (Value operand : operands)
    if (auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>())
      slices.push_back(slice);
  return TilingResult{{tiled}, SmallVector<Value>(tiled->getResults()), slices};
}

LogicalResult AttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.assign(offsets.begin(), offsets.end());
  resultSizes.assign(sizes.begin(), sizes.end());
  if (resultNumber == 0) { // o: all of Dv
    resultOffsets.push_back(b.getIndexAttr(0));
    resultSizes.push_back(b.getIndexAttr(dimOf(getO(), 3)));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionBwdOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionBwdOp::verify() {
  if (failed(verifyAttentionSignature(*this, getQ(), getK(), getV(), getO(),
                                      getLse(), getScaleAttr(),
                                      getSoftcapAttr())))
    return failure();
  OperandChecker c(*this);
  SmallVector<std::pair<StringRef, Value>> named = {{"q", getQ()},
                                                    {"dout", getDout()},
                                                    {"dq", getDq()},
                                                    {"dk", getDk()},
                                                    {"dv", getDv()}};
  if (failed(c.checkUniformKind(named)))
    return failure();
  return success(succeeded(c.checkSameShape("dout", getDout(), "o", getO())) &&
                 succeeded(c.checkSameShape("dq", getDq(), "q", getQ())) &&
                 succeeded(c.checkSameShape("dk", getDk(), "k", getK())) &&
                 succeeded(c.checkSameShape("dv", getDv(), "v", getV())));
}

::fmha::MaskSpec AttentionBwdOp::getMaskSpec() { return maskSpecOf(getMask()); }

double AttentionBwdOp::getScaleOrDefault() {
  return scaleOrDefault(getScale(), getQ());
}

LogicalResult AttentionBwdOp::canonicalize(AttentionBwdOp op,
                                           PatternRewriter &rewriter) {
  return simplifyMaskAttr(op, op.getMaskAttr(), op.getQ(), op.getK(), rewriter);
}

void AttentionBwdOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addDpsEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// SinksGradOp
//===----------------------------------------------------------------------===//

LogicalResult SinksGradOp::verify() {
  OperandChecker c(*this);
  SmallVector<std::pair<StringRef, Value>> named = {{"o", getO()},
                                                    {"lse", getLse()},
                                                    {"dout", getDout()},
                                                    {"sinks", getSinks()},
                                                    {"dsinks", getDsinks()}};
  if (failed(c.checkUniformKind(named)))
    return failure();
  if (failed(c.checkRank("o", getO(), 4, "[B, H, S, Dv]")) ||
      failed(c.checkRank("lse", getLse(), 3, "[B, H, S]")) ||
      failed(c.checkRank("sinks", getSinks(), 1, "[H]")))
    return failure();
  if (failed(c.checkF32(
          {{"lse", getLse()}, {"sinks", getSinks()}, {"dsinks", getDsinks()}})))
    return failure();
  if (failed(c.checkSameShape("dout", getDout(), "o", getO())) ||
      failed(c.checkSameShape("dsinks", getDsinks(), "sinks", getSinks())))
    return failure();
  if (failed(c.checkRowsOf("lse", getLse(), "o", getO())))
    return failure();
  if (failed(c.checkStatic("o", getO(), 1, "head count H")) ||
      failed(c.checkStatic("sinks", getSinks(), 0, "head count H")))
    return failure();
  return c.checkDim("sinks", getSinks(), 0, "head count H", dimOf(getO(), 1),
                    "o");
}

void SinksGradOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addDpsEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// MergeOp
//===----------------------------------------------------------------------===//

LogicalResult MergeOp::verify() {
  OperandChecker c(*this);
  SmallVector<std::pair<StringRef, Value>> named = {
      {"o1", getO1()},     {"lse1", getLse1()}, {"o2", getO2()},
      {"lse2", getLse2()}, {"o", getO()},       {"lse", getLse()}};
  if (failed(c.checkUniformKind(named)))
    return failure();
  if (failed(c.checkRank("o1", getO1(), 4, "[B, H, S, Dv]")) ||
      failed(c.checkRank("lse1", getLse1(), 3, "[B, H, S]")))
    return failure();
  if (failed(c.checkF32(
          {{"lse1", getLse1()}, {"lse2", getLse2()}, {"lse", getLse()}})))
    return failure();
  if (failed(c.checkSameShape("o2", getO2(), "o1", getO1())) ||
      failed(c.checkSameShape("o", getO(), "o1", getO1())) ||
      failed(c.checkSameShape("lse2", getLse2(), "lse1", getLse1())) ||
      failed(c.checkSameShape("lse", getLse(), "lse1", getLse1())))
    return failure();
  return c.checkRowsOf("lse1", getLse1(), "o1", getO1());
}

void MergeOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addDpsEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// AccumulateOp
//===----------------------------------------------------------------------===//

LogicalResult AccumulateOp::verify() {
  OperandChecker c(*this);
  if (failed(c.checkUniformKind({{"x", getX()}, {"acc", getAcc()}})) ||
      failed(c.checkElementType("acc", getAcc(), Float32Type::get(getContext()),
                                "")) ||
      failed(c.checkSameShape("acc", getAcc(), "x", getX())))
    return failure();
  return success();
}

void AccumulateOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // acc is read and written.
  addDpsEffects(*this, effects);
  if (isa<MemRefType>(getAcc().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getAccMutable(),
                         SideEffects::DefaultResource::get());
}

LogicalResult ConvertLayoutOp::verify() {
  auto source = getSource().getType(), result = getResult().getType();
  if (source.getShape() != result.getShape() ||
      source.getElementType() != result.getElementType())
    return emitOpError() << "converts a tile's layout, not its shape or "
                         << "element type: " << source << " -> " << result;
  if (failed(verifyTileEncoding(*this, "source", source)) ||
      failed(verifyTileEncoding(*this, "result", result)))
    return failure();
  return success();
}

LogicalResult ToLayoutOp::verify() {
  return verifyLayoutShape(*this, "source", getLayout(),
                           getSource().getType().getShape(),
                           getSource().getType());
}

LogicalResult CopyAsyncOp::verify() {
  auto source = cast<MemRefType>(getSource().getType());
  auto dest = cast<MemRefType>(getDest().getType());
  if (source.getRank() < 2 || dest.getRank() < 2)
    return emitOpError("copies a 2-D tile: source and dest need rank >= 2, "
                       "got ")
           << source << " and " << dest;
  if (getSourceIndices().size() != size_t(source.getRank()) ||
      getDestIndices().size() != size_t(dest.getRank()))
    return emitOpError("needs one index a dim of source (")
           << source.getRank() << ") and dest (" << dest.getRank() << "), got "
           << getSourceIndices().size() << " and " << getDestIndices().size();
  if (source.getElementType() != dest.getElementType())
    return emitOpError("copies ")
           << source.getElementType() << " into " << dest.getElementType();
  const ::fmha::LinearLayout &l = getLayout().getLayout();
  std::string why = l.validate();
  if (!why.empty())
    return emitOpError("layout: ") << why;
  auto fits = [&](MemRefType t, int64_t dim, int64_t size) {
    return t.isDynamicDim(dim) || t.getDimSize(dim) >= size;
  };
  const int64_t rank = dest.getRank();
  if (!fits(dest, rank - 2, l.getRows()) || !fits(dest, rank - 1, l.getCols()))
    return emitOpError("the ") << l.getRows() << "x" << l.getCols()
                               << " tile does not fit in " << dest;
  return success();
}

OpFoldResult ToLayoutOp::fold(FoldAdaptor) {
  // A tile anchored in the layout it already has.
  if (auto inner = getSource().getDefiningOp<ToLayoutOp>())
    if (inner.getLayout() == getLayout())
      return getSource();
  return {};
}

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor) {
  // Equal layouts are the same attribute: the same type.
  if (getSource().getType() == getType())
    return getSource();
  // A chain of conversions is one conversion from the first source.
  if (auto inner = getSource().getDefiningOp<ConvertLayoutOp>()) {
    if (inner.getSource().getType() == getType())
      return inner.getSource();
    getSourceMutable().assign(inner.getSource());
    return getResult();
  }
  return {};
}

#define GET_OP_CLASSES
#include "fmha/Dialect/FmhaOps.cpp.inc"
