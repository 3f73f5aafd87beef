// RUN: fmha-opt %s --fmha-tile-attention="block-m=16 block-n=16" -cse | FileCheck %s

// A variable-length batch (cu_seqlens): the q tiles of all sequences are one
// axis of ceil(Sq / BM) + N tiles (a size of the operands: a GPU grid needs
// no read of the offsets on the host); each iteration (h, t) scans the
// offsets for its sequence n (the first whose tiles end past t: the tiles
// before it, its first row), is inactive (no rows, no kv tiles) past the
// last sequence's tiles, reads q, o and lse from row cu_q[n] + r0 of batch 0
// and k, v from key cu_k[n] + c0, and gives the mask its local r0, c0, Sq,
// Sk.

// CHECK-LABEL: func @varlen_memrefs
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<1x4x?x32xf32>, %[[K:[a-z0-9_]+]]: memref<1x2x?x32xf32>, %[[CQ:[a-z0-9_]+]]: memref<?xi32>, %[[CK:[a-z0-9_]+]]: memref<?xi32>, %[[O:[a-z0-9_]+]]: memref<1x4x?x32xf32>
// CHECK: %[[SQ:[a-z0-9_]+]] = memref.dim %[[Q]], %c2
// CHECK: %[[CEIL:[a-z0-9_]+]] = arith.ceildivsi %[[SQ]], %c16
// CHECK: %[[N1:[a-z0-9_]+]] = memref.dim %[[CQ]], %c0
// CHECK: %[[N:[a-z0-9_]+]] = arith.subi %[[N1]], %c1
// CHECK: %[[TILES:[a-z0-9_]+]] = arith.addi %[[CEIL]], %[[N]]
// CHECK: scf.parallel (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %[[T:[a-z0-9_]+]]) = (%c0, %c0, %c0) to (%c1, %c4, %[[TILES]])
// CHECK:   %[[SCAN:[a-z0-9_]+]]:5 = scf.for %[[S:[a-z0-9_]+]] = %c0 to %[[N]] step %c1 iter_args(%[[BEFORE:[a-z0-9_]+]] = %c0, %[[START:[a-z0-9_]+]] = %{{.+}}, %[[SEQ:[a-z0-9_]+]] = %[[N]], %[[FIRST:[a-z0-9_]+]] = %c0, %[[ROW:[a-z0-9_]+]] = %c0)
// CHECK:     memref.load %[[CQ]]
// CHECK:     %[[AFTER:[a-z0-9_]+]] = arith.addi %[[BEFORE]], %{{.+}}
// CHECK:     %[[FREE:[a-z0-9_]+]] = arith.cmpi eq, %[[SEQ]], %[[N]]
// CHECK:     %[[IN:[a-z0-9_]+]] = arith.cmpi slt, %[[T]], %[[AFTER]]
// CHECK:     %[[HIT:[a-z0-9_]+]] = arith.andi %[[FREE]], %[[IN]]
// CHECK:     arith.select %[[HIT]], %[[S]], %[[SEQ]]
// CHECK:   %[[ACTIVE:[a-z0-9_]+]] = arith.cmpi slt, %[[SCAN]]#2, %[[N]]
// CHECK:   %[[SEQN:[a-z0-9_]+]] = arith.select %[[ACTIVE]], %[[SCAN]]#2, %c0
// CHECK:   %[[QTI:[a-z0-9_]+]] = arith.subi %[[T]], %[[SCAN]]#3
// CHECK:   %[[QT:[a-z0-9_]+]] = arith.select %[[ACTIVE]], %[[QTI]], %c0
// CHECK:   %[[NEXT1:[a-z0-9_]+]] = arith.addi %[[SEQN]], %c1
// CHECK:   %[[NEXT:[a-z0-9_]+]] = arith.minsi %[[NEXT1]], %[[N]]
// CHECK:   %[[SQN:[a-z0-9_]+]] = arith.select %[[ACTIVE]], %{{.+}}, %c0
// CHECK:   %[[K0I:[a-z0-9_]+]] = memref.load %[[CK]][%[[SEQN]]]
// CHECK:   %[[K0:[a-z0-9_]+]] = arith.index_cast %[[K0I]] : i32 to index
// CHECK:   memref.load %[[CK]][%[[NEXT]]]
// CHECK:   %[[SKN:[a-z0-9_]+]] = arith.subi %{{.+}}, %[[K0]]
// CHECK:   %[[R0:[a-z0-9_]+]] = arith.muli %{{.+}}, %c16
// CHECK:   %[[ROWS:[a-z0-9_]+]] = arith.select %[[ACTIVE]], %{{.+}}, %c0
// CHECK:   %[[ROW0:[a-z0-9_]+]] = arith.addi %[[SCAN]]#4, %[[R0]]
// CHECK:   memref.subview %[[Q]][%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS]], 32]
// CHECK:   memref.subview %[[O]][%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS]], 32]
// CHECK:   %[[END:[a-z0-9_]+]] = arith.select %[[ACTIVE]], %{{.+}}, %[[BEGIN:[a-z0-9_]+]] : index
// CHECK:   scf.for %[[KT:[a-z0-9_]+]] = %[[BEGIN]] to %[[END]]
// CHECK:     %[[C0:[a-z0-9_]+]] = arith.muli %[[KT]], %c16
// CHECK:     %[[KEY0:[a-z0-9_]+]] = arith.addi %[[K0]], %[[C0]]
// CHECK:     memref.subview %[[K]][%[[B]], %{{.+}}, %[[KEY0]], 0]
// CHECK:     fmha.tile_qk {{.+}} masked[%[[R0]], %[[C0]], %[[SQN]], %[[SKN]]] {mask = #fmha.mask<"b">
func.func @varlen_memrefs(%q: memref<1x4x?x32xf32>, %k: memref<1x2x?x32xf32>, %c: memref<?xi32>, %d: memref<?xi32>, %o: memref<1x4x?x32xf32>) {
  fmha.attention ins(%q, %k, %k : memref<1x4x?x32xf32>, memref<1x2x?x32xf32>, memref<1x2x?x32xf32>) cu_seqlens(%c, %d : memref<?xi32>, memref<?xi32>) outs(%o : memref<1x4x?x32xf32>) {mask = #fmha.mask<"b">}
  return
}
