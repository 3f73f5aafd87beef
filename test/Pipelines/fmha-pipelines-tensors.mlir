// The named pipelines take the fmha ops on tensors: One-Shot Bufferize
// first, the outs written in place and dropped from the results, so that
// the function gets the signature of its form on memrefs.
// RUN: fmha-opt %s --split-input-file --fmha-to-cpu-pipeline | FileCheck %s --check-prefix=CPU
// RUN: fmha-opt %s --split-input-file --fmha-to-nvvm-pipeline | FileCheck %s --check-prefix=NVVM
// RUN: fmha-opt %s --split-input-file --fmha-to-rocdl-pipeline | FileCheck %s --check-prefix=ROCDL

// CPU-NOT: tensor<
// CPU-LABEL: llvm.func @attention(
// CPU-SAME: {{%arg[0-9]+: i64\) attributes \{llvm.emit_c_interface\} \{$}}
// CPU-LABEL: llvm.func @_mlir_ciface_attention(
// NVVM-NOT: tensor<
// NVVM-LABEL: func.func @attention(
// NVVM-SAME: %[[Q:.+]]: memref<?x8x?x64xbf16>, %{{.+}}: memref<?x2x?x64xbf16>, %{{.+}}: memref<?x2x?x64xbf16>, %[[O:.+]]: memref<?x8x?x64xbf16>, %[[L:.+]]: memref<?x8x?xf32>) attributes
// NVVM: %[[FO:.+]] = memref.cast %[[O]]
// NVVM: gpu.launch_func @fmha_kernels::@attention_kernel {{.+}} args({{.+}}, %[[FO]] : memref<?x8x?x64xbf16, strided<[?, ?, 64, 1]>>,
// NVVM: return{{$}}
// ROCDL-LABEL: func.func @attention(
// ROCDL: gpu.launch_func @fmha_kernels::@attention_kernel
// ROCDL: return{{$}}
func.func @attention(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                     %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>,
                     %lse: tensor<?x8x?xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
    attributes {llvm.emit_c_interface} {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
      outs(%o : tensor<?x8x?x64xbf16>, %lse : tensor<?x8x?xf32>) {mask = #fmha.mask<"b">}
      -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %0#0, %0#1 : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

// An out made by tensor.empty is a new buffer: allocated, written, returned.
// CPU-LABEL: llvm.func @fresh(
// CPU: llvm.call @malloc
// CPU-LABEL: llvm.func @_mlir_ciface_fresh(
// NVVM-LABEL: func.func @fresh(
// NVVM-SAME: -> memref<2x4x64x32xf16>
// NVVM: %[[ALLOC:.+]] = memref.alloc() {{.*}}: memref<2x4x64x32xf16>
// NVVM: gpu.launch_func
// NVVM: return %[[ALLOC]] : memref<2x4x64x32xf16>
// ROCDL-LABEL: func.func @fresh(
// ROCDL-SAME: -> memref<2x4x64x32xf16>
func.func @fresh(%q: tensor<2x4x64x32xf16>, %k: tensor<2x4x64x32xf16>,
                 %v: tensor<2x4x64x32xf16>) -> tensor<2x4x64x32xf16>
    attributes {llvm.emit_c_interface} {
  %e = tensor.empty() : tensor<2x4x64x32xf16>
  %o = fmha.attention ins(%q, %k, %v : tensor<2x4x64x32xf16>, tensor<2x4x64x32xf16>, tensor<2x4x64x32xf16>)
      outs(%e : tensor<2x4x64x32xf16>) -> tensor<2x4x64x32xf16>
  return %o : tensor<2x4x64x32xf16>
}

// -----

// The backward, the merge and the accumulate on tensors.
// NVVM-LABEL: func.func @grads(
// NVVM-NOT: -> memref
// NVVM-COUNT-3: gpu.launch_func
// NVVM: return{{$}}
// ROCDL-LABEL: func.func @grads(
// ROCDL-COUNT-3: gpu.launch_func
// CPU-LABEL: llvm.func @grads(
// CPU-SAME: {{%arg[0-9]+: i64\) \{$}}
func.func @grads(%q: tensor<1x4x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>,
                 %o: tensor<1x4x?x64xf16>, %lse: tensor<1x4x?xf32>, %do: tensor<1x4x?x64xf16>,
                 %dq: tensor<1x4x?x64xf16>, %dk: tensor<1x2x?x64xf16>, %dv: tensor<1x2x?x64xf16>)
    -> (tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) {
  %0:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>,
          tensor<1x2x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?xf32>, tensor<1x4x?x64xf16>)
      outs(%dq, %dk, %dv : tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      -> tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>
  return %0#0, %0#1, %0#2 : tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>
}

// -----

// NVVM-LABEL: func.func @merge_acc(
// NVVM-COUNT-2: gpu.launch_func
// NVVM: return{{$}}
// The merge in place (o = o1, lse = lse1) and acc += x are elementwise:
// the outs keep their ins' buffers and nothing is returned.
// CPU-LABEL: llvm.func @merge_acc(
// CPU-SAME: {{%arg[0-9]+: i64\) \{$}}
func.func @merge_acc(%o1: tensor<1x2x?x32xf16>, %l1: tensor<1x2x?xf32>, %o2: tensor<1x2x?x32xf16>,
                     %l2: tensor<1x2x?xf32>, %x: tensor<?xf16>, %acc: tensor<?xf32>)
    -> (tensor<1x2x?x32xf16>, tensor<1x2x?xf32>, tensor<?xf32>) {
  %m:2 = fmha.merge ins(%o1, %l1, %o2, %l2 : tensor<1x2x?x32xf16>, tensor<1x2x?xf32>, tensor<1x2x?x32xf16>, tensor<1x2x?xf32>)
      outs(%o1, %l1 : tensor<1x2x?x32xf16>, tensor<1x2x?xf32>) -> tensor<1x2x?x32xf16>, tensor<1x2x?xf32>
  %a = fmha.accumulate ins(%x : tensor<?xf16>) outs(%acc : tensor<?xf32>) -> tensor<?xf32>
  return %m#0, %m#1, %a : tensor<1x2x?x32xf16>, tensor<1x2x?xf32>, tensor<?xf32>
}
