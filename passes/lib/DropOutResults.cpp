//===- DropOutResults.cpp - Drop results that are an argument's buffer ----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHADROPOUTRESULTSPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

/// The argument `value` is, through memref.cast ops, if any.
BlockArgument argumentOf(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  return dyn_cast<BlockArgument>(value);
}

struct FmhaDropOutResultsPass
    : public mlir::fmha::impl::FmhaDropOutResultsPassBase<
          FmhaDropOutResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Per function: which argument each result repeats (-1: none).
    llvm::DenseMap<func::FuncOp, SmallVector<int64_t>> dropped;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<func::ReturnOp> returns;
      func.walk([&](func::ReturnOp r) { returns.push_back(r); });
      if (returns.size() != 1)
        continue;
      func::ReturnOp ret = returns.front();
      SmallVector<int64_t> argOf(ret.getNumOperands(), -1);
      llvm::BitVector drop(ret.getNumOperands());
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        BlockArgument arg = argumentOf(value);
        if (!arg || arg.getOwner() != &func.getBody().front() ||
            arg.getType() != value.getType() ||
            !isa<BaseMemRefType>(value.getType()))
          continue;
        argOf[i] = arg.getArgNumber();
        drop.set(i);
      }
      if (drop.none())
        continue;
      OpBuilder b(ret);
      SmallVector<Value> kept;
      for (auto [i, value] : llvm::enumerate(ret.getOperands()))
        if (!drop.test(i))
          kept.push_back(value);
      func::ReturnOp::create(b, ret.getLoc(), kept);
      ret.erase();
      if (failed(func.eraseResults(drop)))
        return signalPassFailure();
      dropped[func] = argOf;
    }
    // Call sites take the argument they passed.
    module.walk([&](func::CallOp call) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      auto it = callee ? dropped.find(callee) : dropped.end();
      if (it == dropped.end())
        return;
      OpBuilder b(call);
      auto newCall =
          func::CallOp::create(b, call.getLoc(), callee, call.getOperands());
      unsigned next = 0;
      for (auto [i, result] : llvm::enumerate(call.getResults())) {
        int64_t arg = it->second[i];
        result.replaceAllUsesWith(arg >= 0 ? call.getOperand(arg)
                                           : newCall.getResult(next++));
      }
      call.erase();
    });
  }
};

} // namespace
