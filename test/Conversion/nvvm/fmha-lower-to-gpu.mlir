// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90 block-m=64 block-n=64" -canonicalize -cse | FileCheck %s

// The host launches one workgroup of 4 warps per (q tile, q head, batch) on
// flat views of the BHSD buffers.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @attention(
// CHECK-DAG: %[[B:.+]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[SQ:.+]] = memref.dim %arg0, %c2
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK-DAG: %[[Q:.+]] = memref.collapse_shape %arg0 {{\[\[}}0, 1, 2, 3]] : memref<?x8x?x64xbf16> into memref<?xbf16>
// CHECK-DAG: %[[NQ:.+]] = arith.ceildivsi %[[SQ]], %c64
// CHECK: gpu.launch_func @fmha_kernels::@attention_kernel blocks in (%[[NQ]], %c8, %[[B]]) threads in (%c128, %c1, %c1) args(%[[Q]] : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xf32>, %[[B]] : index, %[[SQ]] : index, %[[SK]] : index)

// The kernel: (q tile, head, batch) from the block ids, GQA 8:2 reads kv head
// h / 4; K and V tiles are staged in padded workgroup memory (64 x (64 + 8));
// the sink loop then the window loop carry m, l (2 row slots) and the O
// accumulators (8 n-tiles x 4) in registers.
// CHECK: gpu.module @fmha_kernels
// CHECK: gpu.func @attention_kernel(%[[GQ:[^:]+]]: memref<?xbf16>, %[[GK:[^:]+]]: memref<?xbf16>, %[[GV:[^:]+]]: memref<?xbf16>, %[[GO:[^:]+]]: memref<?xbf16>, %[[GL:[^:]+]]: memref<?xf32>, %{{[^:]+}}: index, %[[GSQ:[^:]+]]: index, %[[GSK:[^:]+]]: index) workgroup(%[[KS:[^ ]+]] : memref<64x72xbf16, #gpu.address_space<workgroup>>, %[[VS:[^ ]+]] : memref<64x72xbf16, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK-DAG: %[[QT:.+]] = gpu.block_id x
// CHECK-DAG: %[[H:.+]] = gpu.block_id y
// CHECK-DAG: gpu.block_id z
// CHECK-DAG: arith.divsi %[[H]], %c4
// Q fragments are loaded once, before the kv loops.
// CHECK: vector.load %[[GQ]]{{.+}} {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK: %[[SINK:.+]]:36 = scf.for {{.+}} iter_args(
// CHECK:   gpu.barrier
// CHECK:   %[[KC:.+]] = vector.load %[[GK]]{{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK:   vector.store %[[KC]], %[[KS]]
// CHECK:   vector.load %[[GV]]{{.+}} {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK:   gpu.barrier
// CHECK:   nvgpu.ldmatrix %[[KS]]{{.+}} {numTiles = 4 : i32, transpose = false}
// CHECK:   nvvm.mma.sync {{.+}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.+}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK:   scf.if
// CHECK:   } else {
// CHECK:     arith.select
// CHECK:   gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32
// CHECK:   math.exp2
// CHECK:   nvgpu.ldmatrix %[[VS]]{{.+}} {numTiles = 4 : i32, transpose = true}
// CHECK:   nvvm.mma.sync
// CHECK: } {fmha.kv_loop = "sink"}
// CHECK: %[[WIN:.+]]:36 = scf.for {{.+}} iter_args(%{{.+}} = %[[SINK]]#0
// CHECK: } {fmha.kv_loop = "window"}
// CHECK: memref.store {{.+}}, %[[GO]]
// CHECK: math.log2
// CHECK: memref.store {{.+}}, %[[GL]]
// CHECK: gpu.return
func.func @attention(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>, %v: memref<?x2x?x64xbf16>, %o: memref<?x8x?x64xbf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>) outs(%o : memref<?x8x?x64xbf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b:256,0,4">}
  return
}
