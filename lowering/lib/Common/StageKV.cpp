//===- StageKV.cpp - B operands of the kv loop through workgroup memory ---===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-stage-kv: in each gpu.func of vector tiles (before
// --fmha-distribute-tiles), the tiles a loop iteration reads from global
// memory only to feed its products as B operands (the k and v tiles of the
// kv loop, which every warp multiplies by; the backward's q and dO in its
// dK/dV loop, each B of two products in two layouts) are copied once into
// workgroup memory by all the threads, asynchronously, and the products read
// them from there:
//
//   %k = vector.transfer_read %global[%r, %c]    (gone)
//   ... the other tiles of the block ...
//   gpu.barrier                                  (the last iteration's
//   fmha.copy_async %global[%r, %c] to %kbuf[0, 0] reads are done; copy
//       layout(#copy)                             layout: 16 bytes a thread)
//   fmha.copy_wait pending(0)
//   gpu.barrier                                  (the copies are visible)
//   %ks = vector.transfer_read %kbuf[0, 0]        (what the products take)
//
// One wait and pair of barriers for the tiles of a block. The buffers are
// workgroup attributions of the kernel, each row padded by 16 bytes so that
// the lanes of a fragment read (8 rows, 4 columns) fall in distinct banks.
// Global memory is read once per workgroup instead of once per warp, and
// into workgroup memory without passing through registers;
// --fmha-pipeline-copies then overlaps the copies with the products.
//
//===----------------------------------------------------------------------===//

#include "TileLayouts.h"
#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHASTAGEKVPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// A tile copyable into workgroup memory (isCopyableTile) read only to be
/// the B operand of products of the same iteration, in one layout or in
/// several (each layout its own read of the buffer).
bool isStageable(vector::TransferReadOp read) {
  return isCopyableTile(read) && feedsProductsAsB(read, /*oneLayout=*/false);
}

} // namespace

FailureOr<int64_t> mlir::fmha::workgroupWarps(gpu::GPUFuncOp func,
                                              const GpuTarget &target,
                                              StringRef pass) {
  const int64_t lanes = target.getWarpSize();
  std::optional<ArrayRef<int32_t>> block = func.getKnownBlockSize();
  if (!block || (*block)[1] != 1 || (*block)[2] != 1 ||
      (*block)[0] % lanes != 0)
    return func.emitOpError()
           << pass << ": needs a 1-D known_block_size of whole warps (" << lanes
           << " lanes) to share the copies among the threads";
  return (*block)[0] / lanes;
}

LogicalResult mlir::fmha::forEachGpuFunc(
    Operation *root, StringRef target, StringRef chip, int64_t mfma,
    StringRef pass,
    function_ref<LogicalResult(gpu::GPUFuncOp, const GpuTarget &)> fn) {
  std::unique_ptr<GpuTarget> gpuTarget =
      createGpuTarget(target, chip, mfma, root, pass);
  if (!gpuTarget)
    return failure();
  for (Operation *f : gpuFuncsIn(root))
    if (failed(fn(cast<gpu::GPUFuncOp>(f), *gpuTarget)))
      return failure();
  return success();
}

bool mlir::fmha::isCopyableTile(vector::TransferReadOp read) {
  auto memory = dyn_cast<MemRefType>(read.getBase().getType());
  const bool zeroPadding = matchPattern(read.getPadding(), m_AnyZeroFloat()) ||
                           matchPattern(read.getPadding(), m_Zero());
  Attribute space = memory ? memory.getMemorySpace() : Attribute();
  return read.getVectorType().getRank() == 2 && !read.getMask() && memory &&
         zeroPadding && memory.getRank() >= 2 &&
         !(space && gpu::GPUDialect::isWorkgroupMemoryAddressSpace(space)) &&
         read.getPermutationMap().isMinorIdentity();
}

FailureOr<LayoutAttr> mlir::fmha::copyLayoutOf(Operation *at, VectorType type,
                                               const GpuTarget &target,
                                               int64_t warps, StringRef pass) {
  ::fmha::LinearLayout copy =
      ::fmha::copyLayout(type.getDimSize(0), type.getDimSize(1),
                         type.getElementType().getIntOrFloatBitWidth(),
                         target.getWarpSize(), warps);
  if (!copy.validate().empty())
    return at->emitOpError() << pass << ": no copy layout for a " << type
                             << " tile (" << copy.validate() << ")";
  return LayoutAttr::get(at->getContext(), copy);
}

FailureOr<std::pair<LayoutAttr, Value>>
mlir::fmha::addStagingBuffer(gpu::GPUFuncOp func, Operation *at,
                             VectorType type, const GpuTarget &target,
                             int64_t warps, StringRef pass, int64_t swizzle) {
  Type element = type.getElementType();
  const int64_t bits = element.getIntOrFloatBitWidth();
  if (swizzle != 0 && swizzle != kSwizzleBytes)
    return at->emitOpError() << pass << ": swizzle must be 0 or "
                             << kSwizzleBytes << ", got " << swizzle;
  if (swizzle && (bits != 16 || type.getDimSize(1) % 64 != 0 ||
                  type.getDimSize(0) % 8 != 0))
    return at->emitOpError()
           << pass << ": the 128-byte swizzle takes tiles of 16-bit elements, "
           << "rows a multiple of 8 and columns of 64, not " << type;
  FailureOr<LayoutAttr> copy = copyLayoutOf(at, type, target, warps, pass);
  if (failed(copy))
    return failure();
  if (swizzle)
    return std::pair(*copy, addSwizzledBuffer(func, type,
                                              target.getWorkgroupAddressSpace(),
                                              at->getLoc()));
  MLIRContext *ctx = func.getContext();
  Attribute workgroup = IntegerAttr::get(IntegerType::get(ctx, 64),
                                         target.getWorkgroupAddressSpace());
  auto bufferType =
      MemRefType::get({type.getDimSize(0), type.getDimSize(1) + 128 / bits},
                      element, MemRefLayoutAttrInterface(), workgroup);
  Value buffer = func.addWorkgroupAttribution(bufferType, at->getLoc());
  return std::pair(*copy, buffer);
}

Value mlir::fmha::addSwizzledBuffer(gpu::GPUFuncOp func, VectorType type,
                                    unsigned space, Location loc) {
  MLIRContext *ctx = func.getContext();
  auto i64 = IntegerType::get(ctx, 64);
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType(),
                                    MemRefLayoutAttrInterface(),
                                    IntegerAttr::get(i64, space));
  Value buffer = func.addWorkgroupAttribution(bufferType, loc);
  func.setWorkgroupAttributionAttr(func.getNumWorkgroupAttributions() - 1,
                                   kSwizzleAttrName,
                                   IntegerAttr::get(i64, kSwizzleBytes));
  return buffer;
}

int64_t mlir::fmha::workgroupSwizzle(Value buffer) {
  auto arg = dyn_cast<BlockArgument>(buffer);
  auto func =
      arg ? dyn_cast<gpu::GPUFuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!func || !llvm::is_contained(func.getWorkgroupAttributions(), arg))
    return 0;
  auto attr = dyn_cast_or_null<IntegerAttr>(func.getWorkgroupAttributionAttr(
      arg.getArgNumber() - func.getFirstWorkgroupAttributionIndex(),
      kSwizzleAttrName));
  return attr ? attr.getInt() : 0;
}

Value mlir::fmha::swizzledOffset(OpBuilder &b, Location loc, Value row,
                                 Value col, int64_t rows) {
  IndexMath im{b, loc};
  auto bits = [&](Value v, int64_t shift, int64_t mask) {
    Value s = shift ? arith::ShRUIOp::create(b, loc, v, im.c(shift)) : v;
    return mask ? arith::AndIOp::create(b, loc, s, im.c(mask)).getResult() : s;
  };
  // ((col / 64) rows + row) 64 + ((col / 8) % 8 ^ row % 8) 8 + col % 8.
  Value line = im.add(im.mul(bits(col, 6, 0), im.c(rows)), row);
  Value chunk = arith::XOrIOp::create(b, loc, bits(col, 3, 7), bits(row, 0, 7));
  return im.add(im.add(im.mul(line, im.c(64)), im.mul(chunk, im.c(8))),
                bits(col, 0, 7));
}

namespace {

/// A tile to stage: read whole (`pieces` one read at row 0) or made of reads
/// stacked along its rows (a kv tile over several pages of a paged cache),
/// each copied into its rows of the buffer.
struct StagedTile {
  Value tile;
  SmallVector<std::pair<vector::TransferReadOp, int64_t>> pieces;
};

/// The reads and first rows of a tile made of copyable reads stacked along
/// its rows, `vector.insert_strided_slice` of each (its only use) at (row,
/// 0) into a vector of zeros, covering every row; none where `last` does not
/// end such a chain.
SmallVector<std::pair<vector::TransferReadOp, int64_t>>
stackedReads(vector::InsertStridedSliceOp last) {
  SmallVector<std::pair<vector::TransferReadOp, int64_t>> pieces;
  VectorType type = last.getDestVectorType();
  if (type.getRank() != 2)
    return {};
  Value at = last.getResult();
  while (auto insert = at.getDefiningOp<vector::InsertStridedSliceOp>()) {
    if (at != last.getResult() && !insert->hasOneUse())
      return {};
    auto read =
        insert.getValueToStore().getDefiningOp<vector::TransferReadOp>();
    SmallVector<int64_t> offsets =
        llvm::to_vector(llvm::map_range(insert.getOffsets(), [](Attribute a) {
          return cast<IntegerAttr>(a).getInt();
        }));
    if (!read || !read->hasOneUse() || !isCopyableTile(read) ||
        offsets[1] != 0 ||
        read.getVectorType().getDimSize(1) != type.getDimSize(1))
      return {};
    pieces.insert(pieces.begin(), {read, offsets[0]});
    at = insert.getDest();
  }
  if (!(matchPattern(at, m_AnyZeroFloat()) || matchPattern(at, m_Zero())))
    return {};
  llvm::sort(pieces, [](auto &x, auto &y) { return x.second < y.second; });
  int64_t row = 0;
  for (auto &[read, first] : pieces) {
    if (first != row)
      return {};
    row += read.getVectorType().getDimSize(0);
  }
  if (row != type.getDimSize(0))
    return {};
  return pieces;
}

LogicalResult stage(gpu::GPUFuncOp func, const GpuTarget &target,
                    int64_t swizzle) {
  // Blocks of the tiles to stage, in order, with their tiles in order.
  llvm::MapVector<Block *, SmallVector<StagedTile>> groups;
  func.walk([&](Operation *op) {
    if (auto read = dyn_cast<vector::TransferReadOp>(op)) {
      if (isStageable(read))
        groups[read->getBlock()].push_back({read, {{read, 0}}});
      return;
    }
    auto insert = dyn_cast<vector::InsertStridedSliceOp>(op);
    if (!insert || !feedsProductsAs(insert.getResult(), 1, false))
      return;
    auto pieces = stackedReads(insert);
    if (!pieces.empty())
      groups[insert->getBlock()].push_back({insert.getResult(), pieces});
  });
  if (groups.empty())
    return success();
  FailureOr<int64_t> warps = workgroupWarps(func, target, "fmha-stage-kv");
  if (failed(warps))
    return failure();
  MLIRContext *ctx = func.getContext();
  for (auto &[parent, tiles] : groups) {
    SmallVector<std::pair<LayoutAttr, Value>> copies; // (layout, buffer)
    SmallVector<SmallVector<LayoutAttr>> pieceLayouts;
    for (StagedTile &tile : tiles) {
      Operation *at = tile.tile.getDefiningOp();
      auto type = cast<VectorType>(tile.tile.getType());
      FailureOr<std::pair<LayoutAttr, Value>> copy = addStagingBuffer(
          func, at, type, target, *warps, "fmha-stage-kv", swizzle);
      if (failed(copy))
        return failure();
      copies.push_back(*copy);
      SmallVector<LayoutAttr> &layouts = pieceLayouts.emplace_back();
      for (auto &[read, row] : tile.pieces) {
        if (read.getVectorType() == type) {
          layouts.push_back(copy->first);
          continue;
        }
        FailureOr<LayoutAttr> layout = copyLayoutOf(
            read, read.getVectorType(), target, *warps, "fmha-stage-kv");
        if (failed(layout))
          return failure();
        layouts.push_back(*layout);
      }
    }
    // After the last tile's read: a barrier (the last iteration's reads of
    // the buffers are done), the copies (of a tile of stacked reads, each
    // into its rows), the wait and a barrier (the copies are visible), then
    // the reads the products take.
    OpBuilder b(ctx);
    b.setInsertionPointAfter(tiles.back().tile.getDefiningOp());
    Location loc = tiles.back().tile.getLoc();
    gpu::BarrierOp::create(b, loc);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (auto [tile, copy, layouts] : llvm::zip(tiles, copies, pieceLayouts))
      for (auto [piece, layout] : llvm::zip(tile.pieces, layouts)) {
        Value row = piece.second
                        ? arith::ConstantIndexOp::create(b, loc, piece.second)
                        : zero;
        CopyAsyncOp::create(b, loc, piece.first.getBase(),
                            piece.first.getIndices(), copy.second,
                            ValueRange{row, zero}, layout);
      }
    CopyWaitOp::create(b, loc, 0);
    gpu::BarrierOp::create(b, loc);
    for (auto [tile, copy] : llvm::zip(tiles, copies)) {
      // One read of the buffer for each layout the anchors take (each
      // folds into its products: ldmatrix with and without .trans of one
      // buffer); the anchors move below their read.
      llvm::MapVector<Attribute, SmallVector<Operation *>> byLayout;
      for (Operation *user : tile.tile.getUsers())
        byLayout[cast<ToLayoutOp>(user).getLayout()].push_back(user);
      Value padding = tile.pieces.front().first.getPadding();
      for (auto &[layout, anchors] : byLayout) {
        Value staged = vector::TransferReadOp::create(
            b, loc, cast<VectorType>(tile.tile.getType()), copy.second,
            ValueRange{zero, zero}, padding, ArrayRef<bool>{true, true});
        for (Operation *anchor : anchors) {
          anchor->moveAfter(staged.getDefiningOp());
          anchor->replaceUsesOfWith(tile.tile, staged);
        }
      }
      // The tile's ops: its chain of inserts, last first, then the reads.
      for (Value at = tile.tile;
           auto insert = at.getDefiningOp<vector::InsertStridedSliceOp>();) {
        at = insert.getDest();
        insert.erase();
      }
      for (auto &[read, row] : tile.pieces)
        read.erase();
    }
  }
  return success();
}

struct FmhaStageKVPass
    : mlir::fmha::impl::FmhaStageKVPassBase<FmhaStageKVPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(forEachGpuFunc(
            getOperation(), target, chip, mfma, "fmha-stage-kv",
            [&](gpu::GPUFuncOp func, const GpuTarget &gpuTarget) {
              return stage(func, gpuTarget, swizzle);
            })))
      signalPassFailure();
  }
};

} // namespace
