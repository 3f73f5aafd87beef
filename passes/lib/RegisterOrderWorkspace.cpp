//===- RegisterOrderWorkspace.cpp - A workspace's tiles in register order -===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-register-order-workspace: the backward's f32 dQ accumulator (the
// launch manifest's workspace "dq_accum", [B, H, q tiles x bm, D]) takes
// atomic adds of a tile held in an accumulator's layout (the C of the dK/dV
// loop's scale dS K) and is read back once per q tile to be rounded into
// dq. Row-major, a warp's add of one register touches 8 rows (mma.sync's
// and wgmma's C) or needs the tile converted through workgroup memory
// first (fmha-assign-layouts gives the add the line layout). Any order of
// a tile's bm x D floats within its (contiguous) place serves, as long as
// the adds and the read agree: this pass stores each tile in the register
// order of the adds' layout L (fmha::registerOrder: row w R + r of a
// (registers x warps) x lanes tile holds register r of the lanes of warp
// w), the order the builder's kernels keep their accumulator in:
//
//   %p = fmha.pack_tile %acc {order = #L}          (no data movement)
//   fmha.atomic_add %p, %packed_view               (one 128-byte line a
//                                                   register of a warp)
//   ...
//   %t = tensor.extract_slice %packed[...]         (the tile in register
//   %m = fmha.convert_layout %t -> #M               order, read in M =
//   %x = fmha.unpack_tile %m {order = #L} -> #X     toRegisterOrder(L, X))
//
// where X is the layout the reader asked for: its threads read whole
// lines of the buffer and hold the same elements of the tile as before.
// The buffer is the same bytes, as [B, H, q tiles, R x W,
// lanes] (allocated so: the manifest's workspace keeps its bytes), the
// zeroing of a tile a pack_tile of the zeros in their own layout.
// A workspace whose uses are not these, or whose adds hold different
// layouts, is left row-major.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Support/LinearLayout.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAREGISTERORDERWORKSPACEPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// The layout of a tensor tile, if it has one.
LayoutAttr layoutOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? dyn_cast_or_null<LayoutAttr>(type.getEncoding()) : nullptr;
}

/// A tile of the workspace: [b, h, r0, 0] with sizes [1, 1, rows, cols]
/// and unit strides (a memref.subview or a tensor.extract_slice).
bool isWholeTile(OffsetSizeAndStrideOpInterface op, int64_t rows,
                 int64_t cols) {
  SmallVector<OpFoldResult> sizes = op.getMixedSizes();
  SmallVector<OpFoldResult> offsets = op.getMixedOffsets();
  return sizes.size() == 4 && isConstantIntValue(sizes[0], 1) &&
         isConstantIntValue(sizes[1], 1) &&
         isConstantIntValue(sizes[2], rows) &&
         isConstantIntValue(sizes[3], cols) &&
         isConstantIntValue(offsets[3], 0) &&
         llvm::all_of(op.getMixedStrides(),
                      [](OpFoldResult s) { return isConstantIntValue(s, 1); });
}

struct Workspace {
  memref::AllocOp alloc;
  int64_t rows = 0, cols = 0;
  LayoutAttr order;
  SmallVector<AtomicAddOp> adds;
  SmallVector<TileStoreOp> stores;
  SmallVector<bufferization::ToTensorOp> reads;
  SmallVector<memref::DeallocOp> deallocs;
};

/// The workspace's adds and reads in the form above, or failure (left
/// row-major).
FailureOr<Workspace> analyze(memref::AllocOp alloc) {
  Workspace w{alloc};
  MemRefType type = alloc.getType();
  if (type.getRank() != 4 || !type.getElementType().isF32() ||
      ShapedType::isDynamic(type.getDimSize(3)) ||
      !type.getLayout().isIdentity())
    return failure();
  w.cols = type.getDimSize(3);
  for (Operation *user : alloc->getUsers()) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      w.deallocs.push_back(dealloc);
      continue;
    }
    if (auto read = dyn_cast<bufferization::ToTensorOp>(user)) {
      w.reads.push_back(read);
      continue;
    }
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view)
      return failure();
    for (Operation *viewUser : view->getUsers()) {
      if (auto store = dyn_cast<TileStoreOp>(viewUser)) {
        // The zeroing of a whole tile: in any order, from any layout that
        // holds each element once.
        LayoutAttr l = layoutOf(store->getOperand(0));
        if (store->getNumOperands() != 2 ||
            store->getOperand(1) != view.getResult() || !l ||
            l.getLayout().getCopies() != 1)
          return failure();
        w.stores.push_back(store);
        continue;
      }
      auto add = dyn_cast<AtomicAddOp>(viewUser);
      if (!add || add.getDest() != view.getResult())
        return failure();
      Value value = add.getValue();
      if (auto convert = value.getDefiningOp<ConvertLayoutOp>())
        value = convert.getSource();
      LayoutAttr l = layoutOf(value);
      if (!l || (w.order && w.order != l) || l.getLayout().getCopies() != 1)
        return failure();
      w.order = l;
      w.adds.push_back(add);
    }
  }
  if (!w.order)
    return failure();
  w.rows = w.order.getLayout().getRows();
  if (w.order.getLayout().getCols() != w.cols)
    return failure();
  for (AtomicAddOp add : w.adds)
    if (!isWholeTile(add.getDest().getDefiningOp<memref::SubViewOp>(), w.rows,
                     w.cols))
      return failure();
  for (TileStoreOp store : w.stores)
    if (!isWholeTile(store->getOperand(1).getDefiningOp<memref::SubViewOp>(),
                     w.rows, w.cols))
      return failure();
  for (bufferization::ToTensorOp read : w.reads)
    for (Operation *user : read->getUsers()) {
      auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!slice || !isWholeTile(slice, w.rows, w.cols) ||
          slice.getType().getRank() != 2)
        return failure();
      for (Operation *sliceUser : slice->getUsers()) {
        auto convert = dyn_cast<ConvertLayoutOp>(sliceUser);
        if (!convert || !layoutOf(convert.getResult()))
          return failure();
      }
    }
  return w;
}

/// The number of `rows`-row tiles `size` rows make: x where size is
/// x * rows (the tile pass's q tiles times bm), else size / rows.
Value tilesOf(OpBuilder &b, Location loc, Value size, int64_t rows) {
  if (auto mul = size.getDefiningOp<arith::MulIOp>())
    for (int i = 0; i < 2; ++i)
      if (isConstantIntValue(mul->getOperand(1 - i), rows))
        return mul->getOperand(i);
  return arith::DivUIOp::create(b, loc, size,
                                arith::ConstantIndexOp::create(b, loc, rows));
}

/// The offsets of the packed tile of the workspace's tile at `offsets`
/// ([b, h, r0, 0]): [b, h, r0 / rows, 0, 0].
SmallVector<OpFoldResult> packedOffsets(OpBuilder &b, Location loc,
                                        ArrayRef<OpFoldResult> offsets,
                                        int64_t rows) {
  Value r0 = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
  return {offsets[0], offsets[1], tilesOf(b, loc, r0, rows), b.getIndexAttr(0),
          b.getIndexAttr(0)};
}

void rewrite(Workspace &w) {
  memref::AllocOp alloc = w.alloc;
  Location loc = alloc.getLoc();
  MLIRContext *ctx = alloc.getContext();
  const ::fmha::LinearLayout &order = w.order.getLayout();
  const int64_t packedRows = order.getNumRegisters() * order.getNumWarps();
  const int64_t lanes = order.getNumLanes();
  auto packedLayout = LayoutAttr::get(ctx, ::fmha::registerOrder(order));

  // [B, H, T x rows, cols] allocated as [B, H, T, packed rows, lanes]: the
  // same bytes (the manifest's workspace keeps its size), each tile's
  // place the same run.
  OpBuilder b(alloc);
  MemRefType type = alloc.getType();
  SmallVector<Value> dynamic;
  auto sizes4 = alloc.getDynamicSizes();
  size_t next = 0;
  if (type.isDynamicDim(0))
    dynamic.push_back(sizes4[next++]);
  if (type.isDynamicDim(2))
    dynamic.push_back(tilesOf(b, loc, sizes4[next++], w.rows));
  auto packedType =
      MemRefType::get({type.getDimSize(0), type.getDimSize(1),
                       type.isDynamicDim(2) ? ShapedType::kDynamic
                                            : type.getDimSize(2) / w.rows,
                       packedRows, lanes},
                      type.getElementType());
  auto packedAlloc = memref::AllocOp::create(b, loc, packedType, dynamic,
                                             alloc.getAlignmentAttr());
  packedAlloc->setAttr("fmha.workspace", alloc->getAttr("fmha.workspace"));
  Value packed = packedAlloc.getResult();
  const SmallVector<OpFoldResult> sizes = {
      b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1),
      b.getIndexAttr(packedRows), b.getIndexAttr(lanes)};
  const SmallVector<OpFoldResult> strides(5, b.getIndexAttr(1));
  auto packedTileType = [&](LayoutAttr l) {
    return RankedTensorType::get(
        {packedRows, lanes}, type.getElementType(),
        LayoutAttr::get(ctx, ::fmha::registerOrder(l.getLayout())));
  };

  // The tiles' views: each a tile of the packed buffer, the adds' tiles in
  // their order's registers, the zeroing tiles in theirs.
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view)
      continue;
    b.setInsertionPoint(view);
    Location at = view.getLoc();
    SmallVector<OpFoldResult> offsets =
        packedOffsets(b, at, view.getMixedOffsets(), w.rows);
    auto destType =
        cast<MemRefType>(memref::SubViewOp::inferRankReducedResultType(
            {packedRows, lanes}, packedType, offsets, sizes, strides));
    Value dest = memref::SubViewOp::create(b, at, destType, packed, offsets,
                                           sizes, strides);
    for (Operation *viewUser : llvm::make_early_inc_range(view->getUsers())) {
      b.setInsertionPoint(viewUser);
      if (auto add = dyn_cast<AtomicAddOp>(viewUser)) {
        Value value = add.getValue();
        auto convert = value.getDefiningOp<ConvertLayoutOp>();
        if (convert)
          value = convert.getSource();
        Value tile = PackTileOp::create(
            b, add.getLoc(), packedTileType(w.order), value, w.order);
        AtomicAddOp::create(b, add.getLoc(), tile, dest);
        add.erase();
        if (convert && convert->use_empty())
          convert.erase();
        continue;
      }
      auto store = cast<TileStoreOp>(viewUser);
      Value value = store->getOperand(0);
      LayoutAttr l = layoutOf(value);
      Value tile =
          PackTileOp::create(b, store.getLoc(), packedTileType(l), value, l);
      TileStoreOp::create(b, store.getLoc(), TypeRange{}, tile, dest);
      store.erase();
    }
    view.erase();
  }
  for (memref::DeallocOp dealloc : w.deallocs) {
    b.setInsertionPoint(dealloc);
    memref::DeallocOp::create(b, dealloc.getLoc(), packed);
    dealloc.erase();
  }

  // The reads: each tile in register order, held by the reader's threads
  // so that unpacked they hold what they asked for.
  for (bufferization::ToTensorOp read : w.reads) {
    b.setInsertionPoint(read);
    Value values = bufferization::ToTensorOp::create(
        b, read.getLoc(),
        RankedTensorType::get(packedType.getShape(), type.getElementType()),
        packed, read.getRestrict(), read.getWritable());
    for (Operation *user : llvm::make_early_inc_range(read->getUsers())) {
      auto slice = cast<tensor::ExtractSliceOp>(user);
      b.setInsertionPoint(slice);
      Location at = slice.getLoc();
      Value tile = tensor::ExtractSliceOp::create(
          b, at,
          RankedTensorType::get({packedRows, lanes}, type.getElementType()),
          values, packedOffsets(b, at, slice.getMixedOffsets(), w.rows), sizes,
          strides);
      for (Operation *sliceUser :
           llvm::make_early_inc_range(slice->getUsers())) {
        auto convert = cast<ConvertLayoutOp>(sliceUser);
        b.setInsertionPoint(convert);
        LayoutAttr want = layoutOf(convert.getResult());
        auto reader = LayoutAttr::get(
            ctx, ::fmha::toRegisterOrder(order, want.getLayout()));
        Value held = ConvertLayoutOp::create(
            b, convert.getLoc(),
            RankedTensorType::get({packedRows, lanes}, type.getElementType(),
                                  reader),
            tile);
        Value unpacked = UnpackTileOp::create(b, convert.getLoc(),
                                              convert.getType(), held, w.order);
        convert.replaceAllUsesWith(unpacked);
        convert.erase();
      }
      slice.erase();
    }
    read.erase();
  }
  alloc.erase();
}

struct FmhaRegisterOrderWorkspacePass
    : mlir::fmha::impl::FmhaRegisterOrderWorkspacePassBase<
          FmhaRegisterOrderWorkspacePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation()->walk([&](memref::AllocOp alloc) {
      if (alloc->hasAttr("fmha.workspace"))
        allocs.push_back(alloc);
    });
    for (memref::AllocOp alloc : allocs) {
      FailureOr<Workspace> w = analyze(alloc);
      if (succeeded(w))
        rewrite(*w);
    }
  }
};

} // namespace
