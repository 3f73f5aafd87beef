//===- FmhaVerify.cpp - Operand checks of the attention ops ----*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The operand checks of fmha.attention and fmha.attention_bwd (DESIGN.md
// section 1): the signature, learned sinks, variable-length offsets and a
// paged K/V cache. OperandChecker's messages name the operand and the dim.
//
//===----------------------------------------------------------------------===//

#include "FmhaVerify.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fmha::detail;

namespace mlir::fmha::detail {

std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

std::string shapeStr(ShapedType t) {
  std::string s = "[";
  llvm::interleave(
      t.getShape(), [&](int64_t d) { s += dimStr(d); }, [&] { s += ", "; });
  return s + "]";
}

LogicalResult verifyAttentionSignature(Operation *op, Value q, Value k, Value v,
                                       Value o, Value lse, FloatAttr scale,
                                       FloatAttr softcap, bool paged) {
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

  // Batch and sequence lengths, where static (of a paged cache, its page
  // count and page size, the same for k and v).
  int64_t bk = dimOf(k, 0);
  if (paged ? failed(c.checkDim("v", v, 0, "page count", bk, "k"))
            : (failed(c.checkDim("k", k, 0, "batch B", b, "q")) ||
               failed(c.checkDim("v", v, 0, "batch B",
                                 ShapedType::isDynamic(b) ? bk : b,
                                 ShapedType::isDynamic(b) ? "k" : "q"))))
    return failure();
  if (failed(c.checkDim("o", o, 0, "batch B", b, "q")) ||
      failed(c.checkDim("v", v, 2, paged ? "page size P" : "sequence length Sk",
                        sk, "k")) ||
      failed(c.checkDim("o", o, 2, "sequence length Sq", sq, "q")))
    return failure();
  if (lse && (failed(c.checkDim("lse", lse, 0, "batch B", b, "q")) ||
              failed(c.checkDim("lse", lse, 1, "head count Hq", hq, "q")) ||
              failed(c.checkDim("lse", lse, 2, "sequence length Sq", sq, "q"))))
    return failure();

  return success(succeeded(c.checkPositive("scale", scale)) &&
                 succeeded(c.checkPositive("softcap", softcap)));
}

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

LogicalResult verifyVarlen(Operation *op, Value cuQ, Value cuK,
                           ArrayRef<std::pair<StringRef, Value>> batched,
                           bool paged) {
  if (!cuQ && !cuK)
    return success();
  if (paged && cuK)
    return op->emitOpError()
           << "takes no cu_seqlens_k with a paged cache (block_table): each "
              "sequence's keys are its cache's, seqlens_k[n] of them";
  if (!paged && (!cuQ || !cuK))
    return op->emitOpError()
           << "takes cu_seqlens_q and cu_seqlens_k together, got only "
           << (cuQ ? "cu_seqlens_q" : "cu_seqlens_k");
  OperandChecker c(op);
  SmallVector<std::pair<StringRef, Value>> named = {batched.front(),
                                                    {"cu_seqlens_q", cuQ}};
  if (cuK)
    named.push_back({"cu_seqlens_k", cuK});
  if (failed(c.checkUniformKind(named)) ||
      failed(c.checkRank("cu_seqlens_q", cuQ, 1, "[N + 1]")) ||
      (cuK &&
       (failed(c.checkRank("cu_seqlens_k", cuK, 1, "[N + 1]")) ||
        failed(c.checkSameShape("cu_seqlens_k", cuK, "cu_seqlens_q", cuQ)))))
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

LogicalResult verifyPaged(Operation *op, Value table, Value seqlensK, Value cuQ,
                          Value q, Value k) {
  if (!table && !seqlensK)
    return success();
  if (!table || !seqlensK)
    return op->emitOpError()
           << "takes block_table and seqlens_k together, got only "
           << (table ? "block_table" : "seqlens_k");
  OperandChecker c(op);
  SmallVector<std::pair<StringRef, Value>> named = {
      {"q", q}, {"block_table", table}, {"seqlens_k", seqlensK}};
  if (failed(c.checkUniformKind(named)) ||
      failed(c.checkRank("block_table", table, 2, "[B, max_pages]")) ||
      failed(c.checkRank("seqlens_k", seqlensK, 1, "[B]")) ||
      (!cuQ && (failed(c.checkDim("block_table", table, 0, "batch B",
                                  dimOf(q, 0), "q")) ||
                failed(c.checkDim("seqlens_k", seqlensK, 0, "batch B",
                                  dimOf(q, 0), "q")))) ||
      failed(c.checkDim("seqlens_k", seqlensK, 0, "batch B", dimOf(table, 0),
                        "block_table")))
    return failure();
  // Chunked prefill: one table row and length a sequence.
  if (cuQ && !ShapedType::isDynamic(dimOf(cuQ, 0)) &&
      failed(c.checkDim("block_table", table, 0, "sequence count N",
                        dimOf(cuQ, 0) - 1, "cu_seqlens_q (N + 1)")))
    return failure();
  // The tiles of a kv head lie within one page (or span whole pages): the
  // page size is part of the kernel.
  return c.checkStatic("k", k, 2, "page size P of a paged cache");
}

} // namespace mlir::fmha::detail
