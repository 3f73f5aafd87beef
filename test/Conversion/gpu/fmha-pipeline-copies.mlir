// RUN: fmha-opt %s --fmha-pipeline-copies -cse -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-pipeline-copies=stages=1 -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: not fmha-opt %s --fmha-pipeline-copies=stages=3 -split-input-file 2>&1 | FileCheck %s --check-prefix=STAGES

// stages=1 leaves the loops as they are; another count is an error.
// ONE-LABEL: gpu.func @double_buffer
// ONE-SAME: workgroup(%{{.+}} : memref<16x24xf16, 3>, %{{.+}} : memref<16x24xf16, 3>)
// ONE: scf.for
// ONE-NEXT: arith.muli
// ONE-NEXT: gpu.barrier
// ONE-NEXT: fmha.copy_async
// STAGES: fmha-pipeline-copies: stages must be 1 or 2, got 3

#copy = #fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>
#bt = #fmha.layout<16x16, register = [[0, 1], [0, 8], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = []>
#b = #fmha.layout<16x16, register = [[1, 0], [8, 0], [0, 8]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = []>

// The form of --fmha-stage-kv: the copies of k and v (their rows from the
// induction variable through a multiplication in the body) between a
// barrier and a wait + barrier. Double-buffered: both buffers get two
// stages, the first iteration's copies (their row recomputed for the lower
// bound) go into stage 0 before the loop, after a barrier and when the loop
// runs at all; each iteration waits for its own stage, passes one barrier,
// starts the next iteration's copies (row recomputed for %i + step) into
// the other stage when there is a next iteration, and its reads take its
// stage. The body's multiplication, now unused, is gone.
// CHECK-LABEL: gpu.func @double_buffer
// CHECK-SAME: (%[[K:[^:]+]]: memref<?x16xf16>, %[[V:[^:]+]]: memref<?x16xf16>, %{{[^:]+}}: memref<16x16xf32>, %[[LB:[^:]+]]: index, %[[UB:[^:]+]]: index, %[[STEP:[^:]+]]: index)
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<2x16x24xf16, 3>, %[[VB:.+]] : memref<2x16x24xf16, 3>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK: gpu.barrier
// CHECK-NEXT: %[[RUNS:.+]] = arith.cmpi slt, %[[LB]], %[[UB]] : index
// CHECK-NEXT: scf.if %[[RUNS]] {
// CHECK-NEXT: %[[R0:.+]] = arith.muli %[[LB]], %[[C16]] : index
// CHECK-NEXT: fmha.copy_async %[[K]][%[[R0]], %[[C0]]] to %[[KB]][%[[C0]], %[[C0]], %[[C0]]]
// CHECK-NEXT: fmha.copy_async %[[V]][%[[R0]], %[[C0]]] to %[[VB]][%[[C0]], %[[C0]], %[[C0]]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[I:[^ ]+]] = %[[LB]] to %[[UB]] step %[[STEP]]
// CHECK-NEXT: %[[D:.+]] = arith.subi %[[I]], %[[LB]] : index
// CHECK-NEXT: %[[N:.+]] = arith.divui %[[D]], %[[STEP]] : index
// CHECK-NEXT: %[[SLOT:.+]] = arith.remui %[[N]], %[[C2]] : index
// CHECK-NEXT: %[[OTHER:.+]] = arith.subi %[[C1]], %[[SLOT]] : index
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[I]], %[[STEP]] : index
// CHECK-NEXT: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %[[UB]] : index
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK-NEXT: %[[R1:.+]] = arith.muli %[[NEXT]], %[[C16]] : index
// CHECK-NEXT: fmha.copy_async %[[K]][%[[R1]], %[[C0]]] to %[[KB]][%[[OTHER]], %[[C0]], %[[C0]]]
// CHECK-NEXT: fmha.copy_async %[[V]][%[[R1]], %[[C0]]] to %[[VB]][%[[OTHER]], %[[C0]], %[[C0]]]
// CHECK-NEXT: }
// CHECK-NOT: gpu.barrier
// CHECK-NOT: fmha.copy_async
// CHECK: vector.transfer_read %[[KB]][%[[SLOT]], %[[C0]], %[[C0]]]
// CHECK: vector.transfer_read %[[VB]][%[[SLOT]], %[[C0]], %[[C0]]]
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @double_buffer(%k: memref<?x16xf16>, %v: memref<?x16xf16>, %o: memref<16x16xf32>, %lb: index, %ub: index, %step: index)
      workgroup(%kbuf : memref<16x24xf16, 3>, %vbuf : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %pad = arith.constant 0.0 : f16
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %p = arith.constant dense<1.0> : vector<16x16xf16>
    %r = scf.for %i = %lb to %ub step %step iter_args(%acc = %zero) -> (vector<16x16xf32>) {
      %row = arith.muli %i, %c16 : index
      gpu.barrier
      fmha.copy_async %k[%row, %c0] to %kbuf[%c0, %c0] layout(#copy) : memref<?x16xf16> to memref<16x24xf16, 3>
      fmha.copy_async %v[%row, %c0] to %vbuf[%c0, %c0] layout(#copy) : memref<?x16xf16> to memref<16x24xf16, 3>
      fmha.copy_wait pending(0)
      gpu.barrier
      %ks = vector.transfer_read %kbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      %kb = fmha.to_layout %ks to layout(#bt) : vector<16x16xf16>
      %vs = vector.transfer_read %vbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      %vb = fmha.to_layout %vs to layout(#b) : vector<16x16xf16>
      %st = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %p, %kb, %acc : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      %ov = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %p, %vb, %st : vector<16x16xf16>, vector<16x16xf16> into vector<16x16xf32>
      scf.yield %ov : vector<16x16xf32>
    }
    vector.transfer_write %r, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    gpu.return
  }
}

// -----

#copy = #fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>

// Left as it is: the copy's row comes from a value the loop carries (the
// next iteration's cannot be computed before this one ends), or a buffer
// is read outside the loop.
// CHECK-LABEL: gpu.func @carried
// CHECK-SAME: workgroup(%{{.+}} : memref<16x24xf16, 3>)
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: fmha.copy_async
// CHECK-NEXT: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-LABEL: gpu.func @read_outside
// CHECK-SAME: workgroup(%{{.+}} : memref<16x24xf16, 3>)
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: fmha.copy_async
// CHECK-NEXT: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
gpu.module @kernels {
  gpu.func @carried(%k: memref<?x16xf16>, %o: memref<16x16xf16>, %n: index)
      workgroup(%kbuf : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %pad = arith.constant 0.0 : f16
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%row = %c0) -> (index) {
      gpu.barrier
      fmha.copy_async %k[%row, %c0] to %kbuf[%c0, %c0] layout(#copy) : memref<?x16xf16> to memref<16x24xf16, 3>
      fmha.copy_wait pending(0)
      gpu.barrier
      %ks = vector.transfer_read %kbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      vector.transfer_write %ks, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf16>, memref<16x16xf16>
      %next = arith.addi %row, %c16 : index
      scf.yield %next : index
    }
    gpu.return
  }
  gpu.func @read_outside(%k: memref<?x16xf16>, %o: memref<16x16xf16>, %n: index)
      workgroup(%kbuf : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    scf.for %i = %c0 to %n step %c1 {
      gpu.barrier
      fmha.copy_async %k[%i, %c0] to %kbuf[%c0, %c0] layout(#copy) : memref<?x16xf16> to memref<16x24xf16, 3>
      fmha.copy_wait pending(0)
      gpu.barrier
    }
    %ks = vector.transfer_read %kbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
    vector.transfer_write %ks, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf16>, memref<16x16xf16>
    gpu.return
  }
}

// -----

#copy = #fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>

// A paged cache's form: the copy's page is a load of the block table, an
// argument the kernel never writes. The next iteration's load is recomputed
// with its copy (in the branch that runs only when there is a next
// iteration, so no entry past the loop's is read). A load of an argument
// the kernel writes (%w) is not moved: that loop is left as it is.
// CHECK-LABEL: gpu.func @table_load
// CHECK-SAME: (%[[K:[^:]+]]: memref<?x16x16xf16>, %[[T:[^:]+]]: memref<?xi32>
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<2x16x24xf16, 3>)
// CHECK: scf.if
// CHECK-NEXT: %[[E0:.+]] = memref.load %[[T]][%{{.+}}] : memref<?xi32>
// CHECK-NEXT: %[[P0:.+]] = arith.index_cast %[[E0]]
// CHECK-NEXT: fmha.copy_async %[[K]][%[[P0]], %{{.+}}, %{{.+}}] to %[[KB]]
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK: %[[NEXT:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK-NEXT: %[[E1:.+]] = memref.load %[[T]][%[[NEXT]]] : memref<?xi32>
// CHECK-NEXT: %[[P1:.+]] = arith.index_cast %[[E1]]
// CHECK-NEXT: fmha.copy_async %[[K]][%[[P1]], %{{.+}}, %{{.+}}] to %[[KB]]
// CHECK-LABEL: gpu.func @written_table
// CHECK-SAME: workgroup(%{{.+}} : memref<16x24xf16, 3>)
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: fmha.copy_async
// CHECK-NEXT: fmha.copy_wait pending(0)
gpu.module @kernels {
  gpu.func @table_load(%k: memref<?x16x16xf16>, %t: memref<?xi32>, %o: memref<16x16xf16>, %n: index)
      workgroup(%kbuf : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : f16
    scf.for %i = %c0 to %n step %c1 {
      %e = memref.load %t[%i] : memref<?xi32>
      %page = arith.index_cast %e : i32 to index
      gpu.barrier
      fmha.copy_async %k[%page, %c0, %c0] to %kbuf[%c0, %c0] layout(#copy) : memref<?x16x16xf16> to memref<16x24xf16, 3>
      fmha.copy_wait pending(0)
      gpu.barrier
      %ks = vector.transfer_read %kbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      vector.transfer_write %ks, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf16>, memref<16x16xf16>
    }
    gpu.return
  }
  gpu.func @written_table(%k: memref<?x16x16xf16>, %w: memref<?xi32>, %o: memref<16x16xf16>, %n: index)
      workgroup(%kbuf : memref<16x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : i32
    %pad = arith.constant 0.0 : f16
    scf.for %i = %c0 to %n step %c1 {
      %e = memref.load %w[%i] : memref<?xi32>
      %page = arith.index_cast %e : i32 to index
      gpu.barrier
      fmha.copy_async %k[%page, %c0, %c0] to %kbuf[%c0, %c0] layout(#copy) : memref<?x16x16xf16> to memref<16x24xf16, 3>
      fmha.copy_wait pending(0)
      gpu.barrier
      %ks = vector.transfer_read %kbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x24xf16, 3>, vector<16x16xf16>
      vector.transfer_write %ks, %o[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf16>, memref<16x16xf16>
      memref.store %c7, %w[%i] : memref<?xi32>
    }
    gpu.return
  }
}

// -----

#copy = #fmha.layout<16x16, register = [[0, 1], [0, 2], [0, 4]], lane = [[0, 8], [1, 0], [2, 0], [4, 0], [8, 0]], warp = []>

// A tile over two pages (fmha-stage-kv's form of a paged kv tile spanning
// pages): two copies fill one buffer, each into its rows. The buffer gets
// two stages once; both pages' table loads are recomputed with their copies
// for the next iteration.
// CHECK-LABEL: gpu.func @pages
// CHECK-SAME: (%[[K:[^:]+]]: memref<?x16x16xf16>, %[[T:[^:]+]]: memref<?xi32>
// CHECK-SAME: workgroup(%[[KB:.+]] : memref<2x32x24xf16, 3>)
// CHECK: scf.if
// CHECK: fmha.copy_async %[[K]][%{{.+}}] to %[[KB]][%{{.+}}, %{{.+}}, %{{.+}}]
// CHECK-NEXT: fmha.copy_async %[[K]][%{{.+}}] to %[[KB]][%{{.+}}, %[[SIXTEEN:.+]], %{{.+}}]
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK: %[[OTHER:[^ ]+]] = arith.subi %c1
// CHECK: %[[NEXT:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK: fmha.copy_wait pending(0)
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[NEXT]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK: memref.load %[[T]]
// CHECK: memref.load %[[T]]
// CHECK: fmha.copy_async %[[K]][%{{.+}}] to %[[KB]][%[[OTHER]], %{{.+}}, %{{.+}}]
// CHECK-NEXT: fmha.copy_async %[[K]][%{{.+}}] to %[[KB]][%[[OTHER]], %[[SIXTEEN]], %{{.+}}]
// CHECK-NEXT: }
// CHECK: vector.transfer_read %[[KB]][%{{.+}}, %{{.+}}, %{{.+}}]{{.*}} : memref<2x32x24xf16, 3>, vector<32x16xf16>
gpu.module @kernels {
  gpu.func @pages(%k: memref<?x16x16xf16>, %t: memref<?xi32>, %o: memref<32x16xf16>, %n: index)
      workgroup(%kbuf : memref<32x24xf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %pad = arith.constant 0.0 : f16
    scf.for %i = %c0 to %n step %c1 {
      %j0 = arith.muli %i, %c2 : index
      %j1 = arith.addi %j0, %c1 : index
      %e0 = memref.load %t[%j0] : memref<?xi32>
      %p0 = arith.index_cast %e0 : i32 to index
      %e1 = memref.load %t[%j1] : memref<?xi32>
      %p1 = arith.index_cast %e1 : i32 to index
      gpu.barrier
      fmha.copy_async %k[%p0, %c0, %c0] to %kbuf[%c0, %c0] layout(#copy) : memref<?x16x16xf16> to memref<32x24xf16, 3>
      fmha.copy_async %k[%p1, %c0, %c0] to %kbuf[%c16, %c0] layout(#copy) : memref<?x16x16xf16> to memref<32x24xf16, 3>
      fmha.copy_wait pending(0)
      gpu.barrier
      %ks = vector.transfer_read %kbuf[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x24xf16, 3>, vector<32x16xf16>
      vector.transfer_write %ks, %o[%c0, %c0] {in_bounds = [true, true]} : vector<32x16xf16>, memref<32x16xf16>
    }
    gpu.return
  }
}
