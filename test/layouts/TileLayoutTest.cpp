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

TEST(TileFragments, TilesThatDoNotSplit) {
  MmaInstruction mma = MmaInstruction::nvidiaMmaSyncM16N8K16();
  std::string error;
  tileFragments(mma.c, 48, 64, 4, &error);
  EXPECT_EQ(error, "tile 48x64 over 4 warps: sizes must be powers of two");
  tileFragments(mma.c, 64, 64, 8, &error);
  EXPECT_EQ(error, "tile 64x64 over 8 warps: each warp's 8x64 band is not a "
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
