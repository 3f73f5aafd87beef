//===- GpuMathToTarget.cpp - f32 exp and log to the target's instructions -===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-gpu-math-to-target: in the kernels, exp(x) = 2^(x log2 e) and
// log(x) = log2(x) ln 2 through the target's exp2 and log2 (GpuTarget.h):
// one pattern per op, no math library on the device.
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

/// `fn` of each f32 element of `x` (a scalar or a 1-D vector: the
/// registers of a distributed tile), or null when `x` is neither.
Value perElement(OpBuilder &b, Location loc, Value x,
                 function_ref<Value(Value)> fn) {
  if (x.getType().isF32())
    return fn(x);
  auto type = dyn_cast<VectorType>(x.getType());
  if (!type || type.getRank() != 1 || type.isScalable() ||
      !type.getElementType().isF32())
    return nullptr;
  SmallVector<Value> elements;
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    elements.push_back(
        fn(vector::ExtractOp::create(b, loc, x, ArrayRef<int64_t>{i})));
  return vector::FromElementsOp::create(b, loc, type, elements);
}

/// exp(x) -> exp2(x * log2(e)).
struct ExpToTarget : OpRewritePattern<math::ExpOp> {
  ExpToTarget(MLIRContext *ctx, const GpuTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value out = perElement(rewriter, loc, op.getOperand(), [&](Value x) {
      x = arith::MulFOp::create(rewriter, loc, x,
                                constant(rewriter, loc, llvm::numbers::log2ef));
      return target.emitExp2(rewriter, loc, x);
    });
    if (!out)
      return rewriter.notifyMatchFailure(op, "not f32");
    rewriter.replaceOp(op, out);
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
    Value out = perElement(rewriter, loc, op.getOperand(), [&](Value x) {
      Value l = target.emitLog2(rewriter, loc, x);
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

struct FmhaGpuMathToTargetPass
    : mlir::fmha::impl::FmhaGpuMathToTargetPassBase<FmhaGpuMathToTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    std::unique_ptr<GpuTarget> gpuTarget =
        createGpuTarget(target, getOperation());
    if (!gpuTarget)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpToTarget, LogToTarget>(&getContext(), *gpuTarget);
    FrozenRewritePatternSet frozen(std::move(patterns));
    SmallVector<gpu::GPUFuncOp> funcs;
    getOperation()->walk([&](gpu::GPUFuncOp f) { funcs.push_back(f); });
    for (gpu::GPUFuncOp f : funcs)
      if (failed(applyPatternsGreedily(f, frozen)))
        return signalPassFailure();
  }
};

} // namespace
