// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx1100 block-n=32" -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,RDNA3
// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx1200 block-n=32" -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,RDNA4

// WMMA 16x16x16 in wave32: 4 waves of 32 lanes (128 threads) for block-m 64.
// RDNA3 lanes hold whole rows of A/B (16 elements: one 32-byte K read per
// k-step); RDNA4 lanes hold half rows (8 elements: two 4-element runs). Rows
// of C are shared by 16 lanes: four xor shuffles of width 32.
// CHECK: gpu.launch_func @fmha_kernels::@attention_kernel blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c128, %c1, %c1)
// CHECK: gpu.func @attention_kernel({{.+}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: %[[PB:.+]] = memref.view {{.+}} to memref<4x16x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[PT:.+]] = memref.subview %[[PB]]
// CHECK: scf.for
// CHECK:   gpu.barrier
// RDNA3:   vector.load {{.+}} {alignment = 16 : i64} : memref<32x72xf16, strided<[72, 1]>, #gpu.address_space<workgroup>>, vector<16xf16>
// RDNA3:   amdgpu.wmma 16x16x16 {{.+}} : vector<16xf16>, vector<16xf16>, vector<8xf32>
// RDNA4:   vector.load {{.+}} {alignment = 8 : i64} : memref<32x72xf16, strided<[72, 1]>, #gpu.address_space<workgroup>>, vector<4xf16>
// RDNA4:   amdgpu.wmma 16x16x16 {{.+}} : vector<8xf16>, vector<8xf16>, vector<8xf32>
// CHECK:   gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c4_i32, %c32_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c8_i32, %c32_i32
// CHECK-NOT: %c16_i32, %c32_i32
// CHECK:   memref.store %{{.+}}, %[[PT]]
// CHECK:   gpu.barrier
// CHECK:   vector.load %[[PT]]
// CHECK:   amdgpu.wmma 16x16x16
// CHECK: } {fmha.kv_loop = "window"}
func.func @attention(%q: memref<?x8x?x64xf16>, %k: memref<?x2x?x64xf16>, %v: memref<?x2x?x64xf16>, %o: memref<?x8x?x64xf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xf16>, memref<?x2x?x64xf16>, memref<?x2x?x64xf16>) outs(%o : memref<?x8x?x64xf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b">}
  return
}
