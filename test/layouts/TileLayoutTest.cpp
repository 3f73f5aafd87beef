//===- TileLayoutTest.cpp - Register tiles and their layout attribute -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha::tileFragments (an instruction's fragment tiled over a warp's band of
// rows and over the warps) against the vendors' documents, element by
// element: the PTX ISA's mma.m16n8k16 C and A fragments repeated the way the
// kernels number their accumulators, wgmma's m64nNk16 accumulator (the PTX
// ISA's "wgmma D fragment"), and AMD's calculator tables repeated over a
// workgroup's tile; and #fmha.layout, the attribute that types register
// tiles with these layouts: built from each instruction's fragments, printed,
// parsed back to the same layout, and malformed ones refused with what is
// wrong.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/FmhaAttrs.h"
#include "fmha/Dialect/FmhaDialect.h"
#include "fmha/Support/MmaInstruction.h"

#include "LayoutTable.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <map>
#include <set>
#include <string>

using fmha::LinearLayout;
using fmha::MmaInstruction;
using fmha::TileCoord;
using fmha::tileFragments;

namespace {

/// Every (register, lane, warp) of `layout` holds `expected(reg, lane, warp)`.
template <typename Fn>
void expectHolds(const LinearLayout &layout, Fn expected) {
  for (int64_t w = 0; w < layout.getNumWarps(); ++w)
    for (int64_t l = 0; l < layout.getNumLanes(); ++l)
      for (int64_t r = 0; r < layout.getNumRegisters(); ++r)
        ASSERT_EQ(layout.apply(r, l, w), expected(r, l, w))
            << "register " << r << " lane " << l << " warp " << w;
}

TEST(TileFragments, MmaSyncAccumulatorsAsTheKernelsNumberThem) {
  // A warp's band of rows in 16-row blocks rb, its columns in 8-column
  // blocks jv; accumulator (rb, jv, e) is register (rb * blocks + jv) * 4 + e.
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  for (auto [rows, cols, warps] :
       {std::tuple{64, 64, 4}, {128, 64, 4}, {64, 128, 2}, {16, 8, 1}}) {
    std::string error;
    LinearLayout layout = tileFragments(mma.c, rows, cols, warps, &error);
    ASSERT_EQ(error, "");
    ASSERT_EQ(layout.validate(), "");
    EXPECT_EQ(layout.getCopies(), 1);
    const int64_t band = rows / warps, blocks = cols / 8;
    EXPECT_EQ(layout.getNumRegisters(), 4 * blocks * (band / 16));
    expectHolds(layout, [&](int64_t r, int64_t l, int64_t w) {
      int64_t e = r % 4, jv = (r / 4) % blocks, rb = r / 4 / blocks;
      TileCoord c = layout_table::ptxC(l, e);
      return TileCoord{w * band + rb * 16 + c.row, jv * 8 + c.col};
    });
  }
}

TEST(TileFragments, MmaSyncQFragments) {
  // Q of a 64-row tile with head dim 128 over 4 warps: the A fragments of
  // 16-column steps kk, register kk * 8 + e.
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  std::string error;
  LinearLayout layout = tileFragments(mma.a, 64, 128, 4, &error);
  ASSERT_EQ(error, "");
  expectHolds(layout, [&](int64_t r, int64_t l, int64_t w) {
    TileCoord a = layout_table::ptxA(l, r % 8);
    return TileCoord{w * 16 + a.row, (r / 8) * 16 + a.col};
  });
}

TEST(TileFragments, WgmmaAccumulatorIsPtxs) {
  // PTX ISA, "Register fragments" of wgmma .m64nNk16 D (f32): warp w of the
  // warpgroup holds rows 16 w + g and 16 w + g + 8, d_i at row
  // 16 w + g + 8 ((i / 2) % 2), column 8 (i / 4) + 2 t + i % 2.
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  for (int64_t n : {8, 64, 128, 256}) {
    std::string error;
    LinearLayout layout = tileFragments(mma.c, 64, n, 4, &error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(layout.getNumRegisters(), n / 2);
    expectHolds(layout, [&](int64_t i, int64_t l, int64_t w) {
      int64_t g = l / 4, t = l % 4;
      return TileCoord{16 * w + g + 8 * ((i / 2) % 2),
                       8 * (i / 4) + 2 * t + i % 2};
    });
  }
}

struct AmdTile {
  const char *table;
  MmaInstruction (*make)();
};

class AmdTileFragments : public ::testing::TestWithParam<AmdTile> {};

TEST_P(AmdTileFragments, RepeatTheCalculatorsTable) {
  // A 64 x 64 accumulator tile over 4 wavefronts (a 16-row band each on the
  // 16 x 16 instructions, two bands' worth of rows on 32 x 32 over 2): every
  // register holds the calculator's D element of its fragment, offset by its
  // block and its wavefront's band.
  MmaInstruction mma = GetParam().make();
  const int64_t warps = mma.m == 32 ? 2 : 4;
  std::string error;
  LinearLayout layout = tileFragments(mma.c, 64, 64, warps, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(layout.validate(), "");
  const int64_t band = 64 / warps, blocks = 64 / mma.n;
  const int64_t fragRegs = mma.c.getNumRegisters();
  int64_t entries = 0;
  for (const layout_table::Entry &entry :
       layout_table::readTable(GetParam().table)) {
    if (entry.matrix != 'D')
      continue;
    ++entries;
    for (int64_t w = 0; w < warps; ++w)
      for (int64_t rb = 0; rb < band / mma.m; ++rb)
        for (int64_t jb = 0; jb < blocks; ++jb) {
          int64_t reg = (rb * blocks + jb) * fragRegs + entry.element;
          ASSERT_EQ(layout.apply(reg, entry.lane, w),
                    (TileCoord{w * band + rb * mma.m + entry.row,
                               jb * mma.n + entry.col}))
              << "lane " << entry.lane << " element " << entry.element;
        }
  }
  EXPECT_EQ(entries, mma.warpSize * fragRegs);
}

INSTANTIATE_TEST_SUITE_P(
    Amd, AmdTileFragments,
    ::testing::Values(AmdTile{"cdna3-v_mfma_f32_16x16x16_f16.csv",
                              MmaInstruction::amdMfma16x16x16},
                      AmdTile{"cdna3-v_mfma_f32_32x32x8_f16.csv",
                              MmaInstruction::amdMfma32x32x8},
                      AmdTile{"rdna3-v_wmma_f32_16x16x16_f16.csv",
                              MmaInstruction::amdWmmaRdna3},
                      AmdTile{"rdna4-v_wmma_f32_16x16x16_f16.csv",
                              MmaInstruction::amdWmmaRdna4}));

TEST(TileFragments, MmaSyncBOperandsEveryWarpHolds) {
  // V of O += P V (keys x Dv) as B fragments k16 x n8: every warp holds the
  // whole tile, register (kb * nblocks + nb) * 4 + e the PTX ISA's b_e of the
  // fragment at keys 16 kb, columns 8 nb. K of S = Q K^T is the transposed B
  // (keys x head dim): element (key, d) where B has (d, key).
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  std::string error;
  LinearLayout v =
      tileFragments(mma.b, 64, 32, 4, &error, fmha::WarpSplit::Replicated);
  ASSERT_EQ(error, "");
  ASSERT_EQ(v.validate(), "");
  EXPECT_EQ(v.getCopies(), 4);
  expectHolds(v, [&](int64_t r, int64_t l, int64_t) {
    int64_t e = r % 4, nb = (r / 4) % 4, kb = r / 16;
    TileCoord b = layout_table::ptxB(l, e);
    return TileCoord{16 * kb + b.row, 8 * nb + b.col};
  });
  LinearLayout k =
      tileFragments(mma.b, 128, 64, 4, &error, fmha::WarpSplit::Replicated)
          .transposed();
  ASSERT_EQ(error, "");
  EXPECT_EQ(k.getRows(), 64);
  EXPECT_EQ(k.getCols(), 128);
  expectHolds(k, [&](int64_t r, int64_t l, int64_t) {
    int64_t e = r % 4, nb = (r / 4) % 8, kb = r / 32;
    TileCoord b = layout_table::ptxB(l, e);
    return TileCoord{8 * nb + b.col, 16 * kb + b.row};
  });
  tileFragments(mma.b, 8, 32, 4, &error, fmha::WarpSplit::Replicated);
  EXPECT_EQ(error, "tile 8x32 (every warp's) is not a whole number of 16x8 "
                   "fragments");
}

/// For every instruction's accumulator tiling, register r of lane l of warp
/// w of the slice along rows (or columns) holds the row (column) that
/// register r' of the tile holds, for each r' whose other bits are dropped:
/// a row's max or sum, or a column's lse in a transposed score tile, sits in
/// the lane (and warp) of its elements.
static void expectSliceHoldsEachRegistersLine(bool alongRows) {
  for (auto [mma, warps] :
       {std::pair{MmaInstruction::nvidiaMmaSyncM16N8K16(), 4},
        std::pair{MmaInstruction::amdMfma16x16x16(), 4},
        std::pair{MmaInstruction::amdMfma32x32x8(), 2},
        std::pair{MmaInstruction::amdWmmaRdna3(), 2},
        std::pair{MmaInstruction::amdWmmaRdna4(), 4}}) {
    std::string error;
    LinearLayout tile = tileFragments(mma.c, 64, 32, warps, &error);
    ASSERT_EQ(error, "") << mma.name;
    LinearLayout slice =
        alongRows ? fmha::rowSlice(tile) : fmha::colSlice(tile);
    ASSERT_EQ(slice.validate(), "") << mma.name;
    EXPECT_EQ(alongRows ? slice.getCols() : slice.getRows(), 1);
    EXPECT_EQ(alongRows ? slice.getRows() : slice.getCols(),
              alongRows ? 64 : 32);
    auto line = [&](TileCoord c) { return alongRows ? c.row : c.col; };
    const auto &bases = tile.getBases(fmha::LayoutInput::Register);
    for (int64_t w = 0; w < tile.getNumWarps(); ++w)
      for (int64_t l = 0; l < tile.getNumLanes(); ++l) {
        // The slice's registers hold the lines the lane's tile registers
        // do, each once.
        std::set<int64_t> tileLines, sliceLines;
        for (int64_t r = 0; r < tile.getNumRegisters(); ++r)
          tileLines.insert(line(tile.apply(r, l, w)));
        for (int64_t r = 0; r < slice.getNumRegisters(); ++r)
          sliceLines.insert(line(slice.apply(r, l, w)));
        EXPECT_EQ(tileLines, sliceLines) << mma.name;
        EXPECT_EQ(int64_t(sliceLines.size()), slice.getNumRegisters());
        for (int64_t r = 0; r < tile.getNumRegisters(); ++r) {
          // Register r's bits on the bases with a part along the line.
          int64_t sliceReg = 0, bit = 0;
          for (size_t i = 0; i < bases.size(); ++i)
            if (line(bases[i]) != 0)
              sliceReg |= ((r >> i) & 1) << bit++;
          ASSERT_EQ(line(slice.apply(sliceReg, l, w)),
                    line(tile.apply(r, l, w)))
              << mma.name << " register " << r << " lane " << l << " warp "
              << w;
        }
      }
  }
}

TEST(TileFragments, RowSliceHoldsEachRegistersRow) {
  expectSliceHoldsEachRegistersLine(/*alongRows=*/true);
}

TEST(TileFragments, ColSliceHoldsEachRegistersColumn) {
  // Every warp holds every column (warps split rows): the slice's warp
  // bases are replicas.
  expectSliceHoldsEachRegistersLine(/*alongRows=*/false);
}

TEST(TileFragments, TilesThatDoNotSplit) {
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  std::string error;
  tileFragments(mma.c, 48, 64, 4, &error);
  EXPECT_EQ(error, "tile 48x64 over 4 warps: sizes must be powers of two");
  tileFragments(mma.c, 64, 64, 8, &error);
  EXPECT_EQ(error, "tile 64x64 over 8 warps: each warp's 8x64 band is not a "
                   "whole number of 16x8 fragments");
}

TEST(TileFragments, WarpgroupsSplitTheColumnsWhereRowsRunOut) {
  // The dQ part of 128-key dK/dV tiles: 64 queries x 128 over 8 warps.
  // RowsThenCols: warps 0-3 the wgmma accumulator of columns [0, 64),
  // warps 4-7 the same of columns [64, 128), each element once;
  // RowsThenReplicated (its A, 64 x 128 keys): each group all of the rows
  // of its four warps' fragments, as the four-warp tiling has them.
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  std::string error;
  LinearLayout c =
      tileFragments(mma.c, 64, 128, 8, &error, fmha::WarpSplit::RowsThenCols);
  ASSERT_EQ(error, "");
  ASSERT_EQ(c.validate(), "");
  EXPECT_EQ(c.getCopies(), 1);
  EXPECT_EQ(c.getNumRegisters(), 32);
  expectHolds(c, [&](int64_t i, int64_t l, int64_t w) {
    int64_t g = l / 4, t = l % 4;
    return TileCoord{16 * (w % 4) + g + 8 * ((i / 2) % 2),
                     64 * (w / 4) + 8 * (i / 4) + 2 * t + i % 2};
  });
  LinearLayout four = tileFragments(mma.a, 64, 128, 4, &error);
  ASSERT_EQ(error, "");
  LinearLayout a = tileFragments(mma.a, 64, 128, 8, &error,
                                 fmha::WarpSplit::RowsThenReplicated);
  ASSERT_EQ(error, "");
  EXPECT_EQ(a.getCopies(), 2);
  expectHolds(a, [&](int64_t r, int64_t l, int64_t w) {
    return four.apply(r, l, w % 4);
  });
  // Where the rows suffice, the same as Rows; a band of columns narrower
  // than a fragment does not split.
  EXPECT_EQ(
      tileFragments(mma.c, 128, 64, 8, &error, fmha::WarpSplit::RowsThenCols),
      tileFragments(mma.c, 128, 64, 8, &error));
  tileFragments(mma.c, 16, 16, 8, &error, fmha::WarpSplit::RowsThenCols);
  EXPECT_EQ(error, "tile 16x16 over 8 warps: each warp's 16x2 band is not a "
                   "whole number of 16x8 fragments");
}

class LayoutAttribute : public ::testing::Test {
protected:
  LayoutAttribute() { context.loadDialect<mlir::fmha::FmhaDialect>(); }
  mlir::MLIRContext context;
};

TEST_F(LayoutAttribute, HoldsEveryInstructionsFragments) {
  for (MmaInstruction mma :
       {MmaInstruction::nvidiaMmaSyncM16N8K16(),
        MmaInstruction::amdMfma16x16x16(), MmaInstruction::amdMfma32x32x8(),
        MmaInstruction::amdWmmaRdna3(), MmaInstruction::amdWmmaRdna4()}) {
    std::string error;
    for (const LinearLayout &layout :
         {mma.a, mma.b, mma.c, tileFragments(mma.c, 64, 64, 2, &error)}) {
      ASSERT_EQ(error, "") << mma.name;
      auto attr = mlir::fmha::LayoutAttr::get(&context, layout);
      EXPECT_EQ(attr.getLayout(), layout) << mma.name;
      // Printed and parsed back: the same attribute.
      std::string text;
      llvm::raw_string_ostream os(text);
      mlir::Attribute(attr).print(os);
      mlir::Attribute parsed = mlir::parseAttribute(text, &context);
      EXPECT_EQ(parsed, attr) << text;
    }
  }
}

TEST_F(LayoutAttribute, PrintsTheBases) {
  auto attr = mlir::fmha::LayoutAttr::get(
      &context, MmaInstruction::nvidiaMmaSyncM16N8K16().c);
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::Attribute(attr).print(os);
  EXPECT_EQ(text, "#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = "
                  "[[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>");
}

TEST_F(LayoutAttribute, RefusesMalformedLayouts) {
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  EXPECT_FALSE(mlir::parseAttribute(
      "#fmha.layout<16x8, register = [[0, 1]], lane = [[16, 0]], warp = []>",
      &context));
  EXPECT_EQ(message, "invalid layout: the basis (16, 0) of lane bit 0 lies "
                     "outside the 16 x 8 tile");
  EXPECT_FALSE(mlir::parseAttribute(
      "#fmha.layout<4x4, register = [[0, 1], [0, 2]], lane = [[1, 0]], "
      "warp = []>",
      &context));
  EXPECT_EQ(message,
            "invalid layout: the bases do not reach every element of the 4 x "
            "4 tile");
  EXPECT_FALSE(mlir::parseAttribute(
      "#fmha.layout<6x4, register = [], lane = [], warp = []>", &context));
  EXPECT_EQ(message, "invalid layout: the tile (6 x 4) must have power-of-two "
                     "sides of at most 2^30 elements");
}

} // namespace

/// The copy layout, checked element by element against what it promises:
/// every element once (or, for a tile smaller than the threads' runs, each
/// thread past the tile a replica of one before it), each thread's
/// registers in 16-byte runs along a row, lane l + 1's run the one after
/// lane l's, warps below.
TEST(CopyLayout, SixteenByteRunsEveryElementOnce) {
  struct Case {
    int64_t rows, cols, bits, lanes, warps;
  };
  for (Case c : {Case{64, 128, 16, 32, 4}, Case{64, 64, 16, 32, 4},
                 Case{16, 32, 16, 32, 1}, Case{32, 32, 32, 32, 2},
                 Case{64, 128, 16, 64, 4}, Case{8, 16, 16, 32, 4}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " b" +
                 std::to_string(c.bits) + " l" + std::to_string(c.lanes) +
                 " w" + std::to_string(c.warps));
    LinearLayout l = fmha::copyLayout(c.rows, c.cols, c.bits, c.lanes, c.warps);
    EXPECT_EQ(l.validate(), "");
    const int64_t run = std::min<int64_t>(128 / c.bits, c.cols);
    const int64_t threads = c.lanes * c.warps;
    std::map<std::pair<int64_t, int64_t>, int> held;
    for (int64_t w = 0; w < c.warps; ++w)
      for (int64_t ln = 0; ln < c.lanes; ++ln)
        for (int64_t r = 0; r < l.getNumRegisters(); ++r) {
          TileCoord at = l.apply(r, ln, w);
          ++held[{at.row, at.col}];
          // Registers in runs of 16 bytes along a row.
          TileCoord first = l.apply(r - r % run, ln, w);
          EXPECT_EQ(at.row, first.row);
          EXPECT_EQ(at.col, first.col + r % run);
          EXPECT_EQ(first.col % run, 0);
        }
    EXPECT_EQ(int64_t(held.size()), c.rows * c.cols);
    const int64_t copies =
        std::max<int64_t>(1, threads * run / (c.rows * c.cols));
    for (auto [at, n] : held)
      EXPECT_EQ(n, copies);
    // Lane 1 holds the run after lane 0's (along the row, or the next row).
    if (c.rows * c.cols >= 2 * run) {
      TileCoord a = l.apply(0, 0, 0), b = l.apply(0, 1, 0);
      EXPECT_EQ(b.row * c.cols + b.col, a.row * c.cols + a.col + run);
    }
  }
}

// lineLayout: every element held once (tiles of at least one element a
// thread), and for each register the lanes of a warp hold consecutive
// elements of one row-major tile: a warp's access of a register is one run
// of addresses.
TEST(LineLayout, LanesOnConsecutiveElements) {
  struct Case {
    int64_t rows, cols, lanes, warps;
  };
  for (Case c : {Case{64, 64, 32, 4}, Case{64, 128, 32, 4}, Case{64, 64, 64, 4},
                 Case{128, 32, 32, 8}, Case{16, 16, 32, 1}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " l" +
                 std::to_string(c.lanes) + " w" + std::to_string(c.warps));
    LinearLayout l = fmha::lineLayout(c.rows, c.cols, c.lanes, c.warps);
    EXPECT_EQ(l.validate(), "");
    std::map<std::pair<int64_t, int64_t>, int> held;
    for (int64_t w = 0; w < c.warps; ++w)
      for (int64_t r = 0; r < l.getNumRegisters(); ++r) {
        TileCoord first = l.apply(r, 0, w);
        for (int64_t ln = 0; ln < c.lanes; ++ln) {
          TileCoord at = l.apply(r, ln, w);
          ++held[{at.row, at.col}];
          EXPECT_EQ(at.row * c.cols + at.col,
                    first.row * c.cols + first.col + ln);
        }
      }
    EXPECT_EQ(int64_t(held.size()), c.rows * c.cols);
    for (auto [at, n] : held)
      EXPECT_EQ(n, 1);
  }
}

// registerOrder and its maps, element by element on the accumulators the
// backward adds into its dQ buffer (wgmma's m64nNk16 C over a warpgroup, the
// C of MFMA 16 and of mma.sync over 4 and 8 warps) and on an A fragment:
// element (w R + r, l) of the register-order tile is what register r of lane
// l of warp w holds, registerOrderOf finds it there, and a reader's layout
// of the register-order tile carried back (fromRegisterOrder) holds each
// element in the register that reads it.
TEST(RegisterOrder, RowsOfRegistersAcrossLanes) {
  std::string error;
  const MmaInstruction sync = MmaInstruction::nvidiaMmaSyncM16N8K16();
  const MmaInstruction mfma = MmaInstruction::amdMfma16x16x16();
  struct Case {
    const char *name;
    LinearLayout layout;
  };
  const Case cases[] = {
      {"wgmma C 64x64", tileFragments(sync.c, 64, 64, 4, &error)},
      {"wgmma C 64x128", tileFragments(sync.c, 64, 128, 4, &error)},
      {"mma.sync C 128x64 w8", tileFragments(sync.c, 128, 64, 8, &error)},
      {"mma.sync A 64x64", tileFragments(sync.a, 64, 64, 4, &error)},
      {"mfma16 C 64x64", tileFragments(mfma.c, 64, 64, 4, &error)},
      {"line 64x64", fmha::lineLayout(64, 64, 32, 4)}};
  ASSERT_EQ(error, "");
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    const LinearLayout &l = c.layout;
    ASSERT_EQ(l.getCopies(), 1);
    LinearLayout packed = fmha::registerOrder(l);
    EXPECT_EQ(packed.validate(), "");
    EXPECT_EQ(packed.getRows(), l.getNumRegisters() * l.getNumWarps());
    EXPECT_EQ(packed.getCols(), l.getNumLanes());
    EXPECT_EQ(fmha::fromRegisterOrder(l, packed), l);
    EXPECT_EQ(fmha::toRegisterOrder(l, l), packed);
    for (int64_t w = 0; w < l.getNumWarps(); ++w)
      for (int64_t r = 0; r < l.getNumRegisters(); ++r)
        for (int64_t ln = 0; ln < l.getNumLanes(); ++ln) {
          const TileCoord at = l.apply(r, ln, w);
          const TileCoord where{w * l.getNumRegisters() + r, ln};
          ASSERT_EQ(packed.apply(r, ln, w), where);
          ASSERT_EQ(fmha::registerOrderOf(l, at), where);
        }
    // A reader of the register-order tile with other threads (a copy
    // layout of 8 warps): each of its registers holds, in order's tile, the
    // element fromRegisterOrder says.
    LinearLayout reader =
        fmha::copyLayout(packed.getRows(), packed.getCols(), 32, 32, 8);
    LinearLayout carried = fmha::fromRegisterOrder(l, reader);
    EXPECT_EQ(carried.validate(), "");
    EXPECT_EQ(fmha::toRegisterOrder(l, carried), reader);
    for (int64_t w = 0; w < 8; ++w)
      for (int64_t r = 0; r < reader.getNumRegisters(); ++r)
        for (int64_t ln = 0; ln < 32; ++ln) {
          const TileCoord p = reader.apply(r, ln, w);
          const TileCoord expected = l.apply(p.row % l.getNumRegisters(), p.col,
                                             p.row / l.getNumRegisters());
          ASSERT_EQ(carried.apply(r, ln, w), expected);
        }
  }
}
