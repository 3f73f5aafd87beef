//===- DeferScale.cpp - A positive scale of the scores, applied late ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-defer-scale: the forward's scores are s = (Q K^T) * scale (or
// cap * tanh(...) with a softcap); the online softmax takes the row max of
// s and exp(s - m). A product by a positive constant commutes with the
// mask's select to -inf, with the branches that yield it, and with the row
// max (rounding is monotonic: max_j fl(x_j c) = fl(c max_j x_j)), so these
// patterns move it past them:
//
//   to_layout(x * c)                 -> to_layout(x) * c
//   select(p, x * c, -inf)           -> select(p, x, -inf) * c
//   scf.if yielding x_i * c in each branch -> yielding x_i, * c after it
//   max_j(x * c, acc)                -> max(max_j(x, -inf) * c, acc)
//
// Then the only element-wise use of x * c left is exp(x * c - m), which
// --fmha-gpu-math-to-target folds into one fma (x, c log2 e, -m log2 e):
// the multiply an element is gone, one a row is left. Every rewrite gives
// the same bits.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHADEFERSCALEPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// The value of a float constant or splat, if `v` is one.
std::optional<double> splatValue(Value v) {
  APFloat value(0.0);
  if (!matchPattern(v, m_ConstantFloat(&value)))
    return std::nullopt;
  return value.convertToDouble();
}

/// x * c with c a positive finite constant (on either side), the product
/// used once unless `anyUses`: x and c.
struct Scaled {
  Value x;
  double c;
};
std::optional<Scaled> matchScaled(Value v, bool anyUses = false) {
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (!mul || !(anyUses || mul->hasOneUse()))
    return std::nullopt;
  for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())})
    if (std::optional<double> value = splatValue(c))
      if (*value > 0 && std::isfinite(*value))
        return Scaled{x, *value};
  return std::nullopt;
}

/// A constant of `type` (a float or a shaped type of floats), all `value`.
Value splat(OpBuilder &b, Location loc, Type type, double value) {
  TypedAttr attr = b.getFloatAttr(mlir::getElementTypeOrSelf(type), value);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

Value scale(OpBuilder &b, Location loc, Value x, double c) {
  return arith::MulFOp::create(b, loc, x, splat(b, loc, x.getType(), c));
}

bool isNegInf(Value v) {
  std::optional<double> value = splatValue(v);
  return value && std::isinf(*value) && *value < 0;
}

/// to_layout(x * c) -> to_layout(x) * c (a constant takes any layout).
struct ToLayoutOfScaled : OpRewritePattern<ToLayoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ToLayoutOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<Scaled> s = matchScaled(op.getSource());
    if (!s)
      return failure();
    rewriter.replaceOp(
        op, scale(rewriter, op.getLoc(),
                  ToLayoutOp::create(rewriter, op.getLoc(), s->x.getType(),
                                     s->x, op.getLayoutAttr()),
                  s->c));
    return success();
  }
};

/// select(p, x * c, -inf) -> select(p, x, -inf) * c, either way round.
struct SelectOfScaled : OpRewritePattern<arith::SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SelectOp op,
                                PatternRewriter &rewriter) const override {
    Value t = op.getTrueValue(), f = op.getFalseValue();
    std::optional<Scaled> s;
    if (isNegInf(f) && (s = matchScaled(t)))
      t = s->x;
    else if (isNegInf(t) && (s = matchScaled(f)))
      f = s->x;
    else
      return failure();
    rewriter.replaceOp(op,
                       scale(rewriter, op.getLoc(),
                             arith::SelectOp::create(rewriter, op.getLoc(),
                                                     op.getCondition(), t, f),
                             s->c));
    return success();
  }
};

/// An scf.if whose branches both yield x_i * c for one result (the same
/// c): they yield x_i, and the product follows the if.
struct IfOfScaled : OpRewritePattern<scf::IfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::IfOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() == 0 || op.getElseRegion().empty())
      return failure();
    scf::YieldOp thenYield = op.thenYield(), elseYield = op.elseYield();
    for (unsigned i = 0; i < op.getNumResults(); ++i) {
      std::optional<Scaled> a = matchScaled(thenYield.getOperand(i));
      std::optional<Scaled> b = matchScaled(elseYield.getOperand(i));
      if (!a || !b || a->c != b->c)
        continue;
      Operation *mulA = thenYield.getOperand(i).getDefiningOp();
      Operation *mulB = elseYield.getOperand(i).getDefiningOp();
      rewriter.modifyOpInPlace(thenYield,
                               [&] { thenYield.setOperand(i, a->x); });
      rewriter.modifyOpInPlace(elseYield,
                               [&] { elseYield.setOperand(i, b->x); });
      rewriter.eraseOp(mulA);
      rewriter.eraseOp(mulB);
      rewriter.setInsertionPointAfter(op);
      Value result = op.getResult(i);
      Value scaled = scale(rewriter, op.getLoc(), result, a->c);
      rewriter.replaceAllUsesExcept(result, scaled, scaled.getDefiningOp());
      return success();
    }
    return failure();
  }
};

/// max over dims of x * c, into acc -> max(max over dims of x * c, acc),
/// the product on the reduced vector.
struct MaxOfScaled : OpRewritePattern<vector::MultiDimReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &rewriter) const override {
    vector::CombiningKind kind = op.getKind();
    if (kind != vector::CombiningKind::MAXIMUMF &&
        kind != vector::CombiningKind::MAXNUMF)
      return failure();
    // The product may have other uses (the exp): the reduction stops
    // being one of them.
    std::optional<Scaled> s = matchScaled(op.getSource(), /*anyUses=*/true);
    if (!s)
      return failure();
    Location loc = op.getLoc();
    Type accType = op.getAcc().getType();
    Value init =
        splat(rewriter, loc, accType, -std::numeric_limits<double>::infinity());
    Value max = vector::MultiDimReductionOp::create(
        rewriter, loc, accType, kind, s->x, init, op.getReductionDims());
    Value scaled = scale(rewriter, loc, max, s->c);
    rewriter.replaceOp(op, vector::makeArithReduction(rewriter, loc, kind,
                                                      scaled, op.getAcc()));
    return success();
  }
};

struct FmhaDeferScalePass
    : mlir::fmha::impl::FmhaDeferScalePassBase<FmhaDeferScalePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ToLayoutOfScaled, SelectOfScaled, IfOfScaled, MaxOfScaled>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
