//===- StageTransposedA.cpp - A transposed A operand through workgroup memory
//-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-stage-transposed-a: a warpgroup product (its B read from a buffer in
// the 128-byte swizzle) that reads A transposed from registers, converted
// into the transpose of A's layout and narrowed (the backward's atomic
// dQ += dS K, whose dS^T is a C tile of the dK/dV loop), takes A from a
// workgroup buffer in the same swizzle instead:
//
//   %a = fmha.to_layout %dsT to layout(#at)           (through memory, f32)
//   %h = arith.truncf %a
//   vector.contract {lhs (k, i)} %h, %k, %acc
//
// becomes
//
//   %h = arith.truncf %dsT                            (in dS^T's layout)
//   gpu.barrier                                       (the last readers)
//   vector.transfer_write %h, %buf[0, 0]              (fmha.swizzle = 128)
//   gpu.barrier                                       (the writes visible)
//   %r = vector.transfer_read %buf[0, 0]
//   vector.contract {lhs (k, i)} (fmha.to_layout %r to layout(#at)), %k, %acc
//
// The distribution writes each pair of registers at its swizzled address
// (then fences the writes for the asynchronous proxy) and folds the read
// into the warpgroup product as an M-major A descriptor.
//
//===----------------------------------------------------------------------===//

#include "TileLayouts.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHASTAGETRANSPOSEDAPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// What a product reads transposed from registers: the narrowing and the
/// conversion before it, and the tile converted.
struct TransposedA {
  vector::ContractionOp product;
  arith::TruncFOp narrow;
  ToLayoutOp convert;
};

/// The product's A when it is read transposed from a narrowed conversion
/// and its B from a buffer in the 128-byte swizzle; nothing otherwise.
std::optional<TransposedA> transposedA(vector::ContractionOp product) {
  MLIRContext *ctx = product.getContext();
  AffineExpr i, j, k;
  bindDims(ctx, i, j, k);
  if (product.getIndexingMapsArray()[0] != AffineMap::get(3, 0, {k, i}, ctx))
    return std::nullopt;
  auto narrow = product.getLhs().getDefiningOp<arith::TruncFOp>();
  auto convert =
      narrow ? narrow.getIn().getDefiningOp<ToLayoutOp>() : ToLayoutOp();
  auto bAnchor = product.getRhs().getDefiningOp<ToLayoutOp>();
  auto bRead = bAnchor
                   ? bAnchor.getSource().getDefiningOp<vector::TransferReadOp>()
                   : vector::TransferReadOp();
  auto type = dyn_cast<VectorType>(product.getLhsType());
  if (!convert || !bRead || !workgroupSwizzle(bRead.getBase()) || !type ||
      type.getElementTypeBitWidth() != 16 || type.getDimSize(0) % 8 != 0 ||
      type.getDimSize(1) % 64 != 0)
    return std::nullopt;
  return TransposedA{product, narrow, convert};
}

void stage(gpu::GPUFuncOp func, TransposedA t) {
  Location loc = t.product.getLoc();
  auto type = cast<VectorType>(t.narrow.getType());
  // Warpgroup products are NVIDIA's: workgroup memory is address space 3.
  Value buffer = addSwizzledBuffer(func, type, 3, loc);
  OpBuilder b(t.product);
  Value narrow =
      arith::TruncFOp::create(b, loc, type, t.convert.getSource()).getResult();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
  vector::TransferWriteOp::create(b, loc, narrow, buffer,
                                  ValueRange{zero, zero},
                                  ArrayRef<bool>{true, true});
  gpu::BarrierOp::create(b, loc);
  Value pad =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  Value read = vector::TransferReadOp::create(b, loc, type, buffer,
                                              ValueRange{zero, zero}, pad,
                                              ArrayRef<bool>{true, true});
  t.product.getLhsMutable().assign(
      ToLayoutOp::create(b, loc, type, read, t.convert.getLayoutAttr()));
  if (t.narrow->use_empty())
    t.narrow->erase();
  if (t.convert->use_empty())
    t.convert->erase();
}

struct FmhaStageTransposedAPass
    : mlir::fmha::impl::FmhaStageTransposedAPassBase<FmhaStageTransposedAPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation()->walk([&](gpu::GPUFuncOp func) {
      SmallVector<TransposedA> found;
      func.walk([&](vector::ContractionOp product) {
        if (std::optional<TransposedA> t = transposedA(product))
          found.push_back(*t);
      });
      for (TransposedA t : found)
        stage(func, t);
    });
  }
};

} // namespace
