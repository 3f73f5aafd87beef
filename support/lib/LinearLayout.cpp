//===- LinearLayout.cpp - Where each register of each lane lives ----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/LinearLayout.h"

#include <algorithm>
#include <sstream>

namespace fmha {

namespace {

bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

int64_t log2Of(int64_t x) {
  int64_t bits = 0;
  while ((int64_t(1) << bits) < x)
    ++bits;
  return bits;
}

const char *inputName(LayoutInput in) {
  switch (in) {
  case LayoutInput::Register:
    return "register";
  case LayoutInput::Lane:
    return "lane";
  case LayoutInput::Warp:
    return "warp";
  }
  return "?";
}

constexpr LayoutInput kInputs[] = {LayoutInput::Register, LayoutInput::Lane,
                                   LayoutInput::Warp};

} // namespace

const std::vector<TileCoord> &LinearLayout::getBases(LayoutInput in) const {
  switch (in) {
  case LayoutInput::Register:
    return registerBases;
  case LayoutInput::Lane:
    return laneBases;
  case LayoutInput::Warp:
    break;
  }
  return warpBases;
}

TileCoord LinearLayout::apply(int64_t reg, int64_t lane, int64_t warp) const {
  TileCoord at;
  const int64_t values[] = {reg, lane, warp};
  for (int i = 0; i < 3; ++i) {
    const std::vector<TileCoord> &bases = getBases(kInputs[i]);
    for (size_t bit = 0; bit < bases.size(); ++bit)
      if ((values[i] >> bit) & 1)
        at = at ^ bases[bit];
  }
  return at;
}

namespace {

/// A basis of the layout's image in echelon form (Gaussian elimination over
/// GF(2)): pivot `bit` (row bits above col bits) an element whose highest
/// set bit is `bit`, and the combination of the inputs' bits (register
/// bits lowest, then lane, then warp bits) that reaches it.
struct Pivot {
  uint64_t element = 0;
  uint64_t inputs = 0;
};

std::vector<Pivot> eliminate(const LinearLayout &layout) {
  const int64_t colBits = log2Of(layout.getCols());
  std::vector<Pivot> pivots(64);
  int64_t input = 0;
  for (LayoutInput in : kInputs)
    for (TileCoord basis : layout.getBases(in)) {
      Pivot p{(uint64_t(basis.row) << colBits) | uint64_t(basis.col),
              uint64_t(1) << input++};
      for (int bit = 63; bit >= 0 && p.element; --bit) {
        if (!((p.element >> bit) & 1))
          continue;
        if (!pivots[bit].element) {
          pivots[bit] = p;
          break;
        }
        p.element ^= pivots[bit].element;
        p.inputs ^= pivots[bit].inputs;
      }
    }
  return pivots;
}

/// The GF(2) rank of the bases as bit vectors.
int64_t rankOf(const LinearLayout &layout) {
  int64_t rank = 0;
  for (const Pivot &p : eliminate(layout))
    rank += p.element != 0;
  return rank;
}

} // namespace

std::string LinearLayout::validate() const {
  std::ostringstream os;
  if (!isPowerOfTwo(rows) || !isPowerOfTwo(cols) || rows > (1 << 30) ||
      cols > (1 << 30) || rows * cols > (1 << 30)) {
    os << "the tile (" << rows << " x " << cols
       << ") must have power-of-two sides of at most 2^30 elements";
    return os.str();
  }
  for (LayoutInput in : kInputs) {
    const std::vector<TileCoord> &bases = getBases(in);
    if (bases.size() > 16) {
      os << "the " << inputName(in) << " has " << bases.size()
         << " bits (at most 16)";
      return os.str();
    }
    for (size_t bit = 0; bit < bases.size(); ++bit) {
      TileCoord basis = bases[bit];
      if (basis.row < 0 || basis.row >= rows || basis.col < 0 ||
          basis.col >= cols) {
        os << "the basis (" << basis.row << ", " << basis.col << ") of "
           << inputName(in) << " bit " << bit << " lies outside the " << rows
           << " x " << cols << " tile";
        return os.str();
      }
    }
  }
  if (rankOf(*this) != log2Of(rows) + log2Of(cols)) {
    os << "the bases do not reach every element of the " << rows << " x "
       << cols << " tile";
    return os.str();
  }
  return "";
}

int64_t LinearLayout::getCopies() const {
  int64_t bits = registerBases.size() + laneBases.size() + warpBases.size();
  return int64_t(1) << (bits - rankOf(*this));
}

int64_t LinearLayout::getLaneCopies() const {
  int64_t copies = 1;
  for (TileCoord basis : laneBases)
    if (basis.isZero())
      copies *= 2;
  return copies;
}

LinearLayout LinearLayout::transposed() const {
  auto swap = [](std::vector<TileCoord> bases) {
    for (TileCoord &basis : bases)
      basis = {basis.col, basis.row};
    return bases;
  };
  return LinearLayout(cols, rows, swap(registerBases), swap(laneBases),
                      swap(warpBases));
}

std::string LinearLayout::str() const {
  std::ostringstream os;
  os << rows << " x " << cols;
  for (LayoutInput in : kInputs) {
    const std::vector<TileCoord> &bases = getBases(in);
    if (in == LayoutInput::Warp && bases.empty())
      continue;
    os << ", " << inputName(in) << " [";
    for (size_t bit = 0; bit < bases.size(); ++bit)
      os << (bit ? ", " : "") << "(" << bases[bit].row << ", " << bases[bit].col
         << ")";
    os << "]";
  }
  return os.str();
}

bool operator==(const LinearLayout &a, const LinearLayout &b) {
  auto same = [](const std::vector<TileCoord> &x,
                 const std::vector<TileCoord> &y) {
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != y[i])
        return false;
    return true;
  };
  return a.rows == b.rows && a.cols == b.cols &&
         same(a.registerBases, b.registerBases) &&
         same(a.laneBases, b.laneBases) && same(a.warpBases, b.warpBases);
}

std::vector<TileCoord> rowRun(int64_t count, int64_t first) {
  std::vector<TileCoord> bases;
  for (int64_t i = 0; i < count; ++i)
    bases.push_back({first << i, 0});
  return bases;
}

std::vector<TileCoord> colRun(int64_t count, int64_t first) {
  std::vector<TileCoord> bases;
  for (int64_t i = 0; i < count; ++i)
    bases.push_back({0, first << i});
  return bases;
}

std::vector<TileCoord> concat(std::vector<TileCoord> a,
                              const std::vector<TileCoord> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

LinearLayout tileFragments(const LinearLayout &instr, int64_t rows,
                           int64_t cols, int64_t warps, std::string *error,
                           WarpSplit split) {
  std::ostringstream os;
  // The warps along the rows and the groups of them beyond (RowsThen*:
  // where the rows run out of fragments for every warp).
  int64_t rowWarps = warps, groups = 1;
  const bool thenCols = split == WarpSplit::RowsThenCols;
  if ((thenCols || split == WarpSplit::RowsThenReplicated) &&
      isPowerOfTwo(rows) && isPowerOfTwo(warps) &&
      rows % instr.getRows() == 0 && rows / instr.getRows() < warps) {
    rowWarps = rows / instr.getRows();
    groups = warps / rowWarps;
  }
  const int64_t bandCols = thenCols ? cols / groups : cols;
  if (!isPowerOfTwo(rows) || !isPowerOfTwo(cols) || !isPowerOfTwo(warps))
    os << "tile " << rows << "x" << cols << " over " << warps
       << " warps: sizes must be powers of two";
  else if (split == WarpSplit::Replicated &&
           (rows % instr.getRows() != 0 || cols % instr.getCols() != 0))
    os << "tile " << rows << "x" << cols << " (every warp's) is not a whole "
       << "number of " << instr.getRows() << "x" << instr.getCols()
       << " fragments";
  else if (split != WarpSplit::Replicated &&
           (rows % rowWarps != 0 || (rows / rowWarps) % instr.getRows() != 0 ||
            bandCols == 0 || bandCols % instr.getCols() != 0))
    os << "tile " << rows << "x" << cols << " over " << warps
       << " warps: each warp's " << rows / std::max<int64_t>(rowWarps, 1) << "x"
       << bandCols << " band is not a whole number of " << instr.getRows()
       << "x" << instr.getCols() << " fragments";
  else if (!instr.getBases(LayoutInput::Warp).empty())
    os << "the fragment is held by one warp, not " << instr.getNumWarps();
  if (!os.str().empty()) {
    if (error)
      *error = os.str();
    return instr;
  }
  const bool replicated = split == WarpSplit::Replicated;
  const int64_t band = replicated ? rows : rows / rowWarps;
  std::vector<TileCoord> registers = instr.getBases(LayoutInput::Register);
  registers = concat(
      registers, colRun(log2Of(bandCols / instr.getCols()), instr.getCols()));
  registers = concat(registers,
                     rowRun(log2Of(band / instr.getRows()), instr.getRows()));
  std::vector<TileCoord> warpBases =
      replicated ? std::vector<TileCoord>(log2Of(warps), TileCoord{})
                 : rowRun(log2Of(rowWarps), band);
  warpBases =
      concat(warpBases,
             thenCols ? colRun(log2Of(groups), bandCols)
                      : std::vector<TileCoord>(log2Of(groups), TileCoord{}));
  return LinearLayout(rows, cols, registers, instr.getBases(LayoutInput::Lane),
                      warpBases);
}

/// The slice of `tile` along one of its dims (`keepRows`: the rows, else the
/// columns): register bases that move along the other dim alone dropped, the
/// other dim's part of every basis cleared.
static LinearLayout sliceAlong(const LinearLayout &tile, bool keepRows) {
  auto keep = [&](const std::vector<TileCoord> &bases, bool dropOthers) {
    std::vector<TileCoord> out;
    for (TileCoord basis : bases) {
      TileCoord kept =
          keepRows ? TileCoord{basis.row, 0} : TileCoord{0, basis.col};
      if (!dropOthers || kept.row != 0 || kept.col != 0)
        out.push_back(kept);
    }
    return out;
  };
  return LinearLayout(keepRows ? tile.getRows() : 1,
                      keepRows ? 1 : tile.getCols(),
                      keep(tile.getBases(LayoutInput::Register), true),
                      keep(tile.getBases(LayoutInput::Lane), false),
                      keep(tile.getBases(LayoutInput::Warp), false));
}

LinearLayout rowSlice(const LinearLayout &tile) {
  return sliceAlong(tile, /*keepRows=*/true);
}

LinearLayout colSlice(const LinearLayout &tile) {
  return sliceAlong(tile, /*keepRows=*/false);
}

namespace {

/// copyLayout with each thread's runs of `run` elements along a row.
LinearLayout runLayout(int64_t rows, int64_t cols, int64_t run, int64_t lanes,
                       int64_t warps) {
  // The tile's coordinate bits in the order threads and registers take
  // them: a run along a row, the rest of the row, then rows.
  std::vector<TileCoord> bits = colRun(log2Of(run));
  std::vector<TileCoord> rest =
      concat(colRun(log2Of(cols / run), run), rowRun(log2Of(rows)));
  auto take = [&](int64_t count) {
    std::vector<TileCoord> out;
    for (int64_t i = 0; i < count; ++i) {
      if (rest.empty()) {
        out.push_back({}); // Past the tile: a replica.
        continue;
      }
      out.push_back(rest.front());
      rest.erase(rest.begin());
    }
    return out;
  };
  std::vector<TileCoord> laneBases = take(log2Of(lanes));
  std::vector<TileCoord> warpBases = take(log2Of(warps));
  return LinearLayout(rows, cols, concat(bits, rest), laneBases, warpBases);
}

} // namespace

LinearLayout copyLayout(int64_t rows, int64_t cols, int64_t elementBits,
                        int64_t lanes, int64_t warps) {
  // Runs of 16 bytes.
  return runLayout(rows, cols, std::min<int64_t>(128 / elementBits, cols),
                   lanes, warps);
}

LinearLayout lineLayout(int64_t rows, int64_t cols, int64_t lanes,
                        int64_t warps) {
  return runLayout(rows, cols, 1, lanes, warps);
}

} // namespace fmha

namespace fmha {

LinearLayout registerOrder(const LinearLayout &order) {
  const int64_t regBits = log2Of(order.getNumRegisters());
  const int64_t warpBits = log2Of(order.getNumWarps());
  return LinearLayout(order.getNumRegisters() * order.getNumWarps(),
                      order.getNumLanes(), rowRun(regBits),
                      colRun(log2Of(order.getNumLanes())),
                      rowRun(warpBits, order.getNumRegisters()));
}

TileCoord registerOrderOf(const LinearLayout &order, TileCoord c) {
  const int64_t colBits = log2Of(order.getCols());
  const std::vector<Pivot> pivots = eliminate(order);
  uint64_t target = (uint64_t(c.row) << colBits) | uint64_t(c.col);
  uint64_t inputs = 0;
  for (int bit = 63; bit >= 0 && target; --bit)
    if (((target >> bit) & 1) && pivots[bit].element) {
      target ^= pivots[bit].element;
      inputs ^= pivots[bit].inputs;
    }
  const int64_t regBits = log2Of(order.getNumRegisters());
  const int64_t laneBits = log2Of(order.getNumLanes());
  const uint64_t reg = inputs & ((uint64_t(1) << regBits) - 1);
  const uint64_t lane = (inputs >> regBits) & ((uint64_t(1) << laneBits) - 1);
  const uint64_t warp = inputs >> (regBits + laneBits);
  return {int64_t(reg | (warp << regBits)), int64_t(lane)};
}

namespace {

/// `layout` with each basis carried by `map`, as a layout of a rows x cols
/// tile.
template <typename Map>
LinearLayout mapBases(const LinearLayout &layout, int64_t rows, int64_t cols,
                      Map map) {
  std::vector<TileCoord> bases[3];
  for (int i = 0; i < 3; ++i)
    for (TileCoord basis : layout.getBases(kInputs[i]))
      bases[i].push_back(map(basis));
  return LinearLayout(rows, cols, bases[0], bases[1], bases[2]);
}

} // namespace

LinearLayout fromRegisterOrder(const LinearLayout &order,
                               const LinearLayout &packed) {
  const int64_t regs = order.getNumRegisters();
  return mapBases(packed, order.getRows(), order.getCols(), [&](TileCoord b) {
    return order.apply(b.row % regs, b.col, b.row / regs);
  });
}

LinearLayout toRegisterOrder(const LinearLayout &order,
                             const LinearLayout &tile) {
  return mapBases(tile, order.getNumRegisters() * order.getNumWarps(),
                  order.getNumLanes(),
                  [&](TileCoord b) { return registerOrderOf(order, b); });
}

} // namespace fmha
