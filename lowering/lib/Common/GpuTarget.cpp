//===- GpuTarget.cpp - What every GPU target shares -----------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The fragment coordinates, emitted from the matrix instruction's layouts,
// and the defaults of the GpuTarget interface.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// One axis (row or col) of the lane part of a layout's coordinate.
Value emitLaneAxis(IndexMath &im, const std::vector<::fmha::TileCoord> &lanes,
                   Value lane, bool rowAxis, int64_t constant) {
  auto part = [&](::fmha::TileCoord c) { return rowAxis ? c.row : c.col; };
  const int64_t laneBits = lanes.size();
  Value sum;
  int64_t covered = 0; // the axis bits the terms so far may set
  auto combine = [&](Value term, int64_t bits) {
    if (!sum)
      sum = term;
    else if (covered & bits)
      sum = im.b.createOrFold<arith::XOrIOp>(im.loc, sum, term);
    else
      sum = im.add(sum, term);
    covered |= bits;
  };
  for (int64_t bit = 0; bit < laneBits;) {
    int64_t value = part(lanes[bit]);
    if (value == 0) {
      ++bit;
      continue;
    }
    // A run: lane bits bit .. bit + len - 1 set axis bits value .. value <<
    // (len - 1), i.e. ((lane >> bit) % 2^len) * value.
    int64_t len = 1;
    if (llvm::isPowerOf2_64(value))
      while (bit + len < laneBits && part(lanes[bit + len]) == value << len)
        ++len;
    Value term = lane;
    if (bit > 0)
      term = im.div(term, im.c(int64_t(1) << bit));
    if (bit + len < laneBits)
      term = im.rem(term, im.c(int64_t(1) << len));
    if (value != 1)
      term = im.mul(term, im.c(value));
    combine(term, llvm::isPowerOf2_64(value) ? ((int64_t(1) << len) - 1) * value
                                             : value);
    bit += len;
  }
  if (!sum)
    return im.c(constant);
  if (constant == 0)
    return sum;
  if (covered & constant)
    return im.b.createOrFold<arith::XOrIOp>(im.loc, sum, im.c(constant));
  return im.add(sum, im.c(constant));
}

} // namespace

Value mlir::fmha::emitLayoutAxis(OpBuilder &b, Location loc,
                                 const ::fmha::LinearLayout &layout, Value lane,
                                 int64_t reg, bool row) {
  IndexMath im{b, loc};
  ::fmha::TileCoord constant = layout.apply(reg, 0);
  return emitLaneAxis(im, layout.getBases(::fmha::LayoutInput::Lane), lane, row,
                      row ? constant.row : constant.col);
}

FragmentCoord mlir::fmha::emitLayoutCoord(OpBuilder &b, Location loc,
                                          const ::fmha::LinearLayout &layout,
                                          Value lane, int64_t reg) {
  Value row = emitLayoutAxis(b, loc, layout, lane, reg, /*row=*/true);
  Value col = emitLayoutAxis(b, loc, layout, lane, reg, /*row=*/false);
  return {row, col};
}

FragmentCoord GpuTarget::getACoord(OpBuilder &b, Location loc, Value lane,
                                   int64_t e) const {
  return emitLayoutCoord(b, loc, getMma().a, lane, e);
}

FragmentCoord GpuTarget::getBCoord(OpBuilder &b, Location loc, Value lane,
                                   int64_t e) const {
  return emitLayoutCoord(b, loc, getMma().b, lane, e);
}

FragmentCoord GpuTarget::getCCoord(OpBuilder &b, Location loc, Value lane,
                                   int64_t e) const {
  return emitLayoutCoord(b, loc, getMma().c, lane, e);
}

Value mlir::fmha::emitAlignedPointer(OpBuilder &b, Location loc, Value memref,
                                     unsigned indexBitwidth) {
  LowerToLLVMOptions options(b.getContext());
  options.overrideIndexBitwidth(indexBitwidth);
  LLVMTypeConverter converter(b.getContext(), options);
  Value desc = UnrealizedConversionCastOp::create(
                   b, loc, converter.convertType(memref.getType()), memref)
                   .getResult(0);
  return LLVM::ExtractValueOp::create(b, loc, desc, 1);
}

Value mlir::fmha::emitGlobalElementPointer(OpBuilder &b, Location loc,
                                           Value memref, ValueRange indices,
                                           unsigned indexBitwidth) {
  auto type = cast<MemRefType>(memref.getType());
  IndexMath im{b, loc};
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value linear = meta.getOffset();
  for (auto [idx, stride] : llvm::zip(indices, meta.getStrides()))
    linear = im.add(linear, im.mul(idx, stride));
  Value base = emitAlignedPointer(b, loc, memref, indexBitwidth);
  Value element = LLVM::GEPOp::create(
      b, loc, base.getType(), type.getElementType(), base,
      ValueRange{arith::IndexCastOp::create(
          b, loc, b.getIntegerType(indexBitwidth), linear)});
  return LLVM::AddrSpaceCastOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), element);
}

Value GpuTarget::emitExp2(OpBuilder &b, Location loc, Value x) const {
  return math::Exp2Op::create(b, loc, x);
}

Value GpuTarget::emitLog2(OpBuilder &b, Location loc, Value x) const {
  return math::Log2Op::create(b, loc, x);
}

Value GpuTarget::emitTanh(OpBuilder &b, Location loc, Value x) const {
  auto c = [&](double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  Value e = emitExp2(
      b, loc, arith::MulFOp::create(b, loc, x, c(2.0 * 1.4426950408889634)));
  Value q = arith::DivFOp::create(b, loc, c(2.0),
                                  arith::AddFOp::create(b, loc, e, c(1.0)));
  return arith::SubFOp::create(b, loc, c(1.0), q);
}

void GpuTarget::emitWorkspaceAtomicAdd(OpBuilder &b, Location loc, Value value,
                                       Value memref, ValueRange indices) const {
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, value, memref,
                              indices);
}

void GpuTarget::emitCopyAsync(OpBuilder &b, Location loc, Value src,
                              ValueRange srcIndices, Value dst,
                              ValueRange dstIndices, int64_t elements,
                              Value valid) const {
  auto type = VectorType::get({elements},
                              cast<MemRefType>(src.getType()).getElementType());
  auto branch = scf::IfOp::create(b, loc, TypeRange{type}, valid,
                                  /*withElseRegion=*/true);
  OpBuilder then = branch.getThenBodyBuilder();
  scf::YieldOp::create(
      then, loc,
      ValueRange{vector::LoadOp::create(then, loc, type, src, srcIndices)});
  OpBuilder otherwise = branch.getElseBodyBuilder();
  scf::YieldOp::create(otherwise, loc,
                       ValueRange{arith::ConstantOp::create(
                           otherwise, loc, otherwise.getZeroAttr(type))});
  vector::StoreOp::create(b, loc, branch.getResult(0), dst, dstIndices);
}

SmallVector<Value> GpuTarget::emitMatrixLoad(OpBuilder &, Location, Value,
                                             ValueRange, int64_t, bool) const {
  llvm_unreachable("the target has no matrix load (getMatrixLoads)");
}

std::string GpuTarget::checkWarpgroupMma(StringRef chip) const {
  return "mma=wgmma is not available on the " + getName().str() +
         " target (no warpgroup matrix instruction)";
}

Value GpuTarget::emitWarpgroupDescriptor(OpBuilder &, Location, Value, int64_t,
                                         int64_t) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

SmallVector<Value> GpuTarget::emitWarpgroupMma(OpBuilder &, Location, Type,
                                               int64_t, Value, bool, Value,
                                               bool, ArrayRef<Value>) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

void GpuTarget::emitWarpgroupFence(OpBuilder &, Location) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

void GpuTarget::emitWarpgroupCommit(OpBuilder &, Location) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

SmallVector<Value> GpuTarget::emitWarpgroupWait(OpBuilder &, Location, int64_t,
                                                ArrayRef<Value>) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

void GpuTarget::emitWarpgroupOperandFence(OpBuilder &, Location) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

SmallVector<Value> GpuTarget::emitWarpgroupMmaRegisterA(OpBuilder &, Location,
                                                        Type, int64_t,
                                                        ArrayRef<Value>, Value,
                                                        bool,
                                                        ArrayRef<Value>) const {
  llvm_unreachable("the target has no warpgroup MMA (checkWarpgroupMma)");
}

SmallVector<Value> GpuTarget::emitLoadAFragment(OpBuilder &b, Location loc,
                                                Value tile, Value lane,
                                                Value row0, Value col0) const {
  IndexMath im{b, loc};
  auto tileType = cast<MemRefType>(tile.getType());
  auto pair = VectorType::get({2}, tileType.getElementType());
  SmallVector<Value> regs;
  for (int64_t e = 0; e < getNumAElements(); e += 2) {
    FragmentCoord at = getACoord(b, loc, lane, e);
    regs.push_back(vector::LoadOp::create(
        b, loc, pair, tile,
        ValueRange{im.add(row0, at.row), im.add(col0, at.col)},
        /*nontemporal=*/false, llvm::MaybeAlign(4)));
  }
  return regs;
}

SmallVector<Value>
GpuTarget::emitLoadATransposedFragment(OpBuilder &b, Location loc, Value tile,
                                       Value lane, Value row0,
                                       Value col0) const {
  IndexMath im{b, loc};
  auto tileType = cast<MemRefType>(tile.getType());
  auto pair = VectorType::get({2}, tileType.getElementType());
  SmallVector<Value> regs;
  for (int64_t e = 0; e < getNumAElements(); e += 2) {
    SmallVector<Value> elems;
    for (int64_t h = 0; h < 2; ++h) {
      FragmentCoord at = getACoord(b, loc, lane, e + h);
      elems.push_back(memref::LoadOp::create(
          b, loc, tile,
          ValueRange{im.add(col0, at.col), im.add(row0, at.row)}));
    }
    regs.push_back(vector::FromElementsOp::create(b, loc, pair, elems));
  }
  return regs;
}

std::string GpuTarget::configure(StringRef chip, int64_t matrixSize) {
  if (matrixSize != 0 && matrixSize != getMmaM())
    return "mfma=" + std::to_string(matrixSize) + " is not available on the " +
           getName().str() + " target (its matrix instruction has M = " +
           std::to_string(getMmaM()) + ")";
  return checkChip(chip);
}

std::unique_ptr<GpuTarget> mlir::fmha::createGpuTarget(StringRef name,
                                                       Operation *at) {
  std::unique_ptr<GpuTarget> target = createGpuTarget(name);
  if (!target)
    at->emitError() << "unknown GPU target '" << name
                    << "' (expected nvvm or rocdl)";
  return target;
}

std::unique_ptr<GpuTarget>
mlir::fmha::createGpuTarget(StringRef name, StringRef chip, int64_t matrixSize,
                            Operation *at, StringRef pass) {
  std::unique_ptr<GpuTarget> target = createGpuTarget(name, at);
  if (!target)
    return nullptr;
  std::string error = target->configure(chip, matrixSize);
  if (!error.empty()) {
    at->emitError() << pass << ": " << error;
    return nullptr;
  }
  return target;
}

SmallVector<Operation *> mlir::fmha::gpuFuncsIn(Operation *root) {
  SmallVector<Operation *> funcs;
  root->walk([&](gpu::GPUFuncOp f) { funcs.push_back(f); });
  return funcs;
}
