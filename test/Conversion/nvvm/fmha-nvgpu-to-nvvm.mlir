// RUN: fmha-opt %s --fmha-nvgpu-to-nvvm=index-bitwidth=32 | FileCheck %s --check-prefix=I32
// RUN: fmha-opt %s --fmha-nvgpu-to-nvvm | FileCheck %s --check-prefix=I64
// RUN: not fmha-opt %s --fmha-nvgpu-to-nvvm=index-bitwidth=16 2>&1 | FileCheck %s --check-prefix=BAD

// The nvgpu ops of the kernels (async copy, group, wait, ldmatrix) lowered
// with 32-bit indices: the address arithmetic and the GEPs are i32, and the
// memref descriptors carry i32 sizes; 64 is upstream's lowering.

// I32-LABEL: gpu.func @f(
// I32: unrealized_conversion_cast %{{.+}} : memref<?xbf16> to !llvm.struct<(ptr, ptr, i32, array<1 x i32>, array<1 x i32>)>
// I32: %[[ROW:.+]] = llvm.mul %{{.+}}, %{{.+}} : i32
// I32: %[[OFF:.+]] = llvm.add %[[ROW]], %{{.+}} : i32
// I32: %[[DST:.+]] = llvm.getelementptr %{{.+}}[%[[OFF]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, bf16
// I32: %[[SRC:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i32) -> !llvm.ptr, bf16
// I32: %[[GLOBAL:.+]] = llvm.addrspacecast %[[SRC]] : !llvm.ptr to !llvm.ptr<1>
// I32: nvvm.cp.async.shared.global %[[DST]], %[[GLOBAL]], 16, cache = cg
// I32: nvvm.cp.async.commit.group
// I32: nvvm.cp.async.wait.group 0
// I32: %[[LDM:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, bf16
// I32: nvvm.ldmatrix %[[LDM]]
// I32-NOT: nvgpu.

// I64-LABEL: gpu.func @f(
// I64: llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, bf16
// I64: nvvm.cp.async.shared.global

// BAD: error: fmha-nvgpu-to-nvvm: index-bitwidth must be 32 or 64, got 16

gpu.module @k {
  gpu.func @f(%g: memref<?xbf16>, %i: index, %j: index) kernel {
    %s = memref.alloca() : memref<64x72xbf16, #gpu.address_space<workgroup>>
    %t = nvgpu.device_async_copy %g[%i], %s[%j, %i], 8 {bypassL1} : memref<?xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
    %grp = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %grp {numGroups = 0 : i32}
    %m = nvgpu.ldmatrix %s[%j, %i] {numTiles = 4 : i32, transpose = false} : memref<64x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
    gpu.return
  }
}
