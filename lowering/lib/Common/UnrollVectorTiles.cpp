//===- UnrollVectorTiles.cpp - Vector tiles without matrix units ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-unroll-vector-tiles: the generic vector ops that
// --fmha-vectorize-tiles makes of the forward's tiles, in the forms a
// processor runs them in without matrix units and without distributing
// them: the host CPU, and a GPU kernel before the distribution to lanes
// (one thread a workgroup, the whole tile). The matrix instructions take
// f16/bf16 operands into an f32 accumulator; plain vector units have no
// arithmetic on narrow vectors (x86 legalizes bf16 vectors element by
// element through libcalls), so the operands of a mixed contraction are
// extended first, where arith-expand can still turn bf16 extensions into
// integer shifts; truncations to bf16 vectors are integer arithmetic too.
// Then each contraction is unrolled in the form its operands are laid out
// for: S = Q K^T (both operands rows along the reduced head dim) as dot
// products of rows, O += P V (V's rows along the output columns) as outer
// products, and the row reductions as reductions of rows.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAUNROLLVECTORTILESPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

/// The operands of a contraction in the accumulator's element type.
struct WidenContraction : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    auto accType = dyn_cast<VectorType>(op.getAccType());
    if (!accType)
      return failure();
    Type wide = accType.getElementType();
    if (op.getLhsType().getElementType() == wide &&
        op.getRhsType().getElementType() == wide)
      return failure();
    auto extend = [&](Value x) -> Value {
      auto type = cast<VectorType>(x.getType());
      if (type.getElementType() == wide)
        return x;
      return arith::ExtFOp::create(rewriter, op.getLoc(), type.clone(wide), x);
    };
    rewriter.modifyOpInPlace(op, [&] {
      op.getLhsMutable().assign(extend(op.getLhs()));
      op.getRhsMutable().assign(extend(op.getRhs()));
    });
    return success();
  }
};

/// f32 -> bf16 on vectors in integer arithmetic (round to nearest even, NaN
/// quiet), the result bitcast from i16. arith-expand's form selects between
/// bf16 vectors, which x86 without AVX512-BF16 legalizes through
/// __truncsfbf2, a libcall no bundle links.
struct TruncVectorToBf16 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<VectorType>(op.getType());
    if (!type || !type.getElementType().isBF16() ||
        !cast<VectorType>(op.getIn().getType()).getElementType().isF32())
      return failure();
    Location loc = op.getLoc();
    VectorType i32 = type.clone(rewriter.getI32Type());
    auto splat = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(i32, rewriter.getI32IntegerAttr(v)));
    };
    Value bits = arith::BitcastOp::create(rewriter, loc, i32, op.getIn());
    Value sixteen = splat(16);
    Value lsb = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, bits, sixteen),
        splat(1));
    Value rounded = arith::AddIOp::create(
        rewriter, loc, bits,
        arith::AddIOp::create(rewriter, loc, lsb, splat(0x7FFF)));
    // A NaN keeps its sign and payload's top bits, made quiet. Both arms
    // vary, so LLVM does not fold the bitcast to bf16 into the select (a
    // select of bf16 vectors is what must not appear).
    Value quiet = arith::OrIOp::create(rewriter, loc, bits, splat(0x400000));
    Value isNaN = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::UNO, op.getIn(), op.getIn());
    Value value = arith::ShRUIOp::create(
        rewriter, loc,
        arith::SelectOp::create(rewriter, loc, isNaN, quiet, rounded), sixteen);
    Value half = arith::TruncIOp::create(
        rewriter, loc, type.clone(rewriter.getI16Type()), value);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, type, half);
    return success();
  }
};

/// Whether the last dim of both operands is the (one) reduced dim: rows of
/// both are contiguous along it (S = Q K^T).
bool reducesRows(vector::ContractionOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto iterators = op.getIteratorTypesArray();
  if (maps[0].getNumResults() == 0 || maps[1].getNumResults() == 0)
    return false;
  auto last = [](AffineMap map) {
    return cast<AffineDimExpr>(map.getResults().back()).getPosition();
  };
  unsigned k = last(maps[0]);
  auto reduction = [](vector::IteratorType t) {
    return t == vector::IteratorType::reduction;
  };
  return last(maps[1]) == k && reduction(iterators[k]) &&
         llvm::count_if(iterators, reduction) == 1;
}

struct FmhaUnrollVectorTilesPass
    : mlir::fmha::impl::FmhaUnrollVectorTilesPassBase<
          FmhaUnrollVectorTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Operation *root = getOperation();
    {
      RewritePatternSet patterns(ctx);
      patterns.add<WidenContraction, TruncVectorToBf16>(ctx);
      if (failed(applyPatternsGreedily(root, std::move(patterns))))
        return signalPassFailure();
    }
    SmallVector<Operation *> dots, outers;
    root->walk([&](vector::ContractionOp op) {
      (reducesRows(op) ? dots : outers).push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    for (auto [ops, lowering] :
         {std::pair(&dots, vector::VectorContractLowering::Dot),
          std::pair(&outers, vector::VectorContractLowering::OuterProduct)}) {
      if (ops->empty())
        continue;
      RewritePatternSet patterns(ctx);
      vector::populateVectorContractLoweringPatterns(patterns, lowering);
      vector::populateVectorTransposeLoweringPatterns(
          patterns, vector::VectorTransposeLowering::EltWise);
      // The ops and the smaller contractions each step makes.
      (void)applyOpPatternsGreedily(*ops, std::move(patterns), config);
    }
    RewritePatternSet patterns(ctx);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
