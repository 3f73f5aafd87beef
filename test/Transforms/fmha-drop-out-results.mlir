// RUN: fmha-opt %s --fmha-drop-out-results | FileCheck %s

// A result that is an argument's buffer goes, public function or not; one
// through a cast to another type and one that is no argument stay.
// CHECK-LABEL: func.func @outs(
// CHECK-SAME: %[[X:.+]]: memref<4xf32>, %[[ACC:.+]]: memref<4xf32>) -> (memref<?xf32>, index)
// CHECK: %[[CAST:.+]] = memref.cast %[[ACC]]
// CHECK: return %[[CAST]], %{{.+}} : memref<?xf32>, index
func.func @outs(%x: memref<4xf32>, %acc: memref<4xf32>) -> (memref<4xf32>, memref<?xf32>, index) {
  %c = memref.cast %acc : memref<4xf32> to memref<?xf32>
  %n = arith.constant 4 : index
  return %acc, %c, %n : memref<4xf32>, memref<?xf32>, index
}

// Callers take the argument they passed.
// CHECK-LABEL: func.func @caller(
// CHECK-SAME: %[[A:.+]]: memref<4xf32>, %[[B:.+]]: memref<4xf32>)
// CHECK: %[[R:.+]]:2 = call @outs(%[[A]], %[[B]]) : (memref<4xf32>, memref<4xf32>) -> (memref<?xf32>, index)
// CHECK: memref.copy %[[B]], %[[A]]
// CHECK: return %[[R]]#1 : index
func.func @caller(%a: memref<4xf32>, %b: memref<4xf32>) -> index {
  %0:3 = call @outs(%a, %b) : (memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<?xf32>, index)
  memref.copy %0#0, %a : memref<4xf32> to memref<4xf32>
  return %0#2 : index
}

// A function without a body keeps its signature.
// CHECK-LABEL: func.func private @external(memref<4xf32>) -> memref<4xf32>
func.func private @external(%a: memref<4xf32>) -> memref<4xf32>
