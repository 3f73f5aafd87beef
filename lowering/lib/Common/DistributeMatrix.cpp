//===- DistributeMatrix.cpp - Products and row reductions of tiles --------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// vector.contract whose A, B and C layouts tile one matrix instruction's
// fragments: the instruction over the fragments (target.emitMma). A row
// reduction: over the registers of a row, then xor shuffles across the
// lanes that split the columns, then the accumulator.
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fmha;
using ::fmha::LayoutInput;
using ::fmha::LinearLayout;
using ::fmha::TileCoord;

#include <map>

LogicalResult Distributor::reduction(vector::MultiDimReductionOp op) {
  LayoutAttr tileAttr = layouts.lookup(op.getSource());
  LayoutAttr sliceAttr = layouts.lookup(op.getResult());
  if (!tileAttr || !sliceAttr || tileType(op.getSource()).getRank() != 2 ||
      op.getReductionDims() != ArrayRef<int64_t>{1})
    return fail(op, "reduces other than a tile along its columns");
  const LinearLayout tile = tileAttr.getLayout();
  SmallVector<int64_t> map = rowRegisters(tile, sliceAttr.getLayout());
  if (map.empty())
    return fail(op, "the result's layout ")
           << sliceAttr << " is not the row slice of " << tileAttr;
  for (TileCoord c : tile.getBases(LayoutInput::Warp))
    if (c.col != 0)
      return fail(op, "warps split the reduced columns of ")
             << tileAttr << "; only lanes and registers may";
  SmallVector<int64_t> xorMasks;
  for (auto [bit, c] : llvm::enumerate(tile.getBases(LayoutInput::Lane))) {
    if (c.col != 0 && c.row != 0)
      return fail(op, "a lane basis moves along rows and columns at once");
    if (c.col != 0)
      xorMasks.push_back(int64_t(1) << bit);
  }
  FailureOr<Value> src = registersOf(op.getSource(), op);
  FailureOr<Value> acc = registersIn(op.getAcc(), sliceAttr, op);
  if (failed(src) || failed(acc))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  vector::CombiningKind kind = op.getKind();
  const int64_t n = sliceAttr.getLayout().getNumRegisters();
  SmallVector<Value> partial(n);
  for (int64_t r = 0; r < tile.getNumRegisters(); ++r) {
    Value x = extract(b, loc, *src, r);
    Value &p = partial[map[r]];
    p = p ? vector::makeArithReduction(b, loc, kind, p, x) : x;
  }
  SmallVector<Value> out;
  for (int64_t s = 0; s < n; ++s) {
    Value p = partial[s];
    if (!p)
      return fail(op, "a row of the result has no register in the tile");
    for (int64_t mask : xorMasks)
      p = vector::makeArithReduction(b, loc, kind, p,
                                     target.emitShuffleXor(b, loc, p, mask));
    out.push_back(
        vector::makeArithReduction(b, loc, kind, p, extract(b, loc, *acc, s)));
  }
  registers[op.getResult()] =
      fromElements(b, loc, elementOf(op.getResult()), out);
  return success();
}

LogicalResult Distributor::contraction(vector::ContractionOp op) {
  MLIRContext *ctx = op.getContext();
  AffineExpr i, j, k;
  bindDims(ctx, i, j, k);
  auto map = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(3, 0, e, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool bTransposed = maps[1] == map({j, k});
  if (maps.size() != 3 || maps[0] != map({i, k}) || maps[2] != map({i, j}) ||
      !(bTransposed || maps[1] == map({k, j})))
    return fail(op, "a contraction other than C[i, j] += A[i, k] B[k, j] "
                    "(or B[j, k])");
  LayoutAttr la = layouts.lookup(op.getLhs()), lb = layouts.lookup(op.getRhs()),
             lc = layouts.lookup(op.getResult());
  if (!la || !lb || !lc)
    return fail(op, "an operand without a register layout");
  const ::fmha::MmaInstruction &instr = target.getMma();
  LinearLayout bLayout =
      bTransposed ? lb.getLayout().transposed() : lb.getLayout();
  FailureOr<Tiling> ta = asTiling(la.getLayout(), instr.a);
  FailureOr<Tiling> tb = asTiling(bLayout, instr.b);
  FailureOr<Tiling> tc = asTiling(lc.getLayout(), instr.c);
  if (failed(ta) || failed(tb) || failed(tc))
    return fail(op, "the operands' layouts are not tilings of ")
           << instr.name << "'s A, B and C fragments";
  if (la.getLayout().getBases(LayoutInput::Warp) !=
          lc.getLayout().getBases(LayoutInput::Warp) ||
      llvm::any_of(bLayout.getBases(LayoutInput::Warp),
                   [](TileCoord c) { return !c.isZero(); }))
    return fail(op, "warps must own the same rows of A and C and each "
                    "the whole of B");
  Type ab = elementOf(op.getLhs());
  if (ab != elementOf(op.getRhs()) || !(ab.isF16() || ab.isBF16()) ||
      !elementOf(op.getAcc()).isF32())
    return fail(op, "multiplies ")
           << ab << " by " << elementOf(op.getRhs()) << " into "
           << elementOf(op.getAcc()) << "; the matrix instruction takes "
           << "f16 or bf16 into f32";
  FailureOr<Value> a = registersOf(op.getLhs(), op);
  vector::TransferReadOp bRead = folded.lookup(op.getRhs());
  FailureOr<Value> bv =
      bRead ? FailureOr<Value>(Value()) : registersOf(op.getRhs(), op);
  FailureOr<Value> c = registersIn(op.getAcc(), lc, op);
  if (failed(a) || failed(bv) || failed(c))
    return failure();
  // The register of element e of the fragment at `corner`.
  using Key = std::pair<int64_t, int64_t>;
  auto index = [](const Tiling &t) {
    std::map<std::pair<Key, int64_t>, int64_t> out;
    for (size_t r = 0; r < t.element.size(); ++r)
      out[{{t.block[r].row, t.block[r].col}, t.element[r]}] = r;
    return out;
  };
  auto ai = index(*ta), bi = index(*tb);
  OpBuilder b(op);
  Location loc = op.getLoc();
  const int64_t kTile = tileType(op.getLhs()).getDimSize(1);
  SmallVector<Value> d(tc->element.size());
  // The first registers of the element pairs of one fragment.
  auto pairRegisters = [](const std::map<std::pair<Key, int64_t>, int64_t> &idx,
                          Key corner,
                          int64_t count) -> FailureOr<SmallVector<int64_t>> {
    SmallVector<int64_t> out;
    for (int64_t e = 0; e < count; e += 2) {
      auto first = idx.find({corner, e}), second = idx.find({corner, e + 1});
      if (first == idx.end() || second == idx.end() ||
          second->second != first->second + 1)
        return failure();
      out.push_back(first->second);
    }
    return out;
  };
  // A folded B read from a buffer the target's matrix load reads: the pairs
  // of each accumulator's products read ahead, a load a group of them.
  std::optional<GpuTarget::MatrixLoad> matrixLoad;
  if (bRead)
    matrixLoad = matrixLoadFor(bRead, lb.getLayout());
  llvm::DenseMap<int64_t, Value> loaded;
  // The element pairs of one fragment: slices of the operand's registers,
  // or read from memory right here when the operand's read is folded into
  // the products.
  auto pairs = [&](Value regs, vector::TransferReadOp read, LayoutAttr l,
                   const std::map<std::pair<Key, int64_t>, int64_t> &idx,
                   Key corner, int64_t count) -> FailureOr<SmallVector<Value>> {
    FailureOr<SmallVector<int64_t>> firsts = pairRegisters(idx, corner, count);
    if (failed(firsts))
      return failure();
    SmallVector<Value> out;
    for (int64_t first : *firsts) {
      if (Value pair = read ? loaded.lookup(first) : Value())
        out.push_back(pair);
      else if (read)
        out.push_back(readRegisters(b, read, l, first, 2));
      else
        out.push_back(vector::ExtractStridedSliceOp::create(
            b, loc, regs, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{2},
            ArrayRef<int64_t>{1}));
    }
    return out;
  };
  const int64_t numB = instr.b.getNumRegisters();
  const int64_t numC = instr.c.getNumRegisters();
  for (size_t r = 0; r < tc->element.size(); r += numC) {
    TileCoord corner = tc->block[r];
    SmallVector<Value> acc;
    for (int64_t e = 0; e < numC; ++e)
      acc.push_back(extract(b, loc, *c, r + e));
    if (matrixLoad) {
      SmallVector<int64_t> need;
      for (int64_t k0 = 0; k0 < kTile; k0 += instr.k) {
        FailureOr<SmallVector<int64_t>> firsts =
            pairRegisters(bi, {k0, corner.col}, numB);
        if (failed(firsts))
          return fail(op, "a fragment of B is not in this thread's "
                          "registers as element pairs");
        llvm::append_range(need, *firsts);
      }
      loaded.clear();
      // Groups of 4 (or 2, or 1) pairs that differ by register masks.
      const int64_t most = target.getMaxMatricesPerLoad();
      for (size_t i = 0; i < need.size();) {
        ArrayRef<int64_t> rest = ArrayRef<int64_t>(need).drop_front(i);
        int64_t count = 1;
        if (most >= 4 && rest.size() >= 4 &&
            rest[3] == (rest[0] ^ rest[1] ^ rest[2]) &&
            llvm::SmallDenseSet<int64_t>(rest.begin(), rest.begin() + 4)
                    .size() == 4)
          count = 4;
        else if (most >= 2 && rest.size() >= 2 && rest[0] != rest[1])
          count = 2;
        SmallVector<Value> got = loadMatrices(
            b, bRead, lb.getLayout(), *matrixLoad, rest.take_front(count));
        for (int64_t j = 0; j < count; ++j)
          loaded[rest[j]] = got[j];
        i += count;
      }
    }
    for (int64_t k0 = 0; k0 < kTile; k0 += instr.k) {
      FailureOr<SmallVector<Value>> aRegs =
          pairs(*a, {}, la, ai, {corner.row, k0}, instr.a.getNumRegisters());
      FailureOr<SmallVector<Value>> bRegs = pairs(
          *bv, bRead, lb, bi, {k0, corner.col}, instr.b.getNumRegisters());
      if (failed(aRegs) || failed(bRegs))
        return fail(op, "a fragment of A or B is not in this thread's "
                        "registers as element pairs");
      acc = target.emitMma(b, loc, ab, *aRegs, *bRegs, acc);
    }
    for (int64_t e = 0; e < numC; ++e)
      d[r + e] = acc[e];
  }
  registers[op.getResult()] = fromElements(b, loc, b.getF32Type(), d);
  return success();
}
