// RUN: fmha-opt %s --fmha-vectorize-tiles -split-input-file -verify-diagnostics

// The tile ops on buffers (the forward tiled on memrefs) are not the static
// tiles on values the pass takes.
func.func @buffers(%q: memref<64x32xf16>, %k: memref<64x32xf16>, %s: memref<64x64xf32>) {
  // expected-error @+1 {{'fmha.tile_qk' op fmha-vectorize-tiles: takes the forward on tensors (tile ops on values, not buffers)}}
  fmha.tile_qk %q, %k into %s {scale = 1.0 : f32} : memref<64x32xf16>, memref<64x32xf16>, memref<64x64xf32>
  return
}

// -----

// A tile op on values that are not static tiles of the forward.
func.func @not_a_tile(%q: tensor<64x32xf16>, %k: tensor<64x32xf16>, %s: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{'fmha.tile_qk' op fmha-vectorize-tiles: operand #0 is not a static tile of the forward (tile with --fmha-tile-attention="static-tiles=1")}}
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
