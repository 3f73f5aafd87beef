//===- MergeToLoops.cpp - fmha.merge to loops for the host ----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// `fmha.merge` on memrefs ([B, H, S, Dv] partials, [B, H, S] lse, dynamic
// B and S allowed) becomes a loop nest over (b, h, s) rows with an inner loop
// over Dv. Per row (DESIGN.md section 1, merge):
//
//   m   = max(lse1, lse2)                 (0 when both are -inf)
//   w_i = lse_i == -inf ? 0 : exp(lse_i - m)
//   lse = both empty ? -inf : m + log(w1 + w2)
//   o   = (w1 o1 + w2 o2) / (w1 + w2)     (an empty partial's o is never
//                                          read into the sum: 0, never NaN)
//
// Arithmetic is f32 whatever the element type of o1, o2 and o. Each row reads
// lse1, lse2 before writing lse and each o element reads o1, o2 at the same
// index before writing it, so the outputs may alias the inputs element for
// element (the ring driver merges in place: o = o1).
//
//===----------------------------------------------------------------------===//

#include "LoopBuilder.h"

#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fmha;
using ::mlir::fmha::cpu::LoopBuilder;

namespace {

struct MergeLowering : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "expects memref operands");
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value o1 = op.getO1(), o2 = op.getO2(), o = op.getO();
    Value lse1 = op.getLse1(), lse2 = op.getLse2(), lse = op.getLse();
    Value zero = lb.f32(0.0), one = lb.f32(1.0), negInf = lb.negInf();
    Value dv = lb.dim(o1, 3);
    lb.forEach(lb.dim(o1, 0), [&](LoopBuilder &batch, Value bi) {
      batch.forEach(batch.dim(o1, 1), [&](LoopBuilder &head, Value hi) {
        head.forEach(head.dim(o1, 2), [&](LoopBuilder &row, Value si) {
          OpBuilder &b = row.b;
          auto isNegInf = [&](Value x) {
            return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                         negInf);
          };
          Value l1 = row.load(lse1, {bi, hi, si});
          Value l2 = row.load(lse2, {bi, hi, si});
          Value empty1 = isNegInf(l1), empty2 = isNegInf(l2);
          Value both = arith::AndIOp::create(b, loc, empty1, empty2);
          Value m = arith::SelectOp::create(
              b, loc, both, zero, arith::MaximumFOp::create(b, loc, l1, l2));
          auto weight = [&](Value l, Value empty) {
            Value e = math::ExpOp::create(b, loc, row.sub(l, m));
            return arith::SelectOp::create(b, loc, empty, zero, e).getResult();
          };
          Value w1 = weight(l1, empty1), w2 = weight(l2, empty2);
          Value sum = arith::SelectOp::create(
              b, loc, both, one, arith::AddFOp::create(b, loc, w1, w2));
          Value inv = arith::DivFOp::create(b, loc, one, sum);
          Value a1 = arith::MulFOp::create(b, loc, w1, inv);
          Value a2 = arith::MulFOp::create(b, loc, w2, inv);
          row.forEach(dv, [&](LoopBuilder &col, Value c) {
            OpBuilder &cb = col.b;
            auto term = [&](Value src, Value a, Value empty) {
              Value x = col.mul(col.load(src, {bi, hi, si, c}), a);
              return arith::SelectOp::create(cb, loc, empty, zero, x)
                  .getResult();
            };
            Value out = col.add(term(o1, a1, empty1), term(o2, a2, empty2));
            col.store(out, o, {bi, hi, si, c});
          });
          Value logSum = math::LogOp::create(b, loc, sum);
          Value merged = arith::SelectOp::create(
              b, loc, both, negInf, arith::AddFOp::create(b, loc, m, logSum));
          row.store(merged, lse, {bi, hi, si});
        });
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fmha::populateFmhaMergeToLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<MergeLowering>(patterns.getContext());
}
