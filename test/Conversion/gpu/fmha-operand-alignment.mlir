// RUN: fmha-opt %s --fmha-operand-alignment | FileCheck %s

// Per kernel operand, the bytes of the widest vector access of it or of a
// view of it: q by 16-byte asynchronous copies from a subview, k by 8-byte
// vector loads through a reinterpret_cast, o by 4-byte transfer writes; lse
// only by element (0), the index operand 0. A launch that already names an
// alignment keeps the larger value; a kernel without vector accesses of its
// operands and its launch are left alone.
// CHECK-LABEL: func.func @host
// CHECK: gpu.launch_func @kernels::@attention {{.*}} {fmha.operand_align = array<i64: 16, 8, 4, 0, 0>}
// CHECK: gpu.launch_func @kernels::@attention {{.*}} {fmha.operand_align = array<i64: 16, 16, 4, 0, 0>}
// CHECK: gpu.launch_func @kernels::@scalar
// CHECK-NOT: fmha.operand_align
// CHECK-LABEL: gpu.module @kernels
!Q = memref<?x4x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!L = memref<?x4x?xf32, strided<[?, ?, 1], offset: ?>>
module attributes {gpu.container_module} {
  func.func @host(%q: !Q, %k: memref<?xbf16>, %o: !Q, %lse: !L, %n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@attention blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%q : !Q, %k : memref<?xbf16>, %o : !Q, %lse : !L, %n : index)
    gpu.launch_func @kernels::@attention blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%q : !Q, %k : memref<?xbf16>, %o : !Q, %lse : !L, %n : index) {fmha.operand_align = array<i64: 0, 16, 0, 0, 0>}
    gpu.launch_func @kernels::@scalar blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%k : memref<?xbf16>, %n : index)
    return
  }
  gpu.module @kernels {
    gpu.func @attention(%q: !Q, %k: memref<?xbf16>, %o: !Q, %lse: !L, %i: index) workgroup(%buf : memref<64x64xbf16, 3>) kernel {
      %c0 = arith.constant 0 : index
      %s = memref.subview %q[%i, %i, %i, 0] [1, 1, 64, 64] [1, 1, 1, 1] : !Q to memref<64x64xbf16, strided<[?, 1], offset: ?>>
      %t = nvgpu.device_async_copy %s[%i, %c0], %buf[%i, %c0], 8 : memref<64x64xbf16, strided<[?, 1], offset: ?>> to memref<64x64xbf16, 3>
      %r = memref.reinterpret_cast %k to offset: [%i], sizes: [%i], strides: [1] : memref<?xbf16> to memref<?xbf16, strided<[1], offset: ?>>
      %v = vector.load %r[%c0] : memref<?xbf16, strided<[1], offset: ?>>, vector<4xbf16>
      %w = vector.extract_strided_slice %v {offsets = [0], sizes = [2], strides = [1]} : vector<4xbf16> to vector<2xbf16>
      vector.transfer_write %w, %o[%i, %i, %i, %c0] {in_bounds = [true]} : vector<2xbf16>, !Q
      %x = memref.load %lse[%i, %i, %i] : !L
      memref.store %x, %lse[%i, %i, %c0] : !L
      gpu.return
    }
    gpu.func @scalar(%k: memref<?xbf16>, %i: index) kernel {
      %x = memref.load %k[%i] : memref<?xbf16>
      memref.store %x, %k[%i] : memref<?xbf16>
      gpu.return
    }
  }
}
