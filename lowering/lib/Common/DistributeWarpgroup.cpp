//===- DistributeWarpgroup.cpp - Products of warpgroups -------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// vector.contract whose B operand is read (folded) from a workgroup buffer
// in the 128-byte swizzle (kSwizzleAttrName) is a warpgroup product
// (Hopper's wgmma.mma_async): each warpgroup of four warps computes its 64
// rows of C, k step by k step, with B (and A, where it is read from such a
// buffer too, else the A fragments of its registers) described to the
// hardware by a matrix descriptor of the buffer's address:
//
//   wgmma.fence
//   wgmma.mma_async m64nNk16 (desc A | A registers), desc B, acc   (k steps)
//   wgmma.commit_group
//   ...                                 (ops that do not use the result)
//   wgmma.wait_group N                  (before the result's first use: N
//                                        groups committed after it may
//                                        still run)
//
// The warpgroups of a workgroup split C's rows (64 each) or, where C has
// only 64 (the dQ part of 128-key dK/dV tiles over 8 warps), blocks of its
// columns: warpgroup g then computes columns [g N, g N + N) with B read at
// that block and A the same in each.
//
// An anchor of the result in its own layout stands for the product and does
// not wait; leaving the block where the product was issued waits for it.
// C's layout is mma.sync's C tiled over warps of 16 rows each, which is
// wgmma's accumulator: element i of the result is element i % 4 of the C
// fragment of columns [8 (i / 4), 8 (i / 4) + 8). The copies into such a
// buffer are swizzled (DistributeMemory.cpp) and followed, after their
// wait, by the fence that makes them visible to the warpgroup products.
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"
#include "GpuKernelUtils.h"

#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

#include <map>

using namespace mlir;
using namespace mlir::fmha;
using ::fmha::LayoutInput;
using ::fmha::LinearLayout;
using ::fmha::TileCoord;

FailureOr<Value> Distributor::warpgroupAddress(OpBuilder &b,
                                               vector::TransferReadOp read,
                                               Value row, int64_t col,
                                               Value colBlocks) {
  Location loc = read.getLoc();
  auto type = cast<MemRefType>(read.getBase().getType());
  const int64_t rank = type.getRank();
  ValueRange indices = read.getIndices();
  std::optional<int64_t> r0 = getConstantIntValue(indices[rank - 2]);
  std::optional<int64_t> c0 = getConstantIntValue(indices[rank - 1]);
  if (!r0 || !c0 || *r0 % 8 != 0 || *c0 % 64 != 0 ||
      !read.getPermutationMap().isMinorIdentity())
    return fail(read, "a warpgroup operand read at rows other than a "
                      "constant multiple of 8 or columns other than one of 64");
  const int64_t rows = type.getDimSize(rank - 2);
  const int64_t cols = type.getDimSize(rank - 1);
  IndexMath im{b, loc};
  // The stage the leading indices pick, in elements.
  Value offset = im.c(0);
  int64_t stride = rows * cols;
  for (int64_t d = rank - 3; d >= 0; --d) {
    offset = im.add(offset, im.mul(indices[d], im.c(stride)));
    stride *= type.getDimSize(d);
  }
  // The unswizzled address of the element: its 128-byte row of the atoms
  // ([cols / 64][rows][64]) and its place in that row; the hardware applies
  // the swizzle to the addresses it forms from there.
  const int64_t c = *c0 + col;
  Value line = im.add(im.c(c / 64 * rows + *r0), row);
  if (colBlocks)
    line = im.add(line, im.mul(colBlocks, im.c(rows)));
  offset = im.add(offset, im.add(im.mul(line, im.c(64)), im.c(c % 64)));
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, read.getBase());
  Value bytes = im.add(base, im.mul(offset, im.c(2)));
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), bytes).getResult();
}

LogicalResult Distributor::warpgroupContraction(
    vector::ContractionOp op, bool aTransposed, bool bTransposed,
    const Tiling &ta, const Tiling &tc, vector::TransferReadOp aRead,
    vector::TransferReadOp bRead) {
  if (!warpgroupUnsupported.empty())
    return fail(op, "reads B from a buffer in the 128-byte swizzle, for a "
                    "warpgroup product: ")
           << warpgroupUnsupported;
  const ::fmha::MmaInstruction &instr = target.getMma();
  if (instr.m != 16 || instr.n != 8 || instr.k != 16)
    return fail(op, "warpgroup products take the m16n8k16 fragments of A "
                    "and C, not ")
           << instr.name << "'s";
  LayoutAttr lc = layouts.lookup(op.getResult());
  const LinearLayout c = lc.getLayout();
  const auto &warpBases = c.getBases(LayoutInput::Warp);
  // The warps of a warpgroup split its 64 rows; the warpgroups split C's
  // rows (each its 64) or its columns (each a block of N columns: the dQ
  // part of 128-key dK/dV tiles).
  const size_t warpgroupBits = 2;
  ArrayRef<TileCoord> groupBases = ArrayRef(warpBases).drop_front(
      std::min<size_t>(warpBases.size(), warpgroupBits));
  const int64_t groups = int64_t(1) << groupBases.size();
  const bool colSplit = !groupBases.empty() && groupBases[0].row == 0;
  const int64_t n = colSplit ? c.getCols() / groups : c.getCols();
  if (warpBases.size() < warpgroupBits ||
      ArrayRef(warpBases).take_front(warpgroupBits) !=
          ArrayRef(::fmha::rowRun(warpgroupBits, instr.m)) ||
      groupBases != ArrayRef(colSplit ? ::fmha::colRun(groupBases.size(), n)
                                      : ::fmha::rowRun(groupBases.size(),
                                                       kWarpgroupRows)) ||
      c.getRows() != (colSplit ? kWarpgroupRows : kWarpgroupRows * groups) ||
      llvm::any_of(tc.block, [](TileCoord t) { return t.row != 0; }))
    return fail(op, "a warpgroup product needs C in warps of ")
           << instr.m << " rows each (four a warpgroup of " << kWarpgroupRows
           << "), the warpgroups on its rows or on blocks of its columns, "
              "not "
           << lc;
  // A (in registers) the rows of C in every warp, each warpgroup all of
  // its K; B read from its buffer by each warpgroup at its columns.
  if (!aRead) {
    LayoutAttr la = layouts.lookup(op.getLhs());
    const std::vector<TileCoord> aWarps =
        la.getLayout().getBases(LayoutInput::Warp);
    bool same = aWarps.size() == warpBases.size();
    for (size_t i = 0; same && i < aWarps.size(); ++i) {
      TileCoord a =
          aTransposed ? TileCoord{aWarps[i].col, aWarps[i].row} : aWarps[i];
      same = a.row == warpBases[i].row && a.col == 0;
    }
    if (!same)
      return fail(op, "warps must own the same rows of A and C, not ")
             << la << " and " << lc;
  }
  if (n % 8 != 0 || n > 256)
    return fail(op, "a warpgroup product's N is a multiple of 8 up to 256, "
                    "not ")
           << n;
  if (aRead && !workgroupSwizzle(aRead.getBase()))
    return fail(op, "a warpgroup product reads A from registers or from a "
                    "buffer in the 128-byte swizzle");
  // A transposed in a buffer (its rows along K): M-major, the buffer's 64
  // columns the one warpgroup's rows.
  if (aTransposed && (!aRead || (!colSplit && groups > 1)))
    return fail(op, "a warpgroup product reads A transposed only from a "
                    "buffer in the 128-byte swizzle, for warpgroups of the "
                    "same rows");
  Type ab = elementOf(op.getLhs());
  FailureOr<Value> aRegs =
      aRead ? FailureOr<Value>(Value()) : registersOf(op.getLhs(), op);
  FailureOr<Value> acc = registersIn(op.getAcc(), lc, op);
  if (failed(aRegs) || failed(acc))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexMath im{b, loc};
  // The accumulator in wgmma's order: fragment j (columns [8 j, 8 j + 8))
  // element e at 4 j + e.
  SmallVector<int64_t> order(n / 2, -1);
  for (size_t r = 0; r < tc.element.size(); ++r)
    order[tc.block[r].col / 2 + tc.element[r]] = r;
  if (llvm::is_contained(order, -1) ||
      static_cast<int64_t>(tc.element.size()) != n / 2)
    return fail(op, "C's registers are not the warpgroup accumulator's");
  const bool zero = matchPattern(op.getAcc(), m_AnyZeroFloat());
  SmallVector<Value> d;
  if (!zero || !aRead)
    for (int64_t i : order)
      d.push_back(extract(b, loc, *acc, i));
  // A's fragment pairs at (0, k0), from its registers.
  std::map<std::pair<int64_t, int64_t>, int64_t> aIndex;
  for (size_t r = 0; r < ta.element.size(); ++r)
    aIndex[{ta.block[r].col, ta.element[r]}] = r;
  auto aPairs = [&](int64_t k0) -> FailureOr<SmallVector<Value>> {
    SmallVector<Value> out;
    for (int64_t e = 0; e < instr.a.getNumRegisters(); e += 2) {
      auto first = aIndex.find({k0, e}), second = aIndex.find({k0, e + 1});
      if (first == aIndex.end() || second == aIndex.end() ||
          second->second != first->second + 1)
        return failure();
      out.push_back(vector::ExtractStridedSliceOp::create(
          b, loc, *aRegs, ArrayRef<int64_t>{first->second},
          ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1}));
    }
    return out;
  };
  // This warpgroup's first row of C (or column, where they split N).
  Value group = im.div(warp, im.c(kWarpgroupWarps));
  Value groupRows = colSplit ? im.c(0) : im.mul(group, im.c(kWarpgroupRows));
  Value groupCols = colSplit ? im.mul(group, im.c(n)) : im.c(0);
  if (!bTransposed && colSplit && n % 64 != 0)
    return fail(op, "a warpgroup product whose warpgroups split N reads an "
                    "N-major B in blocks of 64 columns, not ")
           << n;
  const int64_t kTile = tileType(op.getRhs()).getDimSize(bTransposed ? 1 : 0);
  auto bType = cast<MemRefType>(bRead.getBase().getType());
  const int64_t bRows = bType.getDimSize(bType.getRank() - 2);
  target.emitWarpgroupFence(b, loc);
  const int64_t kEnd = reductionSteps(op, kTile, instr.k) * instr.k;
  for (int64_t k0 = 0; k0 < kEnd; k0 += instr.k) {
    // B K-major (B[j, k], the rows of the buffer along N): 8-row atoms
    // 1024 bytes apart along N. N-major (B[k, j]): atoms 1024 bytes apart
    // along K, 64-column blocks (rows x 128 bytes) apart along N.
    FailureOr<Value> bAddress =
        bTransposed ? warpgroupAddress(b, bRead, groupCols, k0)
                    : warpgroupAddress(b, bRead, im.c(k0), 0,
                                       colSplit ? im.div(groupCols, im.c(64))
                                                : Value());
    if (failed(bAddress))
      return failure();
    Value descB = target.emitWarpgroupDescriptor(
        b, loc, *bAddress, bTransposed ? 16 : bRows * 128, 1024);
    if (aRead) {
      // K-major A: rows of the warpgroup, k0's columns. M-major: k0's rows
      // (8-row atoms 1024 bytes apart along K, the layout of an N-major B).
      FailureOr<Value> aAddress =
          aTransposed ? warpgroupAddress(b, aRead, im.c(k0), 0)
                      : warpgroupAddress(b, aRead, groupRows, k0);
      if (failed(aAddress))
        return failure();
      auto aType = cast<MemRefType>(aRead.getBase().getType());
      const int64_t aRows = aType.getDimSize(aType.getRank() - 2);
      Value descA = target.emitWarpgroupDescriptor(
          b, loc, *aAddress, aTransposed ? aRows * 128 : 16, 1024);
      d = target.emitWarpgroupMma(b, loc, ab, n, descA,
                                  /*aMMajor=*/aTransposed, descB,
                                  /*bNMajor=*/!bTransposed, d);
      continue;
    }
    FailureOr<SmallVector<Value>> pairs = aPairs(k0);
    if (failed(pairs))
      return fail(op, "A's fragment at k ")
             << k0 << " is not in this thread's registers as element pairs";
    d = target.emitWarpgroupMmaRegisterA(b, loc, ab, n, *pairs, descB,
                                         /*bNMajor=*/!bTransposed, d);
  }
  target.emitWarpgroupCommit(b, loc);
  // Waited for where the result is first used (waitForUses).
  pendingProducts.push_back({{op.getResult()}, d, order, op->getBlock()});
  return success();
}

bool Distributor::aliasPending(ToLayoutOp anchor) {
  for (PendingProduct &p : pendingProducts)
    if (llvm::is_contained(p.values, anchor.getSource()) &&
        layouts.lookup(anchor.getResult()) ==
            layouts.lookup(anchor.getSource())) {
      p.values.push_back(anchor.getResult());
      return true;
    }
  return false;
}

void Distributor::waitForUses(Operation *op) {
  if (pendingProducts.empty())
    return;
  // The last pending product `op` needs.
  int64_t need = -1;
  auto uses = [&](Value v) {
    for (auto [i, p] : llvm::enumerate(pendingProducts))
      if (llvm::is_contained(p.values, v))
        need = std::max<int64_t>(need, i);
  };
  op->walk(
      [&](Operation *inner) { llvm::for_each(inner->getOperands(), uses); });
  if (op->hasTrait<OpTrait::IsTerminator>())
    for (auto [i, p] : llvm::enumerate(pendingProducts))
      if (p.block == op->getBlock())
        need = std::max<int64_t>(need, i);
  if (need < 0)
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  const int64_t pending = pendingProducts.size() - 1 - need;
  // The products up to `need` are complete after the one wait: each one's
  // registers fenced there.
  ArrayRef<PendingProduct> done =
      ArrayRef(pendingProducts).take_front(need + 1);
  SmallVector<Value> all;
  for (const PendingProduct &p : done)
    llvm::append_range(all, p.registers);
  SmallVector<Value> fenced = target.emitWarpgroupWait(b, loc, pending, all);
  ArrayRef<Value> rest = fenced;
  for (const PendingProduct &p : done) {
    SmallVector<Value> out(p.order.size());
    for (auto [i, r] : llvm::enumerate(p.order))
      out[r] = rest[i];
    rest = rest.drop_front(p.order.size());
    Value regs = fromElements(b, loc, b.getF32Type(), out);
    for (Value v : p.values)
      registers[v] = regs;
  }
  pendingProducts.erase(pendingProducts.begin(),
                        pendingProducts.begin() + need + 1);
}
