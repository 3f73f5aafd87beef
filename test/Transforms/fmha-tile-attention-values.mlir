// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64" -cse -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64" \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --scf-forall-to-parallel -cse -canonicalize -split-input-file | FileCheck %s --check-prefix=BUF

// On tensors the tiled form is on values. The q tiles are an scf.forall whose
// shared outs are o and lse; q, k and v tiles are slices; the running max, sum
// and accumulator start as slices of static scratch (one alloc_tensor each) and are
// carried by the kv loop; each tile op returns its updated outs; the scores
// of a tile that crosses the mask edge come out of the scf.if; o and lse rows
// go back through parallel_insert_slice. The lse tile and a softcap reach the
// tile ops.
// CHECK-LABEL: func @causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x?x32xf16>, %[[K:[^:]+]]: tensor<1x2x?x32xf16>, %[[V:[^:]+]]: tensor<1x2x?x16xf16>, %[[O:[^:]+]]: tensor<1x4x?x16xf16>, %[[L:[^:]+]]: tensor<1x4x?xf32>)
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[SK:.+]] = tensor.dim %[[K]], %c2
// CHECK: %[[NQ:.+]] = arith.ceildivsi %[[SQ]], %c32
// CHECK: %[[RES:.+]]:2 = scf.forall (%[[IB:.+]], %[[IH:.+]], %[[QT:.+]]) in (1, 4, %[[NQ]]) shared_outs(%[[OS:.+]] = %[[O]], %[[LS:.+]] = %[[L]])
// CHECK:   %[[KVH:.+]] = arith.divsi %[[IH]], %c2
// CHECK:   %[[R0:.+]] = arith.muli %[[QT]], %c32
// CHECK:   %[[ROWS:.+]] = arith.minsi
// CHECK:   %[[QTILE:.+]] = tensor.extract_slice %[[Q]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 32] [1, 1, 1, 1] : tensor<1x4x?x32xf16> to tensor<?x32xf16>
// CHECK:   %[[OTILE:.+]] = tensor.extract_slice %[[OS]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 16]
// CHECK:   %[[LTILE:.+]] = tensor.extract_slice %[[LS]][%[[IB]], %[[IH]], %[[R0]]] [1, 1, %[[ROWS]]]
// CHECK:   %[[MBUF:.+]] = bufferization.alloc_tensor() : tensor<32xf32>
// CHECK:   %[[LBUF:.+]] = bufferization.alloc_tensor() : tensor<32xf32>
// CHECK:   %[[ACCBUF:.+]] = bufferization.alloc_tensor() : tensor<32x16xf32>
// CHECK:   %[[SBUF:.+]] = bufferization.alloc_tensor() : tensor<32x64xf32>
// CHECK:   %[[M0:.+]] = tensor.extract_slice %[[MBUF]][0] [%[[ROWS]]] [1]
// CHECK:   %[[L0:.+]] = tensor.extract_slice %[[LBUF]][0] [%[[ROWS]]] [1]
// CHECK:   %[[A0:.+]] = tensor.extract_slice %[[ACCBUF]][0, 0] [%[[ROWS]], 16] [1, 1]
// CHECK:   %[[INIT:.+]]:3 = fmha.tile_init %[[M0]], %[[L0]], %[[A0]] : {{.+}} -> tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>
// CHECK:   %[[LOOP:.+]]:3 = scf.for %[[KT:.+]] = %{{.+}} to %{{.+}} step %c1 iter_args(%[[M:.+]] = %[[INIT]]#0, %[[LL:.+]] = %[[INIT]]#1, %[[ACC:.+]] = %[[INIT]]#2)
// CHECK:     %[[C0:.+]] = arith.muli %[[KT]], %c64
// CHECK:     %[[KTILE:.+]] = tensor.extract_slice %[[K]][%[[IB]], %[[KVH]], %[[C0]], 0]
// CHECK:     %[[VTILE:.+]] = tensor.extract_slice %[[V]][%[[IB]], %[[KVH]], %[[C0]], 0]
// CHECK:     %[[STILE:.+]] = tensor.extract_slice %[[SBUF]][0, 0] [%[[ROWS]], %{{.+}}] [1, 1]
// CHECK:     %[[S:.+]] = scf.if %{{.+}} -> (tensor<?x?xf32>) {
// CHECK:       %[[SF:.+]] = fmha.tile_qk %[[QTILE]], %[[KTILE]] into %[[STILE]] {scale = 0.176776{{[0-9]+}} : f32, softcap = 5.000000e+01 : f32} : {{.+}} -> tensor<?x?xf32>
// CHECK:       scf.yield %[[SF]]
// CHECK:     } else {
// CHECK:       %[[SM:.+]] = fmha.tile_qk %[[QTILE]], %[[KTILE]] into %[[STILE]] masked[%[[R0]], %[[C0]], %[[SQ]], %[[SK]]] {mask = #fmha.mask<"b">
// CHECK:       scf.yield %[[SM]]
// CHECK:     }
// CHECK:     %[[SOFT:.+]]:4 = fmha.tile_softmax %[[S]], %[[M]], %[[LL]], %[[ACC]] : {{.+}} -> tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>
// CHECK:     %[[PV:.+]] = fmha.tile_pv %[[SOFT]]#0, %[[VTILE]] into %[[SOFT]]#3 : {{.+}} -> tensor<?x16xf32>
// CHECK:     scf.yield %[[SOFT]]#1, %[[SOFT]]#2, %[[PV]]
// CHECK:   } {fmha.kv_loop = "window"}
// CHECK:   %[[FIN:.+]]:2 = fmha.tile_finalize %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2 into %[[OTILE]], %[[LTILE]] : {{.+}} -> tensor<?x16xf16>, tensor<?xf32>
// CHECK:   scf.forall.in_parallel {
// CHECK:     tensor.parallel_insert_slice %[[FIN]]#0 into %[[OS]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 16]
// CHECK:     tensor.parallel_insert_slice %[[FIN]]#1 into %[[LS]][%[[IB]], %[[IH]], %[[R0]]] [1, 1, %[[ROWS]]]
// CHECK: return %[[RES]]#0, %[[RES]]#1

// Bufferized (and canonicalized, as fmha-to-cpu-pipeline does), it is the form
// on memrefs, in place: the shared outs are the arguments' buffers, the
// scratch one buffer per tile, the loops carry nothing, no copies.
// BUF-LABEL: func @causal
// BUF-SAME: (%[[Q:[^:]+]]: memref<1x4x?x32xf16>, %{{[^:]+}}: memref<1x2x?x32xf16>, %{{[^:]+}}: memref<1x2x?x16xf16>, %[[O:[^:]+]]: memref<1x4x?x16xf16>, %[[L:[^:]+]]: memref<1x4x?xf32>)
// BUF-NOT: memref.copy
// BUF: scf.parallel
// BUF-DAG: memref.subview %[[O]]
// BUF-DAG: memref.subview %[[L]]
// BUF-DAG: memref.alloc() {{.+}} : memref<32xf32>
// BUF-DAG: memref.alloc() {{.+}} : memref<32x16xf32>
// BUF-DAG: memref.alloc() {{.+}} : memref<32x64xf32>
// BUF: fmha.tile_init {{.+}} : memref<?xf32, strided<[1]>>, memref<?xf32, strided<[1]>>, memref<?x16xf32, strided<[16, 1]>>{{$}}
// BUF: scf.for
// BUF-NOT: iter_args
// BUF: fmha.tile_qk
// BUF: fmha.tile_softmax {{.+}} : memref<?x?xf32, strided<[64, 1]>>, memref<?xf32, strided<[1]>>, memref<?xf32, strided<[1]>>, memref<?x16xf32, strided<[16, 1]>>{{$}}
// BUF: fmha.tile_pv
// BUF: fmha.tile_finalize {{.+}} into %{{.+}}, %{{.+}} : {{.+}}, memref<?x16xf16, strided<[16, 1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>{{$}}
// BUF-NOT: memref.copy
// BUF: return %[[O]], %[[L]]
func.func @causal(%q: tensor<1x4x?x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x16xf16>, %o: tensor<1x4x?x16xf16>, %l: tensor<1x4x?xf32>) -> (tensor<1x4x?x16xf16>, tensor<1x4x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x16xf16>) outs(%o : tensor<1x4x?x16xf16>, %l : tensor<1x4x?xf32>) {mask = #fmha.mask<"b">, softcap = 50.0 : f32} -> tensor<1x4x?x16xf16>, tensor<1x4x?xf32>
  return %0#0, %0#1 : tensor<1x4x?x16xf16>, tensor<1x4x?xf32>
}

// -----

// Without lse and with a sink: two kv loops carry the state one after the
// other; tile_finalize writes o alone.
// CHECK-LABEL: func @sink_no_lse
// CHECK: %[[RES:.+]] = scf.forall {{.+}} shared_outs(%[[OS:.+]] = %arg2)
// CHECK:   %[[INIT:.+]]:3 = fmha.tile_init
// CHECK:   %[[SINK:.+]]:3 = scf.for {{.+}} iter_args({{.+}} = %[[INIT]]#0, {{.+}} = %[[INIT]]#1, {{.+}} = %[[INIT]]#2)
// CHECK:   } {fmha.kv_loop = "sink"}
// CHECK:   %[[WIN:.+]]:3 = scf.for {{.+}} iter_args({{.+}} = %[[SINK]]#0, {{.+}} = %[[SINK]]#1, {{.+}} = %[[SINK]]#2)
// CHECK:   } {fmha.kv_loop = "window"}
// CHECK:   %[[FIN:.+]] = fmha.tile_finalize %[[WIN]]#0, %[[WIN]]#1, %[[WIN]]#2 into %{{[^ ,]+}} : {{.+}} -> tensor<?x64xbf16>
// CHECK:   scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %[[FIN]] into %[[OS]]
// CHECK-NEXT: }
// CHECK: return %[[RES]]
// BUF-LABEL: func @sink_no_lse
// BUF-NOT: memref.copy
// BUF: return %arg2
func.func @sink_no_lse(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>, %o: tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16> {
  %0 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) outs(%o : tensor<2x8x?x64xbf16>) {mask = #fmha.mask<"b:256,0,4">} -> tensor<2x8x?x64xbf16>
  return %0 : tensor<2x8x?x64xbf16>
}

// -----

// Learned sink logits: each q tile of head h reads sinks[h] and starts its
// running max and sum from it (tile_init's sink: m = sinks[h], l = 1); on
// memrefs the same from a load (the batch loop of one folds away).
// CHECK-LABEL: func @learned_sinks
// CHECK: scf.forall (%{{.+}}, %[[H:.+]], %{{.+}}) in
// CHECK:   %[[SINK:.+]] = tensor.extract %arg3[%[[H]]] : tensor<4xf32>
// CHECK:   fmha.tile_init %{{.+}}, %{{.+}}, %{{.+}} sink %[[SINK]] :
// BUF-LABEL: func @learned_sinks
// BUF: scf.parallel (%[[H:[^,]+]], %{{.+}}) = (%c0, %c0) to (%c4,
// BUF:   %[[SINK:.+]] = memref.load %arg3[%[[H]]] : memref<4xf32>
// BUF:   fmha.tile_init %{{.+}}, %{{.+}}, %{{.+}} sink %[[SINK]] :
func.func @learned_sinks(%q: tensor<1x4x?x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x16xf16>, %s: tensor<4xf32>, %o: tensor<1x4x?x16xf16>) -> tensor<1x4x?x16xf16> {
  %r = fmha.attention ins(%q, %k, %v : tensor<1x4x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x16xf16>) sinks(%s : tensor<4xf32>) outs(%o : tensor<1x4x?x16xf16>) {mask = #fmha.mask<"b">} -> tensor<1x4x?x16xf16>
  return %r : tensor<1x4x?x16xf16>
}
