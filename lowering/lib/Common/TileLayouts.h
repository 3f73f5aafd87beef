//===- TileLayouts.h - The register layout of each vector tile --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What --fmha-distribute-tiles reads before it rewrites anything: the
// register layout (#fmha.layout) of every vector tile of a kernel, found
// from the anchors (fmha.to_layout) by a few rules, and the facts about
// layouts its rewrites need (which register of a row slice holds a tile
// register's row; a tile layout as a tiling of an instruction's fragment).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_LOWERING_COMMON_TILELAYOUTS_H
#define FMHA_LOWERING_COMMON_TILELAYOUTS_H

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Support/LinearLayout.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::fmha {

/// A static vector of rank 1 or 2: a tile (rank 1: a row or column vector).
bool isTileVector(Type type);

/// A rank-1 vector of R elements takes the layouts of R x 1 tiles (a row
/// vector: one value per row of a tile).
std::pair<int64_t, int64_t> tileShape(VectorType type);

/// `type` can be held in `l`: a tile of the layout's shape, or a rank-1
/// vector as a row vector (R x 1) or a column vector (1 x R).
bool fitsLayout(VectorType type, const ::fmha::LinearLayout &l);

/// A rank-1 vector's layout runs along columns (1 x C, C > 1: the column
/// slice of a tile), not rows.
bool isColumnVector(const ::fmha::LinearLayout &l);

/// The layout of the rows of a tile in layout `l` (fmha::rowSlice).
LayoutAttr rowSliceOf(LayoutAttr l);

/// The layout of the columns of a tile in layout `l` (fmha::colSlice).
LayoutAttr colSliceOf(LayoutAttr l);

/// Which register of `slice` (a rows x 1 layout) holds the row of each
/// register of `tile`, when the lanes and warps of the two agree on rows;
/// empty otherwise.
SmallVector<int64_t> rowRegisters(const ::fmha::LinearLayout &tile,
                                  const ::fmha::LinearLayout &slice);

/// rowRegisters' twin for a column slice (a 1 x cols layout): the register
/// of `slice` that holds the column of each register of `tile`.
SmallVector<int64_t> colRegisters(const ::fmha::LinearLayout &tile,
                                  const ::fmha::LinearLayout &slice);

/// A tile layout as a tiling of an instruction's fragment: each register's
/// fragment element and the (row, col) of its fragment's corner, the same
/// for every lane and warp.
struct Tiling {
  SmallVector<int64_t> element;
  SmallVector<::fmha::TileCoord> block;
};
/// Fails unless `layout`'s first register bases and its lane bases are
/// `frag`'s and every other basis moves by whole fragments.
FailureOr<Tiling> asTiling(const ::fmha::LinearLayout &layout,
                           const ::fmha::LinearLayout &frag);

/// A tile read only to be operand `operand` (0: A, 1: B) of products
/// (through anchors that all take one layout, or with `oneLayout` false
/// anchors of any layouts: the backward's q read as B transposed for
/// S^T = K Q^T and as B for dK += dS^T Q) in the same iteration of the
/// same loop (outside loops: in the read's block): it may be read where the
/// products use it, or staged once per iteration.
bool feedsProductsAs(vector::TransferReadOp read, unsigned operand,
                     bool oneLayout = true);
/// The same of a tile made by any op (a tile of page slices).
bool feedsProductsAs(Value tile, unsigned operand, bool oneLayout = true);
inline bool feedsProductsAsB(vector::TransferReadOp read,
                             bool oneLayout = true) {
  return feedsProductsAs(read, 1, oneLayout);
}

/// The warps of `func`'s workgroup, from its 1-D known_block_size of whole
/// warps; an error naming `pass` (which shares copies among the threads)
/// where it has none.
FailureOr<int64_t> workgroupWarps(gpu::GPUFuncOp func, const GpuTarget &target,
                                  StringRef pass);

/// `fn` on each gpu.func under `root`, with the target the options name;
/// failure where the target is unknown or `fn` fails.
LogicalResult forEachGpuFunc(
    Operation *root, StringRef target, StringRef chip, int64_t mfma,
    StringRef pass,
    function_ref<LogicalResult(gpu::GPUFuncOp, const GpuTarget &)> fn);

/// A 2-D tile read from memory outside the workgroup's, unmasked, along
/// the memory's last two dims, its columns in bounds, rows past the
/// memory's read as zero: what fmha.copy_async copies into a workgroup
/// buffer (zero-filling the rows past the source).
bool isCopyableTile(vector::TransferReadOp read);

/// A workgroup buffer for a tile of `type` made at `at` (a workgroup
/// attribution of `func`) and the layout in which `warps` warps copy it
/// (fmha::copyLayout, 16 bytes a thread); an error naming `pass` where the tile
/// has no such layout. With `swizzle` 0, each row padded by 16 bytes so that
/// the lanes of a fragment read fall in distinct banks; with 128, the tile
/// unpadded in the 128-byte swizzle that warpgroup products read
/// (kSwizzleAttrName).
FailureOr<std::pair<LayoutAttr, Value>>
addStagingBuffer(gpu::GPUFuncOp func, Operation *at, VectorType type,
                 const GpuTarget &target, int64_t warps, StringRef pass,
                 int64_t swizzle = 0);

/// A workgroup attribution of `func` holding a tile of `type` unpadded in
/// the 128-byte swizzle (kSwizzleAttrName), in address space `space`.
Value addSwizzledBuffer(gpu::GPUFuncOp func, VectorType type, unsigned space,
                        Location loc);

/// The layout in which `warps` warps copy a tile of `type` (fmha::copyLayout,
/// 16 bytes a thread); an error at `at` naming `pass` where it has none.
FailureOr<LayoutAttr> copyLayoutOf(Operation *at, VectorType type,
                                   const GpuTarget &target, int64_t warps,
                                   StringRef pass);

/// The workgroup attribution attribute of a buffer in the 128-byte swizzle
/// (`fmha.swizzle = 128`): each [rows][cols] stage of 16-bit elements
/// (the buffer's last two dims; cols a multiple of 64, rows of 8) is stored
/// as [cols / 64][rows][64], the 16-byte chunk j of each 128-byte row r at
/// chunk j ^ (r % 8): Hopper's layout for warpgroup operands, 8-row atoms of
/// 1024 bytes. The buffer's memref type counts its elements; only the
/// copies into it (fmha-distribute-tiles) and the warpgroup products'
/// descriptors read the attribute, and any other access is refused.
inline constexpr llvm::StringLiteral kSwizzleAttrName = "fmha.swizzle";
inline constexpr int64_t kSwizzleBytes = 128;

/// The swizzle of `buffer` (a workgroup attribution with kSwizzleAttrName),
/// or 0.
int64_t workgroupSwizzle(Value buffer);

/// The element offset, within its stage, of element (row, col) of a
/// [rows][cols] stage in the 128-byte swizzle of 16-bit elements.
Value swizzledOffset(OpBuilder &b, Location loc, Value row, Value col,
                     int64_t rows);

/// The layout of every vector tile of a region that has one of its own:
///   - fmha.to_layout gives its result the anchor's layout;
///   - an elementwise op, its vector operands and result share one; so do a
///     shape cast (rows to rows x 1) and its source, a contraction's
///     accumulator and result, a loop's init, argument, yield and result,
///     a branch's yields and result;
///   - a row reduction gives its result (and accumulator) the row slice of
///     its tile, a broadcast of rows x 1 its source the row slice of its
///     result;
///   - last, a value anchored without a layout of its own (a read) takes
///     the anchor's.
/// Values made of constants, index steps and scalars alone are "free":
/// they have none and are built in the layout of each use.
class TileLayoutAnalysis {
public:
  /// Finds the layouts of the tiles that `ops` make and use; a diagnostic
  /// when a value would need two.
  LogicalResult run(ArrayRef<Operation *> ops);

  /// The layout of `v`, or null.
  LayoutAttr lookup(Value v) const { return layouts.lookup(v); }
  bool isFree(Value v);

private:
  LogicalResult give(Value v, LayoutAttr l, bool &changed);
  LogicalResult unify(ArrayRef<Value> values, bool &changed);
  LogicalResult propagate(Operation *op, bool &changed);

  llvm::DenseMap<Value, LayoutAttr> layouts;
  llvm::DenseMap<Value, bool> freeCache;
};

} // namespace mlir::fmha

#endif // FMHA_LOWERING_COMMON_TILELAYOUTS_H
