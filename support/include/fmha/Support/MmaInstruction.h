//===- MmaInstruction.h - Matrix instructions as data -----------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A warp-level matrix instruction D[M x N] = A[M x K] * B[K x N] + C described
// by its shape and the fragment layouts of A (M x K), B (K x N, row = k) and
// C/D (M x N). What the kernels need to know about a fragment (which
// elements pair up for one load or store, which row slot an accumulator
// element is in, which lanes share a row, whether a C fragment can feed the
// next product as A) is derived from the layouts here, not restated per
// target. The layouts are the vendors' published ones:
//
// - NVIDIA mma.sync.aligned.m16n8k16 (PTX ISA, "Matrix Fragments for
//   mma.m16n8k16"), g = lane / 4, t = lane % 4:
//   A a_e (e < 8): row g + 8 ((e / 2) % 2), col 2t + e % 2 + 8 (e / 4);
//   B b_e (e < 4): row 2t + e % 2 + 8 (e / 2), col g;
//   C c_e (e < 4): row g + 8 (e / 2), col 2t + e % 2.
// - AMD (the Matrix Instruction Calculator's tables, test/layouts), l the
//   lane, e the element:
//   MFMA 16x16x16 (wave64): A[l%16][4(l/16) + e], B its transpose,
//     C[4(l/16) + e][l%16], e < 4;
//   MFMA 32x32x8 (wave64): A[l%32][4(l/32) + e], B its transpose, e < 4;
//     C[8(e/4) + 4(l/32) + e%4][l%32], e < 16;
//   WMMA 16x16x16 RDNA3 (wave32): A[l%16][e] (lanes l and l + 16 alike),
//     B its transpose, e < 16; C[2e + l/16][l%16], e < 8;
//   WMMA 16x16x16 RDNA4 (wave32): A[l%16][8(e/4) + 4(l/16) + e%4], B its
//     transpose, e < 8; C[8(l/16) + e][l%16].
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_SUPPORT_MMAINSTRUCTION_H
#define FMHA_SUPPORT_MMAINSTRUCTION_H

#include "fmha/Support/LinearLayout.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fmha {

struct MmaInstruction {
  /// The vendor's name, e.g. `mma.sync.m16n8k16`, `v_mfma_f32_16x16x16`.
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  /// Lanes of the warp (wavefront) that runs it.
  int64_t warpSize = 0;
  LinearLayout a, b, c;

  static MmaInstruction nvidiaMmaSyncM16N8K16();
  static MmaInstruction amdMfma16x16x16();
  static MmaInstruction amdMfma32x32x8();
  static MmaInstruction amdWmmaRdna3();
  static MmaInstruction amdWmmaRdna4();

  /// Empty when the layouts have the instruction's shapes and lanes and are
  /// well formed; else what is wrong.
  std::string validate() const;

  /// Lanes holding each element of A (and B): 1, or 2 on RDNA3 WMMA.
  int64_t getABLaneCopies() const { return a.getLaneCopies(); }
  /// Elements (e, e + 1), e even, of A are adjacent columns of a row and of
  /// B adjacent rows of a column: one 32-bit load each.
  bool pairsAreAdjacent() const;
  /// Elements (e, e + 1), e even, of C are adjacent columns of a row.
  bool cPairsAreAdjacent() const;
  /// The distinct rows a lane's C elements cover ("row slots"), and the slot
  /// of element e.
  int64_t getNumCRowSlots() const;
  int64_t getCRowSlot(int64_t e) const;
  /// The xor masks of the lanes that share each C row (for row reductions).
  std::vector<int64_t> getRowReduceXorMasks() const;
  /// Element e of an A fragment (K columns) as element `second` of C tile
  /// `first` of the K / N tiles side by side in the same lane, on every lane;
  /// nullopt when no C element of the lane holds it.
  std::optional<std::pair<int64_t, int64_t>> getAFromC(int64_t e) const;
};

} // namespace fmha

#endif // FMHA_SUPPORT_MMAINSTRUCTION_H
