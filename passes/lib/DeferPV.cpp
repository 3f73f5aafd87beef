//===- DeferPV.cpp - The P V product of a kv tile, one iteration late -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-defer-pv: in the vector form of the forward, a kv loop computes per
// tile t the scores S_t = Q K_t^T, the softmax (m_t, alpha_t, P_t) and
// O_t = alpha_t O_{t-1} + P_t V_t. On a GPU whose products are
// asynchronous (wgmma) the softmax of tile t can run while the tensor cores
// compute P_{t-1} V_{t-1} (FlashAttention-3's intra-warpgroup overlap): the
// loop carries P_{t-1} and O without its last product,
//
//   A_t = alpha_t (A_{t-1} + P_{t-1} V_{t-1}),  A_lb = 0, P_{lb-1} = 0,
//
// so that A_t = O_t - P_t V_t, and the last product follows the loop:
//
//   scf.for %t iter_args(%m, %l, %a, %p) {
//     %s  = vector.contract %q, %k_t, 0          (S_t, out of the mask's
//                                                 branches when both start
//                                                 with it)
//     %pv = vector.contract %p, %v_{t-1}, %a     (t - 1 clamped to lb: with
//                                                 %p = 0 there it adds 0)
//     ... softmax of %s, the rescale of %pv instead of %a ...
//     scf.yield %m', %l', alpha * %pv, %p_t
//   }
//   O = lb < ub ? A + P_last V_last : A
//
// The V tile of iteration t - 1 is read (and staged) in iteration t. Every
// value is the same as without the pass up to the order of the f32
// additions in O (one product, then the rescale, instead of the rescale,
// then the product).
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHADEFERPVPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// The loop's O += P V in the form above: the contraction at the body's
/// top level whose result, through one anchor, is yielded as iter arg
/// `acc`, with B an anchored read of the iteration.
struct Deferrable {
  vector::ContractionOp pv;
  ToLayoutOp result, vAnchor;
  vector::TransferReadOp vRead;
  unsigned acc;
};

std::optional<Deferrable> match(scf::ForOp loop) {
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  std::optional<Deferrable> found;
  for (auto pv : body->getOps<vector::ContractionOp>()) {
    Deferrable d;
    d.pv = pv;
    if (!pv->hasOneUse())
      continue;
    d.result = dyn_cast<ToLayoutOp>(*pv->user_begin());
    if (!d.result || !d.result->hasOneUse() ||
        *d.result->user_begin() != yield.getOperation())
      continue;
    d.acc = d.result->use_begin()->getOperandNumber();
    d.vAnchor = pv.getRhs().getDefiningOp<ToLayoutOp>();
    d.vRead =
        d.vAnchor
            ? d.vAnchor.getSource().getDefiningOp<vector::TransferReadOp>()
            : nullptr;
    if (!d.vRead || !d.vAnchor->hasOneUse() || !d.vRead->hasOneUse() ||
        d.vRead->getBlock() != body || d.vAnchor->getBlock() != body ||
        d.vRead.getMask())
      continue;
    // P from the body, the accumulator from the iteration's acc.
    if (!pv.getLhs().getParentBlock() ||
        pv.getLhs().getParentBlock()->getParentOp() != loop.getOperation())
      continue;
    if (found)
      return std::nullopt; // Two candidates: not the forward's kv loop.
    found = d;
  }
  return found;
}

/// The ops of `loop`'s body that `op`'s operands depend on (pure, without
/// regions), in order; failure when one is not.
FailureOr<SmallVector<Operation *>> bodySlice(scf::ForOp loop, Operation *op) {
  SetVector<Operation *> slice;
  SmallVector<Value> work(op->getOperands());
  while (!work.empty()) {
    Value x = work.pop_back_val();
    Operation *def = x.getDefiningOp();
    if (!def || def->getBlock() != loop.getBody())
      continue;
    if (!isPure(def) || def->getNumRegions() != 0)
      return failure();
    if (slice.insert(def))
      llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> out = slice.takeVector();
  llvm::sort(out,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return out;
}

/// Whether `a` and `b` are the same value, or constants of one value.
bool sameValue(Value a, Value b) {
  if (a == b)
    return true;
  auto ca = a.getDefiningOp<arith::ConstantOp>();
  auto cb = b.getDefiningOp<arith::ConstantOp>();
  return ca && cb && ca.getValue() == cb.getValue();
}

/// Moves the identical contraction both branches of an `scf.if` of the
/// body start with (operands from outside the branches, or constants) before
/// the `if`: the scores, computed in the masked and the unmasked branch
/// alike.
void hoistScores(scf::ForOp loop) {
  auto firstContraction = [](Block *block) -> vector::ContractionOp {
    for (Operation &op : *block) {
      if (auto c = dyn_cast<vector::ContractionOp>(op))
        return c;
      if (!isa<arith::ConstantOp>(op))
        return nullptr;
    }
    return nullptr;
  };
  for (auto branch :
       llvm::make_early_inc_range(loop.getBody()->getOps<scf::IfOp>())) {
    if (branch.getElseRegion().empty())
      continue;
    vector::ContractionOp a = firstContraction(branch.thenBlock());
    vector::ContractionOp b = firstContraction(branch.elseBlock());
    if (!a || !b || a->getAttrDictionary() != b->getAttrDictionary() ||
        a.getType() != b.getType() ||
        !llvm::all_of(llvm::zip(a->getOperands(), b->getOperands()),
                      [](auto pair) {
                        return sameValue(std::get<0>(pair), std::get<1>(pair));
                      }))
      continue;
    // Constants of the branch the contraction takes go before the `if`.
    for (OpOperand &operand : a->getOpOperands())
      if (branch->isAncestor(operand.get().getParentBlock()->getParentOp())) {
        Operation *c = operand.get().getDefiningOp<arith::ConstantOp>();
        if (!c)
          return;
        OpBuilder builder(branch);
        operand.set(builder.clone(*c)->getResult(0));
      }
    a->moveBefore(branch);
    b.getResult().replaceAllUsesWith(a.getResult());
    b.erase();
  }
}

LogicalResult defer(scf::ForOp loop) {
  std::optional<Deferrable> d = match(loop);
  if (!d)
    return failure();
  FailureOr<SmallVector<Operation *>> slice = bodySlice(loop, d->vRead);
  if (failed(slice))
    return failure();
  hoistScores(loop);
  // The scores' product the deferred one goes after: the first contraction
  // of the body.
  vector::ContractionOp scores;
  for (auto c : loop.getBody()->getOps<vector::ContractionOp>())
    if (c != d->pv) {
      scores = c;
      break;
    }
  if (!scores || !scores->isBeforeInBlock(d->pv))
    return failure();

  IRRewriter rewriter(loop.getContext());
  Location loc = loop.getLoc();
  Type pType = d->pv.getLhsType();
  rewriter.setInsertionPoint(loop);
  Value zero = arith::ConstantOp::create(
      rewriter, loc, rewriter.getZeroAttr(cast<VectorType>(pType)));
  Value p = d->pv.getLhs();
  FailureOr<LoopLikeOpInterface> grown = loop.replaceWithAdditionalYields(
      rewriter, ValueRange{zero}, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return SmallVector<Value>{p};
      });
  if (failed(grown))
    return failure();
  auto newLoop = cast<scf::ForOp>(grown->getOperation());
  Block *body = newLoop.getBody();
  BlockArgument pPrev = body->getArguments().back();
  BlockArgument acc = newLoop.getRegionIterArgs()[d->acc];
  Value iv = newLoop.getInductionVar();
  // V_{t-1} read before the scores' product (with the iteration's other
  // reads), O_{t-1} + P_{t-1} V_{t-1} right after it.
  rewriter.setInsertionPoint(scores);
  Value prev = arith::MaxSIOp::create(
      rewriter, loc,
      arith::SubIOp::create(rewriter, loc, iv, newLoop.getStep()),
      newLoop.getLowerBound());
  auto cloneRead = [&](OpBuilder &b, Value at) {
    IRMapping map;
    map.map(newLoop.getInductionVar(), at);
    for (Operation *op : *slice)
      b.clone(*op, map);
    Operation *read = b.clone(*d->vRead, map);
    map.map(d->vRead.getResult(), read->getResult(0));
    return b.clone(*d->vAnchor, map)->getResult(0);
  };
  Value vPrev = cloneRead(rewriter, prev);
  rewriter.setInsertionPointAfter(scores);
  // lhs x rhs + init as the loop's product, anchored as its result.
  auto product = [&](OpBuilder &b, Value lhs, Value rhs, Value init) {
    IRMapping map;
    map.map(d->pv.getLhs(), lhs);
    map.map(d->pv.getRhs(), rhs);
    map.map(d->pv.getAcc(), init);
    Operation *c = b.clone(*d->pv, map);
    map.map(d->pv.getResult(), c->getResult(0));
    return std::pair(c, b.clone(*d->result, map)->getResult(0));
  };
  auto [sum, summed] = product(rewriter, pPrev, vPrev, acc);
  rewriter.replaceUsesWithIf(
      acc, summed, [&](OpOperand &use) { return use.getOwner() != sum; });
  // The iteration yields the rescaled sum instead of adding P_t V_t.
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  yield->setOperand(d->acc, d->pv.getAcc());
  // After the loop: the last tile's product, where the loop ran.
  rewriter.setInsertionPointAfter(newLoop);
  Value lb = newLoop.getLowerBound(), ub = newLoop.getUpperBound(),
        step = newLoop.getStep();
  Value ran =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, lb, ub);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value trips = arith::DivSIOp::create(
      rewriter, loc,
      arith::SubIOp::create(rewriter, loc,
                            arith::SubIOp::create(rewriter, loc, ub, lb), one),
      step);
  Value last = arith::AddIOp::create(
      rewriter, loc, lb, arith::MulIOp::create(rewriter, loc, trips, step));
  Value accOut = newLoop.getResult(d->acc);
  Value pOut = newLoop.getResults().back();
  auto tail = scf::IfOp::create(
      rewriter, loc, ran,
      [&](OpBuilder &b, Location l) {
        Value v = cloneRead(b, last);
        scf::YieldOp::create(b, l, product(b, pOut, v, accOut).second);
      },
      [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l, accOut); });
  rewriter.replaceUsesWithIf(accOut, tail.getResult(0), [&](OpOperand &use) {
    return !tail->isAncestor(use.getOwner());
  });
  // The iteration's own product is gone (the templates cloned above).
  rewriter.eraseOp(d->result);
  rewriter.eraseOp(d->pv);
  rewriter.eraseOp(d->vAnchor);
  rewriter.eraseOp(d->vRead);
  return success();
}

struct FmhaDeferPVPass
    : mlir::fmha::impl::FmhaDeferPVPassBase<FmhaDeferPVPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr("fmha.kv_loop"))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      (void)defer(loop);
  }
};

} // namespace
