// Upstream mlir-opt loads the fmha dialect, passes and pipelines as plugins.
// RUN: mlir-opt-22 --load-dialect-plugin=%fmha_plugin --load-pass-plugin=%fmha_plugin %s | FileCheck %s --check-prefix=PARSE
// RUN: mlir-opt-22 --load-dialect-plugin=%fmha_plugin --load-pass-plugin=%fmha_plugin %s --pass-pipeline="builtin.module(fmha-to-cpu-pipeline{block-m=32 block-n=32})" | FileCheck %s --check-prefix=CPU
// RUN: mlir-opt-22 --load-dialect-plugin=%fmha_plugin --load-pass-plugin=%fmha_plugin %s --pass-pipeline="builtin.module(fmha-to-nvvm-pipeline{chip=sm_90 format=isa})" | FileCheck %s --check-prefix=NVVM

// PARSE: fmha.attention {{.+}} {mask = #fmha.mask<"b:256,0,4">}
// CPU-NOT: fmha.
// CPU: llvm.func @_mlir_ciface_attention(
// NVVM: gpu.binary @fmha_kernels
// NVVM-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
func.func @attention(%q: memref<?x8x?x64xf16>, %k: memref<?x2x?x64xf16>,
                     %v: memref<?x2x?x64xf16>, %o: memref<?x8x?x64xf16>,
                     %lse: memref<?x8x?xf32>) attributes {llvm.emit_c_interface} {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xf16>, memref<?x2x?x64xf16>, memref<?x2x?x64xf16>)
      outs(%o : memref<?x8x?x64xf16>, %lse : memref<?x8x?xf32>)
      {mask = #fmha.mask<"b:256,0,4">}
  return
}
