// RUN: fmha-opt %s --fmha-lower-to-gpu -split-input-file -verify-diagnostics
// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942" -split-input-file -verify-diagnostics

// fmha.accumulate inputs the GPU accumulate kernel does not take: one
// diagnostic each, the same on both targets.

func.func @tensors(%x: tensor<8xbf16>, %acc: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{the GPU lowering takes fmha.accumulate on memrefs (bufferize first)}}
  %r = fmha.accumulate ins(%x : tensor<8xbf16>) outs(%acc : tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @strided(%x: memref<4x8xf16, strided<[16, 1]>>, %acc: memref<4x8xf32>) {
  // expected-error @+1 {{the GPU lowering needs contiguous (identity-layout) memrefs}}
  fmha.accumulate ins(%x : memref<4x8xf16, strided<[16, 1]>>) outs(%acc : memref<4x8xf32>)
  return
}

// -----

func.func @scalar(%x: memref<f16>, %acc: memref<f32>) {
  // expected-error @+1 {{the GPU accumulate kernel needs operands of rank 1 or more}}
  fmha.accumulate ins(%x : memref<f16>) outs(%acc : memref<f32>)
  return
}
