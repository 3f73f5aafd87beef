//===- Distributor.h - Vector tiles to each thread's registers --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The state and rules of --fmha-distribute-tiles (DistributeTiles.cpp says
// what the pass does), one file a concern: DistributeTiles.cpp (the walk,
// values built per use, elementwise ops, broadcasts, layout conversions),
// DistributeMemory.cpp (reads and writes, reads folded into the products),
// DistributeMatrix.cpp (matrix instructions, row reductions).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_LOWERING_COMMON_DISTRIBUTOR_H
#define FMHA_LOWERING_COMMON_DISTRIBUTOR_H

#include "TileLayouts.h"
#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fmha {

/// Distributes the vector tiles of one gpu.func.
struct Distributor {
  const GpuTarget &target;
  /// The layout of every vector that has one of its own.
  TileLayoutAnalysis layouts;
  /// Each vector's registers.
  llvm::DenseMap<Value, Value> registers;
  /// Tiles read where the products use them (foldsIntoProducts): the read.
  llvm::DenseMap<Value, vector::TransferReadOp> folded;
  /// Values without a layout of their own, built in a layout.
  llvm::DenseMap<std::pair<Value, Attribute>, Value> built;
  /// The lane and warp ids (index), at the function's entry.
  Value lane, warp;
  /// Ops whose results moved to registers, erased at the end.
  SmallVector<Operation *> replaced;
  /// The tile type of every value before loops and branches were retyped.
  llvm::DenseMap<Value, VectorType> tileTypes;

  VectorType tileType(Value v) const {
    if (VectorType t = tileTypes.lookup(v))
      return t;
    return dyn_cast<VectorType>(v.getType());
  }
  bool isTile(Value v) const {
    VectorType t = tileType(v);
    return t && isTileVector(t);
  }

  explicit Distributor(const GpuTarget &target) : target(target) {}

  static InFlightDiagnostic fail(Operation *op, const Twine &what);

  //===--------------------------------------------------------------------===//
  // Registers
  //===--------------------------------------------------------------------===//

  static VectorType registersType(LayoutAttr l, Type element) {
    return VectorType::get({l.getLayout().getNumRegisters()}, element);
  }
  static Type elementOf(Value v) {
    return cast<VectorType>(v.getType()).getElementType();
  }

  /// Index of one axis of register `reg`'s element in `l`, for this thread.
  Value coord(OpBuilder &b, Location loc, const ::fmha::LinearLayout &l,
              int64_t reg, bool row);

  Value fromElements(OpBuilder &b, Location loc, Type element,
                     ArrayRef<Value> elements) {
    return vector::FromElementsOp::create(
        b, loc, VectorType::get({int64_t(elements.size())}, element), elements);
  }

  Value extract(OpBuilder &b, Location loc, Value v, int64_t i) {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  }

  /// The registers of `v` in layout `l`: its own, or built in `l` where it
  /// has none.
  FailureOr<Value> registersIn(Value v, LayoutAttr l, Operation *user);

  FailureOr<Value> registersOf(Value v, Operation *user);

  /// Each register of `tile` takes the register of `line` (in `slice`, its
  /// row slice or column slice) that holds its row or column.
  FailureOr<Value> broadcastLine(OpBuilder &b, Location loc, Value line,
                                 LayoutAttr slice, LayoutAttr tile,
                                 Operation *at);

  /// A value made from constants and steps, in layout `l`, built right
  /// after its definition.
  FailureOr<Value> build(Value v, LayoutAttr l);

  //===--------------------------------------------------------------------===//
  // Rewrites
  //===--------------------------------------------------------------------===//

  LogicalResult elementwise(Operation *op);

  LogicalResult toLayout(ToLayoutOp op);

  /// A conversion between layouts whose lanes or warps differ: through a
  /// workgroup buffer of the tile, between barriers.
  LogicalResult throughWorkgroupMemory(ToLayoutOp op, Value regs,
                                       LayoutAttr from);

  LogicalResult broadcast(vector::BroadcastOp op);

  LogicalResult reduction(vector::MultiDimReductionOp op);

  LogicalResult contraction(vector::ContractionOp op);

  /// Why this target has no warpgroup products (GpuTarget::
  /// checkWarpgroupMma), empty where it has them.
  std::string warpgroupUnsupported;
  /// Why the target cannot add a workgroup buffer asynchronously (empty
  /// when it can: fmha.add_async).
  std::string bulkAddUnsupported;
  /// The function has buffers in the 128-byte swizzle: the copies' waits
  /// make their data visible to the warpgroup products.
  bool warpgroupOperands = false;

  /// Warpgroup products committed and not yet waited for, in commit order:
  /// the values that stand for each one's result (the contraction's, and
  /// anchors of its layout on it), its accumulator registers (wgmma's
  /// order) and where each goes in the result's registers, and the block
  /// they were issued in.
  struct PendingProduct {
    SmallVector<Value> values;
    SmallVector<Value> registers;
    SmallVector<int64_t> order;
    Block *block;
  };
  SmallVector<PendingProduct> pendingProducts;

  /// Before `op`: waits for the pending products it uses (in it or in its
  /// regions), or for all of them where `op` ends their block, and gives
  /// their results their registers (each wait completes the products
  /// committed before it too).
  void waitForUses(Operation *op);
  /// `anchor` puts a pending product in the layout it has: it stands for
  /// the product too (no wait).
  bool aliasPending(ToLayoutOp anchor);

  /// A contraction whose B is read from a buffer in the 128-byte swizzle:
  /// warpgroup products over descriptors (DistributeWarpgroup.cpp); `ta`
  /// and `tc` are A's and C's tilings of the target's m16n8k16 fragments.
  /// A read transposed (`aTransposed`) from such a buffer is M-major.
  LogicalResult warpgroupContraction(vector::ContractionOp op, bool aTransposed,
                                     bool bTransposed, const Tiling &ta,
                                     const Tiling &tc,
                                     vector::TransferReadOp aRead,
                                     vector::TransferReadOp bRead);

  /// The i64 workgroup address of element (row + r0, col + c0) of the
  /// buffer in the 128-byte swizzle that `read` reads at (.., r0, c0), as
  /// a warpgroup descriptor takes it (unswizzled; row a multiple of 8),
  /// `colBlocks` (when given) more 64-column blocks along.
  FailureOr<Value> warpgroupAddress(OpBuilder &b, vector::TransferReadOp read,
                                    Value row, int64_t col,
                                    Value colBlocks = {});

  /// How many registers from each multiple of it are adjacent along the
  /// last dim in `l` (2^k, at most 16 bytes).
  static int64_t runLength(const ::fmha::LinearLayout &l, Type element);
  /// runLength for a transfer of memory: 1 for a rank-1 tile (a per-row
  /// or per-column vector such as the lse or Dsum, whose rows in memory
  /// start at any multiple of a sequence length, so that a wider access
  /// would make the kernel demand even sequence lengths).
  static int64_t memoryRunLength(const ::fmha::LinearLayout &l, Type element,
                                 bool rank1) {
    return rank1 ? 1 : runLength(l, element);
  }
  /// The k steps of `k` elements that `op`'s reduction of `kTile` elements
  /// takes: up to its kReductionExtentAttrName where it has one (the steps
  /// past it multiply zeros).
  static int64_t reductionSteps(vector::ContractionOp op, int64_t kTile,
                                int64_t k);

  /// The registers of `l` in runs adjacent along the last dim: each run's
  /// first register and length (`len` registers, or runLength's).
  static SmallVector<std::pair<int64_t, int64_t>>
  runs(const ::fmha::LinearLayout &l, Type element, int64_t len = 0);

  /// The indices of one run: the transfer's indices moved by the run's
  /// (row, col) along the dims its map reads.
  SmallVector<Value> runIndices(OpBuilder &b, Location loc, ValueRange indices,
                                AffineMap map, const ::fmha::LinearLayout &l,
                                int64_t reg, bool rank1);

  static bool isReadableMap(AffineMap map, int64_t rank);

  /// Registers [first, first + count) of the tile `read` reads, in layout
  /// `l`, read from its memory: one read a run of adjacent registers.
  Value readRegisters(OpBuilder &b, vector::TransferReadOp read, LayoutAttr l,
                      int64_t first, int64_t count);

  /// Whether the tile `read` reads may be read where the products use it
  /// (a read folded into the products): its only uses are anchors in its
  /// layout whose only uses are contractions taking it as A or as B, in the
  /// same iteration of the same loop (so no thread holds more of it than the
  /// fragments of one product at a time).
  bool foldsIntoProducts(vector::TransferReadOp read);

  /// The target's matrix load (GpuTarget::MatrixLoad) that gives registers
  /// of layout `l` in pairs from the memory `read` reads, when there is one:
  /// a 2-D workgroup buffer (or stages of one: leading dims at any index)
  /// of 16-bit elements with 16-byte rows, its rows and columns read at
  /// constant indices, whose pairs of `l` start at 8 x 8 matrix corners
  /// with the lanes of the load's matrix.
  std::optional<GpuTarget::MatrixLoad>
  matrixLoadFor(vector::TransferReadOp read, const ::fmha::LinearLayout &l);

  /// The register pairs of `l` that start at registers `pairs` (1, 2 or 4
  /// of them, pairs[i] = pairs[0] ^ (i & 1 ? x : 0) ^ (i & 2 ? y : 0) for
  /// register masks x, y), read by one matrix load: one pair each.
  SmallVector<Value> loadMatrices(OpBuilder &b, vector::TransferReadOp read,
                                  const ::fmha::LinearLayout &l,
                                  const GpuTarget::MatrixLoad &load,
                                  ArrayRef<int64_t> pairs);

  LogicalResult transferRead(vector::TransferReadOp op);

  LogicalResult transferWrite(vector::TransferWriteOp op);
  /// fmha.atomic_add: each register added at its (row, col) of the buffer
  /// (the target's workspace add), by the first replica only.
  LogicalResult atomicAdd(AtomicAddOp op);
  /// fmha.add_async: the target's bulk add of the workgroup buffer.
  LogicalResult addAsync(AddAsyncOp op);
  /// Whether this thread is the workgroup's first (lane 0 of warp 0).
  Value firstThread(OpBuilder &b, Location loc);
  /// fmha.pack_tile, fmha.unpack_tile: the source's registers, where the
  /// layouts say they are the same.
  LogicalResult registerOrder(Operation *op);

  /// From here on, only the threads that hold the first replica of each
  /// element of `layout` (a branch when some hold copies).
  void onlyFirstReplica(OpBuilder &b, Location loc,
                        const ::fmha::LinearLayout &layout);

  /// fmha.copy_async: each thread its registers' runs, as the target's
  /// asynchronous copies; then every thread closes its group.
  LogicalResult copyAsync(CopyAsyncOp op);

  /// A value carried by a loop or branch: retyped in place to its registers.
  LogicalResult retype(Value v);

  LogicalResult rewrite(Operation *op);

  LogicalResult run(gpu::GPUFuncOp func);
};

} // namespace mlir::fmha

#endif // FMHA_LOWERING_COMMON_DISTRIBUTOR_H
