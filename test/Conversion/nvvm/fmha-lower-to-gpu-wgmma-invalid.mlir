// RUN: fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wgmma block-m=128 block-n=64" -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90 mma=wgmma" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942 mma=wgmma" -split-input-file 2>&1 | FileCheck %s --check-prefix=ROCDL
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wmma" -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wgmma block-m=96" -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wgmma block-m=128 warp-rows=32" -split-input-file 2>&1 | FileCheck %s --check-prefix=WARPROWS
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wgmma block-m=128 block-n=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wgmma block-m=128 block-n=272" -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKN272

// CHIP: error: 'fmha.attention' op mma=wgmma needs chip sm_90a (wgmma.mma_async), got 'sm_90'
// ROCDL: error: 'fmha.attention' op mma=wgmma is not available on the rocdl target (no warpgroup matrix instruction)
// UNKNOWN: error: unknown mma 'wmma' (expected wgmma, or empty for the target's warp-level matrix instruction)
// BLOCKM: error: 'fmha.attention' op mma=wgmma needs block-m 64, 128, 192 or 256 (one to four warpgroups of 64 rows), got 96
// WARPROWS: error: 'fmha.attention' op mma=wgmma needs warp-rows=16 (each warp holds 16 rows of its warpgroup), got 32
// BLOCKN: error: 'fmha.attention' op mma=wgmma needs block-n a multiple of 16 from 16 to 256, got 24
// BLOCKN272: error: 'fmha.attention' op mma=wgmma needs block-n a multiple of 16 from 16 to 256, got 272

func.func @ok(%q: memref<?x4x?x64xf16>) {
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xf16>, memref<?x4x?x64xf16>, memref<?x4x?x64xf16>) outs(%q : memref<?x4x?x64xf16>)
  return
}

// -----

func.func @f32(%q: memref<?x4x?x64xf32>) {
  // expected-error @+1 {{the nvvm kernel needs f16 or bf16 inputs, got f32}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>) outs(%q : memref<?x4x?x64xf32>)
  return
}

// -----

func.func @head_dim_32(%q: memref<?x4x?x32xf16>) {
  // expected-error @+1 {{mma=wgmma supports head dims D = Dv in {64, 128}, got D=32, Dv=32}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x32xf16>, memref<?x4x?x32xf16>, memref<?x4x?x32xf16>) outs(%q : memref<?x4x?x32xf16>)
  return
}

// -----

func.func @dv_differs(%q: memref<?x4x?x128xf16>, %v: memref<?x4x?x64xf16>) {
  // expected-error @+1 {{mma=wgmma supports head dims D = Dv in {64, 128}, got D=128, Dv=64}}
  fmha.attention ins(%q, %q, %v : memref<?x4x?x128xf16>, memref<?x4x?x128xf16>, memref<?x4x?x64xf16>) outs(%v : memref<?x4x?x64xf16>)
  return
}

// -----

func.func @bwd(%q: memref<?x4x?x64xbf16>, %lse: memref<?x4x?xf32>) {
  // expected-error @+1 {{mma=wgmma in the backward kernels needs block-m = block-n = 128 (two warpgroups of 64 kv rows) and warp-rows = 16; got block-m=128 block-n=64 warp-rows=16}}
  fmha.attention_bwd ins(%q, %q, %q, %q, %lse, %q : memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?xf32>, memref<?x4x?x64xbf16>) outs(%q, %q, %q : memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>)
  return
}
