//===- FragmentLayoutTest.cpp - Fragment layouts vs AMD's tables ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The ROCDL target states (and the NVVM target, against the PTX ISA at the
// end), as index IR of the lane id, which matrix element
// each fragment element holds. With a constant lane that IR folds to
// constants; every row of AMD's matrix instruction calculator output must
// agree with it, and every element must be covered once (A and B elements
// getABLaneCopies() times: RDNA3 WMMA holds them in lanes l and l + 16).
//
// One case per (table, chip, mfma option) the target configures:
// - MFMA 16x16x16 and 32x32x8 on CDNA2 (gfx90a) and CDNA3 (gfx942);
// - gfx950 (CDNA4), which the calculator does not cover: AMD's CDNA4 ISA
//   guide keeps the CDNA3 16x16x16 and 32x32x8 instructions and layouts, so
//   it is checked against the CDNA3 tables;
// - WMMA 16x16x16 on RDNA3 (gfx1100/1101/1102) and RDNA4 (gfx1200/1201);
//   RDNA4 bf16 has no table: AMD's RDNA4 ISA guide gives
//   v_wmma_f32_16x16x16_bf16 the register layout of the f16 instruction
//   (as the calculator's f16 and bf16 tables agree for every other
//   architecture), so it is checked against the RDNA4 f16 table.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "LayoutTable.h"

#include "gtest/gtest.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace mlir;

namespace {

using layout_table::Entry;
using layout_table::readTable;

struct LayoutCase {
  const char *table;
  const char *chip;
  int64_t mfma;
  /// The instruction's M, N, K and wave size.
  int64_t m, n, k, wave;
};

std::ostream &operator<<(std::ostream &os, const LayoutCase &c) {
  return os << c.table << " on " << c.chip << " mfma=" << c.mfma;
}

class RocdlLayout : public ::testing::TestWithParam<LayoutCase> {
protected:
  RocdlLayout() : builder(&context) {
    context.loadDialect<arith::ArithDialect>();
    module = ModuleOp::create(UnknownLoc::get(&context));
    builder.setInsertionPointToEnd(module->getBody());
    target = mlir::fmha::createROCDLTarget();
    configureError = target->configure(GetParam().chip, GetParam().mfma);
  }
  /// The target's (row, col) of fragment element `e` of `matrix` in `lane`.
  std::pair<int64_t, int64_t> coord(char matrix, int64_t lane, int64_t e) {
    Location loc = builder.getUnknownLoc();
    Value laneValue = arith::ConstantIndexOp::create(builder, loc, lane);
    mlir::fmha::FragmentCoord c =
        matrix == 'A'   ? target->getACoord(builder, loc, laneValue, e)
        : matrix == 'B' ? target->getBCoord(builder, loc, laneValue, e)
                        : target->getCCoord(builder, loc, laneValue, e);
    std::optional<int64_t> row = getConstantIntValue(c.row);
    std::optional<int64_t> col = getConstantIntValue(c.col);
    EXPECT_TRUE(row && col) << "the layout does not fold for a constant lane";
    return {row.value_or(-1), col.value_or(-1)};
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<mlir::fmha::GpuTarget> target;
  std::string configureError;
};

TEST_P(RocdlLayout, MatchesAmdTable) {
  const LayoutCase &param = GetParam();
  ASSERT_EQ(configureError, "");
  std::vector<Entry> table = readTable(param.table);
  ASSERT_EQ(target->getWarpSize(), param.wave);
  ASSERT_EQ(target->getMmaM(), param.m);
  ASSERT_EQ(target->getMmaN(), param.n);
  ASSERT_EQ(target->getMmaK(), param.k);
  const int64_t numA = target->getNumAElements(),
                numB = target->getNumBElements(),
                numC = target->getNumCElements();
  // Every lane lists each of its A, B and D elements once.
  ASSERT_EQ(static_cast<int64_t>(table.size()),
            param.wave * (numA + numB + numC));
  std::map<char, std::map<std::pair<int64_t, int64_t>, int64_t>> held;
  for (const Entry &entry : table) {
    int64_t count = entry.matrix == 'A'   ? numA
                    : entry.matrix == 'B' ? numB
                                          : numC;
    ASSERT_LT(entry.element, count) << entry.matrix;
    auto [row, col] = coord(entry.matrix, entry.lane, entry.element);
    EXPECT_EQ(row, entry.row) << entry.matrix << " lane " << entry.lane
                              << " element " << entry.element;
    EXPECT_EQ(col, entry.col) << entry.matrix << " lane " << entry.lane
                              << " element " << entry.element;
    ++held[entry.matrix][{row, col}];
  }
  const std::map<char, int64_t> elements = {{'A', param.m * param.k},
                                            {'B', param.k * param.n},
                                            {'D', param.m * param.n}};
  for (auto [m, size] : elements) {
    EXPECT_EQ(static_cast<int64_t>(held[m].size()), size) << m;
    int64_t copies = m == 'D' ? 1 : target->getABLaneCopies();
    for (auto [rc, n] : held[m])
      EXPECT_EQ(n, copies) << m << " (" << rc.first << ", " << rc.second
                           << ") held " << n << " times";
  }
}

TEST_P(RocdlLayout, RowSlotsAndReductionLanes) {
  // A lane's C elements lie in getNumCRowSlots() distinct rows, and the lanes
  // a row reduction combines (xor masks) hold exactly that row.
  ASSERT_EQ(configureError, "");
  const int64_t wave = target->getWarpSize();
  for (int64_t lane = 0; lane < wave; ++lane) {
    std::map<int64_t, int64_t> slotOfRow;
    for (int64_t e = 0; e < target->getNumCElements(); ++e) {
      int64_t row = coord('C', lane, e).first;
      int64_t slot = target->getCRowSlot(e);
      ASSERT_LT(slot, target->getNumCRowSlots());
      auto [it, inserted] = slotOfRow.insert({row, slot});
      EXPECT_EQ(it->second, slot) << "row " << row << " in two slots";
      std::set<int64_t> group = {lane};
      for (int64_t mask : target->getRowReduceXorMasks()) {
        ASSERT_LT(mask, wave);
        std::set<int64_t> next = group;
        for (int64_t l : group)
          next.insert(l ^ mask);
        group = next;
      }
      std::set<int64_t> expected;
      for (int64_t other = 0; other < wave; ++other)
        if (coord('C', other, e).first == row)
          expected.insert(other);
      EXPECT_EQ(group, expected) << "lane " << lane << " element " << e;
    }
    EXPECT_EQ(static_cast<int64_t>(slotOfRow.size()),
              target->getNumCRowSlots());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tables, RocdlLayout,
    ::testing::Values(
        // MFMA 16x16x16 (the default), wave64.
        LayoutCase{"cdna3-v_mfma_f32_16x16x16_f16.csv", "gfx942", 0, 16, 16, 16,
                   64},
        LayoutCase{"cdna3-v_mfma_f32_16x16x16_bf16.csv", "gfx942", 16, 16, 16,
                   16, 64},
        LayoutCase{"cdna2-v_mfma_f32_16x16x16f16.csv", "gfx90a", 16, 16, 16, 16,
                   64},
        LayoutCase{"cdna2-v_mfma_f32_16x16x16bf16_1k.csv", "gfx90a", 0, 16, 16,
                   16, 64},
        LayoutCase{"cdna3-v_mfma_f32_16x16x16_bf16.csv", "gfx950", 16, 16, 16,
                   16, 64},
        // MFMA 32x32x8 (mfma=32), wave64.
        LayoutCase{"cdna3-v_mfma_f32_32x32x8_f16.csv", "gfx942", 32, 32, 32, 8,
                   64},
        LayoutCase{"cdna3-v_mfma_f32_32x32x8_bf16.csv", "gfx942", 32, 32, 32, 8,
                   64},
        LayoutCase{"cdna2-v_mfma_f32_32x32x8f16.csv", "gfx90a", 32, 32, 32, 8,
                   64},
        LayoutCase{"cdna2-v_mfma_f32_32x32x8bf16_1k.csv", "gfx90a", 32, 32, 32,
                   8, 64},
        LayoutCase{"cdna3-v_mfma_f32_32x32x8_f16.csv", "gfx950", 32, 32, 32, 8,
                   64},
        // WMMA 16x16x16, wave32.
        LayoutCase{"rdna3-v_wmma_f32_16x16x16_f16.csv", "gfx1100", 0, 16, 16,
                   16, 32},
        LayoutCase{"rdna3-v_wmma_f32_16x16x16_bf16.csv", "gfx1101", 16, 16, 16,
                   16, 32},
        LayoutCase{"rdna3-v_wmma_f32_16x16x16_f16.csv", "gfx1102", 0, 16, 16,
                   16, 32},
        LayoutCase{"rdna4-v_wmma_f32_16x16x16_f16.csv", "gfx1200", 0, 16, 16,
                   16, 32},
        // RDNA4 bf16: the f16 table (see the file comment).
        LayoutCase{"rdna4-v_wmma_f32_16x16x16_f16.csv", "gfx1201", 16, 16, 16,
                   16, 32}));

/// The NVVM target's fragment coordinates, as index IR folded for each
/// lane, against the PTX ISA (LayoutTable.h).
TEST(NvvmLayout, MatchesPtx) {
  MLIRContext context;
  context.loadDialect<arith::ArithDialect>();
  OpBuilder builder(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  builder.setInsertionPointToEnd(module->getBody());
  std::unique_ptr<mlir::fmha::GpuTarget> target =
      mlir::fmha::createNVVMTarget();
  ASSERT_EQ(target->configure("sm_90a", 0), "");
  Location loc = builder.getUnknownLoc();
  auto fold = [&](mlir::fmha::FragmentCoord c) {
    std::optional<int64_t> row = getConstantIntValue(c.row);
    std::optional<int64_t> col = getConstantIntValue(c.col);
    EXPECT_TRUE(row && col) << "the layout does not fold for a constant lane";
    return std::make_pair(row.value_or(-1), col.value_or(-1));
  };
  auto at = [](::fmha::TileCoord c) { return std::make_pair(c.row, c.col); };
  for (int64_t lane = 0; lane < 32; ++lane) {
    Value l = arith::ConstantIndexOp::create(builder, loc, lane);
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(fold(target->getACoord(builder, loc, l, e)),
                at(layout_table::ptxA(lane, e)))
          << "A lane " << lane << " element " << e;
    for (int64_t e = 0; e < 4; ++e) {
      EXPECT_EQ(fold(target->getBCoord(builder, loc, l, e)),
                at(layout_table::ptxB(lane, e)))
          << "B lane " << lane << " element " << e;
      EXPECT_EQ(fold(target->getCCoord(builder, loc, l, e)),
                at(layout_table::ptxC(lane, e)))
          << "C lane " << lane << " element " << e;
    }
  }
}

/// emitLayoutCoord on layouts no instruction has: bases that share bits
/// (xor), a basis of both axes, bits that are not runs, a lane bit of no
/// basis; folded for each constant lane, against LinearLayout::apply.
TEST(EmitLayoutCoord, GeneralLayouts) {
  MLIRContext context;
  context.loadDialect<arith::ArithDialect>();
  OpBuilder builder(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  builder.setInsertionPointToEnd(module->getBody());
  Location loc = builder.getUnknownLoc();
  const ::fmha::LinearLayout layouts[] = {
      // The 128-byte swizzle: chunk ^ row.
      ::fmha::LinearLayout(8, 8, {{0, 1}, {0, 2}, {0, 4}},
                           {{1, 1}, {2, 2}, {4, 4}}),
      // Lane bits out of order, one of them of no basis, registers that
      // overlap the lanes' bits.
      ::fmha::LinearLayout(16, 8, {{0, 4}, {8, 0}},
                           {{0, 2}, {0, 0}, {2, 0}, {1, 0}, {0, 1}, {4, 4}}),
  };
  for (const ::fmha::LinearLayout &layout : layouts) {
    ASSERT_EQ(layout.validate(), "") << layout.str();
    for (int64_t lane = 0; lane < layout.getNumLanes(); ++lane) {
      Value l = arith::ConstantIndexOp::create(builder, loc, lane);
      for (int64_t reg = 0; reg < layout.getNumRegisters(); ++reg) {
        mlir::fmha::FragmentCoord c =
            mlir::fmha::emitLayoutCoord(builder, loc, layout, l, reg);
        ::fmha::TileCoord expected = layout.apply(reg, lane);
        EXPECT_EQ(getConstantIntValue(c.row), expected.row)
            << layout.str() << " lane " << lane << " register " << reg;
        EXPECT_EQ(getConstantIntValue(c.col), expected.col)
            << layout.str() << " lane " << lane << " register " << reg;
      }
    }
  }
}

/// The chip and shape combinations the target refuses, with a message.
TEST(RocdlConfigure, RejectsUnsupportedCombinations) {
  auto check = [](StringRef chip, int64_t mfma, StringRef expected) {
    std::unique_ptr<mlir::fmha::GpuTarget> target =
        mlir::fmha::createROCDLTarget();
    std::string error = target->configure(chip, mfma);
    EXPECT_NE(error.find(expected.str()), std::string::npos)
        << chip.str() << " mfma=" << mfma << ": " << error;
  };
  check("gfx906", 0, "unknown or unsupported AMD chip 'gfx906'");
  check("gfx1100", 32, "RDNA chips have only the WMMA 16x16x16");
  check("gfx942", 8, "expected 16 (v_mfma_f32_16x16x16) or 32");
  std::unique_ptr<mlir::fmha::GpuTarget> rdna3 =
      mlir::fmha::createROCDLTarget();
  ASSERT_EQ(rdna3->configure("gfx1100", 0), "");
  EXPECT_EQ(rdna3->getMaxHeadDim(), 64);
  EXPECT_EQ(rdna3->getABLaneCopies(), 2);
}

} // namespace
