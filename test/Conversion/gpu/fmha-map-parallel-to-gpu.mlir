// RUN: fmha-opt %s --fmha-map-parallel-to-gpu="thread-elements=2" -canonicalize -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-map-parallel-to-gpu="kernel-name=k block-threads=128 row-threads=16" -canonicalize -cse | FileCheck %s --check-prefix=NAMED

// The element form: a 2-D loop flattened (the last dimension fastest), two
// iterations a thread 256 apart, each behind its range test; the loop's
// bounds and the values it reads from above are the kernel's operands,
// constants are cloned in.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @elements(
// CHECK-SAME: %[[X:[^:]+]]: memref<?x?xf32>, %[[M:[^:]+]]: index, %[[N:[^:]+]]: index)
// CHECK: %[[T0:.+]] = arith.subi %[[M]], %c1
// CHECK: %[[TRIP0:.+]] = arith.ceildivsi %[[T0]], %c2
// CHECK: %[[TOTAL:.+]] = arith.muli %[[TRIP0]], %[[N]]
// CHECK: %[[GRID:.+]] = arith.ceildivsi %[[TOTAL]], %c512
// CHECK: gpu.launch_func @fmha_kernels::@elements_kernel blocks in (%[[GRID]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%[[TRIP0]] : index, %[[N]] : index, %[[X]] : memref<?x?xf32>)
func.func @elements(%x: memref<?x?xf32>, %m: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c1, %c0) to (%m, %n) step (%c2, %c1) {
    memref.store %one, %x[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}

// The row form: 8 rows of 32 threads a workgroup; the row's reads on every
// lane of it (past the last row: row 0), the inner loop's iterations 32
// apart from the lane, a barrier, then the write after the inner loop on
// the row's first lane.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[A:[^:]+]]: memref<?xf32>, %[[B:[^:]+]]: memref<?x64xf32>, %[[R:[^:]+]]: index)
// CHECK: %[[RG:.+]] = arith.ceildivsi %[[R]], %c8
// CHECK: gpu.launch_func @fmha_kernels::@rows_kernel blocks in (%[[RG]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%[[R]] : index, %[[A]] : memref<?xf32>, %[[B]] : memref<?x64xf32>)
// The kernels, in the order of the loops.
// CHECK: gpu.module @fmha_kernels
// CHECK: gpu.func @elements_kernel(%[[GT0:[^:]+]]: index, %[[GN:[^:]+]]: index, %[[GX:[^:]+]]: memref<?x?xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-DAG: %[[TID:.+]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.+]] = gpu.block_id x
// CHECK: %[[COUNT:.+]] = arith.muli %[[GT0]], %[[GN]]
// CHECK: %[[B0:.+]] = arith.muli %[[BID]], %c512
// CHECK: %[[I0:.+]] = arith.addi %[[B0]], %[[TID]]
// CHECK: %[[IN0:.+]] = arith.cmpi ult, %[[I0]], %[[COUNT]]
// CHECK: scf.if %[[IN0]] {
// CHECK:   %[[J:.+]] = arith.remui %[[I0]], %[[GN]]
// CHECK:   %[[Q:.+]] = arith.divui %[[I0]], %[[GN]]
// CHECK:   %[[Q2:.+]] = arith.muli %[[Q]], %c2
// CHECK:   %[[IV0:.+]] = arith.addi %[[Q2]], %c1
// CHECK:   memref.store %{{.+}}, %[[GX]][%[[IV0]], %[[J]]]
// CHECK: %[[I1:.+]] = arith.addi %[[I0]], %c256
// CHECK: arith.cmpi ult, %[[I1]], %[[COUNT]]
// CHECK: gpu.return
// CHECK: gpu.func @rows_kernel(%[[GR:[^:]+]]: index, %[[GA:[^:]+]]: memref<?xf32>, %[[GB:[^:]+]]: memref<?x64xf32>)
// CHECK-DAG: %[[TID:.+]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.+]] = gpu.block_id x
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c32
// CHECK: %[[RB:.+]] = arith.muli %[[BID]], %c8
// CHECK: %[[RT:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[ROW:.+]] = arith.addi %[[RB]], %[[RT]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[ROW]], %[[GR]]
// CHECK: %[[SAFE:.+]] = arith.select %[[IN]], %[[ROW]], %c0
// CHECK: %[[V:.+]] = memref.load %[[GA]][%[[SAFE]]]
// CHECK: scf.if %[[IN]] {
// CHECK:   scf.for %[[C:.+]] = %[[LANE]] to %c64 step %c32 {
// CHECK:     memref.store %[[V]], %[[GB]][%[[SAFE]], %[[C]]]
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[WRITER:.+]] = arith.andi %[[IN]], %[[FIRST]]
// CHECK: scf.if %[[WRITER]] {
// CHECK:   memref.store %{{.+}}, %[[GA]][%[[SAFE]]]
// NAMED: gpu.launch_func @fmha_kernels::@k blocks in (%{{.+}}, %c1, %c1) threads in (%c128, %c1, %c1)
// NAMED: gpu.launch_func @fmha_kernels::@k_0 blocks in (%{{.+}}, %c1, %c1) threads in (%c128, %c1, %c1)
// NAMED: gpu.func @k(
// NAMED: gpu.func @k_0(
// NAMED: arith.remui %{{.+}}, %c16
// NAMED: arith.muli %{{.+}}, %c8
// NAMED: scf.for %{{.+}} = %{{.+}} to %c64 step %c16
func.func @rows(%a: memref<?xf32>, %b: memref<?x64xf32>, %rows: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%r) = (%c0) to (%rows) step (%c1) {
    %v = memref.load %a[%r] : memref<?xf32>
    scf.parallel (%c) = (%c0) to (%c64) step (%c1) {
      memref.store %v, %b[%r, %c] : memref<?x64xf32>
      scf.reduce
    }
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%r] : memref<?xf32>
    scf.reduce
  }
  return
}
