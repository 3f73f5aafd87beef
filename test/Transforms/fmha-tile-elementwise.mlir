// RUN: fmha-opt %s --fmha-tile-elementwise -canonicalize -cse -split-input-file -verify-diagnostics | FileCheck %s

// fmha.merge on contiguous operands: one parallel loop over the B*H*S rows
// of flat views; per row both lse, the empty-partial tests against -inf, the
// weights exp(lse_i - m) (0 for an empty partial), an inner parallel loop
// over the Dv columns, then the row's lse (-inf when both are empty), written
// after every read of the row (o = o1, lse = lse1 here: in place).
// CHECK-LABEL: func @merge
// CHECK-SAME: (%[[O1:[^:]+]]: memref<?x4x?x32xbf16>, %[[L1:[^:]+]]: memref<?x4x?xf32>, %[[O2:[^:]+]]: memref<?x4x?x32xbf16>, %[[L2:[^:]+]]: memref<?x4x?xf32>)
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[B:.+]] = memref.dim %[[L1]], %c0
// CHECK-DAG: %[[S:.+]] = memref.dim %[[L1]], %c2
// CHECK-DAG: %[[BH:.+]] = arith.muli %[[B]], %c4
// CHECK-DAG: %[[ROWS:.+]] = arith.muli %[[BH]], %[[S]]
// CHECK-DAG: %[[FO1:.+]] = memref.collapse_shape %[[O1]] {{\[\[}}0, 1, 2, 3]] : memref<?x4x?x32xbf16> into memref<?xbf16>
// CHECK-DAG: %[[FO2:.+]] = memref.collapse_shape %[[O2]] {{\[\[}}0, 1, 2, 3]]
// CHECK-DAG: %[[FL1:.+]] = memref.collapse_shape %[[L1]] {{\[\[}}0, 1, 2]] : memref<?x4x?xf32> into memref<?xf32>
// CHECK-DAG: %[[FL2:.+]] = memref.collapse_shape %[[L2]] {{\[\[}}0, 1, 2]]
// CHECK: scf.parallel (%[[R:.+]]) = (%c0) to (%[[ROWS]]) step (%c1) {
// CHECK:   %[[X1:.+]] = memref.load %[[FL1]][%[[R]]]
// CHECK:   %[[X2:.+]] = memref.load %[[FL2]][%[[R]]]
// CHECK:   %[[E1:.+]] = arith.cmpf oeq, %[[X1]], %[[NEGINF]]
// CHECK:   %[[E2:.+]] = arith.cmpf oeq, %[[X2]], %[[NEGINF]]
// CHECK:   %[[BOTH:.+]] = arith.andi %[[E1]], %[[E2]]
// CHECK:   %[[MAX:.+]] = arith.maximumf %[[X1]], %[[X2]]
// CHECK:   %[[M:.+]] = arith.select %[[BOTH]], %[[ZERO]], %[[MAX]]
// CHECK:   %[[D1:.+]] = arith.subf %[[X1]], %[[M]]
// CHECK:   %[[P1:.+]] = math.exp %[[D1]]
// CHECK:   %[[W1:.+]] = arith.select %[[E1]], %[[ZERO]], %[[P1]]
// CHECK:   %[[D2:.+]] = arith.subf %[[X2]], %[[M]]
// CHECK:   %[[P2:.+]] = math.exp %[[D2]]
// CHECK:   %[[W2:.+]] = arith.select %[[E2]], %[[ZERO]], %[[P2]]
// CHECK:   %[[W:.+]] = arith.addf %[[W1]], %[[W2]]
// CHECK:   %[[SUM:.+]] = arith.select %[[BOTH]], %{{.+}}, %[[W]]
// CHECK:   %[[BASE:.+]] = arith.muli %[[R]], %c32
// CHECK:   scf.parallel (%[[C:.+]]) = (%c0) to (%c32) step (%c1) {
// CHECK:     %[[AT:.+]] = arith.addi %[[BASE]], %[[C]]
// CHECK:     memref.load %[[FO1]][%[[AT]]]
// CHECK:     arith.extf %{{.+}} : bf16 to f32
// CHECK:     arith.select %[[E1]], %[[ZERO]], %{{.+}}
// CHECK:     memref.load %[[FO2]][%[[AT]]]
// CHECK:     arith.select %[[E2]], %[[ZERO]], %{{.+}}
// CHECK:     %[[T:.+]] = arith.truncf %{{.+}} : f32 to bf16
// CHECK:     memref.store %[[T]], %[[FO1]][%[[AT]]]
// CHECK:   %[[LOG:.+]] = math.log %[[SUM]]
// CHECK:   %[[ML:.+]] = arith.addf %[[M]], %[[LOG]]
// CHECK:   %[[LSE:.+]] = arith.select %[[BOTH]], %[[NEGINF]], %[[ML]]
// CHECK:   memref.store %[[LSE]], %[[FL1]][%[[R]]]
// CHECK-NOT: fmha.merge
func.func @merge(%o1: memref<?x4x?x32xbf16>, %l1: memref<?x4x?xf32>, %o2: memref<?x4x?x32xbf16>, %l2: memref<?x4x?xf32>) {
  fmha.merge ins(%o1, %l1, %o2, %l2 : memref<?x4x?x32xbf16>, memref<?x4x?xf32>, memref<?x4x?x32xbf16>, memref<?x4x?xf32>) outs(%o1, %l1 : memref<?x4x?x32xbf16>, memref<?x4x?xf32>)
  return
}

// -----

// A strided operand: the loops run over the operands' own (b, h, s, c)
// indices, no flat views; f32 needs no conversions.
// CHECK-LABEL: func @merge_strided
// CHECK-SAME: (%[[O1:[^:]+]]: memref<2x3x5x8xf32, strided<[240, 80, 16, 1]>>, %[[L1:[^:]+]]: memref<2x3x5xf32>, %[[O:[^:]+]]: memref<2x3x5x8xf32>, %[[L:[^:]+]]: memref<2x3x5xf32>)
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.parallel (%[[B:.+]], %[[H:.+]], %[[S:.+]]) = (%c0, %c0, %c0) to (%c2, %c3, %c5) step (%c1, %c1, %c1) {
// CHECK:   memref.load %[[L1]][%[[B]], %[[H]], %[[S]]]
// CHECK:   scf.parallel (%[[C:.+]]) = (%c0) to (%c8) step (%c1) {
// CHECK:     memref.load %[[O1]][%[[B]], %[[H]], %[[S]], %[[C]]]
// CHECK:     memref.store %{{.+}}, %[[O]][%[[B]], %[[H]], %[[S]], %[[C]]]
// CHECK:   memref.store %{{.+}}, %[[L]][%[[B]], %[[H]], %[[S]]]
// CHECK-NOT: arith.extf
func.func @merge_strided(%o1: memref<2x3x5x8xf32, strided<[240, 80, 16, 1]>>, %l1: memref<2x3x5xf32>, %o: memref<2x3x5x8xf32>, %l: memref<2x3x5xf32>) {
  fmha.merge ins(%o1, %l1, %o1, %l1 : memref<2x3x5x8xf32, strided<[240, 80, 16, 1]>>, memref<2x3x5xf32>, memref<2x3x5x8xf32, strided<[240, 80, 16, 1]>>, memref<2x3x5xf32>) outs(%o, %l : memref<2x3x5x8xf32>, memref<2x3x5xf32>)
  return
}

// -----

// fmha.accumulate on contiguous operands: one loop over the elements of flat
// views, the count from the operand's sizes; acc + f32(x), acc read first.
// CHECK-LABEL: func @acc_rank3
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x?x8xf16>, %[[A:[^:]+]]: memref<2x?x8xf32>)
// CHECK-DAG: %[[D:.+]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[N:.+]] = arith.muli %[[D]], %c16
// CHECK-DAG: %[[FX:.+]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : memref<2x?x8xf16> into memref<?xf16>
// CHECK-DAG: %[[FA:.+]] = memref.collapse_shape %[[A]] {{\[\[}}0, 1, 2]] : memref<2x?x8xf32> into memref<?xf32>
// CHECK: scf.parallel (%[[I:.+]]) = (%c0) to (%[[N]]) step (%c1) {
// CHECK:   %[[OLD:.+]] = memref.load %[[FA]][%[[I]]] : memref<?xf32>
// CHECK:   %[[XV:.+]] = memref.load %[[FX]][%[[I]]] : memref<?xf16>
// CHECK:   %[[XF:.+]] = arith.extf %[[XV]] : f16 to f32
// CHECK:   %[[SUM:.+]] = arith.addf %[[OLD]], %[[XF]] : f32
// CHECK:   memref.store %[[SUM]], %[[FA]][%[[I]]] : memref<?xf32>
// CHECK-NOT: fmha.accumulate
func.func @acc_rank3(%x: memref<2x?x8xf16>, %acc: memref<2x?x8xf32>) {
  fmha.accumulate ins(%x : memref<2x?x8xf16>) outs(%acc : memref<2x?x8xf32>)
  return
}

// A strided x: one loop dimension per operand dimension.
// CHECK-LABEL: func @acc_strided
// CHECK: scf.parallel (%[[I:.+]], %[[J:.+]]) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
// CHECK:   memref.load %{{.+}}[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK:   memref.load %{{.+}}[%[[I]], %[[J]]] : memref<4x8xf32, strided<[16, 1]>>
func.func @acc_strided(%x: memref<4x8xf32, strided<[16, 1]>>, %acc: memref<4x8xf32>) {
  fmha.accumulate ins(%x : memref<4x8xf32, strided<[16, 1]>>) outs(%acc : memref<4x8xf32>)
  return
}

// Rank 0: a view of one element (the canonicalizer then inlines the loop of
// one iteration).
// CHECK-LABEL: func @acc_scalar
// CHECK: %[[EX:.+]] = memref.expand_shape %{{.+}} [] output_shape [1] : memref<f16> into memref<1xf16>
// CHECK: %[[EA:.+]] = memref.expand_shape %{{.+}} [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK: memref.load %[[EA]][%c0]
// CHECK: memref.load %[[EX]][%c0]
// CHECK: memref.store %{{.+}}, %[[EA]][%c0]
func.func @acc_scalar(%x: memref<f16>, %acc: memref<f32>) {
  fmha.accumulate ins(%x : memref<f16>) outs(%acc : memref<f32>)
  return
}

// -----

func.func @tensors(%x: tensor<?xf16>, %acc: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'fmha.accumulate' op is tiled on memrefs: bufferize it first (the fmha-to-{cpu,nvvm,rocdl}-pipeline do)}}
  %r = fmha.accumulate ins(%x : tensor<?xf16>) outs(%acc : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

func.func @merge_tensors(%o: tensor<1x4x8x64xbf16>, %l: tensor<1x4x8xf32>) -> (tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>) {
  // expected-error @+1 {{'fmha.merge' op is tiled on memrefs: bufferize it first}}
  %r:2 = fmha.merge ins(%o, %l, %o, %l : tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>, tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>) outs(%o, %l : tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>) -> tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>
  return %r#0, %r#1 : tensor<1x4x8x64xbf16>, tensor<1x4x8xf32>
}

// -----

// fmha.sinks_grad: three loops with sequential sums (a fixed order): each
// row's exp(sinks[h] - lse) times rowsum(dout * o) into dsinks_rows, sums of
// chunks of 256 rows into dsinks_parts, then per head the negated sum over
// the batch and the chunks.
// CHECK-LABEL: func @sinks_grad
// CHECK-SAME: (%[[O:[^:]+]]: memref<?x4x?x32xbf16>, %[[L:[^:]+]]: memref<?x4x?xf32>, %[[DO:[^:]+]]: memref<?x4x?x32xbf16>, %[[S:[^:]+]]: memref<4xf32>, %[[DS:[^:]+]]: memref<4xf32>)
// CHECK-DAG: %[[B:.+]] = memref.dim %[[L]], %c0
// CHECK-DAG: %[[SQ:.+]] = memref.dim %[[L]], %c2
// CHECK-DAG: %[[T:.+]] = arith.ceildivsi %[[SQ]], %c256
// CHECK: %[[ROWS:.+]] = memref.alloc(%{{.+}}) {fmha.workspace = "dsinks_rows"}
// CHECK: %[[PARTS:.+]] = memref.alloc(%{{.+}}) {fmha.workspace = "dsinks_parts"}
// CHECK: scf.parallel (%[[IB:.+]], %[[IH:.+]], %[[II:.+]]) = (%c0, %c0, %c0) to (%[[B]], %c4, %[[SQ]])
// CHECK: %[[DSUM:.+]] = scf.for %[[C:.+]] = %c0 to %c32 step %c1 iter_args(%[[ACC:.+]] = %cst) -> (f32) {
// CHECK: memref.load %[[DO]][%[[IB]], %[[IH]], %[[II]], %[[C]]]
// CHECK: memref.load %[[O]][%[[IB]], %[[IH]], %[[II]], %[[C]]]
// CHECK: %[[SINK:.+]] = memref.load %[[S]][%[[IH]]]
// CHECK: %[[LSE:.+]] = memref.load %[[L]][%[[IB]], %[[IH]], %[[II]]]
// CHECK: %[[D:.+]] = arith.subf %[[SINK]], %[[LSE]]
// CHECK: %[[P:.+]] = math.exp %[[D]]
// CHECK: %[[TERM:.+]] = arith.mulf %[[P]], %[[DSUM]]
// CHECK: memref.store %[[TERM]], %[[ROWS]]
// CHECK: scf.parallel ({{.+}}) = (%c0, %c0, %c0) to (%[[B]], %c4, %[[T]])
// CHECK: arith.minsi %[[SQ]]
// CHECK: scf.for
// CHECK: memref.load %[[ROWS]]
// CHECK: memref.store %{{.+}}, %[[PARTS]]
// CHECK: scf.parallel (%[[H:.+]]) = (%c0) to (%c4)
// CHECK: scf.for %{{.+}} = %c0 to %[[B]]
// CHECK: scf.for %{{.+}} = %c0 to %[[T]]
// CHECK: memref.load %[[PARTS]]
// CHECK: %[[NEG:.+]] = arith.negf
// CHECK: memref.store %[[NEG]], %[[DS]][%[[H]]]
// CHECK: memref.dealloc %[[ROWS]]
// CHECK: memref.dealloc %[[PARTS]]
func.func @sinks_grad(%o: memref<?x4x?x32xbf16>, %l: memref<?x4x?xf32>, %do: memref<?x4x?x32xbf16>, %s: memref<4xf32>, %ds: memref<4xf32>) {
  fmha.sinks_grad ins(%o, %l, %do, %s : memref<?x4x?x32xbf16>, memref<?x4x?xf32>, memref<?x4x?x32xbf16>, memref<4xf32>) outs(%ds : memref<4xf32>)
  return
}
