// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90" -canonicalize -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-lower-to-gpu="target=rocdl chip=gfx942" -canonicalize -cse | FileCheck %s

// fmha.accumulate (gpu-acc-v1): one elementwise kernel over the flattened
// elements, 4 a thread, 256 threads a workgroup (1024 elements), launched
// on flat views; the same on both targets.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @acc(
// CHECK: %[[N:.+]] = memref.dim %arg0, %c0
// CHECK: %[[GRID:.+]] = arith.ceildivsi %[[N]], %c1024
// CHECK: gpu.launch_func @fmha_kernels::@acc_kernel blocks in (%[[GRID]], %c1, %c1) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c0_i32 args(%arg0 : memref<?xbf16>, %arg1 : memref<?xf32>, %[[N]] : index)

// CHECK-LABEL: func.func @acc3(
// CHECK: %[[N3:.+]] = arith.muli %{{.+}}, %c16
// CHECK-DAG: %[[X3:.+]] = memref.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : memref<2x?x8xf32> into memref<?xf32>
// CHECK-DAG: %[[A3:.+]] = memref.collapse_shape %arg1 {{\[\[}}0, 1, 2]] : memref<2x?x8xf32> into memref<?xf32>
// CHECK: gpu.launch_func @fmha_kernels::@acc3_kernel {{.+}} args(%[[X3]] : memref<?xf32>, %[[A3]] : memref<?xf32>, %[[N3]] : index)

// The kernel: element i0 = 4 * (block * 256 + thread); vector loads of x
// (8 bytes of bf16) and acc (16 bytes) when both pointers are aligned and
// the four elements are in range, else element by element up to n.
// CHECK: gpu.func @acc_kernel(%[[GX:[^:]+]]: memref<?xbf16>, %[[GA:[^:]+]]: memref<?xf32>, %[[GN:[^:]+]]: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-DAG: %[[TID:.+]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.+]] = gpu.block_id x
// CHECK: %[[ROW:.+]] = arith.muli %[[BID]], %c256
// CHECK: %[[T:.+]] = arith.addi %[[ROW]], %[[TID]]
// CHECK: %[[I0:.+]] = arith.muli %[[T]], %c4
// CHECK: %[[PX:.+]] = memref.extract_aligned_pointer_as_index %[[GX]]
// CHECK: arith.remsi %[[PX]], %c8
// CHECK: %[[PA:.+]] = memref.extract_aligned_pointer_as_index %[[GA]]
// CHECK: arith.remsi %[[PA]], %c16
// CHECK: %[[END:.+]] = arith.addi %[[I0]], %c4
// CHECK: %[[FITS:.+]] = arith.cmpi sle, %[[END]], %[[GN]]
// CHECK: %[[WHOLE:.+]] = arith.andi %{{.+}}, %[[FITS]]
// CHECK: scf.if %[[WHOLE]] {
// CHECK:   %[[XV:.+]] = vector.load %[[GX]][%[[I0]]] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// CHECK:   %[[XF:.+]] = arith.extf %[[XV]] : vector<4xbf16> to vector<4xf32>
// CHECK:   %[[AV:.+]] = vector.load %[[GA]][%[[I0]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK:   %[[SUM:.+]] = arith.addf %[[AV]], %[[XF]] : vector<4xf32>
// CHECK:   vector.store %[[SUM]], %[[GA]][%[[I0]]] {alignment = 16 : i64}
// CHECK: } else {
// CHECK:   %[[LAST:.+]] = arith.minsi %[[END]], %[[GN]]
// CHECK:   scf.for %[[I:.+]] = %[[I0]] to %[[LAST]] step %c1 {
// CHECK:     memref.load %[[GX]][%[[I]]] : memref<?xbf16>
// CHECK:     memref.load %[[GA]][%[[I]]] : memref<?xf32>
// CHECK:     arith.addf
// CHECK:     memref.store %{{.+}}, %[[GA]][%[[I]]] : memref<?xf32>

// f32 x: no widening, 16-byte alignment for both.
// CHECK: gpu.func @acc3_kernel(%{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: index)
// CHECK-NOT: arith.extf
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK-NOT: arith.extf
// CHECK: gpu.return

func.func @acc(%x: memref<?xbf16>, %acc: memref<?xf32>) {
  fmha.accumulate ins(%x : memref<?xbf16>) outs(%acc : memref<?xf32>)
  return
}

func.func @acc3(%x: memref<2x?x8xf32>, %acc: memref<2x?x8xf32>) {
  fmha.accumulate ins(%x : memref<2x?x8xf32>) outs(%acc : memref<2x?x8xf32>)
  return
}
