// RUN: fmha-opt %s --fmha-stage-q="target=nvvm chip=sm_90a" -split-input-file -verify-diagnostics | FileCheck %s

#a = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// Q, read before the loops only to be the A operand of their products, is
// copied once into a workgroup buffer (16 x 24 f16: rows padded by 16
// bytes) in the copy layout (8 f16 = 16 bytes a lane), then the wait and a
// barrier; each product (one in each of two loops: the sinks' and the
// window's) reads the buffer right before it, in Q's layout. K, read in the
// loops, is left to fmha-stage-kv.
// CHECK: #[[COPY:layout[0-9]*]] = #fmha.layout<16x16, register = {{\[\[}}0, 1], [0, 2], [0, 4]], lane = {{\[\[}}0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>
// CHECK-LABEL: gpu.func @stage_q
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x16xf16>, %[[K:[^:]+]]: memref<?x16xf16>
// CHECK-SAME: workgroup(%[[QB:.+]] : memref<16x24xf16, 3>)
// CHECK: fmha.copy_async %[[Q]][%{{[^,]+}}, %{{[^]]+}}] to %[[QB]][%[[Z:[^,]+]], %[[Z]]] layout(#[[COPY]]) : memref<?x16xf16> to memref<16x24xf16, 3>
// CHECK-NEXT: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: vector.transfer_read %[[Q]]
// CHECK: scf.for
// CHECK: vector.transfer_read %[[K]]
// CHECK: %[[QS:.+]] = vector.transfer_read %[[QB]][%{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
// CHECK-NEXT: %[[QA:.+]] = fmha.to_layout %[[QS]] to layout(#{{.+}})
// CHECK-NEXT: vector.contract {{.+}} %[[QA]],
// CHECK: scf.for
// CHECK: %[[QS2:.+]] = vector.transfer_read %[[QB]]
// CHECK-NEXT: %[[QA2:.+]] = fmha.to_layout %[[QS2]]
// CHECK-NEXT: vector.contract {{.+}} %[[QA2]],
// CHECK-NOT: vector.transfer_read %[[Q]]
gpu.module @kernels {
  gpu.func @stage_q(%q: memref<?x16xf16>, %k: memref<?x16xf16>, %o: memref<16x16xf32>, %r: index, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#c) : vector<16x16xf32>
    %qt = vector.transfer_read %q[%r, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#a) : vector<16x16xf16>
    %s1 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
      scf.yield %sc : vector<16x16xf32>
    }
    %s2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %s1) -> (vector<16x16xf32>) {
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
      scf.yield %sc : vector<16x16xf32>
    }
    vector.transfer_write %s2, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#a = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The backward's K with atomic dQ: read before the q loop to be the A of
// S^T = K Q^T and the B of dQ += dS K, in two layouts. One copy; each
// product reads the buffer back in its own layout.
// CHECK-LABEL: gpu.func @stage_a_and_b
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<16x24xf16, 3>)
// CHECK: fmha.copy_async
// CHECK-NOT: fmha.copy_async
// CHECK: scf.for
// CHECK: %[[KA:.+]] = vector.transfer_read %[[KB]]
// CHECK-NEXT: %[[KAA:.+]] = fmha.to_layout %[[KA]] to layout(#[[$A:.+]]) :
// CHECK-NEXT: vector.contract {{.+}} %[[KAA]],
// CHECK: %[[KR:.+]] = vector.transfer_read %[[KB]]
// CHECK-NEXT: %[[KBB:.+]] = fmha.to_layout %[[KR]] to layout(#[[$B:.+]]) :
// CHECK-NEXT: vector.contract {{.+}}, %[[KBB]],
gpu.module @kernels {
  gpu.func @stage_a_and_b(%k: memref<?x16xf16>, %q: memref<?x16xf16>, %o: memref<16x16xf32>, %r: index, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#a) : vector<16x16xf32>
    %kt = vector.transfer_read %k[%r, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
    %ka = fmha.to_layout %kt to layout(#a) : vector<16x16xf16>
    %kb = fmha.to_layout %kt to layout(#b) : vector<16x16xf16>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %qt = vector.transfer_read %q[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %qb = fmha.to_layout %qt to layout(#bt) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %ka, %qb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %sh = arith.truncf %st : vector<16x16xf32> to vector<16x16xf16>
      %sa = fmha.to_layout %sh to layout(#a) : vector<16x16xf16>
      %dq = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %sa, %kb, %st : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %dq : vector<16x16xf32>
    }
    vector.transfer_write %s, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#a = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// Left alone: a tile with a use other than the loops' products (here a
// product outside any loop), and a tile read inside the loop of its
// products (no register is held across the loop).
// CHECK-LABEL: gpu.func @not_staged
// CHECK-NOT: workgroup(
// CHECK-NOT: fmha.copy_async
// CHECK: gpu.return
gpu.module @kernels {
  gpu.func @not_staged(%q: memref<16x16xf16>, %k: memref<?x16xf16>, %o: memref<16x16xf32>, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#a) : vector<16x16xf16>
    %k0 = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
    %kb0 = fmha.to_layout %k0 to layout(#bt) : vector<16x16xf16>
    %first = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb0, %zero : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %first) -> (vector<16x16xf32>) {
      %qi = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
      %qai = fmha.to_layout %qi to layout(#a) : vector<16x16xf16>
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %st2 = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qai, %kb, %st : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %st2 : vector<16x16xf32>
    }
    vector.transfer_write %s, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#a = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The copies are shared among the threads of the block: its size is needed.
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op fmha-stage-q: needs a 1-D known_block_size of whole warps (32 lanes) to share the copies among the threads}}
  gpu.func @no_block_size(%q: memref<16x16xf16>, %k: memref<16x16xf16>, %o: memref<16x16xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#a) : vector<16x16xf16>
    %kt = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (vector<16x16xf32>) {
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kt, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %st : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}
