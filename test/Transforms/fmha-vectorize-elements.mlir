// RUN: fmha-opt %s --fmha-vectorize-elements -canonicalize -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-vectorize-elements=width=8 -canonicalize -cse | FileCheck %s --check-prefix=W8
// RUN: not fmha-opt %s --fmha-vectorize-elements=width=3 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: fmha-vectorize-elements: width must be a power of two from 2 to 64, got 3

// An elementwise loop (the accumulate of --fmha-tile-elementwise): chunks of
// 4 elements; with the whole chunk in range and both buffers aligned to a
// vector of 4 (16 bytes of f32, 8 of bf16), vector loads, the ops on
// vectors (a value from above broadcast), a vector store; else element by
// element up to the end.
// CHECK-LABEL: func.func @acc(
// CHECK-SAME: %[[X:[^:]+]]: memref<?xbf16>, %[[A:[^:]+]]: memref<?xf32>, %[[N:[^:]+]]: index, %[[S:[^:]+]]: f32)
// CHECK: %[[CHUNKS:.+]] = arith.ceildivsi %[[N]], %c4
// CHECK: scf.parallel (%[[J:.+]]) = (%c0) to (%[[CHUNKS]]) step (%c1) {
// CHECK:   %[[BASE:.+]] = arith.muli %[[J]], %c4
// CHECK:   %[[END:.+]] = arith.addi %[[BASE]], %c4
// CHECK:   %[[FULL:.+]] = arith.cmpi sle, %[[END]], %[[N]]
// CHECK:   %[[PA:.+]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:   arith.remui %[[PA]], %c16
// CHECK:   %[[PX:.+]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:   arith.remui %[[PX]], %c8
// CHECK:   scf.if %{{.+}} {
// CHECK:     %[[VA:.+]] = vector.load %[[A]][%[[BASE]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK:     %[[VX:.+]] = vector.load %[[X]][%[[BASE]]] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// CHECK:     %[[WX:.+]] = arith.extf %[[VX]] : vector<4xbf16> to vector<4xf32>
// CHECK:     %[[VS:.+]] = vector.broadcast %[[S]] : f32 to vector<4xf32>
// CHECK:     %[[M:.+]] = arith.mulf %[[WX]], %[[VS]] : vector<4xf32>
// CHECK:     %[[SUM:.+]] = arith.addf %[[VA]], %[[M]] : vector<4xf32>
// CHECK:     vector.store %[[SUM]], %[[A]][%[[BASE]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK:   } else {
// CHECK:     %[[LAST:.+]] = arith.minsi %[[END]], %[[N]]
// CHECK:     scf.for %[[I:.+]] = %[[BASE]] to %[[LAST]] step %c1 {
// CHECK:       memref.load %[[A]][%[[I]]] : memref<?xf32>
// CHECK:       memref.store %{{.+}}, %[[A]][%[[I]]] : memref<?xf32>
// W8-LABEL: func.func @acc(
// W8: arith.ceildivsi %{{.+}}, %c8
// W8: vector.load %{{.+}} {alignment = 32 : i64} : memref<?xf32>, vector<8xf32>
func.func @acc(%x: memref<?xbf16>, %acc: memref<?xf32>, %n: index, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %a = memref.load %acc[%i] : memref<?xf32>
    %v = memref.load %x[%i] : memref<?xbf16>
    %w = arith.extf %v : bf16 to f32
    %m = arith.mulf %w, %s : f32
    %r = arith.addf %a, %m : f32
    memref.store %r, %acc[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// Loops of other forms are left as they are: the index used in arithmetic,
// an access not at the index, a strided memref, two dimensions, a region in
// the body (the merge's row loop).
// CHECK-LABEL: func.func @left
// CHECK-NOT: vector.
// CHECK: return
func.func @left(%x: memref<?xf32>, %y: memref<?xf32, strided<[2]>>, %z: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %f = arith.index_cast %i : index to i32
    %g = arith.sitofp %f : i32 to f32
    memref.store %g, %x[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %x[%c0] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %y[%i] : memref<?xf32, strided<[2]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %one, %z[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      memref.store %one, %z[%i, %j] : memref<?x?xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}
