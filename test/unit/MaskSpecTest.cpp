//===- MaskSpecTest.cpp - Mask spec parsing, tile bounds, simplified ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/MaskSpec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using fmha::classifyTile;
using fmha::KvTileBounds;
using fmha::kvTileBounds;
using fmha::MaskKind;
using fmha::MaskSpec;
using fmha::TileVisit;

namespace {

MaskSpec parseOk(const char *spec) {
  std::string err;
  std::optional<MaskSpec> m = MaskSpec::parse(spec, &err);
  EXPECT_TRUE(m.has_value()) << spec << ": " << err;
  return m.value_or(MaskSpec{});
}

std::string parseError(const char *spec) {
  std::string err;
  std::optional<MaskSpec> m = MaskSpec::parse(spec, &err);
  EXPECT_FALSE(m.has_value()) << spec;
  return err;
}

struct Form {
  const char *spec;
  MaskKind kind;
  int64_t left, right, sink;
  const char *canonical;
};

TEST(MaskSpecParse, EveryForm) {
  const Form forms[] = {
      {"0", MaskKind::None, -1, -1, 0, "0"},
      {"none", MaskKind::None, -1, -1, 0, "0"},
      {"t", MaskKind::TopLeft, -1, 0, 0, "t"},
      {"b", MaskKind::BottomRight, -1, 0, 0, "b"},
      {"t:-1,0", MaskKind::TopLeft, -1, 0, 0, "t"},
      {"b:-1,0", MaskKind::BottomRight, -1, 0, 0, "b"},
      {"t:3,2", MaskKind::TopLeft, 3, 2, 0, "t:3,2"},
      {"b:0,0", MaskKind::BottomRight, 0, 0, 0, "b:0,0"},
      {"t:-7,-3", MaskKind::TopLeft, -1, -1, 0, "t:-1,-1"},
      {"b:5,-1", MaskKind::BottomRight, 5, -1, 0, "b:5,-1"},
      {"t:2,0,4", MaskKind::TopLeft, 2, 0, 4, "t:2,0,4"},
      {"b:-1,0,4", MaskKind::BottomRight, -1, 0, 4, "b:-1,0,4"},
      {"t:1,1,0", MaskKind::TopLeft, 1, 1, 0, "t:1,1"},
      {"xt:5", MaskKind::TopLeft, 2, 2, 0, "t:2,2"},
      {"xt:4", MaskKind::TopLeft, 2, 1, 0, "t:2,1"},
      {"xb:1", MaskKind::BottomRight, 0, 0, 0, "b:0,0"},
      {"xb:2", MaskKind::BottomRight, 1, 0, 0, "b:1,0"},
      {"xt:-1", MaskKind::TopLeft, -1, 0, 0, "t"},
      {"xb:-5", MaskKind::BottomRight, -1, 0, 0, "b"},
  };
  for (const Form &f : forms) {
    SCOPED_TRACE(f.spec);
    MaskSpec m = parseOk(f.spec);
    EXPECT_EQ(m.kind, f.kind);
    EXPECT_EQ(m.left, f.left);
    EXPECT_EQ(m.right, f.right);
    EXPECT_EQ(m.sink, f.sink);
    EXPECT_EQ(m.str(), f.canonical);
    EXPECT_EQ(m.validate(), "");
    // str() round-trips.
    EXPECT_EQ(parseOk(m.str().c_str()), m);
  }
}

TEST(MaskSpecParse, ErrorMessages) {
  const std::string expected =
      "expected one of 0, none, t, b, t:L,R, b:L,R, t:L,R,S, b:L,R,S, xt:W, "
      "xb:W";
  EXPECT_EQ(parseError("q"), "unknown mask spec 'q': " + expected);
  EXPECT_EQ(parseError(""), "unknown mask spec '': " + expected);
  EXPECT_EQ(parseError("causal"), "unknown mask spec 'causal': " + expected);
  EXPECT_EQ(parseError("t:a,1"),
            "malformed mask spec 't:a,1': 'a' is not an integer; " + expected);
  EXPECT_EQ(parseError("t:"),
            "malformed mask spec 't:': '' is not an integer; " + expected);
  EXPECT_EQ(parseError("b:1,,2"),
            "malformed mask spec 'b:1,,2': '' is not an integer; " + expected);
  EXPECT_EQ(parseError("t:1 ,2"),
            "malformed mask spec 't:1 ,2': '1 ' is not an integer; " +
                expected);
  EXPECT_EQ(parseError("t:1"), "malformed mask spec 't:1': expected 2 or 3 "
                               "integers after 't:' (L,R or L,R,S), got 1");
  EXPECT_EQ(parseError("b:1,2,3,4"),
            "malformed mask spec 'b:1,2,3,4': expected 2 or 3 integers after "
            "'b:' (L,R or L,R,S), got 4");
  EXPECT_EQ(parseError("t:1,2,-1"), "malformed mask spec 't:1,2,-1': sink "
                                    "(S) must be non-negative, got -1");
  EXPECT_EQ(parseError("t:99999999999999999999,0"),
            "malformed mask spec 't:99999999999999999999,0': integer "
            "'99999999999999999999' is out of range");
  EXPECT_EQ(parseError("xt:0"), "malformed mask spec 'xt:0': window size W "
                                "must be non-zero (W < 0 is causal)");
  EXPECT_EQ(parseError("xb:1,2"),
            "malformed mask spec 'xb:1,2': expected one window size W after "
            "'xb:'");
  EXPECT_EQ(parseError("xt:w"),
            "malformed mask spec 'xt:w': 'w' is not an integer; " + expected);
  // A null error pointer is allowed.
  EXPECT_FALSE(MaskSpec::parse("q").has_value());
}

TEST(MaskSpecValidate, ErrorMessages) {
  MaskSpec m;
  m.kind = static_cast<MaskKind>(7);
  EXPECT_EQ(m.validate(), "unknown mask kind 7");
  m = MaskSpec{MaskKind::TopLeft, 1, 1, -2};
  EXPECT_EQ(m.validate(), "sink (S) must be non-negative, got -2");
  m = MaskSpec{MaskKind::TopLeft, -3, 1, 0};
  EXPECT_EQ(m.validate(), "unbounded window sides are written -1, got left "
                          "-3 and right 1");
  m = MaskSpec{MaskKind::None, 2, -1, 0};
  EXPECT_EQ(m.validate(), "mask '0' takes no window and no sink");
  m = MaskSpec{MaskKind::None, -1, -1, 3};
  EXPECT_EQ(m.validate(), "mask '0' takes no window and no sink");
}

TEST(MaskSpecVisible, MatchesSectionOne) {
  // Section 1 written out directly for each form.
  const int64_t sizes[][2] = {{4, 4}, {3, 7}, {7, 3}, {1, 5}, {6, 1}};
  for (const auto &sz : sizes) {
    int64_t sq = sz[0], sk = sz[1];
    for (int64_t i = 0; i < sq; ++i) {
      for (int64_t j = 0; j < sk; ++j) {
        int64_t off = sk - sq;
        EXPECT_TRUE(parseOk("0").visible(i, j, sq, sk));
        EXPECT_EQ(parseOk("t").visible(i, j, sq, sk), j <= i);
        EXPECT_EQ(parseOk("b").visible(i, j, sq, sk), j <= i + off);
        EXPECT_EQ(parseOk("t:2,1").visible(i, j, sq, sk),
                  i - 2 <= j && j <= i + 1);
        EXPECT_EQ(parseOk("b:1,0").visible(i, j, sq, sk),
                  i + off - 1 <= j && j <= i + off);
        EXPECT_EQ(parseOk("t:0,0,2").visible(i, j, sq, sk), j == i || j < 2);
        // The seed's sink reference: j < S or i - W + 1 <= j <= i.
        EXPECT_EQ(parseOk("t:2,0,1").visible(i, j, sq, sk),
                  j < 1 || (i - 3 + 1 <= j && j <= i));
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Tile bounds, exhaustively on small sizes
//===----------------------------------------------------------------------===//

const char *const kMasks[] = {
    "0",        "t",         "b",       "t:0,0",    "b:0,0",    "t:3,2",
    "b:3,2",    "t:-1,4",    "b:5,-1",  "t:4,-1",   "b:-1,3",   "t:2,0,3",
    "b:1,1,5",  "xt:4",      "xb:7",    "t:0,0,1",  "b:0,-1,2", "t:100,0",
    "b:-1,100", "t:0,0,100", "b:2,0,1", "t:-1,0,2", "b:6,1,3",  "t:1,-1,4"};
const int64_t kSizes[] = {1, 2, 3, 5, 8, 13, 17};
const int64_t kBlocks[] = {1, 2, 3, 4, 8, 16};

TEST(MaskTiles, BoundsAreExactForVisibleSet) {
  int64_t checkedTiles = 0, skippedTiles = 0, fullTiles = 0;
  for (const char *spec : kMasks) {
    MaskSpec mask = parseOk(spec);
    for (int64_t sq : kSizes) {
      for (int64_t sk : kSizes) {
        for (int64_t bm : kBlocks) {
          for (int64_t bn : kBlocks) {
            int64_t numQ = (sq + bm - 1) / bm, numKv = (sk + bn - 1) / bn;
            for (int64_t qt = 0; qt < numQ; ++qt) {
              KvTileBounds b = kvTileBounds(mask, qt * bm, bm, bn, sq, sk);
              ASSERT_TRUE(0 <= b.sinkEnd && b.sinkEnd <= b.begin &&
                          b.begin <= b.end && b.end <= numKv)
                  << spec << " sq=" << sq << " sk=" << sk << " bm=" << bm
                  << " bn=" << bn << " qt=" << qt;
              for (int64_t kt = 0; kt < numKv; ++kt) {
                TileVisit visit = classifyTile(mask, qt, kt, bm, bn, sq, sk);
                bool any = false, all = true;
                for (int64_t i = qt * bm; i < std::min(sq, (qt + 1) * bm);
                     ++i) {
                  for (int64_t j = kt * bn; j < std::min(sk, (kt + 1) * bn);
                       ++j) {
                    bool vis = mask.visible(i, j, sq, sk);
                    any |= vis;
                    all &= vis;
                  }
                }
                ++checkedTiles;
                // A skipped tile holds no visible element (so every visible
                // element lies in a visited tile); a Full tile holds only
                // visible elements.
                if (visit == TileVisit::Skipped) {
                  ++skippedTiles;
                  ASSERT_FALSE(any)
                      << spec << " sq=" << sq << " sk=" << sk << " bm=" << bm
                      << " bn=" << bn << " tile (" << qt << "," << kt << ")";
                }
                if (visit == TileVisit::Full) {
                  ++fullTiles;
                  ASSERT_TRUE(all)
                      << spec << " sq=" << sq << " sk=" << sk << " bm=" << bm
                      << " bn=" << bn << " tile (" << qt << "," << kt << ")";
                }
              }
            }
          }
        }
      }
    }
  }
  // The sweep exercises every classification.
  EXPECT_GT(skippedTiles, 1000);
  EXPECT_GT(fullTiles, 1000);
  EXPECT_GT(checkedTiles, skippedTiles + fullTiles);
}

TEST(MaskTiles, HandCheckedCausal) {
  // t on 4x4 with 2x2 tiles: tile (0,0) crosses the diagonal, (0,1) is above
  // it, (1,0) is below it, (1,1) crosses it.
  MaskSpec t = parseOk("t");
  EXPECT_EQ(classifyTile(t, 0, 0, 2, 2, 4, 4), TileVisit::Partial);
  EXPECT_EQ(classifyTile(t, 0, 1, 2, 2, 4, 4), TileVisit::Skipped);
  EXPECT_EQ(classifyTile(t, 1, 0, 2, 2, 4, 4), TileVisit::Full);
  EXPECT_EQ(classifyTile(t, 1, 1, 2, 2, 4, 4), TileVisit::Partial);
  // Sink tiles: t:0,0,2 on 8x8 with 2x2 tiles. The last q tile visits the
  // sink tile 0 in the leading loop and its diagonal tile 3.
  MaskSpec s = parseOk("t:0,0,2");
  KvTileBounds b = kvTileBounds(s, 6, 2, 2, 8, 8);
  EXPECT_EQ(b.sinkEnd, 1);
  EXPECT_EQ(b.begin, 3);
  EXPECT_EQ(b.end, 4);
  EXPECT_EQ(classifyTile(s, 3, 0, 2, 2, 8, 8), TileVisit::Full);
  EXPECT_EQ(classifyTile(s, 3, 1, 2, 2, 8, 8), TileVisit::Skipped);
  EXPECT_EQ(classifyTile(s, 3, 3, 2, 2, 8, 8), TileVisit::Partial);
}

TEST(MaskSimplified, PreservesVisibleSet) {
  const int64_t sizes[] = {0, 1, 2, 3, 4, 6, 9};
  for (const char *spec : kMasks) {
    MaskSpec mask = parseOk(spec);
    for (int64_t sq : sizes) {
      for (int64_t sk : sizes) {
        MaskSpec s = mask.simplified(sq, sk);
        EXPECT_EQ(s.validate(), "") << spec;
        EXPECT_EQ(s.simplified(sq, sk), s) << spec << " is not idempotent";
        if (sq == sk) {
          EXPECT_NE(s.kind, MaskKind::BottomRight) << spec;
        }
        bool hidesSomething = false;
        for (int64_t i = 0; i < sq; ++i) {
          for (int64_t j = 0; j < sk; ++j) {
            ASSERT_EQ(s.visible(i, j, sq, sk), mask.visible(i, j, sq, sk))
                << spec << " -> " << s.str() << " at sq=" << sq << " sk=" << sk
                << " i=" << i << " j=" << j;
            hidesSomething |= !mask.visible(i, j, sq, sk);
          }
        }
        // Without sinks, a window that hides nothing simplifies to `0`.
        // (With sinks it may not: b:1,1,5 on 1x6 hides nothing through the
        // union of window and sink, yet keeps its left bound.)
        if (!hidesSomething && sq > 0 && sk > 0 && mask.sink == 0) {
          EXPECT_TRUE(s.isNone()) << spec << " hides nothing at " << sq << "x"
                                  << sk << " but simplified to " << s.str();
        }
      }
    }
  }
}

} // namespace
