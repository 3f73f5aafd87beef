// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90 block-m=64 block-n=64" -canonicalize -cse | FileCheck %s

// The host launches one workgroup of 4 warps per (q tile, q head, batch) on
// the operands as strided memrefs (the strides and offset the type knows
// stay static: here the identity layout's row stride 64 and offset 0; the
// others are run-time values, fmha-lower-to-gpu-strided.mlir); rows of q,
// k, v and o must be 16-byte aligned (fmha.operand_align).
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @attention(
// CHECK-DAG: %[[B:.+]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[SQ:.+]] = memref.dim %arg0, %c2
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK-DAG: %[[Q:.+]] = memref.cast %arg0 : memref<?x8x?x64xbf16> to memref<?x8x?x64xbf16, strided<[?, ?, 64, 1]>>
// CHECK-DAG: %[[NQ:.+]] = arith.ceildivsi %[[SQ]], %c64
// CHECK: gpu.launch_func @fmha_kernels::@attention_kernel blocks in (%[[NQ]], %c8, %[[B]]) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c36864_i32 args(%[[Q]] : memref<?x8x?x64xbf16, strided<[?, ?, 64, 1]>>, %{{.+}} : memref<?x2x?x64xbf16, strided<[?, ?, 64, 1]>>, %{{.+}} : memref<?x2x?x64xbf16, strided<[?, ?, 64, 1]>>, %{{.+}} : memref<?x8x?x64xbf16, strided<[?, ?, 64, 1]>>, %{{.+}} : memref<?x8x?xf32, strided<[?, ?, 1]>>, %[[B]] : index, %[[SQ]] : index, %[[SK]] : index) {fmha.operand_align = array<i64: 16, 16, 16, 16, 0, 0, 0, 0>}

// The kernel: (q tile, head, batch) from the block ids, GQA 8:2 reads kv head
// h / 4; K and V tiles go through two-stage padded workgroup buffers
// (2 x 64 x (64 + 8) each, 36864 bytes) filled by asynchronous copies one
// tile ahead; the sink loop then the window loop carry m, l (2 row slots)
// and the O accumulators (8 n-tiles x 4) in registers.
// CHECK: gpu.module @fmha_kernels
// CHECK: gpu.func @attention_kernel(%[[AQ:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, 64, 1]>>, %[[AK:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, 64, 1]>>, %[[AV:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, 64, 1]>>, %[[AO:[^:]+]]: memref<?x8x?x64xbf16, strided<[?, ?, 64, 1]>>, %[[AL:[^:]+]]: memref<?x8x?xf32, strided<[?, ?, 1]>>, %{{[^:]+}}: index, %[[GSQ:[^:]+]]: index, %[[GSK:[^:]+]]: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// Each operand is read through a rank-1 view of its buffer, its offset and
// strides taken from its descriptor.
// CHECK: %{{.+}}, %[[QOFF:.+]], %{{.+}}:4, %[[QSTR:.+]]:4 = memref.extract_strided_metadata %[[AQ]]
// CHECK: %[[GQ:.+]] = memref.reinterpret_cast %[[AQ]] to offset: [0], sizes: [%{{.+}}], strides: [1] : {{.+}} to memref<?xbf16>
// CHECK: %{{.+}}, %[[KOFF:.+]], %{{.+}}:4, %[[KSTR:.+]]:4 = memref.extract_strided_metadata %[[AK]]
// CHECK: %[[GK:.+]] = memref.reinterpret_cast %[[AK]] to offset: [0]
// CHECK: %[[GV:.+]] = memref.reinterpret_cast %[[AV]] to offset: [0]
// CHECK: %[[GO:.+]] = memref.reinterpret_cast %[[AO]] to offset: [0]
// CHECK: %[[GL:.+]] = memref.reinterpret_cast %[[AL]] to offset: [0]{{.+}} to memref<?xf32>
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[KB:.+]] = memref.view %[[SMEM]][%c0][] {{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VB:.+]] = memref.view %[[SMEM]][%c18432][] {{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK-DAG: gpu.block_id x
// CHECK-DAG: %[[H:.+]] = gpu.block_id y
// CHECK-DAG: %[[BZ:.+]] = gpu.block_id z
// CHECK-DAG: %[[HK:.+]] = arith.divsi %[[H]], %c4
// K's rows of (batch, kv head): b stride_b + h stride_h (the offset is the
// type's 0).
// CHECK-DAG: %[[KB0:.+]] = arith.muli %[[BZ]], %[[KSTR]]#0
// CHECK-DAG: %[[KH:.+]] = arith.muli %[[HK]], %[[KSTR]]#1
// CHECK-DAG: arith.addi %[[KB0]], %[[KH]]
// Q fragments are loaded once, before the kv loops.
// CHECK: vector.load %[[GQ]]{{.+}} {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// Prologue: the loop's first tile into buffer 0.
// Rows of K are the type's static row stride (64) apart.
// CHECK: arith.muli %{{.+}}, %c64
// CHECK: nvgpu.device_async_copy %[[GK]][%{{.+}}], %[[KB]][%c0, %{{.+}}, %{{.+}}], 8 {bypassL1}
// CHECK: nvgpu.device_async_copy %[[GV]][%{{.+}}], %[[VB]][%c0, %{{.+}}, %{{.+}}], 8 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: %[[SINK:.+]]:36 = scf.for %[[KT:.+]] = {{.+}} iter_args(
// Prefetch tile kt + 1 into the other buffer, wait for tile kt.
// CHECK:   %[[BUF:.+]] = arith.remsi %{{.+}}, %c2
// CHECK:   %[[NEXT:.+]] = arith.subi %c1, %[[BUF]]
// CHECK:   nvgpu.device_async_copy %[[GK]][%{{.+}}], %[[KB]][%[[NEXT]], %{{.+}}, %{{.+}}]
// CHECK:   %[[GROUP:.+]] = nvgpu.device_async_create_group
// CHECK:   nvgpu.device_async_wait %[[GROUP]] {numGroups = 1 : i32}
// CHECK:   gpu.barrier
// CHECK:   %[[KTILE:.+]] = memref.subview %[[KB]][%[[BUF]], 0, 0] [1, 64, 72] [1, 1, 1]
// CHECK:   %[[VTILE:.+]] = memref.subview %[[VB]][%[[BUF]], 0, 0] [1, 64, 72] [1, 1, 1]
// CHECK:   nvgpu.ldmatrix %[[KTILE]]{{.+}} {numTiles = 4 : i32, transpose = false}
// CHECK:   nvvm.mma.sync {{.+}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.+}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK:   scf.if
// CHECK:   } else {
// CHECK:     arith.select
// CHECK:   gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32
// CHECK:   llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:   nvgpu.ldmatrix %[[VTILE]]{{.+}} {numTiles = 4 : i32, transpose = true}
// CHECK:   nvvm.mma.sync
// CHECK:   gpu.barrier
// CHECK: } {fmha.kv_loop = "sink"}
// Drain the last prefetch before the window loop reuses the buffers.
// CHECK: nvgpu.device_async_wait %{{.+}} {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK: %[[WIN:.+]]:36 = scf.for {{.+}} iter_args(%{{.+}} = %[[SINK]]#0
// CHECK: } {fmha.kv_loop = "window"}
// O goes out in pairs of adjacent columns (one 4-byte store each).
// CHECK: vector.store {{.+}}, %[[GO]][{{.+}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: memref.store {{.+}}, %[[GL]]
// CHECK: gpu.return
func.func @attention(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>, %v: memref<?x2x?x64xbf16>, %o: memref<?x8x?x64xbf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>) outs(%o : memref<?x8x?x64xbf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b:256,0,4">}
  return
}
