// RUN: fmha-opt %s --fmha-vectorize-tiles -split-input-file -verify-diagnostics

// The tile ops on buffers (the forward tiled on memrefs) are not the static
// tiles on values the pass takes.
func.func @buffers(%q: memref<64x32xf16>, %k: memref<64x32xf16>, %s: memref<64x64xf32>) {
  // expected-error @+1 {{'fmha.tile_qk' op fmha-vectorize-tiles: takes the tiled attention on tensors (tile ops on values, not buffers)}}
  fmha.tile_qk %q, %k into %s {scale = 1.0 : f32} : memref<64x32xf16>, memref<64x32xf16>, memref<64x64xf32>
  return
}

// -----

// A tile op on values that are not static tiles of the forward.
func.func @not_a_tile(%q: tensor<64x32xf16>, %k: tensor<64x32xf16>, %s: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{'fmha.tile_qk' op fmha-vectorize-tiles: operand #0 is not a static tile (tile with --fmha-tile-attention="static-tiles=1")}}
  %r = fmha.tile_qk %q, %k into %s {scale = 1.0 : f32} : tensor<64x32xf16>, tensor<64x32xf16>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// A tile used by an op outside the tile level.
func.func @escapes(%q: tensor<1x1x?x32xf16>) -> tensor<32x32xf16> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f16
  %n = tensor.dim %q, %c0 : tensor<1x1x?x32xf16>
  %slice = tensor.extract_slice %q[0, 0, 0, 0] [1, 1, %n, 32] [1, 1, 1, 1] : tensor<1x1x?x32xf16> to tensor<?x32xf16>
  %h = arith.subi %c0, %n : index
  %tile = tensor.pad %slice low[0, 0] high[%h, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f16
  } : tensor<?x32xf16> to tensor<32x32xf16>
  // expected-error @+1 {{'func.return' op fmha-vectorize-tiles: uses a tile outside the tile ops}}
  return %tile : tensor<32x32xf16>
}

// -----

// A tile read with strides.
func.func @strided(%q: tensor<1x1x64x32xf16>) -> tensor<16x32xf16> {
  // expected-error @+1 {{'tensor.extract_slice' op fmha-vectorize-tiles: a tile read with non-unit strides}}
  %tile = tensor.extract_slice %q[0, 0, 0, 0] [1, 1, 16, 32] [1, 1, 2, 1] : tensor<1x1x64x32xf16> to tensor<16x32xf16>
  return %tile : tensor<16x32xf16>
}

// -----

// Padding at the low end is not the padding of a tile at an edge.
func.func @low_pad(%q: tensor<1x1x?x32xf16>, %n: index) -> tensor<32x32xf16> {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f16
  %slice = tensor.extract_slice %q[0, 0, 0, 0] [1, 1, %n, 32] [1, 1, 1, 1] : tensor<1x1x?x32xf16> to tensor<?x32xf16>
  // expected-error @+1 {{'tensor.pad' op fmha-vectorize-tiles: a padded tile is a slice of an operand padded at its high end}}
  %tile = tensor.pad %slice low[%c1, 0] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f16
  } : tensor<?x32xf16> to tensor<32x32xf16>
  return %tile : tensor<32x32xf16>
}

// -----

// Padding with a value that is not a constant.
func.func @dynamic_padding(%q: tensor<1x1x?x32xf16>, %n: index, %h: index, %x: f16) -> tensor<32x32xf16> {
  %slice = tensor.extract_slice %q[0, 0, 0, 0] [1, 1, %n, 32] [1, 1, 1, 1] : tensor<1x1x?x32xf16> to tensor<?x32xf16>
  // expected-error @+1 {{'tensor.pad' op fmha-vectorize-tiles: a tile's padding is a constant}}
  %tile = tensor.pad %slice low[0, 0] high[%h, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %x : f16
  } : tensor<?x32xf16> to tensor<32x32xf16>
  return %tile : tensor<32x32xf16>
}

// -----

// A conversion of a value that is not a tile.
func.func @convert_not_a_tile(%s: tensor<16x8xf32>) -> tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>> {
  // expected-error @+1 {{'fmha.convert_layout' op fmha-vectorize-tiles: converts a value that is not a static tile}}
  %c = fmha.convert_layout %s : tensor<16x8xf32> -> tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
  return %c : tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
}

// -----

// The rows of an o tile written back are a leading slice of it.
func.func @rows_not_leading(%q: tensor<1x1x64x32xf16>, %o: tensor<1x1x64x32xf16>) -> tensor<1x1x64x32xf16> {
  %r = scf.forall (%i) in (1) shared_outs(%os = %o) -> (tensor<1x1x64x32xf16>) {
    %tile = tensor.extract_slice %q[0, 0, 0, 0] [1, 1, 32, 32] [1, 1, 1, 1] : tensor<1x1x64x32xf16> to tensor<32x32xf16>
    %rows = tensor.extract_slice %tile[8, 0] [16, 32] [1, 1] : tensor<32x32xf16> to tensor<16x32xf16>
    scf.forall.in_parallel {
      // expected-error @+1 {{'tensor.parallel_insert_slice' op fmha-vectorize-tiles: the rows of a tile in range are a leading slice of it}}
      tensor.parallel_insert_slice %rows into %os[0, 0, 0, 0] [1, 1, 16, 32] [1, 1, 1, 1] : tensor<16x32xf16> into tensor<1x1x64x32xf16>
    }
  }
  return %r : tensor<1x1x64x32xf16>
}

// -----

// A value goes into a buffer of its own static shape.
func.func @store_into_dynamic_buffer(%acc: memref<?x64xf32>) {
  %e = tensor.empty() : tensor<16x64xf32>
  %z = fmha.tile_fill %e, 0.0 : tensor<16x64xf32> -> tensor<16x64xf32>
  // expected-error @+1 {{'fmha.tile_store' op fmha-vectorize-tiles: writes a value into a buffer of dynamic shape 'memref<?x64xf32>'}}
  fmha.tile_store %z into %acc : tensor<16x64xf32>, memref<?x64xf32>
  return
}

// -----

// fmha.atomic_add adds a static tile.
func.func @atomic_add_of_no_tile(%t: tensor<?x64xf32>, %acc: memref<16x64xf32>) {
  %s = tensor.extract_slice %t[0, 0] [16, 64] [1, 1] : tensor<?x64xf32> to tensor<16x64xf32>
  %c = arith.addf %s, %s : tensor<16x64xf32>
  // expected-error @+1 {{'fmha.atomic_add' op fmha-vectorize-tiles: adds a value that is not a static tile}}
  fmha.atomic_add %c, %acc : tensor<16x64xf32>, memref<16x64xf32>
  return
}
