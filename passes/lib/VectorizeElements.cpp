//===- VectorizeElements.cpp - Vectors of elements per loop iteration -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-vectorize-elements{width=W}: an elementwise 1-D scf.parallel
//
//   scf.parallel (%i) = (0) to (%n) { body(%i) }
//
// becomes
//
//   scf.parallel (%j) = (0) to (ceil(%n / W)) {
//     %base = %j * W
//     if (%base + W <= %n && every memref aligned to W elements)
//       body on vector<W x T>: vector.load / vector.store at %base
//     else
//       for (%i = %base; %i < min(%base + W, %n); ++%i) body(%i)
//   }
//
// The iterations of a parallel loop are independent, so W of them may run
// as one; the alignment test reads only the buffers' addresses, the same for
// every iteration.
//
//===----------------------------------------------------------------------===//

#include "fmha/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAVECTORIZEELEMENTSPASS
#include "fmha/Transforms/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

/// A rank-1 identity-layout memref of int or float elements.
bool isVectorizableMemRef(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getRank() == 1 && type.getLayout().isIdentity() &&
         type.getElementType().isIntOrFloat();
}

/// Whether `loop` is one the pass rewrites: 1-D from 0 by 1, no results,
/// its body loads and stores at exactly the induction variable and
/// elementwise scalar ops. Collects the memrefs it accesses.
bool isElementwise(scf::ParallelOp loop, llvm::SetVector<Value> &memrefs) {
  if (loop.getNumLoops() != 1 || loop.getNumResults() != 0 ||
      !matchPattern(loop.getLowerBound()[0], m_Zero()) ||
      !matchPattern(loop.getStep()[0], m_One()))
    return false;
  Value iv = loop.getInductionVars()[0];
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!isVectorizableMemRef(load.getMemRef()) || load.getIndices()[0] != iv)
        return false;
      memrefs.insert(load.getMemRef());
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!isVectorizableMemRef(store.getMemRef()) ||
          store.getIndices()[0] != iv || store.getValueToStore() == iv)
        return false;
      memrefs.insert(store.getMemRef());
      continue;
    }
    if (matchPattern(&op, m_Constant()) && op.getNumResults() == 1 &&
        op.getResult(0).getType().isIntOrFloat())
      continue;
    if (!op.hasTrait<OpTrait::Elementwise>() || !isMemoryEffectFree(&op))
      return false;
    for (Value v : op.getOperands())
      if (v == iv || !v.getType().isIntOrFloat())
        return false;
    for (Type t : op.getResultTypes())
      if (!t.isIntOrFloat())
        return false;
  }
  return true;
}

/// The body of `loop` on vectors of `width` elements from `base`.
void buildVectorBody(OpBuilder &b, Location loc, scf::ParallelOp loop,
                     Value base, int64_t width) {
  IRMapping map;
  Block *body = loop.getBody();
  auto vectorOf = [&](Type t) -> Type { return VectorType::get({width}, t); };
  auto alignOf = [&](Value memref) {
    Type elt = cast<MemRefType>(memref.getType()).getElementType();
    return llvm::MaybeAlign(width * elt.getIntOrFloatBitWidth() / 8);
  };
  // A value from above, broadcast once.
  auto lookup = [&](Value v) -> Value {
    if (Value mapped = map.lookupOrNull(v))
      return mapped;
    Value splat = vector::BroadcastOp::create(
        b, loc, VectorType::get({width}, v.getType()), v);
    map.map(v, splat);
    return splat;
  };
  for (Operation &op : body->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      Value v = vector::LoadOp::create(
          b, loc, VectorType::get({width}, load.getType()), load.getMemRef(),
          ValueRange{base},
          /*nontemporal=*/false, alignOf(load.getMemRef()));
      map.map(load.getResult(), v);
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      vector::StoreOp::create(b, loc, lookup(store.getValueToStore()),
                              store.getMemRef(), ValueRange{base},
                              /*nontemporal=*/false,
                              alignOf(store.getMemRef()));
      continue;
    }
    Attribute value;
    if (matchPattern(&op, m_Constant(&value))) {
      auto type = VectorType::get({width}, op.getResult(0).getType());
      map.map(op.getResult(0),
              arith::ConstantOp::create(
                  b, loc, type,
                  DenseElementsAttr::get(type, cast<TypedAttr>(value))));
      continue;
    }
    SmallVector<Value> operands = llvm::map_to_vector(op.getOperands(), lookup);
    SmallVector<Type> types =
        llvm::map_to_vector(op.getResultTypes(), vectorOf);
    Operation *vec = b.create(loc, op.getName().getIdentifier(), operands,
                              types, op.getAttrs());
    map.map(op.getResults(), vec->getResults());
  }
}

void vectorize(scf::ParallelOp loop, const llvm::SetVector<Value> &memrefs,
               int64_t width) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  Value n = loop.getUpperBound()[0];
  Value w = arith::ConstantIndexOp::create(b, loc, width);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value chunks = b.createOrFold<arith::CeilDivSIOp>(loc, n, w);
  scf::ParallelOp::create(
      b, loc, ValueRange{zero}, ValueRange{chunks}, ValueRange{one},
      [&](OpBuilder &pb, Location, ValueRange ivs) {
        Value base = arith::MulIOp::create(pb, loc, ivs[0], w);
        Value end = arith::AddIOp::create(pb, loc, base, w);
        Value ok =
            arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::sle, end, n);
        for (Value memref : memrefs) {
          Type elt = cast<MemRefType>(memref.getType()).getElementType();
          Value bytes = arith::ConstantIndexOp::create(
              pb, loc, width * elt.getIntOrFloatBitWidth() / 8);
          Value address =
              memref::ExtractAlignedPointerAsIndexOp::create(pb, loc, memref);
          Value rem = arith::RemUIOp::create(pb, loc, address, bytes);
          Value aligned = arith::CmpIOp::create(
              pb, loc, arith::CmpIPredicate::eq, rem, zero);
          ok = arith::AndIOp::create(pb, loc, ok, aligned);
        }
        scf::IfOp::create(
            pb, loc, ok,
            [&](OpBuilder &tb, Location) {
              buildVectorBody(tb, loc, loop, base, width);
              scf::YieldOp::create(tb, loc);
            },
            [&](OpBuilder &eb, Location) {
              Value last = arith::MinSIOp::create(eb, loc, end, n);
              scf::ForOp::create(
                  eb, loc, base, last, one, ValueRange{},
                  [&](OpBuilder &fb, Location, Value i, ValueRange) {
                    IRMapping map;
                    map.map(loop.getInductionVars()[0], i);
                    for (Operation &op : loop.getBody()->without_terminator())
                      fb.clone(op, map);
                    scf::YieldOp::create(fb, loc);
                  });
              scf::YieldOp::create(eb, loc);
            });
      });
  loop.erase();
}

struct FmhaVectorizeElementsPass
    : mlir::fmha::impl::FmhaVectorizeElementsPassBase<
          FmhaVectorizeElementsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (width < 2 || width > 64 || (width & (width - 1)) != 0) {
      getOperation()->emitError()
          << "fmha-vectorize-elements: width must be a power of two from 2 "
             "to 64, got "
          << static_cast<int64_t>(width);
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      loops.push_back(loop);
      return WalkResult::skip();
    });
    for (scf::ParallelOp loop : loops) {
      llvm::SetVector<Value> memrefs;
      if (isElementwise(loop, memrefs))
        vectorize(loop, memrefs, width);
    }
  }
};

} // namespace
