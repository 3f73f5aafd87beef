// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942 block-m=64 block-n=64" -canonicalize -cse | FileCheck %s

// The same kernel structure on AMD matrix cores: 4 wave64 waves of 16 rows
// (256 threads); one K/V stage (no asynchronous copies); P goes through
// workgroup memory because an MFMA C fragment is not an A fragment of the
// same lane.
// CHECK: gpu.launch_func @fmha_kernels::@attention_kernel blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c{{[0-9]+}}_i32
// CHECK: gpu.func @attention_kernel({{.+}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[KB:.+]] = memref.view %[[SMEM]][%c0][] {{.+}} to memref<1x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VB:.+]] = memref.view %[[SMEM]]{{.+}} to memref<1x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[PB:.+]] = memref.view %[[SMEM]]{{.+}} to memref<4x16x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[PT:.+]] = memref.subview %[[PB]]
// CHECK: scf.for
// CHECK:   vector.load {{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK:   vector.store {{.+}}, %[[KB]]
// CHECK:   gpu.barrier
// CHECK:   vector.load {{.+}} : memref<64x136xbf16, strided<[136, 1]>, #gpu.address_space<workgroup>>, vector<4xbf16>
// CHECK:   amdgpu.mfma 16x16x16 {{.+}} : vector<4xbf16>, vector<4xbf16>, vector<4xf32>
// Row max over the 16 lanes of a quarter-wave.
// CHECK:   gpu.shuffle  xor %{{.+}}, %c1_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c2_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c4_i32, %c64_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c8_i32, %c64_i32
// CHECK:   math.exp2
// P to workgroup memory, back as A fragments.
// CHECK:   memref.store %{{.+}}, %[[PT]]
// CHECK:   gpu.barrier
// CHECK:   vector.load %[[PT]]
// CHECK:   amdgpu.mfma 16x16x16
// CHECK: } {fmha.kv_loop = "window"}
func.func @attention(%q: memref<?x8x?x128xbf16>, %k: memref<?x2x?x128xbf16>, %v: memref<?x2x?x128xbf16>, %o: memref<?x8x?x128xbf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x128xbf16>, memref<?x2x?x128xbf16>, memref<?x2x?x128xbf16>) outs(%o : memref<?x8x?x128xbf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b">}
  return
}
