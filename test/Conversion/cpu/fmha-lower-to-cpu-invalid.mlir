// RUN: fmha-opt %s --fmha-lower-to-cpu -split-input-file -verify-diagnostics

// The loops write buffers: a tile op on values is bufferized first.
func.func @on_values(%m: tensor<?xf32>, %acc: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'fmha.tile_init' op is lowered on memrefs: bufferize it first (one-shot-bufferize; fmha-to-cpu-pipeline does)}}
  %i:3 = fmha.tile_init %m, %m, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
  return %i#2 : tensor<?x64xf32>
}
