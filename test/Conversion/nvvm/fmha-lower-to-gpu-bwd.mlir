// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90 block-m=64 block-n=64" -canonicalize -cse -split-input-file | FileCheck %s

// Atomic mode, GQA 8:2, D = 64, causal (bottom-right), sinks: the host
// allocates dsum [B*Hq*Sq] and the f32 dQ accumulator [B*Hq*Sq*D] and
// launches prep and dq over (q tiles, Hq, B), dkdv over (kv tiles, Hk, B),
// all with 4 warps and one amount of workgroup memory. dkdv takes the split
// step (64 q rows against the 64 keys): K and V tiles (64 x (64 + 8) each),
// two stages of Q and dO (64 x 72 each), the P and dS tiles (64 x 72 each):
// 73728 bytes.
// CHECK-LABEL: func.func @bwd(
// CHECK-DAG: %[[B:.+]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[SQ:.+]] = memref.dim %arg0, %c2
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK-DAG: %[[NQ:.+]] = arith.ceildivsi %[[SQ]], %c64
// CHECK-DAG: %[[NK:.+]] = arith.ceildivsi %[[SK]], %c64
// The workspaces carry their names to the launch manifest.
// CHECK-DAG: %[[DSUM:.+]] = memref.alloc(%{{.+}}) {fmha.workspace = "dsum"} : memref<?xf32>
// CHECK-DAG: %[[ACC:.+]] = memref.alloc(%{{.+}}) {fmha.workspace = "dqacc"} : memref<?xf32>
// CHECK: gpu.launch_func @fmha_kernels::@bwd_prep blocks in (%[[NQ]], %c8, %[[B]]) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c73728_i32 args({{.+}}, %[[DSUM]] : memref<?xf32>, %[[ACC]] : memref<?xf32>, %[[B]] : index, %[[SQ]] : index, %[[SK]] : index)
// CHECK-NEXT: gpu.launch_func @fmha_kernels::@bwd_dkdv blocks in (%[[NK]], %c2, %[[B]]) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c73728_i32
// CHECK-NEXT: gpu.launch_func @fmha_kernels::@bwd_dq blocks in (%[[NQ]], %c8, %[[B]]) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c73728_i32
// CHECK-DAG: memref.dealloc %[[DSUM]]
// CHECK-DAG: memref.dealloc %[[ACC]]

// prep: a warp per row, dsum by butterfly shuffles, the accumulator zeroed.
// CHECK: gpu.func @bwd_prep(
// CHECK: gpu.shuffle xor
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<?xf32>
// dkdv: K and V copied once, then one pipelined loop over the group's heads
// times the q tiles that see the kv tile: S and dP on the warp grid, P and dS
// stored as element pairs, a barrier, then P^T dO and dS^T Q with the
// transposes read by ldmatrix .trans; dS K added atomically.
// Under the right bound, with GQA and at most 32 kv tiles, the kv tiles run
// tile-major, tile 0 (the one the most q tiles see) first: kt = (x + tiles
// (y + 2 z)) / (2 B).
// CHECK: gpu.func @bwd_dkdv(
// CHECK-DAG: %[[NT:.+]] = arith.ceildivsi %arg13, %c64
// CHECK-DAG: %[[FEW:.+]] = arith.cmpi sle, %[[NT]], %c32
// CHECK-DAG: %[[ROWS:.+]] = arith.muli %arg11, %c2
// CHECK-DAG: %[[L0:.+]] = arith.muli %[[NT]], %{{.+}}
// CHECK-DAG: %[[L:.+]] = arith.addi %block_id_x, %[[L0]]
// CHECK-DAG: %[[T:.+]] = arith.divsi %[[L]], %[[ROWS]]
// CHECK-DAG: arith.select %[[FEW]], %[[T]], %block_id_x
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_wait
// CHECK: scf.for
// CHECK: nvvm.mma.sync
// CHECK: vector.store %{{.+}} : memref<64x72xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.+}} transpose = true
// CHECK: memref.atomic_rmw addf
// CHECK: fmha.q_loop = "group"
// dq (atomic mode): the accumulator rounded to bf16.
// CHECK: gpu.func @bwd_dq(
// CHECK-NOT: nvvm.mma.sync
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: gpu.return
func.func @bwd(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>, %v: memref<?x2x?x64xbf16>,
               %o: memref<?x8x?x64xbf16>, %lse: memref<?x8x?xf32>, %do: memref<?x8x?x64xbf16>,
               %dq: memref<?x8x?x64xbf16>, %dk: memref<?x2x?x64xbf16>, %dv: memref<?x2x?x64xbf16>) {
  fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : memref<?x8x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?xf32>, memref<?x8x?x64xbf16>)
      outs(%dq, %dk, %dv : memref<?x8x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>) {mask = #fmha.mask<"b:-1,0,4">}
  return
}

// -----

// Deterministic: no accumulator (0 elements), no atomics; dq recomputes over
// the forward's kv loops (sink, then window) with K/V stages (2 x 64 x 72
// each, 36864 bytes); the split dkdv needs 73728 (P and dS tiles both).
// CHECK-LABEL: func.func @det(
// CHECK: memref.alloc() {fmha.workspace = "dqacc"} : memref<0xf32>
// CHECK: gpu.launch_func @fmha_kernels::@det_prep {{.+}} dynamic_shared_memory_size %c73728_i32
// CHECK: gpu.func @det_dkdv(
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.func @det_dq(
// CHECK: nvvm.mma.sync
// CHECK: fmha.kv_loop = "sink"
// CHECK: fmha.kv_loop = "window"
// CHECK-NOT: memref.atomic_rmw
func.func @det(%q: memref<2x4x100x64xf16>, %k: memref<2x4x90x64xf16>, %v: memref<2x4x90x64xf16>,
               %o: memref<2x4x100x64xf16>, %lse: memref<2x4x100xf32>, %do: memref<2x4x100x64xf16>,
               %dq: memref<2x4x100x64xf16>, %dk: memref<2x4x90x64xf16>, %dv: memref<2x4x90x64xf16>) {
  fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : memref<2x4x100x64xf16>, memref<2x4x90x64xf16>, memref<2x4x90x64xf16>, memref<2x4x100x64xf16>, memref<2x4x100xf32>, memref<2x4x100x64xf16>)
      outs(%dq, %dk, %dv : memref<2x4x100x64xf16>, memref<2x4x90x64xf16>, memref<2x4x90x64xf16>) {mask = #fmha.mask<"t:16,0,4">, deterministic}
  return
}
