// RUN: fmha-opt %s --fmha-register-order-workspace | FileCheck %s

// Adds of one workspace from two layouts: no one register order serves
// both, so the workspace stays row-major (and the pass changes nothing).
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#line = #fmha.layout<16x16, register = [[2, 0], [4, 0], [8, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]], warp = []>
// CHECK-LABEL: func @two_orders
// CHECK: memref.alloc() {fmha.workspace = "dq_accum"} : memref<1x1x16x16xf32>
// CHECK-NOT: fmha.pack_tile
// CHECK: fmha.atomic_add %{{.+}} : tensor<16x16xf32, #{{.+}}>, memref<16x16xf32, strided<[16, 1]>>
// CHECK: fmha.atomic_add %{{.+}} : tensor<16x16xf32, #{{.+}}>, memref<16x16xf32, strided<[16, 1]>>
func.func @two_orders(%x: tensor<16x16xf32, #c>, %y: tensor<16x16xf32, #line>) {
  %w = memref.alloc() {fmha.workspace = "dq_accum"} : memref<1x1x16x16xf32>
  %v = memref.subview %w[0, 0, 0, 0] [1, 1, 16, 16] [1, 1, 1, 1] : memref<1x1x16x16xf32> to memref<16x16xf32, strided<[16, 1]>>
  fmha.atomic_add %x, %v : tensor<16x16xf32, #c>, memref<16x16xf32, strided<[16, 1]>>
  fmha.atomic_add %y, %v : tensor<16x16xf32, #line>, memref<16x16xf32, strided<[16, 1]>>
  return
}
