// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1 longest-first=1" -cse -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" -cse -split-input-file | FileCheck %s --check-prefix=OFF

// Under a mask with a right bound, iteration i of the q-tile loop takes q
// tile ceil(Sq / 64) - 1 - i: the tiles that see the most keys first (a GPU
// grid dispatched in iteration order ends on the light ones). Without the
// option, iteration i takes tile i.
// CHECK-LABEL: func.func @causal
// CHECK: %[[TILES:.+]] = arith.ceildivsi %{{.+}}, %[[C64:.+]] : index
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %[[I:.+]]) in (1, 4, %[[TILES]])
// CHECK: %[[LAST:.+]] = arith.subi %[[TILES]], %{{.+}} : index
// CHECK: %[[QT:.+]] = arith.subi %[[LAST]], %[[I]] : index
// CHECK: %[[R0:.+]] = arith.muli %[[QT]], %[[C64]] : index
// CHECK: tensor.extract_slice %arg0[%{{.+}}, %{{.+}}, %[[R0]], 0]
// OFF-LABEL: func.func @causal
// OFF: scf.forall (%{{.+}}, %{{.+}}, %[[I:.+]]) in
// OFF: arith.muli %[[I]], %{{.+}} : index
func.func @causal(%q: tensor<1x4x?x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x32xf16>, %o: tensor<1x4x?x32xf16>) -> tensor<1x4x?x32xf16> {
  %0 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x32xf16>) outs(%o : tensor<1x4x?x32xf16>) {mask = #fmha.mask<"b">} -> tensor<1x4x?x32xf16>
  return %0 : tensor<1x4x?x32xf16>
}

// -----

// No right bound (here no mask): every q tile sees every key; the order
// stays.
// CHECK-LABEL: func.func @full
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %[[I:.+]]) in
// CHECK-NOT: arith.subi %{{.+}}, %[[I]]
// CHECK: arith.muli %[[I]], %{{.+}} : index
func.func @full(%q: tensor<1x4x?x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x32xf16>, %o: tensor<1x4x?x32xf16>) -> tensor<1x4x?x32xf16> {
  %0 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x32xf16>) outs(%o : tensor<1x4x?x32xf16>) -> tensor<1x4x?x32xf16>
  return %0 : tensor<1x4x?x32xf16>
}
