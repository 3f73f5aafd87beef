// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=wgmma" 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="warps=0" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64" --fmha-assign-layouts 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mfma32 warps=4" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="warps=3" 2>&1 | FileCheck %s --check-prefix=POW2

// MMA: error: fmha-assign-layouts: unknown mma 'wgmma' (expected mma.sync, mfma16, mfma32, wmma-rdna3 or wmma-rdna4)
// WARPS: error: fmha-assign-layouts: warps must be positive and warp-rows non-negative, got warps=0 warp-rows=0
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="warp-rows=-1" 2>&1 | FileCheck %s --check-prefix=WROWS
// WROWS: error: fmha-assign-layouts: warps must be positive and warp-rows non-negative, got warps=4 warp-rows=-1
// DYN: error: 'fmha.tile_init' op has a tile of type 'tensor<?xf32>': layouts are assigned to static tiles of rank 1 or 2 (tile with --fmha-tile-attention="static-tiles=1")
// SPLIT: error: 'fmha.tile_init' op cannot hold its 'tensor<64xf32>' tile in v_mfma_f32_32x32x8 fragments over 4 warps: tile 64x32 over 4 warps: each warp's 16x32 band is not a whole number of 32x32 fragments
// POW2: error: 'fmha.tile_init' op cannot hold its 'tensor<64xf32>' tile in mma.sync.m16n8k16 fragments over 3 warps: tile 64x8 over 3 warps: sizes must be powers of two
func.func @f(%q: tensor<1x4x?x64xf16>, %o: tensor<1x4x?x64xf16>) -> tensor<1x4x?x64xf16> {
  %0 = fmha.attention ins(%q, %q, %q : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>) outs(%o : tensor<1x4x?x64xf16>) -> tensor<1x4x?x64xf16>
  return %0 : tensor<1x4x?x64xf16>
}
