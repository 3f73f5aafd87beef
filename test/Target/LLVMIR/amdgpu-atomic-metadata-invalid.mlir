// The fmha.amdgpu_* attributes on what they cannot describe: translation
// (gpu-module-to-binary) fails with an error at the operation.
// RUN: fmha-opt %s --gpu-module-to-binary=format=isa -split-input-file -verify-diagnostics

module attributes {gpu.container_module} {
  // expected-error @+2 {{llvm::Module}}
  // expected-error @+1 {{serializing the module}}
  gpu.module @store [#rocdl.target<chip = "gfx942">] {
    llvm.func @k(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      // expected-error @+1 {{'fmha.amdgpu_no_fine_grained_memory' applies only to 'llvm.atomicrmw', not to 'llvm.store'}}
      llvm.store %v, %p {fmha.amdgpu_no_fine_grained_memory} : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+2 {{llvm::Module}}
  // expected-error @+1 {{serializing the module}}
  gpu.module @not_unit [#rocdl.target<chip = "gfx942">] {
    llvm.func @k(%p: !llvm.ptr<1>, %v: f32) attributes {gpu.kernel, rocdl.kernel} {
      // expected-error @+1 {{'fmha.amdgpu_no_remote_memory' must be a unit attribute}}
      %0 = llvm.atomicrmw fadd %p, %v monotonic {fmha.amdgpu_no_remote_memory = 1 : i32} : !llvm.ptr<1>, f32
      llvm.return
    }
  }
}
