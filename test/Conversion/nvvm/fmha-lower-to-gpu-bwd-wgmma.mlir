// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90a mma=wgmma block-m=128 block-n=128" -canonicalize -cse | FileCheck %s

// mma=wgmma on fmha.attention_bwd: the dkdv kernel of warpgroup products.
// Two warpgroups (256 threads) per kv tile of 128 rows; prep and dq keep
// the warp-level kernels with the same block. Workgroup memory, every
// 16-bit operand in the 128-byte swizzle ([cols / 64][rows][64]): K and V
// (128 x 128, 32768 bytes each), two stages of Q and of dO (64 x 128), the
// dS^T tile (128 x 64), two stages of lse/dsum (2 x 64 f32), and 1024 bytes
// to round the base up: 149504 bytes.
// CHECK-LABEL: func.func @bwd(
// CHECK-DAG: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK-DAG: %[[NK:.+]] = arith.ceildivsi %[[SK]], %c128
// CHECK: gpu.launch_func @fmha_kernels::@bwd_prep blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c149504_i32
// CHECK-NEXT: gpu.launch_func @fmha_kernels::@bwd_dkdv blocks in (%[[NK]], %c2, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c149504_i32
// CHECK-NEXT: gpu.launch_func @fmha_kernels::@bwd_dq blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c149504_i32

// CHECK: gpu.func @bwd_dkdv(
// The 1024-aligned base, then the views past it.
// CHECK: %[[ADDR:.+]] = memref.extract_aligned_pointer_as_index
// CHECK: %[[MOD:.+]] = arith.remsi %[[ADDR]], %c1024
// CHECK: %[[UP:.+]] = arith.subi %c1024, %[[MOD]]
// CHECK: %[[PAD:.+]] = arith.remsi %[[UP]], %c1024
// CHECK: memref.view %{{.+}}[%[[PAD]]][] {{.+}} to memref<1x2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: arith.addi %[[PAD]], %c32768
// CHECK: memref.view {{.+}} to memref<1x2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: arith.addi %[[PAD]], %c65536
// CHECK: memref.view {{.+}} to memref<2x2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: arith.addi %[[PAD]], %c98304
// CHECK: memref.view {{.+}} to memref<2x2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: arith.addi %[[PAD]], %c147456
// CHECK: memref.view {{.+}} to memref<2x2x64xf32, #gpu.address_space<workgroup>>
// CHECK: arith.addi %[[PAD]], %c131072
// CHECK: memref.view {{.+}} to memref<128x64xbf16, #gpu.address_space<workgroup>>
// One loop over the steps, carrying dK and dV (64 + 64 f32 a thread) and the
// staged lse/dsum value; each step starts with the copies waited for, made
// visible to the async proxy, and one barrier.
// CHECK: scf.for {{.+}} -> (f32, f32
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// S^T and dP^T: 16 products m64n64k16, A and B K-major; one group, waited
// for.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-16: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// dK and dV: A from registers (P^T, dS^T), B = Q and dO N-major (trans-b 1).
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.+}}, 1, 1, 1;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// dQ after a barrier: A = dS^T read M-major (col), B = K N-major (row),
// N = D / 2 per warpgroup, over the 128 kv rows (8 k-steps).
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: memref.atomic_rmw addf
// CHECK: gpu.return
// CHECK: gpu.func @bwd_dq(
// CHECK-NOT: nvvm.wgmma
// CHECK: gpu.return
func.func @bwd(%q: memref<?x8x?x128xbf16>, %k: memref<?x2x?x128xbf16>, %v: memref<?x2x?x128xbf16>,
               %o: memref<?x8x?x128xbf16>, %lse: memref<?x8x?xf32>, %do: memref<?x8x?x128xbf16>,
               %dq: memref<?x8x?x128xbf16>, %dk: memref<?x2x?x128xbf16>, %dv: memref<?x2x?x128xbf16>) {
  fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : memref<?x8x?x128xbf16>, memref<?x2x?x128xbf16>, memref<?x2x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?xf32>, memref<?x8x?x128xbf16>) outs(%dq, %dk, %dv : memref<?x8x?x128xbf16>, memref<?x2x?x128xbf16>, memref<?x2x?x128xbf16>) {mask = #fmha.mask<"t">}
  return
}
