//===- TileElementwise.cpp - fmha.merge and fmha.accumulate to loops ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-tile-elementwise: the loop form of the elementwise fmha ops, the one
// definition of their arithmetic for every target. The CPU pipeline runs the
// outer loop on the runtime's threads (fmha-cpu-parallel-for); the GPU
// pipelines map it to the grid (fmha-map-parallel-to-gpu).
//
// fmha.merge, per row (b, h, s) (DESIGN.md section 1, merge):
//
//   m   = max(lse1, lse2)                 (0 when both are -inf)
//   w_i = lse_i == -inf ? 0 : exp(lse_i - m)
//   lse = both empty ? -inf : m + log(w1 + w2)
//   o   = (w1 o1 + w2 o2) / (w1 + w2)     (an empty partial's o is never
//                                          read into the sum: 0, never NaN)
//
//   scf.parallel (%row) {                 rows: B*H*S (flat) or (b, h, s)
//     lse1, lse2 loads and the weights
//     scf.parallel (%c) { o[row, c] = a1 o1[row, c] + a2 o2[row, c] }
//     lse[row] = ...
//   }
//
// fmha.accumulate: scf.parallel over the elements, acc = acc + x.
//
//===----------------------------------------------------------------------===//

#include "fmha/Transforms/MaskUtils.h"
#include "fmha/Transforms/Passes.h"
#include "fmha/Transforms/ScalarUtils.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHATILEELEMENTWISEPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Whether every operand of `op` is a memref of identity layout: the loops
/// may then run over flat views.
bool allContiguous(Operation *op) {
  return llvm::all_of(op->getOperandTypes(), [](Type t) {
    return cast<MemRefType>(t).getLayout().isIdentity();
  });
}

/// A rank-1 view of an identity-layout memref (a rank-0 one becomes
/// memref<1xT>).
Value flatten(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 1)
    return memref;
  if (type.getRank() == 0)
    return memref::ExpandShapeOp::create(
        b, loc, MemRefType::get({1}, type.getElementType()), memref,
        ArrayRef<ReassociationIndices>{},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  ReassociationIndices all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  return memref::CollapseShapeOp::create(b, loc, memref,
                                         ArrayRef<ReassociationIndices>{all});
}

/// Scalar f32 code for one loop body.
struct Scalar {
  OpBuilder &b;
  Location loc;

  Value idx(int64_t v) { return IndexMath{b, loc}.c(v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value dim(Value memref, int64_t i) {
    return IndexMath{b, loc}.dim(memref, i);
  }
  Value mul(Value x, Value y) { return IndexMath{b, loc}.mul(x, y); }
  Value load(Value memref, ValueRange indices) {
    return loadAsF32(b, loc, memref, indices);
  }
  void store(Value value, Value memref, ValueRange indices) {
    storeRounded(b, loc, value, memref, indices);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// scf.parallel over [0, ub) in each dimension, no results.
  void parallel(ValueRange ubs,
                function_ref<void(OpBuilder &, ValueRange)> body) {
    SmallVector<Value> lbs(ubs.size(), idx(0)), steps(ubs.size(), idx(1));
    scf::ParallelOp::create(b, loc, lbs, ubs, steps,
                            [&](OpBuilder &nested, Location, ValueRange ivs) {
                              body(nested, ivs);
                            });
  }
};

/// fmha.merge on memrefs as the row loop.
LogicalResult tileMerge(RewriterBase &rewriter, MergeOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Scalar s{rewriter, loc};
  Value o1 = op.getO1(), o2 = op.getO2(), o = op.getO();
  Value lse1 = op.getLse1(), lse2 = op.getLse2(), lse = op.getLse();
  Value dv = s.dim(o1, 3);
  SmallVector<Value> rows;
  const bool flat = allContiguous(op);
  if (flat) {
    // The sizes of the operands, not of their flat views.
    rows.push_back(
        s.mul(s.mul(s.dim(lse1, 0), s.dim(lse1, 1)), s.dim(lse1, 2)));
    for (Value *v : {&o1, &o2, &o, &lse1, &lse2, &lse})
      *v = flatten(rewriter, loc, *v);
  } else {
    for (int64_t i = 0; i < 3; ++i)
      rows.push_back(s.dim(lse1, i));
  }
  s.parallel(rows, [&](OpBuilder &b, ValueRange row) {
    Scalar r{b, loc};
    Value zero = r.f32(0.0), one = r.f32(1.0);
    Value negInf = r.f32(-std::numeric_limits<double>::infinity());
    auto isNegInf = [&](Value x) {
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, negInf)
          .getResult();
    };
    Value l1 = r.load(lse1, row), l2 = r.load(lse2, row);
    Value empty1 = isNegInf(l1), empty2 = isNegInf(l2);
    Value both = arith::AndIOp::create(b, loc, empty1, empty2);
    Value m = r.select(both, zero, arith::MaximumFOp::create(b, loc, l1, l2));
    auto weight = [&](Value l, Value empty) {
      Value e =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, l, m));
      return r.select(empty, zero, e);
    };
    Value w1 = weight(l1, empty1), w2 = weight(l2, empty2);
    Value sum = r.select(both, one, arith::AddFOp::create(b, loc, w1, w2));
    Value inv = arith::DivFOp::create(b, loc, one, sum);
    Value a1 = arith::MulFOp::create(b, loc, w1, inv);
    Value a2 = arith::MulFOp::create(b, loc, w2, inv);
    Value base = flat ? r.mul(row[0], dv) : Value();
    r.parallel(dv, [&](OpBuilder &cb, ValueRange col) {
      Scalar c{cb, loc};
      SmallVector<Value> at;
      if (flat) {
        at.push_back(arith::AddIOp::create(cb, loc, base, col[0]));
      } else {
        at.assign(row.begin(), row.end());
        at.push_back(col[0]);
      }
      auto term = [&](Value src, Value a, Value empty) {
        Value x = arith::MulFOp::create(cb, loc, c.load(src, at), a);
        return c.select(empty, zero, x);
      };
      c.store(arith::AddFOp::create(cb, loc, term(o1, a1, empty1),
                                    term(o2, a2, empty2)),
              o, at);
    });
    Value merged = r.select(
        both, negInf,
        arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, sum)));
    r.store(merged, lse, row);
  });
  rewriter.eraseOp(op);
  return success();
}

/// fmha.accumulate on memrefs as the element loop.
LogicalResult tileAccumulate(RewriterBase &rewriter, AccumulateOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Scalar s{rewriter, loc};
  Value x = op.getX(), acc = op.getAcc();
  SmallVector<Value> ubs;
  int64_t rank = cast<MemRefType>(x.getType()).getRank();
  if (allContiguous(op)) {
    // The element count from the operand's sizes, not its flat view's.
    Value n = s.idx(1);
    for (int64_t i = 0; i < rank; ++i)
      n = s.mul(n, s.dim(x, i));
    ubs.push_back(n);
    x = flatten(rewriter, loc, x);
    acc = flatten(rewriter, loc, acc);
    rank = 1;
  } else {
    for (int64_t i = 0; i < rank; ++i)
      ubs.push_back(s.dim(x, i));
    if (rank == 0)
      ubs.push_back(s.idx(1)); // one iteration over a rank-0 (strided) op
  }
  s.parallel(ubs, [&](OpBuilder &b, ValueRange ivs) {
    Scalar e{b, loc};
    ValueRange at = rank == 0 ? ValueRange{} : ivs;
    // acc + x, not reassociated: the sum is the same bit for bit as a plain
    // float loop.
    Value sum = arith::AddFOp::create(b, loc, e.load(acc, at), e.load(x, at));
    memref::StoreOp::create(b, loc, sum, acc, at);
  });
  rewriter.eraseOp(op);
  return success();
}

struct FmhaTileElementwisePass
    : mlir::fmha::impl::FmhaTileElementwisePassBase<FmhaTileElementwisePass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<MergeOp, AccumulateOp>(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : ops) {
      auto dps = cast<DestinationStyleOpInterface>(op);
      if (!dps.hasPureBufferSemantics()) {
        op->emitOpError() << "is tiled on memrefs: bufferize it first (the "
                             "fmha-to-{cpu,nvvm,rocdl}-pipeline do)";
        return signalPassFailure();
      }
      LogicalResult result =
          isa<MergeOp>(op) ? tileMerge(rewriter, cast<MergeOp>(op))
                           : tileAccumulate(rewriter, cast<AccumulateOp>(op));
      if (failed(result))
        return signalPassFailure();
    }
  }
};

} // namespace
