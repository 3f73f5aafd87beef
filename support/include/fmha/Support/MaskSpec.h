//===- MaskSpec.h - Attention mask spec strings and tile bounds -*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The mask semantics of DESIGN.md section 1, written once in plain C++ (no
// MLIR, no LLVM) so that the dialect, the runtime, the float64 reference and
// the tools all agree on what a spec string means.
//
// A mask is (kind, left, right, sink). Row i (query), column j (key), both
// 0-based. With off = 0 for top-left and Sk - Sq for bottom-right:
//   visible(i, j) = j < sink OR (lo(i) <= j <= hi(i))
//   lo(i) = i + off - left   (no bound when left < 0)
//   hi(i) = i + off + right  (no bound when right < 0)
// Kind `None` makes every key visible.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_SUPPORT_MASKSPEC_H
#define FMHA_SUPPORT_MASKSPEC_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fmha {

enum class MaskKind : uint32_t { None = 0, TopLeft = 1, BottomRight = 2 };

struct MaskSpec {
  MaskKind kind = MaskKind::None;
  /// Keys visible to the left of the diagonal; negative means unbounded (-1).
  int64_t left = -1;
  /// Keys visible to the right of the diagonal; negative means unbounded (-1).
  int64_t right = -1;
  /// The first `sink` keys are visible to every row.
  int64_t sink = 0;

  /// Parses one of CK's spec strings: `0`, `none`, `t`, `b`, `t:L,R`,
  /// `b:L,R`, `t:L,R,S`, `b:L,R,S`, `xt:W`, `xb:W`. Negative L/R are stored as
  /// -1. On failure returns std::nullopt and sets `error` to a message naming
  /// what is wrong.
  static std::optional<MaskSpec> parse(std::string_view spec,
                                       std::string *error = nullptr);

  /// Checks the invariants (sink >= 0, None carries no window or sink).
  /// Returns an empty string when valid, else the message.
  std::string validate() const;

  /// The canonical spec string (`0`, `t`, `b`, `t:L,R`, `t:L,R,S`, ...).
  std::string str() const;

  bool isNone() const { return kind == MaskKind::None; }
  bool hasLeft() const { return kind != MaskKind::None && left >= 0; }
  bool hasRight() const { return kind != MaskKind::None && right >= 0; }

  /// Diagonal offset: 0 for top-left and none, Sk - Sq for bottom-right.
  int64_t offset(int64_t sq, int64_t sk) const {
    return kind == MaskKind::BottomRight ? sk - sq : 0;
  }

  /// Whether key j is visible to query i (both in range).
  bool visible(int64_t i, int64_t j, int64_t sq, int64_t sk) const;

  /// The same mask with every bound that cannot hide a key of an Sq x Sk
  /// problem removed, `b` turned into `t` when Sq == Sk, and a mask that
  /// hides nothing turned into `0`. The result has the same visible set.
  MaskSpec simplified(int64_t sq, int64_t sk) const;

  bool operator==(const MaskSpec &o) const {
    return kind == o.kind && left == o.left && right == o.right &&
           sink == o.sink;
  }
  bool operator!=(const MaskSpec &o) const { return !(*this == o); }
};

/// How the kv tiles of one q tile are visited by the flash-attention loop.
/// This is the arithmetic that `--fmha-tile-attention` emits as IR; it lives
/// here so that `fmha-run --show-mask` and the unit tests share it.
struct KvTileBounds {
  /// Sink tiles [0, sinkEnd) are visited by a leading loop.
  int64_t sinkEnd = 0;
  /// Tiles [begin, end) are visited by the main loop: the window's tiles and
  /// any sink tiles after them. sinkEnd <= begin.
  int64_t begin = 0;
  int64_t end = 0;
};

enum class TileVisit { Skipped, Full, Partial };

/// Tile bounds for the q tile holding rows [r0, min(r0 + blockM, sq)).
KvTileBounds kvTileBounds(const MaskSpec &mask, int64_t r0, int64_t blockM,
                          int64_t blockN, int64_t sq, int64_t sk);

/// Whether every key of kv tile [c0, c0 + blockN) is visible to every row of
/// the q tile at r0 (then the kernel applies no element mask to it). Columns
/// and rows beyond the problem are not part of the tile.
bool kvTileIsFull(const MaskSpec &mask, int64_t r0, int64_t blockM, int64_t c0,
                  int64_t blockN, int64_t sq, int64_t sk);

/// What the compiled kernel does with kv tile `kt` of q tile `qt`.
TileVisit classifyTile(const MaskSpec &mask, int64_t qt, int64_t kt,
                       int64_t blockM, int64_t blockN, int64_t sq, int64_t sk);

} // namespace fmha

#endif // FMHA_SUPPORT_MASKSPEC_H
