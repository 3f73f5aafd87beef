// RUN: fmha-opt %s | fmha-opt | FileCheck %s
// RUN: fmha-opt %s --mlir-print-op-generic | fmha-opt | FileCheck %s

// Register layouts print once, as aliases at the top; types name them.
// CHECK-DAG: #[[ACC:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[ROW:layout[0-9]*]] = #fmha.layout<64x1, register = {{\[\[8, 0\]\]}}, lane = {{\[\[0, 0\], \[0, 0\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>

// CHECK-LABEL: func @attention_tensor
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x?x64xf16>, %[[K:.+]]: tensor<2x2x?x64xf16>, %[[V:.+]]: tensor<2x2x?x32xf16>, %[[O:.+]]: tensor<2x8x?x32xf16>, %[[L:.+]]: tensor<2x8x?xf32>)
// CHECK: %{{.+}}:2 = fmha.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x8x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>) outs(%[[O]] : tensor<2x8x?x32xf16>, %[[L]] : tensor<2x8x?xf32>)
// CHECK-SAME: mask = #fmha.mask<"b:-1,0,4">
// CHECK-SAME: scale = 1.250000e-01 : f32
// CHECK-SAME: softcap = 3.000000e+01 : f32
// CHECK-SAME: -> tensor<2x8x?x32xf16>, tensor<2x8x?xf32>
func.func @attention_tensor(%q: tensor<2x8x?x64xf16>, %k: tensor<2x2x?x64xf16>,
    %v: tensor<2x2x?x32xf16>, %o: tensor<2x8x?x32xf16>, %l: tensor<2x8x?xf32>)
    -> (tensor<2x8x?x32xf16>, tensor<2x8x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<2x8x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>)
      outs(%o : tensor<2x8x?x32xf16>, %l : tensor<2x8x?xf32>)
      {mask = #fmha.mask<"b:-1,0,4">, scale = 0.125 : f32, softcap = 30.0 : f32}
      -> tensor<2x8x?x32xf16>, tensor<2x8x?xf32>
  return %0#0, %0#1 : tensor<2x8x?x32xf16>, tensor<2x8x?xf32>
}

// CHECK-LABEL: func @attention_no_lse
// CHECK: fmha.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>) outs(%{{.+}} : tensor<?x4x?x128xbf16>) -> tensor<?x4x?x128xbf16>
func.func @attention_no_lse(%q: tensor<?x4x?x128xbf16>, %o: tensor<?x4x?x128xbf16>) -> tensor<?x4x?x128xbf16> {
  %0 = fmha.attention ins(%q, %q, %q : tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>)
      outs(%o : tensor<?x4x?x128xbf16>) -> tensor<?x4x?x128xbf16>
  return %0 : tensor<?x4x?x128xbf16>
}

// CHECK-LABEL: func @attention_memref
// CHECK: fmha.attention ins({{.+}} : memref<?x8x?x64xf32>, memref<?x1x?x64xf32>, memref<?x1x?x64xf32>) outs(%{{.+}} : memref<?x8x?x64xf32>, %{{.+}} : memref<?x8x?xf32>) {mask = #fmha.mask<"t">}
// CHECK-NOT: ->
func.func @attention_memref(%q: memref<?x8x?x64xf32>, %k: memref<?x1x?x64xf32>, %v: memref<?x1x?x64xf32>,
                            %o: memref<?x8x?x64xf32>, %l: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xf32>, memref<?x1x?x64xf32>, memref<?x1x?x64xf32>)
      outs(%o : memref<?x8x?x64xf32>, %l : memref<?x8x?xf32>) {mask = #fmha.mask<"t">}
  return
}

// Every spec form parses and prints its canonical spelling.
// CHECK-LABEL: func @mask_specs
// CHECK-SAME: m00 = #fmha.mask<"0">
// CHECK-SAME: m01 = #fmha.mask<"0">
// CHECK-SAME: m02 = #fmha.mask<"t">
// CHECK-SAME: m03 = #fmha.mask<"b">
// CHECK-SAME: m04 = #fmha.mask<"t:3,7">
// CHECK-SAME: m05 = #fmha.mask<"b:-1,-1">
// CHECK-SAME: m06 = #fmha.mask<"t:128,0,4">
// CHECK-SAME: m07 = #fmha.mask<"b:-1,0,4">
// CHECK-SAME: m08 = #fmha.mask<"t:2,2">
// CHECK-SAME: m09 = #fmha.mask<"b:2,1">
// CHECK-SAME: m10 = #fmha.mask<"t">
// CHECK-SAME: m11 = #fmha.mask<"b">
func.func @mask_specs() attributes {
    m00 = #fmha.mask<"0">, m01 = #fmha.mask<"none">, m02 = #fmha.mask<"t">,
    m03 = #fmha.mask<"b">, m04 = #fmha.mask<"t:3,7">, m05 = #fmha.mask<"b:-5,-9">,
    m06 = #fmha.mask<"t:128,0,4">, m07 = #fmha.mask<"b:-1,0,4">,
    m08 = #fmha.mask<"xt:5">, m09 = #fmha.mask<"xb:4">, m10 = #fmha.mask<"xt:-1">,
    m11 = #fmha.mask<"xb:-3">} {
  return
}

// CHECK-LABEL: func @bwd
// CHECK: %{{.+}}:3 = fmha.attention_bwd ins({{.+}}) outs({{.+}}) {deterministic, mask = #fmha.mask<"t:16,0,2">, scale = 1.250000e-01 : f32} -> tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>
func.func @bwd(%q: tensor<1x4x?x64xf32>, %k: tensor<1x2x?x64xf32>, %o: tensor<1x4x?x64xf32>, %l: tensor<1x4x?xf32>)
    -> (tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) {
  %0:3 = fmha.attention_bwd ins(%q, %k, %k, %o, %l, %o : tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x4x?x64xf32>, tensor<1x4x?xf32>, tensor<1x4x?x64xf32>)
      outs(%q, %k, %k : tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>)
      {mask = #fmha.mask<"t:16,0,2">, scale = 0.125 : f32, deterministic}
      -> tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>
  return %0#0, %0#1, %0#2 : tensor<1x4x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>
}

// CHECK-LABEL: func @merge
// CHECK: fmha.merge ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf32>) outs(%{{.+}}, %{{.+}} : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
func.func @merge(%o: memref<1x4x?x64xf32>, %l: memref<1x4x?xf32>) {
  fmha.merge ins(%o, %l, %o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>, memref<1x4x?x64xf32>, memref<1x4x?xf32>)
      outs(%o, %l : memref<1x4x?x64xf32>, memref<1x4x?xf32>)
  return
}

// CHECK-LABEL: func @sinks_grad
// CHECK: fmha.sinks_grad ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : memref<?x8x?x64xbf16>, memref<?x8x?xf32>, memref<?x8x?x64xbf16>, memref<8xf32>) outs(%{{.+}} : memref<8xf32>)
// CHECK: fmha.sinks_grad ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x?x64xf16>, tensor<2x8x?xf32>, tensor<2x8x?x64xf16>, tensor<8xf32>) outs(%{{.+}} : tensor<8xf32>) -> tensor<8xf32>
func.func @sinks_grad(%o: memref<?x8x?x64xbf16>, %l: memref<?x8x?xf32>, %s: memref<8xf32>,
                      %to: tensor<2x8x?x64xf16>, %tl: tensor<2x8x?xf32>, %ts: tensor<8xf32>) -> tensor<8xf32> {
  fmha.sinks_grad ins(%o, %l, %o, %s : memref<?x8x?x64xbf16>, memref<?x8x?xf32>, memref<?x8x?x64xbf16>, memref<8xf32>) outs(%s : memref<8xf32>)
  %r = fmha.sinks_grad ins(%to, %tl, %to, %ts : tensor<2x8x?x64xf16>, tensor<2x8x?xf32>, tensor<2x8x?x64xf16>, tensor<8xf32>) outs(%ts : tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func @tile_ops
// CHECK: fmha.tile_init
// CHECK: fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} {scale = 5.000000e-01 : f32}
// CHECK: fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} masked[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {mask = #fmha.mask<"b">, scale = 5.000000e-01 : f32, softcap = 2.000000e+00 : f32}
// The element mask without a mask hides the keys at or past Sk alone.
// CHECK: fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} masked[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {scale = 5.000000e-01 : f32}
// CHECK: fmha.tile_softmax
// CHECK: fmha.tile_pv %{{.+}}, %{{.+}} into %{{.+}}
// CHECK: fmha.tile_finalize %{{.+}}, %{{.+}}, %{{.+}} into %{{.+}}, %{{.+}} :
func.func @tile_ops(%q: memref<?x64xf16>, %s: memref<?x?xf32>, %m: memref<?xf32>, %acc: memref<?x64xf32>, %i: index) {
  fmha.tile_init %m, %m, %acc : memref<?xf32>, memref<?xf32>, memref<?x64xf32>
  fmha.tile_qk %q, %q into %s {scale = 0.5 : f32} : memref<?x64xf16>, memref<?x64xf16>, memref<?x?xf32>
  fmha.tile_qk %q, %q into %s masked[%i, %i, %i, %i] {mask = #fmha.mask<"b">, scale = 0.5 : f32, softcap = 2.0 : f32} : memref<?x64xf16>, memref<?x64xf16>, memref<?x?xf32>
  fmha.tile_qk %q, %q into %s masked[%i, %i, %i, %i] {scale = 0.5 : f32} : memref<?x64xf16>, memref<?x64xf16>, memref<?x?xf32>
  fmha.tile_softmax %s, %m, %m, %acc : memref<?x?xf32>, memref<?xf32>, memref<?xf32>, memref<?x64xf32>
  fmha.tile_pv %s, %q into %acc : memref<?x?xf32>, memref<?x64xf16>, memref<?x64xf32>
  fmha.tile_finalize %m, %m, %acc into %q, %m : memref<?xf32>, memref<?xf32>, memref<?x64xf32>, memref<?x64xf16>, memref<?xf32>
  return
}

// -----

// The forward's tile ops on values return their updated outs.
// CHECK-LABEL: func @tile_ops_on_values
// CHECK: %[[I:.+]]:3 = fmha.tile_init %{{.+}}, %{{.+}}, %{{.+}} : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
// CHECK: %[[S:.+]] = fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} {scale = 5.000000e-01 : f32} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: %[[P:.+]]:4 = fmha.tile_softmax %[[S]], %[[I]]#0, %[[I]]#1, %[[I]]#2
// CHECK: %[[A:.+]] = fmha.tile_pv %[[P]]#0, %{{.+}} into %[[P]]#3
// CHECK: fmha.tile_finalize %[[P]]#1, %[[P]]#2, %[[A]] into %{{.+}}, %{{.+}} : {{.+}} -> tensor<?x64xf16>, tensor<?xf32>
func.func @tile_ops_on_values(%q: tensor<?x64xf16>, %s: tensor<?x?xf32>, %m: tensor<?xf32>, %acc: tensor<?x64xf32>) -> (tensor<?x64xf16>, tensor<?xf32>) {
  %i:3 = fmha.tile_init %m, %m, %acc : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32> -> tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
  %s1 = fmha.tile_qk %q, %q into %s {scale = 0.5 : f32} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x?xf32> -> tensor<?x?xf32>
  %p:4 = fmha.tile_softmax %s1, %i#0, %i#1, %i#2 : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32> -> tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>
  %a = fmha.tile_pv %p#0, %q into %p#3 : tensor<?x?xf32>, tensor<?x64xf16>, tensor<?x64xf32> -> tensor<?x64xf32>
  %o:2 = fmha.tile_finalize %p#1, %p#2, %a into %q, %m : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>, tensor<?x64xf16>, tensor<?xf32> -> tensor<?x64xf16>, tensor<?xf32>
  return %o#0, %o#1 : tensor<?x64xf16>, tensor<?xf32>
}

// -----

// The backward's tile ops on values return their updated outs too.
// CHECK-LABEL: func @backward_tile_ops_on_values
// CHECK: %[[Z:.+]] = fmha.tile_fill %{{.+}}, 0.000000e+00 : tensor<64x64xf32> -> tensor<64x64xf32>
// CHECK: %[[D:.+]] = fmha.tile_row_dot %{{.+}}, %{{.+}} into %{{.+}} : tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64xf32> -> tensor<64xf32>
// CHECK: %[[P:.+]] = fmha.tile_bwd_probs %{{.+}}, %{{.+}} into %{{.+}} : tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
// CHECK: %[[DP:.+]] = fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {alpha = 1.000000e+00 : f32, transpose_b} : {{.+}} -> tensor<64x64xf32>
// CHECK: %[[DS:.+]] = fmha.tile_bwd_ds %[[P]], %[[D]] capped %{{.+}} into %[[DP]] {softcap = 3.000000e+01 : f32} : {{.+}} -> tensor<64x64xf32>
// CHECK: %[[DK:.+]] = fmha.tile_matmul %[[DS]], %{{.+}} into %[[Z]] {accumulate, alpha = 1.250000e-01 : f32, transpose_a}
// CHECK: fmha.tile_store %[[DK]] into %{{.+}} : tensor<64x64xf32>, tensor<64x64xbf16> -> tensor<64x64xbf16>
func.func @backward_tile_ops_on_values(%q: tensor<64x64xbf16>, %s: tensor<64x64xf32>, %r: tensor<64xf32>) -> tensor<64x64xbf16> {
  %z = fmha.tile_fill %s, 0.0 : tensor<64x64xf32> -> tensor<64x64xf32>
  %d = fmha.tile_row_dot %q, %q into %r : tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64xf32> -> tensor<64xf32>
  %p = fmha.tile_bwd_probs %s, %r into %s : tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %dp = fmha.tile_matmul %q, %q into %s {alpha = 1.0 : f32, transpose_b} : tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xf32> -> tensor<64x64xf32>
  %ds = fmha.tile_bwd_ds %p, %d capped %s into %dp {softcap = 30.0 : f32} : tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %dk = fmha.tile_matmul %ds, %q into %z {alpha = 0.125 : f32, transpose_a, accumulate} : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32> -> tensor<64x64xf32>
  %o = fmha.tile_store %dk into %q : tensor<64x64xf32>, tensor<64x64xbf16> -> tensor<64x64xbf16>
  return %o : tensor<64x64xbf16>
}

// -----

// The transposed form (keys as rows) of the dK/dV loop: S^T = K Q^T, and the
// lse and Dsum along the columns.
// CHECK-LABEL: func @transposed_tile_ops
// CHECK: %[[ST:.+]] = fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} transposed masked[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {mask = #fmha.mask<"t">, scale = 1.250000e-01 : f32} : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xf32> -> tensor<32x64xf32>
// CHECK: %[[PT:.+]] = fmha.tile_bwd_probs %[[ST]], %{{.+}} into %{{.+}} transposed : tensor<32x64xf32>, tensor<64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
// CHECK: fmha.tile_bwd_ds %[[PT]], %{{.+}} into %{{.+}} transposed : tensor<32x64xf32>, tensor<64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
func.func @transposed_tile_ops(%q: tensor<64x64xbf16>, %k: tensor<32x64xbf16>, %s: tensor<32x64xf32>, %r: tensor<64xf32>, %i: index) -> tensor<32x64xf32> {
  %st = fmha.tile_qk %q, %k into %s transposed masked[%i, %i, %i, %i] {mask = #fmha.mask<"t">, scale = 0.125 : f32} : tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xf32> -> tensor<32x64xf32>
  %pt = fmha.tile_bwd_probs %st, %r into %s transposed : tensor<32x64xf32>, tensor<64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  %ds = fmha.tile_bwd_ds %pt, %r into %s transposed : tensor<32x64xf32>, tensor<64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  return %ds : tensor<32x64xf32>
}

// -----

// Register tiles typed with their layout: mma.sync's accumulators of a 64 x 64
// tile over 4 warps, and the row vector of their row maxima.
// CHECK-LABEL: func @tile_ops_with_layouts
// CHECK-SAME: tensor<64x64xf32, #[[ACC]]>
// CHECK-SAME: tensor<64xf32, #[[ROW]]>
// CHECK: fmha.tile_softmax
func.func @tile_ops_with_layouts(%s: tensor<64x64xf32, #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>,
                                 %m: tensor<64xf32, #fmha.layout<64x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>,
                                 %acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r:4 = fmha.tile_softmax %s, %m, %m, %acc : tensor<64x64xf32, #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>, tensor<64xf32, #fmha.layout<64x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>, tensor<64xf32, #fmha.layout<64x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>, tensor<64x64xf32> -> tensor<64x64xf32, #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>, tensor<64xf32, #fmha.layout<64x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>, tensor<64xf32, #fmha.layout<64x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>, tensor<64x64xf32>
  return %r#3 : tensor<64x64xf32>
}

// -----

// The backward tile ops.
// CHECK-LABEL: func @bwd_tile_ops
// CHECK: fmha.tile_fill %{{.+}}, 0.000000e+00 : memref<16x32xf32>
// CHECK: fmha.tile_row_dot %{{.+}}, %{{.+}} into %{{.+}} : memref<16x64xbf16>, memref<16x64xbf16>, memref<16xf32>
// CHECK: fmha.tile_bwd_probs %{{.+}}, %{{.+}} into %{{.+}} : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>
// CHECK: fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {alpha = 1.000000e+00 : f32, transpose_b} : memref<16x64xbf16>, memref<32x64xbf16>, memref<16x32xf32>
// CHECK: fmha.tile_bwd_ds %{{.+}}, %{{.+}} capped %{{.+}} into %{{.+}} {softcap = 3.000000e+01 : f32}
// CHECK: fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {accumulate, alpha = 1.250000e-01 : f32, atomic}
// CHECK: fmha.tile_store %{{.+}} into %{{.+}} : memref<16x32xf32>, memref<16x32xbf16>
func.func @bwd_tile_ops(%do: memref<16x64xbf16>, %v: memref<32x64xbf16>, %s: memref<16x32xf32>, %p: memref<16x32xf32>, %dp: memref<16x32xf32>, %lse: memref<16xf32>, %dsum: memref<16xf32>, %dq: memref<16x64xf32>, %out: memref<16x32xbf16>) {
  fmha.tile_fill %dp, 0.0 : memref<16x32xf32>
  fmha.tile_row_dot %do, %do into %dsum : memref<16x64xbf16>, memref<16x64xbf16>, memref<16xf32>
  fmha.tile_bwd_probs %s, %lse into %p : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>
  fmha.tile_matmul %do, %v into %dp {alpha = 1.0 : f32, transpose_b} : memref<16x64xbf16>, memref<32x64xbf16>, memref<16x32xf32>
  fmha.tile_bwd_ds %p, %dsum capped %s into %dp {softcap = 30.0 : f32} : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>, memref<16x32xf32>
  fmha.tile_matmul %dp, %v into %dq {accumulate, alpha = 0.125 : f32, atomic} : memref<16x32xf32>, memref<32x64xbf16>, memref<16x64xf32>
  fmha.tile_store %dp into %out : memref<16x32xf32>, memref<16x32xbf16>
  return
}

// CHECK-LABEL: func @accumulate
// CHECK: fmha.accumulate ins(%{{.+}} : memref<?xbf16>) outs(%{{.+}} : memref<?xf32>)
// CHECK: fmha.accumulate ins(%{{.+}} : memref<2x?x8xf32>) outs(%{{.+}} : memref<2x?x8xf32>)
// CHECK: %{{.+}} = fmha.accumulate ins(%{{.+}} : tensor<4x?xf16>) outs(%{{.+}} : tensor<4x?xf32>) -> tensor<4x?xf32>
func.func @accumulate(%x: memref<?xbf16>, %acc: memref<?xf32>, %y: memref<2x?x8xf32>,
                      %t: tensor<4x?xf16>, %ta: tensor<4x?xf32>) -> tensor<4x?xf32> {
  fmha.accumulate ins(%x : memref<?xbf16>) outs(%acc : memref<?xf32>)
  fmha.accumulate ins(%y : memref<2x?x8xf32>) outs(%y : memref<2x?x8xf32>)
  %r = fmha.accumulate ins(%t : tensor<4x?xf16>) outs(%ta : tensor<4x?xf32>) -> tensor<4x?xf32>
  return %r : tensor<4x?xf32>
}

// A tile moving between layouts, and between registers and plain tensors.
// CHECK-LABEL: func @convert_layout
// CHECK: %[[R:.+]] = fmha.convert_layout %{{.+}} : tensor<64x64xf32> -> tensor<64x64xf32, #[[ACC]]>
// CHECK: fmha.convert_layout %[[R]] : tensor<64x64xf32, #[[ACC]]> -> tensor<64x64xf32>
func.func @convert_layout(%t: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r = fmha.convert_layout %t : tensor<64x64xf32> -> tensor<64x64xf32, #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>>
  %p = fmha.convert_layout %r : tensor<64x64xf32, #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>> -> tensor<64x64xf32>
  return %p : tensor<64x64xf32>
}

// A vector tile anchored in a layout (the form of convert_layout on vectors),
// a row vector in a layout of one column.
// CHECK-LABEL: func @to_layout
// CHECK: %[[C:.+]] = fmha.to_layout %{{.+}} to layout(#{{.+}}) : vector<16x8xf32>
// CHECK: fmha.to_layout %[[C]] to layout(#{{.+}}) : vector<16x8xf32>
// CHECK: fmha.to_layout %{{.+}} to layout(#{{.+}}) : vector<16xf32>
func.func @to_layout(%s: vector<16x8xf32>, %m: vector<16xf32>) -> (vector<16x8xf32>, vector<16xf32>) {
  %c = fmha.to_layout %s to layout(#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<16x8xf32>
  %a = fmha.to_layout %c to layout(#fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>) : vector<16x8xf32>
  %r = fmha.to_layout %m to layout(#fmha.layout<16x1, register = [[8, 0]], lane = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<16xf32>
  return %a, %r : vector<16x8xf32>, vector<16xf32>
}

// An asynchronous tile copy into workgroup memory (16 x 16 f16 in the copy
// layout of 32 lanes: 16 bytes a lane), from a 2-D operand into a stage of
// a 3-D buffer, and the wait for it.
// CHECK-LABEL: func @copy_async
// CHECK: fmha.copy_async %{{.+}}[%{{.+}}, %{{.+}}] to %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] layout(#{{.+}}) : memref<?x16xf16> to memref<2x16x24xf16, 3>
// CHECK: fmha.copy_wait pending(1)
func.func @copy_async(%k: memref<?x16xf16>, %buf: memref<2x16x24xf16, 3>, %row: index, %slot: index) {
  %c0 = arith.constant 0 : index
  fmha.copy_async %k[%row, %c0] to %buf[%slot, %c0, %c0] layout(#fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>) : memref<?x16xf16> to memref<2x16x24xf16, 3>
  fmha.copy_wait pending(1)
  return
}

// Learned sink logits: an optional input f32 [Hq] after q, k, v.
// CHECK-LABEL: func @attention_sinks
// CHECK: fmha.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) sinks(%{{.+}} : tensor<8xf32>) outs(%{{.+}} : tensor<2x8x?x64xbf16>, %{{.+}} : tensor<2x8x?xf32>) {mask = #fmha.mask<"b:-1,0,4">}
// CHECK: fmha.attention ins({{.+}}) sinks(%{{.+}} : memref<4xf32>) outs(%{{.+}} : memref<1x4x?x32xf32>){{$}}
func.func @attention_sinks(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %s: tensor<8xf32>, %o: tensor<2x8x?x64xbf16>, %l: tensor<2x8x?xf32>,
    %mq: memref<1x4x?x32xf32>, %ms: memref<4xf32>) -> (tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) sinks(%s : tensor<8xf32>)
      outs(%o : tensor<2x8x?x64xbf16>, %l : tensor<2x8x?xf32>) {mask = #fmha.mask<"b:-1,0,4">} -> tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
  fmha.attention ins(%mq, %mq, %mq : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) sinks(%ms : memref<4xf32>) outs(%mq : memref<1x4x?x32xf32>)
  return %0#0, %0#1 : tensor<2x8x?x64xbf16>, tensor<2x8x?xf32>
}

// A variable-length batch: cu_seqlens_q and cu_seqlens_k (i32 [N + 1]) after
// the sinks; the tensors have batch 1.
// CHECK-LABEL: func @attention_varlen
// CHECK: fmha.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) sinks(%{{.+}} : tensor<8xf32>) cu_seqlens(%{{.+}}, %{{.+}} : tensor<?xi32>, tensor<?xi32>) outs(%{{.+}} : tensor<1x8x?x64xbf16>, %{{.+}} : tensor<1x8x?xf32>) {mask = #fmha.mask<"b">}
// CHECK: fmha.attention ins({{.+}}) cu_seqlens(%{{.+}}, %{{.+}} : memref<4xi32>, memref<4xi32>) outs(%{{.+}} : memref<1x4x?x32xf32>){{$}}
func.func @attention_varlen(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %s: tensor<8xf32>, %cq: tensor<?xi32>, %ck: tensor<?xi32>,
    %o: tensor<1x8x?x64xbf16>, %l: tensor<1x8x?xf32>, %mq: memref<1x4x?x32xf32>, %mc: memref<4xi32>) -> (tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %k : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) sinks(%s : tensor<8xf32>)
      cu_seqlens(%cq, %ck : tensor<?xi32>, tensor<?xi32>)
      outs(%o : tensor<1x8x?x64xbf16>, %l : tensor<1x8x?xf32>) {mask = #fmha.mask<"b:-1,0">} -> tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
  fmha.attention ins(%mq, %mq, %mq : memref<1x4x?x32xf32>, memref<1x4x?x32xf32>, memref<1x4x?x32xf32>) cu_seqlens(%mc, %mc : memref<4xi32>, memref<4xi32>) outs(%mq : memref<1x4x?x32xf32>)
  return %0#0, %0#1 : tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
}

// A paged cache: block_table (i32 [B, max_pages]) and seqlens_k (i32 [B])
// after the offsets, k and v the pages [pages, Hk, P, D]; with cu_seqlens_q
// alone, chunked prefill.
// CHECK-LABEL: func @attention_paged
// CHECK: fmha.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<?x8x1x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16>) paged(%{{.+}}, %{{.+}} : tensor<?x?xi32>, tensor<?xi32>) outs(%{{.+}} : tensor<?x8x1x64xbf16>) {mask = #fmha.mask<"b">}
// CHECK: fmha.attention ins({{.+}}) cu_seqlens(%{{.+}} : memref<4xi32>) paged(%{{.+}}, %{{.+}} : memref<3x5xi32>, memref<3xi32>) outs(%{{.+}} : memref<1x4x?x32xf32>){{$}}
func.func @attention_paged(%q: tensor<?x8x1x64xbf16>, %kc: tensor<?x2x16x64xbf16>, %t: tensor<?x?xi32>, %n: tensor<?xi32>,
    %o: tensor<?x8x1x64xbf16>, %mq: memref<1x4x?x32xf32>, %mk: memref<9x2x32x32xf32>, %mc: memref<4xi32>, %mt: memref<3x5xi32>, %mn: memref<3xi32>) -> tensor<?x8x1x64xbf16> {
  %0 = fmha.attention ins(%q, %kc, %kc : tensor<?x8x1x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16>)
      paged(%t, %n : tensor<?x?xi32>, tensor<?xi32>)
      outs(%o : tensor<?x8x1x64xbf16>) {mask = #fmha.mask<"b:-1,0">} -> tensor<?x8x1x64xbf16>
  fmha.attention ins(%mq, %mk, %mk : memref<1x4x?x32xf32>, memref<9x2x32x32xf32>, memref<9x2x32x32xf32>) cu_seqlens(%mc : memref<4xi32>) paged(%mt, %mn : memref<3x5xi32>, memref<3xi32>) outs(%mq : memref<1x4x?x32xf32>)
  return %0 : tensor<?x8x1x64xbf16>
}

// -----

// The values form's dQ accumulator: a value tile stored into a buffer (its
// zeroing) and f32 tiles added into it atomically, as values, as vectors
// and as buffers.
// CHECK-LABEL: func @dq_accumulator
// CHECK: fmha.tile_store %{{.+}} into %{{.+}} : tensor<16x32xf32>, memref<16x32xf32>
// CHECK: fmha.atomic_add %{{.+}}, %{{.+}} : tensor<16x32xf32>, memref<16x32xf32>
// CHECK: fmha.atomic_add %{{.+}}, %{{.+}} : vector<16x32xf32>, memref<16x32xf32, strided<[64, 1], offset: ?>>
// CHECK: fmha.atomic_add %{{.+}}, %{{.+}} : memref<16x32xf32>, memref<16x32xf32>
func.func @dq_accumulator(%t: tensor<16x32xf32>, %v: vector<16x32xf32>, %m: memref<16x32xf32>, %acc: memref<16x32xf32>, %view: memref<16x32xf32, strided<[64, 1], offset: ?>>) {
  fmha.tile_store %t into %acc : tensor<16x32xf32>, memref<16x32xf32>
  fmha.atomic_add %t, %acc : tensor<16x32xf32>, memref<16x32xf32>
  fmha.atomic_add %v, %view : vector<16x32xf32>, memref<16x32xf32, strided<[64, 1], offset: ?>>
  fmha.atomic_add %m, %acc : memref<16x32xf32>, memref<16x32xf32>
  return
}

// A C tile (mma.sync's 16x16 over one warp, 8 registers a lane) in the
// order of its registers (8 x 32) and back, on tensors and on vectors.
#c16 = #fmha.layout<16x16, register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
// CHECK-LABEL: func @register_order
// CHECK: %[[P:.+]] = fmha.pack_tile %{{.+}} {order = #{{.+}}} : tensor<16x16xf32, #{{.+}}> -> tensor<8x32xf32>
// CHECK: fmha.unpack_tile %[[P]] {order = #{{.+}}} : tensor<8x32xf32> -> tensor<16x16xf32>
// CHECK: %[[V:.+]] = fmha.pack_tile %{{.+}} {order = #{{.+}}} : vector<16x16xf32> -> vector<8x32xf32>
// CHECK: fmha.unpack_tile %[[V]] {order = #{{.+}}} : vector<8x32xf32> -> vector<16x16xf32>
func.func @register_order(%t: tensor<16x16xf32, #c16>, %v: vector<16x16xf32>) -> (tensor<16x16xf32>, vector<16x16xf32>) {
  %p = fmha.pack_tile %t {order = #c16} : tensor<16x16xf32, #c16> -> tensor<8x32xf32>
  %u = fmha.unpack_tile %p {order = #c16} : tensor<8x32xf32> -> tensor<16x16xf32>
  %pv = fmha.pack_tile %v {order = #c16} : vector<16x16xf32> -> vector<8x32xf32>
  %uv = fmha.unpack_tile %pv {order = #c16} : vector<8x32xf32> -> vector<16x16xf32>
  return %u, %uv : tensor<16x16xf32>, vector<16x16xf32>
}

// A workgroup buffer added into a contiguous tile asynchronously, and the
// waits.
// CHECK-LABEL: func @bulk_add
// CHECK: fmha.add_wait {read}
// CHECK: fmha.add_async %{{.+}} to %{{.+}} : memref<8x32xf32, 3> to memref<8x32xf32, strided<[32, 1], offset: ?>>
// CHECK: fmha.add_wait
func.func @bulk_add(%buf: memref<8x32xf32, 3>, %dest: memref<8x32xf32, strided<[32, 1], offset: ?>>) {
  fmha.add_wait {read}
  fmha.add_async %buf to %dest : memref<8x32xf32, 3> to memref<8x32xf32, strided<[32, 1], offset: ?>>
  fmha.add_wait
  return
}
