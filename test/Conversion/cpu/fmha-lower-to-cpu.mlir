// RUN: fmha-opt %s --fmha-lower-to-cpu -split-input-file | FileCheck %s

// q.k^T as a dot-product loop over the (static) head dim with a reassociable
// reduction, scale, then the element mask of b:8,0,2 on global indices.
// CHECK-LABEL: func @qk_masked
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x64xf16>, %[[S:[^:]+]]: memref<?x?xf32>, %[[R0:[^:]+]]: index, %[[C0:[^:]+]]: index, %[[SQ:[^:]+]]: index, %[[SK:[^:]+]]: index)
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for %[[I:.+]] = %c0 to %{{.+}} step %c1
// CHECK:   scf.for %[[J:.+]] = %c0 to %{{.+}} step %c1
// CHECK:     %[[DOT:.+]] = scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32)
// CHECK:       arith.extf %{{.+}} : f16 to f32
// CHECK:       %[[P:.+]] = arith.mulf %{{.+}}, %{{.+}} fastmath<reassoc,contract>
// CHECK:       %[[SUM:.+]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc,contract>
// CHECK:       scf.yield %[[SUM]]
// CHECK:     %[[X:.+]] = arith.mulf %[[DOT]], %{{.+}}
// CHECK:     %[[GI:.+]] = arith.addi %[[R0]], %[[I]]
// CHECK:     %[[GJ:.+]] = arith.addi %[[C0]], %[[J]]
// CHECK:     %[[OFF:.+]] = arith.subi %[[SK]], %[[SQ]]
// CHECK:     %[[DIAG:.+]] = arith.addi %[[GI]], %[[OFF]]
// CHECK:     %[[LO:.+]] = arith.subi %[[DIAG]], %c8
// CHECK:     %[[GE:.+]] = arith.cmpi sge, %[[GJ]], %[[LO]]
// CHECK:     %[[LE:.+]] = arith.cmpi sle, %[[GJ]], %[[DIAG]]
// CHECK:     %[[WIN:.+]] = arith.andi %[[GE]], %[[LE]]
// CHECK:     %[[SINK:.+]] = arith.cmpi slt, %[[GJ]], %c2
// CHECK:     %[[VIS:.+]] = arith.ori %[[WIN]], %[[SINK]]
// CHECK:     %[[MASKED:.+]] = arith.select %[[VIS]], %[[X]], %[[NEGINF]]
// CHECK:     memref.store %[[MASKED]], %[[S]][%[[I]], %[[J]]]
func.func @qk_masked(%q: memref<?x64xf16>, %s: memref<?x?xf32>, %r0: index, %c0: index, %sq: index, %sk: index) {
  fmha.tile_qk %q, %q into %s masked[%r0, %c0, %sq, %sk] {mask = #fmha.mask<"b:8,0,2">, scale = 0.5 : f32} : memref<?x64xf16>, memref<?x64xf16>, memref<?x?xf32>
  return
}

// -----

// Softcap is scale-then-tanh (polynomial, no libm call left).
// CHECK-LABEL: func @qk_softcap
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK-NOT: math.tanh
func.func @qk_softcap(%q: memref<?x64xf32>, %s: memref<?x?xf32>) {
  fmha.tile_qk %q, %q into %s {scale = 0.5 : f32, softcap = 20.0 : f32} : memref<?x64xf32>, memref<?x64xf32>, memref<?x?xf32>
  return
}

// -----

// Online softmax: the row max guards rows that have seen no visible key
// (m = -inf) so exp never sees -inf - -inf; exp is approximated by a
// polynomial that vectorizes.
// CHECK-LABEL: func @softmax
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.for %[[I:.+]] =
// CHECK:   %[[MOLD:.+]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[ROWMAX:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[NEGINF]])
// CHECK:     arith.maximumf
// CHECK:   %[[MNEW:.+]] = arith.maximumf %[[MOLD]], %[[ROWMAX]]
// CHECK:   %[[HIDDEN:.+]] = arith.cmpf oeq, %[[MNEW]], %[[NEGINF]]
// CHECK:   %[[MSAFE:.+]] = arith.select %[[HIDDEN]], %[[ZERO]], %[[MNEW]]
// CHECK:   arith.subf %[[MOLD]], %[[MSAFE]]
// CHECK:   memref.store %[[MNEW]], %arg1[%[[I]]]
// CHECK-NOT: math.exp
func.func @softmax(%s: memref<?x?xf32>, %m: memref<?xf32>, %l: memref<?xf32>, %acc: memref<?x32xf32>) {
  fmha.tile_softmax %s, %m, %l, %acc : memref<?x?xf32>, memref<?xf32>, memref<?xf32>, memref<?x32xf32>
  return
}

// -----

// acc[i, c] += p[i, j] * v[j, c] with c innermost (contiguous in v and acc).
// CHECK-LABEL: func @pv
// CHECK: scf.for %[[I:.+]] =
// CHECK:   scf.for %[[J:.+]] =
// CHECK:     %[[P:.+]] = memref.load %arg0[%[[I]], %[[J]]]
// CHECK:     scf.for %[[C:.+]] = %c0 to %c32
// CHECK:       %[[A:.+]] = memref.load %arg2[%[[I]], %[[C]]]
// CHECK:       %[[V:.+]] = memref.load %arg1[%[[J]], %[[C]]]
// CHECK:       %[[VF:.+]] = arith.extf %[[V]] : bf16 to f32
// CHECK:       %[[PV:.+]] = arith.mulf %[[P]], %[[VF]]
// CHECK:       %[[NEW:.+]] = arith.addf %[[A]], %[[PV]]
// CHECK:       memref.store %[[NEW]], %arg2[%[[I]], %[[C]]]
func.func @pv(%p: memref<?x?xf32>, %v: memref<?x32xbf16>, %acc: memref<?x32xf32>) {
  fmha.tile_pv %p, %v into %acc : memref<?x?xf32>, memref<?x32xbf16>, memref<?x32xf32>
  return
}

// -----

// Rows with l = 0 (no visible key) get o = 0 and lse = -inf, never NaN.
// CHECK-LABEL: func @finalize
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for %[[I:.+]] =
// CHECK:   %[[L:.+]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[ANY:.+]] = arith.cmpf ogt, %[[L]], %{{.+}}
// CHECK:   scf.for
// CHECK:     arith.select %[[ANY]]
// CHECK:     arith.truncf %{{.+}} : f32 to f16
// CHECK:   %[[LSE:.+]] = arith.select %[[ANY]], %{{.+}}, %[[NEGINF]]
// CHECK:   memref.store %[[LSE]], %arg4[%[[I]]]
func.func @finalize(%m: memref<?xf32>, %l: memref<?xf32>, %acc: memref<?x32xf32>, %o: memref<?x32xf16>, %lse: memref<?xf32>) {
  fmha.tile_finalize %m, %l, %acc into %o, %lse : memref<?xf32>, memref<?xf32>, memref<?x32xf32>, memref<?x32xf16>, memref<?xf32>
  return
}

// -----

// Per-iteration tile scratch moves to the function entry (allocas in a loop
// body would grow the stack), marked as scratch: fmha-cpu-parallel-for gives
// each thread its own.
// CHECK-LABEL: func @scratch
// CHECK-NEXT: memref.alloca() {fmha.scratch} : memref<64x64xf32>
// CHECK: scf.parallel
// CHECK-NOT: memref.alloca
func.func @scratch(%n: index, %acc: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = memref.alloca() : memref<64x64xf32>
    %m = memref.subview %s[0, 0] [64, 1] [1, 1] : memref<64x64xf32> to memref<64xf32, strided<[64]>>
    fmha.tile_init %m, %m, %acc : memref<64xf32, strided<[64]>>, memref<64xf32, strided<[64]>>, memref<?x64xf32>
    scf.reduce
  }
  return
}

