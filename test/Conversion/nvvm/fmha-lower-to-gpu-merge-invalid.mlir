// RUN: fmha-opt %s --fmha-lower-to-gpu -split-input-file -verify-diagnostics
// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942" -split-input-file -verify-diagnostics

// fmha.merge inputs the GPU merge kernel does not take: one diagnostic each,
// the same on both targets.

func.func @tensors(%o: tensor<1x4x8x64xbf16>, %l: tensor<1x4x8xf32>) -> (tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>) {
  // expected-error @+1 {{the GPU lowering takes fmha.merge on memrefs (bufferize first)}}
  %r:2 = fmha.merge ins(%o, %l, %o, %l : tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>, tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>) outs(%o, %l : tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>) -> tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>
  return %r#0, %r#1 : tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>
}

// -----

func.func @strided(%o: memref<1x4x8x64xbf16, strided<[4096, 1024, 128, 1]>>, %l: memref<1x4x8xf32>) {
  // expected-error @+1 {{the GPU lowering needs contiguous (identity-layout) memrefs}}
  fmha.merge ins(%o, %l, %o, %l : memref<1x4x8x64xbf16, strided<[4096, 1024, 128, 1]>>, memref<1x4x8xf32>, memref<1x4x8x64xbf16, strided<[4096, 1024, 128, 1]>>, memref<1x4x8xf32>) outs(%o, %l : memref<1x4x8x64xbf16, strided<[4096, 1024, 128, 1]>>, memref<1x4x8xf32>)
  return
}

// -----

func.func @dynamic_heads(%o: memref<?x?x?x64xf16>, %l: memref<?x?x?xf32>) {
  // expected-error @+1 {{the GPU merge kernel needs a static head count H and value head dim Dv (only B and S may be dynamic)}}
  fmha.merge ins(%o, %l, %o, %l : memref<?x?x?x64xf16>, memref<?x?x?xf32>, memref<?x?x?x64xf16>, memref<?x?x?xf32>) outs(%o, %l : memref<?x?x?x64xf16>, memref<?x?x?xf32>)
  return
}

// -----

func.func @dynamic_dv(%o: memref<?x4x?x?xf16>, %l: memref<?x4x?xf32>) {
  // expected-error @+1 {{the GPU merge kernel needs a static head count H and value head dim Dv}}
  fmha.merge ins(%o, %l, %o, %l : memref<?x4x?x?xf16>, memref<?x4x?xf32>, memref<?x4x?x?xf16>, memref<?x4x?xf32>) outs(%o, %l : memref<?x4x?x?xf16>, memref<?x4x?xf32>)
  return
}

// -----

func.func @mixed(%a: memref<?x4x?x64xbf16>, %b: memref<?x4x?x64xf16>, %l: memref<?x4x?xf32>) {
  // expected-error @+1 {{the GPU merge kernel needs o1, o2 and o of one element type, got bf16 and f16}}
  fmha.merge ins(%a, %l, %b, %l : memref<?x4x?x64xbf16>, memref<?x4x?xf32>, memref<?x4x?x64xf16>, memref<?x4x?xf32>) outs(%a, %l : memref<?x4x?x64xbf16>, memref<?x4x?xf32>)
  return
}
