//===- TileOpsToLoops.cpp - fmha tile ops to loops for the host -----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Each tile op becomes an scf loop nest over its (dynamic) tile sizes. The
// innermost loops run over contiguous memory (head dim for q.k, Dv for p.v
// and the accumulator) so that LLVM's loop vectorizer turns them into SIMD
// code; the reductions carry `reassoc` so that it may.
//
//===----------------------------------------------------------------------===//

#include "LoopBuilder.h"

#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHALOWERTOCPUPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

using ::mlir::fmha::cpu::LoopBuilder;

namespace {

struct TileInitLowering : OpRewritePattern<TileInitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileInitOp op,
                                PatternRewriter &rewriter) const override {
    LoopBuilder lb{rewriter, op.getLoc()};
    Value zero = lb.f32(0.0);
    // A learned sink logit: m = sink, l = 1 (its term of the sum).
    Value m0 = op.getSink() ? op.getSink() : lb.negInf();
    Value l0 = op.getSink() ? lb.f32(1.0) : zero;
    Value dv = lb.dim(op.getAcc(), 1);
    lb.forEach(lb.dim(op.getM(), 0), [&](LoopBuilder &row, Value i) {
      row.store(m0, op.getM(), i);
      row.store(l0, op.getL(), i);
      row.forEach(dv, [&](LoopBuilder &col, Value c) {
        col.store(zero, op.getAcc(), {i, c});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileQKLowering : OpRewritePattern<TileQKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileQKOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value q = op.getQ(), k = op.getK(), s = op.getS();
    Value headDim = lb.dim(q, 1);
    Value scale = lb.f32(op.getScale().convertToDouble());
    std::optional<double> softcap;
    if (std::optional<APFloat> cap = op.getSoftcap())
      softcap = cap->convertToDouble();
    bool masked = !op.getMaskCoords().empty();
    ::fmha::MaskSpec mask =
        op.getMaskAttr() ? op.getMaskAttr().getSpec() : ::fmha::MaskSpec{};
    Value zero = lb.f32(0.0), negInf = lb.negInf();
    Value capValue, invCap;
    if (softcap) {
      capValue = lb.f32(*softcap);
      invCap = lb.f32(1.0 / *softcap);
    }

    // The element mask hides the keys at or past Sk (a static tile's
    // padding) by the bound of the loop that computes scores, not by a test
    // per element: keys [keysInK, cols) are -inf.
    Value cols = lb.dim(k, 0), keysInK = cols;
    if (masked) {
      Value left = arith::SubIOp::create(rewriter, loc, op.getMaskCoords()[3],
                                         op.getMaskCoords()[1]);
      keysInK = arith::MaxSIOp::create(
          rewriter, loc, lb.idx(0),
          arith::MinSIOp::create(rewriter, loc, cols, left));
    }
    // Score (i, j) of query i and key j sits at s[j, i] when transposed.
    auto at = [&](Value i, Value j) {
      return op.getTransposed() ? SmallVector<Value>{j, i}
                                : SmallVector<Value>{i, j};
    };
    lb.forEach(lb.dim(q, 0), [&](LoopBuilder &row, Value i) {
      if (masked)
        row.forEach(
            cols,
            [&](LoopBuilder &col, Value j) { col.store(negInf, s, at(i, j)); },
            keysInK);
      row.forEach(keysInK, [&](LoopBuilder &col, Value j) {
        Value dot = col.reduce(
            headDim, zero, [&](LoopBuilder &red, Value d, Value acc) {
              return red.add(acc,
                             red.mul(red.load(q, {i, d}), red.load(k, {j, d})));
            });
        Value x = col.mul(dot, scale);
        if (softcap) {
          Value t = math::TanhOp::create(col.b, loc, col.mul(x, invCap));
          x = col.mul(capValue, t);
        }
        if (masked) {
          ValueRange coords = op.getMaskCoords();
          Value gi = arith::AddIOp::create(col.b, loc, coords[0], i);
          Value gj = arith::AddIOp::create(col.b, loc, coords[1], j);
          Value vis =
              emitVisible(col.b, loc, mask, gi, gj, coords[2], coords[3]);
          x = arith::SelectOp::create(col.b, loc, vis, x, negInf);
        }
        col.store(x, s, at(i, j));
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileSoftmaxLowering : OpRewritePattern<TileSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value s = op.getS(), m = op.getM(), l = op.getL(), acc = op.getAcc();
    Value cols = lb.dim(s, 1), dv = lb.dim(acc, 1);
    Value negInf = lb.negInf(), zero = lb.f32(0.0);
    lb.forEach(lb.dim(s, 0), [&](LoopBuilder &row, Value i) {
      OpBuilder &b = row.b;
      Value mOld = row.load(m, i);
      Value rowMax =
          row.reduce(cols, negInf, [&](LoopBuilder &red, Value j, Value a) {
            return arith::MaximumFOp::create(red.b, loc, a,
                                             red.load(s, {i, j}));
          });
      Value mNew = arith::MaximumFOp::create(b, loc, mOld, rowMax);
      // A row whose keys are all hidden so far keeps m = -inf; subtracting 0
      // instead keeps exp(-inf - m) = 0 rather than NaN.
      Value allHidden = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                              mNew, negInf);
      Value mSafe = arith::SelectOp::create(b, loc, allHidden, zero, mNew);
      Value alpha = math::ExpOp::create(b, loc, row.sub(mOld, mSafe));
      Value sum =
          row.reduce(cols, zero, [&](LoopBuilder &red, Value j, Value a) {
            Value p = math::ExpOp::create(red.b, loc,
                                          red.sub(red.load(s, {i, j}), mSafe));
            red.store(p, s, {i, j});
            return red.add(a, p);
          });
      row.store(row.add(row.mul(row.load(l, i), alpha), sum), l, i);
      row.store(mNew, m, i);
      row.forEach(dv, [&](LoopBuilder &col, Value c) {
        col.store(col.mul(col.load(acc, {i, c}), alpha), acc, {i, c});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TilePVLowering : OpRewritePattern<TilePVOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TilePVOp op,
                                PatternRewriter &rewriter) const override {
    LoopBuilder lb{rewriter, op.getLoc()};
    Value p = op.getP(), v = op.getV(), acc = op.getAcc();
    Value cols = lb.dim(p, 1), dv = lb.dim(acc, 1);
    lb.forEach(lb.dim(p, 0), [&](LoopBuilder &row, Value i) {
      row.forEach(cols, [&](LoopBuilder &key, Value j) {
        Value pij = key.load(p, {i, j});
        key.forEach(dv, [&](LoopBuilder &col, Value c) {
          Value updated =
              col.add(col.load(acc, {i, c}), col.mul(pij, col.load(v, {j, c})));
          col.store(updated, acc, {i, c});
        });
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileFinalizeLowering : OpRewritePattern<TileFinalizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileFinalizeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value acc = op.getAcc(), o = op.getO(), lse = op.getLse();
    Value dv = lb.dim(acc, 1);
    Value zero = lb.f32(0.0), one = lb.f32(1.0), negInf = lb.negInf();
    lb.forEach(lb.dim(op.getM(), 0), [&](LoopBuilder &row, Value i) {
      OpBuilder &b = row.b;
      Value li = row.load(op.getL(), i);
      Value any =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, li, zero);
      Value inv = arith::DivFOp::create(
          b, loc, one, arith::SelectOp::create(b, loc, any, li, one));
      row.forEach(dv, [&](LoopBuilder &col, Value c) {
        Value out = arith::SelectOp::create(
            col.b, loc, any, col.mul(col.load(acc, {i, c}), inv), zero);
        col.store(out, o, {i, c});
      });
      if (lse) {
        Value logL = math::LogOp::create(
            b, loc, arith::SelectOp::create(b, loc, any, li, one));
        Value value = arith::SelectOp::create(
            b, loc, any, row.add(row.load(op.getM(), i), logL), negInf);
        row.store(value, lse, i);
      }
    });
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Backward tile ops
//===----------------------------------------------------------------------===//

struct TileFillLowering : OpRewritePattern<TileFillOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileFillOp op,
                                PatternRewriter &rewriter) const override {
    LoopBuilder lb{rewriter, op.getLoc()};
    Value value = lb.f32(op.getValue().convertToDouble());
    Value dst = op.getDst();
    lb.forEach(lb.dim(dst, 0), [&](LoopBuilder &row, Value i) {
      row.forEach(row.dim(dst, 1), [&](LoopBuilder &col, Value j) {
        col.store(value, dst, {i, j});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileStoreLowering : OpRewritePattern<TileStoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileStoreOp op,
                                PatternRewriter &rewriter) const override {
    LoopBuilder lb{rewriter, op.getLoc()};
    Value src = op.getSrc(), dst = op.getDst();
    lb.forEach(lb.dim(src, 0), [&](LoopBuilder &row, Value i) {
      row.forEach(row.dim(src, 1), [&](LoopBuilder &col, Value j) {
        col.store(col.load(src, {i, j}), dst, {i, j});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// c (+)= alpha op(a) op(b). Without transpose_b the loops run i, k, j so
/// that the innermost loop streams rows of b and c (atomic updates stream
/// into a row of scratch, then add it to c atomically); with it, i, j, k, a
/// dot product over rows of a and b (atomic: one atomic add per element).
struct TileMatmulLowering : OpRewritePattern<TileMatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileMatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value a = op.getA(), b = op.getB(), c = op.getC();
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    bool accumulate = op.getAccumulate(), atomic = op.getAtomic();
    Value alpha = lb.f32(op.getAlpha().convertToDouble());
    Value zero = lb.f32(0.0);
    Value m = lb.dim(c, 0), n = lb.dim(c, 1), kDim = lb.dim(a, ta ? 0 : 1);
    auto loadA = [&](LoopBuilder &x, Value i, Value kk) {
      return ta ? x.load(a, {kk, i}) : x.load(a, {i, kk});
    };
    auto loadB = [&](LoopBuilder &x, Value kk, Value j) {
      return tb ? x.load(b, {j, kk}) : x.load(b, {kk, j});
    };
    // Atomic updates of a c with a static row length: the row of the product
    // is formed in scratch in the streaming order, then added to c with one
    // atomic add per element.
    auto cType = cast<MemRefType>(c.getType());
    Value rowScratch;
    if (atomic && !tb && !cType.isDynamicDim(1))
      rowScratch = memref::AllocaOp::create(
          rewriter, loc,
          MemRefType::get({cType.getDimSize(1)}, rewriter.getF32Type()));
    lb.forEach(m, [&](LoopBuilder &row, Value i) {
      if (rowScratch) {
        row.forEach(n, [&](LoopBuilder &col, Value j) {
          col.store(zero, rowScratch, j);
        });
        row.forEach(kDim, [&](LoopBuilder &red, Value kk) {
          Value aik = red.mul(loadA(red, i, kk), alpha);
          red.forEach(n, [&](LoopBuilder &col, Value j) {
            col.store(col.add(col.load(rowScratch, j),
                              col.mul(aik, loadB(col, kk, j))),
                      rowScratch, j);
          });
        });
        row.forEach(n, [&](LoopBuilder &col, Value j) {
          memref::AtomicRMWOp::create(col.b, loc, arith::AtomicRMWKind::addf,
                                      col.load(rowScratch, j), c,
                                      ValueRange{i, j});
        });
        return;
      }
      if (tb || atomic) {
        row.forEach(n, [&](LoopBuilder &col, Value j) {
          Value dot =
              col.reduce(kDim, zero, [&](LoopBuilder &red, Value kk, Value s) {
                return red.add(s,
                               red.mul(loadA(red, i, kk), loadB(red, kk, j)));
              });
          Value update = col.mul(dot, alpha);
          if (atomic) {
            memref::AtomicRMWOp::create(col.b, loc, arith::AtomicRMWKind::addf,
                                        update, c, ValueRange{i, j});
            return;
          }
          if (accumulate)
            update = col.add(col.load(c, {i, j}), update);
          col.store(update, c, {i, j});
        });
        return;
      }
      if (!accumulate)
        row.forEach(
            n, [&](LoopBuilder &col, Value j) { col.store(zero, c, {i, j}); });
      row.forEach(kDim, [&](LoopBuilder &red, Value kk) {
        Value aik = red.mul(loadA(red, i, kk), alpha);
        red.forEach(n, [&](LoopBuilder &col, Value j) {
          col.store(
              col.add(col.load(c, {i, j}), col.mul(aik, loadB(col, kk, j))), c,
              {i, j});
        });
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileRowDotLowering : OpRewritePattern<TileRowDotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileRowDotOp op,
                                PatternRewriter &rewriter) const override {
    LoopBuilder lb{rewriter, op.getLoc()};
    Value a = op.getA(), b = op.getB();
    Value zero = lb.f32(0.0);
    lb.forEach(lb.dim(a, 0), [&](LoopBuilder &row, Value i) {
      Value dot = row.reduce(
          row.dim(a, 1), zero, [&](LoopBuilder &red, Value j, Value acc) {
            return red.add(acc,
                           red.mul(red.load(a, {i, j}), red.load(b, {i, j})));
          });
      row.store(dot, op.getOut(), i);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileBwdProbsLowering : OpRewritePattern<TileBwdProbsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileBwdProbsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value s = op.getS(), p = op.getP();
    Value zero = lb.f32(0.0), negInf = lb.negInf();
    // The lse of the query of (i, j): row i's, or column j's when transposed.
    bool transposed = op.getTransposed();
    auto lseOf = [&](LoopBuilder &at, Value index) {
      Value lse = at.load(op.getLse(), index);
      Value empty = arith::CmpFOp::create(at.b, loc, arith::CmpFPredicate::OEQ,
                                          lse, negInf);
      return std::make_pair(lse, empty);
    };
    lb.forEach(lb.dim(s, 0), [&](LoopBuilder &row, Value i) {
      std::pair<Value, Value> rowLse;
      if (!transposed)
        rowLse = lseOf(row, i);
      row.forEach(row.dim(s, 1), [&](LoopBuilder &col, Value j) {
        auto [lse, empty] = transposed ? lseOf(col, j) : rowLse;
        Value e =
            math::ExpOp::create(col.b, loc, col.sub(col.load(s, {i, j}), lse));
        col.store(arith::SelectOp::create(col.b, loc, empty, zero, e), p,
                  {i, j});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct TileBwdDsLowering : OpRewritePattern<TileBwdDsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileBwdDsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LoopBuilder lb{rewriter, loc};
    Value p = op.getP(), dp = op.getDp(), s = op.getS();
    Value zero = lb.f32(0.0), one = lb.f32(1.0), invCap;
    if (std::optional<APFloat> cap = op.getSoftcap())
      invCap = lb.f32(1.0 / cap->convertToDouble());
    bool transposed = op.getTransposed();
    lb.forEach(lb.dim(p, 0), [&](LoopBuilder &row, Value i) {
      Value rowDsum = transposed ? Value() : row.load(op.getDsum(), i);
      row.forEach(row.dim(p, 1), [&](LoopBuilder &col, Value j) {
        Value dsum = transposed ? col.load(op.getDsum(), j) : rowDsum;
        Value pij = col.load(p, {i, j});
        Value ds = col.mul(pij, col.sub(col.load(dp, {i, j}), dsum));
        if (s) {
          Value t = col.mul(col.load(s, {i, j}), invCap);
          ds = col.mul(ds, col.sub(one, col.mul(t, t)));
        }
        Value hidden = arith::CmpFOp::create(
            col.b, loc, arith::CmpFPredicate::OEQ, pij, zero);
        col.store(arith::SelectOp::create(col.b, loc, hidden, zero, ds), dp,
                  {i, j});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct FmhaLowerToCpuPass
    : mlir::fmha::impl::FmhaLowerToCpuPassBase<FmhaLowerToCpuPass> {
  using Base::Base;
  void runOnOperation() override {
    // The loops write buffers: tile ops on values are bufferized first.
    WalkResult onValues = getOperation()->walk([](Operation *op) {
      auto add = dyn_cast<AtomicAddOp>(op);
      if (add ? !isa<TensorType>(add.getValue().getType())
              : (!isa<TileInitOp, TileQKOp, TileSoftmaxOp, TilePVOp,
                      TileFinalizeOp, TileFillOp, TileStoreOp, TileMatmulOp,
                      TileRowDotOp, TileBwdProbsOp, TileBwdDsOp>(op) ||
                 op->getNumResults() == 0))
        return WalkResult::advance();
      op->emitOpError() << "is lowered on memrefs: bufferize it first "
                           "(one-shot-bufferize; fmha-to-cpu-pipeline does)";
      return WalkResult::interrupt();
    });
    if (onValues.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateFmhaTileOpsToLoopsPatterns(patterns);
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (!isa<MergeOp, AccumulateOp>(op))
        return WalkResult::advance();
      op->emitOpError() << "is lowered through its loops: run "
                           "--fmha-tile-elementwise first (fmha-to-cpu-"
                           "pipeline does)";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      return signalPassFailure();
    hoistScratchAllocas();
  }

  /// scf.parallel runs sequentially (scf-to-cf) or on the runtime's threads
  /// (fmha-cpu-parallel-for), and its lowering
  /// does not bound the lifetime of allocas in a loop body: each iteration
  /// would grow the stack. The tile scratch has a static shape and is fully
  /// rewritten by every iteration, so one allocation at function entry
  /// serves them all.
  void hoistScratchAllocas() {
    getOperation()->walk([](FunctionOpInterface func) {
      if (func.isExternal())
        return;
      Block &entry = func.getFunctionBody().front();
      SmallVector<memref::AllocaOp> allocas;
      func.walk([&](memref::AllocaOp alloca) {
        if (alloca->getBlock() != &entry && alloca.getOperands().empty())
          allocas.push_back(alloca);
      });
      for (memref::AllocaOp alloca : allocas) {
        alloca->moveBefore(&entry, entry.begin());
        // Per-iteration scratch: a pass that runs the iterations on several
        // threads gives each thread its own (fmha-cpu-parallel-for).
        alloca->setAttr(kScratchAttrName, UnitAttr::get(alloca.getContext()));
      }
    });
  }
};

} // namespace

namespace {

/// memref.copy between views that are not both contiguous with a static
/// shape (the slice of a static tile's padding: a slice of q, k or v into
/// the tile's buffer) as loops of loads and stores; LLVM's lowering would
/// call a runtime library (`memrefCopy`) that bundles do not link.
struct StridedCopyLowering : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto contiguous = [](Type type) {
      auto memref = cast<MemRefType>(type);
      return memref.hasStaticShape() && memref.getLayout().isIdentity();
    };
    if (contiguous(op.getSource().getType()) &&
        contiguous(op.getTarget().getType()))
      return failure();
    LoopBuilder lb{rewriter, op.getLoc()};
    SmallVector<Value> indices;
    std::function<void(LoopBuilder &, int64_t)> nest = [&](LoopBuilder &b,
                                                           int64_t dim) {
      if (dim == cast<MemRefType>(op.getSource().getType()).getRank()) {
        b.store(b.load(op.getSource(), indices), op.getTarget(), indices);
        return;
      }
      b.forEach(b.dim(op.getSource(), dim), [&](LoopBuilder &inner, Value i) {
        indices.push_back(i);
        nest(inner, dim + 1);
        indices.pop_back();
      });
    };
    nest(lb, 0);
    rewriter.eraseOp(op);
    return success();
  }
};

/// dest += value, one atomic add an element: a buffer's in loops, a
/// vector's (the vector tiles) element by element, unrolled.
struct AtomicAddLowering : OpRewritePattern<AtomicAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AtomicAddOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value value = op.getValue(), dest = op.getDest();
    auto add = [&](OpBuilder &b, Value x, ValueRange at) {
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, x, dest,
                                  at);
    };
    if (auto type = dyn_cast<VectorType>(value.getType())) {
      for (int64_t i = 0; i < type.getDimSize(0); ++i)
        for (int64_t j = 0; j < type.getDimSize(1); ++j)
          add(rewriter,
              vector::ExtractOp::create(rewriter, loc, value,
                                        ArrayRef<int64_t>{i, j}),
              {arith::ConstantIndexOp::create(rewriter, loc, i),
               arith::ConstantIndexOp::create(rewriter, loc, j)});
    } else if (isa<MemRefType>(value.getType())) {
      LoopBuilder lb{rewriter, loc};
      lb.forEach(lb.dim(dest, 0), [&](LoopBuilder &row, Value i) {
        row.forEach(row.dim(dest, 1), [&](LoopBuilder &col, Value j) {
          add(col.b, col.load(value, {i, j}), {i, j});
        });
      });
    } else {
      return rewriter.notifyMatchFailure(op, "a tensor (bufferize first)");
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::fmha::populateFmhaTileOpsToLoopsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<TileInitLowering, TileQKLowering, TileSoftmaxLowering,
               TilePVLowering, TileFinalizeLowering, TileFillLowering,
               TileStoreLowering, TileMatmulLowering, TileRowDotLowering,
               TileBwdProbsLowering, TileBwdDsLowering, StridedCopyLowering,
               AtomicAddLowering>(patterns.getContext());
}
