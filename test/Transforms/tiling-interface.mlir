// RUN: fmha-opt %s --transform-interpreter -cse -split-input-file -verify-diagnostics | FileCheck %s

// fmha.attention's TilingInterface: parallel dims B, Hq, Sq. A tile of 4 query
// heads (GQA 8:2, group 4) reads the one kv head h0 / 4 and every key; the
// tile's own op keeps the mask (Sq and Sk are untouched).
// CHECK-DAG: #[[KV:.+]] = affine_map<(d0) -> (d0 floordiv 4)>
// CHECK-LABEL: func @heads
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[H:.+]] = %c0 to %c8 step %c4
// CHECK:     %[[KVH:.+]] = affine.apply #[[KV]](%[[H]])
// CHECK:     %[[Q:.+]] = tensor.extract_slice %arg0[%[[B]], %[[H]], 0, 0] [1, 4, %{{.+}}, 64]
// CHECK:     %[[K:.+]] = tensor.extract_slice %arg1[%[[B]], %[[KVH]], 0, 0] [1, 1, %{{.+}}, 64]
// CHECK:     fmha.attention ins(%[[Q]], %[[K]], %[[K]] : tensor<1x4x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>) outs({{.+}}) {mask = #fmha.mask<"b:-1,0,4">}
// CHECK:     tensor.insert_slice
// CHECK:     tensor.insert_slice
func.func @heads(%q: tensor<2x8x?x64xf16>, %k: tensor<2x2x?x64xf16>, %o: tensor<2x8x?x64xf16>, %l: tensor<2x8x?xf32>) -> (tensor<2x8x?x64xf16>, tensor<2x8x?xf32>) {
  %r:2 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>) outs(%o : tensor<2x8x?x64xf16>, %l : tensor<2x8x?xf32>) {mask = #fmha.mask<"b:-1,0,4">} -> tensor<2x8x?x64xf16>, tensor<2x8x?xf32>
  return %r#0, %r#1 : tensor<2x8x?x64xf16>, tensor<2x8x?xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0, %l1 = transform.structured.tile_using_for %op tile_sizes [1, 4, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Without a mask the query sequence tiles too (16 rows per tile).
// CHECK-LABEL: func @rows
// CHECK: scf.for %[[S:.+]] = %c0 to %{{.+}} step %c16
// CHECK:   %[[ROWS:.+]] = affine.min
// CHECK:   tensor.extract_slice %arg0[0, 0, %[[S]], 0] [1, 2, %[[ROWS]], 32]
// CHECK:   fmha.attention {{.+}} -> tensor<1x2x?x32xf32>
func.func @rows(%q: tensor<1x2x?x32xf32>, %o: tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32> {
  %r = fmha.attention ins(%q, %q, %q : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) outs(%o : tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32>
  return %r : tensor<1x2x?x32xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

func.func @split_group(%q: tensor<2x8x?x64xf16>, %k: tensor<2x2x?x64xf16>, %o: tensor<2x8x?x64xf16>) -> tensor<2x8x?x64xf16> {
  // expected-error @+3 {{head tiles must be a constant multiple of Hq / Hk (4) so that each reads whole kv heads}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-error @+1 {{faild to tile operation}}
  %r = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>) outs(%o : tensor<2x8x?x64xf16>) -> tensor<2x8x?x64xf16>
  return %r : tensor<2x8x?x64xf16>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [0, 2, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

func.func @masked_rows(%q: tensor<1x2x?x32xf32>, %o: tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32> {
  // expected-error @+3 {{cannot tile the query sequence under mask 't': the mask needs absolute row indices; tile B and Hq only}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-error @+1 {{faild to tile operation}}
  %r = fmha.attention ins(%q, %q, %q : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) outs(%o : tensor<1x2x?x32xf32>) {mask = #fmha.mask<"t">} -> tensor<1x2x?x32xf32>
  return %r : tensor<1x2x?x32xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

func.func @memrefs(%q: memref<2x2x16x32xf32>, %o: memref<2x2x16x32xf32>) {
  // expected-error @+3 {{is tiled through TilingInterface on tensors only}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-error @+1 {{faild to tile operation}}
  fmha.attention ins(%q, %q, %q : memref<2x2x16x32xf32>, memref<2x2x16x32xf32>, memref<2x2x16x32xf32>) outs(%o : memref<2x2x16x32xf32>)
  return
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [1, 0, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Learned sink logits: a tile of query heads takes their slice of sinks.
// CHECK-LABEL: func @sinks
// CHECK: scf.for %[[H:.+]] = %c0 to %c8 step %c4
// CHECK:   %[[S:.+]] = tensor.extract_slice %arg2[%[[H]]] [4] [1] : tensor<8xf32> to tensor<4xf32>
// CHECK:   fmha.attention ins({{.+}}) sinks(%[[S]] : tensor<4xf32>) outs({{.+}})
func.func @sinks(%q: tensor<2x8x?x64xf16>, %k: tensor<2x2x?x64xf16>, %s: tensor<8xf32>, %o: tensor<2x8x?x64xf16>) -> tensor<2x8x?x64xf16> {
  %r = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>) sinks(%s : tensor<8xf32>) outs(%o : tensor<2x8x?x64xf16>) -> tensor<2x8x?x64xf16>
  return %r : tensor<2x8x?x64xf16>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [0, 4, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A variable-length batch tiles its query heads; every tile keeps all the
// offsets (the sequences share the sequence axis).
// CHECK-LABEL: func @varlen_heads
// CHECK: scf.for %[[H:.+]] = %c0 to %c4 step %c2
// CHECK:   %[[Q:.+]] = tensor.extract_slice %arg0[0, %[[H]], 0, 0] [1, 2, %{{.+}}, 32]
// CHECK:   fmha.attention ins(%[[Q]], %{{.+}}, %{{.+}} : tensor<1x2x?x32xf32>, tensor<1x1x?x32xf32>, tensor<1x1x?x32xf32>) cu_seqlens(%arg2, %arg3 : tensor<3xi32>, tensor<3xi32>) outs(
func.func @varlen_heads(%q: tensor<1x4x?x32xf32>, %k: tensor<1x2x?x32xf32>, %c: tensor<3xi32>, %d: tensor<3xi32>, %o: tensor<1x4x?x32xf32>) -> tensor<1x4x?x32xf32> {
  %r = fmha.attention ins(%q, %k, %k : tensor<1x4x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) cu_seqlens(%c, %d : tensor<3xi32>, tensor<3xi32>) outs(%o : tensor<1x4x?x32xf32>) -> tensor<1x4x?x32xf32>
  return %r : tensor<1x4x?x32xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [0, 2, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

func.func @varlen_rows(%q: tensor<1x2x?x32xf32>, %c: tensor<3xi32>, %o: tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32> {
  // expected-error @+3 {{cannot tile the query sequence of a variable-length batch (cu_seqlens): tile Hq only}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-error @+1 {{faild to tile operation}}
  %r = fmha.attention ins(%q, %q, %q : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) cu_seqlens(%c, %c : tensor<3xi32>, tensor<3xi32>) outs(%o : tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32>
  return %r : tensor<1x2x?x32xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0 = transform.structured.tile_using_for %op tile_sizes [0, 0, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A paged cache tiles batches and query heads: a batch tile takes its table
// rows and lengths, a head tile its kv heads of every page.
// CHECK-LABEL: func @paged_batches_heads
// CHECK: scf.for %[[B:.+]] = %c0 to %c4 step %c2
// CHECK:   scf.for %[[H:.+]] = %c0 to %c4 step %c2
// CHECK:     %[[KV:.+]] = affine.apply #{{.+}}(%[[H]])
// CHECK:     %[[Q:.+]] = tensor.extract_slice %arg0[%[[B]], %[[H]], 0, 0] [2, 2, 1, 32]
// CHECK:     %[[K:.+]] = tensor.extract_slice %arg1[0, %[[KV]], 0, 0] [9, 1, 16, 32]
// CHECK:     %[[T:.+]] = tensor.extract_slice %arg2[%[[B]], 0] [2, 5]
// CHECK:     %[[N:.+]] = tensor.extract_slice %arg3[%[[B]]] [2]
// CHECK:     fmha.attention ins(%[[Q]], %[[K]], %[[K]] : tensor<2x2x1x32xf32>, tensor<9x1x16x32xf32>, tensor<9x1x16x32xf32>) paged(%[[T]], %[[N]] : tensor<2x5xi32>, tensor<2xi32>)
func.func @paged_batches_heads(%q: tensor<4x4x1x32xf32>, %k: tensor<9x2x16x32xf32>, %t: tensor<4x5xi32>, %n: tensor<4xi32>, %o: tensor<4x4x1x32xf32>) -> tensor<4x4x1x32xf32> {
  %r = fmha.attention ins(%q, %k, %k : tensor<4x4x1x32xf32>, tensor<9x2x16x32xf32>, tensor<9x2x16x32xf32>) paged(%t, %n : tensor<4x5xi32>, tensor<4xi32>) outs(%o : tensor<4x4x1x32xf32>) -> tensor<4x4x1x32xf32>
  return %r : tensor<4x4x1x32xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["fmha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l0, %l1 = transform.structured.tile_using_for %op tile_sizes [2, 2, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
