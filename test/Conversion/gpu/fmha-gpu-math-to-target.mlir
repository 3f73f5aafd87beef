// RUN: fmha-opt %s --fmha-gpu-math-to-target=target=nvvm | FileCheck %s --check-prefixes=CHECK,NVVM
// RUN: fmha-opt %s --fmha-gpu-math-to-target=target=rocdl | FileCheck %s --check-prefixes=CHECK,ROCDL
// RUN: not fmha-opt %s --fmha-gpu-math-to-target=target=spirv 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: unknown GPU target 'spirv' (expected nvvm or rocdl)

// In the kernels: exp(x) = 2^(x log2 e), log(x) = log2(x) ln 2 on the
// target's instructions; f64 and the host are left alone.
// CHECK-LABEL: func.func @host
// CHECK: math.exp
// CHECK: gpu.func @k(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f64,
// CHECK-DAG: %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK-DAG: %[[LN2:.+]] = arith.constant 0.693147182 : f32
// CHECK: %[[S:.+]] = arith.mulf %[[X]], %[[LOG2E]] : f32
// NVVM: %[[E:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[S]]) : (f32) -> f32
// ROCDL: %[[E:.+]] = math.exp2 %[[S]] : f32
// NVVM: %[[L2:.+]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%[[E]]) : (f32) -> f32
// ROCDL: %[[L2:.+]] = math.log2 %[[E]] : f32
// CHECK: %[[L:.+]] = arith.mulf %[[L2]], %[[LN2]] : f32
// CHECK: math.exp %[[Y]] : f64
// CHECK: math.log %{{.+}} : f64
func.func @host(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}
gpu.module @kernels {
  gpu.func @k(%x: f32, %y: f64, %out: memref<2xf32>, %out64: memref<f64>) kernel {
    %c0 = arith.constant 0 : index
    %e = math.exp %x : f32
    %l = math.log %e : f32
    memref.store %l, %out[%c0] : memref<2xf32>
    %e64 = math.exp %y : f64
    %l64 = math.log %e64 : f64
    memref.store %l64, %out64[] : memref<f64>
    gpu.return
  }
}

// A thread's registers of a distributed tile (a 1-D vector of f32): element
// by element on the target's instructions; vectors of f64 left alone.
// CHECK-LABEL: gpu.func @registers
// CHECK-SAME: (%[[V:[^:]+]]: vector<2xf32>
// CHECK: %[[V0:.+]] = vector.extract %[[V]][0] : f32 from vector<2xf32>
// CHECK: %[[S0:.+]] = arith.mulf %[[V0]], %{{.+}} : f32
// NVVM: %[[E0:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[S0]])
// ROCDL: %[[E0:.+]] = math.exp2 %[[S0]] : f32
// CHECK: %[[V1:.+]] = vector.extract %[[V]][1] : f32 from vector<2xf32>
// CHECK: %[[S1:.+]] = arith.mulf %[[V1]], %{{.+}} : f32
// NVVM: %[[E1:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[S1]])
// ROCDL: %[[E1:.+]] = math.exp2 %[[S1]] : f32
// CHECK: vector.from_elements %[[E0]], %[[E1]] : vector<2xf32>
// CHECK: math.exp %{{.+}} : vector<2xf64>
gpu.module @registers_module {
  gpu.func @registers(%v: vector<2xf32>, %w: vector<2xf64>, %out: memref<vector<2xf32>>, %out64: memref<vector<2xf64>>) kernel {
    %e = math.exp %v : vector<2xf32>
    memref.store %e, %out[] : memref<vector<2xf32>>
    %e64 = math.exp %w : vector<2xf64>
    memref.store %e64, %out64[] : memref<vector<2xf64>>
    gpu.return
  }
}

// exp(a - b) (the softmax's exp(s - m)): exp2(fma(a, log2 e, b * -log2 e)),
// element by element; the difference goes where nothing else uses it.
// CHECK-LABEL: gpu.func @difference
// CHECK-SAME: (%[[A:[^:]+]]: vector<2xf32>, %[[B:[^:]+]]: vector<2xf32>
// CHECK-DAG: %[[NLOG2E:.+]] = arith.constant -1.44269502 : f32
// CHECK-DAG: %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK-NOT: arith.subf
// CHECK: %[[A0:.+]] = vector.extract %[[A]][0] : f32 from vector<2xf32>
// CHECK: %[[B0:.+]] = vector.extract %[[B]][0] : f32 from vector<2xf32>
// CHECK: %[[NB0:.+]] = arith.mulf %[[B0]], %[[NLOG2E]] : f32
// CHECK: %[[Y0:.+]] = llvm.intr.fma(%[[A0]], %[[LOG2E]], %[[NB0]]) : (f32, f32, f32) -> f32
// NVVM: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[Y0]])
// ROCDL: math.exp2 %[[Y0]] : f32
// CHECK: %[[A1:.+]] = vector.extract %[[A]][1] : f32 from vector<2xf32>
// CHECK: %[[B1:.+]] = vector.extract %[[B]][1] : f32 from vector<2xf32>
// CHECK: %[[NB1:.+]] = arith.mulf %[[B1]], %[[NLOG2E]] : f32
// CHECK: llvm.intr.fma(%[[A1]], %[[LOG2E]], %[[NB1]])
// A difference used elsewhere stays for that use.
// CHECK: %[[D:.+]] = arith.subf %[[X:[^,]+]], %[[Y:[^ ]+]] : f32
// CHECK: %[[NY:.+]] = arith.mulf %[[Y]], %[[NLOG2E]] : f32
// CHECK: llvm.intr.fma(%[[X]], %[[LOG2E]], %[[NY]])
// CHECK: memref.store %[[D]]
gpu.module @difference_module {
  gpu.func @difference(%a: vector<2xf32>, %b: vector<2xf32>, %x: f32, %y: f32, %out: memref<vector<2xf32>>, %out1: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %d = arith.subf %a, %b : vector<2xf32>
    %e = math.exp %d : vector<2xf32>
    memref.store %e, %out[] : memref<vector<2xf32>>
    %dx = arith.subf %x, %y : f32
    %ex = math.exp %dx : f32
    memref.store %ex, %out1[%c0] : memref<2xf32>
    memref.store %dx, %out1[%c1] : memref<2xf32>
    gpu.return
  }
}

// exp(x c - b) for a constant c (the scale fmha-defer-scale leaves there):
// exp2(fma(x, c log2 e, b * -log2 e)), the product gone.
// CHECK-LABEL: gpu.func @scaled_difference
// CHECK-SAME: (%[[X:[^:]+]]: f32, %[[B:[^:]+]]: f32
// CHECK-DAG: %[[NLOG2E:.+]] = arith.constant -1.44269502 : f32
// CHECK-DAG: %[[CLOG2E:.+]] = arith.constant 0.180336878 : f32
// CHECK-NOT: arith.subf
// CHECK: %[[NB:.+]] = arith.mulf %[[B]], %[[NLOG2E]] : f32
// CHECK-NEXT: %[[Y:.+]] = llvm.intr.fma(%[[X]], %[[CLOG2E]], %[[NB]]) : (f32, f32, f32) -> f32
// NVVM-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[Y]])
// ROCDL-NEXT: math.exp2 %[[Y]] : f32
// CHECK-NOT: arith.mulf
// CHECK: gpu.return
gpu.module @scaled_difference_module {
  gpu.func @scaled_difference(%x: f32, %b: f32, %out: memref<f32>) kernel {
    %c = arith.constant 0.125 : f32
    %s = arith.mulf %c, %x : f32
    %d = arith.subf %s, %b : f32
    %e = math.exp %d : f32
    memref.store %e, %out[] : memref<f32>
    gpu.return
  }
}

// tanh (the softcap): on ROCDL 1 - 2 / (2^(2x log2 e) + 1) through the
// target's exp2 (AMDGPU has no tanh); NVPTX lowers math.tanh itself.
// CHECK-LABEL: gpu.func @tanh
// CHECK-SAME: (%[[X:[^:]+]]: f32
// NVVM: math.tanh %[[X]] : f32
// ROCDL-DAG: %[[TWOLOG2E:.+]] = arith.constant 2.885390e+00 : f32
// ROCDL-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// ROCDL-DAG: %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// ROCDL: %[[Y:.+]] = arith.mulf %[[X]], %[[TWOLOG2E]] : f32
// ROCDL: %[[E:.+]] = math.exp2 %[[Y]] : f32
// ROCDL: %[[D:.+]] = arith.addf %[[E]], %[[ONE]] : f32
// ROCDL: %[[Q:.+]] = arith.divf %[[TWO]], %[[D]] : f32
// ROCDL: arith.subf %[[ONE]], %[[Q]] : f32
// ROCDL-NOT: math.tanh
gpu.module @tanh_module {
  gpu.func @tanh(%x: f32, %out: memref<f32>) kernel {
    %t = math.tanh %x : f32
    memref.store %t, %out[] : memref<f32>
    gpu.return
  }
}
