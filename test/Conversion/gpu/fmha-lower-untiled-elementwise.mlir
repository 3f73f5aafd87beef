// RUN: fmha-opt %s --fmha-lower-to-gpu -split-input-file -verify-diagnostics
// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942" -split-input-file -verify-diagnostics
// RUN: fmha-opt %s --fmha-lower-to-cpu -split-input-file -verify-diagnostics

// fmha.merge and fmha.accumulate reach the kernels through their loops
// (--fmha-tile-elementwise, then --fmha-map-parallel-to-gpu on the GPU): the
// kernel lowerings refuse them untiled, naming the passes, on both GPU
// targets and the CPU.

func.func @merge(%o: memref<1x4x8x64xbf16>, %l: memref<1x4x8xf32>) {
  // expected-error @+1 {{'fmha.merge' op is lowered through its loops: run --fmha-tile-elementwise}}
  fmha.merge ins(%o, %l, %o, %l : memref<1x4x8x64xbf16>, memref<1x4x8xf32>, memref<1x4x8x64xbf16>, memref<1x4x8xf32>) outs(%o, %l : memref<1x4x8x64xbf16>, memref<1x4x8xf32>)
  return
}

// -----

func.func @accumulate(%x: memref<8xbf16>, %acc: memref<8xf32>) {
  // expected-error @+1 {{'fmha.accumulate' op is lowered through its loops: run --fmha-tile-elementwise}}
  fmha.accumulate ins(%x : memref<8xbf16>) outs(%acc : memref<8xf32>)
  return
}
