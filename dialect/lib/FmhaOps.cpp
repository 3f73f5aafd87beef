//===- FmhaOps.cpp - FMHA operations ----------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaOps.h"
#include "FmhaOpsHelpers.h"
#include "FmhaVerify.h"

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
// Canonicalization helpers
//===----------------------------------------------------------------------===//

namespace {

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

LogicalResult verifyTileOperands(Operation *op, bool valuesIntoBuffer) {
  // Values into a buffer: tensor ins, the out a memref written in place.
  auto dps = cast<DestinationStyleOpInterface>(op);
  bool anyTensor = false, anyMemref = false, intoBuffer = true;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<ShapedType>(operand.get().getType()))
      continue;
    bool isTensor = isa<TensorType>(operand.get().getType());
    (isTensor ? anyTensor : anyMemref) = true;
    intoBuffer &= isTensor != dps.isDpsInit(&operand);
  }
  if (anyTensor && anyMemref && !(valuesIntoBuffer && intoBuffer))
    return op->emitOpError()
           << (valuesIntoBuffer ? "takes all tensors, all memrefs or tensors "
                                  "into a memref out, not another mix"
                                : "takes all tensors or all memrefs, not both");
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<ShapedType>(operand.getType()))
      continue;
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
                     getScaleAttr(), getSoftcapAttr(), isPaged())) &&
                 succeeded(verifySinks(*this, getSinks(), getQ())) &&
                 succeeded(verifyPaged(*this, getBlockTable(), getSeqlensK(),
                                       getCuSeqlensQ(), getQ(), getK())) &&
                 succeeded(verifyVarlen(*this, getCuSeqlensQ(), getCuSeqlensK(),
                                        batchedOperands(), isPaged())));
}

SmallVector<std::pair<StringRef, Value>> AttentionOp::batchedOperands() {
  SmallVector<std::pair<StringRef, Value>> named = {{"q", getQ()}};
  if (!isPaged())
    named.append({{"k", getK()}, {"v", getV()}});
  named.push_back({"o", getO()});
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
  // tensors'; a paged cache's Sk is seqlens_k's.
  if (op.isVarlen() || op.isPaged())
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
  if (isPaged()) { // Every page of the tile's kv heads.
    kvOffsets[0] = zero;
    kvSizes[0] = tensor::getMixedSize(b, loc, getK(), 0);
  }

  SmallVector<Value> operands = {slice(getQ(), qOffsets, qSizes),
                                 slice(getK(), kvOffsets, kvSizes),
                                 slice(getV(), kvOffsets, kvSizes)};
  if (getSinks()) // The sink logits of the tile's query heads.
    operands.push_back(slice(getSinks(), {offsets[1]}, {sizes[1]}));
  if (isVarlen()) // Every sequence's offsets (B is 1, Sq whole).
    operands.push_back(getCuSeqlensQ());
  if (getCuSeqlensK())
    operands.push_back(getCuSeqlensK());
  if (isPaged() && isVarlen()) // Every sequence's table row and length.
    operands.append({getBlockTable(), getSeqlensK()});
  else if (isPaged()) // The table rows and lengths of the tile's batches.
    operands.append({slice(getBlockTable(), {offsets[0]}, {sizes[0]}),
                     slice(getSeqlensK(), {offsets[0]}, {sizes[0]})});
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

namespace {

/// A tile and its register-order form (fmha.pack_tile, fmha.unpack_tile):
/// both tensors or both vectors of one element type, the tile of `order`'s
/// shape, `order` without replicas, the packed tile (registers x warps) x
/// lanes.
LogicalResult verifyRegisterOrder(Operation *op, Type tileType, Type packedType,
                                  LayoutAttr order) {
  auto tile = cast<ShapedType>(tileType);
  auto packed = cast<ShapedType>(packedType);
  if (isa<VectorType>(tile) != isa<VectorType>(packed))
    return op->emitOpError() << "takes a tensor to a tensor or a vector to a "
                                "vector, got "
                             << tile << " and " << packed;
  if (tile.getElementType() != packed.getElementType())
    return op->emitOpError()
           << "keeps the element type, got " << tile << " and " << packed;
  const ::fmha::LinearLayout &l = order.getLayout();
  if (l.getCopies() != 1)
    return op->emitOpError()
           << "takes an order without replicas (each element in one "
              "register of one lane), got "
           << order << " with " << l.getCopies() << " copies";
  if (tile.getRank() != 2 || tile.getDimSize(0) != l.getRows() ||
      tile.getDimSize(1) != l.getCols())
    return op->emitOpError()
           << "'s tile must have the order's shape (" << l.getRows() << "x"
           << l.getCols() << "), got " << tile;
  const int64_t rows = l.getNumRegisters() * l.getNumWarps();
  if (packed.getRank() != 2 || packed.getDimSize(0) != rows ||
      packed.getDimSize(1) != l.getNumLanes())
    return op->emitOpError()
           << "'s packed tile must be (registers x warps) x lanes (" << rows
           << "x" << l.getNumLanes() << "), got " << packed;
  for (auto [what, type] :
       {std::pair<const char *, ShapedType>("tile", tile),
        std::pair<const char *, ShapedType>("packed", packed)})
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      if (failed(verifyTileEncoding(op, what, tensor)))
        return failure();
  return success();
}

} // namespace

LogicalResult PackTileOp::verify() {
  return verifyRegisterOrder(*this, getTile().getType(), getPacked().getType(),
                             getOrder());
}

LogicalResult UnpackTileOp::verify() {
  return verifyRegisterOrder(*this, getTile().getType(), getPacked().getType(),
                             getOrder());
}

LogicalResult AddAsyncOp::verify() {
  MemRefType source = getSource().getType(), dest = getDest().getType();
  if (!source.hasStaticShape() || source.getShape() != dest.getShape())
    return emitOpError() << "adds a " << source << " into " << dest
                         << ": both need the same static shape";
  for (MemRefType type : {source, dest}) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) || strides[1] != 1 ||
        strides[0] != type.getDimSize(1))
      return emitOpError() << "adds contiguous buffers (row stride the row's "
                              "length), got "
                           << type;
  }
  return success();
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
