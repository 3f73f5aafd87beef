// RUN: fmha-opt %s --fmha-vector-to-llvm=index-bitwidth=32 | FileCheck %s
// RUN: fmha-opt %s --fmha-vector-to-llvm | FileCheck %s --check-prefix=WIDE
// RUN: not fmha-opt %s --fmha-vector-to-llvm=index-bitwidth=16 2>&1 | FileCheck %s --check-prefix=BAD

// A distributed tile's 16-byte run: one load at the vector's alignment, its
// address computed with the index type's width (i32 here, so the kernel's
// 32-bit lowering meets no 64-bit index); a register vector's extract.
// CHECK-LABEL: gpu.func @run
// CHECK: %[[I:.+]] = builtin.unrealized_conversion_cast %{{.+}} : index to i32
// CHECK: llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i32) -> !llvm.ptr, f16
// CHECK: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CHECK: llvm.extractelement
// WIDE-LABEL: gpu.func @run
// WIDE: llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f16
// WIDE: llvm.load %{{.+}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// BAD: fmha-vector-to-llvm: index-bitwidth must be 32 or 64, got 16
gpu.module @kernels {
  gpu.func @run(%m: memref<?x64xf16>, %i: index, %out: memref<1xf16>) kernel {
    %c0 = arith.constant 0 : index
    %v = vector.load %m[%i, %c0] : memref<?x64xf16>, vector<8xf16>
    %e = vector.extract %v[3] : f16 from vector<8xf16>
    memref.store %e, %out[%c0] : memref<1xf16>
    gpu.return
  }
}
