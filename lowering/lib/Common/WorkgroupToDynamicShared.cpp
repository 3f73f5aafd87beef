//===- WorkgroupToDynamicShared.cpp - Workgroup buffers, dynamic memory ---===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-workgroup-to-dynamic-shared: a kernel's workgroup attributions
// become views of its dynamic workgroup memory, and its launches carry the
// size (Passes.td says why: static workgroup memory stops at 48 KB).
//
//   gpu.func @k(...) workgroup(%a : memref<64x136xbf16, 3>) kernel {
// becomes
//   gpu.func @k(...) kernel {
//     %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<...>>
//     %bytes = memref.memory_space_cast %raw : ... to memref<?xi8, 3>
//     %a = memref.view %bytes[%c0][] : memref<?xi8, 3> to memref<64x136xbf16,
//     3>
// and each `gpu.launch_func @m::@k` gets `dynamic_shared_memory_size`.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAWORKGROUPTODYNAMICSHAREDPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

constexpr int64_t kAlign = 128;

/// Replaces the workgroup attributions of `func` by views of its dynamic
/// workgroup memory; returns the bytes it needs.
FailureOr<int64_t> toDynamic(gpu::GPUFuncOp func) {
  ArrayRef<BlockArgument> attributions = func.getWorkgroupAttributions();
  int64_t offset = 0;
  SmallVector<int64_t> offsets;
  for (BlockArgument arg : attributions) {
    auto type = cast<MemRefType>(arg.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat())
      return func.emitOpError()
             << "fmha-workgroup-to-dynamic-shared: the workgroup attribution "
             << type
             << " is not a static shape of integers or floats with an "
                "identity layout";
    offsets.push_back(offset);
    const int64_t bytes =
        type.getNumElements() * type.getElementTypeBitWidth() / 8;
    offset += llvm::alignTo(bytes, kAlign);
  }
  MLIRContext *ctx = func.getContext();
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = func.getLoc();
  auto workgroup = gpu::AddressSpaceAttr::get(
      ctx, gpu::GPUDialect::getWorkgroupAddressSpace());
  auto rawType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                 MemRefLayoutAttrInterface(), workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(b, loc, rawType);
  llvm::DenseMap<Attribute, Value> bySpace;
  bySpace[workgroup] = raw;
  for (auto [arg, at] : llvm::zip(attributions, offsets)) {
    auto type = cast<MemRefType>(arg.getType());
    Value &bytes = bySpace[type.getMemorySpace()];
    if (!bytes)
      bytes = memref::MemorySpaceCastOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace()),
          raw);
    Value shift = arith::ConstantIndexOp::create(b, loc, at);
    Value view =
        memref::ViewOp::create(b, loc, type, bytes, shift, ValueRange{});
    Value(arg).replaceAllUsesWith(view);
  }
  const unsigned first = func.getFirstWorkgroupAttributionIndex();
  entry.eraseArguments(first, attributions.size());
  func->setAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName(),
                b.getI64IntegerAttr(0));
  return offset;
}

struct FmhaWorkgroupToDynamicSharedPass
    : mlir::fmha::impl::FmhaWorkgroupToDynamicSharedPassBase<
          FmhaWorkgroupToDynamicSharedPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Bytes each kernel needs, by its symbol @module::@func.
    llvm::DenseMap<Attribute, int64_t> bytes;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (func.getNumWorkgroupAttributions() == 0)
          continue;
        FailureOr<int64_t> need = toDynamic(func);
        if (failed(need))
          return signalPassFailure();
        bytes[SymbolRefAttr::get(
            gpuModule.getNameAttr(),
            {FlatSymbolRefAttr::get(func.getNameAttr())})] = *need;
      }
    WalkResult walk = module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = bytes.find(launch.getKernel());
      if (it == bytes.end())
        return WalkResult::advance();
      Value set = launch.getDynamicSharedMemorySize();
      std::optional<int64_t> setTo = set ? getConstantIntValue(set) : 0;
      if (setTo != 0) {
        launch.emitOpError()
            << "fmha-workgroup-to-dynamic-shared: the launch already sets a "
               "dynamic workgroup memory size other than 0; its kernel's "
               "workgroup "
               "attributions cannot be added to it";
        return WalkResult::interrupt();
      }
      OpBuilder b(launch);
      Value size = arith::ConstantIntOp::create(b, launch.getLoc(),
                                                b.getI32Type(), it->second);
      launch.getDynamicSharedMemorySizeMutable().assign(size);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
