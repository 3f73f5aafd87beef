// RUN: fmha-opt %s --fmha-cpu-parallel-for -split-input-file -verify-diagnostics | FileCheck %s

// A (b, h, tile) loop nest: the body is outlined over the flat range
// [lo, hi) (the last dimension fastest), the memref and the index it reads
// travel in a stack struct, the constant and the scratch alloca are made
// anew in the body (one scratch per thread); the call goes through the
// exported hook when it is set, else directly over [0, n).
// CHECK: llvm.mlir.global external @fmha_parallel_for() {{.*}} : !llvm.ptr
// CHECK:   %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK:   llvm.return %[[NULL]]
// CHECK-LABEL: func.func private @kernel_parallel_0
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr, %[[LO:.+]]: i64, %[[HI:.+]]: i64)
// CHECK-DAG: %[[SCRATCH:.+]] = memref.alloca() {fmha.scratch} : memref<4xf32>
// CHECK-DAG: %[[F:.+]] = arith.constant 2.000000e+00 : f32
// The context: the memref's descriptor, then the counts that are not
// constants (B, and the tiles of the stepped last dimension).
// CHECK: %[[P0:.+]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK: %[[D0:.+]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>
// CHECK: %[[M:.+]] = builtin.unrealized_conversion_cast %[[D0]] {{.*}} to memref<?x4x?xf32>
// CHECK: llvm.getelementptr %[[CTX]][0, 1]
// CHECK: %[[P2:.+]] = llvm.getelementptr %[[CTX]][0, 2]
// CHECK: %[[NT64:.+]] = llvm.load %[[P2]] : !llvm.ptr -> i64
// CHECK: %[[NT:.+]] = arith.index_cast %[[NT64]] : i64 to index
// CHECK: %[[L:.+]] = arith.index_cast %[[LO]] : i64 to index
// CHECK: %[[H:.+]] = arith.index_cast %[[HI]] : i64 to index
// CHECK: scf.for %[[I:.+]] = %[[L]] to %[[H]]
// CHECK:   arith.remsi %[[I]], %[[NT]]
// CHECK:   %[[REST:.+]] = arith.divsi %[[I]], %[[NT]]
// CHECK:   arith.remsi %[[REST]], %c4
// CHECK:   memref.store %[[F]], %[[SCRATCH]]
// CHECK:   memref.store %{{.+}}, %[[M]]
// CHECK: return
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%[[ARG:.+]]: memref<?x4x?xf32>, %[[N:.+]]: index, %[[XA:.+]]: index)
// CHECK-NOT: scf.parallel
// CHECK: %[[CTXS:.+]] = llvm.alloca %{{.+}} x !llvm.struct<(struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>, i64, i64)>
// CHECK: %[[DESC:.+]] = builtin.unrealized_conversion_cast %[[ARG]]
// CHECK: llvm.store %[[DESC]]
// CHECK: %[[HOOKP:.+]] = llvm.mlir.addressof @fmha_parallel_for
// CHECK: %[[HOOK:.+]] = llvm.load %[[HOOKP]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[UNSET:.+]] = llvm.icmp "eq" %[[HOOK]]
// CHECK: scf.if %[[UNSET]] {
// CHECK:   func.call @kernel_parallel_0(%[[CTXS]], %{{.+}}, %[[TOTAL:[^)]+]])
// CHECK: } else {
// CHECK:   %[[BODY:.+]] = func.constant @kernel_parallel_0
// CHECK:   %[[BODYP:.+]] = builtin.unrealized_conversion_cast %[[BODY]] {{.*}} to !llvm.ptr
// CHECK:   llvm.call %[[HOOK]](%[[TOTAL]], %[[BODYP]], %[[CTXS]]) : !llvm.ptr, (i64, !llvm.ptr, !llvm.ptr) -> ()
func.func @kernel(%m: memref<?x4x?xf32>, %n: index, %x: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c2 = arith.constant 2 : index
  %f = arith.constant 2.0 : f32
  %scratch = memref.alloca() {fmha.scratch} : memref<4xf32>
  scf.parallel (%b, %h, %t) = (%c0, %c0, %c0) to (%n, %c4, %x) step (%c1, %c1, %c2) {
    memref.store %f, %scratch[%h] : memref<4xf32>
    %v = memref.load %scratch[%h] : memref<4xf32>
    memref.store %v, %m[%b, %h, %t] : memref<?x4x?xf32>
    scf.reduce
  }
  return
}

// -----

// A value the body cannot receive through the context.
func.func @vector_capture(%n: index, %m: memref<?xvector<4xf32>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.load %m[%c0] : memref<?xvector<4xf32>>
  // expected-error @below {{reads a value of type 'vector<4xf32>' from above, which cannot be passed to a parallel body}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %v, %m[%i] : memref<?xvector<4xf32>>
    scf.reduce
  }
  return
}

// -----

// A loop outside a func.func stays as it is (it runs on the calling thread).
// CHECK-NOT: fmha_parallel_for
// CHECK-LABEL: gpu.func @not_a_func
// CHECK: scf.parallel
gpu.module @m {
  gpu.func @not_a_func(%m: memref<?xf32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %f = arith.constant 1.0 : f32
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      memref.store %f, %m[%i] : memref<?xf32>
      scf.reduce
    }
    gpu.return
  }
}
