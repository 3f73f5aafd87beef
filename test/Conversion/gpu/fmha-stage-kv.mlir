// RUN: fmha-opt %s --fmha-stage-kv="target=nvvm chip=sm_90a" -split-input-file -verify-diagnostics | FileCheck %s

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>

// The two B operands of the iteration (k as B^T, v as B) go through
// workgroup buffers (rows padded by 16 bytes: 16 x 24 f16): after a barrier
// (the last iteration's reads of the buffers are done) each is copied
// asynchronously from where it was read in the copy layout (8 f16 = 16
// bytes a lane, 2 lanes a row, 16 rows: the 32 lanes once), then the wait
// and a barrier, then the products read the buffers. Q, read outside the
// loop, and the A operand stay as they are.
// CHECK: #[[COPY:layout[0-9]*]] = #fmha.layout<16x16, register = {{\[\[}}0, 1], [0, 2], [0, 4]], lane = {{\[\[}}0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>
// CHECK-LABEL: gpu.func @stage
// CHECK-SAME: (%{{[^:]+}}: memref<16x16xf16>, %[[K:[^:]+]]: memref<?x16xf16>, %[[V:[^:]+]]: memref<?x16xf16>
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<16x24xf16, 3>, %[[VB:.+]] : memref<16x24xf16, 3>)
// CHECK: %[[Q:.+]] = vector.transfer_read %{{.+}} : memref<16x16xf16>, vector<16x16xf16>
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK-NOT: vector.transfer_read
// CHECK: gpu.barrier
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0 : index
// CHECK-NEXT: fmha.copy_async %[[K]][%[[I]], %{{.+}}] to %[[KB]][%[[Z]], %[[Z]]] layout(#[[COPY]]) : memref<?x16xf16> to memref<16x24xf16, 3>
// CHECK-NEXT: fmha.copy_async %[[V]][%[[I]], %{{.+}}] to %[[VB]][%[[Z]], %[[Z]]] layout(#[[COPY]])
// CHECK-NEXT: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[KS:.+]] = vector.transfer_read %[[KB]][%[[Z]], %[[Z]]]
// CHECK-NEXT: fmha.to_layout %[[KS]] to layout(#{{.+}})
// CHECK-NEXT: %[[VS:.+]] = vector.transfer_read %[[VB]][%[[Z]], %[[Z]]]
// CHECK-NEXT: fmha.to_layout %[[VS]] to layout(#{{.+}})
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @stage(%q: memref<16x16xf16>, %k: memref<?x16xf16>, %v: memref<?x16xf16>, %o: memref<16x16xf32>, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#c) : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#c) : vector<16x16xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
      %vt = vector.transfer_read %v[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %vb = fmha.to_layout %vt to layout(#b) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %zero : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
      %p = arith.truncf %sc : vector<16x16xf32> to vector<16x16xf16>
      %ov = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %p, %vb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %oc = fmha.to_layout %ov to layout(#c) : vector<16x16xf32>
      scf.yield %oc : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>

// The backward's dK/dV loop reads a q tile as the B operand of two
// products in two layouts (transposed for S^T = K Q^T, as it is for
// dK += dS^T Q): one copy into one buffer, then one read of the buffer for
// each layout, each followed by its anchor (the distribution folds each
// into its products: ldmatrix without and with .trans).
// CHECK-LABEL: gpu.func @two_layouts
// CHECK-SAME: workgroup(%[[QB:[^ ]+]] : memref<16x24xf16, 3>)
// CHECK: scf.for
// CHECK: fmha.copy_async %{{.+}} to %[[QB]]
// CHECK-NOT: fmha.copy_async
// CHECK: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[Q1:.+]] = vector.transfer_read %[[QB]]
// CHECK-NEXT: fmha.to_layout %[[Q1]] to layout(#[[BT:[a-z0-9]+]])
// CHECK-NEXT: %[[Q2:.+]] = vector.transfer_read %[[QB]]
// CHECK-NEXT: fmha.to_layout %[[Q2]] to layout(#[[B:[a-z0-9]+]])
// CHECK-NOT: vector.transfer_read %[[QB]]
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @two_layouts(%k: memref<16x16xf16>, %q: memref<?x16xf16>, %o: memref<16x16xf32>, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#c) : vector<16x16xf32>
    %kt = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %ka = fmha.to_layout %kt to layout(#c) : vector<16x16xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %qt = vector.transfer_read %q[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %qbt = fmha.to_layout %qt to layout(#bt) : vector<16x16xf16>
      %qb = fmha.to_layout %qt to layout(#b) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %ka, %qbt, %zero : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
      %ds = arith.truncf %sc : vector<16x16xf32> to vector<16x16xf16>
      %dk = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %ds, %qb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %dc = fmha.to_layout %dk to layout(#c) : vector<16x16xf32>
      scf.yield %dc : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The copies are shared among the threads of the block: its size is needed.
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op fmha-stage-kv: needs a 1-D known_block_size of whole warps (32 lanes) to share the copies among the threads}}
  gpu.func @no_block_size(%q: memref<16x16xf16>, %k: memref<?x16xf16>, %o: memref<16x16xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#c) : vector<16x16xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (vector<16x16xf32>) {
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %st : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x32, register = [[0, 1], [8, 0], [0, 8], [0, 16]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<32x16, register = [[0, 1], [0, 8], [8, 0], [16, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// A kv tile over two pages of a paged cache (pages of 16 keys, a 32-key
// tile): each page's slice read and inserted at its rows into zeros. One
// buffer of the whole tile, one copy a page into its rows (each in the
// layout of its 16 x 16 slice), then one read of the buffer; the slices'
// reads and the inserts are gone.
// CHECK: #[[COPY16:layout[0-9]*]] = #fmha.layout<16x16, register = {{\[\[}}0, 1], [0, 2], [0, 4]], lane = {{\[\[}}0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>
// CHECK-LABEL: gpu.func @pages
// CHECK-SAME: (%{{[^:]+}}: memref<16x16xf16>, %[[K:[^:]+]]: memref<?x16x16xf16>, %[[T:[^:]+]]: memref<?xi32>
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<32x24xf16, 3>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK: %[[P0:.+]] = arith.index_cast
// CHECK: %[[P1:.+]] = arith.index_cast
// CHECK: %[[S0:.+]] = memref.subview %[[K]][%[[P0]], 0, 0]
// CHECK: %[[S1:.+]] = memref.subview %[[K]][%[[P1]], 0, 0]
// CHECK-NOT: vector.transfer_read
// CHECK-NOT: vector.insert_strided_slice
// CHECK: gpu.barrier
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0 : index
// CHECK-NEXT: fmha.copy_async %[[S0]][%{{.+}}, %{{.+}}] to %[[KB]][%[[Z]], %[[Z]]] layout(#[[COPY16]]) : memref<16x16xf16, strided<[16, 1], offset: ?>> to memref<32x24xf16, 3>
// CHECK-NEXT: %[[R16:.+]] = arith.constant 16 : index
// CHECK-NEXT: fmha.copy_async %[[S1]][%{{.+}}, %{{.+}}] to %[[KB]][%[[R16]], %[[Z]]] layout(#[[COPY16]])
// CHECK-NEXT: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[KS:.+]] = vector.transfer_read %[[KB]][%[[Z]], %[[Z]]]{{.*}} : memref<32x24xf16, 3>, vector<32x16xf16>
// CHECK-NEXT: fmha.to_layout %[[KS]] to layout(#{{.+}})
// CHECK-NOT: vector.insert_strided_slice
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @pages(%q: memref<16x16xf16>, %k: memref<?x16x16xf16>, %t: memref<?xi32>, %o: memref<16x32xf32>, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x32xf32>
    %none = arith.constant dense<0.0> : vector<32x16xf16>
    %init = fmha.to_layout %zero to layout(#c) : vector<16x32xf32>
    %qa = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x32xf32>) {
      %j0 = arith.muli %i, %c2 : index
      %j1 = arith.addi %j0, %c1 : index
      %e0 = memref.load %t[%j0] : memref<?xi32>
      %p0 = arith.index_cast %e0 : i32 to index
      %e1 = memref.load %t[%j1] : memref<?xi32>
      %p1 = arith.index_cast %e1 : i32 to index
      %s0 = memref.subview %k[%p0, 0, 0] [1, 16, 16] [1, 1, 1] : memref<?x16x16xf16> to memref<16x16xf16, strided<[16, 1], offset: ?>>
      %k0 = vector.transfer_read %s0[%c0, %c0], %pad {in_bounds = [false, true]} : memref<16x16xf16, strided<[16, 1], offset: ?>>, vector<16x16xf16>
      %s1 = memref.subview %k[%p1, 0, 0] [1, 16, 16] [1, 1, 1] : memref<?x16x16xf16> to memref<16x16xf16, strided<[16, 1], offset: ?>>
      %k1 = vector.transfer_read %s1[%c0, %c0], %pad {in_bounds = [false, true]} : memref<16x16xf16, strided<[16, 1], offset: ?>>, vector<16x16xf16>
      %kt0 = vector.insert_strided_slice %k0, %none {offsets = [0, 0], strides = [1, 1]} : vector<16x16xf16> into vector<32x16xf16>
      %kt = vector.insert_strided_slice %k1, %kt0 {offsets = [16, 0], strides = [1, 1]} : vector<16x16xf16> into vector<32x16xf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<32x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %acc : vector<16x16xf16>, vector<32x16xf16> into vector<16x32xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x32xf32>
      scf.yield %sc : vector<16x32xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x32xf32>, memref<16x32xf32>
    gpu.return
  }
}
