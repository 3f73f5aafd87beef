//===- MaskSpec.cpp - Attention mask spec strings and tile bounds ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Support/MaskSpec.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace fmha {

namespace {

constexpr const char *kExpected =
    "expected one of 0, none, t, b, t:L,R, b:L,R, t:L,R,S, b:L,R,S, xt:W, xb:W";

bool fail(std::string *error, std::string msg) {
  if (error)
    *error = std::move(msg);
  return false;
}

/// Parses a comma-separated list of decimal integers (each may start with '-').
bool parseInts(std::string_view text, std::string_view spec,
               std::vector<int64_t> &out, std::string *error) {
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos
                                                 ? std::string_view::npos
                                                 : comma - pos);
    int64_t value = 0;
    const char *first = item.data(), *last = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (item.empty() || ec == std::errc::invalid_argument || ptr != last)
      return fail(error, "malformed mask spec '" + std::string(spec) + "': '" +
                             std::string(item) + "' is not an integer; " +
                             kExpected);
    if (ec == std::errc::result_out_of_range)
      return fail(error, "malformed mask spec '" + std::string(spec) +
                             "': integer '" + std::string(item) +
                             "' is out of range");
    out.push_back(value);
    if (comma == std::string_view::npos)
      return true;
    pos = comma + 1;
  }
}

/// Bounds beyond the problem size behave as unbounded; clamping keeps the
/// index arithmetic below free of overflow.
int64_t clampBound(int64_t bound, int64_t sq, int64_t sk) {
  return std::min<int64_t>(bound, sq + sk + 1);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

std::optional<MaskSpec> MaskSpec::parse(std::string_view spec,
                                        std::string *error) {
  MaskSpec m;
  if (spec == "0" || spec == "none")
    return m;
  if (spec == "t" || spec == "b") {
    m.kind = spec == "t" ? MaskKind::TopLeft : MaskKind::BottomRight;
    m.left = -1;
    m.right = 0;
    return m;
  }
  auto startsWith = [&](std::string_view p) {
    return spec.substr(0, p.size()) == p;
  };
  std::vector<int64_t> ints;
  if (startsWith("t:") || startsWith("b:")) {
    m.kind = spec[0] == 't' ? MaskKind::TopLeft : MaskKind::BottomRight;
    if (!parseInts(spec.substr(2), spec, ints, error))
      return std::nullopt;
    if (ints.size() != 2 && ints.size() != 3) {
      fail(error, "malformed mask spec '" + std::string(spec) +
                      "': expected 2 or 3 integers after '" +
                      std::string(spec.substr(0, 2)) +
                      "' (L,R or L,R,S), got " + std::to_string(ints.size()));
      return std::nullopt;
    }
    m.left = ints[0] < 0 ? -1 : ints[0];
    m.right = ints[1] < 0 ? -1 : ints[1];
    m.sink = ints.size() == 3 ? ints[2] : 0;
    if (m.sink < 0) {
      fail(error, "malformed mask spec '" + std::string(spec) +
                      "': sink (S) must be non-negative, got " +
                      std::to_string(m.sink));
      return std::nullopt;
    }
    return m;
  }
  if (startsWith("xt:") || startsWith("xb:")) {
    m.kind = spec[1] == 't' ? MaskKind::TopLeft : MaskKind::BottomRight;
    if (!parseInts(spec.substr(3), spec, ints, error))
      return std::nullopt;
    if (ints.size() != 1) {
      fail(error, "malformed mask spec '" + std::string(spec) +
                      "': expected one window size W after '" +
                      std::string(spec.substr(0, 3)) + "'");
      return std::nullopt;
    }
    int64_t w = ints[0];
    if (w == 0) {
      fail(error, "malformed mask spec '" + std::string(spec) +
                      "': window size W must be non-zero (W < 0 is causal)");
      return std::nullopt;
    }
    if (w < 0) {
      m.left = -1;
      m.right = 0;
    } else {
      m.left = w / 2;
      m.right = w - 1 - m.left;
    }
    return m;
  }
  fail(error, "unknown mask spec '" + std::string(spec) + "': " + kExpected);
  return std::nullopt;
}

std::string MaskSpec::validate() const {
  if (kind != MaskKind::None && kind != MaskKind::TopLeft &&
      kind != MaskKind::BottomRight)
    return "unknown mask kind " + std::to_string(static_cast<uint32_t>(kind));
  if (sink < 0)
    return "sink (S) must be non-negative, got " + std::to_string(sink);
  if (left < -1 || right < -1)
    return "unbounded window sides are written -1, got left " +
           std::to_string(left) + " and right " + std::to_string(right);
  if (kind == MaskKind::None && (left != -1 || right != -1 || sink != 0))
    return "mask '0' takes no window and no sink";
  return {};
}

std::string MaskSpec::str() const {
  if (kind == MaskKind::None)
    return "0";
  std::string k = kind == MaskKind::TopLeft ? "t" : "b";
  if (left == -1 && right == 0 && sink == 0)
    return k;
  std::string s = k + ":" + std::to_string(left) + "," + std::to_string(right);
  if (sink != 0)
    s += "," + std::to_string(sink);
  return s;
}

bool MaskSpec::visible(int64_t i, int64_t j, int64_t sq, int64_t sk) const {
  if (kind == MaskKind::None || j < sink)
    return true;
  int64_t diag = i + offset(sq, sk);
  if (left >= 0 && j < diag - clampBound(left, sq, sk))
    return false;
  if (right >= 0 && j > diag + clampBound(right, sq, sk))
    return false;
  return true;
}

MaskSpec MaskSpec::simplified(int64_t sq, int64_t sk) const {
  MaskSpec m = *this;
  if (m.kind == MaskKind::None)
    return m;
  if (sq >= 0 && sk >= 0 && sq == sk && m.kind == MaskKind::BottomRight)
    m.kind = MaskKind::TopLeft;
  // Row i sees no key left of lo(i) = i + off - L; that hides nothing when
  // lo(Sq-1) <= 0, i.e. L >= Sq - 1 + off (= Sk - 1 for bottom-right).
  int64_t leftCover = m.kind == MaskKind::TopLeft ? sq - 1 : sk - 1;
  bool leftKnown = m.kind == MaskKind::TopLeft ? sq >= 0 : sk >= 0;
  if (m.left >= 0 && leftKnown && m.left >= leftCover)
    m.left = -1;
  // hi(i) = i + off + R hides nothing when hi(0) >= Sk - 1, i.e.
  // R >= Sk - 1 - off (= Sq - 1 for bottom-right).
  int64_t rightCover = m.kind == MaskKind::TopLeft ? sk - 1 : sq - 1;
  bool rightKnown = m.kind == MaskKind::TopLeft ? sk >= 0 : sq >= 0;
  if (m.right >= 0 && rightKnown && m.right >= rightCover)
    m.right = -1;
  bool sinkCoversAll = sk >= 0 && m.sink >= sk;
  if ((m.left < 0 && m.right < 0) || sinkCoversAll)
    return MaskSpec{};
  return m;
}

KvTileBounds kvTileBounds(const MaskSpec &mask, int64_t r0, int64_t blockM,
                          int64_t blockN, int64_t sq, int64_t sk) {
  KvTileBounds b;
  int64_t numKv = ceilDiv(sk, blockN);
  if (mask.isNone()) {
    b.end = numKv;
    return b;
  }
  int64_t r1 = std::min(r0 + blockM, sq);
  int64_t off = mask.offset(sq, sk);
  int64_t jlo = 0, jhi = sk - 1;
  if (mask.hasLeft())
    jlo = std::max<int64_t>(0, r0 + off - clampBound(mask.left, sq, sk));
  if (mask.hasRight())
    jhi = std::min<int64_t>(sk - 1,
                            r1 - 1 + off + clampBound(mask.right, sq, sk));
  if (jlo > jhi) {
    b.begin = b.end = numKv;
  } else {
    b.begin = jlo / blockN;
    b.end = jhi / blockN + 1;
  }
  int64_t sinkTiles = ceilDiv(std::min(mask.sink, sk), blockN);
  b.sinkEnd = std::min(sinkTiles, b.begin);
  // Sink keys are visible to every row, also past the window's last key
  // (e.g. early rows of a causal mask with S > 1): sink tiles after the
  // window extend the main loop (the union is then one interval).
  b.end = std::max(b.end, sinkTiles);
  return b;
}

bool kvTileIsFull(const MaskSpec &mask, int64_t r0, int64_t blockM, int64_t c0,
                  int64_t blockN, int64_t sq, int64_t sk) {
  if (mask.isNone())
    return true;
  int64_t r1 = std::min(r0 + blockM, sq);
  int64_t c1 = std::min(c0 + blockN, sk);
  if (c1 <= mask.sink)
    return true;
  int64_t off = mask.offset(sq, sk);
  bool leftOk =
      !mask.hasLeft() || r1 - 1 + off - clampBound(mask.left, sq, sk) <= c0;
  bool rightOk =
      !mask.hasRight() || c1 - 1 <= r0 + off + clampBound(mask.right, sq, sk);
  return leftOk && rightOk;
}

TileVisit classifyTile(const MaskSpec &mask, int64_t qt, int64_t kt,
                       int64_t blockM, int64_t blockN, int64_t sq, int64_t sk) {
  KvTileBounds b = kvTileBounds(mask, qt * blockM, blockM, blockN, sq, sk);
  bool visited = kt < b.sinkEnd || (kt >= b.begin && kt < b.end);
  if (!visited)
    return TileVisit::Skipped;
  return kvTileIsFull(mask, qt * blockM, blockM, kt * blockN, blockN, sq, sk)
             ? TileVisit::Full
             : TileVisit::Partial;
}

} // namespace fmha
