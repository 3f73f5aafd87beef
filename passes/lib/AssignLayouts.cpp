//===- AssignLayouts.cpp - Register layouts of the attention's tiles ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-assign-layouts: the static tiles of the forward on values get the
// #fmha.layout of the register fragments that hold them. Each operand of a
// tile op has a role in the two products S = Q K^T and O += P V:
//
//   q, p            A of the instruction, each warp a band of rows
//   k               B of S transposed (the tile is keys x head dim), every
//                   warp the whole tile
//   v               B of O, every warp the whole tile
//   s, acc, o       C, each warp a band of rows
//   m, l, lse       the row slice of C (a row's value where its row lives)
//
// The backward's tiles take the same roles in its products: dP = dO V^T and
// the dQ loop's scores like S (A, B transposed, C), dQ += dS K like O += P V
// (dS the A operand), Dsum's operands, fills and stores C, the lse and Dsum
// the row slice. The dK/dV loop's tiles are transposed (keys as rows): S^T =
// K Q^T and dP^T = V dO^T take k and v as A and q and dO as B transposed,
// dV += P^T dO and dK += dS^T Q take P^T and dS^T as A and dO and q as B,
// and the lse and Dsum, one value a query, are the column slice of C. In a
// dK/dV loop of more keys than the dQ part has queries (128-key tiles over
// 8 warps, 64 queries) the dQ part's warps run out of rows: each group of
// warps that covers its rows computes a block of its columns (C split by
// rows, then columns; A, the same rows, whole in every group). Its
// atomic dQ += dS K reads dS^T transposed: the tile takes the transpose of
// A's layout (the queries across the warps), a conversion from its C layout
// (the keys across them) that goes through workgroup memory on the GPU; the
// product converts (through workgroup memory too) to the line layout, whose
// lanes hold consecutive elements of a row, so that a warp's atomic adds go
// to consecutive addresses.
//
// The pass walks the function in order: a tile op's `tensor.empty` outs are
// rebuilt in their layout, any other operand in another layout (q, k and v
// entering registers; p on AMD, where C of S is not A of PV) gets an
// fmha.convert_layout; its results take their outs' types; scf.for carries
// the types its inits have and scf.if returns what its branches yield; an
// op outside the tile level that reads a typed tile (o and lse going back to
// the shared outs) reads it through a conversion to the plain tensor.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/Support/MmaInstruction.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAASSIGNLAYOUTSPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;
using ::fmha::LinearLayout;
using ::fmha::MmaInstruction;
using ::fmha::WarpSplit;

namespace {

/// What a tile is to the matrix instruction.
enum class Role { A, ATransposed, BTransposed, B, C, Row, Col, Line };

/// The roles of a tile op's tensor operands, in order; empty for other ops.
SmallVector<Role> rolesOf(Operation *op) {
  // The backward's per-query vectors run along the columns of its transposed
  // tiles (keys as rows).
  auto perQuery = [](bool transposed) {
    return transposed ? Role::Col : Role::Row;
  };
  return TypeSwitch<Operation *, SmallVector<Role>>(op)
      .Case([](TileInitOp) {
        return SmallVector<Role>{Role::Row, Role::Row, Role::C};
      })
      // S^T = K Q^T: k is A and q is B.
      .Case([](TileQKOp qk) {
        return qk.getTransposed()
                   ? SmallVector<Role>{Role::BTransposed, Role::A, Role::C}
                   : SmallVector<Role>{Role::A, Role::BTransposed, Role::C};
      })
      .Case([](TileSoftmaxOp) {
        return SmallVector<Role>{Role::C, Role::Row, Role::Row, Role::C};
      })
      .Case(
          [](TilePVOp) { return SmallVector<Role>{Role::A, Role::B, Role::C}; })
      .Case([](TileFinalizeOp) {
        return SmallVector<Role>{Role::Row, Role::Row, Role::C, Role::C,
                                 Role::Row};
      })
      .Case([](TileFillOp) { return SmallVector<Role>{Role::C}; })
      .Case([](AtomicAddOp) { return SmallVector<Role>{Role::Line}; })
      .Case([](TileStoreOp) { return SmallVector<Role>{Role::C, Role::C}; })
      .Case([](TileMatmulOp mm) {
        return SmallVector<Role>{
            mm.getTransposeA() ? Role::ATransposed : Role::A,
            mm.getTransposeB() ? Role::BTransposed : Role::B, Role::C};
      })
      .Case([](TileRowDotOp) {
        return SmallVector<Role>{Role::C, Role::C, Role::Row};
      })
      .Case([&](TileBwdProbsOp pr) {
        return SmallVector<Role>{Role::C, perQuery(pr.getTransposed()),
                                 Role::C};
      })
      .Case([&](TileBwdDsOp ds) {
        SmallVector<Role> roles = {Role::C, perQuery(ds.getTransposed())};
        if (ds.getS())
          roles.push_back(Role::C);
        roles.push_back(Role::C);
        return roles;
      })
      .Default([](Operation *) { return SmallVector<Role>{}; });
}

std::optional<MmaInstruction> instructionNamed(StringRef key) {
  using Make = MmaInstruction (*)();
  Make make = llvm::StringSwitch<Make>(key)
                  .Case("mma.sync", MmaInstruction::nvidiaMmaSyncM16N8K16)
                  .Case("mfma16", MmaInstruction::amdMfma16x16x16)
                  .Case("mfma32", MmaInstruction::amdMfma32x32x8)
                  .Case("wmma-rdna3", MmaInstruction::amdWmmaRdna3)
                  .Case("wmma-rdna4", MmaInstruction::amdWmmaRdna4)
                  .Default(nullptr);
  if (!make)
    return std::nullopt;
  return make();
}

RankedTensorType withoutEncoding(RankedTensorType type) {
  return RankedTensorType::get(type.getShape(), type.getElementType());
}

bool hasLayout(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa_and_nonnull<LayoutAttr>(tensor.getEncoding());
}

struct LayoutAssigner {
  MmaInstruction instr;
  int64_t defaultWarps, warpRows;
  llvm::DenseMap<std::pair<Value, Type>, Value> conversions;

  LayoutAssigner(MmaInstruction instr, int64_t warps, int64_t warpRows)
      : instr(std::move(instr)), defaultWarps(warps), warpRows(warpRows) {}

  /// The warps holding the tiles of `op`: with warp-rows, those of the rows
  /// of the loop of tiles around it that says them (`kLoopRowsAttr`); a
  /// diagnostic where warp-rows does not divide them.
  FailureOr<int64_t> warpsOf(Operation *op) const {
    if (warpRows > 0)
      for (Operation *p = op; p; p = p->getParentOp())
        if (auto rows = p->getAttrOfType<IntegerAttr>(kLoopRowsAttr)) {
          if (rows.getInt() < warpRows || rows.getInt() % warpRows != 0) {
            op->emitOpError() << "is in a loop of tiles of " << rows.getInt()
                              << " rows, which warp-rows=" << warpRows
                              << " does not divide into warps";
            return failure();
          }
          return rows.getInt() / warpRows;
        }
    return defaultWarps;
  }

  /// `type` (without its encoding) in the layout of `role`; a diagnostic on
  /// `op` when the instruction does not tile it.
  FailureOr<RankedTensorType> typeFor(Operation *op, Role role,
                                      RankedTensorType type) const {
    if (!type.hasStaticShape() || type.getRank() > 2) {
      op->emitOpError()
          << "has a tile of type " << type
          << ": layouts are assigned to static tiles of rank 1 or 2 (tile "
             "with --fmha-tile-attention=\"static-tiles=1\")";
      return failure();
    }
    const int64_t rows = type.getDimSize(0);
    const int64_t cols = type.getRank() == 2 ? type.getDimSize(1) : 1;
    FailureOr<int64_t> warpsOr = warpsOf(op);
    if (failed(warpsOr))
      return failure();
    const int64_t warps = *warpsOr;
    std::string error;
    LinearLayout layout;
    switch (role) {
    // A tile of fewer rows than the warps have fragments for (the dQ part
    // of a loop of 128-key tiles, 64 queries over 8 warps): the groups of
    // warps its rows run out of split C's columns and each hold all of A.
    case Role::A:
      layout = tileFragments(instr.a, rows, cols, warps, &error,
                             WarpSplit::RowsThenReplicated);
      break;
    case Role::ATransposed:
      layout = tileFragments(instr.a, cols, rows, warps, &error,
                             WarpSplit::RowsThenReplicated)
                   .transposed();
      break;
    case Role::B:
      layout = tileFragments(instr.b, rows, cols, warps, &error,
                             WarpSplit::Replicated);
      break;
    case Role::BTransposed:
      layout = tileFragments(instr.b, cols, rows, warps, &error,
                             WarpSplit::Replicated)
                   .transposed();
      break;
    case Role::C:
      layout = tileFragments(instr.c, rows, cols, warps, &error,
                             WarpSplit::RowsThenCols);
      break;
    case Role::Row:
      layout = rowSlice(tileFragments(instr.c, rows, instr.n, warps, &error));
      break;
    case Role::Col:
      // The columns of a C tile of the rows the warps split (a vector of
      // `rows` elements along them).
      layout = colSlice(
          tileFragments(instr.c, instr.m * warps, rows, warps, &error));
      break;
    case Role::Line:
      // Consecutive lanes on consecutive elements of a row: each atomic
      // instruction of a warp adds into consecutive addresses.
      layout = ::fmha::lineLayout(
          rows, cols,
          int64_t(1) << instr.c.getBases(::fmha::LayoutInput::Lane).size(),
          warps);
      break;
    }
    if (!error.empty()) {
      op->emitOpError() << "cannot hold its " << type << " tile in "
                        << instr.name << " fragments over " << warps
                        << " warps: " << error;
      return failure();
    }
    return RankedTensorType::get(type.getShape(), type.getElementType(),
                                 LayoutAttr::get(op->getContext(), layout));
  }

  /// A tile op: each tensor operand in its role's layout, the results in
  /// their outs' types.
  LogicalResult assignTileOp(Operation *op, ArrayRef<Role> roles) {
    size_t next = 0;
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type)
        continue;
      FailureOr<RankedTensorType> want =
          typeFor(op, roles[next++], withoutEncoding(type));
      if (failed(want))
        return failure();
      if (type == *want)
        continue;
      if (auto empty = operand.get().getDefiningOp<tensor::EmptyOp>()) {
        OpBuilder b(empty);
        operand.set(tensor::EmptyOp::create(b, empty.getLoc(), want->getShape(),
                                            want->getElementType(),
                                            want->getEncoding()));
        continue;
      }
      operand.set(convertOnce(operand.get(), *want));
    }
    for (OpResult result : op->getResults())
      result.setType(cast<DestinationStyleOpInterface>(op)
                         .getTiedOpOperand(result)
                         ->get()
                         .getType());
    return success();
  }

  /// The loop carries what its inits are.
  static void retypeLoop(scf::ForOp loop) {
    for (auto [init, arg, result] : llvm::zip(
             loop.getInitArgs(), loop.getRegionIterArgs(), loop.getResults())) {
      arg.setType(init.getType());
      result.setType(init.getType());
    }
  }

  /// A loop yields what it carries; a branch returns what its `then` region
  /// yields, and its `else` region yields the same.
  void fixYield(scf::YieldOp yield) {
    Operation *parent = yield->getParentOp();
    SmallVector<Type> expected;
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      expected =
          llvm::to_vector(ValueRange(loop.getRegionIterArgs()).getTypes());
    } else if (auto branch = dyn_cast<scf::IfOp>(parent)) {
      if (yield->getParentRegion() == &branch.getThenRegion()) {
        for (auto [result, value] :
             llvm::zip(branch.getResults(), yield.getOperands()))
          result.setType(value.getType());
        return;
      }
      expected = llvm::to_vector(branch.getResultTypes());
    } else {
      return;
    }
    convertOperands(yield, [&](unsigned i) { return expected[i]; });
  }

  /// Converts each operand of `op` whose type is not `expected(i)`.
  template <typename Fn> void convertOperands(Operation *op, Fn expected) {
    for (OpOperand &operand : op->getOpOperands()) {
      Type want = expected(operand.getOperandNumber());
      if (operand.get().getType() != want)
        operand.set(convertOnce(operand.get(), cast<RankedTensorType>(want)));
    }
  }

  /// `value` in the layout of `type`, converted once, where it is defined:
  /// q enters registers once per q tile, not at each use in the kv loop.
  Value convertOnce(Value value, RankedTensorType type) {
    Value &converted = conversions[{value, type}];
    if (!converted) {
      OpBuilder b(value.getContext());
      b.setInsertionPointAfterValue(value);
      converted = ConvertLayoutOp::create(b, value.getLoc(), type, value);
    }
    return converted;
  }

  LogicalResult run(Operation *root) {
    SmallVector<tensor::EmptyOp> empties;
    root->walk([&](tensor::EmptyOp empty) { empties.push_back(empty); });
    WalkResult walk = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      SmallVector<Role> roles = rolesOf(op);
      if (!roles.empty())
        return failed(assignTileOp(op, roles)) ? WalkResult::interrupt()
                                               : WalkResult::advance();
      if (auto loop = dyn_cast<scf::ForOp>(op))
        retypeLoop(loop);
      else if (auto yield = dyn_cast<scf::YieldOp>(op))
        fixYield(yield);
      else if (!isa<ConvertLayoutOp>(op))
        // Outside the tile level tiles are plain tensors.
        convertOperands(op, [&](unsigned i) -> Type {
          Type type = op->getOperand(i).getType();
          return hasLayout(type) ? withoutEncoding(cast<RankedTensorType>(type))
                                 : type;
        });
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    for (tensor::EmptyOp empty : empties)
      if (empty->use_empty())
        empty->erase();
    return success();
  }
};

struct FmhaAssignLayoutsPass
    : mlir::fmha::impl::FmhaAssignLayoutsPassBase<FmhaAssignLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<MmaInstruction> instr = instructionNamed(mma);
    if (!instr) {
      emitError(UnknownLoc::get(&getContext()))
          << "fmha-assign-layouts: unknown mma '" << mma
          << "' (expected mma.sync, mfma16, mfma32, wmma-rdna3 or "
             "wmma-rdna4)";
      return signalPassFailure();
    }
    if (warps < 1 || warpRows < 0) {
      emitError(UnknownLoc::get(&getContext()))
          << "fmha-assign-layouts: warps must be positive and warp-rows "
             "non-negative, got warps="
          << static_cast<int64_t>(warps)
          << " warp-rows=" << static_cast<int64_t>(warpRows);
      return signalPassFailure();
    }
    LayoutAssigner assigner(*instr, warps, warpRows);
    if (failed(assigner.run(getOperation())))
      signalPassFailure();
  }
};

} // namespace
