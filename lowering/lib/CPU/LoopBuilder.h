//===- LoopBuilder.h - Scalar loop helpers of the CPU lowering --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Private to lowering/lib/CPU: the scalar code generation helpers the CPU
// patterns share (TileOpsToLoops.cpp). Arithmetic is f32;
// loads widen and stores round to the memref's element type.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_LOWERING_LIB_CPU_LOOPBUILDER_H
#define FMHA_LOWERING_LIB_CPU_LOOPBUILDER_H

#include "fmha/Transforms/ScalarUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::fmha::cpu {

/// Scalar code generation helpers for one tile op.
struct LoopBuilder {
  OpBuilder &b;
  Location loc;

  arith::FastMathFlagsAttr fastMath() {
    return arith::FastMathFlagsAttr::get(b.getContext(),
                                         arith::FastMathFlags::reassoc |
                                             arith::FastMathFlags::contract);
  }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value negInf() { return f32(-std::numeric_limits<double>::infinity()); }
  Value dim(Value memref, int64_t i) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(i))
      return idx(type.getDimSize(i));
    return memref::DimOp::create(b, loc, memref, i);
  }
  /// Loads an element as f32.
  Value load(Value memref, ValueRange indices) {
    return loadAsF32(b, loc, memref, indices);
  }
  /// Stores an f32 value, rounding it to the memref's element type.
  void store(Value value, Value memref, ValueRange indices) {
    storeRounded(b, loc, value, memref, indices);
  }
  Value add(Value x, Value y) {
    return arith::AddFOp::create(b, loc, x, y, fastMath());
  }
  Value mul(Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y, fastMath());
  }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }

  /// for (iv = lb (0 when null); iv < ub; ++iv) body(iv)
  void forEach(Value ub, function_ref<void(LoopBuilder &, Value)> body,
               Value lb = {}) {
    scf::ForOp::create(b, loc, lb ? lb : idx(0), ub, idx(1), ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         LoopBuilder inner{nested, loc};
                         body(inner, iv);
                         scf::YieldOp::create(nested, loc);
                       });
  }
  /// acc = init; for (iv < ub) acc = body(iv, acc); return acc
  Value reduce(Value ub, Value init,
               function_ref<Value(LoopBuilder &, Value, Value)> body) {
    auto loop = scf::ForOp::create(
        b, loc, idx(0), ub, idx(1), ValueRange{init},
        [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
          LoopBuilder inner{nested, loc};
          scf::YieldOp::create(nested, loc, body(inner, iv, args[0]));
        });
    return loop.getResult(0);
  }
};

} // namespace mlir::fmha::cpu

#endif // FMHA_LOWERING_LIB_CPU_LOOPBUILDER_H
