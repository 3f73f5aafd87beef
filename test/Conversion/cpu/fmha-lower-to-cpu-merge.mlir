// RUN: fmha-opt %s --fmha-lower-to-cpu -split-input-file -verify-diagnostics | FileCheck %s

// fmha.merge: a (b, h, s) row loop nest with dynamic B and S; per row the
// lse of both partials, the empty-partial tests against -inf, the weights
// (0 for an empty partial), then an inner loop over Dv and the merged lse
// (-inf when both are empty).
// CHECK-LABEL: func @merge
// CHECK-SAME: (%[[O1:[^:]+]]: memref<?x4x?x32xbf16>, %[[L1:[^:]+]]: memref<?x4x?xf32>, %[[O2:[^:]+]]: memref<?x4x?x32xbf16>, %[[L2:[^:]+]]: memref<?x4x?xf32>, %[[O:[^:]+]]: memref<?x4x?x32xbf16>, %[[L:[^:]+]]: memref<?x4x?xf32>)
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[B:.+]] = memref.dim %[[O1]], %c0
// CHECK: scf.for %[[BI:.+]] = %c0 to %[[B]] step %c1
// CHECK:   scf.for %[[HI:.+]] = %c0 to %c4 step %c1
// CHECK:     %[[S:.+]] = memref.dim %[[O1]], %c2
// CHECK:     scf.for %[[SI:.+]] = %c0 to %[[S]] step %c1
// CHECK:       %[[X1:.+]] = memref.load %[[L1]][%[[BI]], %[[HI]], %[[SI]]]
// CHECK:       %[[X2:.+]] = memref.load %[[L2]][%[[BI]], %[[HI]], %[[SI]]]
// CHECK:       %[[E1:.+]] = arith.cmpf oeq, %[[X1]], %[[NEGINF]]
// CHECK:       %[[E2:.+]] = arith.cmpf oeq, %[[X2]], %[[NEGINF]]
// CHECK:       %[[BOTH:.+]] = arith.andi %[[E1]], %[[E2]]
// CHECK:       %[[MAX:.+]] = arith.maximumf %[[X1]], %[[X2]]
// CHECK:       %[[M:.+]] = arith.select %[[BOTH]], %[[ZERO]], %[[MAX]]
// CHECK:       arith.subf %[[X1]], %[[M]]
// CHECK:       arith.select %[[E1]], %[[ZERO]], %{{.+}}
// CHECK:       arith.subf %[[X2]], %[[M]]
// CHECK:       arith.select %[[E2]], %[[ZERO]], %{{.+}}
// CHECK:       scf.for %[[C:.+]] = %c0 to %c32 step %c1
// CHECK:         memref.load %[[O1]][%[[BI]], %[[HI]], %[[SI]], %[[C]]]
// CHECK:         arith.extf %{{.+}} : bf16 to f32
// CHECK:         arith.select %[[E1]], %[[ZERO]], %{{.+}}
// CHECK:         memref.load %[[O2]][%[[BI]], %[[HI]], %[[SI]], %[[C]]]
// CHECK:         arith.select %[[E2]], %[[ZERO]], %{{.+}}
// CHECK:         arith.truncf %{{.+}} : f32 to bf16
// CHECK:         memref.store %{{.+}}, %[[O]][%[[BI]], %[[HI]], %[[SI]], %[[C]]]
// CHECK:       %[[LSE:.+]] = arith.select %[[BOTH]], %[[NEGINF]], %{{.+}}
// CHECK:       memref.store %[[LSE]], %[[L]][%[[BI]], %[[HI]], %[[SI]]]
// CHECK-NOT: fmha.merge
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
func.func @merge(%o1: memref<?x4x?x32xbf16>, %l1: memref<?x4x?xf32>, %o2: memref<?x4x?x32xbf16>, %l2: memref<?x4x?xf32>, %o: memref<?x4x?x32xbf16>, %l: memref<?x4x?xf32>) {
  fmha.merge ins(%o1, %l1, %o2, %l2 : memref<?x4x?x32xbf16>, memref<?x4x?xf32>, memref<?x4x?x32xbf16>, memref<?x4x?xf32>) outs(%o, %l : memref<?x4x?x32xbf16>, memref<?x4x?xf32>)
  return
}

// -----

// Static shapes and f32: the loop bounds are constants.
// CHECK-LABEL: func @merge_static
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1
// CHECK:   scf.for %{{.+}} = %c0 to %c3 step %c1
// CHECK:     scf.for %{{.+}} = %c0 to %c5 step %c1
// CHECK:       scf.for %{{.+}} = %c0 to %c8 step %c1
// CHECK-NOT: arith.extf
// CHECK-NOT: fmha.merge
func.func @merge_static(%o1: memref<2x3x5x8xf32>, %l1: memref<2x3x5xf32>, %o: memref<2x3x5x8xf32>, %l: memref<2x3x5xf32>) {
  fmha.merge ins(%o1, %l1, %o1, %l1 : memref<2x3x5x8xf32>, memref<2x3x5xf32>, memref<2x3x5x8xf32>, memref<2x3x5xf32>) outs(%o, %l : memref<2x3x5x8xf32>, memref<2x3x5xf32>)
  return
}

// -----

// On tensors the merge is not lowered: a diagnostic, not a crash.
func.func @merge_tensors(%o1: tensor<1x2x3x4xf32>, %l1: tensor<1x2x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) {
  // expected-error @+1 {{'fmha.merge' op on tensors is not lowered for the CPU; bufferize it to memrefs first}}
  %o, %l = fmha.merge ins(%o1, %l1, %o1, %l1 : tensor<1x2x3x4xf32>, tensor<1x2x3xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) outs(%o1, %l1 : tensor<1x2x3x4xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3x4xf32>, tensor<1x2x3xf32>
  return %o, %l : tensor<1x2x3x4xf32>, tensor<1x2x3xf32>
}
