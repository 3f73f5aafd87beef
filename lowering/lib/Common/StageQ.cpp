//===- StageQ.cpp - A operands of a kernel's loops through workgroup memory
//-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-stage-q: in each gpu.func of vector tiles (before
// --fmha-distribute-tiles), a tile read before a loop only to be an
// operand of products inside loops (the staged forward's Q tile, which
// every kv iteration multiplies; the backward's K of S^T = K Q^T and, with
// atomic dQ, of dQ += dS K) is copied once into workgroup memory by all the
// threads, and each product reads it back from there, in its own layout:
//
//   %q = vector.transfer_read %global[%r, %c]     (gone)
//   fmha.copy_async %global[%r, %c] to %qbuf[0, 0] layout(#copy)
//   fmha.copy_wait pending(0)
//   gpu.barrier                                   (the copies are visible)
//   scf.for ... {
//     %qs = vector.transfer_read %qbuf[0, 0]       (at each product)
//     %qa = fmha.to_layout %qs to layout(#a)
//     vector.contract %qa, ...
//
// The read next to the product folds into it in --fmha-distribute-tiles
// (each k step's fragments loaded there, by ldmatrix on NVVM), so no
// thread holds the tile's registers across the loop: what 32 rows a warp
// at head dim 128 needs to keep S and O in registers. The buffer is a
// workgroup attribution, its rows padded by 16 bytes as stage-kv's.
//
//===----------------------------------------------------------------------===//

#include "TileLayouts.h"
#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHASTAGEQPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// The products a tile read outside loops feeds as A or B, through
/// anchors; empty unless that is all its uses and each product sits in a
/// loop the read is outside of.
SmallVector<OpOperand *> productsInLoops(vector::TransferReadOp read) {
  SmallVector<OpOperand *> out;
  for (Operation *user : read->getUsers()) {
    auto anchor = dyn_cast<ToLayoutOp>(user);
    if (!anchor)
      return {};
    for (OpOperand &use : anchor->getUses()) {
      auto contract = dyn_cast<vector::ContractionOp>(use.getOwner());
      auto loop = contract ? contract->getParentOfType<scf::ForOp>() : nullptr;
      if (!contract || use.getOperandNumber() > 1 || !loop ||
          loop->isAncestor(read))
        return {};
      out.push_back(&use);
    }
  }
  return out;
}

LogicalResult stage(gpu::GPUFuncOp func, const GpuTarget &target,
                    int64_t swizzle) {
  SmallVector<vector::TransferReadOp> reads;
  func.walk([&](vector::TransferReadOp read) {
    if (isCopyableTile(read) && !productsInLoops(read).empty())
      reads.push_back(read);
  });
  if (reads.empty())
    return success();
  FailureOr<int64_t> warps = workgroupWarps(func, target, "fmha-stage-q");
  if (failed(warps))
    return failure();
  for (vector::TransferReadOp read : reads) {
    FailureOr<std::pair<LayoutAttr, Value>> copy =
        addStagingBuffer(func, read, read.getVectorType(), target, *warps,
                         "fmha-stage-q", swizzle);
    if (failed(copy))
      return failure();
    Value buffer = copy->second;
    OpBuilder b(read);
    Location loc = read.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    CopyAsyncOp::create(b, loc, read.getBase(), read.getIndices(), buffer,
                        ValueRange{zero, zero}, copy->first);
    CopyWaitOp::create(b, loc, 0);
    gpu::BarrierOp::create(b, loc);
    // Each product reads the buffer right before it.
    for (OpOperand *use : productsInLoops(read)) {
      auto anchor = cast<ToLayoutOp>(use->get().getDefiningOp());
      Operation *product = use->getOwner();
      b.setInsertionPoint(product);
      Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
      Value staged = vector::TransferReadOp::create(
          b, loc, read.getVectorType(), buffer, ValueRange{c0, c0},
          read.getPadding(), ArrayRef<bool>{true, true});
      use->set(ToLayoutOp::create(b, anchor.getLoc(), staged.getType(), staged,
                                  anchor.getLayoutAttr()));
    }
    for (Operation *anchor : llvm::make_early_inc_range(read->getUsers()))
      anchor->erase();
    read.erase();
  }
  return success();
}

struct FmhaStageQPass : mlir::fmha::impl::FmhaStageQPassBase<FmhaStageQPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(forEachGpuFunc(
            getOperation(), target, chip, mfma, "fmha-stage-q",
            [&](gpu::GPUFuncOp func, const GpuTarget &gpuTarget) {
              return stage(func, gpuTarget, swizzle);
            })))
      signalPassFailure();
  }
};

} // namespace
