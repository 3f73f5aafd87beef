//===- AccumulateToLoops.cpp - fmha.accumulate to loops for the host ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// `fmha.accumulate` on memrefs (any rank, dynamic sizes allowed) becomes a
// loop nest over its elements: acc[i] = acc[i] + f32(x[i]). x may be acc
// itself (each element is read before it is written).
//
//===----------------------------------------------------------------------===//

#include "LoopBuilder.h"

#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fmha;
using ::mlir::fmha::cpu::LoopBuilder;

namespace {

struct AccumulateLowering : OpRewritePattern<AccumulateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AccumulateOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "expects memref operands");
    Value x = op.getX(), acc = op.getAcc();
    const int64_t rank = cast<MemRefType>(x.getType()).getRank();
    SmallVector<Value> indices;
    // One loop per dimension, innermost last (contiguous for the
    // vectorizer); a rank-0 op is one addition.
    std::function<void(LoopBuilder &, int64_t)> nest = [&](LoopBuilder &lb,
                                                           int64_t d) {
      if (d == rank) {
        // acc + x, not reassociated: the sum is the same bit for bit as a
        // plain float loop.
        Value sum = arith::AddFOp::create(lb.b, lb.loc, lb.load(acc, indices),
                                          lb.load(x, indices));
        memref::StoreOp::create(lb.b, lb.loc, sum, acc, indices);
        return;
      }
      lb.forEach(lb.dim(x, d), [&](LoopBuilder &inner, Value iv) {
        indices.push_back(iv);
        nest(inner, d + 1);
        indices.pop_back();
      });
    };
    LoopBuilder lb{rewriter, op.getLoc()};
    nest(lb, 0);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fmha::populateFmhaAccumulateToLoopsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AccumulateLowering>(patterns.getContext());
}
