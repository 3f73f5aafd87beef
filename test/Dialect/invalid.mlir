// RUN: fmha-opt %s -split-input-file -verify-diagnostics

func.func @f(%q: tensor<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'fmha.attention' op operands must be all tensors or all memrefs, but 'k' is a memref while 'q' is a tensor}}
  fmha.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'q' must have rank 4 [B, Hq, Sq, D], got rank 3}}
  fmha.attention ins(%q, %k, %v : memref<2x8x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64x1xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'k' must have rank 4 [B, Hk, Sk, D], got rank 5}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64x1xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'v' must have rank 4 [B, Hk, Sk, Dv], got rank 3}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x64xf32>) {
  // expected-error @+1 {{'o' must have rank 4 [B, Hq, Sq, Dv], got rank 3}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>, %l: memref<2x8xf32>) {
  // expected-error @+1 {{'lse' must have rank 3 [B, Hq, Sq], got rank 2}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>, %l : memref<2x8xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf16>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'k' element type 'f16' must be 'f32' as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf16>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xbf16>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'v' element type 'bf16' must be 'f32' as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xbf16>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>, %l: memref<2x8x?xf16>) {
  // expected-error @+1 {{'lse' element type 'f16' must be 'f32'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>, %l : memref<2x8x?xf16>)
  return
}

// -----

func.func @f(%q: memref<2x?x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x?x?x64xf32>) {
  // expected-error @+1 {{'q' head count Hq (dim 1) must be static}}
  fmha.attention ins(%q, %k, %v : memref<2x?x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x?x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x?xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'q' head dim D (dim 3) must be static}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x?xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x0x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'k' head count Hk (dim 1) must be positive, got 0}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x0x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x32xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'k' head dim D (dim 3) is 32, expected 64 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x32xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x4x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'v' head count Hk (dim 1) is 4, expected 2 as in 'k'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x4x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x4x?x64xf32>) {
  // expected-error @+1 {{'o' head count Hq (dim 1) is 4, expected 8 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x4x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x32xf32>) {
  // expected-error @+1 {{'o' head dim Dv (dim 3) is 32, expected 64 as in 'v'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<2x12x?x64xf32>, %k: memref<2x5x?x64xf32>, %v: memref<2x5x?x64xf32>, %o: memref<2x12x?x64xf32>) {
  // expected-error @+1 {{Hq (12) must be a multiple of Hk (5)}}
  fmha.attention ins(%q, %k, %v : memref<2x12x?x64xf32>, memref<2x5x?x64xf32>, memref<2x5x?x64xf32>) outs(%o : memref<2x12x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<3x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'k' batch B (dim 0) is 3, expected 2 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<3x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<?x8x?x64xf32>, %k: memref<3x2x?x64xf32>, %v: memref<4x2x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  // expected-error @+1 {{'v' batch B (dim 0) is 4, expected 3 as in 'k'}}
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xf32>, memref<3x2x?x64xf32>, memref<4x2x?x64xf32>) outs(%o : memref<?x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<1x8x?x64xf32>) {
  // expected-error @+1 {{'o' batch B (dim 0) is 1, expected 2 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<1x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x10x64xf32>, %v: memref<2x2x11x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'v' sequence length Sk (dim 2) is 11, expected 10 as in 'k'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x10x64xf32>, memref<2x2x11x64xf32>) outs(%o : memref<2x8x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x7x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x9x64xf32>) {
  // expected-error @+1 {{'o' sequence length Sq (dim 2) is 9, expected 7 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x7x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x9x64xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>, %l: memref<3x8x?xf32>) {
  // expected-error @+1 {{'lse' batch B (dim 0) is 3, expected 2 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>, %l : memref<3x8x?xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>, %l: memref<2x4x?xf32>) {
  // expected-error @+1 {{'lse' head count Hq (dim 1) is 4, expected 8 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>, %l : memref<2x4x?xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x5x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x5x64xf32>, %l: memref<2x8x6xf32>) {
  // expected-error @+1 {{'lse' sequence length Sq (dim 2) is 6, expected 5 as in 'q'}}
  fmha.attention ins(%q, %k, %v : memref<2x8x5x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x5x64xf32>, %l : memref<2x8x6xf32>)
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'scale' must be positive and finite, got -1}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>) {scale = -1.0 : f32}
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'softcap' must be positive and finite, got 0}}
  fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>) {softcap = 0.0 : f32}
  return
}

// -----

func.func @f(%q: memref<2x8x?x64xf32>, %k: memref<2x2x?x64xf32>, %v: memref<2x2x?x64xf32>, %o: memref<2x8x?x64xf32>) {
  // expected-error @+1 {{'fmha.attention' op on memrefs has no results, got 1}}
  %r = fmha.attention ins(%q, %k, %v : memref<2x8x?x64xf32>, memref<2x2x?x64xf32>, memref<2x2x?x64xf32>) outs(%o : memref<2x8x?x64xf32>) -> tensor<2x8x?x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x?x64xf32>, %k: tensor<2x2x?x64xf32>, %o: tensor<2x8x?x64xf32>) {
  // expected-error @+1 {{expected the number of tensor results (2) to be equal to the number of output tensors (1)}}
  %r:2 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32>) outs(%o : tensor<2x8x?x64xf32>) -> tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>
  return
}

// -----

func.func @f(%q: memref<?x4x?x64xf32>, %l: memref<?x4x?xf32>, %d: memref<?x4x?x32xf32>) {
  // expected-error @+1 {{'dout' shape [?, 4, ?, 32] must match 'o' shape [?, 4, ?, 64]}}
  fmha.attention_bwd ins(%q, %q, %q, %q, %l, %d : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?xf32>, memref<?x4x?x32xf32>) outs(%q, %q, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<?x4x?x64xf32>, %l: memref<?x4x?xf32>, %dq: memref<?x4x?x32xf32>) {
  // expected-error @+1 {{'dq' shape [?, 4, ?, 32] must match 'q' shape [?, 4, ?, 64]}}
  fmha.attention_bwd ins(%q, %q, %q, %q, %l, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?xf32>, memref<?x4x?x64xf32>) outs(%dq, %q, %q : memref<?x4x?x32xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<?x4x?x64xf32>, %k: memref<?x2x?x64xf32>, %l: memref<?x4x?xf32>) {
  // expected-error @+1 {{'dk' shape [?, 4, ?, 64] must match 'k' shape [?, 2, ?, 64]}}
  fmha.attention_bwd ins(%q, %k, %k, %q, %l, %q : memref<?x4x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?xf32>, memref<?x4x?x64xf32>) outs(%q, %q, %k : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x2x?x64xf32>)
  return
}

// -----

func.func @f(%q: memref<?x4x?x64xf32>, %k: memref<?x2x?x64xf32>, %l: memref<?x4x?xf32>, %dv: memref<?x2x?x32xf32>) {
  // expected-error @+1 {{'dv' shape [?, 2, ?, 32] must match 'v' shape [?, 2, ?, 64]}}
  fmha.attention_bwd ins(%q, %k, %k, %q, %l, %q : memref<?x4x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?xf32>, memref<?x4x?x64xf32>) outs(%q, %k, %dv : memref<?x4x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x32xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x4x?x64xf32>, %k: memref<?x4x?x64xf32>, %l: tensor<?x4x?xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, but 'dq' is a memref while 'q' is a tensor}}
  %r:2 = fmha.attention_bwd ins(%q, %q, %q, %q, %l, %q : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?xf32>, tensor<?x4x?x64xf32>) outs(%k, %q, %q : memref<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>) {
  // expected-error @+1 {{'o1' must have rank 4 [B, H, S, Dv], got rank 3}}
  fmha.merge ins(%l, %l, %o, %l : memref<1x4x?xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf32>) outs(%o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>) {
  // expected-error @+1 {{'lse1' must have rank 3 [B, H, S], got rank 4}}
  fmha.merge ins(%o, %o, %o, %l : memref<1x4x?x64xf32>, memref<1x4x?x64xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf32>) outs(%o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %h: memref<1x4x?xf16>) {
  // expected-error @+1 {{'lse2' element type 'f16' must be 'f32'}}
  fmha.merge ins(%o, %l, %o, %h : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf16>) outs(%o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %o2: memref<1x4x?x32xf32>) {
  // expected-error @+1 {{'o2' shape [1, 4, ?, 32] must match 'o1' shape [1, 4, ?, 64]}}
  fmha.merge ins(%o, %l, %o2, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x32xf32>, memref<1x4x?xf32>) outs(%o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %o3: memref<2x4x?x64xf32>) {
  // expected-error @+1 {{'o' shape [2, 4, ?, 64] must match 'o1' shape [1, 4, ?, 64]}}
  fmha.merge ins(%o, %l, %o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf32>) outs(%o3, %l : memref<2x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %l2: memref<1x5x?xf32>) {
  // expected-error @+1 {{'lse2' shape [1, 5, ?] must match 'lse1' shape [1, 4, ?]}}
  fmha.merge ins(%o, %l, %o, %l2 : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x5x?xf32>) outs(%o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %l2: memref<1x3x?xf32>) {
  // expected-error @+1 {{'lse1' head count H (dim 1) is 3, expected 4 as in 'o1'}}
  fmha.merge ins(%o, %l2, %o, %l2 : memref<1x4x?x64xf32>, memref<1x3x?xf32>, memref<1x4x?x64xf32>, memref<1x3x?xf32>) outs(%o, %l2 : memref<1x4x?x64xf32>, memref<1x3x?xf32>)
  return
}

// -----

func.func @f(%q: memref<?x64xf32>, %s: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{expects 4 mask coordinates [row0, col0, Sq, Sk], got 2}}
  fmha.tile_qk %q, %q into %s masked[%i, %i] {mask = #fmha.mask<"t">, scale = 1.0 : f32} : memref<?x64xf32>, memref<?x64xf32>, memref<?x?xf32>
  return
}

// -----

func.func @f(%q: memref<?x64xf32>, %k: memref<?x32xf32>, %s: memref<?x?xf32>) {
  // expected-error @+1 {{'k' head dim (32) must equal 'q' head dim (64)}}
  fmha.tile_qk %q, %k into %s {scale = 1.0 : f32} : memref<?x64xf32>, memref<?x32xf32>, memref<?x?xf32>
  return
}

// -----

// expected-error @+1 {{unknown mask spec 'causal': expected one of 0, none, t, b, t:L,R, b:L,R, t:L,R,S, b:L,R,S, xt:W, xb:W}}
func.func @f() attributes {m = #fmha.mask<"causal">} { return }

// -----

// expected-error @+1 {{malformed mask spec 't:a,0': 'a' is not an integer}}
func.func @f() attributes {m = #fmha.mask<"t:a,0">} { return }

// -----

// expected-error @+1 {{malformed mask spec 'b:1': expected 2 or 3 integers after 'b:' (L,R or L,R,S), got 1}}
func.func @f() attributes {m = #fmha.mask<"b:1">} { return }

// -----

// expected-error @+1 {{malformed mask spec 't:1,2,3,4': expected 2 or 3 integers after 't:' (L,R or L,R,S), got 4}}
func.func @f() attributes {m = #fmha.mask<"t:1,2,3,4">} { return }

// -----

// expected-error @+1 {{malformed mask spec 't:-1,0,-2': sink (S) must be non-negative, got -2}}
func.func @f() attributes {m = #fmha.mask<"t:-1,0,-2">} { return }

// -----

// expected-error @+1 {{malformed mask spec 'xt:0': window size W must be non-zero (W < 0 is causal)}}
func.func @f() attributes {m = #fmha.mask<"xt:0">} { return }

// -----

// expected-error @+1 {{malformed mask spec 'xb:1,2': expected one window size W after 'xb:'}}
func.func @f() attributes {m = #fmha.mask<"xb:1,2">} { return }

// -----

// expected-error @+1 {{malformed mask spec 't:99999999999999999999,0': integer '99999999999999999999' is out of range}}
func.func @f() attributes {m = #fmha.mask<"t:99999999999999999999,0">} { return }

// -----

// expected-error @+1 {{malformed mask spec 't:1,': '' is not an integer}}
func.func @f() attributes {m = #fmha.mask<"t:1,">} { return }

// -----

// expected-error @+1 {{expected string}}
func.func @f() attributes {m = #fmha.mask<t>} { return }

// -----

func.func @f(%a: memref<16x64xf32>, %b: memref<32x48xf32>, %c: memref<16x32xf32>) {
  // expected-error @+1 {{'fmha.tile_matmul' op reduction sizes differ: 64 in 'a', 48 in 'b'}}
  fmha.tile_matmul %a, %b into %c {alpha = 1.0 : f32, transpose_b} : memref<16x64xf32>, memref<32x48xf32>, memref<16x32xf32>
  return
}

// -----

func.func @f(%a: memref<16x64xf32>, %b: memref<64x32xf32>, %c: memref<16x16xf32>) {
  // expected-error @+1 {{'fmha.tile_matmul' op 'c' must be 16x32, got 16x16}}
  fmha.tile_matmul %a, %b into %c {alpha = 1.0 : f32} : memref<16x64xf32>, memref<64x32xf32>, memref<16x16xf32>
  return
}

// -----

func.func @f(%a: memref<16x64xf32>, %b: memref<64x32xf32>, %c: memref<16x32xf32>) {
  // expected-error @+1 {{'fmha.tile_matmul' op 'atomic' requires 'accumulate'}}
  fmha.tile_matmul %a, %b into %c {alpha = 1.0 : f32, atomic} : memref<16x64xf32>, memref<64x32xf32>, memref<16x32xf32>
  return
}

// -----

func.func @f(%a: tensor<16x64xf32>, %b: tensor<64x32xf32>, %c: tensor<16x32xf32>) {
  // expected-error @+1 {{'fmha.tile_matmul' op 'atomic' adds into a buffer that parallel iterations share: it takes memrefs, not tensors}}
  %r = fmha.tile_matmul %a, %b into %c {alpha = 1.0 : f32, accumulate, atomic} : tensor<16x64xf32>, tensor<64x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @f(%a: tensor<16x64xf32>, %b: memref<64x32xf32>, %c: tensor<16x32xf32>) {
  // expected-error @+1 {{'fmha.tile_matmul' op takes all tensors or all memrefs, not both}}
  %r = fmha.tile_matmul %a, %b into %c {alpha = 1.0 : f32} : tensor<16x64xf32>, memref<64x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  return
}

// -----

// A value may go into a buffer (tile_store's memref out); a buffer into a
// value may not.
func.func @f(%a: memref<16x32xf32>, %b: tensor<16x32xbf16>) {
  // expected-error @+1 {{'fmha.tile_store' op takes all tensors, all memrefs or tensors into a memref out, not another mix}}
  %r = fmha.tile_store %a into %b : memref<16x32xf32>, tensor<16x32xbf16> -> tensor<16x32xbf16>
  return
}

// -----

func.func @f(%a: tensor<16x32xf32>, %b: memref<16x16xf32>) {
  // expected-error @+1 {{'fmha.atomic_add' op adds a 'tensor<16x32xf32>' into 'memref<16x16xf32>': both need the same static shape}}
  fmha.atomic_add %a, %b : tensor<16x32xf32>, memref<16x16xf32>
  return
}

// -----

func.func @f(%a: vector<16x32xf32>, %b: memref<?x32xf32>) {
  // expected-error @+1 {{'fmha.atomic_add' op adds a 'vector<16x32xf32>' into 'memref<?x32xf32>': both need the same static shape}}
  fmha.atomic_add %a, %b : vector<16x32xf32>, memref<?x32xf32>
  return
}

// -----

func.func @f(%a: vector<16x32xf16>, %b: memref<16x32xf32>) {
  // expected-error @+1 {{'fmha.atomic_add' op operand #0 must be}}
  fmha.atomic_add %a, %b : vector<16x32xf16>, memref<16x32xf32>
  return
}

// -----

func.func @f(%a: memref<16x64xf32>, %b: memref<16x32xf32>, %o: memref<16xf32>) {
  // expected-error @+1 {{'fmha.tile_row_dot' op 'a' and 'b' must have the same shape}}
  fmha.tile_row_dot %a, %b into %o : memref<16x64xf32>, memref<16x32xf32>, memref<16xf32>
  return
}

// -----

func.func @f(%a: memref<16x64xf32>, %o: memref<8xf32>) {
  // expected-error @+1 {{'fmha.tile_row_dot' op 'out' must have one element per row of 'a'}}
  fmha.tile_row_dot %a, %a into %o : memref<16x64xf32>, memref<16x64xf32>, memref<8xf32>
  return
}

// -----

func.func @f(%q: memref<16x64xf16>, %k: memref<32x64xf16>, %s: memref<16x32xf32>) {
  // expected-error @+1 {{'fmha.tile_qk' op 's' must be 32x16 (keys x queries), got 16x32}}
  fmha.tile_qk %q, %k into %s transposed {scale = 1.0 : f32} : memref<16x64xf16>, memref<32x64xf16>, memref<16x32xf32>
  return
}

// -----

func.func @f(%q: memref<16x64xf16>, %k: memref<32x64xf16>, %s: memref<32x16xf32>) {
  // expected-error @+1 {{'fmha.tile_qk' op 's' must be 16x32 (queries x keys), got 32x16}}
  fmha.tile_qk %q, %k into %s {scale = 1.0 : f32} : memref<16x64xf16>, memref<32x64xf16>, memref<32x16xf32>
  return
}

// -----

func.func @f(%s: tensor<16x32xf32>, %l: tensor<16xf32>) {
  // expected-error @+1 {{'fmha.tile_bwd_probs' op 'lse' must have one element per column (32), got 16}}
  %p = fmha.tile_bwd_probs %s, %l into %s transposed : tensor<16x32xf32>, tensor<16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @f(%p: memref<16x32xf32>, %d: memref<32xf32>) {
  // expected-error @+1 {{'fmha.tile_bwd_ds' op 'dsum' must have one element per row (16), got 32}}
  fmha.tile_bwd_ds %p, %d into %p : memref<16x32xf32>, memref<32xf32>, memref<16x32xf32>
  return
}

// -----

func.func @f(%p: memref<16x32xf32>, %d: memref<16xf32>) {
  // expected-error @+1 {{'fmha.tile_bwd_ds' op takes the capped scores exactly when it has a 'softcap'}}
  fmha.tile_bwd_ds %p, %d into %p {softcap = 5.0 : f32} : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>
  return
}

// -----

func.func @f(%a: memref<16x32xf32>, %b: memref<16x16xbf16>) {
  // expected-error @+1 {{'fmha.tile_store' op 'dst' dim 1 (16) must equal 'src' dim 1 (32)}}
  fmha.tile_store %a into %b : memref<16x32xf32>, memref<16x16xbf16>
  return
}

// -----

func.func @f(%x: memref<?xf16>, %acc: memref<?xf16>) {
  // expected-error @+1 {{'fmha.accumulate' op 'acc' element type 'f16' must be 'f32'}}
  fmha.accumulate ins(%x : memref<?xf16>) outs(%acc : memref<?xf16>)
  return
}

// -----

func.func @f(%x: memref<4x?xbf16>, %acc: memref<8x?xf32>) {
  // expected-error @+1 {{'fmha.accumulate' op 'acc' shape [8, ?] must match 'x' shape [4, ?]}}
  fmha.accumulate ins(%x : memref<4x?xbf16>) outs(%acc : memref<8x?xf32>)
  return
}

// -----

func.func @f(%x: memref<?xf32>, %acc: memref<?x1xf32>) {
  // expected-error @+1 {{'fmha.accumulate' op 'acc' shape [?, 1] must match 'x' shape [?]}}
  fmha.accumulate ins(%x : memref<?xf32>) outs(%acc : memref<?x1xf32>)
  return
}

// -----

func.func @f(%x: tensor<?xf16>, %acc: memref<?xf32>) {
  // expected-error @+1 {{'fmha.accumulate' op operands must be all tensors or all memrefs, but 'acc' is a memref while 'x' is a tensor}}
  fmha.accumulate ins(%x : tensor<?xf16>) outs(%acc : memref<?xf32>)
  return
}

// -----

func.func @f(%x: memref<?xi32>, %acc: memref<?xf32>) {
  // expected-error @+1 {{'fmha.accumulate' op operand #0 must be ranked tensor or memref of f16, bf16 or f32}}
  fmha.accumulate ins(%x : memref<?xi32>) outs(%acc : memref<?xf32>)
  return
}

// -----

func.func @f(%s: tensor<?x?xf32>, %v: memref<?x64xf16>, %acc: tensor<?x64xf32>) {
  // expected-error @+1 {{'fmha.tile_pv' op takes all tensors or all memrefs, not both}}
  %a = fmha.tile_pv %s, %v into %acc : tensor<?x?xf32>, memref<?x64xf16>, tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%q: tensor<?x64xf16>, %s: tensor<?x?xf32>) {
  // expected-error @+1 {{expected the number of tensor results (0) to be equal to the number of output tensors (1)}}
  fmha.tile_qk %q, %q into %s {scale = 1.0 : f32} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x?xf32>
  return
}

// -----

func.func @f(%m: tensor<?xf32>, %acc: tensor<?x64xf32>) {
  // expected-error @+1 {{expected type of operand #2 ('tensor<?x64xf32>') to match type of corresponding result ('tensor<?x32xf32>')}}
  %i:3 = fmha.tile_init %m, %m, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?x32xf32>
  return
}

// -----

// expected-error @+1 {{invalid layout: the basis (16, 0) of lane bit 0 lies outside the 16 x 8 tile}}
func.func @f(%s: tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1]], lane = [[16, 0]], warp = []>>) {
  return
}

// -----

// expected-error @+1 {{a layout is of a rows x cols tile, got 3 dims}}
func.func @f(%s: tensor<16x8xf32, #fmha.layout<16x8x2, register = [], lane = [], warp = []>>) {
  return
}

// -----

func.func @f(%p: tensor<16x16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, %v: tensor<16x64xf16>, %acc: tensor<16x64xf32>) {
  // expected-error @+1 {{'fmha.tile_pv' op operand #0: the tile's shape must be the layout's (16x8), got 'tensor<16x16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>'}}
  %a = fmha.tile_pv %p, %v into %acc : tensor<16x16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, tensor<16x64xf16>, tensor<16x64xf32> -> tensor<16x64xf32>
  return
}

// -----

func.func @f(%p: tensor<16x16xf32, "rows">, %v: tensor<16x64xf16>, %acc: tensor<16x64xf32>) {
  // expected-error @+1 {{'fmha.tile_pv' op operand #0: a tile's encoding is a #fmha.layout, got "rows"}}
  %a = fmha.tile_pv %p, %v into %acc : tensor<16x16xf32, "rows">, tensor<16x64xf16>, tensor<16x64xf32> -> tensor<16x64xf32>
  return
}

// -----

func.func @f(%m: tensor<16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, %acc: tensor<16x64xf32>) {
  // expected-error @+1 {{'fmha.tile_init' op operand #0: the layout of a vector has 1 column (a row vector) or 1 row (a column vector), got 16x8}}
  %i:3 = fmha.tile_init %m, %m, %acc : tensor<16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, tensor<16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, tensor<16x64xf32> -> tensor<16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, tensor<16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>, tensor<16x64xf32>
  return
}

// -----

func.func @f(%s: tensor<16x8xf32>) {
  // expected-error @+1 {{'fmha.convert_layout' op converts a tile's layout, not its shape or element type: 'tensor<16x8xf32>' -> 'tensor<8x16xf32>'}}
  %c = fmha.convert_layout %s : tensor<16x8xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @f(%s: tensor<16x8xf32>) {
  // expected-error @+1 {{'fmha.convert_layout' op converts a tile's layout, not its shape or element type}}
  %c = fmha.convert_layout %s : tensor<16x8xf32> -> tensor<16x8xf16, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
  return
}

// -----

func.func @f(%s: tensor<8x16xf32>) {
  // expected-error @+1 {{'fmha.convert_layout' op result: the tile's shape must be the layout's (16x8), got}}
  %c = fmha.convert_layout %s : tensor<8x16xf32> -> tensor<8x16xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
  return
}

// -----

func.func @f(%s: tensor<16x8xf32, "rows">) {
  // expected-error @+1 {{'fmha.convert_layout' op source: a tile's encoding is a #fmha.layout, got "rows"}}
  %c = fmha.convert_layout %s : tensor<16x8xf32, "rows"> -> tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
  return
}

// -----

func.func @f(%s: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'fmha.convert_layout' op result: a tile with a layout has rank 1 or 2, got}}
  %c = fmha.convert_layout %s : tensor<2x16x8xf32> -> tensor<2x16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
  return
}

// -----

func.func @f(%s: vector<8x16xf32>) {
  // expected-error @+1 {{'fmha.to_layout' op source: the tile's shape must be the layout's (16x8), got 'vector<8x16xf32>'}}
  %c = fmha.to_layout %s to layout(#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<8x16xf32>
  return
}

// -----

func.func @f(%s: vector<16xf32>) {
  // expected-error @+1 {{'fmha.to_layout' op source: the layout of a vector has 1 column (a row vector) or 1 row (a column vector), got 16x8}}
  %c = fmha.to_layout %s to layout(#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<16xf32>
  return
}

// -----

func.func @f(%s: vector<2x16x8xf32>) {
  // expected-error @+1 {{'fmha.to_layout' op source: a tile with a layout has rank 1 or 2, got 'vector<2x16x8xf32>'}}
  %c = fmha.to_layout %s to layout(#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<2x16x8xf32>
  return
}

// -----

func.func @f(%k: memref<?x16xf16>, %buf: memref<16x24xf16, 3>, %i: index) {
  // expected-error @+1 {{'fmha.copy_async' op needs one index a dim of source (2) and dest (2), got 2 and 1}}
  fmha.copy_async %k[%i, %i] to %buf[%i] layout(#fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>) : memref<?x16xf16> to memref<16x24xf16, 3>
  return
}

// -----

func.func @f(%k: memref<?xf16>, %buf: memref<16x24xf16, 3>, %i: index) {
  // expected-error @+1 {{'fmha.copy_async' op copies a 2-D tile: source and dest need rank >= 2, got 'memref<?xf16>' and 'memref<16x24xf16, 3>'}}
  fmha.copy_async %k[%i] to %buf[%i, %i] layout(#fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>) : memref<?xf16> to memref<16x24xf16, 3>
  return
}

// -----

func.func @f(%k: memref<?x16xf32>, %buf: memref<16x24xf16, 3>, %i: index) {
  // expected-error @+1 {{'fmha.copy_async' op copies 'f32' into 'f16'}}
  fmha.copy_async %k[%i, %i] to %buf[%i, %i] layout(#fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>) : memref<?x16xf32> to memref<16x24xf16, 3>
  return
}

// -----

func.func @f(%k: memref<?x16xf16>, %buf: memref<8x24xf16, 3>, %i: index) {
  // expected-error @+1 {{'fmha.copy_async' op the 16x16 tile does not fit in 'memref<8x24xf16, 3>'}}
  fmha.copy_async %k[%i, %i] to %buf[%i, %i] layout(#fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>) : memref<?x16xf16> to memref<8x24xf16, 3>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'fmha.copy_wait' op attribute 'pending' failed to satisfy constraint}}
  fmha.copy_wait pending(-1)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %s: memref<4x1xf32>) {
  // expected-error @+1 {{'sinks' must have rank 1 [Hq], got rank 2}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) sinks(%s : memref<4x1xf32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %s: memref<8xf32>) {
  // expected-error @+1 {{'sinks' head count Hq (dim 0) is 8, expected 4 as in 'q'}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) sinks(%s : memref<8xf32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xbf16>, %s: memref<4xbf16>) {
  // expected-error @+1 {{'sinks' element type 'bf16' must be 'f32'}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xbf16>, memref<1x4x?x32xbf16>, memref<1x4x?x32xbf16>) sinks(%s : memref<4xbf16>) outs(%q : memref<1x4x?x32xbf16>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, but 'sinks' is a tensor while 'q' is a memref}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) sinks(%s : tensor<4xf32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %s: memref<4xf32>) {
  // expected-error @+1 {{'sinks' must have rank 1 [H], got rank 3}}
  fmha.sinks_grad ins(%o, %l, %o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf32>) outs(%s : memref<4xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %s: memref<8xf32>) {
  // expected-error @+1 {{'sinks' head count H (dim 0) is 8, expected 4 as in 'o'}}
  fmha.sinks_grad ins(%o, %l, %o, %s : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<8xf32>) outs(%s : memref<8xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %s: memref<4xf32>, %h: memref<4xf16>) {
  // expected-error @+1 {{'dsinks' element type 'f16' must be 'f32'}}
  fmha.sinks_grad ins(%o, %l, %o, %s : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<4xf32>) outs(%h : memref<4xf16>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %s: memref<4xf32>, %o2: memref<1x4x?x32xf32>) {
  // expected-error @+1 {{'dout' shape [1, 4, ?, 32] must match 'o' shape [1, 4, ?, 64]}}
  fmha.sinks_grad ins(%o, %l, %o2, %s : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x32xf32>, memref<4xf32>) outs(%s : memref<4xf32>)
  return
}

// -----

func.func @f(%o: memref<1x?x?x64xf32>, %l: memref<1x?x?xf32>, %s: memref<?xf32>) {
  // expected-error @+1 {{'o' head count H (dim 1) must be static}}
  fmha.sinks_grad ins(%o, %l, %o, %s : memref<1x?x?x64xf32>, memref<1x?x?xf32>, memref<1x?x?x64xf32>, memref<?xf32>) outs(%s : memref<?xf32>)
  return
}

// -----

func.func @f(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>, %s: memref<4xf32>, %t: tensor<4xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, but 'dsinks' is a tensor while 'o' is a memref}}
  %r = fmha.sinks_grad ins(%o, %l, %o, %s : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<4xf32>) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %c: memref<3xi32>) {
  // expected-error @+1 {{'q' of a variable-length batch (cu_seqlens) has batch 1, its sequence axis holding every sequence; got batch 2}}
  fmha.attention ins(%q, %q, %q : memref<2x4x?x32xf32>, memref<2x4x?x32xf32>, memref<2x4x?x32xf32>) cu_seqlens(%c, %c : memref<3xi32>, memref<3xi32>) outs(%q : memref<2x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<?x4x?x32xf32>, %c: memref<3xi32>) {
  // expected-error @+1 {{'q' of a variable-length batch (cu_seqlens) has batch 1, its sequence axis holding every sequence; got batch ?}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x32xf32>, memref<?x4x?x32xf32>, memref<?x4x?x32xf32>) cu_seqlens(%c, %c : memref<3xi32>, memref<3xi32>) outs(%q : memref<?x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %c: memref<3xi32>, %d: memref<4xi32>) {
  // expected-error @+1 {{'cu_seqlens_k' shape [4] must match 'cu_seqlens_q' shape [3]}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) cu_seqlens(%c, %d : memref<3xi32>, memref<4xi32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %c: memref<3x1xi32>) {
  // expected-error @+1 {{'cu_seqlens_q' must have rank 1 [N + 1], got rank 2}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) cu_seqlens(%c, %c : memref<3x1xi32>, memref<3x1xi32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %c: memref<0xi32>) {
  // expected-error @+1 {{'cu_seqlens_q' needs N + 1 >= 1 offsets, got none}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) cu_seqlens(%c, %c : memref<0xi32>, memref<0xi32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %c: tensor<3xi32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, but 'cu_seqlens_q' is a tensor while 'q' is a memref}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) cu_seqlens(%c, %c : tensor<3xi32>, tensor<3xi32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %c: memref<3xi64>) {
  // expected-error @+1 {{operand #3 must be ranked tensor or memref of i32, but got 'memref<3xi64>'}}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) cu_seqlens(%c, %c : memref<3xi64>, memref<3xi64>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %c: memref<3xi32>) {
  // expected-error @+1 {{takes cu_seqlens_q and cu_seqlens_k together, got only cu_seqlens_q}}
  "fmha.attention"(%q, %q, %q, %c, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 1, 0>}> : (memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<3xi32>, memref<1x4x?x32xf32>) -> ()
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %t: memref<2x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{'block_table' must have rank 2 [B, max_pages], got rank 1}}
  fmha.attention ins(%q, %k, %k : memref<2x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>) paged(%n, %n : memref<2xi32>, memref<2xi32>) outs(%q : memref<2x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %t: memref<3x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{'block_table' batch B (dim 0) is 3, expected 2 as in 'q'}}
  fmha.attention ins(%q, %k, %k : memref<2x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>) paged(%t, %n : memref<3x3xi32>, memref<2xi32>) outs(%q : memref<2x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<?x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %t: memref<3x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{'seqlens_k' batch B (dim 0) is 2, expected 3 as in 'block_table'}}
  fmha.attention ins(%q, %k, %k : memref<?x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>) paged(%t, %n : memref<3x3xi32>, memref<2xi32>) outs(%q : memref<?x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %k: memref<7x2x?x32xf32>, %t: memref<2x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{'k' page size P of a paged cache (dim 2) must be static}}
  fmha.attention ins(%q, %k, %k : memref<2x4x?x32xf32>, memref<7x2x?x32xf32>, memref<7x2x?x32xf32>) paged(%t, %n : memref<2x3xi32>, memref<2xi32>) outs(%q : memref<2x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %v: memref<6x2x16x32xf32>, %t: memref<2x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{'v' page count (dim 0) is 6, expected 7 as in 'k'}}
  fmha.attention ins(%q, %k, %v : memref<2x4x?x32xf32>, memref<7x2x16x32xf32>, memref<6x2x16x32xf32>) paged(%t, %n : memref<2x3xi32>, memref<2xi32>) outs(%q : memref<2x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %t: tensor<2x3xi32>, %n: tensor<2xi32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, but 'block_table' is a tensor while 'q' is a memref}}
  fmha.attention ins(%q, %k, %k : memref<2x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>) paged(%t, %n : tensor<2x3xi32>, tensor<2xi32>) outs(%q : memref<2x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %c: memref<3xi32>, %t: memref<2x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{takes no cu_seqlens_k with a paged cache (block_table): each sequence's keys are its cache's, seqlens_k[n] of them}}
  fmha.attention ins(%q, %k, %k : memref<1x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>) cu_seqlens(%c, %c : memref<3xi32>, memref<3xi32>) paged(%t, %n : memref<2x3xi32>, memref<2xi32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<1x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %c: memref<4xi32>, %t: memref<2x3xi32>, %n: memref<2xi32>) {
  // expected-error @+1 {{'block_table' sequence count N (dim 0) is 2, expected 3 as in 'cu_seqlens_q (N + 1)'}}
  fmha.attention ins(%q, %k, %k : memref<1x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>) cu_seqlens(%c : memref<4xi32>) paged(%t, %n : memref<2x3xi32>, memref<2xi32>) outs(%q : memref<1x4x?x32xf32>)
  return
}

// -----

func.func @f(%q: memref<2x4x?x32xf32>, %k: memref<7x2x16x32xf32>, %n: memref<2xi32>) {
  // expected-error @+1 {{takes block_table and seqlens_k together, got only seqlens_k}}
  "fmha.attention"(%q, %k, %k, %n, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 1, 1, 0>}> : (memref<2x4x?x32xf32>, memref<7x2x16x32xf32>, memref<7x2x16x32xf32>, memref<2xi32>, memref<2x4x?x32xf32>) -> ()
  return
}

// -----

#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
func.func @f(%t: tensor<16x16xf32>) {
  // expected-error @+1 {{'fmha.pack_tile' op 's packed tile must be (registers x warps) x lanes (8x32), got 'tensor<16x16xf32>'}}
  %p = fmha.pack_tile %t {order = #c16} : tensor<16x16xf32> -> tensor<16x16xf32>
  return
}

// -----

#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
func.func @f(%t: tensor<8x32xf32>) {
  // expected-error @+1 {{'fmha.unpack_tile' op 's tile must have the order's shape (16x16), got 'tensor<32x8xf32>'}}
  %p = fmha.unpack_tile %t {order = #c16} : tensor<8x32xf32> -> tensor<32x8xf32>
  return
}

// -----

// An order with replicas (B of mma.sync over 2 warps that both hold it):
// an element in two registers has no one place in the register order.
#b2 = #fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 0]]>
func.func @f(%t: tensor<16x8xf32>) {
  // expected-error @+1 {{'fmha.pack_tile' op takes an order without replicas (each element in one register of one lane), got}}
  %p = fmha.pack_tile %t {order = #b2} : tensor<16x8xf32> -> tensor<8x32xf32>
  return
}

// -----

#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
func.func @f(%t: vector<16x16xf32>) {
  // expected-error @+1 {{'fmha.pack_tile' op takes a tensor to a tensor or a vector to a vector, got 'vector<16x16xf32>' and 'tensor<8x32xf32>'}}
  %p = fmha.pack_tile %t {order = #c16} : vector<16x16xf32> -> tensor<8x32xf32>
  return
}

// -----

#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
func.func @f(%t: tensor<16x16xf32>) {
  // expected-error @+1 {{'fmha.pack_tile' op keeps the element type, got 'tensor<16x16xf32>' and 'tensor<8x32xf16>'}}
  %p = fmha.pack_tile %t {order = #c16} : tensor<16x16xf32> -> tensor<8x32xf16>
  return
}

// -----

#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#c8 = #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
func.func @f(%t: tensor<16x16xf32>) {
  // expected-error @+1 {{'fmha.pack_tile' op packed: the tile's shape must be the layout's (16x8), got 'tensor<8x32xf32, #fmha.layout}}
  %p = fmha.pack_tile %t {order = #c16} : tensor<16x16xf32> -> tensor<8x32xf32, #c8>
  return
}

// -----

func.func @f(%buf: memref<8x32xf32, 3>, %dest: memref<8x16xf32>) {
  // expected-error @+1 {{'fmha.add_async' op adds a 'memref<8x32xf32, 3>' into 'memref<8x16xf32>': both need the same static shape}}
  fmha.add_async %buf to %dest : memref<8x32xf32, 3> to memref<8x16xf32>
  return
}

// -----

func.func @f(%buf: memref<8x32xf32, 3>, %dest: memref<8x32xf32, strided<[64, 1], offset: ?>>) {
  // expected-error @+1 {{'fmha.add_async' op adds contiguous buffers (row stride the row's length), got 'memref<8x32xf32, strided<[64, 1], offset: ?>>'}}
  fmha.add_async %buf to %dest : memref<8x32xf32, 3> to memref<8x32xf32, strided<[64, 1], offset: ?>>
  return
}
