//===- MaskUtils.h - Mask arithmetic emitted as IR --------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The mask arithmetic of fmha::MaskSpec (support/) written as index IR, shared
// by the tiling pass and every lowering (CPU, GPU) so that all of them visit
// the same kv tiles and hide the same keys. Formulas, for the q tile holding
// rows [r0, r1) and off = 0 (top-left) or Sk - Sq (bottom-right):
// clang-format off
//   window keys  [jlo, jhi] = [max(0, r0 + off - L),
//                              min(Sk - 1, r1 - 1 + off + R)]
//   main loop    kv tiles [jlo / BN, max(jhi / BN + 1, sinkTiles))
//   sink loop    kv tiles [0, min(sinkTiles, jlo / BN)),
//                sinkTiles = ceil(min(S, Sk) / BN)
//   full tile    (r1 - 1 + off - L <= c0 and c1 - 1 <= r0 + off + R)
//                or c1 <= S
// clang-format on
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TRANSFORMS_MASKUTILS_H
#define FMHA_TRANSFORMS_MASKUTILS_H

#include "fmha/Support/MaskSpec.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::fmha {

/// Index arithmetic on `arith` ops that folds constants as it goes, so that
/// emitted bounds read like the formulas above. With `shape` (a vector of
/// index) the values are vectors of that shape, elementwise: constants are
/// splats.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  VectorType shape = {};

  Value c(int64_t v);
  /// `true` as an i1 (of the shape).
  Value truth();
  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  Value div(Value x, Value y);
  Value rem(Value x, Value y);
  Value ceilDiv(Value x, Value y);
  Value min(Value x, Value y);
  Value max(Value x, Value y);
  Value cmp(arith::CmpIPredicate p, Value x, Value y);
  Value le(Value x, Value y);
  Value lt(Value x, Value y);
  Value select(Value cond, Value x, Value y);
  /// x && y where a null operand means `true`.
  Value andOpt(Value x, Value y);
  /// x + y where a null `y` means 0.
  Value addOpt(Value x, Value y);
  /// The diagonal offset: Sk - Sq for bottom-right, null (0) otherwise.
  Value offset(const ::fmha::MaskSpec &mask, Value sq, Value sk);
  /// A memref's or tensor's size along `i` (a constant when static).
  Value dim(Value shaped, int64_t i);

private:
  template <typename OpTy, typename... Args> Value fold(Args... args) {
    return b.createOrFold<OpTy>(loc, args...);
  }
};

/// The kv-tile loops of one q tile. `sinkEnd` is null when the mask has no
/// sink tokens (no leading loop).
struct KvLoopBounds {
  Value sinkEnd;
  Value begin;
  Value end;
};

/// Emits the kv-tile loop bounds for the q tile holding rows [r0, r1).
KvLoopBounds emitKvLoopBounds(OpBuilder &b, Location loc,
                              const ::fmha::MaskSpec &mask, Value r0, Value r1,
                              Value sq, Value sk, int64_t blockN);

/// The q-tile loop of one kv tile (the backward pass walks the transposed
/// problem): the q tiles [begin, end) holding every row that sees some key
/// of [c0, c1). Rows see key j through the window when
/// j - off - R <= i <= j - off + L; a tile with sink keys (c0 < S) is seen by
/// every row.
struct QLoopBounds {
  Value begin;
  Value end;
};
QLoopBounds emitQLoopBounds(OpBuilder &b, Location loc,
                            const ::fmha::MaskSpec &mask, Value c0, Value c1,
                            Value sq, Value sk, int64_t blockM);

/// Emits whether every key in [c0, c1) is visible to every row in [r0, r1)
/// (an i1); such a tile needs no element mask.
Value emitKvTileIsFull(OpBuilder &b, Location loc, const ::fmha::MaskSpec &mask,
                       Value r0, Value r1, Value c0, Value c1, Value sq,
                       Value sk);

/// Emits visible(row, col) of DESIGN.md section 1 (an i1). The four values
/// may also be vectors of index of one shape (the rows and keys of a tile):
/// then the result is a vector of i1 of that shape.
Value emitVisible(OpBuilder &b, Location loc, const ::fmha::MaskSpec &mask,
                  Value row, Value col, Value sq, Value sk);

} // namespace mlir::fmha

#endif // FMHA_TRANSFORMS_MASKUTILS_H
