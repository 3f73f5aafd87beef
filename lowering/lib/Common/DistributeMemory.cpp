//===- DistributeMemory.cpp - Reads and writes of distributed tiles -------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A tile's read or write is one transfer a run of registers adjacent in a
// row, at the coordinate the layout gives the lane and warp ids; rows past
// the source are masked as the tile's transfer was; replicas write once. A
// B operand read in the iteration of the loop whose products use it is read
// there, one fragment at a time (a read folded into the products).
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::fmha;
using ::fmha::LayoutInput;
using ::fmha::LinearLayout;
using ::fmha::TileCoord;

#include "fmha/Transforms/MaskUtils.h"

#include "llvm/Support/MathExtras.h"

/// How many registers from each multiple of it are adjacent along the
/// last dim in `l` (2^k, at most 16 bytes).
int64_t Distributor::runLength(const LinearLayout &l, Type element) {
  const auto &regs = l.getBases(LayoutInput::Register);
  int64_t len = 1;
  const int64_t maxLen = 128 / element.getIntOrFloatBitWidth();
  while (llvm::Log2_64(len) < regs.size() && len < maxLen &&
         regs[llvm::Log2_64(len)] == TileCoord{0, len})
    len *= 2;
  return len;
}

/// The registers of `l` in runs adjacent along the last dim: each run's
/// first register and length.
SmallVector<std::pair<int64_t, int64_t>>
Distributor::runs(const LinearLayout &l, Type element, int64_t len) {
  if (!len)
    len = runLength(l, element);
  SmallVector<std::pair<int64_t, int64_t>> out;
  for (int64_t r = 0; r < l.getNumRegisters(); r += len)
    out.push_back({r, len});
  return out;
}

/// The indices of one run: the transfer's indices moved by the run's
/// (row, col) along the dims its map reads.
SmallVector<Value> Distributor::runIndices(OpBuilder &b, Location loc,
                                           ValueRange indices, AffineMap map,
                                           const LinearLayout &l, int64_t reg,
                                           bool rank1) {
  IndexMath im{b, loc};
  SmallVector<Value> out(indices.begin(), indices.end());
  auto dim = [&](unsigned result) {
    return cast<AffineDimExpr>(map.getResult(result)).getPosition();
  };
  unsigned rowDim = dim(0);
  // A rank-1 vector's one dim is the layout's rows, or its columns in a
  // column vector.
  const bool alongRows = !rank1 || !isColumnVector(l);
  out[rowDim] = im.add(out[rowDim], coord(b, loc, l, reg, alongRows));
  if (!rank1) {
    unsigned colDim = dim(1);
    out[colDim] = im.add(out[colDim], coord(b, loc, l, reg, /*row=*/false));
  }
  return out;
}

bool Distributor::isReadableMap(AffineMap map, int64_t rank) {
  if (!map.isProjectedPermutation() || map.getNumResults() != rank)
    return false;
  // Results in the order of the dims they name (no transposition).
  for (unsigned r = 1; r < map.getNumResults(); ++r)
    if (cast<AffineDimExpr>(map.getResult(r)).getPosition() <=
        cast<AffineDimExpr>(map.getResult(r - 1)).getPosition())
      return false;
  return true;
}

/// Registers [first, first + count) of the tile `read` reads, in layout
/// `l`, read from its memory: one read a run of adjacent registers.
Value Distributor::readRegisters(OpBuilder &b, vector::TransferReadOp read,
                                 LayoutAttr l, int64_t first, int64_t count) {
  Location loc = read.getLoc();
  VectorType type = tileType(read.getResult());
  Type element = type.getElementType();
  bool rank1 = type.getRank() == 1;
  const LinearLayout layout = l.getLayout();
  const int64_t len = memoryRunLength(layout, element, rank1);
  Value out = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(VectorType::get({count}, element)));
  for (int64_t r = first; r < first + count;) {
    const int64_t n = std::min(len - r % len, first + count - r);
    SmallVector<Value> indices = runIndices(
        b, loc, read.getIndices(), read.getPermutationMap(), layout, r, rank1);
    VectorType runType = rank1 ? VectorType::get({n}, element)
                               : VectorType::get({1, n}, element);
    Value run = vector::TransferReadOp::create(
        b, loc, runType, read.getBase(), indices, read.getPermutationMapAttr(),
        read.getPadding(), Value(), read.getInBoundsAttr());
    Value flat =
        vector::ShapeCastOp::create(b, loc, VectorType::get({n}, element), run);
    out = vector::InsertStridedSliceOp::create(
        b, loc, flat, out, ArrayRef<int64_t>{r - first}, ArrayRef<int64_t>{1});
    r += n;
  }
  return out;
}

std::optional<GpuTarget::MatrixLoad>
Distributor::matrixLoadFor(vector::TransferReadOp read, const LinearLayout &l) {
  // A 2-D buffer, or stages of one (leading dims picked by any index).
  auto type = dyn_cast<MemRefType>(read.getBase().getType());
  if (!type || type.getRank() < 2 || !type.hasStaticShape() ||
      !type.getLayout().isIdentity() || !type.getMemorySpace() ||
      read.getVectorType().getRank() != 2 ||
      !read.getPermutationMap().isMinorIdentity())
    return std::nullopt;
  const int64_t rank = type.getRank();
  Attribute space = type.getMemorySpace();
  auto number = dyn_cast<IntegerAttr>(space);
  if (!gpu::GPUDialect::isWorkgroupMemoryAddressSpace(space) &&
      !(number && number.getInt() == target.getWorkgroupAddressSpace()))
    return std::nullopt;
  const int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  if (bits != 16 || (type.getDimSize(rank - 1) * bits) % 128 != 0)
    return std::nullopt;
  for (Value index : read.getIndices().take_back(2)) {
    std::optional<int64_t> c = getConstantIntValue(index);
    if (!c || *c % 8 != 0)
      return std::nullopt;
  }
  const auto &regs = l.getBases(LayoutInput::Register);
  if (regs.empty())
    return std::nullopt;
  for (int64_t r = 0; r < l.getNumRegisters(); r += 2) {
    TileCoord corner = l.apply(r, 0);
    if (corner.row % 8 != 0 || corner.col % 8 != 0)
      return std::nullopt;
  }
  for (const GpuTarget::MatrixLoad &load : target.getMatrixLoads())
    if (regs[0] == load.matrix.getBases(LayoutInput::Register)[0] &&
        l.getBases(LayoutInput::Lane) ==
            load.matrix.getBases(LayoutInput::Lane))
      return load;
  return std::nullopt;
}

SmallVector<Value> Distributor::loadMatrices(OpBuilder &b,
                                             vector::TransferReadOp read,
                                             const LinearLayout &l,
                                             const GpuTarget::MatrixLoad &load,
                                             ArrayRef<int64_t> pairs) {
  Location loc = read.getLoc();
  const int64_t count = pairs.size();
  // Lane 8 i + r addresses row r of the matrix of pair i: the rows by the
  // low three lane bits, the pairs by the next two (linear in the register
  // masks that move between the pairs).
  TileCoord x = count > 1 ? l.apply(pairs[0] ^ pairs[1], 0) : TileCoord{};
  TileCoord y = count > 2 ? l.apply(pairs[0] ^ pairs[2], 0) : TileCoord{};
  std::vector<TileCoord> lanes = ::fmha::rowRun(3);
  lanes.push_back(x);
  lanes.push_back(y);
  LinearLayout address(l.getRows(), l.getCols(),
                       l.getBases(LayoutInput::Register), lanes,
                       l.getBases(LayoutInput::Warp));
  IndexMath im{b, loc};
  SmallVector<Value> indices(read.getIndices());
  const size_t row = indices.size() - 2, col = indices.size() - 1;
  indices[row] =
      im.add(indices[row], coord(b, loc, address, pairs[0], /*row=*/true));
  indices[col] =
      im.add(indices[col], coord(b, loc, address, pairs[0], /*row=*/false));
  return target.emitMatrixLoad(b, loc, read.getBase(), indices, count,
                               load.transpose);
}

/// Whether the tile `read` reads may be read where the products use it
/// (a read folded into the products): its only uses are anchors in its
/// layout whose only uses are contractions taking it as A or as B, in the
/// same iteration of the same loop (so no thread holds more of it than the
/// fragments of one product at a time).
bool Distributor::foldsIntoProducts(vector::TransferReadOp read) {
  LayoutAttr l = layouts.lookup(read.getResult());
  if (!l || !(feedsProductsAs(read, 0) || feedsProductsAs(read, 1)))
    return false;
  return llvm::all_of(read->getUsers(), [&](Operation *user) {
    return cast<ToLayoutOp>(user).getLayout() == l;
  });
}

LogicalResult Distributor::transferRead(vector::TransferReadOp op) {
  LayoutAttr l = layouts.lookup(op.getResult());
  if (!l)
    return fail(op, "reads a tile without a register layout");
  if (op.getMask() ||
      !isReadableMap(op.getPermutationMap(), op.getVectorType().getRank()))
    return fail(op, "a masked or transposing read");
  if (foldsIntoProducts(op)) {
    folded[op.getResult()] = op;
    return success();
  }
  if (workgroupSwizzle(op.getBase()))
    return fail(op, "reads a buffer in the 128-byte swizzle into registers; "
                    "only warpgroup products read it");
  OpBuilder b(op);
  registers[op.getResult()] =
      readRegisters(b, op, l, 0, l.getLayout().getNumRegisters());
  return success();
}

void Distributor::onlyFirstReplica(OpBuilder &b, Location loc,
                                   const LinearLayout &layout) {
  IndexMath im{b, loc};
  // The lanes and warps whose replicated bits (zero bases) are 0.
  Value first;
  auto only = [&](Value id, const std::vector<TileCoord> &bases) {
    int64_t mask = 0;
    for (auto [bit, c] : llvm::enumerate(bases))
      if (c.isZero())
        mask |= int64_t(1) << bit;
    if (!mask)
      return;
    Value zero = im.cmp(arith::CmpIPredicate::eq,
                        arith::AndIOp::create(b, loc, id, im.c(mask)), im.c(0));
    first = first ? arith::AndIOp::create(b, loc, first, zero) : zero;
  };
  only(lane, layout.getBases(LayoutInput::Lane));
  only(warp, layout.getBases(LayoutInput::Warp));
  if (first) {
    auto branch = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    b.setInsertionPointToStart(&branch.getThenRegion().front());
  }
}

LogicalResult Distributor::copyAsync(CopyAsyncOp op) {
  const LinearLayout layout = op.getLayout().getLayout();
  auto source = cast<MemRefType>(op.getSource().getType());
  Type element = source.getElementType();
  const int64_t len = runLength(layout, element);
  const int64_t bytes = len * element.getIntOrFloatBitWidth() / 8;
  if (bytes != 4 && bytes != 8 && bytes != 16)
    return fail(op, "its layout gives each thread runs of ")
           << bytes << " bytes along a row; the copies take 4, 8 or 16";
  OpBuilder b(op);
  Location loc = op.getLoc();
  const int64_t srcRow = source.getRank() - 2;
  auto dest = cast<MemRefType>(op.getDest().getType());
  const int64_t dstRow = dest.getRank() - 2;
  const int64_t swizzle = workgroupSwizzle(op.getDest());
  if (swizzle && (bytes != 16 || element.getIntOrFloatBitWidth() != 16))
    return fail(op, "copies into a buffer in the 128-byte swizzle take 16 "
                    "bytes of 16-bit elements a thread, not ")
           << bytes << " of " << element;
  // Runs past the source's columns (a head dim padded to the tile's) are
  // zeros too: whole runs, so the columns must be a multiple of one.
  const int64_t srcCols = source.getDimSize(srcRow + 1);
  if (!ShapedType::isDynamic(srcCols) && srcCols % len != 0)
    return fail(op, "the source's ")
           << srcCols << " columns are not a whole number of the copies' "
           << len << "-element runs";
  Value rows = memref::DimOp::create(b, loc, op.getSource(), srcRow);
  // Whether the tile may reach past the source's columns.
  std::optional<int64_t> firstCol =
      getConstantIntValue(op.getSourceIndices()[srcRow + 1]);
  const bool pastCols = ShapedType::isDynamic(srcCols) || !firstCol ||
                        *firstCol + layout.getCols() > srcCols;
  Value cols = pastCols
                   ? memref::DimOp::create(b, loc, op.getSource(), srcRow + 1)
                         .getResult()
                   : Value();
  {
    OpBuilder::InsertionGuard guard(b);
    onlyFirstReplica(b, loc, layout);
    IndexMath in{b, loc};
    for (auto [first, n] : runs(layout, element)) {
      Value row = coord(b, loc, layout, first, /*row=*/true);
      Value col = coord(b, loc, layout, first, /*row=*/false);
      SmallVector<Value> from(op.getSourceIndices());
      SmallVector<Value> to(op.getDestIndices());
      Value at = in.add(from[srcRow], row);
      Value atCol = pastCols ? in.add(from[srcRow + 1], col) : Value();
      Value valid = in.cmp(arith::CmpIPredicate::ult, at, rows);
      if (pastCols)
        valid = arith::AndIOp::create(
            b, loc, valid, in.cmp(arith::CmpIPredicate::ult, atCol, cols));
      // A run past the source reads nothing; its address stays the tile's
      // first row (and column).
      from[srcRow] = arith::SelectOp::create(b, loc, valid, at, from[srcRow]);
      from[srcRow + 1] =
          pastCols
              ? arith::SelectOp::create(b, loc, valid, atCol, from[srcRow + 1])
              : in.add(from[srcRow + 1], col);
      to[dstRow] = in.add(to[dstRow], row);
      to[dstRow + 1] = in.add(to[dstRow + 1], col);
      if (swizzle) {
        // The element's place in the stage, as a (row, col) of its type.
        const int64_t cols = dest.getDimSize(dstRow + 1);
        Value at = swizzledOffset(b, loc, to[dstRow], to[dstRow + 1],
                                  dest.getDimSize(dstRow));
        to[dstRow] = in.div(at, in.c(cols));
        to[dstRow + 1] = in.rem(at, in.c(cols));
      }
      target.emitCopyAsync(b, loc, op.getSource(), from, op.getDest(), to, n,
                           valid);
    }
  }
  // Every thread closes its group, empty or not, so that the groups count
  // alike in every thread.
  target.emitCopyCommit(b, loc);
  return success();
}

LogicalResult Distributor::transferWrite(vector::TransferWriteOp op) {
  VectorType type = tileType(op.getVector());
  if (op.getMask() || !isReadableMap(op.getPermutationMap(), type.getRank()))
    return fail(op, "a masked or transposing write");
  if (isa<TensorType>(op.getBase().getType()))
    return fail(op, "writes a tensor (bufferize first)");
  FailureOr<Value> regs = registersOf(op.getVector(), op);
  if (failed(regs))
    return failure();
  const LinearLayout layout = layouts.lookup(op.getVector()).getLayout();
  Type element = type.getElementType();
  bool rank1 = type.getRank() == 1;
  OpBuilder b(op);
  Location loc = op.getLoc();
  // A buffer in the 128-byte swizzle (a warpgroup product's operand,
  // fmha-stage-transposed-a): each run at its swizzled place, within one
  // 16-byte chunk; then the fence that shows the writes to the products.
  const int64_t swizzle = workgroupSwizzle(op.getBase());
  auto baseType = cast<MemRefType>(op.getBase().getType());
  if (swizzle && (rank1 || baseType.getRank() != 2 ||
                  element.getIntOrFloatBitWidth() != 16 ||
                  !llvm::all_of(op.getIndices(), [](Value v) {
                    return matchPattern(v, m_Zero());
                  })))
    return fail(op, "writes into a buffer in the 128-byte swizzle other than "
                    "a whole 2-D tile of 16-bit elements");
  onlyFirstReplica(b, loc, layout);
  for (auto [first, len] :
       runs(layout, element, memoryRunLength(layout, element, rank1))) {
    SmallVector<Value> indices = runIndices(
        b, loc, op.getIndices(), op.getPermutationMap(), layout, first, rank1);
    if (swizzle) {
      if (len > 8 || layout.apply(first, 0, 0).col % 8 + len > 8)
        return fail(op, "a run of registers crosses a 16-byte chunk of the "
                        "swizzle");
      IndexMath im{b, loc};
      const int64_t cols = baseType.getDimSize(1);
      Value at = swizzledOffset(b, loc, indices[0], indices[1],
                                baseType.getDimSize(0));
      indices = {im.div(at, im.c(cols)), im.rem(at, im.c(cols))};
    }
    Value run = vector::ExtractStridedSliceOp::create(
        b, loc, *regs, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{len},
        ArrayRef<int64_t>{1});
    if (!rank1)
      run = vector::ShapeCastOp::create(
          b, loc, VectorType::get({1, len}, element), run);
    vector::TransferWriteOp::create(b, loc, run, op.getBase(), indices,
                                    op.getPermutationMapAttr(), Value(),
                                    op.getInBoundsAttr());
  }
  if (swizzle) {
    OpBuilder after(op);
    target.emitWarpgroupOperandFence(after, loc);
  }
  return success();
}

Value Distributor::firstThread(OpBuilder &b, Location loc) {
  IndexMath im{b, loc};
  Value zero = im.c(0);
  return arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp, zero));
}

LogicalResult Distributor::addAsync(AddAsyncOp op) {
  if (!bulkAddUnsupported.empty())
    return fail(op, "adds a buffer asynchronously: ") << bulkAddUnsupported;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MemRefType type = op.getSource().getType();
  const int64_t bytes =
      type.getNumElements() * type.getElementTypeBitWidth() / 8;
  Value dest = emitGlobalElementPointer(b, loc, op.getDest(), {},
                                        target.getIndexBitwidth());
  Value source =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, op.getSource());
  target.emitBulkAdd(b, loc, source, dest, bytes, firstThread(b, loc));
  return success();
}

LogicalResult Distributor::atomicAdd(AtomicAddOp op) {
  Value value = op.getValue();
  LayoutAttr l = layouts.lookup(value);
  if (!l)
    return fail(op, "adds a tile without a register layout");
  FailureOr<Value> regs = registersOf(value, op);
  if (failed(regs))
    return failure();
  const LinearLayout layout = l.getLayout();
  OpBuilder b(op);
  Location loc = op.getLoc();
  onlyFirstReplica(b, loc, layout);
  for (int64_t r = 0; r < layout.getNumRegisters(); ++r)
    target.emitWorkspaceAtomicAdd(
        b, loc, extract(b, loc, *regs, r), op.getDest(),
        ValueRange{coord(b, loc, layout, r, /*row=*/true),
                   coord(b, loc, layout, r, /*row=*/false)});
  return success();
}
