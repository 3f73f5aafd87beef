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
  bool aTransposed = maps[0] == map({k, i});
  bool bTransposed = maps[1] == map({j, k});
  if (maps.size() != 3 || !(aTransposed || maps[0] == map({i, k})) ||
      maps[2] != map({i, j}) || !(bTransposed || maps[1] == map({k, j})))
    return fail(op, "a contraction other than C[i, j] += A[i, k] B[k, j] "
                    "(or A[k, i], B[j, k])");
  LayoutAttr la = layouts.lookup(op.getLhs()), lb = layouts.lookup(op.getRhs()),
             lc = layouts.lookup(op.getResult());
  if (!la || !lb || !lc)
    return fail(op, "an operand without a register layout");
  const ::fmha::MmaInstruction &instr = target.getMma();
  // A transposed operand's layout is the transpose of the fragments' (the
  // same registers).
  LinearLayout aLayout =
      aTransposed ? la.getLayout().transposed() : la.getLayout();
  LinearLayout bLayout =
      bTransposed ? lb.getLayout().transposed() : lb.getLayout();
  FailureOr<Tiling> ta = asTiling(aLayout, instr.a);
  FailureOr<Tiling> tb = asTiling(bLayout, instr.b);
  FailureOr<Tiling> tc = asTiling(lc.getLayout(), instr.c);
  if (failed(ta) || failed(tb) || failed(tc))
    return fail(op, "the operands' layouts are not tilings of ")
           << instr.name << "'s A, B and C fragments";
  Type ab = elementOf(op.getLhs());
  if (ab != elementOf(op.getRhs()) || !(ab.isF16() || ab.isBF16()) ||
      !elementOf(op.getAcc()).isF32())
    return fail(op, "multiplies ")
           << ab << " by " << elementOf(op.getRhs()) << " into "
           << elementOf(op.getAcc()) << "; the matrix instruction takes "
           << "f16 or bf16 into f32";
  // An operand read where the products use it (a folded read) comes from
  // memory here, one k step at a time.
  vector::TransferReadOp aRead = folded.lookup(op.getLhs());
  vector::TransferReadOp bRead = folded.lookup(op.getRhs());
  if (bRead && workgroupSwizzle(bRead.getBase()))
    return warpgroupContraction(op, aTransposed, bTransposed, *ta, *tc, aRead,
                                bRead);
  if (aLayout.getBases(LayoutInput::Warp) !=
          lc.getLayout().getBases(LayoutInput::Warp) ||
      llvm::any_of(bLayout.getBases(LayoutInput::Warp),
                   [](TileCoord c) { return !c.isZero(); }))
    return fail(op, "warps must own the same rows of A and C and each "
                    "the whole of B");
  if (aRead && aTransposed)
    return fail(op, "reads A transposed from memory; only warpgroup products "
                    "do (B in the 128-byte swizzle)");
  if (aRead && workgroupSwizzle(aRead.getBase()))
    return fail(op, "reads A from a buffer in the 128-byte swizzle and B "
                    "from elsewhere; only warpgroup products (B in such a "
                    "buffer) read it");
  FailureOr<Value> av =
      aRead ? FailureOr<Value>(Value()) : registersOf(op.getLhs(), op);
  FailureOr<Value> bv =
      bRead ? FailureOr<Value>(Value()) : registersOf(op.getRhs(), op);
  FailureOr<Value> c = registersIn(op.getAcc(), lc, op);
  if (failed(av) || failed(bv) || failed(c))
    return failure();
  // The register of element e of the fragment at `corner`.
  using Key = std::pair<int64_t, int64_t>;
  using Index = std::map<std::pair<Key, int64_t>, int64_t>;
  auto index = [](const Tiling &t) {
    Index out;
    for (size_t r = 0; r < t.element.size(); ++r)
      out[{{t.block[r].row, t.block[r].col}, t.element[r]}] = r;
    return out;
  };
  OpBuilder b(op);
  Location loc = op.getLoc();
  // The first registers of the element pairs of one fragment.
  auto pairRegisters = [](const Index &idx, Key corner,
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
  /// One operand: its fragments' pairs, from its registers or, folded, from
  /// memory (by the target's matrix load where one reads the buffer).
  struct Operand {
    Value regs;
    vector::TransferReadOp read;
    LayoutAttr layout;
    Index idx;
    int64_t count;
    std::optional<GpuTarget::MatrixLoad> load = std::nullopt;
    std::map<int64_t, Value> pairs;
  };
  Operand operands[2] = {
      {*av, aRead, la, index(*ta), instr.a.getNumRegisters()},
      {*bv, bRead, lb, index(*tb), instr.b.getNumRegisters()}};
  for (Operand &o : operands)
    if (o.read)
      o.load = matrixLoadFor(o.read, o.layout.getLayout());
  // The pairs of the fragments at `corners`: each read once, four (or two)
  // pairs that differ by register masks a matrix load.
  auto fetch = [&](Operand &o, ArrayRef<Key> corners) -> LogicalResult {
    o.pairs.clear();
    SmallVector<int64_t> need;
    for (Key corner : corners) {
      FailureOr<SmallVector<int64_t>> firsts =
          pairRegisters(o.idx, corner, o.count);
      if (failed(firsts))
        return failure();
      llvm::append_range(need, *firsts);
    }
    const int64_t most = o.load ? target.getMaxMatricesPerLoad() : 1;
    for (size_t i = 0; i < need.size();) {
      ArrayRef<int64_t> rest = ArrayRef<int64_t>(need).drop_front(i);
      int64_t count = 1;
      if (most >= 4 && rest.size() >= 4 &&
          rest[3] == (rest[0] ^ rest[1] ^ rest[2]) &&
          llvm::SmallDenseSet<int64_t>(rest.begin(), rest.begin() + 4).size() ==
              4)
        count = 4;
      else if (most >= 2 && rest.size() >= 2 && rest[0] != rest[1])
        count = 2;
      if (o.load) {
        SmallVector<Value> got = loadMatrices(b, o.read, o.layout.getLayout(),
                                              *o.load, rest.take_front(count));
        for (int64_t j = 0; j < count; ++j)
          o.pairs[rest[j]] = got[j];
      } else if (o.read) {
        o.pairs[rest[0]] = readRegisters(b, o.read, o.layout, rest[0], 2);
      } else {
        o.pairs[rest[0]] = vector::ExtractStridedSliceOp::create(
            b, loc, o.regs, ArrayRef<int64_t>{rest[0]}, ArrayRef<int64_t>{2},
            ArrayRef<int64_t>{1});
      }
      i += count;
    }
    return success();
  };
  auto pairsAt = [&](Operand &o, Key corner) -> FailureOr<SmallVector<Value>> {
    FailureOr<SmallVector<int64_t>> firsts =
        pairRegisters(o.idx, corner, o.count);
    if (failed(firsts))
      return failure();
    SmallVector<Value> out;
    for (int64_t first : *firsts) {
      auto it = o.pairs.find(first);
      if (it == o.pairs.end())
        return failure();
      out.push_back(it->second);
    }
    return out;
  };
  // k steps outermost: each k step reads the A fragments of the rows and
  // the B fragments of the columns it needs once, then multiplies every
  // accumulator (two fragments of rows share each B fragment, and a folded
  // operand holds one k step at a time).
  const int64_t numC = instr.c.getNumRegisters();
  const int64_t kTile = tileType(op.getRhs()).getDimSize(bTransposed ? 1 : 0);
  SmallVector<Key> rows, cols;
  SmallVector<SmallVector<Value>> accs;
  for (size_t r = 0; r < tc->element.size(); r += numC) {
    TileCoord corner = tc->block[r];
    if (!llvm::is_contained(rows, Key{corner.row, 0}))
      rows.push_back({corner.row, 0});
    if (!llvm::is_contained(cols, Key{0, corner.col}))
      cols.push_back({0, corner.col});
    SmallVector<Value> acc;
    for (int64_t e = 0; e < numC; ++e)
      acc.push_back(extract(b, loc, *c, r + e));
    accs.push_back(acc);
  }
  const int64_t kEnd = reductionSteps(op, kTile, instr.k) * instr.k;
  for (int64_t k0 = 0; k0 < kEnd; k0 += instr.k) {
    SmallVector<Key> aCorners, bCorners;
    for (Key row : rows)
      aCorners.push_back({row.first, k0});
    for (Key col : cols)
      bCorners.push_back({k0, col.second});
    if (failed(fetch(operands[0], aCorners)) ||
        failed(fetch(operands[1], bCorners)))
      return fail(op, "a fragment of A or B is not in this thread's "
                      "registers as element pairs");
    for (size_t f = 0; f < accs.size(); ++f) {
      TileCoord corner = tc->block[f * numC];
      FailureOr<SmallVector<Value>> a = pairsAt(operands[0], {corner.row, k0});
      FailureOr<SmallVector<Value>> bb = pairsAt(operands[1], {k0, corner.col});
      if (failed(a) || failed(bb))
        return fail(op, "the fragments of A rows and B columns a k step "
                        "reads do not cover the accumulator at (")
               << corner.row << ", " << corner.col << ")";
      accs[f] = target.emitMma(b, loc, ab, *a, *bb, accs[f]);
    }
  }
  SmallVector<Value> d;
  for (ArrayRef<Value> acc : accs)
    llvm::append_range(d, acc);
  registers[op.getResult()] = fromElements(b, loc, b.getF32Type(), d);
  return success();
}

int64_t Distributor::reductionSteps(vector::ContractionOp op, int64_t kTile,
                                    int64_t k) {
  auto extent = op->getAttrOfType<IntegerAttr>(kReductionExtentAttrName);
  const int64_t used = extent ? std::min(extent.getInt(), kTile) : kTile;
  return llvm::divideCeil(used, k);
}
