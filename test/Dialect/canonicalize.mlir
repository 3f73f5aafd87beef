// RUN: fmha-opt %s -canonicalize -split-input-file | FileCheck %s

// A window that covers every key of a 100 x 300 problem hides nothing.
// CHECK-LABEL: func @window_covers_all
// CHECK: fmha.attention
// CHECK-NOT: mask
// CHECK-SAME: : memref<1x4x100x64xf32>
func.func @window_covers_all(%q: memref<1x4x100x64xf32>, %k: memref<1x4x300x64xf32>, %o: memref<1x4x100x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<1x4x100x64xf32>, memref<1x4x300x64xf32>, memref<1x4x300x64xf32>) outs(%o : memref<1x4x100x64xf32>) {mask = #fmha.mask<"t:99,299">}
  return
}

// -----

// One key short on the right: the window stays.
// CHECK-LABEL: func @window_one_short
// CHECK: mask = #fmha.mask<"t:-1,298">
func.func @window_one_short(%q: memref<1x4x100x64xf32>, %k: memref<1x4x300x64xf32>, %o: memref<1x4x100x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<1x4x100x64xf32>, memref<1x4x300x64xf32>, memref<1x4x300x64xf32>) outs(%o : memref<1x4x100x64xf32>) {mask = #fmha.mask<"t:99,298">}
  return
}

// -----

// Bottom-right: left covers when L >= Sk - 1, right when R >= Sq - 1.
// CHECK-LABEL: func @bottom_right_bounds
// CHECK: mask = #fmha.mask<"b">
// CHECK: mask = #fmha.mask<"b:298,-1">
// CHECK: fmha.attention
// CHECK-NOT: mask
// CHECK-SAME: : memref<1x4x100x64xf32>
func.func @bottom_right_bounds(%q: memref<1x4x100x64xf32>, %k: memref<1x4x300x64xf32>, %o: memref<1x4x100x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<1x4x100x64xf32>, memref<1x4x300x64xf32>, memref<1x4x300x64xf32>) outs(%o : memref<1x4x100x64xf32>) {mask = #fmha.mask<"b:299,0">}
  fmha.attention ins(%q, %k, %k : memref<1x4x100x64xf32>, memref<1x4x300x64xf32>, memref<1x4x300x64xf32>) outs(%o : memref<1x4x100x64xf32>) {mask = #fmha.mask<"b:298,99">}
  fmha.attention ins(%q, %k, %k : memref<1x4x100x64xf32>, memref<1x4x300x64xf32>, memref<1x4x300x64xf32>) outs(%o : memref<1x4x100x64xf32>) {mask = #fmha.mask<"b:299,99">}
  return
}

// -----

// With Sq == Sk static, bottom-right is top-left.
// CHECK-LABEL: func @b_is_t_when_square
// CHECK: mask = #fmha.mask<"t">
// CHECK: mask = #fmha.mask<"t:8,0,4">
func.func @b_is_t_when_square(%q: tensor<2x4x128x64xf32>, %o: tensor<2x4x128x64xf32>) -> (tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>) {
  %0 = fmha.attention ins(%q, %q, %q : tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>) outs(%o : tensor<2x4x128x64xf32>) {mask = #fmha.mask<"b">} -> tensor<2x4x128x64xf32>
  %1 = fmha.attention ins(%q, %q, %q : tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>) outs(%o : tensor<2x4x128x64xf32>) {mask = #fmha.mask<"b:8,0,4">} -> tensor<2x4x128x64xf32>
  return %0, %1 : tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>
}

// -----

// Dynamic lengths: only the shape-independent rules apply.
// CHECK-LABEL: func @dynamic
// CHECK: mask = #fmha.mask<"b">
// CHECK: mask = #fmha.mask<"t:1000000,0">
// CHECK: fmha.attention
// CHECK-NOT: mask
// CHECK-SAME: : memref<1x4x?x64xf32>
func.func @dynamic(%q: memref<1x4x?x64xf32>, %o: memref<1x4x?x64xf32>) {
  fmha.attention ins(%q, %q, %q : memref<1x4x?x64xf32>, memref<1x4x?x64xf32>, memref<1x4x?x64xf32>) outs(%o : memref<1x4x?x64xf32>) {mask = #fmha.mask<"b">}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x64xf32>, memref<1x4x?x64xf32>, memref<1x4x?x64xf32>) outs(%o : memref<1x4x?x64xf32>) {mask = #fmha.mask<"t:1000000,0">}
  fmha.attention ins(%q, %q, %q : memref<1x4x?x64xf32>, memref<1x4x?x64xf32>, memref<1x4x?x64xf32>) outs(%o : memref<1x4x?x64xf32>) {mask = #fmha.mask<"t:-1,-1,4">}
  return
}

// -----

// Sinks covering every key, and the explicit `0`, leave no mask.
// CHECK-LABEL: func @sink_covers_all
// CHECK-COUNT-2: fmha.attention
// CHECK-NOT: mask =
func.func @sink_covers_all(%q: memref<1x4x10x64xf32>, %k: memref<1x4x16x64xf32>, %o: memref<1x4x10x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<1x4x10x64xf32>, memref<1x4x16x64xf32>, memref<1x4x16x64xf32>) outs(%o : memref<1x4x10x64xf32>) {mask = #fmha.mask<"t:2,0,16">}
  fmha.attention ins(%q, %k, %k : memref<1x4x10x64xf32>, memref<1x4x16x64xf32>, memref<1x4x16x64xf32>) outs(%o : memref<1x4x10x64xf32>) {mask = #fmha.mask<"0">}
  return
}

// -----

// The backward op simplifies its mask the same way.
// CHECK-LABEL: func @bwd
// CHECK: fmha.attention_bwd
// CHECK-SAME: mask = #fmha.mask<"t">
func.func @bwd(%q: memref<1x2x32x64xf32>, %l: memref<1x2x32xf32>) {
  fmha.attention_bwd ins(%q, %q, %q, %q, %l, %q : memref<1x2x32x64xf32>, memref<1x2x32x64xf32>, memref<1x2x32x64xf32>, memref<1x2x32x64xf32>, memref<1x2x32xf32>, memref<1x2x32x64xf32>) outs(%q, %q, %q : memref<1x2x32x64xf32>, memref<1x2x32x64xf32>, memref<1x2x32x64xf32>) {mask = #fmha.mask<"b:-1,0">}
  return
}

// -----

// A conversion to the type it has folds away, a chain of conversions is one
// conversion from the first source, and one back to where the chain started
// folds to that value.
// CHECK-LABEL: func @convert_layout_folds
// CHECK-SAME: (%[[S:[^:]+]]: tensor<16x8xf32>
// CHECK: %[[A:.+]] = fmha.convert_layout %[[S]] : tensor<16x8xf32> -> tensor<16x8xf32, #{{.+}}>
// CHECK-NOT: fmha.convert_layout
// CHECK: return %[[S]], %[[A]], %[[S]]
func.func @convert_layout_folds(%s: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32, #fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>>, tensor<16x8xf32>) {
  %same = fmha.convert_layout %s : tensor<16x8xf32> -> tensor<16x8xf32>
  %c = fmha.convert_layout %s : tensor<16x8xf32> -> tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>>
  %a = fmha.convert_layout %c : tensor<16x8xf32, #fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>> -> tensor<16x8xf32, #fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>>
  %back = fmha.convert_layout %a : tensor<16x8xf32, #fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>> -> tensor<16x8xf32>
  return %same, %a, %back : tensor<16x8xf32>, tensor<16x8xf32, #fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>>, tensor<16x8xf32>
}

// -----

// A vector anchored twice in one layout is anchored once; an anchor in
// another layout stays (a conversion).
// CHECK-LABEL: func @to_layout_folds
// CHECK: %[[C:.+]] = fmha.to_layout %{{.+}} to layout(#[[L:.+]]) : vector<16x8xf32>
// CHECK-NEXT: %[[A:.+]] = fmha.to_layout %[[C]] to layout(#{{.+}}) : vector<16x8xf32>
// CHECK-NEXT: return %[[C]], %[[A]]
func.func @to_layout_folds(%s: vector<16x8xf32>) -> (vector<16x8xf32>, vector<16x8xf32>) {
  %c = fmha.to_layout %s to layout(#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<16x8xf32>
  %same = fmha.to_layout %c to layout(#fmha.layout<16x8, register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>) : vector<16x8xf32>
  %a = fmha.to_layout %c to layout(#fmha.layout<16x8, register = [[1, 0], [8, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>) : vector<16x8xf32>
  return %same, %a : vector<16x8xf32>, vector<16x8xf32>
}

// -----

// A variable-length batch keeps its mask: Sq and Sk are each sequence's,
// not the tensors' (here equal, which would make "b" top-left).
// CHECK-LABEL: func @varlen_keeps_mask
// CHECK: mask = #fmha.mask<"b">
func.func @varlen_keeps_mask(%q: memref<1x4x100x32xf32>, %c: memref<3xi32>) {
  fmha.attention ins(%q, %q, %q : memref<1x4x100x32xf32>, memref<1x4x100x32xf32>, memref<1x4x100x32xf32>) cu_seqlens(%c, %c : memref<3xi32>, memref<3xi32>) outs(%q : memref<1x4x100x32xf32>) {mask = #fmha.mask<"b:-1,0">}
  return
}

// -----

// A paged cache keeps its mask: Sk is seqlens_k's, not the page size.
// CHECK-LABEL: func @paged_keeps_mask
// CHECK: mask = #fmha.mask<"b">
func.func @paged_keeps_mask(%q: memref<2x4x16x32xf32>, %k: memref<5x4x16x32xf32>, %t: memref<2x3xi32>, %n: memref<2xi32>) {
  fmha.attention ins(%q, %k, %k : memref<2x4x16x32xf32>, memref<5x4x16x32xf32>, memref<5x4x16x32xf32>) paged(%t, %n : memref<2x3xi32>, memref<2xi32>) outs(%q : memref<2x4x16x32xf32>) {mask = #fmha.mask<"b:-1,0">}
  return
}
