//===- MmaInstruction.cpp - Matrix instructions as data -------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/MmaInstruction.h"

#include <sstream>

namespace fmha {

MmaInstruction MmaInstruction::nvidiaMmaSyncM16N8K16() {
  MmaInstruction mma;
  mma.name = "mma.sync.m16n8k16";
  mma.m = 16, mma.n = 8, mma.k = 16, mma.warpSize = 32;
  // Lane bits 0-1 are t (columns 2t of A and C, rows 2t of B), bits 2-4 g.
  mma.a = LinearLayout(16, 16, {{0, 1}, {8, 0}, {0, 8}},
                       concat(colRun(2, 2), rowRun(3)));
  mma.b =
      LinearLayout(16, 8, {{1, 0}, {8, 0}}, concat(rowRun(2, 2), colRun(3)));
  mma.c =
      LinearLayout(16, 8, {{0, 1}, {8, 0}}, concat(colRun(2, 2), rowRun(3)));
  return mma;
}

MmaInstruction MmaInstruction::amdMfma16x16x16() {
  MmaInstruction mma;
  mma.name = "v_mfma_f32_16x16x16";
  mma.m = 16, mma.n = 16, mma.k = 16, mma.warpSize = 64;
  mma.a = LinearLayout(16, 16, colRun(2), concat(rowRun(4), colRun(2, 4)));
  mma.b = mma.a.transposed();
  mma.c = LinearLayout(16, 16, rowRun(2), concat(colRun(4), rowRun(2, 4)));
  return mma;
}

MmaInstruction MmaInstruction::amdMfma32x32x8() {
  MmaInstruction mma;
  mma.name = "v_mfma_f32_32x32x8";
  mma.m = 32, mma.n = 32, mma.k = 8, mma.warpSize = 64;
  mma.a = LinearLayout(32, 8, colRun(2), concat(rowRun(5), colRun(1, 4)));
  mma.b = mma.a.transposed();
  mma.c = LinearLayout(32, 32, concat(rowRun(2), rowRun(2, 8)),
                       concat(colRun(5), rowRun(1, 4)));
  return mma;
}

MmaInstruction MmaInstruction::amdWmmaRdna3() {
  MmaInstruction mma;
  mma.name = "v_wmma_f32_16x16x16 (RDNA3)";
  mma.m = 16, mma.n = 16, mma.k = 16, mma.warpSize = 32;
  // Lane bit 4 has no basis of its own: lanes l and l + 16 hold the same row.
  mma.a = LinearLayout(16, 16, colRun(4), concat(rowRun(4), {{0, 0}}));
  mma.b = mma.a.transposed();
  mma.c = LinearLayout(16, 16, rowRun(3, 2), concat(colRun(4), rowRun(1)));
  return mma;
}

MmaInstruction MmaInstruction::amdWmmaRdna4() {
  MmaInstruction mma;
  mma.name = "v_wmma_f32_16x16x16 (RDNA4)";
  mma.m = 16, mma.n = 16, mma.k = 16, mma.warpSize = 32;
  mma.a = LinearLayout(16, 16, concat(colRun(2), colRun(1, 8)),
                       concat(rowRun(4), colRun(1, 4)));
  mma.b = mma.a.transposed();
  mma.c = LinearLayout(16, 16, rowRun(3), concat(colRun(4), rowRun(1, 8)));
  return mma;
}

std::string MmaInstruction::validate() const {
  struct Operand {
    const char *name;
    const LinearLayout &layout;
    int64_t rows, cols;
  } operands[] = {{"A", a, m, k}, {"B", b, k, n}, {"C", c, m, n}};
  for (const Operand &op : operands) {
    std::ostringstream os;
    os << name << " " << op.name << ": ";
    std::string error = op.layout.validate();
    if (!error.empty())
      return os.str() + error;
    if (op.layout.getRows() != op.rows || op.layout.getCols() != op.cols) {
      os << "the layout covers " << op.layout.getRows() << " x "
         << op.layout.getCols() << ", not " << op.rows << " x " << op.cols;
      return os.str();
    }
    if (op.layout.getNumLanes() != warpSize || op.layout.getNumWarps() != 1) {
      os << "the layout has " << op.layout.getNumLanes() << " lanes and "
         << op.layout.getNumWarps() << " warps, not " << warpSize
         << " lanes of one warp";
      return os.str();
    }
  }
  return "";
}

bool MmaInstruction::pairsAreAdjacent() const {
  const auto &ra = a.getBases(LayoutInput::Register);
  const auto &rb = b.getBases(LayoutInput::Register);
  return !ra.empty() && !rb.empty() && ra[0] == TileCoord{0, 1} &&
         rb[0] == TileCoord{1, 0};
}

bool MmaInstruction::cPairsAreAdjacent() const {
  const auto &rc = c.getBases(LayoutInput::Register);
  return !rc.empty() && rc[0] == TileCoord{0, 1};
}

int64_t MmaInstruction::getNumCRowSlots() const {
  int64_t slots = 1;
  for (TileCoord basis : c.getBases(LayoutInput::Register))
    if (basis.row != 0)
      slots *= 2;
  return slots;
}

int64_t MmaInstruction::getCRowSlot(int64_t e) const {
  const auto &bases = c.getBases(LayoutInput::Register);
  int64_t slot = 0, slotBit = 0;
  for (size_t bit = 0; bit < bases.size(); ++bit) {
    if (bases[bit].row == 0)
      continue;
    slot |= ((e >> bit) & 1) << slotBit++;
  }
  return slot;
}

std::vector<int64_t> MmaInstruction::getRowReduceXorMasks() const {
  std::vector<int64_t> masks;
  const auto &bases = c.getBases(LayoutInput::Lane);
  for (size_t bit = 0; bit < bases.size(); ++bit)
    if (bases[bit].row == 0 && bases[bit].col != 0)
      masks.push_back(int64_t(1) << bit);
  return masks;
}

std::optional<std::pair<int64_t, int64_t>>
MmaInstruction::getAFromC(int64_t e) const {
  if (n <= 0 || k % n != 0)
    return std::nullopt;
  for (int64_t tile = 0; tile < k / n; ++tile)
    for (int64_t ce = 0; ce < c.getNumRegisters(); ++ce) {
      bool everyLane = true;
      for (int64_t lane = 0; lane < warpSize && everyLane; ++lane) {
        TileCoord held = c.apply(ce, lane);
        held.col += tile * n;
        everyLane = held == a.apply(e, lane);
      }
      if (everyLane)
        return std::make_pair(tile, ce);
    }
  return std::nullopt;
}

} // namespace fmha
