// RUN: fmha-opt %s --fmha-map-parallel-to-gpu="workgroup=1 block-threads=96 warp-size=32" -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-map-parallel-to-gpu="workgroup=1 block-threads=96" -cse | FileCheck %s --check-prefix=FIXED
// RUN: not fmha-opt %s --fmha-map-parallel-to-gpu="workgroup=1 warp-size=512" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not fmha-opt %s --fmha-map-parallel-to-gpu="workgroup=1 warp-size=-1" 2>&1 | FileCheck %s --check-prefix=NEG

// The workgroup form with warp-size: each loop's workgroup is the most
// warps its register layouts name (the staged backward's kernels, each the
// warps of its own rows), times warp-size; a loop with no layout keeps
// block-threads. Without warp-size every loop takes block-threads.
#w4 = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#w8 = #fmha.layout<128x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0], [64, 0]]>

// CHECK-LABEL: func.func @kernels
// CHECK: gpu.launch_func @fmha_kernels::@kernels_kernel blocks in ({{.+}}) threads in (%c128, %c1, %c1)
// CHECK: gpu.launch_func @fmha_kernels::@kernels_kernel_0 blocks in ({{.+}}) threads in (%c256, %c1, %c1)
// CHECK: gpu.launch_func @fmha_kernels::@kernels_kernel_1 blocks in ({{.+}}) threads in (%c96, %c1, %c1)
// CHECK: gpu.func @kernels_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.func @kernels_kernel_0({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: gpu.func @kernels_kernel_1({{.*}}) kernel attributes {known_block_size = array<i32: 96, 1, 1>}
// FIXED-COUNT-3: known_block_size = array<i32: 96, 1, 1>
// MANY: error: 'scf.parallel' op has tiles in layouts of 4 warps of 512 threads: more than 1024 threads a workgroup
// NEG: error: fmha-map-parallel-to-gpu needs warp-size >= 0, got -1
func.func @kernels(%x: memref<?x64x64xf32>, %y: memref<?x128x64xf32>, %z: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f0 = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %t = vector.transfer_read %x[%i, %c0, %c0], %f0 {in_bounds = [true, true]} : memref<?x64x64xf32>, vector<64x64xf32>
    %a = fmha.to_layout %t to layout(#w4) : vector<64x64xf32>
    vector.transfer_write %a, %x[%i, %c0, %c0] {in_bounds = [true, true]} : vector<64x64xf32>, memref<?x64x64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %t = vector.transfer_read %y[%i, %c0, %c0], %f0 {in_bounds = [true, true]} : memref<?x128x64xf32>, vector<128x64xf32>
    %a = fmha.to_layout %t to layout(#w8) : vector<128x64xf32>
    vector.transfer_write %a, %y[%i, %c0, %c0] {in_bounds = [true, true]} : vector<128x64xf32>, memref<?x128x64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f0, %z[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
