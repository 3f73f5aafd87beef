// RUN: fmha-opt %s --fmha-to-cpu-pipeline="block-m=32 block-n=32" | FileCheck %s
// RUN: fmha-opt %s --fmha-to-cpu-pipeline | mlir-translate-22 --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// Everything ends in the LLVM dialect, with the C interface the runtime calls.
// CHECK-NOT: fmha.
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK-LABEL: llvm.func @attention(
// CHECK-LABEL: llvm.func @_mlir_ciface_attention(
// LLVMIR: define void @_mlir_ciface_attention(ptr %0, ptr %1, ptr %2, ptr %3, ptr %4)
func.func @attention(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>,
                     %v: memref<?x2x?x64xbf16>, %o: memref<?x8x?x64xbf16>,
                     %lse: memref<?x8x?xf32>) attributes {llvm.emit_c_interface} {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>, %lse : memref<?x8x?xf32>)
      {mask = #fmha.mask<"b:256,0,4">, softcap = 30.0 : f32}
  return
}
