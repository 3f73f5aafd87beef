//===- LayoutTable.h - AMD's lane tables as the tests read them -*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// One row of test/layouts/data/*.csv (see its README): matrix A, B or D,
// the lane, the element of the lane's fragment, and the (row, col) it holds;
// and NVIDIA's mma.m16n8k16 fragments as the PTX ISA writes them.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TEST_LAYOUTS_LAYOUTTABLE_H
#define FMHA_TEST_LAYOUTS_LAYOUTTABLE_H

#include "fmha/Support/LinearLayout.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace layout_table {

struct Entry {
  char matrix;
  int64_t lane, element, row, col;
};

inline std::vector<Entry> readTable(const std::string &name) {
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
    if (f.size() >= 6)
      entries.push_back({f[0][0], std::stoll(f[1]), std::stoll(f[3]),
                         std::stoll(f[4]), std::stoll(f[5])});
  }
  return entries;
}

/// PTX ISA 9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 with floating
/// point type": groupID = lane >> 2, threadID_in_group = lane % 4.
inline fmha::TileCoord ptxA(int64_t lane, int64_t e) {
  int64_t g = lane >> 2, t = lane % 4;
  int64_t row = (e < 2 || (e >= 4 && e < 6)) ? g : g + 8;
  int64_t col = t * 2 + (e & 1) + (e >= 4 ? 8 : 0);
  return {row, col};
}
inline fmha::TileCoord ptxB(int64_t lane, int64_t e) {
  int64_t g = lane >> 2, t = lane % 4;
  return {t * 2 + (e & 1) + (e >= 2 ? 8 : 0), g};
}
inline fmha::TileCoord ptxC(int64_t lane, int64_t e) {
  int64_t g = lane >> 2, t = lane % 4;
  return {e < 2 ? g : g + 8, t * 2 + (e & 1)};
}

} // namespace layout_table

#endif // FMHA_TEST_LAYOUTS_LAYOUTTABLE_H
