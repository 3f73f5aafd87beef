// RUN: fmha-opt %s --fmha-lower-to-cpu -split-input-file -verify-diagnostics | FileCheck %s

// fmha.accumulate: one loop per dimension (dynamic sizes from memref.dim),
// acc + f32(x) stored back into acc.
// CHECK-LABEL: func @acc_bf16
// CHECK-SAME: (%[[X:[^:]+]]: memref<?xbf16>, %[[A:[^:]+]]: memref<?xf32>)
// CHECK: %[[N:.+]] = memref.dim %[[X]], %c0
// CHECK: scf.for %[[I:.+]] = %c0 to %[[N]] step %c1
// CHECK:   %[[OLD:.+]] = memref.load %[[A]][%[[I]]] : memref<?xf32>
// CHECK:   %[[XV:.+]] = memref.load %[[X]][%[[I]]] : memref<?xbf16>
// CHECK:   %[[XF:.+]] = arith.extf %[[XV]] : bf16 to f32
// CHECK:   %[[SUM:.+]] = arith.addf %[[OLD]], %[[XF]] : f32
// CHECK:   memref.store %[[SUM]], %[[A]][%[[I]]] : memref<?xf32>
// CHECK-NOT: fmha.accumulate
func.func @acc_bf16(%x: memref<?xbf16>, %acc: memref<?xf32>) {
  fmha.accumulate ins(%x : memref<?xbf16>) outs(%acc : memref<?xf32>)
  return
}

// CHECK-LABEL: func @acc_rank3
// CHECK: scf.for %[[I:.+]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[J:.+]] = %c0 to %{{.+}} step %c1
// CHECK:     scf.for %[[K:.+]] = %c0 to %c8 step %c1
// CHECK:       memref.load %{{.+}}[%[[I]], %[[J]], %[[K]]] : memref<2x?x8xf32>
// CHECK-NOT:   arith.extf
// CHECK:       arith.addf
// CHECK:       memref.store %{{.+}}, %{{.+}}[%[[I]], %[[J]], %[[K]]]
func.func @acc_rank3(%x: memref<2x?x8xf32>, %acc: memref<2x?x8xf32>) {
  fmha.accumulate ins(%x : memref<2x?x8xf32>) outs(%acc : memref<2x?x8xf32>)
  return
}

// -----

func.func @tensors(%x: tensor<?xf16>, %acc: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{on tensors is not lowered for the CPU; bufferize it to memrefs first}}
  %r = fmha.accumulate ins(%x : tensor<?xf16>) outs(%acc : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
