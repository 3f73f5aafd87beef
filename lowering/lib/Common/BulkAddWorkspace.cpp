//===- BulkAddWorkspace.cpp - Atomic tile adds as one bulk add a workgroup ===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-bulk-add: each warp adding its registers into global memory one
// atomic instruction at a time (the backward's dQ += scale dS K into the
// dq_accum workspace, 64 atomics a thread a q step at D 128) keeps the
// warps issuing and the memory system taking 32-lane requests. Where the
// destination tile is contiguous (a tile of the workspace in register order,
// --fmha-register-order-workspace, or a whole row-major tile), the
// workgroup can instead write the tile into a workgroup buffer and have the
// tensor memory accelerator add the whole buffer in one bulk operation
// while the warps go on (FlashAttention-3's dQ):
//
//   fmha.atomic_add %tile, %dest
//
// becomes
//
//   fmha.add_wait {read}                       (the last bulk add has read
//                                               the buffer)
//   vector.transfer_write %tile, %buf[0, 0]
//   fmha.add_async %buf to %dest               (fence, barrier, one thread
//                                               starts the bulk add)
//
// after the last op of the function's body that adds, a wait for the
// buffer to be read (its bytes free for the buffers used after), and before
// every gpu.return one for the adds to complete (fmha.add_wait). One
// buffer serves every add of a shape in a function. The distribution lowers
// the two ops through the target (GpuTarget::emitBulkAdd).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHABULKADDPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// A tile add that one bulk add can do: a vector tile into a contiguous
/// buffer outside workgroup memory.
bool bulkAddable(AtomicAddOp add) {
  auto value = dyn_cast<VectorType>(add.getValue().getType());
  MemRefType dest = add.getDest().getType();
  if (!value || dest.getMemorySpace())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(dest.getStridesAndOffset(strides, offset)) &&
         strides[1] == 1 && strides[0] == dest.getDimSize(1);
}

void bulkAdd(gpu::GPUFuncOp func, ArrayRef<AtomicAddOp> adds,
             unsigned workgroupSpace) {
  MLIRContext *ctx = func.getContext();
  Block &entry = func.getBody().front();
  Operation *last = nullptr;
  for (AtomicAddOp add : adds) {
    Operation *top = entry.findAncestorOpInBlock(*add);
    if (!last || last->isBeforeInBlock(top))
      last = top;
  }
  llvm::DenseMap<Type, Value> buffers;
  for (AtomicAddOp add : adds) {
    auto type = cast<VectorType>(add.getValue().getType());
    Value &buffer = buffers[type];
    if (!buffer)
      buffer = func.addWorkgroupAttribution(
          MemRefType::get(
              type.getShape(), type.getElementType(),
              MemRefLayoutAttrInterface(),
              IntegerAttr::get(IntegerType::get(ctx, 64), workgroupSpace)),
          add.getLoc());
    OpBuilder b(add);
    Location loc = add.getLoc();
    AddWaitOp::create(b, loc, /*read=*/true);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    vector::TransferWriteOp::create(b, loc, add.getValue(), buffer,
                                    ValueRange{zero, zero},
                                    ArrayRef<bool>{true, true});
    AddAsyncOp::create(b, loc, buffer, add.getDest());
    add.erase();
  }
  // The buffers free once the code that adds from them is done (the
  // workgroup memory planner may give their bytes to buffers used only
  // after it), the adds complete before the kernel returns.
  OpBuilder after(last->getContext());
  after.setInsertionPointAfter(last);
  AddWaitOp::create(after, last->getLoc(), /*read=*/true);
  func.walk([&](gpu::ReturnOp ret) {
    OpBuilder b(ret);
    AddWaitOp::create(b, ret.getLoc(), /*read=*/false);
  });
}

struct FmhaBulkAddPass
    : mlir::fmha::impl::FmhaBulkAddPassBase<FmhaBulkAddPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation()->walk([&](gpu::GPUFuncOp func) {
      SmallVector<AtomicAddOp> adds;
      func.walk([&](AtomicAddOp add) {
        if (bulkAddable(add))
          adds.push_back(add);
      });
      if (!adds.empty())
        bulkAdd(func, adds, workgroupSpace);
    });
  }
};

} // namespace
