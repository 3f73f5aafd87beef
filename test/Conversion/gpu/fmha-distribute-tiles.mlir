// RUN: fmha-opt %s --fmha-distribute-tiles="target=nvvm chip=sm_90a" -split-input-file | FileCheck %s

// The vector tiles of a kernel become the registers of each thread, by the
// layouts of mma.sync m16n8k16 over one warp (--fmha-assign-layouts gives
// these): C (s, acc, o) and A (q, p) of a 16x16 tile, B^T (k), the row
// slice (m, l, lse).
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#row = #fmha.layout<16x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = []>

// A read whose rows may run past the operand: one read of each pair of
// registers adjacent in a row, at the lane's coordinate (row g = lane / 4,
// column 2 (lane % 4), plus the register's constant part), masked along the
// rows as the tile's read was; the write likewise.
// CHECK-LABEL: gpu.func @read_write
// CHECK-SAME: (%[[SRC:.+]]: memref<?x16xf16>, %[[DST:.+]]: memref<?x16xf16>)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %{{.+}} : index
// CHECK-COUNT-4: vector.transfer_read %[[SRC]][%{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [false, true]} : memref<?x16xf16>, vector<1x2xf16>
// CHECK-NOT: vector.transfer_read
// CHECK-COUNT-4: vector.transfer_write %{{.+}}, %[[DST]][%{{.+}}, %{{.+}}] {in_bounds = [false, true]} : vector<1x2xf16>, memref<?x16xf16>
// CHECK-NOT: vector<16x16xf16>
gpu.module @kernels {
  gpu.func @read_write(%src: memref<?x16xf16>, %dst: memref<?x16xf16>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %t = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [false, true]} : memref<?x16xf16>, vector<16x16xf16>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf16>
    vector.transfer_write %a, %dst[%c0, %c0] {in_bounds = [false, true]} : vector<16x16xf16>, memref<?x16xf16>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// S = Q K^T: the instruction over the fragments, two 8-column halves of S,
// each one product of K = 16; A's 4 pairs and B's 2 pairs are slices of the
// operands' registers, C's 4 values elements of the accumulator's.
// CHECK-LABEL: gpu.func @contract
// CHECK-NOT: vector.contract
// CHECK-DAG: vector.extract_strided_slice %{{.+}} {offsets = [6], sizes = [2], strides = [1]} : vector<8xf16> to vector<2xf16>
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: %[[D:.+]] = vector.from_elements %{{.+}} : vector<8xf32>
// CHECK: vector.transfer_write %{{.+}} : vector<1x2xf32>, memref<16x16xf32>
gpu.module @kernels {
  gpu.func @contract(%q: memref<16x16xf16>, %k: memref<16x16xf16>, %s: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#c) : vector<16x16xf16>
    %kt = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
    %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %zero : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
    %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
    vector.transfer_write %sc, %s[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#row = #fmha.layout<16x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = []>

// A row maximum: the 4 registers of each of the lane's two rows, then the
// lanes that split the columns (xor 1, xor 2), then the running maximum;
// the row broadcast back over the tile takes, for each of the 8 registers,
// the register of its row (bit 1 of the register index: row + 8). The row
// vector is written by lane 4g alone (its replicas, lanes 4g + 1..3, not).
// CHECK-LABEL: gpu.func @reduce_broadcast
// CHECK-COUNT-6: arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor
// CHECK: %[[M:.+]] = vector.from_elements %{{.+}}, %{{.+}} : vector<2xf32>
// CHECK: vector.shuffle %[[M]], %[[M]] [0, 0, 1, 1, 0, 0, 1, 1] : vector<2xf32>, vector<2xf32>
// CHECK: %[[LANE3:.+]] = arith.andi %[[LANE:.+]], %{{.+}} : index
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %[[LANE3]], %{{.+}} : index
// CHECK: scf.if %[[ONE]]
// CHECK-COUNT-2: vector.transfer_write %{{.+}} : vector<1xf32>, memref<16xf32>
gpu.module @kernels {
  gpu.func @reduce_broadcast(%s: memref<16x16xf32>, %m0: memref<16xf32>, %out: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %st = vector.transfer_read %s[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
    %mt = vector.transfer_read %m0[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    %mr = fmha.to_layout %mt to layout(#row) : vector<16xf32>
    %m = vector.multi_reduction <maximumf>, %sc, %mr [1] : vector<16x16xf32> to vector<16xf32>
    %mc = vector.shape_cast %m : vector<16xf32> to vector<16x1xf32>
    %mb = vector.broadcast %mc : vector<16x1xf32> to vector<16x16xf32>
    %d = arith.subf %sc, %mb : vector<16x16xf32>
    vector.transfer_write %d, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    vector.transfer_write %m, %m0[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#col = #fmha.layout<1x16, register = [[0, 1], [0, 8]], lane = [[0, 2], [0, 4], [0, 0], [0, 0], [0, 0]], warp = []>

// A column vector (the backward's lse along the columns of S^T): read at
// the lane's columns 2 (lane % 4), + 1, + 8 and + 9, one element a read (a
// rank-1 tile's rows in memory start at any multiple of a sequence length:
// no wider access, so the kernel takes any Sq); broadcast down the rows,
// each of the tile's 8 registers takes the slice register of its column
// (bits 0 and 2 of the register index; bit 1 is a row).
// CHECK-LABEL: gpu.func @column_broadcast
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK-COUNT-4: vector.transfer_read %{{.+}} {in_bounds = [true]} : memref<16xf32>, vector<1xf32>
// CHECK-NOT: vector.transfer_read %{{.+}} : memref<16xf32>
// CHECK: %[[L:.+]] = vector.insert_strided_slice %{{.+}}, %{{.+}} {offsets = [3], strides = [1]} : vector<1xf32> into vector<4xf32>
// CHECK: %[[B:.+]] = vector.shuffle %[[L]], %[[L]] [0, 1, 0, 1, 2, 3, 2, 3] : vector<4xf32>, vector<4xf32>
// CHECK: arith.subf %{{.+}}, %[[B]] : vector<8xf32>
gpu.module @kernels {
  gpu.func @column_broadcast(%s: memref<16x16xf32>, %lse: memref<16xf32>, %out: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %st = vector.transfer_read %s[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
    %lt = vector.transfer_read %lse[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    %lc = fmha.to_layout %lt to layout(#col) : vector<16xf32>
    %lb = vector.broadcast %lc : vector<16xf32> to vector<16x16xf32>
    %d = arith.subf %sc, %lb : vector<16x16xf32>
    vector.transfer_write %d, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The mask's indices are built in the layout of their use: a step of rows
// is the rows of the row slice (lane / 4 and lane / 4 + 8), broadcast over
// the columns as any row vector (registers 2, 3, 6, 7 take row + 8), a step
// of columns each register's column; the comparison and the select are
// register by register, the -inf a splat of the registers.
// CHECK-LABEL: gpu.func @mask
// CHECK: %[[SLICE:.+]] = vector.from_elements %{{.+}}, %{{.+}} : vector<2xindex>
// CHECK: %[[ROWS:.+]] = vector.shuffle %[[SLICE]], %[[SLICE]] [0, 0, 1, 1, 0, 0, 1, 1]
// CHECK: %[[COLS:.+]] = vector.from_elements %{{.+}} : vector<8xindex>
// CHECK: %[[VIS:.+]] = arith.cmpi sle, %[[COLS]], %[[ROWS]] : vector<8xindex>
// CHECK: %[[NEG:.+]] = arith.constant dense<0xFF800000> : vector<8xf32>
// CHECK: arith.select %[[VIS]], %{{.+}}, %[[NEG]] : vector<8xi1>, vector<8xf32>
gpu.module @kernels {
  gpu.func @mask(%s: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %st = vector.transfer_read %s[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
    %step = vector.step : vector<16xindex>
    %rc = vector.shape_cast %step : vector<16xindex> to vector<16x1xindex>
    %rows = vector.broadcast %rc : vector<16x1xindex> to vector<16x16xindex>
    %cols = vector.broadcast %step : vector<16xindex> to vector<16x16xindex>
    %vis = arith.cmpi sle, %cols, %rows : vector<16x16xindex>
    %neg = arith.constant dense<0xFF800000> : vector<16x16xf32>
    %masked = arith.select %vis, %sc, %neg : vector<16x16xi1>, vector<16x16xf32>
    vector.transfer_write %masked, %s[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#a = #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#b = #fmha.layout<16x8, register = [[8, 0], [0, 1]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// A conversion where only the registers' order differs is a permutation;
// loops carry the registers.
// CHECK-LABEL: gpu.func @convert_loop
// CHECK: %[[P:.+]] = vector.shuffle %[[X:.+]], %[[X]] [0, 2, 1, 3] : vector<4xf32>, vector<4xf32>
// CHECK: %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[P]]) -> (vector<4xf32>)
// CHECK: %[[N:.+]] = arith.addf %[[ACC]], %[[ACC]] : vector<4xf32>
// CHECK: scf.yield %[[N]] : vector<4xf32>
gpu.module @kernels {
  gpu.func @convert_loop(%s: memref<16x8xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %s[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x8xf32>, vector<16x8xf32>
    %x = fmha.to_layout %t to layout(#a) : vector<16x8xf32>
    %y = fmha.to_layout %x to layout(#b) : vector<16x8xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %y) -> (vector<16x8xf32>) {
      %next = arith.addf %acc, %acc : vector<16x8xf32>
      scf.yield %next : vector<16x8xf32>
    }
    vector.transfer_write %r, %s[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// A B operand read in the loop iteration whose products use it is read
// there, k step by k step (the two pairs of each of the two column blocks,
// then the products that take them): no thread holds more than a step of
// the tile. Q, read before the loop, stays in registers.
// CHECK-LABEL: gpu.func @folded_b
// CHECK-SAME: (%[[Q:[^:]+]]: memref<16x16xf16>, %[[K:[^:]+]]: memref<?x16xf16>
// CHECK-COUNT-4: vector.transfer_read %[[Q]]
// CHECK: scf.for
// CHECK-NOT: vector.transfer_read %[[Q]]
// CHECK-COUNT-4: vector.transfer_read %[[K]]{{.*}} : memref<?x16xf16>, vector<1x2xf16>
// CHECK-NEXT: vector.shape_cast
// CHECK-NEXT: vector.insert_strided_slice
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: vector.transfer_read
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @folded_b(%q: memref<16x16xf16>, %k: memref<?x16xf16>, %s: memref<16x16xf32>, %n: index) kernel {
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
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
      scf.yield %sc : vector<16x16xf32>
    }
    vector.transfer_write %r, %s[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// B operands read from workgroup memory in fragments' lane order are read
// by the target's matrix load, k step by k step (the pairs of every column
// block a step needs, once), a group of register pairs that differ by
// register masks at a time: k (B^T, 16 keys x 32 columns, two k steps of
// two pairs in each of two column blocks) by ldmatrix.x4 a step, v (B, 16
// keys x 16 columns: one k step) by one ldmatrix.x4 with .trans. Lane 8 i
// + r addresses row r of matrix i (rows lane % 8, then the register masks'
// moves: for v, rows lane % 16, columns 8 (lane / 16)).
#a32 = #fmha.layout<16x32, register = [[0, 1], [8, 0], [0, 8], [0, 16]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt32 = #fmha.layout<16x32, register = [[0, 1], [0, 8], [0, 16], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#b16 = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
// CHECK-LABEL: gpu.func @matrix_loads
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<16x40xf16, 3>, %[[VB:.+]] : memref<16x24xf16, 3>)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %{{.+}} : index
// CHECK: scf.for
// CHECK-NOT: vector.transfer_read %[[KB]]
// CHECK: arith.remsi %[[LANE]], %{{.+}} : index
// CHECK: nvgpu.ldmatrix %[[KB]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<16x40xf16, 3> -> vector<4x2xf16>
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: nvgpu.ldmatrix %[[KB]][{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: %[[R16:.+]] = arith.remsi %[[LANE]], %{{.+}} : index
// CHECK: nvgpu.ldmatrix %[[VB]][%[[R16]], %{{.+}}] {numTiles = 4 : i32, transpose = true} : memref<16x24xf16, 3> -> vector<4x2xf16>
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: vector.transfer_read
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @matrix_loads(%q: memref<16x32xf16>, %o: memref<16x16xf32>, %n: index)
      workgroup(%kb : memref<16x40xf16, 3>, %vb : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#c16) : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x32xf16>, vector<16x32xf16>
    %qa = fmha.to_layout %qt to layout(#a32) : vector<16x32xf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %kt = vector.transfer_read %kb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x40xf16, 3>, vector<16x32xf16>
      %kl = fmha.to_layout %kt to layout(#bt32) : vector<16x32xf16>
      %s = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kl, %zero : vector<16x32xf16>, vector<16x32xf16> into vector<16x16xf32>
      %sc = fmha.to_layout %s to layout(#c16) : vector<16x16xf32>
      %p = arith.truncf %sc : vector<16x16xf32> to vector<16x16xf16>
      %vt = vector.transfer_read %vb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      %vl = fmha.to_layout %vt to layout(#b16) : vector<16x16xf16>
      %pv = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %p, %vl, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %oc = fmha.to_layout %pv to layout(#c16) : vector<16x16xf32>
      scf.yield %oc : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// An asynchronous tile copy: each thread its run of 8 f16 (16 bytes) at
// the copy layout's coordinate (row lane / 2, column 8 (lane % 2)), as
// cp.async (nvgpu.device_async_copy around L1) whose source size is 0 for a
// row past the source (its address stays the tile's first row); the warp
// that holds a replica (warp basis 0) copies nothing. Every thread commits
// its group; the wait is cp.async.wait_group.
#copy = #fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = [[0, 0]]>
// CHECK-LABEL: gpu.func @copies
// CHECK-SAME: (%[[K:[^:]+]]: memref<?x16xf16>, %[[ROW:[^:]+]]: index) workgroup(%[[KB:.+]] : memref<2x16x24xf16, 3>)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %{{.+}} : index
// CHECK: %[[WARP:.+]] = arith.divui %[[TID]], %{{.+}} : index
// CHECK: %[[ONE:.+]] = arith.constant 1 : index
// CHECK: %[[ROWS:.+]] = memref.dim %[[K]], %{{.+}} : memref<?x16xf16>
// CHECK: %[[W0:.+]] = arith.andi %[[WARP]], %{{.+}} : index
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[W0]], %{{.+}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: %[[R:.+]] = arith.divsi %[[LANE]], %{{.+}} : index
// CHECK: %[[H:.+]] = arith.remsi %[[LANE]], %{{.+}} : index
// CHECK: %[[C:.+]] = arith.muli %[[H]], %{{.+}} : index
// CHECK: %[[AT:.+]] = arith.addi %[[ROW]], %[[R]] : index
// CHECK: %[[VALID:.+]] = arith.cmpi ult, %[[AT]], %[[ROWS]] : index
// CHECK: %[[SRC:.+]] = arith.select %[[VALID]], %[[AT]], %[[ROW]] : index
// CHECK: %[[N:.+]] = arith.select %[[VALID]], %{{.+}}, %{{.+}} : index
// CHECK: nvgpu.device_async_copy %[[K]][%[[SRC]], %[[C]]], %[[KB]][%[[ONE]], %[[R]], %[[C]]], 8, %[[N]] {bypassL1} : memref<?x16xf16> to memref<2x16x24xf16, 3>
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
gpu.module @kernels {
  gpu.func @copies(%k: memref<?x16xf16>, %row: index)
      workgroup(%kb : memref<2x16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    fmha.copy_async %k[%row, %c0] to %kb[%c1, %c0, %c0] layout(#copy) : memref<?x16xf16> to memref<2x16x24xf16, 3>
    fmha.copy_wait pending(0)
    gpu.return
  }
}

// -----

// A tile wider than its source (a head dim of 8 padded to 16 columns): a
// run past the source's columns is zero-filled as one past its rows (source
// size 0, its address the tile's first row and column).
#copy = #fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = [[0, 0]]>
// CHECK-LABEL: gpu.func @padded_columns
// CHECK-SAME: (%[[K:[^:]+]]: memref<?x8xf16>, %[[ROW:[^:]+]]: index)
// CHECK: %[[ROWS:.+]] = memref.dim %[[K]], %{{.+}} : memref<?x8xf16>
// CHECK: %[[COLS:.+]] = memref.dim %[[K]], %{{.+}} : memref<?x8xf16>
// CHECK: scf.if
// CHECK: %[[C:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[AT:.+]] = arith.addi %[[ROW]], %{{.+}} : index
// CHECK: %[[INROWS:.+]] = arith.cmpi ult, %[[AT]], %[[ROWS]] : index
// CHECK: %[[INCOLS:.+]] = arith.cmpi ult, %[[C]], %[[COLS]] : index
// CHECK: %[[VALID:.+]] = arith.andi %[[INROWS]], %[[INCOLS]] : i1
// CHECK: %[[SRC:.+]] = arith.select %[[VALID]], %[[AT]], %[[ROW]] : index
// CHECK: %[[SRCC:.+]] = arith.select %[[VALID]], %[[C]], %{{.+}} : index
// CHECK: %[[N:.+]] = arith.select %[[VALID]], %{{.+}}, %{{.+}} : index
// CHECK: nvgpu.device_async_copy %[[K]][%[[SRC]], %[[SRCC]]], %{{.+}}, 8, %[[N]] {bypassL1} : memref<?x8xf16> to memref<16x16xf16, 3>
gpu.module @kernels {
  gpu.func @padded_columns(%k: memref<?x8xf16>, %row: index)
      workgroup(%kb : memref<16x16xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    fmha.copy_async %k[%row, %c0] to %kb[%c0, %c0] layout(#copy) : memref<?x8xf16> to memref<16x16xf16, 3>
    fmha.copy_wait pending(0)
    gpu.return
  }
}

// -----

#a = #fmha.layout<32x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0]]>
#c = #fmha.layout<32x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0]]>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[0, 0]]>

// An A operand read from workgroup memory where its products use it (Q
// through fmha-stage-q) is read by the matrix load too, a k step at a time:
// ldmatrix.x4 without .trans, lane l addressing row l % 16 of its warp's
// rows (warp 16 + l % 16) at column 8 (l / 16); both products of the k
// step take the one A fragment.
// CHECK-LABEL: gpu.func @folded_a
// CHECK-SAME: workgroup(%[[QB:.+]] : memref<32x24xf16, 3>, %[[KB:.+]] : memref<16x24xf16, 3>)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %{{.+}} : index
// CHECK: %[[WARP:.+]] = arith.divui %[[TID]], %{{.+}} : index
// CHECK: scf.for
// CHECK: %[[R16:.+]] = arith.remsi %[[LANE]], %[[C16:.+]] : index
// CHECK: %[[W16:.+]] = arith.muli %[[WARP]], %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.addi %[[R16]], %[[W16]] : index
// CHECK: %[[HALF:.+]] = arith.divsi %[[LANE]], %{{.+}} : index
// CHECK: %[[COL:.+]] = arith.muli %[[HALF]], %{{.+}} : index
// CHECK: %[[A:.+]] = nvgpu.ldmatrix %[[QB]][%[[ROW]], %[[COL]]] {numTiles = 4 : i32, transpose = false} : memref<32x24xf16, 3> -> vector<4x2xf16>
// CHECK: nvgpu.ldmatrix %[[KB]]
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @folded_a(%k: memref<?x16xf16>, %s: memref<32x16xf32>, %n: index) workgroup(%qb : memref<32x24xf16, 3>, %kb : memref<16x24xf16, 3>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<32x16xf32>
    %init = fmha.to_layout %zero to layout(#c) : vector<32x16xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<32x16xf32>) {
      %kt = vector.transfer_read %kb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      %kbt = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
      %qt = vector.transfer_read %qb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x24xf16, 3>, vector<32x16xf16>
      %qa = fmha.to_layout %qt to layout(#a) : vector<32x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kbt, %acc : vector<32x16xf16>, vector<16x16xf16> into vector<32x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<32x16xf32>
      scf.yield %sc : vector<32x16xf32>
    }
    vector.transfer_write %r, %s[%c0, %c0] {in_bounds = [true, true]} : vector<32x16xf32>, memref<32x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#t = #fmha.layout<16x16, register = [[1, 0], [0, 8], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>

// A conversion between layouts whose lanes differ (AMD's P: the C fragment
// is not the same lane's A fragment) goes through a workgroup buffer of the
// tile: a barrier (its last readers are done), each thread's runs of the
// source layout stored at their (row, col) (two adjacent columns a run), a
// barrier, the target layout's registers loaded (one a run: its registers
// are not adjacent along columns).
// CHECK-LABEL: gpu.func @lanes_differ
// CHECK-SAME: workgroup(%[[BUF:.+]] : memref<16x16xf32, 3>)
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.store %{{.+}}, %[[BUF]][%{{.+}}, %{{.+}}] : memref<16x16xf32, 3>, vector<2xf32>
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: vector.load %[[BUF]][%{{.+}}, %{{.+}}] : memref<16x16xf32, 3>, vector<1xf32>
// CHECK-NOT: vector.load
gpu.module @kernels {
  gpu.func @lanes_differ(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    %b = fmha.to_layout %a to layout(#t) : vector<16x16xf32>
    vector.transfer_write %b, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#at = #fmha.layout<16x16, register = [[1, 0], [0, 8], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>

// The backward's atomic dQ += dS K: dS^T (a C tile) converts to the
// transpose of A's layout through workgroup memory (its lanes differ), the
// contraction reads it transposed (lhs map (k, i)) as the A fragments of
// the same registers, and the product's 8 registers a thread are each added
// into the buffer atomically at the C layout's (row, col).
// CHECK-LABEL: gpu.func @atomic_dq
// CHECK-SAME: (%{{.+}}: memref<16x16xf32>, %{{.+}}: memref<16x16xf16>, %[[ACC:[^:]+]]: memref<16x16xf32, strided<[64, 1], offset: ?>>)
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.store %{{.+}} : memref<16x16xf32, 3>, vector<2xf32>
// CHECK: gpu.barrier
// CHECK-COUNT-8: vector.load %{{.+}} : memref<16x16xf32, 3>, vector<1xf32>
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK-COUNT-8: memref.atomic_rmw addf %{{.+}}, %[[ACC]][%{{.+}}, %{{.+}}] : (f32, memref<16x16xf32, strided<[64, 1], offset: ?>>) -> f32
// CHECK-NOT: memref.atomic_rmw
// CHECK-NOT: fmha.atomic_add
gpu.module @kernels {
  gpu.func @atomic_dq(%ds: memref<16x16xf32>, %k: memref<16x16xf16>, %acc: memref<16x16xf32, strided<[64, 1], offset: ?>>) kernel {
    %c0 = arith.constant 0 : index
    %padf = arith.constant 0.0 : f32
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %dst = vector.transfer_read %ds[%c0, %c0], %padf {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %dsc = fmha.to_layout %dst to layout(#c) : vector<16x16xf32>
    %dsa = fmha.to_layout %dsc to layout(#at) : vector<16x16xf32>
    %dsh = arith.truncf %dsa : vector<16x16xf32> to vector<16x16xf16>
    %kt = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %kb = fmha.to_layout %kt to layout(#b) : vector<16x16xf16>
    %p = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %dsh, %kb, %zero : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
    %pc = fmha.to_layout %p to layout(#c) : vector<16x16xf32>
    fmha.atomic_add %pc, %acc : vector<16x16xf32>, memref<16x16xf32, strided<[64, 1], offset: ?>>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#p = #fmha.layout<8x32, register = [[1, 0], [2, 0], [4, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]], warp = []>

// The backward's dQ accumulator in register order: a C tile packed (the
// same 8 registers, no workgroup memory, no barrier) and added a register
// at a time at row r, column lane of the 8 x 32 buffer; read back a
// register a row along the lanes and unpacked into the C layout it is
// stored from (each thread's two consecutive columns one 2-element store).
// CHECK-LABEL: gpu.func @register_order
// CHECK-SAME: (%[[X:[^:]+]]: memref<16x16xf32>, %[[ACC:[^:]+]]: memref<8x32xf32, strided<[32, 1], offset: ?>>, %[[O:[^:]+]]: memref<16x16xf32>)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]]
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: vector.transfer_read %[[X]]{{.+}} : memref<16x16xf32>, vector<1x2xf32>
// CHECK: memref.atomic_rmw addf %{{.+}}, %[[ACC]][%c0{{.*}}, %[[LANE]]] : (f32, memref<8x32xf32, strided<[32, 1], offset: ?>>) -> f32
// CHECK: memref.atomic_rmw addf %{{.+}}, %[[ACC]][%c1{{.*}}, %[[LANE]]]
// CHECK-COUNT-6: memref.atomic_rmw addf
// CHECK-NOT: memref.atomic_rmw
// CHECK: vector.transfer_read %[[ACC]][%c0{{.*}}, %[[LANE]]]{{.+}} : memref<8x32xf32, strided<[32, 1], offset: ?>>, vector<1x1xf32>
// CHECK-COUNT-7: vector.transfer_read %[[ACC]][%c{{[1-7]}}{{.*}}, %[[LANE]]]{{.+}} : memref<8x32xf32, strided<[32, 1], offset: ?>>, vector<1x1xf32>
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: vector.transfer_write %{{.+}}, %[[O]]{{.+}} : vector<1x2xf32>, memref<16x16xf32>
// CHECK-NOT: fmha.pack_tile
// CHECK-NOT: fmha.unpack_tile
gpu.module @kernels {
  gpu.func @register_order(%x: memref<16x16xf32>, %acc: memref<8x32xf32, strided<[32, 1], offset: ?>>, %o: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %padf = arith.constant 0.0 : f32
    %t = vector.transfer_read %x[%c0, %c0], %padf {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %tc = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    %p = fmha.pack_tile %tc {order = #c} : vector<16x16xf32> -> vector<8x32xf32>
    %pa = fmha.to_layout %p to layout(#p) : vector<8x32xf32>
    fmha.atomic_add %pa, %acc : vector<8x32xf32>, memref<8x32xf32, strided<[32, 1], offset: ?>>
    %r = vector.transfer_read %acc[%c0, %c0], %padf {in_bounds = [true, true]} : memref<8x32xf32, strided<[32, 1], offset: ?>>, vector<8x32xf32>
    %ra = fmha.to_layout %r to layout(#p) : vector<8x32xf32>
    %u = fmha.unpack_tile %ra {order = #c} : vector<8x32xf32> -> vector<16x16xf32>
    %uc = fmha.to_layout %u to layout(#c) : vector<16x16xf32>
    vector.transfer_write %uc, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}
