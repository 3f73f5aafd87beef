// The fmha dialect's LLVM IR translation: fmha.amdgpu_* on llvm.atomicrmw
// become !amdgpu.* metadata when gpu-module-to-binary translates the kernel
// module, so the AMDGPU backend selects its native f32 add instead of a
// compare-and-swap loop. The kernel backward's own LLVM IR (with the
// metadata spelled out) is in test/Tools/fmha-compile-bwd-rocdl-atomics.test.
// RUN: fmha-opt %s --gpu-module-to-binary=format=isa | FileCheck %s

module attributes {gpu.container_module} {
  // CHECK-LABEL: gpu.binary @cdna3
  // CHECK-SAME: add_native:
  // CHECK-NOT: cmpswap
  // CHECK-SAME: global_atomic_add_f32
  // CHECK-NOT: global_atomic_add_f32
  // CHECK-SAME: add_plain:
  // CHECK-SAME: global_atomic_cmpswap
  gpu.module @cdna3 [#rocdl.target<chip = "gfx942">] {
    llvm.func @add_native(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      %0 = llvm.atomicrmw fadd %p, %v monotonic {fmha.amdgpu_no_fine_grained_memory, fmha.amdgpu_no_remote_memory} : !llvm.ptr<1>, f32
      llvm.return
    }
    llvm.func @add_plain(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      %0 = llvm.atomicrmw fadd %p, %v monotonic : !llvm.ptr<1>, f32
      llvm.return
    }
  }

  // gfx90a's f32 add flushes denormals: it also needs the denormal waiver.
  // CHECK-LABEL: gpu.binary @cdna2
  // CHECK-SAME: add_native:
  // CHECK-NOT: cmpswap
  // CHECK-SAME: global_atomic_add_f32
  // CHECK-SAME: add_no_waiver:
  // CHECK-SAME: global_atomic_cmpswap
  gpu.module @cdna2 [#rocdl.target<chip = "gfx90a">] {
    llvm.func @add_native(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      %0 = llvm.atomicrmw fadd %p, %v monotonic {fmha.amdgpu_no_fine_grained_memory, fmha.amdgpu_no_remote_memory, fmha.amdgpu_ignore_denormal_mode} : !llvm.ptr<1>, f32
      llvm.return
    }
    llvm.func @add_no_waiver(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      %0 = llvm.atomicrmw fadd %p, %v monotonic {fmha.amdgpu_no_fine_grained_memory, fmha.amdgpu_no_remote_memory} : !llvm.ptr<1>, f32
      llvm.return
    }
  }

  // Other fmha attributes pass through translation untouched.
  // CHECK-LABEL: gpu.binary @rdna4
  // CHECK-SAME: add_native:
  // CHECK-NOT: cmpswap
  // CHECK-SAME: global_atomic_add_f32
  gpu.module @rdna4 [#rocdl.target<chip = "gfx1200">] {
    llvm.func @add_native(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      %0 = llvm.atomicrmw fadd %p, %v monotonic {fmha.amdgpu_no_fine_grained_memory, fmha.q_loop = "group"} : !llvm.ptr<1>, f32
      llvm.return
    }
  }
}
