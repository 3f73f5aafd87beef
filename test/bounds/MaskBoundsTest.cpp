//===- MaskBoundsTest.cpp - The IR tile bounds against support/ -----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The mask arithmetic exists twice: as plain C++ in support/ (MaskSpec.h:
// visible, kvTileBounds, kvTileIsFull; the runtime, the reference and
// fmha-run use it) and as the index IR the passes emit (MaskUtils.h:
// emitVisible, emitKvLoopBounds, emitKvTileIsFull, emitQLoopBounds; every
// CPU and GPU kernel). Here the IR, emitted with constant operands and
// folded, must give what the C++ gives, over masks of every kind (windows
// narrower and wider than the problem, sinks inside and beyond a tile, bounds
// past the capped range) and problem and tile sizes that do and do not
// divide. emitQLoopBounds has no C++ twin: it is checked against brute force
// over visible() (every q tile with a visible pair inside, none outside).
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/MaskSpec.h"
#include "fmha/Transforms/MaskUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <vector>

using namespace mlir;

namespace {

/// The masks: none, and top-left / bottom-right windows with every mix of
/// unbounded, zero, narrow and wide sides, with and without sink tokens.
std::vector<::fmha::MaskSpec> masks() {
  std::vector<::fmha::MaskSpec> all = {::fmha::MaskSpec()};
  for (auto kind : {::fmha::MaskKind::TopLeft, ::fmha::MaskKind::BottomRight})
    for (int64_t left :
         std::initializer_list<int64_t>{-1, 0, 1, 5, 40, 300, int64_t(1) << 40})
      for (int64_t right :
           std::initializer_list<int64_t>{-1, 0, 3, 64, int64_t(1) << 40})
        for (int64_t sink : {0, 1, 20, 300}) {
          ::fmha::MaskSpec m;
          m.kind = kind, m.left = left, m.right = right, m.sink = sink;
          if (m.validate().empty())
            all.push_back(m);
        }
  return all;
}

class MaskBounds : public ::testing::Test {
protected:
  MaskBounds() : builder(&context) {
    context.loadDialect<arith::ArithDialect>();
    module = ModuleOp::create(UnknownLoc::get(&context));
    builder.setInsertionPointToEnd(module->getBody());
  }

  Value c(int64_t v) {
    return arith::ConstantIndexOp::create(builder, loc(), v);
  }
  Location loc() { return builder.getUnknownLoc(); }
  /// Drops what the last emission created.
  void reset() {
    module->getBody()->clear();
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// The value of index or i1 IR whose leaves are constants, by folding each
  /// op (some emitted ops, e.g. arith.ori, are created without folding).
  std::optional<int64_t> evaluate(Value v) {
    if (std::optional<int64_t> k = getConstantIntValue(v))
      return v.getType().isInteger(1) ? (*k != 0) : *k;
    Operation *op = v.getDefiningOp();
    if (!op)
      return std::nullopt;
    SmallVector<Attribute> operands;
    for (Value operand : op->getOperands()) {
      std::optional<int64_t> x = evaluate(operand);
      if (!x)
        return std::nullopt;
      operands.push_back(IntegerAttr::get(operand.getType(), *x));
    }
    SmallVector<OpFoldResult> results;
    if (failed(op->fold(operands, results)) || results.empty())
      return std::nullopt;
    OpFoldResult r = results[cast<OpResult>(v).getResultNumber()];
    if (auto value = dyn_cast<Value>(r))
      return evaluate(value);
    std::optional<int64_t> k = getConstantIntValue(r);
    if (k && v.getType().isInteger(1))
      return *k != 0;
    return k;
  }
  int64_t value(Value v, const std::string &what) {
    std::optional<int64_t> x = evaluate(v);
    EXPECT_TRUE(x.has_value()) << what << " does not fold";
    return x.value_or(-12345);
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

struct Tiles {
  int64_t blockM, blockN;
};
constexpr Tiles kTiles[] = {{16, 16}, {64, 32}, {32, 128}, {128, 64}};
constexpr int64_t kSizes[] = {1, 7, 64, 100, 257};

std::string describe(const ::fmha::MaskSpec &m, int64_t sq, int64_t sk,
                     Tiles t) {
  return m.str() + " sq=" + std::to_string(sq) + " sk=" + std::to_string(sk) +
         " block " + std::to_string(t.blockM) + "x" + std::to_string(t.blockN);
}

TEST_F(MaskBounds, KvLoopBoundsAndFullTilesMatchSupport) {
  int64_t checked = 0;
  for (const ::fmha::MaskSpec &mask : masks())
    for (int64_t sq : kSizes)
      for (int64_t sk : kSizes)
        for (Tiles t : kTiles) {
          std::string what = describe(mask, sq, sk, t);
          for (int64_t r0 = 0; r0 < sq; r0 += t.blockM) {
            int64_t r1 = std::min(r0 + t.blockM, sq);
            ::fmha::KvTileBounds expected =
                ::fmha::kvTileBounds(mask, r0, t.blockM, t.blockN, sq, sk);
            mlir::fmha::KvLoopBounds ir = mlir::fmha::emitKvLoopBounds(
                builder, loc(), mask, c(r0), c(r1), c(sq), c(sk), t.blockN);
            std::string at = what + " r0=" + std::to_string(r0);
            EXPECT_EQ(ir.sinkEnd ? value(ir.sinkEnd, at) : 0, expected.sinkEnd)
                << at;
            EXPECT_EQ(value(ir.begin, at), expected.begin) << at;
            EXPECT_EQ(value(ir.end, at), expected.end) << at;
            for (int64_t c0 = 0; c0 < sk; c0 += t.blockN) {
              int64_t c1 = std::min(c0 + t.blockN, sk);
              Value full = mlir::fmha::emitKvTileIsFull(builder, loc(), mask,
                                                        c(r0), c(r1), c(c0),
                                                        c(c1), c(sq), c(sk));
              EXPECT_EQ(value(full, at) != 0,
                        ::fmha::kvTileIsFull(mask, r0, t.blockM, c0, t.blockN,
                                             sq, sk))
                  << at << " c0=" << c0;
              ++checked;
            }
            reset();
          }
        }
  EXPECT_GT(checked, 100000);
}

TEST_F(MaskBounds, VisibleMatchesSupport) {
  for (const ::fmha::MaskSpec &mask : masks())
    for (auto [sq, sk] :
         {std::pair<int64_t, int64_t>{7, 64}, {64, 7}, {100, 100}}) {
      std::string what = mask.str() + " sq=" + std::to_string(sq) +
                         " sk=" + std::to_string(sk);
      for (int64_t i = 0; i < sq; i += (sq > 64 ? 7 : 1)) {
        for (int64_t j = 0; j < sk; ++j) {
          Value v = mlir::fmha::emitVisible(builder, loc(), mask, c(i), c(j),
                                            c(sq), c(sk));
          EXPECT_EQ(value(v, what) != 0, mask.visible(i, j, sq, sk))
              << what << " i=" << i << " j=" << j;
        }
        reset();
      }
    }
}

TEST_F(MaskBounds, QLoopBoundsHoldEveryRowThatSeesTheKvTile) {
  for (const ::fmha::MaskSpec &mask : masks())
    for (int64_t sq : kSizes)
      for (int64_t sk : kSizes)
        for (Tiles t : kTiles) {
          std::string what = describe(mask, sq, sk, t);
          const int64_t qTiles = (sq + t.blockM - 1) / t.blockM;
          for (int64_t c0 = 0; c0 < sk; c0 += t.blockN) {
            int64_t c1 = std::min(c0 + t.blockN, sk);
            mlir::fmha::QLoopBounds ir = mlir::fmha::emitQLoopBounds(
                builder, loc(), mask, c(c0), c(c1), c(sq), c(sk), t.blockM);
            std::string at = what + " c0=" + std::to_string(c0);
            int64_t begin = value(ir.begin, at), end = value(ir.end, at);
            ASSERT_LE(0, begin) << at;
            ASSERT_LE(end, qTiles) << at;
            // Every q tile with a row that sees a key of [c0, c1) is inside.
            int64_t first = qTiles, last = -1;
            for (int64_t i = 0; i < sq; ++i)
              for (int64_t j = c0; j < c1; ++j)
                if (mask.visible(i, j, sq, sk)) {
                  first = std::min(first, i / t.blockM);
                  last = std::max(last, i / t.blockM);
                  break;
                }
            if (last >= 0) {
              EXPECT_LE(begin, first) << at;
              EXPECT_GE(end, last + 1) << at;
            }
            // And no tile outside [first, last]: the loop is tight (an
            // unseen kv tile visits none).
            if (last < 0)
              EXPECT_GE(begin, end) << at;
            else
              EXPECT_TRUE(begin == first && end == last + 1)
                  << at << ": [" << begin << ", " << end << ") for tiles ["
                  << first << ", " << last + 1 << ")";
            reset();
          }
        }
}

} // namespace
