//===- TileLayouts.cpp - The register layout of each vector tile ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "TileLayouts.h"

#include "fmha/Dialect/FmhaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::fmha;
using ::fmha::LayoutInput;
using ::fmha::LinearLayout;
using ::fmha::TileCoord;

bool mlir::fmha::isTileVector(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  return vector && (vector.getRank() == 1 || vector.getRank() == 2) &&
         !vector.isScalable();
}

std::pair<int64_t, int64_t> mlir::fmha::tileShape(VectorType type) {
  return {type.getDimSize(0), type.getRank() == 2 ? type.getDimSize(1) : 1};
}

bool mlir::fmha::fitsLayout(VectorType type, const LinearLayout &l) {
  auto [rows, cols] = tileShape(type);
  if (l.getRows() == rows && l.getCols() == cols)
    return true;
  return type.getRank() == 1 && l.getRows() == 1 && l.getCols() == rows;
}

bool mlir::fmha::isColumnVector(const LinearLayout &l) {
  return l.getRows() == 1 && l.getCols() > 1;
}

/// Which register of `slice` (the slice of `tile` along rows, or along
/// columns) holds the line of each register of `tile`; empty where the
/// lanes and warps of the two disagree on lines.
static SmallVector<int64_t> lineRegisters(const LinearLayout &tile,
                                          const LinearLayout &slice,
                                          bool alongRows) {
  auto line = [&](TileCoord c) { return alongRows ? c.row : c.col; };
  auto across = [&](TileCoord c) { return alongRows ? c.col : c.row; };
  if (alongRows ? (slice.getCols() != 1 || slice.getRows() != tile.getRows())
                : (slice.getRows() != 1 || slice.getCols() != tile.getCols()))
    return {};
  for (LayoutInput in : {LayoutInput::Lane, LayoutInput::Warp}) {
    const auto &t = tile.getBases(in), &s = slice.getBases(in);
    if (t.size() != s.size())
      return {};
    for (auto [tb, sb] : llvm::zip(t, s))
      if (line(tb) != line(sb) || across(sb) != 0)
        return {};
  }
  SmallVector<int64_t> out;
  for (int64_t r = 0; r < tile.getNumRegisters(); ++r) {
    int64_t want = line(tile.apply(r, 0, 0)), found = -1;
    for (int64_t s = 0; s < slice.getNumRegisters() && found < 0; ++s)
      if (line(slice.apply(s, 0, 0)) == want)
        found = s;
    if (found < 0)
      return {};
    out.push_back(found);
  }
  return out;
}

SmallVector<int64_t> mlir::fmha::rowRegisters(const LinearLayout &tile,
                                              const LinearLayout &slice) {
  return lineRegisters(tile, slice, /*alongRows=*/true);
}

SmallVector<int64_t> mlir::fmha::colRegisters(const LinearLayout &tile,
                                              const LinearLayout &slice) {
  return lineRegisters(tile, slice, /*alongRows=*/false);
}

FailureOr<Tiling> mlir::fmha::asTiling(const LinearLayout &layout,
                                       const LinearLayout &frag) {
  const auto &regs = layout.getBases(LayoutInput::Register);
  const auto &fragRegs = frag.getBases(LayoutInput::Register);
  if (regs.size() < fragRegs.size() ||
      layout.getBases(LayoutInput::Lane) != frag.getBases(LayoutInput::Lane))
    return failure();
  for (size_t i = 0; i < fragRegs.size(); ++i)
    if (regs[i] != fragRegs[i])
      return failure();
  auto isBlock = [&](TileCoord c) {
    return c.row % frag.getRows() == 0 && c.col % frag.getCols() == 0;
  };
  for (size_t i = fragRegs.size(); i < regs.size(); ++i)
    if (!isBlock(regs[i]))
      return failure();
  for (TileCoord c : layout.getBases(LayoutInput::Warp))
    if (!isBlock(c))
      return failure();
  Tiling t;
  const int64_t n = frag.getNumRegisters();
  for (int64_t r = 0; r < layout.getNumRegisters(); ++r) {
    t.element.push_back(r % n);
    t.block.push_back(layout.apply(r - r % n, 0, 0));
  }
  return t;
}

bool mlir::fmha::feedsProductsAs(vector::TransferReadOp read, unsigned operand,
                                 bool oneLayout) {
  return feedsProductsAs(read.getResult(), operand, oneLayout);
}

bool mlir::fmha::feedsProductsAs(Value tile, unsigned operand, bool oneLayout) {
  Operation *read = tile.getDefiningOp();
  if (!read)
    return false;
  // In a loop, products of the same loop; outside any loop, in a branch
  // (the product after a loop, fmha-defer-pv's last one), products of the
  // read's block. A read at the kernel's top level is read once, in
  // registers.
  auto loop = read->getParentOfType<scf::ForOp>();
  if (read->use_empty() ||
      (!loop && isa<FunctionOpInterface>(read->getParentOp())))
    return false;
  LayoutAttr layout;
  for (Operation *user : read->getUsers()) {
    auto anchor = dyn_cast<ToLayoutOp>(user);
    if (!anchor || anchor->use_empty() ||
        (oneLayout && layout && anchor.getLayout() != layout))
      return false;
    layout = anchor.getLayout();
    for (OpOperand &use : anchor->getUses()) {
      auto contract = dyn_cast<vector::ContractionOp>(use.getOwner());
      if (!contract || use.getOperandNumber() != operand ||
          contract->getParentOfType<scf::ForOp>() != loop ||
          (!loop && contract->getBlock() != read->getBlock()))
        return false;
    }
  }
  return true;
}

LayoutAttr mlir::fmha::rowSliceOf(LayoutAttr l) {
  return LayoutAttr::get(l.getContext(), ::fmha::rowSlice(l.getLayout()));
}

LayoutAttr mlir::fmha::colSliceOf(LayoutAttr l) {
  return LayoutAttr::get(l.getContext(), ::fmha::colSlice(l.getLayout()));
}

/// Made from constants and index steps alone: built where it is used.
bool TileLayoutAnalysis::isFree(Value v) {
  if (!isTileVector(v.getType()))
    return false;
  auto it = freeCache.find(v);
  if (it != freeCache.end())
    return it->second;
  bool free = false;
  if (Operation *def = v.getDefiningOp()) {
    if (isa<arith::ConstantOp, vector::StepOp>(def))
      free = true;
    else if (auto bc = dyn_cast<vector::BroadcastOp>(def))
      free = !isa<VectorType>(bc.getSourceType()) || isFree(bc.getSource());
    else if (auto sc = dyn_cast<vector::ShapeCastOp>(def))
      free = isFree(sc.getSource());
    else if (def->hasTrait<OpTrait::Elementwise>())
      free = llvm::all_of(def->getOperands(), [&](Value o) {
        return !isa<VectorType>(o.getType()) || isFree(o);
      });
  }
  freeCache[v] = free;
  return free;
}

/// Gives `v` the layout `l`; a diagnostic when it has another.
LogicalResult TileLayoutAnalysis::give(Value v, LayoutAttr l, bool &changed) {
  if (!l || !isTileVector(v.getType()) || isFree(v))
    return success();
  auto [it, inserted] = layouts.try_emplace(v, l);
  if (inserted) {
    changed = true;
    return success();
  }
  if (it->second == l)
    return success();
  Operation *at =
      v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp();
  return at->emitOpError()
         << "fmha-distribute-tiles: a value would be in two layouts, "
         << it->second << " and " << l;
}

/// All of `values` in one layout (that of any that has one).
LogicalResult TileLayoutAnalysis::unify(ArrayRef<Value> values, bool &changed) {
  LayoutAttr l;
  for (Value v : values)
    if (!l)
      l = layouts.lookup(v);
  for (Value v : values)
    if (failed(give(v, l, changed)))
      return failure();
  return success();
}

LogicalResult TileLayoutAnalysis::propagate(Operation *op, bool &changed) {
  if (auto anchor = dyn_cast<ToLayoutOp>(op))
    return give(anchor.getResult(), anchor.getLayout(), changed);
  if (op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1 &&
      isTileVector(op->getResult(0).getType())) {
    SmallVector<Value> values(op->getResults());
    for (Value o : op->getOperands())
      if (isa<VectorType>(o.getType()))
        values.push_back(o);
    return unify(values, changed);
  }
  if (auto sc = dyn_cast<vector::ShapeCastOp>(op))
    return unify({sc.getSource(), sc.getResult()}, changed);
  // A tile in its order's registers, and a packed tile read back: the same
  // registers (fmha::registerOrder, fmha::fromRegisterOrder).
  if (auto pack = dyn_cast<PackTileOp>(op)) {
    const ::fmha::LinearLayout &order = pack.getOrder().getLayout();
    if (LayoutAttr held = layouts.lookup(pack.getTile());
        held && held != pack.getOrder())
      return op->emitOpError() << "fmha-distribute-tiles: packs a tile held in "
                               << held << " in the register order of "
                               << pack.getOrder() << " (convert it first)";
    if (failed(give(pack.getTile(), pack.getOrder(), changed)))
      return failure();
    return give(pack.getPacked(),
                LayoutAttr::get(op->getContext(), ::fmha::registerOrder(order)),
                changed);
  }
  if (auto unpack = dyn_cast<UnpackTileOp>(op)) {
    const ::fmha::LinearLayout &order = unpack.getOrder().getLayout();
    if (LayoutAttr l = layouts.lookup(unpack.getPacked()))
      return give(unpack.getTile(),
                  LayoutAttr::get(op->getContext(), ::fmha::fromRegisterOrder(
                                                        order, l.getLayout())),
                  changed);
    if (LayoutAttr l = layouts.lookup(unpack.getTile()))
      return give(unpack.getPacked(),
                  LayoutAttr::get(op->getContext(), ::fmha::toRegisterOrder(
                                                        order, l.getLayout())),
                  changed);
    return success();
  }
  if (auto bc = dyn_cast<vector::BroadcastOp>(op)) {
    LayoutAttr l = layouts.lookup(bc.getResult());
    auto source = dyn_cast<VectorType>(bc.getSourceType());
    if (l && source && source.getRank() == 2 && source.getDimSize(1) == 1)
      return give(bc.getSource(), rowSliceOf(l), changed);
    // A vector down the rows of a tile (its columns'; a step of column
    // indices is built where it is used).
    if (l && source && source.getRank() == 1 &&
        !bc.getSource().getDefiningOp<vector::StepOp>())
      return give(bc.getSource(), colSliceOf(l), changed);
    return success();
  }
  if (auto red = dyn_cast<vector::MultiDimReductionOp>(op)) {
    if (LayoutAttr l = layouts.lookup(red.getSource()))
      if (failed(give(red.getResult(), rowSliceOf(l), changed)))
        return failure();
    return unify({red.getAcc(), red.getResult()}, changed);
  }
  if (auto contract = dyn_cast<vector::ContractionOp>(op))
    return unify({contract.getAcc(), contract.getResult()}, changed);
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [init, arg, result, next] :
         llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(),
                   loop.getResults(), yield.getOperands()))
      if (failed(unify({init, arg, result, next}, changed)))
        return failure();
    return success();
  }
  if (auto branch = dyn_cast<scf::IfOp>(op)) {
    for (auto [i, result] : llvm::enumerate(branch.getResults())) {
      SmallVector<Value> values = {result};
      for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()})
        if (!region->empty())
          values.push_back(region->front().getTerminator()->getOperand(i));
      if (failed(unify(values, changed)))
        return failure();
    }
  }
  return success();
}

LogicalResult TileLayoutAnalysis::run(ArrayRef<Operation *> ops) {
  while (true) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation *op : ops)
        if (failed(propagate(op, changed)))
          return failure();
    }
    // A value read to be anchored takes its anchor's layout (only after
    // every other rule: a converted value has its own).
    for (Operation *op : ops)
      if (auto anchor = dyn_cast<ToLayoutOp>(op))
        if (!layouts.count(anchor.getSource()) &&
            failed(give(anchor.getSource(), anchor.getLayout(), changed)))
          return failure();
    if (!changed)
      return success();
  }
}
