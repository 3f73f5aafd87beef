//===- DistributeTiles.cpp - Vector tiles to the registers of each lane ---===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-distribute-tiles: in each gpu.func, every vector tile that has a
// register layout (the anchors `fmha.to_layout` of --fmha-vectorize-tiles,
// and what follows from them) becomes the vector of the registers one
// thread holds: a rows x cols tile in layout L is vector<N x T> with
// N = L's register count, register r of lane l of warp w holding element
// L(r, l, w) (thread = 32 w + l on a warp of 32). One small rule an op,
// each reading the layouts:
//
//   transfer_read/write   one read or write a run of registers adjacent in
//                         a row, at the coordinate the layout gives the
//                         lane and warp ids; rows past the source masked
//                         as before; replicas (zero lane or warp bases)
//                         write once
//   contract              the target's matrix instruction over the
//                         fragments, when A, B and C are its tilings
//   multi_reduction       over the registers of a row, then across the
//                         lanes whose bases move along columns (xor
//                         shuffles)
//   broadcast of rows     each register takes its row's register
//   elementwise ops       register by register (the same op on the
//                         registers' vector)
//   to_layout             nothing, or a permutation of registers where
//                         only the register bases differ (C to A on
//                         mma.sync)
//   scf.for, scf.if       carry the registers
//
// Layouts are found before any rewrite: anchors give theirs, elementwise
// ops, loops and branches share one, a row reduction gives the row slice of
// its tile, a broadcast of rows takes the row slice of its result. Values
// made from constants and index steps alone (the mask's row and column
// indices) have no layout of their own: they are built in the layout of
// each use (a step's elements are the coordinates of the registers).
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"
#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHADISTRIBUTETILESPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;
using ::fmha::LayoutInput;
using ::fmha::LinearLayout;
using ::fmha::TileCoord;

InFlightDiagnostic Distributor::fail(Operation *op, const Twine &what) {
  return op->emitOpError() << "fmha-distribute-tiles: " << what;
}

/// Index of one axis of register `reg`'s element in `l`, for this thread.
Value Distributor::coord(OpBuilder &b, Location loc, const LinearLayout &l,
                         int64_t reg, bool row) {
  Value part = emitLayoutAxis(b, loc, l, lane, reg, row);
  const auto &warps = l.getBases(LayoutInput::Warp);
  if (llvm::all_of(warps,
                   [&](TileCoord c) { return (row ? c.row : c.col) == 0; }))
    return part;
  LinearLayout warpPart(l.getRows(), l.getCols(), {}, warps);
  Value w = emitLayoutAxis(b, loc, warpPart, warp, 0, row);
  int64_t mine = 0, theirs = 0;
  for (LayoutInput in : {LayoutInput::Register, LayoutInput::Lane})
    for (TileCoord c : l.getBases(in))
      mine |= row ? c.row : c.col;
  for (TileCoord c : warps)
    theirs |= row ? c.row : c.col;
  if (mine & theirs)
    return b.createOrFold<arith::XOrIOp>(loc, part, w);
  return b.createOrFold<arith::AddIOp>(loc, part, w);
}

/// The registers of `v` in layout `l`: its own, or built in `l` where it
/// has none.
FailureOr<Value> Distributor::registersIn(Value v, LayoutAttr l,
                                          Operation *user) {
  if (layouts.isFree(v))
    return build(v, l);
  LayoutAttr own = layouts.lookup(v);
  Value regs = registers.lookup(v);
  if (!own || !regs)
    return fail(user, "an operand has no register layout (anchor the "
                      "tiles with --fmha-assign-layouts before "
                      "--fmha-vectorize-tiles)"),
           failure();
  if (own != l)
    return fail(user, "an operand is in layout ")
               << own << " where " << l << " is needed",
           failure();
  return regs;
}

FailureOr<Value> Distributor::registersOf(Value v, Operation *user) {
  LayoutAttr l = layouts.lookup(v);
  if (!l)
    return fail(user, "an operand has no register layout (anchor the "
                      "tiles with --fmha-assign-layouts before "
                      "--fmha-vectorize-tiles)"),
           failure();
  return registersIn(v, l, user);
}

/// Each register of `tile` takes the register of `line` (in `slice`, the
/// row slice or, 1 x cols, the column slice of `tile`) that holds its row or
/// column.
FailureOr<Value> Distributor::broadcastLine(OpBuilder &b, Location loc,
                                            Value line, LayoutAttr slice,
                                            LayoutAttr tile, Operation *at) {
  const bool columns = isColumnVector(slice.getLayout());
  SmallVector<int64_t> map =
      columns ? colRegisters(tile.getLayout(), slice.getLayout())
              : rowRegisters(tile.getLayout(), slice.getLayout());
  if (map.empty())
    return fail(at, columns ? "columns in layout " : "rows in layout ")
               << slice << " do not lie where the "
               << (columns ? "columns" : "rows") << " of " << tile << " do",
           failure();
  return vector::ShuffleOp::create(b, loc, line, line, map).getResult();
}

/// A value made from constants and steps, in layout `l`, built right
/// after its definition.
FailureOr<Value> Distributor::build(Value v, LayoutAttr l) {
  auto key = std::make_pair(v, Attribute(l));
  if (Value done = built.lookup(key))
    return done;
  Operation *def = v.getDefiningOp();
  OpBuilder b(def->getContext());
  b.setInsertionPointAfter(def);
  Location loc = def->getLoc();
  const LinearLayout layout = l.getLayout();
  Type element = elementOf(v);
  VectorType type = registersType(l, element);
  auto [rows, cols] = tileShape(cast<VectorType>(v.getType()));
  if (!fitsLayout(cast<VectorType>(v.getType()), layout))
    return fail(def, "a ") << v.getType() << " is used in layout " << l,
           failure();
  Value out;
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (!dense)
      return fail(def, "a constant tile that is not a splat"), failure();
    out = arith::ConstantOp::create(
        b, loc, SplatElementsAttr::get(type, dense.getSplatValue<Attribute>()));
  } else if (isa<vector::StepOp>(def)) {
    // The index of each register along the vector: its row, or its column
    // in a column vector.
    const bool alongRows = !isColumnVector(layout);
    SmallVector<Value> elements;
    for (int64_t r = 0; r < layout.getNumRegisters(); ++r)
      elements.push_back(coord(b, loc, layout, r, alongRows));
    out = fromElements(b, loc, element, elements);
  } else if (auto sc = dyn_cast<vector::ShapeCastOp>(def)) {
    auto source = cast<VectorType>(sc.getSource().getType());
    if (tileShape(source) != std::make_pair(rows, cols))
      return fail(def, "a shape cast other than rows to rows x 1"), failure();
    FailureOr<Value> inner = build(sc.getSource(), l);
    if (failed(inner))
      return failure();
    out = *inner;
  } else if (auto bc = dyn_cast<vector::BroadcastOp>(def)) {
    auto source = dyn_cast<VectorType>(bc.getSourceType());
    if (!source) {
      out = vector::BroadcastOp::create(b, loc, type, bc.getSource());
    } else if (source.getRank() == 1 && source.getDimSize(0) == cols &&
               bc.getSource().getDefiningOp<vector::StepOp>()) {
      // The column indices of a tile.
      SmallVector<Value> elements;
      for (int64_t r = 0; r < layout.getNumRegisters(); ++r)
        elements.push_back(coord(b, loc, layout, r, /*row=*/false));
      out = fromElements(b, loc, element, elements);
    } else if ((source.getRank() == 2 && source.getDimSize(1) == 1) ||
               (source.getRank() == 1 && source.getDimSize(0) == cols)) {
      // Rows x 1 over the columns, or a vector down the rows.
      LayoutAttr slice = source.getRank() == 2 ? rowSliceOf(l) : colSliceOf(l);
      FailureOr<Value> inner = build(bc.getSource(), slice);
      if (failed(inner))
        return failure();
      b.setInsertionPointAfter(def);
      FailureOr<Value> spread = broadcastLine(b, loc, *inner, slice, l, def);
      if (failed(spread))
        return failure();
      out = *spread;
    } else {
      return fail(def, "a broadcast of ")
                 << source << " (rows x 1, a vector of the columns, columns "
                 << "of a step or scalars are distributed)",
             failure();
    }
  } else {
    SmallVector<Value> operands;
    for (Value o : def->getOperands()) {
      if (!isa<VectorType>(o.getType())) {
        operands.push_back(o);
        continue;
      }
      FailureOr<Value> inner = build(o, l);
      if (failed(inner))
        return failure();
      operands.push_back(*inner);
    }
    b.setInsertionPointAfter(def);
    OperationState state(loc, def->getName(), operands, {type},
                         def->getAttrs());
    out = b.create(state)->getResult(0);
  }
  built[key] = out;
  return out;
}

LogicalResult Distributor::elementwise(Operation *op) {
  Value result = op->getResult(0);
  LayoutAttr l = layouts.lookup(result);
  if (!l)
    return fail(op, "a tile without a register layout");
  SmallVector<Value> operands;
  for (Value o : op->getOperands()) {
    if (!isa<VectorType>(o.getType())) {
      operands.push_back(o);
      continue;
    }
    FailureOr<Value> regs = registersIn(o, l, op);
    if (failed(regs))
      return failure();
    operands.push_back(*regs);
  }
  OpBuilder b(op);
  OperationState state(op->getLoc(), op->getName(), operands,
                       {registersType(l, elementOf(result))}, op->getAttrs());
  registers[result] = b.create(state)->getResult(0);
  return success();
}

LogicalResult Distributor::toLayout(ToLayoutOp op) {
  LayoutAttr to = op.getLayout();
  Value source = op.getSource();
  OpBuilder b(op);
  if (layouts.isFree(source)) {
    FailureOr<Value> regs = build(source, to);
    if (failed(regs))
      return failure();
    registers[op.getResult()] = *regs;
    return success();
  }
  if (vector::TransferReadOp read = folded.lookup(source)) {
    folded[op.getResult()] = read; // The same layout (foldsIntoProducts).
    return success();
  }
  FailureOr<Value> regs = registersOf(source, op);
  if (failed(regs))
    return failure();
  LayoutAttr from = layouts.lookup(source);
  if (from == to) {
    registers[op.getResult()] = *regs;
    return success();
  }
  // Only the registers differ: a permutation of them.
  LinearLayout f = from.getLayout(), t = to.getLayout();
  if (f.getBases(LayoutInput::Lane) != t.getBases(LayoutInput::Lane) ||
      f.getBases(LayoutInput::Warp) != t.getBases(LayoutInput::Warp) ||
      f.getNumRegisters() != t.getNumRegisters())
    return throughWorkgroupMemory(op, *regs, from);
  SmallVector<int64_t> perm;
  for (int64_t r = 0; r < t.getNumRegisters(); ++r) {
    TileCoord want = t.apply(r, 0, 0);
    int64_t found = -1;
    for (int64_t s = 0; s < f.getNumRegisters() && found < 0; ++s)
      if (f.apply(s, 0, 0) == want)
        found = s;
    if (found < 0)
      return fail(op, "a register of the result is in no register of the "
                      "source");
    perm.push_back(found);
  }
  registers[op.getResult()] =
      vector::ShuffleOp::create(b, op.getLoc(), *regs, *regs, perm);
  return success();
}

LogicalResult Distributor::throughWorkgroupMemory(ToLayoutOp op, Value regs,
                                                  LayoutAttr from) {
  // Each thread writes its registers at their (row, col) of a workgroup
  // buffer of the tile and reads those of the new layout back: AMD's P,
  // whose MFMA / WMMA C fragment is not the same lane's A fragment. A
  // barrier before (the buffer's last readers are done) and one between.
  VectorType type = tileType(op.getSource());
  auto func = op->getParentOfType<gpu::GPUFuncOp>();
  if (!func || !type || type.getRank() != 2)
    return fail(op, "converts a tile outside a gpu.func or not 2-D");
  Type element = type.getElementType();
  const LinearLayout f = from.getLayout(), t = op.getLayout().getLayout();
  MLIRContext *ctx = op.getContext();
  Attribute space = IntegerAttr::get(IntegerType::get(ctx, 64),
                                     target.getWorkgroupAddressSpace());
  auto bufferType = MemRefType::get(type.getShape(), element,
                                    MemRefLayoutAttrInterface(), space);
  Value buffer = func.addWorkgroupAttribution(bufferType, op.getLoc());
  OpBuilder b(op);
  Location loc = op.getLoc();
  gpu::BarrierOp::create(b, loc);
  for (auto [first, len] : runs(f, element)) {
    Value run = vector::ExtractStridedSliceOp::create(
        b, loc, regs, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{len},
        ArrayRef<int64_t>{1});
    vector::StoreOp::create(b, loc, run, buffer,
                            ValueRange{coord(b, loc, f, first, /*row=*/true),
                                       coord(b, loc, f, first, /*row=*/false)});
  }
  gpu::BarrierOp::create(b, loc);
  Value out = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(registersType(op.getLayout(), element)));
  for (auto [first, len] : runs(t, element)) {
    Value run = vector::LoadOp::create(
        b, loc, VectorType::get({len}, element), buffer,
        ValueRange{coord(b, loc, t, first, /*row=*/true),
                   coord(b, loc, t, first, /*row=*/false)});
    out = vector::InsertStridedSliceOp::create(
        b, loc, run, out, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{1});
  }
  registers[op.getResult()] = out;
  return success();
}

LogicalResult Distributor::broadcast(vector::BroadcastOp op) {
  LayoutAttr l = layouts.lookup(op.getResult());
  auto source = dyn_cast<VectorType>(op.getSourceType());
  const bool ofRows =
      source && source.getRank() == 2 && source.getDimSize(1) == 1;
  const bool ofColumns = l && source && source.getRank() == 1 &&
                         source.getDimSize(0) == l.getCols();
  if (!l || !(ofRows || ofColumns))
    return fail(op, "a broadcast other than of rows over a tile's columns or "
                    "of columns down its rows");
  LayoutAttr slice = ofRows ? rowSliceOf(l) : colSliceOf(l);
  FailureOr<Value> line = registersIn(op.getSource(), slice, op);
  if (failed(line))
    return failure();
  OpBuilder b(op);
  FailureOr<Value> spread = broadcastLine(b, op.getLoc(), *line, slice, l, op);
  if (failed(spread))
    return failure();
  registers[op.getResult()] = *spread;
  return success();
}

/// A value carried by a loop or branch: retyped in place to its registers.
LogicalResult Distributor::retype(Value v) {
  LayoutAttr l = layouts.lookup(v);
  if (!l) {
    Operation *at = v.getDefiningOp() ? v.getDefiningOp()
                                      : v.getParentBlock()->getParentOp();
    return fail(at, "carries a tile without a register layout");
  }
  v.setType(registersType(l, elementOf(v)));
  registers[v] = v;
  return success();
}

LogicalResult Distributor::rewrite(Operation *op) {
  auto hasTile = [&](ValueRange values) {
    return llvm::any_of(values, [&](Value v) { return isTile(v); });
  };
  // Asynchronous products: an anchor of one stands for it; any other use
  // waits for it.
  if (auto anchor = dyn_cast<ToLayoutOp>(op); anchor && aliasPending(anchor)) {
    replaced.push_back(op);
    return success();
  }
  waitForUses(op);
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    for (auto [init, arg, result] :
         llvm::zip(loop.getInitArgsMutable(), loop.getRegionIterArgs(),
                   loop.getResults())) {
      if (!isTile(init.get()))
        continue;
      if (!layouts.lookup(arg))
        return fail(op, "carries a tile without a register layout");
      FailureOr<Value> regs = registersIn(init.get(), layouts.lookup(arg), op);
      if (failed(regs) || failed(retype(arg)) || failed(retype(result)))
        return failure();
      init.set(*regs);
    }
    return success();
  }
  if (auto branch = dyn_cast<scf::IfOp>(op)) {
    for (Value result : branch.getResults())
      if (isTileVector(result.getType()) && failed(retype(result)))
        return failure();
    return success();
  }
  if (auto yield = dyn_cast<scf::YieldOp>(op)) {
    Operation *parent = yield->getParentOp();
    for (OpOperand &operand : yield->getOpOperands()) {
      if (!isTile(operand.get()))
        continue;
      Value carried = parent->getResult(operand.getOperandNumber());
      FailureOr<Value> regs =
          registersIn(operand.get(), layouts.lookup(carried), op);
      if (failed(regs))
        return failure();
      operand.set(*regs);
    }
    return success();
  }
  if (auto copy = dyn_cast<CopyAsyncOp>(op)) {
    replaced.push_back(op);
    return copyAsync(copy);
  }
  if (auto wait = dyn_cast<CopyWaitOp>(op)) {
    OpBuilder b(op);
    target.emitCopyWait(b, op->getLoc(), wait.getPending());
    if (warpgroupOperands)
      target.emitWarpgroupOperandFence(b, op->getLoc());
    replaced.push_back(op);
    return success();
  }
  if (auto add = dyn_cast<AtomicAddOp>(op)) {
    replaced.push_back(op);
    return atomicAdd(add);
  }
  if (auto add = dyn_cast<AddAsyncOp>(op)) {
    replaced.push_back(op);
    return addAsync(add);
  }
  if (auto wait = dyn_cast<AddWaitOp>(op)) {
    OpBuilder b(op);
    target.emitBulkAddWait(b, op->getLoc(), wait.getRead(),
                           firstThread(b, op->getLoc()));
    replaced.push_back(op);
    return success();
  }
  if (auto write = dyn_cast<vector::TransferWriteOp>(op)) {
    if (!isTile(write.getVector()))
      return success();
    replaced.push_back(op);
    return transferWrite(write);
  }
  // Ops that make tiles.
  if (op->getNumResults() != 1 || !isTileVector(op->getResult(0).getType())) {
    if (hasTile(op->getOperands()) && !isa<scf::ForOp, scf::IfOp>(op))
      return fail(op, "reads a vector tile and is not distributed");
    return success();
  }
  replaced.push_back(op);
  if (layouts.isFree(op->getResult(0)))
    return success(); // Built where it is used.
  if (auto anchor = dyn_cast<ToLayoutOp>(op))
    return toLayout(anchor);
  if (auto read = dyn_cast<vector::TransferReadOp>(op))
    return transferRead(read);
  if (auto contract = dyn_cast<vector::ContractionOp>(op))
    return contraction(contract);
  if (auto red = dyn_cast<vector::MultiDimReductionOp>(op))
    return reduction(red);
  if (auto bc = dyn_cast<vector::BroadcastOp>(op))
    return broadcast(bc);
  if (isa<PackTileOp, UnpackTileOp>(op))
    return registerOrder(op);
  if (auto sc = dyn_cast<vector::ShapeCastOp>(op)) {
    FailureOr<Value> regs = registersOf(sc.getSource(), op);
    if (failed(regs))
      return failure();
    registers[sc.getResult()] = *regs;
    return success();
  }
  if (op->hasTrait<OpTrait::Elementwise>())
    return elementwise(op);
  return fail(op, "makes a vector tile and is not distributed");
}

LogicalResult Distributor::registerOrder(Operation *op) {
  Value source = op->getOperand(0), result = op->getResult(0);
  LayoutAttr in = layouts.lookup(source), out = layouts.lookup(result);
  const ::fmha::LinearLayout &order =
      op->getAttrOfType<LayoutAttr>("order").getLayout();
  // fmha.pack_tile: the tile in its order, packed in registerOrder(order);
  // fmha.unpack_tile: the tile in what the packed tile's layout holds.
  const bool same =
      in && out &&
      (isa<PackTileOp>(op) ? in.getLayout() == order &&
                                 out.getLayout() == ::fmha::registerOrder(order)
                           : out.getLayout() == ::fmha::fromRegisterOrder(
                                                    order, in.getLayout()));
  if (!same)
    return fail(op, "rearranges a tile between layouts that do not hold it in "
                    "the same registers (a packed tile is its order's "
                    "registers)");
  FailureOr<Value> regs = registersOf(source, op);
  if (failed(regs))
    return failure();
  registers[result] = *regs;
  return success();
}

LogicalResult Distributor::run(gpu::GPUFuncOp func) {
  SmallVector<Operation *> ops;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });
  if (llvm::none_of(ops, [](Operation *op) {
        return isa<CopyAsyncOp, CopyWaitOp>(op) ||
               llvm::any_of(op->getResultTypes(), isTileVector);
      }))
    return success();
  if (failed(layouts.run(ops)))
    return failure();
  warpgroupOperands = llvm::any_of(func.getWorkgroupAttributions(),
                                   [](Value a) { return workgroupSwizzle(a); });
  for (Operation *op : ops) {
    for (Value v : op->getResults())
      if (isTileVector(v.getType()))
        tileTypes[v] = cast<VectorType>(v.getType());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Value v : block.getArguments())
          if (isTileVector(v.getType()))
            tileTypes[v] = cast<VectorType>(v.getType());
  }
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  Location loc = func.getLoc();
  IndexMath im{b, loc};
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = b.createOrFold<arith::RemUIOp>(loc, tid, im.c(target.getWarpSize()));
  warp = b.createOrFold<arith::DivUIOp>(loc, tid, im.c(target.getWarpSize()));
  for (Operation *op : ops)
    if (failed(rewrite(op)))
      return failure();
  for (Operation *op : llvm::reverse(replaced))
    op->dropAllUses();
  for (Operation *op : llvm::reverse(replaced))
    op->erase();
  return success();
}

namespace {

struct FmhaDistributeTilesPass
    : mlir::fmha::impl::FmhaDistributeTilesPassBase<FmhaDistributeTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    std::unique_ptr<GpuTarget> gpuTarget = createGpuTarget(
        target, chip, mfma, getOperation(), "fmha-distribute-tiles");
    if (!gpuTarget)
      return signalPassFailure();
    if (indexBitwidth != 32 && indexBitwidth != 64) {
      getOperation()->emitError()
          << "fmha-distribute-tiles: index-bitwidth must be 32 or 64, got "
          << static_cast<unsigned>(indexBitwidth);
      return signalPassFailure();
    }
    gpuTarget->setIndexBitwidth(indexBitwidth);
    for (Operation *f : gpuFuncsIn(getOperation())) {
      Distributor distributor(*gpuTarget);
      distributor.warpgroupUnsupported = gpuTarget->checkWarpgroupMma(chip);
      distributor.bulkAddUnsupported = gpuTarget->checkBulkAdd(chip);
      if (failed(distributor.run(cast<gpu::GPUFuncOp>(f))))
        return signalPassFailure();
    }
  }
};

} // namespace
