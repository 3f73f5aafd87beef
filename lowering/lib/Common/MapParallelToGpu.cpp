//===- MapParallelToGpu.cpp - Host scf.parallel loops to GPU kernels ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-map-parallel-to-gpu: each outermost scf.parallel of a host function
// becomes a kernel and its launch. The mapping (Passes.td says more):
//
//   element form (no inner scf.parallel), T threads, E elements a thread:
//     i = block * T * E + k * T + thread   (k < E)
//     if (i < n) body(delinearize(i))
//   workgroup form: each iteration a workgroup, every thread the body
//     body(delinearize(block))
//   row form (one inner 1-D scf.parallel), L threads a row:
//     row = block * (T / L) + thread / L, lane = thread % L
//     pre(row < rows ? row : 0)            reads only
//     if (row < rows) for (c = lb + lane * step; c < ub; c += L * step) inner
//     barrier; if (row < rows && lane == 0) post
//
// The kernel's operands are the values the loop reads from above, its trip
// counts and bounds; constants among them are cloned into the kernel.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAMAPPARALLELTOGPUPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Index arithmetic of the mapping: IndexMath (folding constants) with the
/// unsigned division, remainder and comparison the thread and row indices
/// take (they are never negative).
struct Index : IndexMath {
  Index(OpBuilder &b, Location loc) : IndexMath{b, loc} {}
  Value div(Value x, Value y) {
    return b.createOrFold<arith::DivUIOp>(loc, x, y);
  }
  Value rem(Value x, Value y) {
    return b.createOrFold<arith::RemUIOp>(loc, x, y);
  }
  Value lt(Value x, Value y) { return cmp(arith::CmpIPredicate::ult, x, y); }
};

/// Whether `op` or an op nested in it may write memory.
bool mayWrite(Operation *op) {
  WalkResult r = op->walk([](Operation *nested) {
    if (auto effects = dyn_cast<MemoryEffectOpInterface>(nested)) {
      if (effects.hasEffect<MemoryEffects::Write>() ||
          effects.hasEffect<MemoryEffects::Free>())
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    // No interface: only a recursively pure op (its effects are those of
    // its nested ops) is known not to write.
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return r.wasInterrupted();
}

class Mapper {
public:
  Mapper(ModuleOp module, StringRef kernelName, int64_t blockThreads,
         int64_t rowThreads, int64_t threadElements, bool workgroup,
         int64_t warpSize)
      : module_(module), kernelName_(kernelName), blockThreads_(blockThreads),
        threads_(blockThreads), rowThreads_(rowThreads),
        elements_(threadElements), workgroup_(workgroup), warpSize_(warpSize) {}

  LogicalResult map(scf::ParallelOp loop) {
    threads_ = blockThreads_;
    if (workgroup_ && warpSize_ > 0) {
      int64_t warps = 0;
      loop.walk([&](ToLayoutOp anchor) {
        warps = std::max(warps, anchor.getLayout().getLayout().getNumWarps());
      });
      if (warps > 0)
        threads_ = warps * warpSize_;
      if (threads_ > 1024)
        return loop.emitOpError()
               << "has tiles in layouts of " << warps << " warps of "
               << warpSize_ << " threads: more than 1024 threads a workgroup";
    }
    if (loop.getNumResults() != 0)
      return loop.emitOpError()
             << "with reductions is not mapped to the GPU (the loops of "
                "--fmha-tile-elementwise have none)";
    // The grid is sized on the host before the launch, from sizes alone: a
    // bound that reads memory (say a variable-length batch's longest
    // sequence, from its offsets) would read device buffers on the host.
    for (Value bound : loop.getUpperBound()) {
      Operation *def = bound.getDefiningOp();
      if (!def)
        continue; // an argument: a size
      SetVector<Operation *> slice;
      BackwardSliceOptions options;
      options.inclusive = true;
      options.omitBlockArguments = true; // arguments are sizes or buffers
      (void)getBackwardSlice(def, &slice, options);
      for (Operation *op : slice)
        if (!isMemoryEffectFree(op))
          return loop.emitOpError()
                 << "has a trip count that reads memory (" << op->getName()
                 << "): the GPU grid is sized on the host from the kernel's "
                    "sizes, before the kernel's buffers may be read";
    }
    scf::ParallelOp inner;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (workgroup_)
        break;
      auto nested = dyn_cast<scf::ParallelOp>(op);
      if (!nested)
        continue;
      if (inner)
        return loop.emitOpError()
               << "holds more than one inner scf.parallel; the row form "
                  "maps one (1-D, no reductions)";
      inner = nested;
    }
    if (inner && (inner.getNumLoops() != 1 || inner.getNumResults() != 0))
      return inner.emitOpError()
             << "is not mapped to the lanes of a row: the row form takes a "
                "1-D inner scf.parallel without reductions";
    if (inner)
      for (Operation &op : loop.getBody()->without_terminator()) {
        if (&op == inner.getOperation())
          break;
        if (mayWrite(&op))
          return op.emitOpError()
                 << "writes memory before the inner scf.parallel; the row "
                    "form runs those ops on every lane of the row, so they "
                    "may only read";
      }
    Location loc = loop.getLoc();
    OpBuilder host(loop);
    Index h(host, loc);
    // Trip counts and the flattened count, on the host.
    SmallVector<Value> trips;
    Value total = h.c(1);
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      trips.push_back(h.ceilDiv(h.sub(ub, lb), step));
      total = h.mul(total, trips.back());
    }
    // What the kernel reads from the host: trip counts, bounds, the values
    // the body uses from above.
    llvm::SetVector<Value> captured;
    captured.insert(trips.begin(), trips.end());
    captured.insert(loop.getLowerBound().begin(), loop.getLowerBound().end());
    captured.insert(loop.getStep().begin(), loop.getStep().end());
    getUsedValuesDefinedAbove(loop.getRegion(), captured);
    SmallVector<Value> operands;
    SmallVector<Type> types;
    for (Value v : captured)
      if (!matchPattern(v, m_Constant())) {
        operands.push_back(v);
        types.push_back(v.getType());
      }

    // A loop may name its kernel: kernel-name + "_" + fmha.kernel_suffix.
    std::string name = kernelName_.str();
    if (auto suffix = loop->getAttrOfType<StringAttr>("fmha.kernel_suffix"))
      name =
          (name.empty() ? std::string("parallel") : name) + "_" + suffix.str();
    gpu::GPUFuncOp func =
        createKernelFunc(loop, module_, name, "parallel", types, threads_);
    Block &entry = func.getBody().front();
    OpBuilder k = OpBuilder::atBlockBegin(&entry);
    IRMapping map;
    for (Value v : captured)
      if (matchPattern(v, m_Constant()))
        map.map(v, k.clone(*v.getDefiningOp())->getResult(0));
    for (auto [v, arg] : llvm::zip(operands, entry.getArguments()))
      map.map(v, arg);
    auto kernelTrips =
        llvm::map_to_vector(trips, [&](Value t) { return map.lookup(t); });

    if (workgroup_)
      buildWorkgroup(k, loc, loop, map, kernelTrips);
    else if (inner)
      buildRows(k, loc, loop, inner, map, kernelTrips);
    else
      buildElements(k, loc, loop, map, kernelTrips);
    gpu::ReturnOp::create(k, loc);

    const int64_t perBlock = workgroup_ ? 1
                             : inner    ? threads_ / rowThreads_
                                        : threads_ * elements_;
    gpu::KernelDim3 grid{h.ceilDiv(total, h.c(perBlock)), h.c(1), h.c(1)};
    gpu::KernelDim3 block{h.c(threads_), h.c(1), h.c(1)};
    Value shared =
        arith::ConstantIntOp::create(host, loc, host.getI32Type(), 0);
    gpu::LaunchFuncOp::create(host, loc, func, grid, block, shared, operands);
    loop.erase();
    return success();
  }

private:
  /// Maps the loop's induction variables to the iteration `flat` of the
  /// flattened loop (the last dimension fastest).
  void mapIvs(OpBuilder &b, Location loc, scf::ParallelOp loop, Value flat,
              ArrayRef<Value> trips, IRMapping &map) {
    Index im(b, loc);
    const size_t n = trips.size();
    SmallVector<Value> index(n);
    for (size_t d = n; d-- > 0;) {
      if (d == 0) {
        index[d] = flat;
        break;
      }
      index[d] = im.rem(flat, trips[d]);
      flat = im.div(flat, trips[d]);
    }
    for (size_t d = 0; d < n; ++d) {
      Value lb = map.lookupOrDefault(loop.getLowerBound()[d]);
      Value step = map.lookupOrDefault(loop.getStep()[d]);
      map.map(loop.getInductionVars()[d], im.add(lb, im.mul(index[d], step)));
    }
  }

  static void cloneOps(OpBuilder &b, iterator_range<Block::iterator> ops,
                       IRMapping &map) {
    for (Operation &op : ops)
      if (!op.hasTrait<OpTrait::IsTerminator>())
        b.clone(op, map);
  }

  /// The iteration of the workgroup's block id, run by every thread.
  void buildWorkgroup(OpBuilder &k, Location loc, scf::ParallelOp loop,
                      IRMapping &map, ArrayRef<Value> trips) {
    Value bid = gpu::BlockIdOp::create(k, loc, gpu::Dimension::x);
    mapIvs(k, loc, loop, bid, trips, map);
    Block *body = loop.getBody();
    cloneOps(k, {body->begin(), body->end()}, map);
  }

  void buildElements(OpBuilder &k, Location loc, scf::ParallelOp loop,
                     IRMapping &map, ArrayRef<Value> trips) {
    Index im(k, loc);
    Value tid = gpu::ThreadIdOp::create(k, loc, gpu::Dimension::x);
    Value bid = gpu::BlockIdOp::create(k, loc, gpu::Dimension::x);
    Value n = totalInKernel(k, loc, trips);
    Value base = im.add(im.mul(bid, im.c(threads_ * elements_)), tid);
    for (int64_t e = 0; e < elements_; ++e) {
      Value i = im.add(base, im.c(e * threads_));
      scf::IfOp::create(k, loc, im.lt(i, n), [&](OpBuilder &tb, Location) {
        mapIvs(tb, loc, loop, i, trips, map);
        Block *body = loop.getBody();
        cloneOps(tb, {body->begin(), body->end()}, map);
        scf::YieldOp::create(tb, loc);
      });
    }
  }

  void buildRows(OpBuilder &k, Location loc, scf::ParallelOp loop,
                 scf::ParallelOp inner, IRMapping &map, ArrayRef<Value> trips) {
    Index im(k, loc);
    Value tid = gpu::ThreadIdOp::create(k, loc, gpu::Dimension::x);
    Value bid = gpu::BlockIdOp::create(k, loc, gpu::Dimension::x);
    Value rows = totalInKernel(k, loc, trips);
    Value lanes = im.c(rowThreads_);
    Value lane = im.rem(tid, lanes);
    Value row =
        im.add(im.mul(bid, im.c(threads_ / rowThreads_)), im.div(tid, lanes));
    Value inRange = im.lt(row, rows);
    // Threads past the last row read row 0 (rows >= 1 wherever there is a
    // workgroup) and write nothing; every thread reaches the barrier.
    Value safeRow = arith::SelectOp::create(k, loc, inRange, row, im.c(0));
    mapIvs(k, loc, loop, safeRow, trips, map);
    Block *body = loop.getBody();
    auto innerIt = Block::iterator(inner.getOperation());
    cloneOps(k, {body->begin(), innerIt}, map);

    Value lb = map.lookupOrDefault(inner.getLowerBound()[0]);
    Value ub = map.lookupOrDefault(inner.getUpperBound()[0]);
    Value step = map.lookupOrDefault(inner.getStep()[0]);
    scf::IfOp::create(k, loc, inRange, [&](OpBuilder &tb, Location) {
      Index ti(tb, loc);
      scf::ForOp::create(
          tb, loc, ti.add(lb, ti.mul(lane, step)), ub, ti.mul(lanes, step),
          ValueRange{}, [&](OpBuilder &lb2, Location, Value c, ValueRange) {
            map.map(inner.getInductionVars()[0], c);
            Block *innerBody = inner.getBody();
            cloneOps(lb2, {innerBody->begin(), innerBody->end()}, map);
            scf::YieldOp::create(lb2, loc);
          });
      scf::YieldOp::create(tb, loc);
    });

    auto post = llvm::make_range(std::next(innerIt), body->end());
    if (llvm::all_of(post, [](Operation &op) {
          return op.hasTrait<OpTrait::IsTerminator>();
        }))
      return;
    // Every thread's reads of the row happen before its first thread
    // writes (they may be one buffer: the merge in place).
    gpu::BarrierOp::create(k, loc);
    Value first = arith::AndIOp::create(
        k, loc, inRange, im.cmp(arith::CmpIPredicate::eq, lane, im.c(0)));
    scf::IfOp::create(k, loc, first, [&](OpBuilder &tb, Location) {
      cloneOps(tb, post, map);
      scf::YieldOp::create(tb, loc);
    });
  }

  /// The flattened trip count inside the kernel.
  static Value totalInKernel(OpBuilder &k, Location loc,
                             ArrayRef<Value> trips) {
    Index im(k, loc);
    Value n = trips.front();
    for (Value t : trips.drop_front())
      n = im.mul(n, t);
    return n;
  }

  ModuleOp module_;
  StringRef kernelName_;
  int64_t blockThreads_, threads_, rowThreads_, elements_;
  bool workgroup_;
  int64_t warpSize_;
};

struct FmhaMapParallelToGpuPass
    : mlir::fmha::impl::FmhaMapParallelToGpuPassBase<FmhaMapParallelToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (blockThreads < 1 || blockThreads > 1024 || rowThreads < 1 ||
        blockThreads % rowThreads != 0 || threadElements < 1) {
      module.emitError()
          << "fmha-map-parallel-to-gpu needs 1 <= block-threads <= 1024, "
             "row-threads dividing block-threads and thread-elements >= 1; "
             "got block-threads="
          << static_cast<int64_t>(blockThreads)
          << ", row-threads=" << static_cast<int64_t>(rowThreads)
          << ", thread-elements=" << static_cast<int64_t>(threadElements);
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> loops;
    for (auto func : module.getOps<func::FuncOp>())
      func.walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
        loops.push_back(loop);
        return WalkResult::skip();
      });
    if (warpSize < 0) {
      module.emitError() << "fmha-map-parallel-to-gpu needs warp-size >= 0, "
                            "got "
                         << static_cast<int64_t>(warpSize);
      return signalPassFailure();
    }
    Mapper mapper(module, kernelName, blockThreads, rowThreads, threadElements,
                  workgroup, warpSize);
    for (scf::ParallelOp loop : loops)
      if (failed(mapper.map(loop)))
        return signalPassFailure();
  }
};

} // namespace
