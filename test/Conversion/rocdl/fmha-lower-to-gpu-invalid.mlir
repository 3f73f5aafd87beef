// Combinations the rocdl lowering refuses, each with its message.
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx1100" 2>&1 | FileCheck %s --check-prefix=RDNA3-D
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx1201 mfma=32" 2>&1 | FileCheck %s --check-prefix=RDNA-M32
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942 mfma=64" 2>&1 | FileCheck %s --check-prefix=M64
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942 mfma=32" 2>&1 | FileCheck %s --check-prefix=M32-W
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx1030" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90 mfma=32" 2>&1 | FileCheck %s --check-prefix=NVVM
// RUN: not fmha-opt %s --split-input-file --fmha-lower-to-gpu="target=rocdl chip=gfx90a mfma=32 warp-rows=32" 2>&1 | FileCheck %s --check-prefix=M32-D

// RDNA3-D: error: 'fmha.attention' op head dims D=128, Dv=128 do not fit the registers of a lane on gfx1100 (at most 64)
// RDNA-M32: error: mfma=32 on gfx1201: RDNA chips have only the WMMA 16x16x16 instructions (mfma=16)
// M64: error: mfma=64 on gfx942: expected 16 (v_mfma_f32_16x16x16) or 32 (v_mfma_f32_32x32x8)
// M32-W: error: 'fmha.attention' op warp-rows=16 must be a multiple of 32 up to 128
// CHIP: error: unknown or unsupported AMD chip 'gfx1030' (supported: gfx90a, gfx942, gfx950 (MFMA, wave64); gfx1100, gfx1101, gfx1102 (RDNA3 WMMA, wave32); gfx1200, gfx1201 (RDNA4 WMMA, wave32))
// NVVM: error: mfma=32 is not available on the nvvm target (its matrix instruction has M = 16)
func.func @d128(%q: memref<?x8x?x128xf16>, %k: memref<?x2x?x128xf16>, %v: memref<?x2x?x128xf16>, %o: memref<?x8x?x128xf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x128xf16>, memref<?x2x?x128xf16>, memref<?x2x?x128xf16>) outs(%o : memref<?x8x?x128xf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b">}
  return
}

// -----

// M32-D: error: 'fmha.attention' op head dims D=64, Dv=32 are not supported with the 32x32x8 matrix instruction (D a multiple of 16, Dv of 64)
func.func @dv32(%q: memref<?x8x?x64xf16>, %k: memref<?x2x?x64xf16>, %v: memref<?x2x?x32xf16>, %o: memref<?x8x?x32xf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xf16>, memref<?x2x?x64xf16>, memref<?x2x?x32xf16>) outs(%o : memref<?x8x?x32xf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b">}
  return
}
