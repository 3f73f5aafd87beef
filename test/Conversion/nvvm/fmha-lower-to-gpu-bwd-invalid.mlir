// RUN: fmha-opt %s --fmha-lower-to-gpu -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s --fmha-lower-to-gpu="block-m=64 block-n=32" -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not fmha-opt %s --fmha-lower-to-gpu="warp-rows=32" -split-input-file 2>&1 | FileCheck %s --check-prefix=WARPROWS
// RUN: not fmha-opt %s --fmha-lower-to-gpu="block-m=48 block-n=48" -split-input-file 2>&1 | FileCheck %s --check-prefix=UNIT
// RUN: not fmha-opt %s --fmha-lower-to-gpu="block-m=512 block-n=512" -split-input-file 2>&1 | FileCheck %s --check-prefix=SHARED

// BLOCKS: error: 'fmha.attention_bwd' op the backward kernels need block-m = block-n, a multiple of 32 with at most 32 warps of 16 rows; got block-m=64 block-n=32
// WARPROWS: error: 'fmha.attention_bwd' op the backward kernels give each warp one row block: warp-rows must be 16, got 32
// UNIT: error: 'fmha.attention_bwd' op the backward kernels need block-m = block-n, a multiple of 32 with at most 32 warps of 16 rows; got block-m=48 block-n=48
// SHARED: error: 'fmha.attention_bwd' op D=128, Dv=128 with block-m=512 needs {{[0-9]+}} bytes of workgroup memory in the backward kernels, over the 232448 bytes of sm_90

func.func @f32(%q: memref<1x4x64x64xf32>, %lse: memref<1x4x64xf32>) {
  // expected-error @+1 {{the nvvm backward kernels need f16 or bf16 inputs, got f32}}
  fmha.attention_bwd ins(%q, %q, %q, %q, %lse, %q : memref<1x4x64x64xf32>, memref<1x4x64x64xf32>, memref<1x4x64x64xf32>, memref<1x4x64x64xf32>, memref<1x4x64xf32>, memref<1x4x64x64xf32>)
      outs(%q, %q, %q : memref<1x4x64x64xf32>, memref<1x4x64x64xf32>, memref<1x4x64x64xf32>)
  return
}

// -----

func.func @head_dim(%q: memref<1x4x64x96xf16>, %lse: memref<1x4x64xf32>) {
  // expected-error @+1 {{head dims D=96, Dv=96 are not supported by the GPU backward kernels (supported: 32, 64, 128)}}
  fmha.attention_bwd ins(%q, %q, %q, %q, %lse, %q : memref<1x4x64x96xf16>, memref<1x4x64x96xf16>, memref<1x4x64x96xf16>, memref<1x4x64x96xf16>, memref<1x4x64xf32>, memref<1x4x64x96xf16>)
      outs(%q, %q, %q : memref<1x4x64x96xf16>, memref<1x4x64x96xf16>, memref<1x4x64x96xf16>)
  return
}

// -----

func.func @mixed(%q: memref<1x4x64x64xf16>, %g: memref<1x4x64x64xbf16>, %lse: memref<1x4x64xf32>) {
  // expected-error @+1 {{the GPU backward kernels take q, k, v, o, dO, dq, dk and dv of one element type (f16)}}
  fmha.attention_bwd ins(%q, %q, %q, %q, %lse, %q : memref<1x4x64x64xf16>, memref<1x4x64x64xf16>, memref<1x4x64x64xf16>, memref<1x4x64x64xf16>, memref<1x4x64xf32>, memref<1x4x64x64xf16>)
      outs(%g, %q, %q : memref<1x4x64x64xbf16>, memref<1x4x64x64xf16>, memref<1x4x64x64xf16>)
  return
}

// -----

func.func @tensors(%q: tensor<1x4x64x64xf16>, %lse: tensor<1x4x64xf32>) -> (tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>) {
  // expected-error @+1 {{the GPU lowering takes fmha.attention_bwd on memrefs (bufferize first)}}
  %r:3 = fmha.attention_bwd ins(%q, %q, %q, %q, %lse, %q : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64xf32>, tensor<1x4x64x64xf16>)
      outs(%q, %q, %q : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>) -> tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>
  return %r#0, %r#1, %r#2 : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>
}

// -----

func.func @strided(%q: memref<1x4x64x64xf16>, %s: memref<1x4x64x64xf16, strided<[16384, 4096, 64, 1]>>, %dk: memref<1x4x64x64xf16, strided<[32768, 64, 512, 2]>>, %lse: memref<1x4x64xf32>) {
  // expected-error @+1 {{dk needs a contiguous last axis (stride 1), got memref<1x4x64x64xf16, strided<[32768, 64, 512, 2]>>}}
  fmha.attention_bwd ins(%q, %s, %q, %q, %lse, %q : memref<1x4x64x64xf16>, memref<1x4x64x64xf16, strided<[16384, 4096, 64, 1]>>, memref<1x4x64x64xf16>, memref<1x4x64x64xf16>, memref<1x4x64xf32>, memref<1x4x64x64xf16>)
      outs(%q, %dk, %q : memref<1x4x64x64xf16>, memref<1x4x64x64xf16, strided<[32768, 64, 512, 2]>>, memref<1x4x64x64xf16>)
  return
}

// -----

// Valid with the default options (no diagnostic); too much workgroup memory
// at block-m=512 (SHARED).
func.func @valid(%q: memref<1x4x64x128xbf16>, %lse: memref<1x4x64xf32>) {
  fmha.attention_bwd ins(%q, %q, %q, %q, %lse, %q : memref<1x4x64x128xbf16>, memref<1x4x64x128xbf16>, memref<1x4x64x128xbf16>, memref<1x4x64x128xbf16>, memref<1x4x64xf32>, memref<1x4x64x128xbf16>)
      outs(%q, %q, %q : memref<1x4x64x128xbf16>, memref<1x4x64x128xbf16>, memref<1x4x64x128xbf16>)
  return
}
