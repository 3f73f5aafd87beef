// RUN: fmha-opt %s --fmha-bulk-add -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-bulk-add --fmha-distribute-tiles="target=nvvm chip=sm_90a" -split-input-file | FileCheck %s --check-prefix=DIST
// RUN: fmha-opt %s --fmha-bulk-add --fmha-distribute-tiles="target=nvvm chip=sm_90a index-bitwidth=32" -split-input-file | FileCheck %s --check-prefix=PTR32
// RUN: not fmha-opt %s --fmha-bulk-add --fmha-distribute-tiles="target=nvvm chip=sm_90a index-bitwidth=16" -split-input-file 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: not fmha-opt %s --fmha-bulk-add --fmha-distribute-tiles="target=nvvm chip=sm_80" -split-input-file 2>&1 | FileCheck %s --check-prefix=SM80

#p = #fmha.layout<8x32, register = [[1, 0], [2, 0], [4, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]], warp = []>

// A tile in register order added into its contiguous tile of global
// memory in a loop: the add becomes, after a wait for the last bulk add to
// have read the buffer, a write of the tile into a workgroup buffer (one
// for the function) and one asynchronous bulk add of it; after the loop a
// wait for the buffer to be read (its bytes free for what follows), and
// the return waits for the adds to complete.
// CHECK-LABEL: gpu.func @bulk
// CHECK-SAME: workgroup(%[[BUF:.+]] : memref<8x32xf32, 3>)
// CHECK: scf.for
// CHECK:   %[[T:.+]] = fmha.to_layout
// CHECK:   fmha.add_wait {read}
// CHECK:   vector.transfer_write %[[T]], %[[BUF]][%{{.+}}, %{{.+}}] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, 3>
// CHECK:   fmha.add_async %[[BUF]] to %{{.+}} : memref<8x32xf32, 3> to memref<8x32xf32, strided<[32, 1], offset: ?>>
// CHECK-NOT: fmha.atomic_add
// CHECK: }
// CHECK-NEXT: fmha.add_wait {read}
// CHECK-NEXT: fmha.add_wait{{$}}
// CHECK-NEXT: gpu.return

// Distributed (sm_90a): the thread's first (lane 0 of warp 0) waits for
// its bulk groups to have read the buffer, a barrier; each register one
// 4-byte store (the lanes along a row); the proxy fence and a barrier,
// then the first thread's cp.reduce.async.bulk of the 1024 bytes and its
// commit; after the loop its wait for the reads, at the end for the adds,
// each with a barrier.
// DIST-LABEL: gpu.func @bulk
// DIST: scf.for
// DIST:   nvvm.inline_ptx "cp.async.bulk.wait_group.read 0;", predicate = %[[FIRST:[^ ]+]]
// DIST-NEXT: gpu.barrier
// DIST-COUNT-8: vector.transfer_write %{{.+}} : vector<1x1xf32>, memref<8x32xf32, 3>
// DIST: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// DIST-NEXT: gpu.barrier
// DIST: %[[SIZE:.+]] = arith.constant 1024 : i32
// DIST-NEXT: nvvm.inline_ptx "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;" ro(%{{.+}}, %{{.+}}, %[[SIZE]] : i64, i32, i32), predicate = %{{.+}}
// DIST-NEXT: nvvm.inline_ptx "cp.async.bulk.commit_group;", predicate
// DIST: nvvm.inline_ptx "cp.async.bulk.wait_group.read 0;", predicate
// DIST-NEXT: gpu.barrier
// DIST: nvvm.inline_ptx "cp.async.bulk.wait_group 0;", predicate
// DIST-NEXT: gpu.barrier
// DIST-NEXT: gpu.return
// DIST-NOT: memref.atomic_rmw

// The destination's address is a 64-bit global pointer from the
// descriptor the kernel's lowering gives it, whatever the index width: with
// 32-bit indices, its fields are i32, the pointer stays 64 bits.
// PTR32-LABEL: gpu.func @bulk
// PTR32: %[[DESC:.+]] = builtin.unrealized_conversion_cast %{{.+}} : memref<8x32xf32, strided<[32, 1], offset: ?>> to !llvm.struct<(ptr, ptr, i32, array<2 x i32>, array<2 x i32>)>
// PTR32: %[[ALIGNED:.+]] = llvm.extractvalue %[[DESC]][1]
// PTR32: %[[ELEM:.+]] = llvm.getelementptr %[[ALIGNED]][%{{.+}}] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// PTR32: %[[GLOBAL:.+]] = llvm.addrspacecast %[[ELEM]] : !llvm.ptr to !llvm.ptr<1>
// PTR32: %[[DST:.+]] = llvm.ptrtoint %[[GLOBAL]] : !llvm.ptr<1> to i64
// PTR32: nvvm.inline_ptx "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;" ro(%[[DST]], %{{.+}}, %{{.+}} : i64, i32, i32)

// BITS: error: fmha-distribute-tiles: index-bitwidth must be 32 or 64, got 16

// SM80: error: 'fmha.add_async' op fmha-distribute-tiles: adds a buffer asynchronously: cp.reduce.async.bulk needs sm_90a
gpu.module @kernels {
  gpu.func @bulk(%x: memref<8x32xf32>, %acc: memref<4x8x32xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %padf = arith.constant 0.0 : f32
    scf.for %i = %c0 to %n step %c1 {
      %t = vector.transfer_read %x[%c0, %c0], %padf {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
      %tp = fmha.to_layout %t to layout(#p) : vector<8x32xf32>
      %dest = memref.subview %acc[%i, 0, 0] [1, 8, 32] [1, 1, 1] : memref<4x8x32xf32> to memref<8x32xf32, strided<[32, 1], offset: ?>>
      fmha.atomic_add %tp, %dest : vector<8x32xf32>, memref<8x32xf32, strided<[32, 1], offset: ?>>
    }
    gpu.return
  }
}

// -----

#p = #fmha.layout<8x32, register = [[1, 0], [2, 0], [4, 0]], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]], warp = []>

// A destination that is not contiguous (rows 64 floats apart) keeps its
// atomic adds.
// CHECK-LABEL: gpu.func @strided
// CHECK-NOT: fmha.add_async
// CHECK: fmha.atomic_add
// CHECK-NOT: fmha.add_wait
// DIST-LABEL: gpu.func @strided
// DIST-COUNT-8: memref.atomic_rmw addf
gpu.module @kernels {
  gpu.func @strided(%x: memref<8x32xf32>, %acc: memref<8x64xf32>) kernel {
    %c0 = arith.constant 0 : index
    %padf = arith.constant 0.0 : f32
    %t = vector.transfer_read %x[%c0, %c0], %padf {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
    %tp = fmha.to_layout %t to layout(#p) : vector<8x32xf32>
    %dest = memref.subview %acc[0, 0] [8, 32] [1, 1] : memref<8x64xf32> to memref<8x32xf32, strided<[64, 1]>>
    fmha.atomic_add %tp, %dest : vector<8x32xf32>, memref<8x32xf32, strided<[64, 1]>>
    gpu.return
  }
}
