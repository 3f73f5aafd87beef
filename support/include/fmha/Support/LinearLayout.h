//===- LinearLayout.h - Where each register of each lane lives --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A fragment layout: which (row, col) of a rows x cols tile register r of
// lane l (of warp w) holds. Every layout of a matrix instruction here is
// linear over GF(2) in the bits of (r, l, w), as Triton's LinearLayout
// describes them: each input bit has a basis (row, col), and the coordinate
// of (r, l, w) is the xor of the bases of its set bits. A zero basis
// replicates (RDNA3 WMMA holds each row of A in lanes l and l + 16). Plain
// C++, no MLIR: the targets' instructions are data (MmaInstruction.h), the
// lowering emits index IR from them, and the tests check them against AMD's
// and NVIDIA's published tables.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_SUPPORT_LINEARLAYOUT_H
#define FMHA_SUPPORT_LINEARLAYOUT_H

#include <cstdint>
#include <string>
#include <vector>

namespace fmha {

struct TileCoord {
  int64_t row = 0;
  int64_t col = 0;

  friend bool operator==(TileCoord a, TileCoord b) {
    return a.row == b.row && a.col == b.col;
  }
  friend bool operator!=(TileCoord a, TileCoord b) { return !(a == b); }
  TileCoord operator^(TileCoord o) const { return {row ^ o.row, col ^ o.col}; }
  bool isZero() const { return row == 0 && col == 0; }
};

/// The inputs of a layout, lowest bits first.
enum class LayoutInput { Register, Lane, Warp };

class LinearLayout {
public:
  LinearLayout() = default;
  LinearLayout(int64_t rows, int64_t cols, std::vector<TileCoord> registers,
               std::vector<TileCoord> lanes, std::vector<TileCoord> warps = {})
      : rows(rows), cols(cols), registerBases(std::move(registers)),
        laneBases(std::move(lanes)), warpBases(std::move(warps)) {}

  int64_t getRows() const { return rows; }
  int64_t getCols() const { return cols; }
  const std::vector<TileCoord> &getBases(LayoutInput in) const;
  int64_t getNumRegisters() const { return int64_t(1) << registerBases.size(); }
  int64_t getNumLanes() const { return int64_t(1) << laneBases.size(); }
  int64_t getNumWarps() const { return int64_t(1) << warpBases.size(); }

  /// The element register `reg` of lane `lane` (of warp `warp`) holds.
  TileCoord apply(int64_t reg, int64_t lane, int64_t warp = 0) const;

  /// Empty when the layout is well formed: rows and cols powers of two, each
  /// basis inside the tile, and every element of the tile held by some
  /// (register, lane, warp) (the bases span the tile). Else what is wrong.
  std::string validate() const;

  /// How many (register, lane, warp) hold each element: 2^(number of bases
  /// beyond the tile's rank); 1 for a layout without replication.
  int64_t getCopies() const;
  /// How many lanes hold each element of one register: 2^(zero lane bases).
  int64_t getLaneCopies() const;

  /// The same layout with rows and cols swapped (B of an instruction whose A
  /// it describes, or an operand read transposed).
  LinearLayout transposed() const;

  /// `rows x cols, register [(r, c), ...], lane [...], warp [...]`.
  std::string str() const;

  friend bool operator==(const LinearLayout &a, const LinearLayout &b);

private:
  int64_t rows = 1;
  int64_t cols = 1;
  std::vector<TileCoord> registerBases;
  std::vector<TileCoord> laneBases;
  std::vector<TileCoord> warpBases;
};

/// `count` bases that count along one axis from `first`: first, 2 first,
/// 4 first, ... E.g. rowRun(4) = rows 1, 2, 4, 8; colRun(2, 4) = cols 4, 8.
std::vector<TileCoord> rowRun(int64_t count, int64_t first = 1);
std::vector<TileCoord> colRun(int64_t count, int64_t first = 1);
/// `a` followed by `b`.
std::vector<TileCoord> concat(std::vector<TileCoord> a,
                              const std::vector<TileCoord> &b);

/// The layout of a rows x cols tile held by `warps` warps, each a band of
/// rows / warps consecutive rows, every warp tiling its band with the
/// fragment `instr` (one instruction's A, B or C): a lane's registers are
/// the fragment's, then the fragments along the band's columns, then along
/// its rows (register index = (row block * col blocks + col block) *
/// fragment registers + fragment register, the kernels' accumulator order);
/// warp w holds rows [w rows / warps, (w + 1) rows / warps). The C of
/// mma.sync tiled over 4 warps is wgmma's m64nNk16 accumulator. Sets `error`
/// (and returns the fragment) when the tile does not split that way.
/// How the warps of a workgroup share a tile: each a band of rows (the
/// accumulators, the A operands), or each the whole tile (a B operand every
/// warp multiplies by: zero warp bases). Where the tile has fewer rows than
/// the warps have fragments for (a 64-row dQ part in a loop of 128-key
/// tiles over 8 warps), RowsThenCols gives the rows' bands to the first
/// rows / fragment rows warps and splits the columns among the groups of
/// them (an accumulator each group computes its columns of), and
/// RowsThenReplicated gives every group the whole band (its A operand).
enum class WarpSplit { Rows, Replicated, RowsThenCols, RowsThenReplicated };

LinearLayout tileFragments(const LinearLayout &instr, int64_t rows,
                           int64_t cols, int64_t warps, std::string *error,
                           WarpSplit split = WarpSplit::Rows);

/// The layout of a tile's row vector (rows x 1: a row's max, sum or lse)
/// that lives where the tile's rows do: the register bases that move along
/// columns alone are dropped, the column part of the others is cleared, and
/// lanes or warps that differ only in columns hold the same row (zero
/// bases: replicas). Each register of `tile` then finds its row's value in
/// the same lane and warp.
LinearLayout rowSlice(const LinearLayout &tile);

/// The layout of a tile's column vector (1 x cols: the lse or Dsum of the
/// queries along the columns of a transposed score tile), rowSlice's twin:
/// register bases that move along rows alone dropped, the row part of the
/// others cleared, lanes and warps that differ only in rows replicas. Each
/// register of `tile` finds its column's value in the same lane and warp.
LinearLayout colSlice(const LinearLayout &tile);

/// A layout for copying a rows x cols tile of `elementBits`-bit elements
/// (powers of two) with `lanes` x `warps` threads: each thread holds runs of
/// 16 bytes along a row (the whole row where it is narrower), consecutive
/// lanes the next runs along the row and then down the rows, the warps the
/// rows after those, and each thread's further registers the rest of the
/// tile below (whole-workgroup rows at a time). Threads beyond the tile hold
/// replicas (zero bases). Every element is held, so the layout of a tile
/// copied between memories in 16-byte pieces.
LinearLayout copyLayout(int64_t rows, int64_t cols, int64_t elementBits,
                        int64_t lanes, int64_t warps);

/// copyLayout with runs of one element: consecutive lanes hold consecutive
/// elements of a row, so that one access of a register by all the lanes of
/// a warp (an atomic add) touches consecutive addresses of a row-major
/// tile.
LinearLayout lineLayout(int64_t rows, int64_t cols, int64_t lanes,
                        int64_t warps);

/// The register order of `order` (a layout without replicas): the tile of
/// (registers x warps) rows and lanes columns whose element (w R + r, l) is
/// the element of order's tile that register r of lane l of warp w holds
/// (R registers a lane), and which that same register holds: each register
/// of a warp is one row along consecutive lanes. A buffer in this order
/// takes a tile held in `order` with one coalesced access a register (the
/// backward's dQ accumulator).
LinearLayout registerOrder(const LinearLayout &order);

/// Where element `c` of order's tile lies in registerOrder(order)'s tile.
TileCoord registerOrderOf(const LinearLayout &order, TileCoord c);

/// A layout `packed` of registerOrder(order)'s tile as the layout of
/// order's tile that holds the same elements in the same registers: each
/// basis (w R + r, l) becomes order's element of (r, l, w).
/// fromRegisterOrder(order, registerOrder(order)) is `order`.
LinearLayout fromRegisterOrder(const LinearLayout &order,
                               const LinearLayout &packed);

/// fromRegisterOrder's inverse: a layout `tile` of order's tile as a layout
/// of registerOrder(order)'s tile.
LinearLayout toRegisterOrder(const LinearLayout &order,
                             const LinearLayout &tile);

} // namespace fmha

#endif // FMHA_SUPPORT_LINEARLAYOUT_H
