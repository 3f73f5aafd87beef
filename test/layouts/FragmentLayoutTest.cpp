//===- FragmentLayoutTest.cpp - Fragment layouts vs AMD's tables ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The ROCDL target states, as index IR of the lane id, which matrix element
// each fragment element holds. With a constant lane that IR folds to
// constants; every row of AMD's matrix instruction calculator output must
// agree with it, and every element must be covered exactly once.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace mlir;

namespace {

struct Entry {
  char matrix;
  int64_t lane, element, row, col;
};

std::vector<Entry> readTable(const std::string &name) {
  std::ifstream in(std::string(FMHA_LAYOUT_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << "cannot open " << name;
  std::vector<Entry> entries;
  std::string line;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string field;
    std::vector<std::string> f;
    while (std::getline(ss, field, ','))
      f.push_back(field);
    if (f.size() < 6)
      continue;
    entries.push_back({f[0][0], std::stoll(f[1]), std::stoll(f[3]),
                       std::stoll(f[4]), std::stoll(f[5])});
  }
  return entries;
}

class RocdlLayout : public ::testing::TestWithParam<const char *> {
protected:
  RocdlLayout() : builder(&context) {
    context.loadDialect<arith::ArithDialect>();
    module = ModuleOp::create(UnknownLoc::get(&context));
    builder.setInsertionPointToEnd(module->getBody());
    target = fmha::createROCDLTarget();
  }
  /// The target's (row, col) of fragment element `e` of `matrix` in `lane`.
  std::pair<int64_t, int64_t> coord(char matrix, int64_t lane, int64_t e) {
    Location loc = builder.getUnknownLoc();
    Value laneValue = arith::ConstantIndexOp::create(builder, loc, lane);
    fmha::FragmentCoord c =
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
  std::unique_ptr<fmha::GpuTarget> target;
};

TEST_P(RocdlLayout, MatchesAmdTable) {
  std::vector<Entry> table = readTable(GetParam());
  ASSERT_EQ(table.size(), 768u); // 64 lanes x (4 A + 4 B + 4 D) elements
  EXPECT_EQ(target->getWarpSize(), 64);
  EXPECT_EQ(target->getMmaM(), 16);
  EXPECT_EQ(target->getMmaN(), 16);
  EXPECT_EQ(target->getMmaK(), 16);
  std::map<char, std::set<std::pair<int64_t, int64_t>>> covered;
  for (const Entry &entry : table) {
    ASSERT_LT(entry.element, 4) << GetParam();
    auto [row, col] = coord(entry.matrix, entry.lane, entry.element);
    EXPECT_EQ(row, entry.row) << GetParam() << " " << entry.matrix << " lane "
                              << entry.lane << " element " << entry.element;
    EXPECT_EQ(col, entry.col) << GetParam() << " " << entry.matrix << " lane "
                              << entry.lane << " element " << entry.element;
    EXPECT_TRUE(covered[entry.matrix].insert({row, col}).second)
        << entry.matrix << " (" << row << ", " << col << ") held twice";
  }
  for (char m : {'A', 'B', 'D'})
    EXPECT_EQ(covered[m].size(), 256u) << m;
}

TEST_P(RocdlLayout, RowSlotsAndReductionLanes) {
  // A lane's C elements lie in getNumCRowSlots() distinct rows, and the lanes
  // a row reduction combines (xor masks) hold exactly that row.
  for (int64_t lane = 0; lane < 64; ++lane)
    for (int64_t e = 0; e < target->getNumCElements(); ++e) {
      int64_t row = coord('C', lane, e).first;
      std::set<int64_t> group = {lane};
      for (int64_t mask : target->getRowReduceXorMasks()) {
        std::set<int64_t> next = group;
        for (int64_t l : group)
          next.insert(l ^ mask);
        group = next;
      }
      std::set<int64_t> expected;
      for (int64_t other = 0; other < 64; ++other)
        if (coord('C', other, e).first == row)
          expected.insert(other);
      EXPECT_EQ(group, expected) << "lane " << lane << " element " << e;
      EXPECT_EQ(target->getCRowSlot(e), e);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Tables, RocdlLayout,
    ::testing::Values("cdna3-v_mfma_f32_16x16x16_f16.csv",
                      "cdna3-v_mfma_f32_16x16x16_bf16.csv",
                      "cdna2-v_mfma_f32_16x16x16f16.csv",
                      "cdna2-v_mfma_f32_16x16x16bf16_1k.csv"));

} // namespace
