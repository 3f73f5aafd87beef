//===- KernelDefaults.h - Each chip's fastest kernel by default -*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The tile sizes and matrix instruction a GPU kernel gets when its caller
// leaves them out: the choices measured fastest on each chip
// (docs/PERFORMANCE.md). One definition for fmha-compile and the named
// pipelines (which resolve them per op, from the op's head dims and element
// type), so that both give the same kernel.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_CONVERSION_KERNELDEFAULTS_H
#define FMHA_CONVERSION_KERNELDEFAULTS_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
namespace fmha {

/// A kernel to choose: the target and op, and the options the caller gave
/// (nullopt: the default).
struct GpuKernelRequest {
  bool rocdl = false; ///< else nvvm
  std::string chip;
  bool backward = false;
  /// The forward from the staged passes (--vector-tiles): mma.sync's
  /// layouts, a workgroup of block-m / 16 warps (at most 4; with mma
  /// "wgmma" warpgroup products and every warp 16 rows).
  bool staged = false;
  /// The caller can build the staged forward (fmha-compile can, the named
  /// pipelines' fmha-lower-to-gpu cannot): where it is the fastest kernel
  /// and no option is given, the choice is the staged one.
  bool stagedAllowed = false;
  /// Only the staged forward takes the op (learned sink logits): where it
  /// is allowed, the choice is staged whatever its speed.
  bool stagedRequired = false;
  /// The backward with no atomics (dQ summed in a fixed order): on sm_90a
  /// the staged backward, deterministic by construction and 1.09-1.45x the
  /// builder's deterministic one (H200, docs/PERFORMANCE.md, session 30).
  bool deterministic = false;
  bool f32 = false; ///< f32 inputs (no matrix kernel takes them)
  int64_t d = 0, dv = 0;
  /// The mask is causal (either anchor) with no window to the left and no
  /// sink tokens: the one mask where the builder's warpgroup kernel stays
  /// ahead of the staged one at D = 128 (docs/PERFORMANCE.md).
  bool plainCausal = false;
  int64_t mfma = 0; ///< rocdl: 0, 16 or 32
  std::optional<int64_t> blockM, blockN, warpRows;
  std::optional<bool> qInShared;
  /// "wgmma", "mma.sync" (the warp-level kernel) or nullopt.
  std::optional<std::string> mma;
};

/// The options to lower with; `mma` is "wgmma" or "" (the warp-level
/// kernel).
struct GpuKernelChoice {
  int64_t blockM = 64, blockN = 64, warpRows = 16;
  bool qInShared = false;
  std::string mma;
  /// The staged forward (only where the request allows it).
  bool staged = false;
};

/// The defaults:
///   - nvvm sm_90a forward, f16/bf16, D and Dv in {64, 128, 256} and one of
///     them over 64, no option given, where the caller allows it: the
///     staged forward with warpgroup products (1.04-1.09x the builder's
///     warpgroup kernel at D = 128 with no mask or a window; the only one
///     at D = 256 and for mixed head dims), except D = Dv = 128 under a
///     plain causal mask, where the builder's kernel stays (the staged one
///     0.97-0.99x there).
///   - nvvm sm_90a, f16/bf16, D = Dv in {64, 128}, no tile option given:
///     the warpgroup (wgmma) kernel, 1.4-1.5x the mma.sync one on the H200;
///     forward 128 rows, 64-key tiles at D = 64 and 128 at D = 128, 16 rows
///     a warp; backward 128 x 128 tiles.
///   - nvvm mma.sync forward: 128 rows of 32 rows a warp; 64-key tiles, the
///     Q tile in workgroup memory at D or Dv over 64 (16-key tiles where
///     --block-n alone is given without q-in-shared).
///   - nvvm backward: 128 x 128 tiles above D = 64, 64 x 64 up to it.
///   - nvvm sm_90a deterministic backward, f16/bf16, D and Dv multiples of
///     16 from 48 to 128, no tile option given, where the caller allows it:
///     the staged backward (its warpgroup products, 64 x 64 tiles), as for
///     the head dims the builder does not take.
///   - the staged forward (nvvm): 128 x 64 tiles (32 rows a warp), the Q
///     tile in workgroup memory (fmha-stage-q) where D or Dv is over 64
///     and block-m is not given; with mma "wgmma" (warpgroup products),
///     128 rows, 128-key tiles where the larger head dim is 128 and 64
///     otherwise (the stages fit the workgroup memory at 256), Q in
///     workgroup memory.
///   - the staged forward (rocdl): 64 rows (128 with mfma 32), 64-key tiles
///     on CDNA and 16 on RDNA, Q in registers.
///   - rocdl: 32 rows a warp with mfma 32; RDNA (gfx1*) forward 16-key
///     tiles on gfx11, 32 on gfx12 (16 at D = 128).
///   - otherwise 64, 64, 16 rows a warp, Q in registers.
GpuKernelChoice chooseGpuKernel(const GpuKernelRequest &request);

/// Whether the staged backward's warpgroup products take a kernel's tiles
/// of `rows` rows (a warpgroup each 64: 64 or 128).
inline bool stagedWarpgroupRows(int64_t rows) {
  return rows == 64 || rows == 128;
}

} // namespace fmha
} // namespace mlir

#endif // FMHA_CONVERSION_KERNELDEFAULTS_H
