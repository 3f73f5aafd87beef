// The ROCDL pipeline down to AMDGPU ISA for each supported chip: MFMA
// instructions, no scratch, no spills, registers within the chip's 512, and
// kernel metadata that matches the launch the runtime makes (256 threads of 4
// wave64 waves; 28 8-byte kernel arguments of ABI gpu-flat-v1).
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 format=isa" -split-input-file | FileCheck %s --check-prefixes=CHECK,F16,BF16
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx950 format=isa" -split-input-file | FileCheck %s --check-prefixes=CHECK,F16,BF16
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx90a format=isa" -split-input-file | FileCheck %s --check-prefixes=CHECK,F16,BF16-90A
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 format=bin" -split-input-file | FileCheck %s --check-prefix=HSACO
// RUN: not fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx1100" -split-input-file 2>&1 | FileCheck %s --check-prefix=RDNA

// CHECK: gpu.binary @fmha_kernels
// F16-SAME: v_mfma_f32_16x16x16{{_?}}f16
// CHECK-SAME: .amdhsa_private_segment_fixed_size 0\0A
// CHECK-SAME: .kernarg_segment_size: 224\0A
// CHECK-SAME: .max_flat_workgroup_size: 256\0A
// CHECK-SAME: .sgpr_spill_count: 0\0A
// CHECK-SAME: .vgpr_count: {{([0-9]|[1-9][0-9]|[1-4][0-9][0-9]|50[0-9]|51[0-2])}}\0A
// CHECK-SAME: .vgpr_spill_count: 0\0A
// CHECK-SAME: .wavefront_size: 64\0A
// HSACO: gpu.binary @fmha_kernels [#gpu.object<#rocdl.target<O = 3, chip = "gfx942">, bin = "\7FELF
// RDNA: chip 'gfx1100' (RDNA, wave32 WMMA) is not supported by the rocdl kernel yet
func.func @f16(%q: memref<?x8x?x128xf16>, %k: memref<?x2x?x128xf16>, %v: memref<?x2x?x128xf16>, %o: memref<?x8x?x128xf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x128xf16>, memref<?x2x?x128xf16>, memref<?x2x?x128xf16>) outs(%o : memref<?x8x?x128xf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b:256,0,4">}
  return
}

// -----

// CHECK: gpu.binary @fmha_kernels
// BF16-SAME: v_mfma_f32_16x16x16_bf16
// BF16-90A-SAME: v_mfma_f32_16x16x16bf16_1k
// CHECK-SAME: .amdhsa_private_segment_fixed_size 0\0A
// CHECK-SAME: .kernarg_segment_size: 224\0A
// CHECK-SAME: .vgpr_spill_count: 0\0A
func.func @bf16(%q: memref<?x4x?x64xbf16>, %o: memref<?x4x?x64xbf16>, %lse: memref<?x4x?xf32>) {
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>) outs(%o : memref<?x4x?x64xbf16>, %lse : memref<?x4x?xf32>) {mask = #fmha.mask<"t">, softcap = 30.0 : f32}
  return
}
