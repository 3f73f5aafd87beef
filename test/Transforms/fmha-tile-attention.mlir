// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64" -cse -split-input-file | FileCheck %s

// No mask: every kv tile [0, ceil(Sk / 64)), no element mask. GQA 8:2 reads kv
// head h / 4 straight from K/V.
// CHECK-LABEL: func @none
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x8x?x64xf32>, %[[K:[^:]+]]: memref<?x2x?x64xf32>
// CHECK-DAG: %[[B:.+]] = memref.dim %[[Q]], %c0
// CHECK-DAG: %[[SQ:.+]] = memref.dim %[[Q]], %c2
// CHECK-DAG: %[[SK:.+]] = memref.dim %[[K]], %c2
// CHECK: %[[NQ:.+]] = arith.ceildivsi %[[SQ]], %c32
// CHECK: scf.parallel (%[[IB:.+]], %[[IH:.+]], %[[QT:.+]]) = (%c0, %c0, %c0) to (%[[B]], %c8, %[[NQ]])
// CHECK: %[[KVH:.+]] = arith.divsi %[[IH]], %c4
// CHECK: %[[R0:.+]] = arith.muli %[[QT]], %c32
// CHECK: %[[QTILE:.+]] = memref.subview %[[Q]][%[[IB]], %[[IH]], %[[R0]], 0]
// CHECK: fmha.tile_init
// CHECK: %[[NKV:.+]] = arith.ceildivsi %[[SK]], %c64
// CHECK: scf.for %[[KT:.+]] = %c0 to %[[NKV]] step %c1
// CHECK:   %[[C0:.+]] = arith.muli %[[KT]], %c64
// CHECK:   memref.subview %[[K]][%[[IB]], %[[KVH]], %[[C0]], 0]
// CHECK-NOT: scf.if
// CHECK:   fmha.tile_qk %[[QTILE]], %{{.+}} into %{{.+}} {scale = 1.250000e-01 : f32}
// CHECK:   fmha.tile_softmax
// CHECK:   fmha.tile_pv
// CHECK: } {fmha.kv_loop = "window"}
// CHECK: fmha.tile_finalize
func.func @none(%q: memref<?x8x?x64xf32>, %k: memref<?x2x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<?x8x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>) outs(%o : memref<?x8x?x64xf32>)
  return
}

// -----

// Causal top-left: the q tile [r0, r1) sees keys [0, min(Sk - 1, r1 - 1)], so
// the loop ends at kv tile (r1 - 1) / 64; a tile needs the element mask unless
// its last key c1 - 1 <= r0.
// CHECK-LABEL: func @causal_top_left
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK: scf.parallel
// CHECK: %[[R0:.+]] = arith.muli %{{.+}}, %c32
// CHECK: %[[ROWS:.+]] = arith.minsi
// CHECK: %[[R1:.+]] = arith.addi %[[R0]], %[[ROWS]]
// CHECK: %[[NKV:.+]] = arith.ceildivsi %[[SK]], %c64
// CHECK-DAG: %[[RLAST:.+]] = arith.subi %[[R1]], %c1
// CHECK-DAG: %[[KLAST:.+]] = arith.subi %[[SK]], %c1
// CHECK: %[[JHI:.+]] = arith.minsi %[[KLAST]], %[[RLAST]]
// CHECK: %[[EMPTY:.+]] = arith.cmpi slt, %[[JHI]], %c0
// CHECK: %[[BEGIN:.+]] = arith.select %[[EMPTY]], %[[NKV]], %c0
// CHECK: %[[TLAST:.+]] = arith.divsi %[[JHI]], %c64
// CHECK: %[[TEND:.+]] = arith.addi %[[TLAST]], %c1
// CHECK: %[[END:.+]] = arith.select %[[EMPTY]], %[[NKV]], %[[TEND]]
// CHECK-NOT: "sink"
// CHECK: scf.for %[[KT:.+]] = %[[BEGIN]] to %[[END]] step %c1
// CHECK:   %[[C0:.+]] = arith.muli %[[KT]], %c64
// CHECK:   %[[C1:.+]] = arith.addi %[[C0]], %{{.+}}
// CHECK:   %[[CLAST:.+]] = arith.subi %[[C1]], %c1
// CHECK:   %[[FULL:.+]] = arith.cmpi sle, %[[CLAST]], %[[R0]]
// CHECK:   scf.if %[[FULL]] {
// CHECK:     fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} {scale
// CHECK:   } else {
// CHECK:     fmha.tile_qk %{{.+}}, %{{.+}} into %{{.+}} masked[%[[R0]], %[[C0]], %{{.+}}, %[[SK]]] {mask = #fmha.mask<"t">
// CHECK:   }
// CHECK:   fmha.tile_softmax
// CHECK: } {fmha.kv_loop = "window"}
func.func @causal_top_left(%q: memref<?x8x?x64xf32>, %k: memref<?x2x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<?x8x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>) outs(%o : memref<?x8x?x64xf32>) {mask = #fmha.mask<"t">}
  return
}

// -----

// Causal bottom-right: the diagonal moves by off = Sk - Sq.
// CHECK-LABEL: func @causal_bottom_right
// CHECK-DAG: %[[SQ:.+]] = memref.dim %arg0, %c2
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK: %[[R0:.+]] = arith.muli %{{.+}}, %c32
// CHECK: %[[OFF:.+]] = arith.subi %[[SK]], %[[SQ]]
// CHECK-DAG: %[[RLAST:.+]] = arith.subi %{{[0-9]+}}, %c1
// CHECK-DAG: %[[KLAST:.+]] = arith.subi %[[SK]], %c1
// CHECK: %[[DIAG:.+]] = arith.addi %[[RLAST]], %[[OFF]]
// CHECK: %[[JHI:.+]] = arith.minsi %[[KLAST]], %[[DIAG]]
// CHECK: arith.divsi %[[JHI]], %c64
// CHECK: scf.for
// CHECK:   %[[R0OFF:.+]] = arith.addi %[[R0]], %[[OFF]]
// CHECK:   %[[FULL:.+]] = arith.cmpi sle, %{{.+}}, %[[R0OFF]]
// CHECK:   scf.if %[[FULL]]
// CHECK:     masked[{{.+}}] {mask = #fmha.mask<"b">
func.func @causal_bottom_right(%q: memref<?x8x?x64xf32>, %k: memref<?x2x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<?x8x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>) outs(%o : memref<?x8x?x64xf32>) {mask = #fmha.mask<"b">}
  return
}

// -----

// Sliding window t:128,0: the loop starts at kv tile max(0, r0 - 128) / 64, so
// tiles left of the window are never visited; a tile is full only when both
// edges are outside it.
// CHECK-LABEL: func @window
// CHECK: %[[R0:.+]] = arith.muli %{{.+}}, %c32
// CHECK: %[[LO:.+]] = arith.subi %[[R0]], %c128
// CHECK: %[[JLO:.+]] = arith.maxsi %[[LO]], %c0
// CHECK: %[[RLAST:.+]] = arith.subi %{{.+}}, %c1
// CHECK: %[[JHI:.+]] = arith.minsi %{{.+}}, %[[RLAST]]
// CHECK: %[[EMPTY:.+]] = arith.cmpi sgt, %[[JLO]], %[[JHI]]
// CHECK: %[[FIRST:.+]] = arith.divsi %[[JLO]], %c64
// CHECK: %[[BEGIN:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[FIRST]]
// CHECK: %[[END:.+]] = arith.select %[[EMPTY]]
// CHECK: scf.for %[[KT:.+]] = %[[BEGIN]] to %[[END]] step %c1
// CHECK:   %[[C0:.+]] = arith.muli %[[KT]], %c64
// CHECK:   %[[LEFTEDGE:.+]] = arith.subi %[[RLAST]], %c128
// CHECK:   %[[LEFTOK:.+]] = arith.cmpi sle, %[[LEFTEDGE]], %[[C0]]
// CHECK:   %[[RIGHTOK:.+]] = arith.cmpi sle, %{{.+}}, %[[R0]]
// CHECK:   %[[FULL:.+]] = arith.andi %[[LEFTOK]], %[[RIGHTOK]]
// CHECK:   scf.if %[[FULL]]
// CHECK: } {fmha.kv_loop = "window"}
func.func @window(%q: memref<?x8x?x64xf32>, %k: memref<?x2x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<?x8x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>) outs(%o : memref<?x8x?x64xf32>) {mask = #fmha.mask<"t:128,0">}
  return
}

// -----

// Window + 4 sinks: a leading loop visits the sink tiles [0, ceil(min(4, Sk)
// / 64)) that lie before the window's first tile; the window loop follows and
// also covers sink tiles past the window's last tile.
// Tiles entirely made of sinks need no element mask.
// CHECK-LABEL: func @window_sink
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK: %[[FIRST:.+]] = arith.divsi %{{.+}}, %c64
// CHECK: %[[BEGIN:.+]] = arith.select %{{.+}}, %{{.+}}, %[[FIRST]]
// CHECK: %[[END:.+]] = arith.select
// CHECK: %[[SINKKEYS:.+]] = arith.minsi %[[SK]], %c4
// CHECK: %[[SINKTILES:.+]] = arith.ceildivsi %[[SINKKEYS]], %c64
// CHECK: %[[SINKEND:.+]] = arith.minsi %[[SINKTILES]], %[[BEGIN]]
// CHECK: %[[MAINEND:.+]] = arith.maxsi %[[END]], %[[SINKTILES]]
// CHECK: scf.for %{{.+}} = %c0 to %[[SINKEND]] step %c1
// CHECK:   %[[C1:.+]] = arith.addi
// CHECK:   %[[WINDOWFULL:.+]] = arith.andi
// CHECK:   %[[ALLSINK:.+]] = arith.cmpi sle, %[[C1]], %c4
// CHECK:   %[[FULL:.+]] = arith.ori %[[WINDOWFULL]], %[[ALLSINK]]
// CHECK:   scf.if %[[FULL]]
// CHECK:     masked[{{.+}}] {mask = #fmha.mask<"b:256,0,4">
// CHECK: } {fmha.kv_loop = "sink"}
// CHECK: scf.for %{{.+}} = %[[BEGIN]] to %[[MAINEND]] step %c1
// CHECK: } {fmha.kv_loop = "window"}
// CHECK: fmha.tile_finalize
func.func @window_sink(%q: memref<?x8x?x64xf32>, %k: memref<?x2x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  fmha.attention ins(%q, %k, %k : memref<?x8x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>) outs(%o : memref<?x8x?x64xf32>) {mask = #fmha.mask<"b:256,0,4">}
  return
}

// On tensors the tiled form is on values: fmha-tile-attention-values.mlir.
