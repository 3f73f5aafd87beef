//===- GpuMathToTarget.cpp - f32 exp and log to the target's instructions -===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-gpu-math-to-target: in the kernels, exp(x) = 2^(x log2 e) and
// log(x) = log2(x) ln 2 through the target's exp2 and log2 (GpuTarget.h):
// one pattern per op, no math library on the device; exp(a - b) as
// exp2(fma(a, log2 e, -b log2 e)).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAGPUMATHTOTARGETPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

Value constant(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

/// `fn` of each f32 element of `xs` (scalars, or 1-D vectors of one type:
/// the registers of distributed tiles), or null when they are neither.
Value perElement(OpBuilder &b, Location loc, ValueRange xs,
                 function_ref<Value(ArrayRef<Value>)> fn) {
  Type type = xs.front().getType();
  if (llvm::any_of(xs, [&](Value x) { return x.getType() != type; }))
    return nullptr;
  if (type.isF32())
    return fn(llvm::to_vector(xs));
  auto vector = dyn_cast<VectorType>(type);
  if (!vector || vector.getRank() != 1 || vector.isScalable() ||
      !vector.getElementType().isF32())
    return nullptr;
  SmallVector<Value> elements;
  for (int64_t i = 0; i < vector.getDimSize(0); ++i) {
    SmallVector<Value> at;
    for (Value x : xs)
      at.push_back(vector::ExtractOp::create(b, loc, x, ArrayRef<int64_t>{i}));
    elements.push_back(fn(at));
  }
  return vector::FromElementsOp::create(b, loc, vector, elements);
}

/// exp(x) -> exp2(x * log2(e)).
struct ExpToTarget : OpRewritePattern<math::ExpOp> {
  ExpToTarget(MLIRContext *ctx, const GpuTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value out = perElement(rewriter, loc, op.getOperand(), [&](auto x) {
      Value y = arith::MulFOp::create(
          rewriter, loc, x[0], constant(rewriter, loc, llvm::numbers::log2ef));
      return target.emitExp2(rewriter, loc, y);
    });
    if (!out)
      return rewriter.notifyMatchFailure(op, "not f32");
    rewriter.replaceOp(op, out);
    return success();
  }
  const GpuTarget &target;
};

/// exp(a - b) -> exp2(fma(a, log2(e), b * -log2(e))): one fma an element
/// where the subtraction and the product were two (the softmax's
/// exp(s - m), whose b * -log2(e) is one product a row); with a = x * c for
/// a constant c, exp2(fma(x, c log2(e), b * -log2(e))). Ahead of
/// ExpToTarget.
struct ExpOfDifferenceToTarget : OpRewritePattern<math::ExpOp> {
  ExpOfDifferenceToTarget(MLIRContext *ctx, const GpuTarget &target)
      : OpRewritePattern(ctx, /*benefit=*/2), target(target) {}
  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    auto sub = op.getOperand().getDefiningOp<arith::SubFOp>();
    if (!sub)
      return rewriter.notifyMatchFailure(op, "not the exp of a difference");
    Location loc = op.getLoc();
    // a = x * c (a constant c, the scores' scale that fmha-defer-scale
    // left here): fma(x, c log2 e, ...).
    Value a = sub.getLhs();
    double coefficient = llvm::numbers::log2e;
    auto mul = a.getDefiningOp<arith::MulFOp>();
    APFloat c(0.0);
    if (mul)
      for (auto [x, k] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())})
        if (matchPattern(k, m_ConstantFloat(&c))) {
          a = x;
          coefficient *= c.convertToDouble();
          break;
        }
    Value out = perElement(rewriter, loc, {a, sub.getRhs()}, [&](auto x) {
      Value nb = arith::MulFOp::create(
          rewriter, loc, x[1], constant(rewriter, loc, -llvm::numbers::log2ef));
      Value y = LLVM::FMAOp::create(rewriter, loc, x[0],
                                    constant(rewriter, loc, coefficient), nb);
      return target.emitExp2(rewriter, loc, y);
    });
    if (!out)
      return rewriter.notifyMatchFailure(op, "not f32");
    rewriter.replaceOp(op, out);
    if (sub->use_empty())
      rewriter.eraseOp(sub);
    if (mul && mul->use_empty())
      rewriter.eraseOp(mul);
    return success();
  }
  const GpuTarget &target;
};

/// log(x) -> log2(x) * ln(2).
struct LogToTarget : OpRewritePattern<math::LogOp> {
  LogToTarget(MLIRContext *ctx, const GpuTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(math::LogOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value out = perElement(rewriter, loc, op.getOperand(), [&](auto x) {
      Value l = target.emitLog2(rewriter, loc, x[0]);
      return arith::MulFOp::create(rewriter, loc, l,
                                   constant(rewriter, loc, llvm::numbers::ln2f))
          .getResult();
    });
    if (!out)
      return rewriter.notifyMatchFailure(op, "not f32");
    rewriter.replaceOp(op, out);
    return success();
  }
  const GpuTarget &target;
};

/// tanh(x) -> GpuTarget::emitTanh, unless the target lowers it itself.
struct TanhToTarget : OpRewritePattern<math::TanhOp> {
  TanhToTarget(MLIRContext *ctx, const GpuTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(math::TanhOp op,
                                PatternRewriter &rewriter) const override {
    if (target.lowersTanh())
      return rewriter.notifyMatchFailure(op, "the target lowers tanh itself");
    Location loc = op.getLoc();
    Value out = perElement(rewriter, loc, op.getOperand(), [&](auto x) {
      return target.emitTanh(rewriter, loc, x[0]);
    });
    if (!out)
      return rewriter.notifyMatchFailure(op, "not f32");
    rewriter.replaceOp(op, out);
    return success();
  }
  const GpuTarget &target;
};

struct FmhaGpuMathToTargetPass
    : mlir::fmha::impl::FmhaGpuMathToTargetPassBase<FmhaGpuMathToTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    std::unique_ptr<GpuTarget> gpuTarget =
        createGpuTarget(target, getOperation());
    if (!gpuTarget)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns
        .add<ExpOfDifferenceToTarget, ExpToTarget, LogToTarget, TanhToTarget>(
            &getContext(), *gpuTarget);
    FrozenRewritePatternSet frozen(std::move(patterns));
    SmallVector<gpu::GPUFuncOp> funcs;
    getOperation()->walk([&](gpu::GPUFuncOp f) { funcs.push_back(f); });
    for (gpu::GPUFuncOp f : funcs)
      if (failed(applyPatternsGreedily(f, frozen)))
        return signalPassFailure();
  }
};

} // namespace
