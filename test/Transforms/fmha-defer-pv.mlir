// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" --fmha-vectorize-tiles --fmha-defer-pv -cse | FileCheck %s

// The kv loop carries P (zero at first) and computes, after the scores of
// tile t (their product hoisted out of the mask's branches: both started
// with it), P_{t-1} V_{t-1} with V read at tile max(t - 1, lb) (0 here), then
// the softmax rescales that sum; the loop yields the rescaled sum and P_t.
// After the loop, where it ran, the last tile's product.
// CHECK-LABEL: func.func @attention
// CHECK: %[[PZERO:.+]] = arith.constant dense<0.000000e+00> : vector<64x64xbf16>
// CHECK: %[[LOOP:.+]]:4 = scf.for %[[T:[^ ]+]] = %[[LB:[^ ]+]] to %[[UB:[^ ]+]] step %[[STEP:[^ ]+]] iter_args(%[[M:[^ ]+]] = %{{.+}}, %[[L:[^ ]+]] = %{{.+}}, %[[ACC:[^ ]+]] = %{{.+}}, %[[P:[^ ]+]] = %[[PZERO]])
// CHECK: %[[KT:.+]] = vector.transfer_read %{{.+}} : tensor<?x64xbf16>, vector<64x64xbf16>
// CHECK: %[[K:.+]] = fmha.to_layout %[[KT]]
// CHECK: %[[PREV:.+]] = arith.maxsi %{{.+}}, %[[LB]] : index
// CHECK: %[[ROW:.+]] = arith.muli %[[PREV]], %c64 : index
// CHECK: tensor.extract_slice %{{.+}}[%{{.+}}, %{{.+}}, %[[ROW]], 0]
// CHECK: %[[VT:.+]] = vector.transfer_read
// CHECK: %[[V:.+]] = fmha.to_layout %[[VT]]
// CHECK: %[[S:.+]] = vector.contract {{.+}} %{{.+}}, %[[K]], %{{.+}} : vector<64x64xbf16>, vector<64x64xbf16> into vector<64x64xf32>
// CHECK: %[[PV:.+]] = vector.contract {{.+}} %[[P]], %[[V]], %[[ACC]] : vector<64x64xbf16>, vector<64x64xbf16> into vector<64x64xf32>
// CHECK: %[[SUM:.+]] = fmha.to_layout %[[PV]]
// CHECK: scf.if
// CHECK-NOT: vector.contract
// CHECK: arith.mulf %[[S]]
// CHECK: } else {
// CHECK-NOT: vector.contract
// CHECK: arith.mulf %[[S]]
// CHECK: %[[RESCALED:.+]] = arith.mulf %[[SUM]], %{{.+}} : vector<64x64xf32>
// CHECK: %[[RA:.+]] = fmha.to_layout %[[RESCALED]]
// CHECK: %[[PNEXT:.+]] = arith.truncf %{{.+}} : vector<64x64xf32> to vector<64x64xbf16>
// CHECK-NOT: vector.contract
// CHECK: scf.yield %{{.+}}, %{{.+}}, %[[RA]], %[[PNEXT]]
// CHECK: %[[RAN:.+]] = arith.cmpi slt, %[[LB]], %[[UB]] : index
// CHECK: %[[O:.+]] = scf.if %[[RAN]] -> (vector<64x64xf32>) {
// CHECK: vector.transfer_read
// CHECK: %[[VL:.+]] = fmha.to_layout
// CHECK: %[[LAST:.+]] = vector.contract {{.+}} %[[LOOP]]#3, %[[VL]], %[[LOOP]]#2
// CHECK: %[[LA:.+]] = fmha.to_layout %[[LAST]]
// CHECK: scf.yield %[[LA]]
// CHECK: } else {
// CHECK: scf.yield %[[LOOP]]#2
// CHECK: arith.mulf %[[O]]
func.func @attention(%q: tensor<2x4x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>, %o: tensor<2x4x?x64xbf16>, %l: tensor<2x4x?xf32>) -> (tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<2x4x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) outs(%o : tensor<2x4x?x64xbf16>, %l : tensor<2x4x?xf32>) {mask = #fmha.mask<"0">} -> tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>
  return %0#0, %0#1 : tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>
}
