//===- MaskSpecFuzzer.cpp - Fuzz the mask spec parser and tile bounds -----===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: a spec string. Whatever it is, MaskSpec::parse returns a mask or a
// message. For a mask that parses:
//   - it validates, str() parses back to the same mask and is canonical;
//   - on every problem up to 9 x 9, simplified(Sq, Sk) has the same visible
//     set, validates, and is a fixed point of simplified;
//   - on the same problems and a few tile shapes, the tiles the flash loop
//     visits (kvTileBounds, classifyTile) cover every visible key, a tile
//     classified Full has every (i, j) visible (the kernel skips its element
//     mask), and a skipped tile has none;
//   - the bound arithmetic on large problems runs without overflow (UBSan).
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "fmha/Support/MaskSpec.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

using fmha::KvTileBounds;
using fmha::MaskSpec;
using fmha::TileVisit;

namespace {

std::string describe(const MaskSpec &m, int64_t sq, int64_t sk) {
  return "mask '" + m.str() + "' Sq=" + std::to_string(sq) +
         " Sk=" + std::to_string(sk);
}

void checkTiles(const MaskSpec &m, int64_t sq, int64_t sk, int64_t bm,
                int64_t bn) {
  int64_t numQ = (sq + bm - 1) / bm, numKv = (sk + bn - 1) / bn;
  auto where = [&] {
    return describe(m, sq, sk) + " block " + std::to_string(bm) + "x" +
           std::to_string(bn);
  };
  for (int64_t qt = 0; qt < numQ; ++qt) {
    KvTileBounds b = fmha::kvTileBounds(m, qt * bm, bm, bn, sq, sk);
    FUZZ_CHECK(0 <= b.sinkEnd && b.sinkEnd <= b.begin && b.begin <= numKv &&
                   b.end <= numKv,
               where() + ": tile bounds out of order for q tile " +
                   std::to_string(qt));
    for (int64_t kt = 0; kt < numKv; ++kt) {
      TileVisit v = fmha::classifyTile(m, qt, kt, bm, bn, sq, sk);
      bool any = false, all = true;
      for (int64_t i = qt * bm; i < std::min(sq, (qt + 1) * bm); ++i)
        for (int64_t j = kt * bn; j < std::min(sk, (kt + 1) * bn); ++j) {
          bool vis = m.visible(i, j, sq, sk);
          any |= vis;
          all &= vis;
        }
      auto tile = [&] {
        return where() + " q tile " + std::to_string(qt) + " kv tile " +
               std::to_string(kt);
      };
      FUZZ_CHECK(v != TileVisit::Skipped || !any,
                 tile() + ": skipped but has visible keys");
      FUZZ_CHECK(v != TileVisit::Full || all,
                 tile() + ": classified Full but has hidden keys");
      FUZZ_CHECK(v == TileVisit::Skipped || any,
                 tile() + ": visited but every key is hidden");
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view spec(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<MaskSpec> m = MaskSpec::parse(spec, &error);
  if (!m) {
    FUZZ_CHECK(!error.empty(), "parse failed without a message");
    return 0;
  }
  FUZZ_CHECK(m->validate().empty(),
             "parsed mask does not validate: " + m->validate());
  std::string canonical = m->str();
  std::optional<MaskSpec> again = MaskSpec::parse(canonical, &error);
  FUZZ_CHECK(again.has_value(), "str() '" + canonical + "' does not parse");
  FUZZ_CHECK(*again == *m, "str() '" + canonical + "' parses to another mask");
  FUZZ_CHECK(again->str() == canonical, "str() is not canonical");

  for (int64_t sq = 1; sq <= 9; ++sq)
    for (int64_t sk = 1; sk <= 9; ++sk) {
      MaskSpec s = m->simplified(sq, sk);
      FUZZ_CHECK(s.validate().empty(), describe(*m, sq, sk) +
                                           ": simplified mask '" + s.str() +
                                           "' does not validate");
      FUZZ_CHECK(s.simplified(sq, sk) == s,
                 describe(*m, sq, sk) + ": simplified is not a fixed point");
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j)
          FUZZ_CHECK(s.visible(i, j, sq, sk) == m->visible(i, j, sq, sk),
                     describe(*m, sq, sk) + ": simplified '" + s.str() +
                         "' changes visibility of (" + std::to_string(i) +
                         ", " + std::to_string(j) + ")");
      for (auto [bm, bn] : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {4, 2}})
        checkTiles(*m, sq, sk, bm, bn);
    }

  // Large problems: the arithmetic must not overflow (UBSan) and the bounds
  // stay in range.
  const int64_t big = int64_t(1) << 31;
  for (auto [sq, sk] : {std::pair<int64_t, int64_t>{big, big},
                        {1, big},
                        {big, 1},
                        {big - 1, 3}}) {
    int64_t numKv = (sk + 63) / 64;
    for (int64_t r0 : {int64_t(0), (sq - 1) / 64 * 64, sq / 2 / 64 * 64}) {
      KvTileBounds b = fmha::kvTileBounds(*m, r0, 64, 64, sq, sk);
      FUZZ_CHECK(0 <= b.sinkEnd && b.sinkEnd <= b.begin && b.begin <= numKv &&
                     b.end <= numKv,
                 describe(*m, sq, sk) + ": tile bounds out of range");
      (void)fmha::kvTileIsFull(*m, r0, 64, b.begin * 64, 64, sq, sk);
      (void)m->visible(r0, sk - 1, sq, sk);
      (void)m->simplified(sq, sk);
    }
  }
  return 0;
}
