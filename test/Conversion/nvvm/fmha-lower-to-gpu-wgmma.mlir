// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90a mma=wgmma block-m=128 block-n=64" -canonicalize -cse | FileCheck %s

// mma=wgmma: two warpgroups (8 warps) per workgroup of 128 query rows; Q, K
// and V live in workgroup memory in Hopper's 128-byte swizzle
// ([cols / 64][rows][64], the 16-byte chunk j of row r at chunk j ^ r % 8):
// K and V stages 3 x 64 x 128 (98304 bytes), Q 128 x 128 (32768), and 1024
// bytes to round the base up to a 1024-aligned address: 132096 bytes. P
// stays in registers.
// CHECK-LABEL: func.func @attention(
// CHECK: gpu.launch_func @fmha_kernels::@attention_kernel blocks in (%{{.+}}, %c8, %{{.+}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c132096_i32

// CHECK: gpu.func @attention_kernel(%[[AQ:[^:]+]]: memref<?x8x?x128xbf16, strided<[?, ?, 128, 1]>>, %[[AK:[^:]+]]: memref<?x2x?x128xbf16, strided<[?, ?, 128, 1]>>, %[[AV:[^:]+]]: memref<?x2x?x128xbf16, strided<[?, ?, 128, 1]>>, {{.+}} kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[GQ:.+]] = memref.reinterpret_cast %[[AQ]] to offset: [0]
// CHECK: %[[GK:.+]] = memref.reinterpret_cast %[[AK]] to offset: [0]
// CHECK: %[[GV:.+]] = memref.reinterpret_cast %[[AV]] to offset: [0]
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[ADDR:.+]] = memref.extract_aligned_pointer_as_index %[[SMEM]]
// CHECK: %[[MOD:.+]] = arith.remsi %[[ADDR]], %c1024
// CHECK: %[[UP:.+]] = arith.subi %c1024, %[[MOD]]
// CHECK: %[[PAD:.+]] = arith.remsi %[[UP]], %c1024
// The descriptors' base: the aligned address.
// CHECK: %[[BASE:.+]] = arith.addi %[[ADDR]], %[[PAD]]
// CHECK: arith.index_cast %[[BASE]] : index to i64
// CHECK: %[[KB:.+]] = memref.view %[[SMEM]][%[[PAD]]][] {{.+}} to memref<3x2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VOFF:.+]] = arith.addi %[[PAD]], %c49152
// CHECK: %[[VB:.+]] = memref.view %[[SMEM]][%[[VOFF]]][] {{.+}} to memref<3x2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[QOFF:.+]] = arith.addi %[[PAD]], %c98304
// CHECK: %[[QB:.+]] = memref.view %[[SMEM]][%[[QOFF]]][] {{.+}} to memref<1x2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.view
// Eight threads copy one row's 128 bytes: row c / 16, chunk c % 16 of the
// row, stored in block chunk / 8 at chunk (chunk % 8) ^ (row % 8).
// CHECK: %[[C:.+]] = arith.remsi %{{.+}}, %c2048
// CHECK: %[[ROW:.+]] = arith.divsi %[[C]], %c16
// CHECK: %[[CHUNK:.+]] = arith.remsi %[[C]], %c16
// CHECK: %[[J:.+]] = arith.remsi %[[CHUNK]], %c8
// CHECK: %[[R8:.+]] = arith.remsi %[[ROW]], %c8
// CHECK: %[[X:.+]] = arith.xori %[[J]], %[[R8]]
// CHECK: %[[BLK:.+]] = arith.divsi %[[CHUNK]], %c8
// CHECK: %[[COL:.+]] = arith.muli %[[X]], %c8
// The Q tile, by asynchronous copies, then made visible to the async proxy.
// CHECK: nvgpu.device_async_copy %[[GQ]][%{{.+}}], %[[QB]][%c0, %[[BLK]], %[[ROW]], %[[COL]]], 8 {bypassL1}
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// The sink loop, only when it has a tile. Its first tile is peeled: its
// copies into stage 0, then its step with no product in flight before it.
// CHECK: scf.if
// CHECK:   nvgpu.device_async_copy %[[GK]][%{{.+}}], %[[KB]][%c0, %{{.+}}, %{{.+}}, %{{.+}}], 8 {bypassL1}
// CHECK:   nvgpu.device_async_copy %[[GV]][%{{.+}}], %[[VB]][%c0, %{{.+}}, %{{.+}}, %{{.+}}], 8 {bypassL1}
// A step begins: the tile has landed, is visible to the async proxy and to
// every warp (one barrier a tile), and the next tile's copies go to the
// stage after it.
// CHECK:   %[[NONE:.+]] = nvgpu.device_async_create_group{{ *$}}
// CHECK-NEXT:   nvgpu.device_async_wait %[[NONE]] {numGroups = 0 : i32}
// CHECK-NEXT:   nvvm.fence.proxy
// CHECK-NEXT:   gpu.barrier
// CHECK:   nvgpu.device_async_copy %[[GK]][%{{.+}}], %[[KB]][%c1,
// S = Q K^T: 8 k-steps of m64n64k16, K-major B, the first without D. The
// descriptors: 128-byte swizzle (bit 62), 8-row atoms 1024 bytes apart
// (64 << 32), leading offset unused (1 << 16).
// CHECK:   nvvm.wgmma.fence.aligned
// CHECK:   arith.ori %{{.+}}, %c4611686293305360384_i64
// CHECK:   nvvm.wgmma.mma_async %{{.+}}, %{{.+}}, %{{.+}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7:   nvvm.wgmma.mma_async %{{.+}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK:   nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:   nvvm.wgmma.wait.group.sync.aligned 0
// The accumulators pass through an empty asm each after the wait, so that
// LLVM cannot read them before it.
// CHECK-COUNT-32: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// The mask-derived element mask and the online softmax of the mma.sync kernel.
// CHECK:   scf.if
// CHECK:   gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32
// CHECK:   gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32
// P = softmax(S) packed from the S registers into A fragments (pairs of
// adjacent keys), no workgroup memory: 4 k-steps x 4 registers carried by
// the loop with m, l (2 + 2) and O (64).
// CHECK-NOT:   vector.store
// CHECK:   vector.from_elements %{{.+}}, %{{.+}} : vector<2xbf16>
// CHECK:   scf.for %{{.+}} = %c1 to %{{.+}} step %c1 iter_args({{.+}}) -> (f32, {{.+}}, vector<2xbf16>)
// Tile t: its copies landed, one barrier, tile t + 1's copies to stage
// (t + 1 - lb) % 3, S(t) issued and committed...
// CHECK:     nvgpu.device_async_wait %{{.+}} {numGroups = 0 : i32}
// CHECK-NEXT:     nvvm.fence.proxy
// CHECK-NEXT:     gpu.barrier
// CHECK:     arith.remsi %{{.+}}, %c3
// CHECK:     nvgpu.device_async_copy %[[GK]]
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:     nvvm.wgmma.mma_async
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// ...then O += P(t-1) V(t-1): 4 k-steps of the register-A wgmma
// m64n128k16 (one instruction, upstream's lowering mechanism:
// llvm.inline_asm), D tied to the accumulators, V N-major (imm-trans-b 1),
// committed as a second group; the wait lets it run on. V's descriptor:
// 64-column blocks 64 x 128 bytes apart (512 << 16), 8-key atoms 1024
// bytes apart.
// CHECK-NOT:     nvvm.wgmma.wait
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK:     arith.ori %{{.+}}, %c4611686293338849280_i64
// CHECK-COUNT-4:     llvm.inline_asm has_side_effects asm_dialect = att "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, {{.+}}, $63}, {$64, $65, $66, $67}, $68, $69, 1, 1, 1;", "=f,{{.+}},=f,r,r,r,r,l,b,0,1,{{.+}},63"
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:     nvvm.wgmma.wait.group.sync.aligned 1
// softmax(t) runs while P V does; then the wait for P V, and O is rescaled.
// CHECK-NOT:     gpu.barrier
// CHECK:     llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-NOT:     gpu.barrier
// CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-64:     llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// CHECK:     arith.mulf
// CHECK-NOT:     gpu.barrier
// CHECK:     scf.yield
// CHECK:   } {fmha.kv_loop = "sink"}
// The last tile's P V; then the prefetch past the end drains.
// CHECK:   nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:   llvm.inline_asm has_side_effects asm_dialect = att "wgmma.mma_async
// CHECK:   nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:   nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:   nvgpu.device_async_wait %{{.+}} {numGroups = 0 : i32}
// CHECK-NEXT:   gpu.barrier
// CHECK:   scf.yield
// CHECK: } else {
// The window loop, the same way.
// CHECK: scf.if
// CHECK: scf.for
// CHECK: } {fmha.kv_loop = "window"}
func.func @attention(%q: memref<?x8x?x128xbf16>, %k: memref<?x2x?x128xbf16>, %v: memref<?x2x?x128xbf16>, %o: memref<?x8x?x128xbf16>, %lse: memref<?x8x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x128xbf16>, memref<?x2x?x128xbf16>, memref<?x2x?x128xbf16>) outs(%o : memref<?x8x?x128xbf16>, %lse : memref<?x8x?xf32>) {mask = #fmha.mask<"b:256,0,4">}
  return
}
