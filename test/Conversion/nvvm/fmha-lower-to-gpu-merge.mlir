// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90" -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,NVVM
// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942" -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,ROCDL

// fmha.merge (gpu-merge-v1): one elementwise kernel over the B*H*S rows,
// 8 rows of 32 lanes per 256-thread workgroup, launched on flat views. Here
// the merge is in place (o = o1, lse = lse1), as the ring driver runs it.
// CHECK: module attributes {gpu.container_module}
// CHECK: func.func @merge(
// CHECK-DAG: %[[B:.+]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[S:.+]] = memref.dim %arg0, %c2
// CHECK-DAG: %[[BH:.+]] = arith.muli %[[B]], %c4
// CHECK-DAG: %[[ROWS:.+]] = arith.muli %[[BH]], %[[S]]
// CHECK-DAG: %[[GRID:.+]] = arith.ceildivsi %[[ROWS]], %c8
// CHECK-DAG: %[[O1:.+]] = memref.collapse_shape %arg0 {{\[\[}}0, 1, 2, 3]] : memref<?x4x?x64xbf16> into memref<?xbf16>
// CHECK-DAG: %[[L1:.+]] = memref.collapse_shape %arg1 {{\[\[}}0, 1, 2]] : memref<?x4x?xf32> into memref<?xf32>
// CHECK: gpu.launch_func @fmha_kernels::@merge_kernel blocks in (%[[GRID]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%[[O1]] : memref<?xbf16>, %[[L1]] : memref<?xf32>, %{{.+}} : memref<?xbf16>, %{{.+}} : memref<?xf32>, %[[O1]] : memref<?xbf16>, %[[L1]] : memref<?xf32>, %[[ROWS]] : index)

// CHECK: func.func @merge_f32(
// CHECK: %[[CAST:.+]] = memref.cast %{{.+}} : memref<1200xf32> to memref<?xf32>
// CHECK: gpu.launch_func @fmha_kernels::@merge_f32_kernel blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%[[CAST]] : memref<?xf32>, {{.+}}, %c30 : index)

// The kernel: the row and lane from the thread and block ids; both lse read
// (row 0 for threads past the end) before anything is written; weights by
// exp2 of the target (ex2.approx on nvvm; math.exp2, then v_exp_f32, on rocdl), an empty
// partial (lse = -inf) selected away, never multiplied in.
// CHECK: gpu.func @merge_kernel(%[[GO1:[^:]+]]: memref<?xbf16>, %[[GL1:[^:]+]]: memref<?xf32>, %[[GO2:[^:]+]]: memref<?xbf16>, %[[GL2:[^:]+]]: memref<?xf32>, %[[GO:[^:]+]]: memref<?xbf16>, %[[GL:[^:]+]]: memref<?xf32>, %[[GROWS:[^:]+]]: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[TID:.+]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.+]] = gpu.block_id x
// CHECK: %[[LANE:.+]] = arith.remsi %[[TID]], %c32
// CHECK: %[[ROW:.+]] = arith.addi
// CHECK: %[[IN:.+]] = arith.cmpi slt, %[[ROW]], %[[GROWS]]
// CHECK: %[[SAFE:.+]] = arith.select %[[IN]], %[[ROW]], %c0
// CHECK: %[[X1:.+]] = memref.load %[[GL1]][%[[SAFE]]]
// CHECK: %[[X2:.+]] = memref.load %[[GL2]][%[[SAFE]]]
// CHECK: %[[E1:.+]] = arith.cmpf oeq, %[[X1]], %[[NEGINF]]
// CHECK: %[[E2:.+]] = arith.cmpf oeq, %[[X2]], %[[NEGINF]]
// CHECK: %[[BOTH:.+]] = arith.andi %[[E1]], %[[E2]]
// CHECK: arith.maximumf %[[X1]], %[[X2]]
// NVVM: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// ROCDL: math.exp2
// CHECK: %[[LSE:.+]] = arith.select %[[BOTH]], %[[NEGINF]], %{{.+}} : f32
// Columns lane, lane + 32, ... of the row, in f32, rounded to bf16.
// CHECK: scf.if %[[IN]] {
// CHECK:   scf.for %[[C:.+]] = %[[LANE]] to %c64 step %c32 {
// CHECK:     memref.load %[[GO1]]
// CHECK:     arith.extf %{{.+}} : bf16 to f32
// CHECK:     arith.select %[[E1]], %cst{{.*}}, %{{.+}} : f32
// CHECK:     memref.load %[[GO2]]
// CHECK:     arith.select %[[E2]], %cst{{.*}}, %{{.+}} : f32
// CHECK:     arith.truncf %{{.+}} : f32 to bf16
// CHECK:     memref.store %{{.+}}, %[[GO]]
// Then the barrier, and lane 0 of each row writes its lse.
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[WRITE:.+]] = arith.andi %[[IN]], %[[FIRST]]
// CHECK: scf.if %[[WRITE]] {
// CHECK:   memref.store %[[LSE]], %[[GL]][%[[ROW]]]
func.func @merge(%o1: memref<?x4x?x64xbf16>, %l1: memref<?x4x?xf32>, %o2: memref<?x4x?x64xbf16>, %l2: memref<?x4x?xf32>) {
  fmha.merge ins(%o1, %l1, %o2, %l2 : memref<?x4x?x64xbf16>, memref<?x4x?xf32>, memref<?x4x?x64xbf16>, memref<?x4x?xf32>) outs(%o1, %l1 : memref<?x4x?x64xbf16>, memref<?x4x?xf32>)
  return
}

// f32 partials need no conversion; Dv = 40 leaves lanes 8..31 one column.
// Static shapes: flat views cast to dynamic size, 30 rows in 4 workgroups.
// CHECK: gpu.func @merge_f32_kernel(
// CHECK: scf.for %{{.+}} = %{{.+}} to %c40 step %c32 {
// CHECK-NOT: arith.extf
// CHECK: gpu.barrier
func.func @merge_f32(%o1: memref<2x3x5x40xf32>, %l1: memref<2x3x5xf32>, %o2: memref<2x3x5x40xf32>, %l2: memref<2x3x5xf32>, %o: memref<2x3x5x40xf32>, %l: memref<2x3x5xf32>) {
  fmha.merge ins(%o1, %l1, %o2, %l2 : memref<2x3x5x40xf32>, memref<2x3x5xf32>, memref<2x3x5x40xf32>, memref<2x3x5xf32>) outs(%o, %l : memref<2x3x5x40xf32>, memref<2x3x5xf32>)
  return
}
