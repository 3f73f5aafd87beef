//===- GpuAccumulateKernel.cpp - fmha.accumulate -> GPU kernel ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-lower-to-gpu: each fmha.accumulate on memrefs (acc += x, acc f32, x
// f16, bf16 or f32, any rank) becomes an elementwise gpu.func over the
// flattened elements and a gpu.launch_func on the host.
//
// Kernel ABI (gpu-acc-v1): (x: memref<?xT>, acc: memref<?xf32>, n: index)
// over contiguous buffers of n elements. Thread t of workgroup w handles the
// kVector elements from i0 = (w * kBlockThreads + t) * kVector: with all of
// them in range and both buffers aligned for it (x to kVector elements, acc
// to 16 bytes; checked in the kernel, the same answer for every thread), one
// vector load of x, one of acc and one vector store; otherwise element by
// element. grid (ceil(n / (kBlockThreads * kVector)), 1, 1), block
// (kBlockThreads, 1, 1), no workgroup memory.
//
// Each element of acc is read and written by one thread, after it reads the
// same element of x: x may be acc.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include <string>

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Threads of a workgroup and elements of a thread (gpu-acc-v1, Runtime.h).
constexpr int64_t kBlockThreads = 256;
constexpr int64_t kVector = 4;

/// Why the kernel cannot take `op`, or empty.
std::string checkAccumulate(AccumulateOp op) {
  if (!op.hasPureBufferSemantics())
    return "the GPU lowering takes fmha.accumulate on memrefs (bufferize "
           "first)";
  for (Value v : op->getOperands()) {
    auto type = cast<MemRefType>(v.getType());
    if (!type.getLayout().isIdentity())
      return "the GPU lowering needs contiguous (identity-layout) memrefs";
    if (type.getRank() == 0)
      return "the GPU accumulate kernel needs operands of rank 1 or more";
  }
  return {};
}

/// The body of the accumulate kernel over the entry block's arguments.
void buildAccumulateBody(OpBuilder &b, Location loc, Block &entry, Type elt) {
  IndexMath im{b, loc};
  Value x = entry.getArgument(0), acc = entry.getArgument(1);
  Value n = entry.getArgument(2);
  Type f32 = b.getF32Type();
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value i0 = im.mul(im.add(im.mul(bid, im.c(kBlockThreads)), tid),
                    im.c(kVector));
  const int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
  auto alignedTo = [&](Value memref, int64_t bytes) {
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    return im.cmp(arith::CmpIPredicate::eq, im.rem(ptr, im.c(bytes)),
                  im.c(0));
  };
  Value aligned = arith::AndIOp::create(b, loc, alignedTo(x, kVector * eltBytes),
                                        alignedTo(acc, kVector * 4));
  Value whole = arith::AndIOp::create(
      b, loc, aligned, im.le(im.add(i0, im.c(kVector)), n));
  scf::IfOp::create(
      b, loc, whole,
      [&](OpBuilder &tb, Location) {
        auto xType = VectorType::get({kVector}, elt);
        auto accType = VectorType::get({kVector}, f32);
        Value xv = vector::LoadOp::create(tb, loc, xType, x, ValueRange{i0},
                                          /*nontemporal=*/false,
                                          llvm::MaybeAlign(kVector * eltBytes));
        if (!elt.isF32())
          xv = arith::ExtFOp::create(tb, loc, accType, xv);
        Value av = vector::LoadOp::create(tb, loc, accType, acc,
                                          ValueRange{i0},
                                          /*nontemporal=*/false,
                                          llvm::MaybeAlign(kVector * 4));
        Value sum = arith::AddFOp::create(tb, loc, av, xv);
        vector::StoreOp::create(tb, loc, sum, acc, ValueRange{i0},
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(kVector * 4));
        scf::YieldOp::create(tb, loc);
      },
      [&](OpBuilder &eb, Location) {
        IndexMath em{eb, loc};
        Value end = em.min(em.add(i0, em.c(kVector)), n);
        scf::ForOp::create(
            eb, loc, i0, end, em.c(1), ValueRange{},
            [&](OpBuilder &lb, Location, Value i, ValueRange) {
              Value xs = memref::LoadOp::create(lb, loc, x, i);
              if (!elt.isF32())
                xs = arith::ExtFOp::create(lb, loc, f32, xs);
              Value as = memref::LoadOp::create(lb, loc, acc, i);
              memref::StoreOp::create(
                  lb, loc, arith::AddFOp::create(lb, loc, as, xs), acc, i);
              scf::YieldOp::create(lb, loc);
            });
        scf::YieldOp::create(eb, loc);
      });
}

} // namespace

LogicalResult mlir::fmha::lowerAccumulateToGpu(AccumulateOp op,
                                               const GpuTarget &, StringRef,
                                               StringRef kernelName) {
  std::string error = checkAccumulate(op);
  if (!error.empty())
    return op.emitOpError() << error;
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return op.emitOpError()
           << "the GPU lowering needs fmha.accumulate in a module";
  Location loc = op.getLoc();
  OpBuilder b(op);
  auto xType = cast<MemRefType>(op.getX().getType());
  Type elt = xType.getElementType();
  auto flat = MemRefType::get({ShapedType::kDynamic}, elt);
  auto flatF32 = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  gpu::GPUFuncOp func =
      createKernelFunc(op, module, kernelName, "accumulate",
                       {flat, flatF32, b.getIndexType()}, kBlockThreads);
  Block &entry = func.getBody().front();
  OpBuilder kb = OpBuilder::atBlockBegin(&entry);
  buildAccumulateBody(kb, loc, entry, elt);
  gpu::ReturnOp::create(kb, loc);

  // Host side: flat views and the launch.
  IndexMath im{b, loc};
  Value n = im.c(1);
  for (int64_t d = 0; d < xType.getRank(); ++d)
    n = im.mul(n, im.dim(op.getX(), d));
  gpu::KernelDim3 grid{im.ceilDiv(n, im.c(kBlockThreads * kVector)), im.c(1),
                       im.c(1)};
  gpu::KernelDim3 block{im.c(kBlockThreads), im.c(1), im.c(1)};
  Value shared = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  gpu::LaunchFuncOp::create(b, loc, func, grid, block, shared,
                            ValueRange{collapseToRank1(b, loc, op.getX()),
                                       collapseToRank1(b, loc, op.getAcc()),
                                       n});
  op.erase();
  return success();
}
