// RUN: fmha-opt %s --fmha-distribute-tiles="target=nvvm chip=sm_90a" -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s --fmha-distribute-tiles="target=nvvm chip=sm_80" -split-input-file 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not fmha-opt %s --fmha-stage-kv="target=nvvm chip=sm_90a swizzle=128" -split-input-file 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not fmha-opt %s --fmha-stage-kv="target=nvvm chip=sm_90a swizzle=64" -split-input-file 2>&1 | FileCheck %s --check-prefix=SWIZZLE

// SM80: error: 'vector.contract' op fmha-distribute-tiles: reads B from a buffer in the 128-byte swizzle, for a warpgroup product: mma=wgmma needs chip sm_90a (wgmma.mma_async), got 'sm_80'
// STAGE: error: 'vector.transfer_read' op fmha-stage-kv: the 128-byte swizzle takes tiles of 16-bit elements, rows a multiple of 8 and columns of 64, not 'vector<16x16xbf16>'
// SWIZZLE: error: 'vector.transfer_read' op fmha-stage-kv: swizzle must be 0 or 128, got 64

#s = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#a = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#bt = #fmha.layout<16x64, register = [[0, 1], [0, 8], [0, 16], [0, 32], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[0, 0], [0, 0]]>

// A product whose B is in the 128-byte swizzle is a warpgroup product: the
// chip must have them (SM80 above; sm_90a here passes this one).
gpu.module @kernels {
  gpu.func @product(%q: memref<64x64xbf16>, %o: memref<64x16xf32>, %n: index) workgroup(%kb : memref<16x64xbf16, 3> {fmha.swizzle = 128 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %zs = arith.constant dense<0.0> : vector<64x16xf32>
    %init = fmha.to_layout %zs to layout(#s) : vector<64x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x64xbf16>, vector<64x64xbf16>
    %qa = fmha.to_layout %qt to layout(#a) : vector<64x64xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x16xf32>) {
      %kt = vector.transfer_read %kb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x64xbf16, 3>, vector<16x64xbf16>
      %k = fmha.to_layout %kt to layout(#bt) : vector<16x64xbf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %k, %acc : vector<64x64xbf16>, vector<16x64xbf16> into vector<64x16xf32>
      %sc = fmha.to_layout %st to layout(#s) : vector<64x16xf32>
      scf.yield %sc : vector<64x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x16xf32>, memref<64x16xf32>
    gpu.return
  }
}

// -----

#s = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8], [16, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[32, 0]]>
#a = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32], [16, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[32, 0]]>
#bt = #fmha.layout<16x64, register = [[0, 1], [0, 8], [0, 16], [0, 32], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[0, 0]]>

// Warps of 32 rows are not a warpgroup's accumulator.
gpu.module @kernels {
  gpu.func @rows32(%q: memref<64x64xbf16>, %o: memref<64x16xf32>, %n: index) workgroup(%kb : memref<16x64xbf16, 3> {fmha.swizzle = 128 : i64}) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %zs = arith.constant dense<0.0> : vector<64x16xf32>
    %init = fmha.to_layout %zs to layout(#s) : vector<64x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x64xbf16>, vector<64x64xbf16>
    %qa = fmha.to_layout %qt to layout(#a) : vector<64x64xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x16xf32>) {
      %kt = vector.transfer_read %kb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x64xbf16, 3>, vector<16x64xbf16>
      %k = fmha.to_layout %kt to layout(#bt) : vector<16x64xbf16>
      // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: a warpgroup product needs C in warps of 16 rows each (four a warpgroup of 64)}}
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %k, %acc : vector<64x64xbf16>, vector<16x64xbf16> into vector<64x16xf32>
      %sc = fmha.to_layout %st to layout(#s) : vector<64x16xf32>
      scf.yield %sc : vector<64x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x16xf32>, memref<64x16xf32>
    gpu.return
  }
}

// -----

#s = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#a = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#bt = #fmha.layout<16x64, register = [[0, 1], [0, 8], [0, 16], [0, 32], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[0, 0], [0, 0]]>

// A from the swizzle, B from anywhere else: not a warpgroup product, and no
// other product reads the swizzle.
gpu.module @kernels {
  gpu.func @a_only(%k: memref<16x64xbf16>, %o: memref<64x16xf32>, %n: index) workgroup(%qb : memref<64x64xbf16, 3> {fmha.swizzle = 128 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %zs = arith.constant dense<0.0> : vector<64x16xf32>
    %init = fmha.to_layout %zs to layout(#s) : vector<64x16xf32>
    %kt = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x64xbf16>, vector<16x64xbf16>
    %kr = fmha.to_layout %kt to layout(#bt) : vector<16x64xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x16xf32>) {
      %qt = vector.transfer_read %qb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x64xbf16, 3>, vector<64x64xbf16>
      %qa = fmha.to_layout %qt to layout(#a) : vector<64x64xbf16>
      // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: reads A from a buffer in the 128-byte swizzle and B from elsewhere; only warpgroup products (B in such a buffer) read it}}
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kr, %acc : vector<64x64xbf16>, vector<16x64xbf16> into vector<64x16xf32>
      %sc = fmha.to_layout %st to layout(#s) : vector<64x16xf32>
      scf.yield %sc : vector<64x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x16xf32>, memref<64x16xf32>
    gpu.return
  }
}

// -----

#a = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>

// A buffer in the swizzle read into registers (its memref type counts its
// elements, not where they lie).
gpu.module @kernels {
  gpu.func @registers(%o: memref<64x64xbf16>) workgroup(%qb : memref<64x64xbf16, 3> {fmha.swizzle = 128 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : bf16
    // expected-error @+1 {{'vector.transfer_read' op fmha-distribute-tiles: reads a buffer in the 128-byte swizzle into registers; only warpgroup products read it}}
    %qt = vector.transfer_read %qb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x64xbf16, 3>, vector<64x64xbf16>
    %qa = fmha.to_layout %qt to layout(#a) : vector<64x64xbf16>
    vector.transfer_write %qa, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x64xbf16>, memref<64x64xbf16>
    gpu.return
  }
}

// -----

#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The staging passes refuse a tile the swizzle cannot hold (16 columns;
// STAGE above), or another swizzle (SWIZZLE). Nothing here is distributed.
gpu.module @kernels {
  gpu.func @narrow(%k: memref<?x16xbf16>, %o: memref<16x16xf32>, %n: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#c) : vector<16x16xf32>
    %one = arith.constant dense<1.0> : vector<16x16xbf16>
    %q = fmha.to_layout %one to layout(#c) : vector<16x16xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %kt = vector.transfer_read %k[%i, %c0], %pad {in_bounds = [false, true]} : memref<?x16xbf16>, vector<16x16xbf16>
      %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xbf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %q, %kb, %acc : vector<16x16xbf16>, vector<16x16xbf16> into vector<16x16xf32>
      %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
      scf.yield %sc : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#pa = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0], [0, 0]]>
#b = #fmha.layout<16x64, register = [[1, 0], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 0], [0, 0], [0, 0]]>
#o = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0], [0, 32]]>

// Warpgroups that split N into 32-column blocks: an N-major B in the
// 128-byte swizzle comes in 64-column blocks.
gpu.module @kernels {
  gpu.func @colsplit_n32(%p: memref<64x16xf32>, %o: memref<64x64xf32>, %n: index) workgroup(%vb : memref<16x64xbf16, 3> {fmha.swizzle = 128 : i64}) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %padf = arith.constant 0.0 : f32
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %init = fmha.to_layout %zero to layout(#o) : vector<64x64xf32>
    %pt = vector.transfer_read %p[%c0, %c0], %padf {in_bounds = [true, true]} : memref<64x16xf32>, vector<64x16xf32>
    %pf = fmha.to_layout %pt to layout(#pa) : vector<64x16xf32>
    %pr = arith.truncf %pf : vector<64x16xf32> to vector<64x16xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x64xf32>) {
      %vt = vector.transfer_read %vb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x64xbf16, 3>, vector<16x64xbf16>
      %v = fmha.to_layout %vt to layout(#b) : vector<16x64xbf16>
      // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: a warpgroup product whose warpgroups split N reads an N-major B in blocks of 64 columns, not 32}}
      %ov = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %pr, %v, %acc : vector<64x16xbf16>, vector<16x64xbf16> into vector<64x64xf32>
      %oc = fmha.to_layout %ov to layout(#o) : vector<64x64xf32>
      scf.yield %oc : vector<64x64xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

#pa = #fmha.layout<64x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [0, 0], [32, 0]]>
#b = #fmha.layout<16x128, register = [[1, 0], [8, 0], [0, 8], [0, 16], [0, 32], [0, 64]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 0], [0, 0], [0, 0]]>
#o = #fmha.layout<64x128, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0], [0, 64]]>

// Warpgroups that split N, with A in registers whose warps hold other rows
// than C's.
gpu.module @kernels {
  gpu.func @colsplit_other_rows(%p: memref<64x16xf32>, %o: memref<64x128xf32>, %n: index) workgroup(%vb : memref<16x128xbf16, 3> {fmha.swizzle = 128 : i64}) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %padf = arith.constant 0.0 : f32
    %zero = arith.constant dense<0.0> : vector<64x128xf32>
    %init = fmha.to_layout %zero to layout(#o) : vector<64x128xf32>
    %pt = vector.transfer_read %p[%c0, %c0], %padf {in_bounds = [true, true]} : memref<64x16xf32>, vector<64x16xf32>
    %pf = fmha.to_layout %pt to layout(#pa) : vector<64x16xf32>
    %pr = arith.truncf %pf : vector<64x16xf32> to vector<64x16xbf16>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<64x128xf32>) {
      %vt = vector.transfer_read %vb[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x128xbf16, 3>, vector<16x128xbf16>
      %v = fmha.to_layout %vt to layout(#b) : vector<16x128xbf16>
      // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: warps must own the same rows of A and C, not}}
      %ov = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %pr, %v, %acc : vector<64x16xbf16>, vector<16x128xbf16> into vector<64x128xf32>
      %oc = fmha.to_layout %ov to layout(#o) : vector<64x128xf32>
      scf.yield %oc : vector<64x128xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<64x128xf32>, memref<64x128xf32>
    gpu.return
  }
}
