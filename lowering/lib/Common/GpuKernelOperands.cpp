//===- GpuKernelOperands.cpp - Tensor operands of the GPU kernels ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The kernels of --fmha-lower-to-gpu take each tensor operand as a memref of
// its rank with any offset and strides but a contiguous last axis
// (DESIGN.md section 1, strides): BSHD memory, transposed views and packed
// QKV reach the kernel without a copy. Inside, the kernel reads the operand
// through a rank-1 view of its buffer and the strides, as runtime values.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::fmha;

MemRefType mlir::fmha::stridedKernelType(MemRefType type) {
  // The strides and offset the type knows stay constants of the kernel (an
  // identity layout's row stride is its static head dim: the same kernel as
  // before strides); the others are run-time values.
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  int64_t offset = ShapedType::kDynamic;
  SmallVector<int64_t> known;
  int64_t knownOffset;
  if (succeeded(type.getStridesAndOffset(known, knownOffset))) {
    strides = known;
    offset = knownOffset;
  }
  strides.back() = 1;
  auto layout = StridedLayoutAttr::get(type.getContext(), offset, strides);
  return MemRefType::get(type.getShape(), type.getElementType(), layout,
                         type.getMemorySpace());
}

bool mlir::fmha::hasContiguousRows(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

Value mlir::fmha::castToKernelType(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  MemRefType kernelType = stridedKernelType(type);
  if (type == kernelType)
    return memref;
  return memref::CastOp::create(b, loc, kernelType, memref);
}

GlobalTensor GlobalTensor::open(OpBuilder &b, Location loc, Value arg) {
  auto type = cast<MemRefType>(arg.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, arg);
  IndexMath im{b, loc};
  GlobalTensor t;
  t.offset = meta.getOffset();
  // The view spans the elements the operand may touch (the kernel's loads
  // and stores index it; the size itself is not read).
  Value span = im.add(t.offset, im.c(1));
  for (int64_t i = 0; i < type.getRank(); ++i) {
    t.strides.push_back(meta.getStrides()[i]);
    span = im.add(span, im.mul(im.sub(meta.getSizes()[i], im.c(1)),
                               meta.getStrides()[i]));
  }
  auto flatType =
      MemRefType::get({ShapedType::kDynamic}, type.getElementType(),
                      MemRefLayoutAttrInterface(), type.getMemorySpace());
  t.flat = memref::ReinterpretCastOp::create(
      b, loc, flatType, meta.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
      ArrayRef<OpFoldResult>{span}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  return t;
}

Value GlobalTensor::at(OpBuilder &b, Location loc,
                       ArrayRef<Value> outer) const {
  IndexMath im{b, loc};
  Value index = offset;
  for (auto [i, v] : llvm::enumerate(outer))
    index = im.add(index, im.mul(v, strides[i]));
  return index;
}
