// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64 static-tiles=1" -cse -split-input-file | FileCheck %s

// With static tiles (the GPU's register tiles) every tile of the forward has
// the tile's shape: the q, k and v tiles are their slices padded with zeros
// to block-m or block-n rows; m, l, acc, the scores and the o and lse tiles
// start as tensor.empty; the kv loops carry static tiles; a kv tile gets the
// element mask when it crosses a mask edge or reaches past Sk; the o and lse
// tiles are sliced back to the rows in range before they go back into the
// shared outs.
// CHECK-LABEL: func @causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x?x32xf16>, %[[K:[^:]+]]: tensor<1x2x?x32xf16>, %[[V:[^:]+]]: tensor<1x2x?x16xf16>, %[[O:[^:]+]]: tensor<1x4x?x16xf16>, %[[L:[^:]+]]: tensor<1x4x?xf32>)
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[SK:.+]] = tensor.dim %[[K]], %c2
// CHECK: scf.forall (%[[IB:.+]], %[[IH:.+]], %[[QT:.+]]) in (1, 4, %{{.+}}) shared_outs(%[[OS:.+]] = %[[O]], %[[LS:.+]] = %[[L]])
// CHECK:   %[[R0:.+]] = arith.muli %[[QT]], %c32
// CHECK:   %[[ROWS:.+]] = arith.minsi
// CHECK:   %[[QS:.+]] = tensor.extract_slice %[[Q]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 32] [1, 1, 1, 1] : tensor<1x4x?x32xf16> to tensor<?x32xf16>
// CHECK:   %[[QTILE:.+]] = tensor.pad %[[QS]] low[0, 0] high[%{{.+}}, 0]
// CHECK:     tensor.yield %{{.+}} : f16
// CHECK:   } : tensor<?x32xf16> to tensor<32x32xf16>
// CHECK:   %[[OE:.+]] = tensor.empty() : tensor<32x16xf16>
// CHECK:   %[[ROW:.+]] = tensor.empty() : tensor<32xf32>
// CHECK:   %[[ACC0:.+]] = tensor.empty() : tensor<32x16xf32>
// CHECK:   %[[INIT:.+]]:3 = fmha.tile_init %[[ROW]], %[[ROW]], %[[ACC0]] : tensor<32xf32>, tensor<32xf32>, tensor<32x16xf32> -> tensor<32xf32>, tensor<32xf32>, tensor<32x16xf32>
// CHECK:   %[[LOOP:.+]]:3 = scf.for %[[KT:.+]] = %{{.+}} to %{{.+}} step %c1 iter_args(%[[M:.+]] = %[[INIT]]#0, %[[LL:.+]] = %[[INIT]]#1, %[[ACC:.+]] = %[[INIT]]#2) -> (tensor<32xf32>, tensor<32xf32>, tensor<32x16xf32>)
// CHECK:     %[[C0:.+]] = arith.muli %[[KT]], %c64
// CHECK:     %[[KS:.+]] = tensor.extract_slice %[[K]]
// CHECK:     %[[KTILE:.+]] = tensor.pad %[[KS]]
// CHECK:     } : tensor<?x32xf16> to tensor<64x32xf16>
// CHECK:     %[[VS:.+]] = tensor.extract_slice %[[V]]
// CHECK:     %[[VTILE:.+]] = tensor.pad %[[VS]]
// CHECK:     } : tensor<?x16xf16> to tensor<64x16xf16>
// CHECK:     %[[SE:.+]] = tensor.empty() : tensor<32x64xf32>
// CHECK:     %[[C1:.+]] = arith.addi %[[C0]], %c64
// CHECK:     %[[EDGE:.+]] = arith.cmpi sle
// CHECK:     %[[INK:.+]] = arith.cmpi sle, %[[C1]], %[[SK]]
// CHECK:     %[[FULL:.+]] = arith.andi %[[EDGE]], %[[INK]]
// CHECK:     %[[S:.+]] = scf.if %[[FULL]] -> (tensor<32x64xf32>) {
// CHECK:       fmha.tile_qk %[[QTILE]], %[[KTILE]] into %[[SE]] {scale
// CHECK:     } else {
// CHECK:       fmha.tile_qk %[[QTILE]], %[[KTILE]] into %[[SE]] masked[%[[R0]], %[[C0]], %[[SQ]], %[[SK]]] {mask = #fmha.mask<"b">
// CHECK:     }
// CHECK:     %[[SOFT:.+]]:4 = fmha.tile_softmax %[[S]], %[[M]], %[[LL]], %[[ACC]] : tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x16xf32> ->
// CHECK:     %[[PV:.+]] = fmha.tile_pv %[[SOFT]]#0, %[[VTILE]] into %[[SOFT]]#3 : tensor<32x64xf32>, tensor<64x16xf16>, tensor<32x16xf32> -> tensor<32x16xf32>
// CHECK:     scf.yield %[[SOFT]]#1, %[[SOFT]]#2, %[[PV]]
// CHECK:   %[[FIN:.+]]:2 = fmha.tile_finalize %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2 into %[[OE]], %[[ROW]] : {{.+}} -> tensor<32x16xf16>, tensor<32xf32>
// CHECK:   %[[OT:.+]] = tensor.extract_slice %[[FIN]]#0[0, 0] [%[[ROWS]], 16] [1, 1] : tensor<32x16xf16> to tensor<?x16xf16>
// CHECK:   %[[LT:.+]] = tensor.extract_slice %[[FIN]]#1[0] [%[[ROWS]]] [1] : tensor<32xf32> to tensor<?xf32>
// CHECK:   scf.forall.in_parallel {
// CHECK:     tensor.parallel_insert_slice %[[OT]] into %[[OS]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 16]
// CHECK:     tensor.parallel_insert_slice %[[LT]] into %[[LS]][%[[IB]], %[[IH]], %[[R0]]] [1, 1, %[[ROWS]]]
func.func @causal(%q: tensor<1x4x?x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x16xf16>, %o: tensor<1x4x?x16xf16>, %l: tensor<1x4x?xf32>) -> (tensor<1x4x?x16xf16>, tensor<1x4x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x16xf16>) outs(%o : tensor<1x4x?x16xf16>, %l : tensor<1x4x?xf32>) {mask = #fmha.mask<"b">, softcap = 50.0 : f32} -> tensor<1x4x?x16xf16>, tensor<1x4x?xf32>
  return %0#0, %0#1 : tensor<1x4x?x16xf16>, tensor<1x4x?xf32>
}

// -----

// Without a mask only the kv tiles past Sk are masked (the element mask hides
// the padding keys alone).
// CHECK-LABEL: func @no_mask
// CHECK: %[[SK:.+]] = tensor.dim %arg1, %c2
// CHECK: scf.for %[[KT:[^ ]+]] =
// CHECK:   %[[C0:.+]] = arith.muli %[[KT]], %c64
// CHECK:   %[[C1:.+]] = arith.addi %[[C0]], %c64
// CHECK:   %[[INK:.+]] = arith.cmpi sle, %[[C1]], %[[SK]]
// CHECK:   scf.if %[[INK]] -> (tensor<32x64xf32>) {
// CHECK:     fmha.tile_qk {{.+}} {scale
// CHECK:   } else {
// CHECK:     fmha.tile_qk {{.+}} masked[%{{.+}}, %[[C0]], %{{.+}}, %[[SK]]] {scale
// CHECK-NOT: mask =
// CHECK:   }
func.func @no_mask(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>, %o: tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16> {
  %0 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) outs(%o : tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16>
  return %0 : tensor<2x8x?x64xbf16>
}
