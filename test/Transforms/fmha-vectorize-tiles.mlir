// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64 static-tiles=1" --fmha-vectorize-tiles -cse -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" --fmha-vectorize-tiles -cse -split-input-file | fmha-opt -split-input-file | FileCheck %s --check-prefix=LAYOUT

// The static tiles become vectors and the tile ops generic vector ops: the
// q, k and v tiles are reads of their slices that run past the rows in range
// (reading 0), S = Q K^T and O += P V are contractions (p in v's element
// type), the softmax reduces rows into the running max and the rescaled sum,
// row vectors broadcast through rows x 1, the element mask is a select on
// index vectors, and the o and lse tiles are written into the slices of the
// shared outs up to the rows in range. No tile op and no tensor tile is left.
// CHECK-LABEL: func @causal
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x?x32xf16>, %[[K:[^:]+]]: tensor<1x2x?x32xf16>, %[[V:[^:]+]]: tensor<1x2x?x16xf16>, %[[O:[^:]+]]: tensor<1x4x?x16xf16>, %[[L:[^:]+]]: tensor<1x4x?xf32>)
// CHECK: scf.forall (%[[IB:.+]], %[[IH:.+]], %[[QT:.+]]) in {{.+}} shared_outs(%[[OS:.+]] = %[[O]], %[[LS:.+]] = %[[L]])
// CHECK:   %[[R0:.+]] = arith.muli %[[QT]], %c32
// CHECK:   %[[ROWS:.+]] = arith.minsi
// CHECK:   %[[QS:.+]] = tensor.extract_slice %[[Q]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 32]
// CHECK:   %[[QV:.+]] = vector.transfer_read %[[QS]][%c0, %c0], %{{.+}} {in_bounds = [false, true]} : tensor<?x32xf16>, vector<32x32xf16>
// CHECK:   %[[NEGINF:.+]] = arith.constant dense<0xFF800000> : vector<32xf32>
// CHECK:   %[[ZROW:.+]] = arith.constant dense<0.000000e+00> : vector<32xf32>
// CHECK:   %[[ZACC:.+]] = arith.constant dense<0.000000e+00> : vector<32x16xf32>
// CHECK:   %[[LOOP:.+]]:3 = scf.for {{.+}} iter_args(%[[M:.+]] = %[[NEGINF]], %[[LL:.+]] = %[[ZROW]], %[[ACC:.+]] = %[[ZACC]]) -> (vector<32xf32>, vector<32xf32>, vector<32x16xf32>)
// CHECK:     %[[C0:.+]] = arith.muli %{{.+}}, %c64
// CHECK:     %[[KV:.+]] = vector.transfer_read %{{.+}} {in_bounds = [false, true]} : tensor<?x32xf16>, vector<64x32xf16>
// CHECK:     %[[VV:.+]] = vector.transfer_read %{{.+}} {in_bounds = [false, true]} : tensor<?x16xf16>, vector<64x16xf16>
// CHECK:     %[[S:.+]] = scf.if %{{.+}} -> (vector<32x64xf32>) {
// CHECK:       vector.contract {indexing_maps = [#[[QMAP:.+]], #[[KMAP:.+]], #[[SMAP:.+]]], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %[[QV]], %[[KV]], %{{.+}} : vector<32x32xf16>, vector<64x32xf16> into vector<32x64xf32>
// CHECK:       math.tanh
// CHECK:     } else {
// CHECK:       vector.contract
// CHECK:       %[[RI:.+]] = vector.step : vector<32xindex>
// CHECK:       %[[CI:.+]] = vector.step : vector<64xindex>
// CHECK:       vector.shape_cast %[[RI]] : vector<32xindex> to vector<32x1xindex>
// CHECK:       vector.broadcast %[[CI]] : vector<64xindex> to vector<32x64xindex>
// CHECK:       arith.cmpi sle, %{{.+}} : vector<32x64xindex>
// CHECK:       arith.cmpi slt, %{{.+}} : vector<32x64xindex>
// CHECK:       arith.select %{{.+}} : vector<32x64xi1>, vector<32x64xf32>
// CHECK:     }
// CHECK:     %[[MNEW:.+]] = vector.multi_reduction <maximumf>, %[[S]], %[[M]] [1] : vector<32x64xf32> to vector<32xf32>
// CHECK:     %[[HIDDEN:.+]] = arith.cmpf oeq, %[[MNEW]], %[[NEGINF]]
// CHECK:     %[[MSAFE:.+]] = arith.select %[[HIDDEN]], %[[ZROW]], %[[MNEW]]
// CHECK:     %[[ALPHA:.+]] = math.exp %{{.+}} : vector<32xf32>
// CHECK:     vector.shape_cast %[[MSAFE]] : vector<32xf32> to vector<32x1xf32>
// CHECK:     %[[P:.+]] = math.exp %{{.+}} : vector<32x64xf32>
// CHECK:     %[[LSCALED:.+]] = arith.mulf %[[LL]], %[[ALPHA]]
// CHECK:     %[[LNEW:.+]] = vector.multi_reduction <add>, %[[P]], %[[LSCALED]] [1] : vector<32x64xf32> to vector<32xf32>
// CHECK:     %[[ACCS:.+]] = arith.mulf %[[ACC]], %{{.+}} : vector<32x16xf32>
// CHECK:     %[[PH:.+]] = arith.truncf %[[P]] : vector<32x64xf32> to vector<32x64xf16>
// CHECK:     %[[PV:.+]] = vector.contract {indexing_maps = [#[[QMAP]], #[[VMAP:.+]], #[[SMAP]]], {{.+}}} %[[PH]], %[[VV]], %[[ACCS]] : vector<32x64xf16>, vector<64x16xf16> into vector<32x16xf32>
// CHECK:     scf.yield %[[MNEW]], %[[LNEW]], %[[PV]]
// CHECK:   %[[OF:.+]] = arith.truncf %{{.+}} : vector<32x16xf32> to vector<32x16xf16>
// CHECK:   %[[LOGL:.+]] = math.log
// CHECK:   %[[LSE:.+]] = arith.select %{{.+}} : vector<32xi1>, vector<32xf32>
// CHECK:   %[[OD:.+]] = tensor.extract_slice %[[OS]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 16] [1, 1, 1, 1] : tensor<1x4x?x16xf16> to tensor<?x16xf16>
// CHECK:   %[[OW:.+]] = vector.transfer_write %[[OF]], %[[OD]][%c0, %c0] {in_bounds = [false, true]} : vector<32x16xf16>, tensor<?x16xf16>
// CHECK:   %[[LD:.+]] = tensor.extract_slice %[[LS]][%[[IB]], %[[IH]], %[[R0]]] [1, 1, %[[ROWS]]] [1, 1, 1] : tensor<1x4x?xf32> to tensor<?xf32>
// CHECK:   %[[LW:.+]] = vector.transfer_write %[[LSE]], %[[LD]][%c0] : vector<32xf32>, tensor<?xf32>
// CHECK:   scf.forall.in_parallel {
// CHECK:     tensor.parallel_insert_slice %[[OW]] into %[[OS]][%[[IB]], %[[IH]], %[[R0]], 0] [1, 1, %[[ROWS]], 16]
// CHECK:     tensor.parallel_insert_slice %[[LW]] into %[[LS]][%[[IB]], %[[IH]], %[[R0]]] [1, 1, %[[ROWS]]]
// CHECK-NOT: fmha.tile_
// CHECK-NOT: tensor.pad

// With layouts every tile's vector is anchored in the layout its tensor had
// where it is made: q once per q tile, k and v per kv tile, the running max,
// sum and accumulator at their start, the scores of both branches, the
// softmax's outs, the product, and o and lse before they are written.
// LAYOUT-LABEL: func @causal
// LAYOUT: %[[QV:.+]] = vector.transfer_read {{.+}} vector<64x32xf16>
// LAYOUT-NEXT: %[[QA:.+]] = fmha.to_layout %[[QV]] to layout(#[[A:.+]]) : vector<64x32xf16>
// LAYOUT: fmha.to_layout %{{.+}} to layout(#[[ROW:.+]]) : vector<64xf32>
// LAYOUT: fmha.to_layout %{{.+}} to layout(#[[ROW]]) : vector<64xf32>
// LAYOUT: fmha.to_layout %{{.+}} to layout(#[[C16:.+]]) : vector<64x16xf32>
// LAYOUT: scf.for
// LAYOUT:   %[[KV:.+]] = vector.transfer_read {{.+}} vector<64x32xf16>
// LAYOUT-NEXT: %[[KB:.+]] = fmha.to_layout %[[KV]] to layout(#[[BT:.+]]) : vector<64x32xf16>
// LAYOUT:   %[[VV:.+]] = vector.transfer_read {{.+}} vector<64x16xf16>
// LAYOUT-NEXT: %[[VB:.+]] = fmha.to_layout %[[VV]] to layout(#[[B:.+]]) : vector<64x16xf16>
// LAYOUT:   scf.if
// LAYOUT:     vector.contract {{.+}} %[[QA]], %[[KB]]
// LAYOUT:     fmha.to_layout %{{.+}} to layout(#[[C:.+]]) : vector<64x64xf32>
// LAYOUT:   } else {
// LAYOUT:     fmha.to_layout %{{.+}} to layout(#[[C]]) : vector<64x64xf32>
// LAYOUT:   }
// LAYOUT:   %[[P:.+]] = fmha.to_layout %{{.+}} to layout(#[[C]]) : vector<64x64xf32>
// LAYOUT-NEXT: fmha.to_layout %{{.+}} to layout(#[[ROW]]) : vector<64xf32>
// LAYOUT-NEXT: fmha.to_layout %{{.+}} to layout(#[[ROW]]) : vector<64xf32>
// LAYOUT-NEXT: %[[ACC:.+]] = fmha.to_layout %{{.+}} to layout(#[[C16]]) : vector<64x16xf32>
// LAYOUT:   vector.contract {{.+}} %{{.+}}, %[[VB]], %[[ACC]]
// LAYOUT-NEXT: fmha.to_layout %{{.+}} to layout(#[[C16]]) : vector<64x16xf32>
// LAYOUT: %[[OV:.+]] = fmha.to_layout %{{.+}} to layout(#[[C16]]) : vector<64x16xf16>
// LAYOUT: %[[LV:.+]] = fmha.to_layout %{{.+}} to layout(#[[ROW]]) : vector<64xf32>
// LAYOUT: vector.transfer_write %[[OV]]
// LAYOUT: vector.transfer_write %[[LV]]
// LAYOUT-NOT: fmha.convert_layout
func.func @causal(%q: tensor<1x4x?x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x16xf16>, %o: tensor<1x4x?x16xf16>, %l: tensor<1x4x?xf32>) -> (tensor<1x4x?x16xf16>, tensor<1x4x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x16xf16>) outs(%o : tensor<1x4x?x16xf16>, %l : tensor<1x4x?xf32>) {mask = #fmha.mask<"b">, softcap = 50.0 : f32} -> tensor<1x4x?x16xf16>, tensor<1x4x?xf32>
  return %0#0, %0#1 : tensor<1x4x?x16xf16>, tensor<1x4x?xf32>
}

// -----

// Sink tokens: the sink loop and the main loop carry the vectors, the second
// taking the first's results. Without lse no lse is written.
// CHECK-LABEL: func @sinks
// CHECK: %[[SINK:.+]]:3 = scf.for {{.+}} -> (vector<32xf32>, vector<32xf32>, vector<32x64xf32>)
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[SINK]]#0, %{{.+}} = %[[SINK]]#1, %{{.+}} = %[[SINK]]#2) -> (vector<32xf32>, vector<32xf32>, vector<32x64xf32>)
// CHECK: vector.transfer_write {{.+}} : vector<32x64xbf16>, tensor<?x64xbf16>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.forall.in_parallel
func.func @sinks(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x8x?x64xbf16>, %o: tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16> {
  %0 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>, tensor<2x8x?x64xbf16>) outs(%o : tensor<2x8x?x64xbf16>) {mask = #fmha.mask<"t:16,0,4">} -> tensor<2x8x?x64xbf16>
  return %0 : tensor<2x8x?x64xbf16>
}

// -----

// Head dims that are not powers of two (D = 80 here, Dv = 48): the static
// tiles pad them to 128 and 64 columns, the reads of q, k and v give 0 past
// the slices' columns (no dim in bounds), the scores' contraction stops
// at D (fmha.k_extent), and o's write leaves the columns past Dv.
// CHECK-LABEL: func @padded_head_dims
// CHECK: vector.transfer_read %{{.+}}[%c0, %c0], %{{.+}} : tensor<?x80xf16>, vector<32x128xf16>
// CHECK: vector.transfer_read %{{.+}}[%c0, %c0], %{{.+}} : tensor<?x80xf16>, vector<64x128xf16>
// CHECK: vector.transfer_read %{{.+}}[%c0, %c0], %{{.+}} : tensor<?x48xf16>, vector<64x64xf16>
// CHECK: vector.contract {{.+}} {fmha.k_extent = 80 : i64} : vector<32x128xf16>, vector<64x128xf16> into vector<32x64xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c0, %c0] : vector<32x64xf16>, tensor<?x48xf16>
func.func @padded_head_dims(%q: tensor<1x4x?x80xf16>, %k: tensor<1x2x?x80xf16>, %v: tensor<1x2x?x48xf16>, %o: tensor<1x4x?x48xf16>) -> tensor<1x4x?x48xf16> {
  %0 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x80xf16>, tensor<1x2x?x80xf16>, tensor<1x2x?x48xf16>) outs(%o : tensor<1x4x?x48xf16>) {mask = #fmha.mask<"b">} -> tensor<1x4x?x48xf16>
  return %0 : tensor<1x4x?x48xf16>
}
