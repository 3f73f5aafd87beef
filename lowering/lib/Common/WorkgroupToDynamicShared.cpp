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

#include "GpuKernelUtils.h"
#include "TileLayouts.h"
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
using mlir::fmha::kSwizzleAlign;

/// The ops of `entry` (by position) from the first to the last that holds a
/// use of `buffer`; nullopt when it has none.
std::optional<std::pair<int64_t, int64_t>>
span(Block &entry, Value buffer,
     const DenseMap<Operation *, int64_t> &position) {
  std::optional<std::pair<int64_t, int64_t>> out;
  for (Operation *user : buffer.getUsers()) {
    Operation *top = entry.findAncestorOpInBlock(*user);
    if (!top)
      continue;
    int64_t i = position.lookup(top);
    out = out ? std::pair(std::min(out->first, i), std::max(out->second, i))
              : std::pair(i, i);
  }
  return out;
}

/// Replaces the workgroup attributions of `func` by views of its dynamic
/// workgroup memory; returns the bytes it needs. Two buffers share bytes
/// when every use of one comes before every use of the other with a
/// barrier of the whole workgroup between them (the kv loops that run one
/// after the other: sinks, then the window), else each has its own.
FailureOr<int64_t> toDynamic(gpu::GPUFuncOp func) {
  ArrayRef<BlockArgument> attributions = func.getWorkgroupAttributions();
  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  SmallVector<int64_t> barriers;
  for (auto [i, op] : llvm::enumerate(body)) {
    position[&op] = i;
    if (isa<gpu::BarrierOp>(op))
      barriers.push_back(i);
  }
  // Whether buffers used over spans `a` and `b` may share bytes.
  auto apart = [&](std::optional<std::pair<int64_t, int64_t>> a,
                   std::optional<std::pair<int64_t, int64_t>> b) {
    if (!a || !b)
      return !a || !b;
    if (a->first > b->first)
      std::swap(a, b);
    return llvm::any_of(
        barriers, [&](int64_t i) { return i > a->second && i < b->first; });
  };
  int64_t size = 0, baseAlign = kAlign;
  SmallVector<int64_t> offsets, sizes;
  SmallVector<std::optional<std::pair<int64_t, int64_t>>> spans;
  for (BlockArgument arg : attributions) {
    auto type = cast<MemRefType>(arg.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat())
      return func.emitOpError()
             << "fmha-workgroup-to-dynamic-shared: the workgroup attribution "
             << type
             << " is not a static shape of integers or floats with an "
                "identity layout";
    // A buffer in the 128-byte swizzle starts on a 1024-byte boundary of
    // the shared address space (its 8-row atoms are the warpgroup
    // descriptors' units).
    const int64_t align =
        mlir::fmha::workgroupSwizzle(arg) ? kSwizzleAlign : kAlign;
    baseAlign = std::max(baseAlign, align);
    const int64_t bytes = llvm::alignTo(
        type.getNumElements() * type.getElementTypeBitWidth() / 8, kAlign);
    spans.push_back(span(body, arg, position));
    // The lowest offset clear of every placed buffer it may not share with.
    int64_t offset = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t j = 0; j < offsets.size(); ++j)
        if (!apart(spans.back(), spans[j]) && offset < offsets[j] + sizes[j] &&
            offsets[j] < offset + bytes) {
          offset = llvm::alignTo(offsets[j] + sizes[j], align);
          moved = true;
        }
    }
    offsets.push_back(offset);
    sizes.push_back(bytes);
    size = std::max(size, offset + bytes);
  }
  // The dynamic memory's start is only known to be 16-byte aligned: the
  // views start past it at the first multiple of baseAlign (the launch
  // reserves the slack).
  if (baseAlign > kAlign)
    size += baseAlign;
  int64_t offset = size;
  MLIRContext *ctx = func.getContext();
  Block &entry = body;
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = func.getLoc();
  auto workgroup = gpu::AddressSpaceAttr::get(
      ctx, gpu::GPUDialect::getWorkgroupAddressSpace());
  auto rawType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                 MemRefLayoutAttrInterface(), workgroup);
  Value raw = gpu::DynamicSharedMemoryOp::create(b, loc, rawType);
  llvm::DenseMap<Attribute, Value> bySpace;
  bySpace[workgroup] = raw;
  Value pad;
  if (baseAlign > kAlign)
    pad = mlir::fmha::alignWorkgroup(b, loc, raw, baseAlign).pad;
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
    if (pad)
      shift = arith::AddIOp::create(b, loc, pad, shift);
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
