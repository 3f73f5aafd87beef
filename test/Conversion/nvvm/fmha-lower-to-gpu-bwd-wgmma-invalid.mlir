// RUN: fmha-opt %s --fmha-lower-to-gpu="chip=sm_90a mma=wgmma block-m=128 block-n=128" -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90 mma=wgmma block-m=128 block-n=128" 2>&1 | FileCheck %s --check-prefix=CHIP
// The chip is checked first: without sm_90a's wgmma, the op names it.
// CHIP: error: 'fmha.attention_bwd' op mma=wgmma needs chip sm_90a (wgmma.mma_async), got 'sm_90'

// The warpgroup dkdv kernel takes D = Dv in {64, 128} only.
func.func @dv_differs(%q: memref<?x4x?x128xbf16>, %v: memref<?x4x?x64xbf16>, %lse: memref<?x4x?xf32>) {
  // expected-error @+1 {{mma=wgmma supports head dims D = Dv in {64, 128} in the backward kernels, got D=128, Dv=64}}
  fmha.attention_bwd ins(%q, %q, %v, %v, %lse, %v : memref<?x4x?x128xbf16>, memref<?x4x?x128xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?xf32>, memref<?x4x?x64xbf16>) outs(%q, %q, %v : memref<?x4x?x128xbf16>, memref<?x4x?x128xbf16>, memref<?x4x?x64xbf16>)
  return
}
