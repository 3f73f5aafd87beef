// RUN: fmha-opt %s --fmha-stage-kv="target=nvvm chip=sm_90a swizzle=128" --fmha-stage-q="target=nvvm chip=sm_90a swizzle=128" -split-input-file | FileCheck %s --check-prefix=STAGE
// RUN: fmha-opt %s --fmha-stage-kv="target=nvvm chip=sm_90a swizzle=128" --fmha-stage-q="target=nvvm chip=sm_90a swizzle=128" --fmha-distribute-tiles="target=nvvm chip=sm_90a" -canonicalize -cse -split-input-file | FileCheck %s

// A 64-row q tile over four warps of 16 rows (one warpgroup), D = 64,
// 16-key K and V tiles. With swizzle=128 the staging passes give Q, K and V
// unpadded workgroup buffers in the 128-byte swizzle (fmha.swizzle on the
// attribution).
// STAGE-LABEL: gpu.func @warpgroup
// STAGE-SAME: workgroup(%[[KB:.+]] : memref<16x64xbf16, 3> {fmha.swizzle = 128 : i64}, %[[VB:.+]] : memref<16x64xbf16, 3> {fmha.swizzle = 128 : i64}, %[[QB:.+]] : memref<64x64xbf16, 3> {fmha.swizzle = 128 : i64})

// The copies put each 16-byte chunk j of a 128-byte row r at chunk j ^ (r %
// 8) (the element offset as a row and column of the buffer's type); after
// their wait, the fence that makes them visible to the warpgroup products.
// CHECK-LABEL: gpu.func @warpgroup
// CHECK: %[[J:.+]] = arith.andi %{{.+}}, %c7 : index
// CHECK: %[[R:.+]] = arith.andi %{{.+}}, %c7 : index
// CHECK: arith.xori %[[J]], %[[R]] : index
// CHECK: nvgpu.device_async_copy %{{.+}} to memref<64x64xbf16, 3>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy {{.+}} to memref<16x64xbf16, 3>
// CHECK: nvgpu.device_async_copy {{.+}} to memref<16x64xbf16, 3>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// S = Q K^T: four k steps of m64n16k16, A (Q) and B (K, K-major) by
// descriptor (bits 62-63: the 128-byte swizzle; 8-row atoms 1024 bytes
// apart), the warpgroup's 64 rows of Q 64 x 128 bytes in; the first step
// without the zero accumulator.
// CHECK: %[[GROUP:.+]] = arith.divsi %{{.+}}, %c4 : index
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[KP:.+]] = memref.extract_aligned_pointer_as_index %[[KB:.+]] : memref<16x64xbf16, 3> -> index
// CHECK: %[[QP:.+]] = memref.extract_aligned_pointer_as_index %[[QB:.+]] : memref<64x64xbf16, 3> -> index
// CHECK-NEXT: %[[QROWS:.+]] = arith.muli %[[GROUP]], %c8192 : index
// CHECK-NEXT: arith.addi %[[QP]], %[[QROWS]] : index
// CHECK: nvvm.wgmma.mma_async %{{.+}}, %{{.+}}, %{{.+}}, <m = 64, n = 16, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async %{{.+}}, %{{.+}}, %{{.+}}, <m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT: llvm.extractvalue
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-8: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// O += P V: P from registers (its A fragments, packed as four i32), V by
// descriptor, N-major (the 64-column blocks 16 x 128 bytes apart).
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: memref.extract_aligned_pointer_as_index %[[VB:.+]] : memref<16x64xbf16, 3> -> index
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.+}}, 1, 1, 1;"
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
#q = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#bt = #fmha.layout<16x64, register = [[0, 1], [0, 8], [0, 16], [0, 32], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[0, 0], [0, 0]]>
#s = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#b = #fmha.layout<16x64, register = [[1, 0], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 0], [0, 0]]>
#o = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
gpu.module @kernels {
  gpu.func @warpgroup(%q: memref<64x64xbf16>, %k: memref<?x64xbf16>, %v: memref<?x64xbf16>, %o: memref<64x64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %zs = arith.constant dense<0.0> : vector<64x16xf32>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %init = fmha.to_layout %zero to layout(#o) : vector<64x64xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x64xbf16>, vector<64x64xbf16>
    %qa = fmha.to_layout %qt to layout(#q) : vector<64x64xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x64xf32>) {
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x64xbf16>, vector<16x64xbf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x64xbf16>
      %vt = vector.transfer_read %v[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x64xbf16>, vector<16x64xbf16>
      %vb = fmha.to_layout %vt to layout(#b) : vector<16x64xbf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %zs : vector<64x64xbf16>, vector<16x64xbf16> into vector<64x16xf32>
      %sc = fmha.to_layout %st to layout(#s) : vector<64x16xf32>
      %p = arith.truncf %sc : vector<64x16xf32> to vector<64x16xbf16>
      %ov = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %p, %vb, %acc : vector<64x16xbf16>, vector<16x64xbf16> into vector<64x64xf32>
      %oc = fmha.to_layout %ov to layout(#o) : vector<64x64xf32>
      scf.yield %oc : vector<64x64xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// Two warpgroups that split C's columns (the dQ part of 128-key dK/dV
// tiles: 64 rows, 8 warps): warpgroup g computes columns [64 g, 64 g + 64)
// of O += P V, m64n64k16, its B the 64-column block g of the staged V tile
// (16 x 128 bytes along), A (P) the same rows' registers in both.
// CHECK-LABEL: gpu.func @colsplit
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[BLK:.+]] = arith.divsi %{{.+}}, %c64 : index
// CHECK-NEXT: %[[VP:.+]] = memref.extract_aligned_pointer_as_index %{{.+}} : memref<16x128xbf16, 3> -> index
// CHECK-NEXT: %[[OFF:.+]] = arith.muli %[[BLK]], %c2048 : index
// CHECK-NEXT: arith.addi %[[VP]], %[[OFF]] : index
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.+}}, 1, 1, 1;"
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
#pa = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0], [0, 0]]>
#b = #fmha.layout<16x128, register = [[1, 0], [8, 0], [0, 8], [0, 16], [0, 32], [0, 64]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 0], [0, 0], [0, 0]]>
#o = #fmha.layout<64x128, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0], [0, 64]]>
gpu.module @kernels {
  gpu.func @colsplit(%p: memref<64x?xf32>, %v: memref<?x128xbf16>, %o: memref<64x128xf32>, %n: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %padf = arith.constant 0.0 : f32
    %zero = arith.constant dense<0.0> : vector<64x128xf32>
    %init = fmha.to_layout %zero to layout(#o) : vector<64x128xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x128xf32>) {
      %pt = vector.transfer_read %p[%c0, %i], %padf {in_bounds = [true, false]} : memref<64x?xf32>, vector<64x16xf32>
      %pf = fmha.to_layout %pt to layout(#pa) : vector<64x16xf32>
      %pr = arith.truncf %pf : vector<64x16xf32> to vector<64x16xbf16>
      %vt = vector.transfer_read %v[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x128xbf16>, vector<16x128xbf16>
      %vb = fmha.to_layout %vt to layout(#b) : vector<16x128xbf16>
      %ov = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %pr, %vb, %acc : vector<64x16xbf16>, vector<16x128xbf16> into vector<64x128xf32>
      %oc = fmha.to_layout %ov to layout(#o) : vector<64x128xf32>
      scf.yield %oc : vector<64x128xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x128xf32>, memref<64x128xf32>
    gpu.return
  }
}
