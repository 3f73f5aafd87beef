//===- FmhaVerify.h - Operand checks of the attention ops -------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What FmhaOps.cpp's verifiers share (FmhaVerify.cpp); private to the
// dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_LIB_FMHAVERIFY_H
#define FMHA_DIALECT_LIB_FMHAVERIFY_H

#include "FmhaOpsHelpers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"

#include <string>

namespace mlir::fmha::detail {

/// A static size, or "?".
std::string dimStr(int64_t d);

/// "[2, ?, 64]".
std::string shapeStr(ShapedType t);

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
/// the optional lse [B,Hq,Sq] (f32) against one another (DESIGN.md section
/// 1). With `paged`, k and v are a paged cache [num_pages, Hk, P, D] whose
/// first dim is not the batch.
LogicalResult verifyAttentionSignature(Operation *op, Value q, Value k, Value v,
                                       Value o, Value lse, FloatAttr scale,
                                       FloatAttr softcap, bool paged = false);

/// Verifies the optional learned sink logits `sinks` f32 [Hq] of an attention
/// op whose q is `q` (DESIGN.md section 1, learned sink logits).
LogicalResult verifySinks(Operation *op, Value sinks, Value q);

/// Verifies the optional variable-length offsets `cuQ`, `cuK` (i32 [N + 1],
/// both or neither; `cuQ` alone with a `paged` cache) of an attention op:
/// its `batched` tensors then hold batch 1 (DESIGN.md section 1,
/// variable-length batches).
LogicalResult verifyVarlen(Operation *op, Value cuQ, Value cuK,
                           ArrayRef<std::pair<StringRef, Value>> batched,
                           bool paged);

/// Verifies the optional paged cache's `table` (i32 [B, max_pages]) and
/// `seqlensK` (i32 [B]), both or neither, of an attention op whose q is `q`
/// and whose k `k` is then the cache [num_pages, Hk, P, D] with a static
/// page size P (DESIGN.md section 1, paged K/V). With variable-length
/// queries `cuQ` (chunked prefill) B is their sequence count.
LogicalResult verifyPaged(Operation *op, Value table, Value seqlensK, Value cuQ,
                          Value q, Value k);

} // namespace mlir::fmha::detail

#endif // FMHA_DIALECT_LIB_FMHAVERIFY_H
