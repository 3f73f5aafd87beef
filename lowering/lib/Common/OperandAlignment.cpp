//===- OperandAlignment.cpp - The row alignment kernels need --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-operand-alignment: each launch learns, per operand, the bytes of
// the widest vector its kernel reads or writes that operand's rows with
// (Passes.td says why). For a kernel whose K rows move in 16-byte copies:
//
//   gpu.func @k(%q: memref<?x64xbf16, strided<[?, 1], offset: ?>>, ...) {
//     %s = memref.subview %q[...]
//     nvgpu.device_async_copy %s[%i, %j], %buf[...], 8 : ... to ...
//   ...
//   gpu.launch_func @m::@k ... args(%a : ..., %n : index)
//
// the launch gets `fmha.operand_align = array<i64: 16, 0>`.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAOPERANDALIGNMENTPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

/// The bytes `op` moves in one access of memref `base`, and that memref;
/// nullopt for an op that is no vector access.
std::optional<std::pair<Value, int64_t>> vectorAccess(Operation *op) {
  auto bytesOf = [](VectorType type) {
    return type.getNumElements() * type.getElementTypeBitWidth() / 8;
  };
  if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op)) {
    Type elt = copy.getSrc().getType().getElementType();
    return std::pair(copy.getSrc(), copy.getDstElements().getZExtValue() *
                                        elt.getIntOrFloatBitWidth() / 8);
  }
  if (auto load = dyn_cast<vector::LoadOp>(op))
    return std::pair(load.getBase(), bytesOf(load.getVectorType()));
  if (auto store = dyn_cast<vector::StoreOp>(op))
    return std::pair(store.getBase(), bytesOf(store.getVectorType()));
  if (auto load = dyn_cast<vector::MaskedLoadOp>(op))
    return std::pair(load.getBase(), bytesOf(load.getVectorType()));
  if (auto store = dyn_cast<vector::MaskedStoreOp>(op))
    return std::pair(store.getBase(), bytesOf(store.getVectorType()));
  if (auto read = dyn_cast<vector::TransferReadOp>(op))
    return std::pair(read.getBase(), bytesOf(read.getVectorType()));
  if (auto write = dyn_cast<vector::TransferWriteOp>(op))
    return std::pair(write.getBase(), bytesOf(write.getVectorType()));
  return std::nullopt;
}

/// The argument of `func` that `memref` is, or is a view of; null if none.
BlockArgument argumentOf(gpu::GPUFuncOp func, Value memref) {
  while (memref) {
    if (auto arg = dyn_cast<BlockArgument>(memref))
      return arg.getOwner() == &func.getBody().front() ? arg : BlockArgument();
    auto view = memref.getDefiningOp<ViewLikeOpInterface>();
    memref = view ? view.getViewSource() : Value();
  }
  return {};
}

/// Per argument of `func`: the bytes of its widest vector access where that
/// is wider than an element, else 0.
SmallVector<int64_t> requiredAlignment(gpu::GPUFuncOp func) {
  SmallVector<int64_t> align(func.getNumArguments(), 0);
  func.walk([&](Operation *op) {
    std::optional<std::pair<Value, int64_t>> access = vectorAccess(op);
    if (!access)
      return;
    BlockArgument arg = argumentOf(func, access->first);
    if (!arg)
      return;
    auto type = cast<MemRefType>(arg.getType());
    if (access->second * 8 > type.getElementTypeBitWidth())
      align[arg.getArgNumber()] =
          std::max(align[arg.getArgNumber()], access->second);
  });
  return align;
}

struct FmhaOperandAlignmentPass
    : mlir::fmha::impl::FmhaOperandAlignmentPassBase<FmhaOperandAlignmentPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The alignment each kernel needs, by its symbol @module::@func.
    llvm::DenseMap<Attribute, SmallVector<int64_t>> needs;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
        SmallVector<int64_t> align = requiredAlignment(func);
        if (llvm::any_of(align, [](int64_t a) { return a != 0; }))
          needs[SymbolRefAttr::get(
              gpuModule.getNameAttr(),
              {FlatSymbolRefAttr::get(func.getNameAttr())})] = align;
      }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = needs.find(launch.getKernel());
      if (it == needs.end() ||
          it->second.size() != launch.getKernelOperands().size())
        return;
      SmallVector<int64_t> align = it->second;
      if (auto given = launch->getAttrOfType<DenseI64ArrayAttr>(
              mlir::fmha::kOperandAlignAttrName))
        for (auto [a, g] : llvm::zip(align, given.asArrayRef()))
          a = std::max(a, g);
      launch->setAttr(mlir::fmha::kOperandAlignAttrName,
                      DenseI64ArrayAttr::get(launch.getContext(), align));
    });
  }
};

} // namespace
