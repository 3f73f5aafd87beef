// RUN: fmha-opt %s --fmha-stage-q="target=nvvm chip=sm_90a swizzle=128" --fmha-stage-transposed-a -split-input-file | FileCheck %s --check-prefix=STAGE
// RUN: fmha-opt %s --fmha-stage-q="target=nvvm chip=sm_90a swizzle=128" --fmha-stage-transposed-a --fmha-distribute-tiles="target=nvvm chip=sm_90a" -canonicalize -cse -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-stage-transposed-a -split-input-file | FileCheck %s --check-prefix=NONE

// The backward's atomic dQ += dS K in one warpgroup (64 x 64 tiles, D 64):
// dS^T, a C tile with the keys as rows, is read transposed as A; K, read
// before the loop as B, goes into a buffer in the 128-byte swizzle
// (fmha-stage-q), which makes the product a warpgroup product. dS^T is
// then written (narrowed, in its own layout) into a swizzled buffer of its
// own between two barriers and read back by the product.
// STAGE-LABEL: gpu.func @atomic_dq
// STAGE-SAME: workgroup(%[[KB:.+]] : memref<64x64xbf16, 3> {fmha.swizzle = 128 : i64}, %[[DB:.+]] : memref<64x64xbf16, 3> {fmha.swizzle = 128 : i64})
// STAGE: scf.for
// STAGE:   %[[DS:.+]] = fmha.to_layout %{{.+}} to layout(#[[$C:.+]]) : vector<64x64xf32>
// STAGE:   %[[H:.+]] = arith.truncf %[[DS]] : vector<64x64xf32> to vector<64x64xbf16>
// STAGE:   gpu.barrier
// STAGE-NEXT: vector.transfer_write %[[H]], %[[DB]][%{{.+}}, %{{.+}}] {in_bounds = [true, true]}
// STAGE-NEXT: gpu.barrier
// STAGE:   %[[R:.+]] = vector.transfer_read %[[DB]]
// STAGE-NEXT: %[[RA:.+]] = fmha.to_layout %[[R]] to layout(#[[$AT:.+]]) : vector<64x64xbf16>
// STAGE: vector.contract {{.+}} %[[RA]], %{{.+}}, %{{.+}} : vector<64x64xbf16>, vector<64x64xbf16> into vector<64x64xf32>
// STAGE-NOT: fmha.to_layout %[[DS]]

// Distributed: each pair of dS^T's registers one 32-bit store at its
// swizzled place, the proxy fence, then four k steps of m64n64k16 with A
// M-major (<col>) and B N-major (<row>, as V in O += P V) by descriptor;
// the result added register by register.
// CHECK-LABEL: gpu.func @atomic_dq
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-COUNT-16: vector.transfer_write %{{.+}} {in_bounds = [true, true]} : vector<1x2xbf16>, memref<64x64xbf16, 3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async %{{.+}}, %{{.+}}, %{{.+}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async %{{.+}}, %{{.+}}, %{{.+}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-32: memref.atomic_rmw addf
// CHECK-NOT: memref.atomic_rmw

// Without a swizzled B (no warpgroup product) nothing changes.
// NONE-LABEL: gpu.func @atomic_dq
// NONE-NOT: gpu.barrier
// NONE-NOT: workgroup(
#c = #fmha.layout<64x64, register = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warp = [[16, 0], [32, 0]]>
#at = #fmha.layout<64x64, register = [[1, 0], [0, 8], [8, 0], [16, 0], [32, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 16], [0, 32]]>
#b = #fmha.layout<64x64, register = [[1, 0], [8, 0], [0, 8], [0, 16], [0, 32], [16, 0], [32, 0]], lane = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warp = [[0, 0], [0, 0]]>
gpu.module @kernels {
  gpu.func @atomic_dq(%k: memref<64x64xbf16>, %ds: memref<?x64x64xf32>, %acc: memref<64x64xf32, strided<[64, 1], offset: ?>>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %pad = arith.constant 0.0 : bf16
    %padf = arith.constant 0.0 : f32
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %kt = vector.transfer_read %k[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x64xbf16>, vector<64x64xbf16>
    %kb = fmha.to_layout %kt to layout(#b) : vector<64x64xbf16>
    scf.for %i = %c0 to %n step %c1 {
      %dst = vector.transfer_read %ds[%i, %c0, %c0], %padf {in_bounds = [true, true]} : memref<?x64x64xf32>, vector<64x64xf32>
      %dsc = fmha.to_layout %dst to layout(#c) : vector<64x64xf32>
      %dsa = fmha.to_layout %dsc to layout(#at) : vector<64x64xf32>
      %h = arith.truncf %dsa : vector<64x64xf32> to vector<64x64xbf16>
      %p = vector.contract {indexing_maps = [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %h, %kb, %zero : vector<64x64xbf16>, vector<64x64xbf16> into vector<64x64xf32>
      %pc = fmha.to_layout %p to layout(#c) : vector<64x64xf32>
      fmha.atomic_add %pc, %acc : vector<64x64xf32>, memref<64x64xf32, strided<[64, 1], offset: ?>>
    }
    gpu.return
  }
}
