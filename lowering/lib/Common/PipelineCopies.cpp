//===- PipelineCopies.cpp - Double-buffer a kernel loop's tile copies -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-pipeline-copies: a loop iteration that copies its tiles into
// workgroup buffers and waits for them before its products
// (--fmha-stage-kv's form),
//
//   scf.for %iv = %lb to %ub step %s {
//     gpu.barrier
//     fmha.copy_async %k[f(%iv), ..] to %kbuf[0, 0]
//     fmha.copy_wait pending(0)
//     gpu.barrier
//     ... vector.transfer_read %kbuf[0, 0] ...
//   }
//
// copies the next iteration's tiles into a second stage of each buffer
// while it computes on this one's:
//
//   gpu.barrier
//   scf.if %lb < %ub { fmha.copy_async %k[f(%lb), ..] to %kbuf[0, 0, 0] }
//   scf.for %iv = %lb to %ub step %s {
//     %slot = ((%iv - %lb) / %s) % 2
//     fmha.copy_wait pending(0)                (this iteration's tiles)
//     gpu.barrier                              (visible to all; the last
//     scf.if %iv + %s < %ub {                   iteration's reads done)
//       fmha.copy_async %k[f(%iv + %s), ..] to %kbuf[1 - %slot, 0, 0]
//     }
//     ... vector.transfer_read %kbuf[%slot, 0, 0] ...
//   }
//
// One barrier an iteration instead of two; the copies of iteration i + 1
// are in flight during the products of iteration i. The copies' operands
// are recomputed for the next iteration from the induction variable (the
// ops they come from in the loop must be pure, or loads of an input the
// kernel never writes such as a paged cache's block table, and not depend
// on values the loop carries); a loop that does not have this form is left
// as it is.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAPIPELINECOPIESPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// One loop's copies: barrier, copies, wait(0), barrier at the top level
/// of its body, and the ops (in the body, in order) their operands come
/// from.
struct Staged {
  scf::ForOp loop;
  gpu::BarrierOp before, after;
  SmallVector<CopyAsyncOp> copies;
  CopyWaitOp wait;
  SmallVector<Operation *> slice;
};

/// The workgroup attribution of `func` that `v` is, if it is one.
bool isWorkgroupBuffer(gpu::GPUFuncOp func, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && llvm::is_contained(func.getWorkgroupAttributions(), arg);
}

/// The memref `v` views (through view-like ops).
Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether some op of `func` may write the memory of `root` (an argument):
/// a write effect on a view of it, or an op without declared effects that
/// takes one.
bool mayWrite(gpu::GPUFuncOp func, Value root) {
  bool writes = false;
  func.walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        for (Value operand : op->getOperands())
          writes |=
              isa<MemRefType>(operand.getType()) && viewRoot(operand) == root;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list)
      if (isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()))
        writes |= !e.getValue() || viewRoot(e.getValue()) == root;
  });
  return writes;
}

/// Whether the next iteration's copy operands may recompute `op`: pure and
/// without regions, or a load of a kernel argument the kernel never writes
/// (a paged cache's block table: the page of the next kv tile).
bool isReplayable(gpu::GPUFuncOp func, Operation *op) {
  if (op->getNumRegions() != 0)
    return false;
  if (isPure(op))
    return true;
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load)
    return false;
  auto arg = dyn_cast<BlockArgument>(viewRoot(load.getMemRef()));
  return arg && arg.getOwner() == &func.getBody().front() &&
         !mayWrite(func, arg);
}

/// The copies of `loop` in the form above, when they have it.
std::optional<Staged> match(gpu::GPUFuncOp func, scf::ForOp loop) {
  Staged s;
  s.loop = loop;
  Block *body = loop.getBody();
  for (Operation &op : *body)
    if (auto w = dyn_cast<CopyWaitOp>(op)) {
      if (s.wait)
        return std::nullopt;
      s.wait = w;
    }
  if (!s.wait || s.wait.getPending() != 0)
    return std::nullopt;
  s.after = dyn_cast_or_null<gpu::BarrierOp>(s.wait->getNextNode());
  if (!s.after)
    return std::nullopt;
  // The copies before the wait, back to the barrier (constants between).
  for (Operation *op = s.wait->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto b = dyn_cast<gpu::BarrierOp>(op)) {
      s.before = b;
      break;
    }
    if (auto c = dyn_cast<CopyAsyncOp>(op))
      s.copies.insert(s.copies.begin(), c);
    else if (!isReplayable(func, op))
      return std::nullopt;
  }
  if (!s.before || s.copies.empty())
    return std::nullopt;
  // No other copy in the loop; each buffer written by its copies alone (a
  // tile over several pages: one copy a page) and read by transfers in the
  // loop alone.
  bool other = false;
  loop.getBody()->walk([&](Operation *op) {
    if (isa<CopyAsyncOp, CopyWaitOp>(op) && !llvm::is_contained(s.copies, op) &&
        op != s.wait)
      other = true;
  });
  if (other)
    return std::nullopt;
  for (CopyAsyncOp c : s.copies) {
    Value buffer = c.getDest();
    if (!isWorkgroupBuffer(func, buffer) ||
        !cast<MemRefType>(buffer.getType()).hasStaticShape())
      return std::nullopt;
    for (Operation *user : buffer.getUsers()) {
      if (isa<CopyAsyncOp>(user) && llvm::is_contained(s.copies, user))
        continue;
      auto read = dyn_cast<vector::TransferReadOp>(user);
      if (!read || read.getBase() != buffer || !loop->isProperAncestor(read) ||
          !read.getPermutationMap().isMinorIdentity())
        return std::nullopt;
    }
  }
  // The ops of the body the copies' operands come from: pure,
  // without regions, from the induction variable and values from outside.
  SetVector<Operation *> slice;
  SmallVector<Value> work;
  for (CopyAsyncOp c : s.copies) {
    work.push_back(c.getSource());
    llvm::append_range(work, c.getSourceIndices());
    llvm::append_range(work, c.getDestIndices());
  }
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v == loop.getInductionVar() ||
        !loop->isAncestor(v.getParentBlock()->getParentOp()))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != body || !isReplayable(func, def))
      return std::nullopt;
    if (slice.insert(def))
      llvm::append_range(work, def->getOperands());
  }
  s.slice = slice.takeVector();
  llvm::sort(s.slice,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return s;
}

/// The copies of `s` for the iteration at `iv`, into stage `slot` of their
/// buffers.
void emitCopies(OpBuilder &b, const Staged &s, Value iv, Value slot) {
  IRMapping map;
  map.map(scf::ForOp(s.loop).getInductionVar(), iv);
  for (Operation *op : s.slice)
    b.clone(*op, map);
  for (CopyAsyncOp c : s.copies) {
    SmallVector<Value> dest{slot};
    for (Value i : c.getDestIndices())
      dest.push_back(map.lookupOrDefault(i));
    SmallVector<Value> from;
    for (Value i : c.getSourceIndices())
      from.push_back(map.lookupOrDefault(i));
    CopyAsyncOp::create(b, c.getLoc(), map.lookupOrDefault(c.getSource()), from,
                        c.getDest(), dest, c.getLayout());
  }
}

void pipeline(Staged &s) {
  scf::ForOp loop = s.loop;
  Location loc = loop.getLoc();
  // Each buffer gets a leading dim of two stages.
  SetVector<Value> buffers;
  for (CopyAsyncOp c : s.copies)
    buffers.insert(c.getDest());
  for (Value buffer : buffers) {
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<int64_t> shape{2};
    llvm::append_range(shape, type.getShape());
    cast<BlockArgument>(buffer).setType(
        MemRefType::get(shape, type.getElementType(),
                        MemRefLayoutAttrInterface(), type.getMemorySpace()));
  }
  OpBuilder b(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
  Value step = loop.getStep();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value two = arith::ConstantIndexOp::create(b, loc, 2);
  // The prologue: the first iteration's copies into stage 0, after the
  // reads of the buffers before the loop.
  gpu::BarrierOp::create(b, loc);
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  auto first = scf::IfOp::create(b, loc, runs, /*withElseRegion=*/false);
  {
    OpBuilder then = first.getThenBodyBuilder();
    emitCopies(then, s, lb, zero);
  }
  // In the loop: this iteration's stage, the wait and one barrier, then the
  // next iteration's copies into the other stage.
  b.setInsertionPoint(s.before);
  Value iv = loop.getInductionVar();
  Value k = arith::DivUIOp::create(b, loc,
                                   arith::SubIOp::create(b, loc, iv, lb), step);
  Value slot = arith::RemUIOp::create(b, loc, k, two);
  Value other = arith::SubIOp::create(b, loc, one, slot);
  Value next = arith::AddIOp::create(b, loc, iv, step);
  b.setInsertionPointAfter(s.after);
  Value more =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next, ub);
  auto prefetch = scf::IfOp::create(b, loc, more, /*withElseRegion=*/false);
  {
    OpBuilder then = prefetch.getThenBodyBuilder();
    emitCopies(then, s, next, other);
  }
  // The reads take this iteration's stage.
  for (Value buffer : buffers) {
    for (Operation *user : llvm::make_early_inc_range(buffer.getUsers())) {
      auto read = dyn_cast<vector::TransferReadOp>(user);
      if (!read)
        continue;
      OpBuilder rb(read);
      SmallVector<Value> indices{slot};
      llvm::append_range(indices, read.getIndices());
      auto staged = vector::TransferReadOp::create(
          rb, read.getLoc(), read.getVectorType(), buffer, indices,
          read.getPadding(), read.getInBoundsValues());
      read.getResult().replaceAllUsesWith(staged.getResult());
      read.erase();
    }
  }
  for (CopyAsyncOp c : s.copies)
    c.erase();
  s.before.erase();
  // The ops that computed the copies' operands in the body, now unused.
  for (Operation *op : llvm::reverse(s.slice))
    if (op->use_empty())
      op->erase();
}

struct FmhaPipelineCopiesPass
    : mlir::fmha::impl::FmhaPipelineCopiesPassBase<FmhaPipelineCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (stages != 1 && stages != 2) {
      getOperation()->emitError()
          << "fmha-pipeline-copies: stages must be 1 or 2, got "
          << static_cast<int64_t>(stages);
      return signalPassFailure();
    }
    if (stages == 1)
      return;
    for (Operation *f : gpuFuncsIn(getOperation())) {
      auto func = cast<gpu::GPUFuncOp>(f);
      SmallVector<Staged> found;
      func.walk([&](scf::ForOp loop) {
        if (std::optional<Staged> s = match(func, loop))
          found.push_back(*s);
      });
      for (Staged &s : found)
        pipeline(s);
    }
  }
};

} // namespace
