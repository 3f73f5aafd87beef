//===- ParallelFor.cpp - scf.parallel on the runtime's threads ------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-cpu-parallel-for: each outermost scf.parallel becomes an outlined
// body over a flat iteration range and a call through the module's
// `fmha_parallel_for` hook (Passes.td says the ABI). The loop nest is then
// the unit of work a thread takes, one iteration (a q tile of a head, or a
// kv tile) at a time; the iterations were already independent (the
// backward's shared dQ is accumulated with atomics).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHACPUPARALLELFORPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// How a value the loop reads from above reaches the outlined body.
enum class Capture { Clone, Pass };

struct FmhaCpuParallelForPass
    : mlir::fmha::impl::FmhaCpuParallelForPassBase<FmhaCpuParallelForPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          loop.getNumResults() == 0)
        loops.push_back(loop);
    });
    if (loops.empty())
      return;
    LLVMTypeConverter converter(&getContext());
    LLVM::GlobalOp hook;
    llvm::StringMap<int> counts;
    for (scf::ParallelOp loop : loops) {
      // The body is outlined next to its func.func; a loop in another kind
      // of function stays as it is (it runs on the calling thread).
      auto func = loop->getParentOfType<func::FuncOp>();
      if (!func)
        continue;
      if (!hook)
        hook = getOrCreateHook(module);
      std::string name = (func.getSymName() + "_parallel_" +
                          Twine(counts[func.getSymName()]++))
                             .str();
      if (failed(outline(loop, func, name, hook, converter)))
        return signalPassFailure();
    }
  }

  LLVM::GlobalOp getOrCreateHook(ModuleOp module) {
    if (auto hook = module.lookupSymbol<LLVM::GlobalOp>(kParallelForHookName))
      return hook;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    Location loc = module.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    auto hook = LLVM::GlobalOp::create(b, loc, ptr, /*isConstant=*/false,
                                       LLVM::Linkage::External,
                                       kParallelForHookName, Attribute());
    Block *init = b.createBlock(&hook.getInitializerRegion());
    b.setInsertionPointToStart(init);
    LLVM::ReturnOp::create(b, loc, LLVM::ZeroOp::create(b, loc, ptr));
    return hook;
  }

  /// Constants, the scratch allocas and whatever pure ops compute from them
  /// alone (views of scratch that LICM hoisted out of the loop) are made
  /// anew in the body: passed, a scratch view would be shared by the
  /// threads (and LLVM could not keep it in registers).
  static Capture classify(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return Capture::Pass;
    if (def->hasTrait<OpTrait::ConstantLike>())
      return Capture::Clone;
    if (isa<memref::AllocaOp>(def))
      return def->hasAttr(kScratchAttrName) ? Capture::Clone : Capture::Pass;
    if (def->getNumRegions() == 0 && isPure(def) &&
        llvm::all_of(def->getOperands(), [](Value operand) {
          return classify(operand) == Capture::Clone;
        }))
      return Capture::Clone;
    return Capture::Pass;
  }

  /// Clones the ops of a Clone value into `b`, operands first.
  static Value cloneInto(Value v, OpBuilder &b, IRMapping &map) {
    if (Value done = map.lookupOrNull(v))
      return done;
    Operation *def = v.getDefiningOp();
    for (Value operand : def->getOperands())
      cloneInto(operand, b, map);
    Operation *copy = b.clone(*def, map);
    return copy->getResult(cast<OpResult>(v).getResultNumber());
  }

  LogicalResult outline(scf::ParallelOp loop, func::FuncOp func, StringRef name,
                        LLVM::GlobalOp hook,
                        const LLVMTypeConverter &converter) {
    MLIRContext *ctx = &getContext();
    Location loc = loop.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Type i64 = IntegerType::get(ctx, 64), index = IndexType::get(ctx);

    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(loop.getRegion(), above);
    SmallVector<Value> cloned, passed;
    for (Value v : above)
      (classify(v) == Capture::Clone ? cloned : passed).push_back(v);

    for (Value v : passed)
      if (!isa<MemRefType, IndexType, IntegerType, FloatType>(v.getType()))
        return loop.emitOpError()
               << "reads a value of type " << v.getType()
               << " from above, which cannot be passed to a parallel body";

    // The call site: the iteration counts, the context, the call.
    OpBuilder b(loop);
    SmallVector<Value> dims;
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      Value n = b.createOrFold<arith::CeilDivSIOp>(
          loc, b.createOrFold<arith::SubIOp>(loc, ub, lb), step);
      // An empty range counts 0 (ub < lb gives a negative count).
      n = b.createOrFold<arith::MaxSIOp>(
          loc, n, arith::ConstantIndexOp::create(b, loc, 0));
      dims.push_back(n);
      total = b.createOrFold<arith::MulIOp>(loc, total, n);
    }
    // The context: the passed values, then each dimension's lb, step and
    // count that is not a constant (constants are made anew in the body, so
    // that the flat index decomposes by known numbers).
    llvm::SetVector<Value> fieldSet(passed.begin(), passed.end());
    SmallVector<Value> perDim;
    for (auto [lb, step, n] :
         llvm::zip(loop.getLowerBound(), loop.getStep(), dims))
      for (Value v : {lb, step, n}) {
        perDim.push_back(v);
        if (classify(v) == Capture::Pass)
          fieldSet.insert(v);
        else if (!llvm::is_contained(cloned, v))
          cloned.push_back(v);
      }
    SmallVector<Value> fields(fieldSet.begin(), fieldSet.end());
    SmallVector<Type> fieldTypes;
    for (Value v : fields) {
      Type t = v.getType();
      if (isa<IndexType>(t))
        t = i64;
      else if (isa<MemRefType>(t))
        t = converter.convertType(t);
      if (!t)
        return loop.emitOpError()
               << "cannot pass " << v.getType() << " to a parallel body";
      fieldTypes.push_back(t);
    }
    auto structType = LLVM::LLVMStructType::getLiteral(ctx, fieldTypes);
    Value one = LLVM::ConstantOp::create(b, loc, i64, 1);
    Value context = LLVM::AllocaOp::create(b, loc, ptr, structType, one);
    for (auto [i, v] : llvm::enumerate(fields)) {
      Value field = v;
      if (isa<IndexType>(v.getType()))
        field = arith::IndexCastOp::create(b, loc, i64, v);
      else if (isa<MemRefType>(v.getType()))
        field = UnrealizedConversionCastOp::create(b, loc, fieldTypes[i], v)
                    .getResult(0);
      Value at = LLVM::GEPOp::create(
          b, loc, ptr, structType, context,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      LLVM::StoreOp::create(b, loc, field, at);
    }
    auto bodyType = FunctionType::get(ctx, {ptr, i64, i64}, {});
    Value n64 = arith::IndexCastOp::create(b, loc, i64, total);
    Value hookFn = LLVM::LoadOp::create(
        b, loc, ptr, LLVM::AddressOfOp::create(b, loc, hook));
    Value noHook = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, hookFn,
                                        LLVM::ZeroOp::create(b, loc, ptr));
    auto branch = scf::IfOp::create(b, loc, noHook, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      func::CallOp::create(
          b, loc, name, TypeRange{},
          ValueRange{context, LLVM::ConstantOp::create(b, loc, i64, 0), n64});
      b.setInsertionPointToStart(branch.elseBlock());
      Value body = func::ConstantOp::create(b, loc, bodyType, name);
      Value bodyPtr =
          UnrealizedConversionCastOp::create(b, loc, ptr, body).getResult(0);
      auto hookType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                                  {i64, ptr, ptr});
      LLVM::CallOp::create(b, loc, hookType,
                           ValueRange{hookFn, n64, bodyPtr, context});
    }

    // The body: unpack the context, clone what is cloned, loop over [lo, hi).
    OpBuilder mb(func);
    auto outlined = func::FuncOp::create(mb, loc, name, bodyType);
    outlined.setPrivate();
    Block *entry = outlined.addEntryBlock();
    OpBuilder ob = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (Value v : cloned)
      cloneInto(v, ob, map);
    SmallVector<Value> unpacked;
    for (auto [i, v] : llvm::enumerate(fields)) {
      Value at = LLVM::GEPOp::create(
          ob, loc, ptr, structType, entry->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      Value field = LLVM::LoadOp::create(ob, loc, fieldTypes[i], at);
      if (isa<IndexType>(v.getType()))
        field = arith::IndexCastOp::create(ob, loc, index, field);
      else if (isa<MemRefType>(v.getType()))
        field = UnrealizedConversionCastOp::create(ob, loc, v.getType(), field)
                    .getResult(0);
      unpacked.push_back(field);
    }
    for (auto [v, field] : llvm::zip(fields, unpacked))
      map.map(v, field);
    const size_t rank = dims.size();
    Value lo =
        arith::IndexCastOp::create(ob, loc, index, entry->getArgument(1));
    Value hi =
        arith::IndexCastOp::create(ob, loc, index, entry->getArgument(2));
    Value step1 = arith::ConstantIndexOp::create(ob, loc, 1);
    auto flat = scf::ForOp::create(ob, loc, lo, hi, step1);
    {
      OpBuilder::InsertionGuard guard(ob);
      ob.setInsertionPoint(flat.getBody()->getTerminator());
      // Delinearize, the last dimension fastest.
      Value rest = flat.getInductionVar();
      SmallVector<Value> ivs(rank);
      for (size_t d = rank; d-- > 0;) {
        Value lb = map.lookup(perDim[3 * d]),
              step = map.lookup(perDim[3 * d + 1]),
              n = map.lookup(perDim[3 * d + 2]);
        Value k = d == 0 ? rest : arith::RemSIOp::create(ob, loc, rest, n);
        if (d > 0)
          rest = arith::DivSIOp::create(ob, loc, rest, n);
        ivs[d] = arith::AddIOp::create(ob, loc, lb,
                                       arith::MulIOp::create(ob, loc, k, step));
      }
      for (auto [iv, value] : llvm::zip(loop.getInductionVars(), ivs))
        map.map(iv, value);
      for (Operation &op : loop.getBody()->without_terminator())
        ob.clone(op, map);
    }
    func::ReturnOp::create(ob, loc);
    loop.erase();
    return success();
  }
};

} // namespace
