// The ROCDL pipeline down to AMDGPU ISA for each supported chip: MFMA
// instructions, no scratch, no spills, registers within the chip's 512, and
// kernel metadata that matches the launch the runtime makes (256 threads of 4
// wave64 waves; 56 8-byte kernel arguments: the descriptors of q, k, v, o
// (11 words each: pointers, offset, 4 sizes, 4 strides) and lse (9), then
// B, Sq, Sk).
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 format=isa" -split-input-file | FileCheck %s --check-prefixes=CHECK,F16,BF16
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx950 format=isa" -split-input-file | FileCheck %s --check-prefixes=CHECK,F16,BF16
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx90a format=isa" -split-input-file | FileCheck %s --check-prefixes=CHECK,F16,BF16-90A
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 format=bin" -split-input-file | FileCheck %s --check-prefix=HSACO
// MFMA 32x32x8 (mfma=32, waves of 32 rows) and wave32 WMMA on RDNA4 and RDNA3
// (the pipeline attaches the target without wave64 there; RDNA3 stops at
// head dim 64).
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 mfma=32 warp-rows=32 format=isa" -split-input-file | FileCheck %s --check-prefix=M32
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx1200 block-n=16 format=isa" -split-input-file | FileCheck %s --check-prefix=WMMA
// RUN: not fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx1100 block-n=32 format=isa" -split-input-file 2>&1 | FileCheck %s --check-prefix=RDNA3

// CHECK: gpu.binary @fmha_kernels
// F16-SAME: v_mfma_f32_16x16x16{{_?}}f16
// CHECK-SAME: .amdhsa_private_segment_fixed_size 0\0A
// CHECK-SAME: .kernarg_segment_size: 448\0A
// CHECK-SAME: .max_flat_workgroup_size: 256\0A
// CHECK-SAME: .sgpr_spill_count: 0\0A
// CHECK-SAME: .vgpr_count: {{([0-9]|[1-9][0-9]|[1-4][0-9][0-9]|50[0-9]|51[0-2])}}\0A
// CHECK-SAME: .vgpr_spill_count: 0\0A
// CHECK-SAME: .wavefront_size: 64\0A
// HSACO: gpu.binary @fmha_kernels [#gpu.object<#rocdl.target<O = 3, chip = "gfx942">, bin = "\7FELF
// M32: gpu.binary @fmha_kernels
// M32-SAME: v_mfma_f32_32x32x8_f16
// M32-SAME: .amdhsa_private_segment_fixed_size 0\0A
// M32-SAME: .max_flat_workgroup_size: 128\0A
// M32-SAME: .wavefront_size: 64\0A
// WMMA: gpu.binary @fmha_kernels [#gpu.object<#rocdl.target<O = 3, chip = "gfx1200", flags = {no_wave64}>
// WMMA-SAME: v_wmma_f32_16x16x16_f16
// WMMA-SAME: .amdhsa_private_segment_fixed_size 0\0A
// WMMA-SAME: .max_flat_workgroup_size: 128\0A
// WMMA-SAME: .vgpr_spill_count: 0\0A
// WMMA-SAME: .wavefront_size: 32\0A
// RDNA3: error: 'fmha.attention' op head dims D=128, Dv=128 do not fit the registers of a lane on gfx1100 (at most 64)
func.func @f16(%q: memref<?x8x?x128xf16>, %k: memref<?x2x?x128xf16>, %v: memref<?x2x?x128xf16>, %o: memref<?x8x?x128xf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x128xf16>, memref<?x2x?x128xf16>, memref<?x2x?x128xf16>) outs(%o : memref<?x8x?x128xf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b:256,0,4">}
  return
}

// -----

// CHECK: gpu.binary @fmha_kernels
// BF16-SAME: v_mfma_f32_16x16x16_bf16
// BF16-90A-SAME: v_mfma_f32_16x16x16bf16_1k
// CHECK-SAME: .amdhsa_private_segment_fixed_size 0\0A
// CHECK-SAME: .kernarg_segment_size: 448\0A
// CHECK-SAME: .vgpr_spill_count: 0\0A
// M32: gpu.binary @fmha_kernels
// M32-SAME: v_mfma_f32_32x32x8_bf16
// M32-SAME: .amdhsa_private_segment_fixed_size 0\0A
// WMMA: gpu.binary @fmha_kernels
// WMMA-SAME: v_wmma_f32_16x16x16_bf16
// WMMA-SAME: .amdhsa_private_segment_fixed_size 0\0A
// WMMA-SAME: .wavefront_size: 32\0A
// RDNA3: gpu.binary @fmha_kernels [#gpu.object<#rocdl.target<O = 3, chip = "gfx1100", flags = {no_wave64}>
// RDNA3-SAME: v_wmma_f32_16x16x16_bf16
// RDNA3-SAME: .amdhsa_private_segment_fixed_size 0\0A
// RDNA3-SAME: .wavefront_size: 32\0A
func.func @bf16(%q: memref<?x4x?x64xbf16>, %o: memref<?x4x?x64xbf16>, %lse: memref<?x4x?xf32>) {
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>) outs(%o : memref<?x4x?x64xbf16>, %lse : memref<?x4x?xf32>) {mask = #fmha.mask<"t">, softcap = 30.0 : f32}
  return
}
