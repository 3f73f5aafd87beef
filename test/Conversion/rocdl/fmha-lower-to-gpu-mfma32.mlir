// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942 mfma=32 warp-rows=32 block-m=64 block-n=64" -canonicalize -cse | FileCheck %s

// MFMA 32x32x8 (mfma=32): 2 wave64 waves of 32 rows (128 threads); each lane
// holds 16 C elements in 16 rows, shared with the 32 lanes of its half-wave,
// so a row max takes five xor shuffles; P goes through workgroup memory.
// CHECK: gpu.launch_func @fmha_kernels::@attention_kernel blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c128, %c1, %c1)
// CHECK: gpu.func @attention_kernel({{.+}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: %[[PB:.+]] = memref.view {{.+}} to memref<2x32x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[PT:.+]] = memref.subview %[[PB]]
// CHECK: scf.for
// CHECK:   gpu.barrier
// CHECK:   vector.load {{.+}} {alignment = 8 : i64} : memref<64x136xbf16, strided<[136, 1]>, #gpu.address_space<workgroup>>, vector<4xbf16>
// CHECK:   amdgpu.mfma 32x32x8 {{.+}} : vector<4xbf16>, vector<4xbf16>, vector<16xf32>
// CHECK-NOT: amdgpu.mfma 16x16x16
// CHECK:   gpu.shuffle  xor %{{.+}}, %c1_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c2_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c4_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c8_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c16_i32, %c64_i32
// CHECK:   memref.store %{{.+}}, %[[PT]]
// CHECK:   gpu.barrier
// CHECK:   vector.load %[[PT]]
// CHECK:   amdgpu.mfma 32x32x8
// CHECK: } {fmha.kv_loop = "window"}
func.func @attention(%q: memref<?x8x?x128xbf16>, %k: memref<?x2x?x128xbf16>, %v: memref<?x2x?x128xbf16>, %o: memref<?x8x?x128xbf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x128xbf16>, memref<?x2x?x128xbf16>, memref<?x2x?x128xbf16>) outs(%o : memref<?x8x?x128xbf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b">}
  return
}
