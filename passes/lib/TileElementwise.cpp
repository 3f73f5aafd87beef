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
// fmha.sinks_grad, in three loops (each a kernel on the GPU) whose sums run
// in a fixed order, so that dsinks is the same bit for bit run to run:
//
//   rows[b, h, i]  = exp(sinks[h] - lse[b, h, i]) * sum_c dout o    (B*H*S)
//   parts[b, h, t] = sum of rows[b, h, i] over the chunk t of S     (B*H*T)
//   dsinks[h]      = -sum_b sum_t parts[b, h, t]                    (H)
//
// rows and parts are buffers of the host function (the launch manifest's
// workspaces dsinks_rows and dsinks_parts).
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
  scf::ParallelOp parallel(ValueRange ubs,
                           function_ref<void(OpBuilder &, ValueRange)> body) {
    SmallVector<Value> lbs(ubs.size(), idx(0)), steps(ubs.size(), idx(1));
    return scf::ParallelOp::create(b, loc, lbs, ubs, steps,
                                   [&](OpBuilder &nested, Location,
                                       ValueRange ivs) { body(nested, ivs); });
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

/// Rows of a chunk in fmha.sinks_grad's second loop: T = ceil(S / 256)
/// partial sums a (b, h), summed by the third loop.
constexpr int64_t kSinksGradChunk = 256;

/// A sequential f32 sum over [lb, ub): `acc = acc + term(i)`.
Value serialSum(OpBuilder &b, Location loc, Value lb, Value ub, Value init,
                function_ref<Value(OpBuilder &, Value)> term) {
  Value one = IndexMath{b, loc}.c(1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, one, ValueRange{init},
      [&](OpBuilder &nested, Location, Value i, ValueRange acc) {
        Value sum = arith::AddFOp::create(nested, loc, acc[0], term(nested, i));
        scf::YieldOp::create(nested, loc, sum);
      });
  return loop.getResult(0);
}

/// fmha.sinks_grad on memrefs as its three loops.
LogicalResult tileSinksGrad(RewriterBase &rewriter, SinksGradOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Scalar s{rewriter, loc};
  IndexMath im{rewriter, loc};
  Value o = op.getO(), lse = op.getLse(), dout = op.getDout();
  Value sinks = op.getSinks(), dsinks = op.getDsinks();
  Value batch = s.dim(lse, 0), heads = s.dim(lse, 1), seq = s.dim(lse, 2);
  Value dv = s.dim(o, 3);
  Value chunks = im.ceilDiv(seq, im.c(kSinksGradChunk));
  auto flat = MemRefType::get({ShapedType::kDynamic}, rewriter.getF32Type());
  auto workspace = [&](Value size, StringRef name) {
    auto alloc = memref::AllocOp::create(rewriter, loc, flat, ValueRange{size});
    alloc->setAttr("fmha.workspace", rewriter.getStringAttr(name));
    return alloc.getResult();
  };
  Value bh = s.mul(batch, heads);
  Value rows = workspace(s.mul(bh, seq), "dsinks_rows");
  Value parts = workspace(s.mul(bh, chunks), "dsinks_parts");
  // (b * H + h) * n + i
  auto at = [&](OpBuilder &ob, Value b, Value h, Value n, Value i) {
    IndexMath m{ob, loc};
    return m.add(m.mul(m.add(m.mul(b, heads), h), n), i);
  };
  // Each loop names its kernel on the GPU (fmha-map-parallel-to-gpu).
  auto name = [&](scf::ParallelOp loop, StringRef suffix) {
    loop->setAttr("fmha.kernel_suffix", rewriter.getStringAttr(suffix));
  };
  scf::ParallelOp rowLoop = s.parallel({batch, heads, seq}, [&](OpBuilder &b,
                                                                ValueRange iv) {
    Scalar r{b, loc};
    IndexMath m{b, loc};
    Value dsum =
        serialSum(b, loc, m.c(0), dv, r.f32(0.0), [&](OpBuilder &nb, Value c) {
          Scalar e{nb, loc};
          SmallVector<Value> idx(iv);
          idx.push_back(c);
          return arith::MulFOp::create(nb, loc, e.load(dout, idx),
                                       e.load(o, idx))
              .getResult();
        });
    Value logit =
        arith::SubFOp::create(b, loc, r.load(sinks, iv[1]), r.load(lse, iv));
    Value p = math::ExpOp::create(b, loc, logit);
    memref::StoreOp::create(b, loc, arith::MulFOp::create(b, loc, p, dsum),
                            rows, at(b, iv[0], iv[1], seq, iv[2]));
  });
  name(rowLoop, "dsinks_rows");
  scf::ParallelOp partLoop =
      s.parallel({batch, heads, chunks}, [&](OpBuilder &b, ValueRange iv) {
        Scalar r{b, loc};
        IndexMath m{b, loc};
        Value lb = m.mul(iv[2], m.c(kSinksGradChunk));
        Value ub = m.min(seq, m.add(lb, m.c(kSinksGradChunk)));
        Value base = at(b, iv[0], iv[1], seq, m.c(0));
        Value sum =
            serialSum(b, loc, lb, ub, r.f32(0.0), [&](OpBuilder &nb, Value i) {
              return memref::LoadOp::create(nb, loc, rows,
                                            IndexMath{nb, loc}.add(base, i))
                  .getResult();
            });
        memref::StoreOp::create(b, loc, sum, parts,
                                at(b, iv[0], iv[1], chunks, iv[2]));
      });
  name(partLoop, "dsinks_parts");
  scf::ParallelOp headLoop =
      s.parallel({heads}, [&](OpBuilder &b, ValueRange iv) {
        Scalar r{b, loc};
        IndexMath m{b, loc};
        Value sum = serialSum(
            b, loc, m.c(0), batch, r.f32(0.0), [&](OpBuilder &bb, Value bi) {
              Value base = at(bb, bi, iv[0], chunks, IndexMath{bb, loc}.c(0));
              return serialSum(
                  bb, loc, IndexMath{bb, loc}.c(0), chunks,
                  Scalar{bb, loc}.f32(0.0), [&](OpBuilder &tb, Value t) {
                    return memref::LoadOp::create(
                               tb, loc, parts, IndexMath{tb, loc}.add(base, t))
                        .getResult();
                  });
            });
        memref::StoreOp::create(b, loc, arith::NegFOp::create(b, loc, sum),
                                dsinks, iv[0]);
      });
  name(headLoop, "dsinks");
  memref::DeallocOp::create(rewriter, loc, rows);
  memref::DeallocOp::create(rewriter, loc, parts);
  rewriter.eraseOp(op);
  return success();
}

struct FmhaTileElementwisePass
    : mlir::fmha::impl::FmhaTileElementwisePassBase<FmhaTileElementwisePass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<MergeOp, AccumulateOp, SinksGradOp>(op))
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
          : isa<SinksGradOp>(op)
              ? tileSinksGrad(rewriter, cast<SinksGradOp>(op))
              : tileAccumulate(rewriter, cast<AccumulateOp>(op));
      if (failed(result))
        return signalPassFailure();
    }
  }
};

} // namespace
