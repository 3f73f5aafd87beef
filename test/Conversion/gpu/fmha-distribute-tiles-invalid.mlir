// RUN: fmha-opt %s --fmha-distribute-tiles="target=nvvm chip=sm_90a" -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s -split-input-file --fmha-distribute-tiles=target=spirv 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown GPU target 'spirv' (expected nvvm or rocdl)
// RUN: not fmha-opt %s -split-input-file --fmha-distribute-tiles="target=nvvm chip=sm_70" 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: fmha-distribute-tiles: {{.*}}sm_70

// A tile nothing anchors has no layout to be distributed by.
gpu.module @kernels {
  gpu.func @unanchored(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    // expected-error @+1 {{'vector.transfer_read' op fmha-distribute-tiles: reads a tile without a register layout}}
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    vector.transfer_write %t, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#t = #fmha.layout<16x16, register = [[1, 0], [0, 8], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>

// One value, two layouts.
gpu.module @kernels {
  gpu.func @two_layouts(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    %u = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    // expected-error @+1 {{'fmha.to_layout' op fmha-distribute-tiles: a value would be in two layouts}}
    %b = fmha.to_layout %u to layout(#t) : vector<16x16xf32>
    %s = arith.addf %a, %b : vector<16x16xf32>
    vector.transfer_write %s, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#w = #fmha.layout<16x16, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[0, 8]]>
#row = #fmha.layout<16x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[0, 0]]>

// Warps that split a row's columns would need workgroup memory to reduce.
gpu.module @kernels {
  gpu.func @warps_split_columns(%m: memref<16x16xf32>, %r: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#w) : vector<16x16xf32>
    %z = arith.constant dense<0.0> : vector<16xf32>
    %zr = fmha.to_layout %z to layout(#row) : vector<16xf32>
    // expected-error @+1 {{'vector.multi_reduction' op fmha-distribute-tiles: warps split the reduced columns}}
    %s = vector.multi_reduction <add>, %a, %zr [1] : vector<16x16xf32> to vector<16xf32>
    vector.transfer_write %s, %r[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// A in B's layout is no tiling of the instruction's A.
gpu.module @kernels {
  gpu.func @not_a_tiling(%q: memref<16x16xf16>, %s: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %qa = fmha.to_layout %qt to layout(#bt) : vector<16x16xf16>
    %kt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
    %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf16>
    // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: the operands' layouts are not tilings of mma.sync.m16n8k16's A, B and C fragments}}
    %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %zero : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
    %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
    vector.transfer_write %sc, %s[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// The matrix instruction multiplies 16-bit floats.
gpu.module @kernels {
  gpu.func @f32_operands(%q: memref<16x16xf32>, %s: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %qa = fmha.to_layout %qt to layout(#c) : vector<16x16xf32>
    %kt = vector.transfer_read %q[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %kb = fmha.to_layout %kt to layout(#bt) : vector<16x16xf32>
    // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: multiplies 'f32' by 'f32' into 'f32'; the matrix instruction takes f16 or bf16 into f32}}
    %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %qa, %kb, %zero : vector<16x16xf32>, vector<16x16xf32> into vector<16x16xf32>
    %sc = fmha.to_layout %st to layout(#c) : vector<16x16xf32>
    vector.transfer_write %sc, %s[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// An op with no distribution rule.
gpu.module @kernels {
  gpu.func @transpose(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    // expected-error @+1 {{'vector.transpose' op fmha-distribute-tiles: makes a vector tile and is not distributed}}
    %b = vector.transpose %a, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
    vector.transfer_write %b, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// A transposing read has no distribution rule.
gpu.module @kernels {
  gpu.func @transposing_read(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    // expected-error @+1 {{'vector.transfer_read' op fmha-distribute-tiles: a masked or transposing read}}
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    vector.transfer_write %a, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// Only splat constants are built per register.
gpu.module @kernels {
  gpu.func @dense_constant(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    // expected-error @+1 {{'arith.constant' op fmha-distribute-tiles: a constant tile that is not a splat}}
    %k = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : vector<16xf32>
    %kc = vector.shape_cast %k : vector<16xf32> to vector<16x1xf32>
    %kb = vector.broadcast %kc : vector<16x1xf32> to vector<16x16xf32>
    %b = arith.addf %a, %kb : vector<16x16xf32>
    vector.transfer_write %b, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>

// A vector broadcast down the rows takes the column slice of the tile; a
// constant one other than a splat is not built per register.
gpu.module @kernels {
  gpu.func @column_broadcast(%m: memref<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    // expected-error @+1 {{'arith.constant' op fmha-distribute-tiles: a constant tile that is not a splat}}
    %k = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : vector<16xf32>
    %kr = vector.broadcast %k : vector<16xf32> to vector<16x16xf32>
    %d = arith.addf %a, %kr : vector<16x16xf32>
    vector.transfer_write %d, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// An asynchronous copy takes 4, 8 or 16 bytes a thread: a layout of one
// f16 a register along the rows gives runs of 2.
gpu.module @kernels {
  gpu.func @narrow_copy(%k: memref<?x16xf16>, %row: index) workgroup(%kb : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'fmha.copy_async' op fmha-distribute-tiles: its layout gives each thread runs of 2 bytes along a row; the copies take 4, 8 or 16}}
    fmha.copy_async %k[%row, %c0] to %kb[%c0, %c0] layout(#fmha.layout<16x16, register = [[1, 0], [2, 0], [4, 0], [8, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 0]], warp = []>) : memref<?x16xf16> to memref<16x24xf16, 3>
    gpu.return
  }
}

// -----

// Runs past the source's columns are zero-filled whole: 12 columns are not
// a whole number of the 8-element (16-byte) runs.
gpu.module @kernels {
  gpu.func @ragged_columns(%k: memref<?x12xf16>, %row: index) workgroup(%kb : memref<16x16xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'fmha.copy_async' op fmha-distribute-tiles: the source's 12 columns are not a whole number of the copies' 8-element runs}}
    fmha.copy_async %k[%row, %c0] to %kb[%c0, %c0] layout(#fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = [[0, 0]]>) : memref<?x12xf16> to memref<16x16xf16, 3>
    gpu.return
  }
}

// -----

#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#col8 = #fmha.layout<1x16, register = [[0, 1], [0, 8]], lane = [[0, 2], [0, 0], [0, 4], [0, 0], [0, 0]], warp = []>

// A column vector whose lanes do not hold the columns the tile's do.
gpu.module @kernels {
  gpu.func @column_mismatch(%m: memref<16x16xf32>, %v: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %t = vector.transfer_read %m[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %a = fmha.to_layout %t to layout(#c) : vector<16x16xf32>
    %r = vector.transfer_read %v[%c0], %pad {in_bounds = [true]} : memref<16xf32>, vector<16xf32>
    // expected-error @+1 {{'fmha.to_layout' op fmha-distribute-tiles: a value would be in two layouts}}
    %rc = fmha.to_layout %r to layout(#col8) : vector<16xf32>
    %kr = vector.broadcast %rc : vector<16xf32> to vector<16x16xf32>
    %d = arith.addf %a, %kr : vector<16x16xf32>
    vector.transfer_write %d, %m[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// An atomic add of a tile no anchor gives a layout.
gpu.module @kernels {
  gpu.func @atomic_no_layout(%acc: memref<16x16xf32>) kernel {
    %z = arith.constant dense<1.0> : vector<16x16xf32>
    %x = arith.addf %z, %z : vector<16x16xf32>
    // expected-error @+1 {{'fmha.atomic_add' op fmha-distribute-tiles: adds a tile without a register layout}}
    fmha.atomic_add %x, %acc : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// A loop carrying a tile whose layout nothing says (here no anchor of the
// product's accumulator): a diagnostic, not a crash.
#at = #fmha.layout<16x16, register = [[1, 0], [0, 8], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
gpu.module @kernels {
  gpu.func @carried_no_layout(%ds: memref<16x16xf16>, %k: memref<16x16xf16>, %o: memref<16x16xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    // expected-error @+1 {{'scf.for' op fmha-distribute-tiles: carries a tile without a register layout}}
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (vector<16x16xf32>) {
      %a = vector.transfer_read %ds[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
      %aa = fmha.to_layout %a to layout(#at) : vector<16x16xf16>
      %kb0 = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kb0 to layout(#b) : vector<16x16xf16>
      %p = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %aa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %p : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// A transposed A read from memory where the product is not a warpgroup
// product (B not in the 128-byte swizzle).
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#at = #fmha.layout<16x16, register = [[1, 0], [0, 8], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>
gpu.module @kernels {
  gpu.func @transposed_a_from_memory(%ds: memref<16x16xf16>, %k: memref<16x16xf16>, %o: memref<16x16xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %init = fmha.to_layout %zero to layout(#c) : vector<16x16xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %a = vector.transfer_read %ds[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
      %aa = fmha.to_layout %a to layout(#at) : vector<16x16xf16>
      %kb0 = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf16>, vector<16x16xf16>
      %kb = fmha.to_layout %kb0 to layout(#b) : vector<16x16xf16>
      // expected-error @+1 {{'vector.contract' op fmha-distribute-tiles: reads A transposed from memory; only warpgroup products do (B in the 128-byte swizzle)}}
      %p = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %aa, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %p : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

// A tile packed in an order it is not held in: its registers are not the
// packed tile's.
#c = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#line = #fmha.layout<16x16, register = [[2, 0], [4, 0], [8, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]], warp = []>
gpu.module @kernels {
  gpu.func @pack_other_layout(%x: memref<16x16xf32>, %acc: memref<8x32xf32>) kernel {
    %c0 = arith.constant 0 : index
    %padf = arith.constant 0.0 : f32
    %t = vector.transfer_read %x[%c0, %c0], %padf {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    %tl = fmha.to_layout %t to layout(#line) : vector<16x16xf32>
    // expected-error @+1 {{'fmha.pack_tile' op fmha-distribute-tiles: packs a tile held in #fmha.layout<16x16, register = [[2, 0], [4, 0], [8, 0]]}}
    %p = fmha.pack_tile %tl {order = #c} : vector<16x16xf32> -> vector<8x32xf32>
    fmha.atomic_add %p, %acc : vector<8x32xf32>, memref<8x32xf32>
    gpu.return
  }
}
