//===- MmaInstructionTest.cpp - Matrix instructions as data ---------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The linear layouts of support/ against the vendors' documents: NVIDIA's
// mma.m16n8k16 fragments as the PTX ISA writes them (closed forms, here
// element by element), AMD's as the Matrix Instruction Calculator prints
// them (test/layouts/data); what the kernels derive from them (the A operand
// fed from C registers, row slots, reduction lanes) checked against brute
// force; and a malformed layout answered with what is wrong.
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/MmaInstruction.h"

#include "LayoutTable.h"

#include "gtest/gtest.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using fmha::LayoutInput;
using fmha::LinearLayout;
using fmha::MmaInstruction;
using fmha::TileCoord;

namespace {

using layout_table::ptxA;
using layout_table::ptxB;
using layout_table::ptxC;

TEST(MmaInstruction, NvidiaMatchesPtx) {
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  ASSERT_EQ(mma.validate(), "");
  ASSERT_EQ(mma.a.getNumRegisters(), 8);
  ASSERT_EQ(mma.b.getNumRegisters(), 4);
  ASSERT_EQ(mma.c.getNumRegisters(), 4);
  for (int64_t lane = 0; lane < 32; ++lane) {
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(mma.a.apply(e, lane), ptxA(lane, e)) << lane << " " << e;
    for (int64_t e = 0; e < 4; ++e) {
      EXPECT_EQ(mma.b.apply(e, lane), ptxB(lane, e)) << lane << " " << e;
      EXPECT_EQ(mma.c.apply(e, lane), ptxC(lane, e)) << lane << " " << e;
    }
  }
  EXPECT_TRUE(mma.pairsAreAdjacent());
  EXPECT_TRUE(mma.cPairsAreAdjacent());
  EXPECT_EQ(mma.getABLaneCopies(), 1);
  EXPECT_EQ(mma.getNumCRowSlots(), 2);
  EXPECT_EQ(mma.getRowReduceXorMasks(), (std::vector<int64_t>{1, 2}));
}

TEST(MmaInstruction, NvidiaAFromC) {
  // Every element of the A fragment of K = 16 columns is, in the same lane,
  // an element of one of the two C tiles (8 columns each) side by side: P
  // goes from the first product's accumulators to the second's A.
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  for (int64_t e = 0; e < 8; ++e) {
    auto from = mma.getAFromC(e);
    ASSERT_TRUE(from.has_value()) << e;
    auto [tile, ce] = *from;
    ASSERT_LT(tile, 2);
    ASSERT_LT(ce, 4);
    for (int64_t lane = 0; lane < 32; ++lane) {
      TileCoord c = ptxC(lane, ce);
      EXPECT_EQ((TileCoord{c.row, c.col + 8 * tile}), ptxA(lane, e))
          << "lane " << lane << " element " << e;
    }
  }
}

using layout_table::Entry;
using layout_table::readTable;

struct AmdCase {
  const char *table;
  MmaInstruction (*make)();
};

std::ostream &operator<<(std::ostream &os, const AmdCase &c) {
  return os << c.table;
}

class AmdInstruction : public ::testing::TestWithParam<AmdCase> {};

TEST_P(AmdInstruction, MatchesAmdTable) {
  MmaInstruction mma = GetParam().make();
  ASSERT_EQ(mma.validate(), "");
  std::vector<Entry> table = readTable(GetParam().table);
  ASSERT_EQ(static_cast<int64_t>(table.size()),
            mma.warpSize * (mma.a.getNumRegisters() + mma.b.getNumRegisters() +
                            mma.c.getNumRegisters()));
  for (const Entry &entry : table) {
    const LinearLayout &layout = entry.matrix == 'A'   ? mma.a
                                 : entry.matrix == 'B' ? mma.b
                                                       : mma.c;
    ASSERT_LT(entry.element, layout.getNumRegisters()) << entry.matrix;
    EXPECT_EQ(layout.apply(entry.element, entry.lane),
              (TileCoord{entry.row, entry.col}))
        << entry.matrix << " lane " << entry.lane << " element "
        << entry.element;
  }
  // No C element of a lane is an element of its A fragment: P goes through
  // workgroup memory on AMD.
  for (int64_t e = 0; e < mma.a.getNumRegisters(); ++e)
    EXPECT_FALSE(mma.getAFromC(e).has_value()) << e;
  EXPECT_TRUE(mma.pairsAreAdjacent());
  EXPECT_FALSE(mma.cPairsAreAdjacent());
}

TEST_P(AmdInstruction, RowSlotsAndReductionLanes) {
  // Brute force over the layout: the lanes holding a C row are exactly those
  // the xor masks reach, and each row a lane holds has one slot.
  MmaInstruction mma = GetParam().make();
  for (int64_t lane = 0; lane < mma.warpSize; ++lane) {
    std::map<int64_t, int64_t> slotOfRow;
    for (int64_t e = 0; e < mma.c.getNumRegisters(); ++e) {
      int64_t row = mma.c.apply(e, lane).row;
      auto [it, inserted] = slotOfRow.insert({row, mma.getCRowSlot(e)});
      EXPECT_EQ(it->second, mma.getCRowSlot(e));
      std::set<int64_t> group = {lane};
      for (int64_t mask : mma.getRowReduceXorMasks()) {
        std::set<int64_t> next = group;
        for (int64_t l : group)
          next.insert(l ^ mask);
        group = next;
      }
      std::set<int64_t> expected;
      for (int64_t other = 0; other < mma.warpSize; ++other)
        if (mma.c.apply(e, other).row == row)
          expected.insert(other);
      EXPECT_EQ(group, expected) << "lane " << lane << " element " << e;
    }
    EXPECT_EQ(static_cast<int64_t>(slotOfRow.size()), mma.getNumCRowSlots());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tables, AmdInstruction,
    ::testing::Values(AmdCase{"cdna3-v_mfma_f32_16x16x16_f16.csv",
                              &MmaInstruction::amdMfma16x16x16},
                      AmdCase{"cdna2-v_mfma_f32_16x16x16bf16_1k.csv",
                              &MmaInstruction::amdMfma16x16x16},
                      AmdCase{"cdna3-v_mfma_f32_32x32x8_bf16.csv",
                              &MmaInstruction::amdMfma32x32x8},
                      AmdCase{"cdna2-v_mfma_f32_32x32x8f16.csv",
                              &MmaInstruction::amdMfma32x32x8},
                      AmdCase{"rdna3-v_wmma_f32_16x16x16_f16.csv",
                              &MmaInstruction::amdWmmaRdna3},
                      AmdCase{"rdna4-v_wmma_f32_16x16x16_f16.csv",
                              &MmaInstruction::amdWmmaRdna4}));

TEST(LinearLayout, Replication) {
  EXPECT_EQ(MmaInstruction::amdWmmaRdna3().a.getLaneCopies(), 2);
  EXPECT_EQ(MmaInstruction::amdWmmaRdna3().a.getCopies(), 2);
  EXPECT_EQ(MmaInstruction::amdWmmaRdna3().c.getCopies(), 1);
  EXPECT_EQ(MmaInstruction::amdMfma16x16x16().a.getCopies(), 1);
}

TEST(LinearLayout, Transposed) {
  LinearLayout a = MmaInstruction::amdMfma32x32x8().a;
  LinearLayout t = a.transposed();
  EXPECT_EQ(t.getRows(), 8);
  EXPECT_EQ(t.getCols(), 32);
  for (int64_t lane = 0; lane < 64; ++lane)
    for (int64_t e = 0; e < 4; ++e) {
      TileCoord x = a.apply(e, lane), y = t.apply(e, lane);
      EXPECT_EQ(x.row, y.col);
      EXPECT_EQ(x.col, y.row);
    }
  EXPECT_EQ(t.transposed(), a);
}

TEST(LinearLayout, SwizzledBasesXor) {
  // A general linear layout: bases that share bits combine by xor (the
  // 16-byte chunk of a 128-byte swizzled row is chunk ^ row).
  LinearLayout swizzle(8, 8, {{0, 1}, {0, 2}, {0, 4}},
                       {{1, 1}, {2, 2}, {4, 4}});
  EXPECT_EQ(swizzle.validate(), "");
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t chunk = 0; chunk < 8; ++chunk)
      EXPECT_EQ(swizzle.apply(chunk, row), (TileCoord{row, chunk ^ row}));
}

TEST(LinearLayout, MalformedLayouts) {
  auto error = [](const LinearLayout &layout) { return layout.validate(); };
  EXPECT_EQ(error(LinearLayout(16, 8, {{0, 8}}, fmha::rowRun(4))),
            "the basis (0, 8) of register bit 0 lies outside the 16 x 8 tile");
  EXPECT_EQ(
      error(LinearLayout(16, 8, {{0, 1}, {0, 1}, {0, 4}}, fmha::rowRun(4))),
      "the bases do not reach every element of the 16 x 8 tile");
  EXPECT_EQ(error(LinearLayout(12, 8, fmha::colRun(3), fmha::rowRun(4))),
            "the tile (12 x 8) must have power-of-two sides of at most 2^30 "
            "elements");
  EXPECT_EQ(error(LinearLayout(16, 16, fmha::colRun(4), fmha::rowRun(3, 2),
                               {{-1, 0}})),
            "the basis (-1, 0) of warp bit 0 lies outside the 16 x 16 tile");
  MmaInstruction mma = MmaInstruction::amdMfma16x16x16();
  mma.c = MmaInstruction::amdWmmaRdna4().c; // 32 lanes, not 64
  EXPECT_EQ(mma.validate(), "v_mfma_f32_16x16x16 C: the layout has 32 lanes "
                            "and 1 warps, not 64 lanes of one warp");
  mma.c = MmaInstruction::amdMfma32x32x8().c;
  EXPECT_EQ(mma.validate(),
            "v_mfma_f32_16x16x16 C: the layout covers 32 x 32, not 16 x 16");
}

TEST(LinearLayout, Prints) {
  EXPECT_EQ(MmaInstruction::nvidiaMmaSyncM16N8K16().c.str(),
            "16 x 8, register [(0, 1), (8, 0)], lane [(0, 2), (0, 4), (1, 0), "
            "(2, 0), (4, 0)]");
}

} // namespace
