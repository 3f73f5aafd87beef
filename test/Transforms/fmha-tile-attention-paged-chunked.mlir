// RUN: fmha-opt %s --fmha-tile-attention="block-m=16 block-n=16" -cse | FileCheck %s --check-prefix=MEMREF

// Chunked prefill on memrefs: the sequence's table row and length, read
// only by an active tile.
// MEMREF-LABEL: func @chunked_memrefs
// MEMREF: scf.parallel
// MEMREF:   %[[SCAN:[a-z0-9_]+]]:5 = scf.for
// MEMREF:   %[[ACTIVE:[a-z0-9_]+]] = arith.cmpi slt, %[[SCAN]]#2
// MEMREF:   %[[SEQ:[a-z0-9_]+]] = arith.select %[[ACTIVE]], %[[SCAN]]#2
// MEMREF:   scf.if %[[ACTIVE]] -> (index) {
// MEMREF:     memref.load %{{.+}}[%[[SEQ]]] : memref<?xi32>
// MEMREF:   scf.for
// MEMREF:     memref.load %{{.+}}[%[[SEQ]], %{{.+}}] : memref<?x?xi32>
// MEMREF:     memref.subview %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, 0] [1, 1, %{{.+}}, 32] [1, 1, 1, 1] : memref<?x2x64x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
func.func @chunked_memrefs(%q: memref<1x4x?x32xf32>, %k: memref<?x2x64x32xf32>, %c: memref<?xi32>, %t: memref<?x?xi32>, %n: memref<?xi32>) {
  fmha.attention ins(%q, %k, %k : memref<1x4x?x32xf32>, memref<?x2x64x32xf32>, memref<?x2x64x32xf32>) cu_seqlens(%c : memref<?xi32>) paged(%t, %n : memref<?x?xi32>, memref<?xi32>) outs(%q : memref<1x4x?x32xf32>) {mask = #fmha.mask<"b">}
  return
}

