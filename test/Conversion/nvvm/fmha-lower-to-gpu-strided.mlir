// RUN: fmha-opt %s --fmha-lower-to-gpu="target=nvvm chip=sm_90" -canonicalize -cse | FileCheck %s

// Operands in any strides but a contiguous head dim reach the kernels
// without a copy (DESIGN.md section 1, strides). A kernel takes each tensor
// as a memref of its shape whose strides and offset are those of the
// operand's type: dynamic ones are read from the descriptor at run time,
// static ones stay constants of the kernel.

// fmha-compile's form (--strides=any): every stride and offset dynamic, the
// head dim contiguous. K's rows are read at offset + b stride_b + h
// stride_h + row stride_s.
// CHECK-LABEL: func.func @dynamic(
// CHECK: gpu.launch_func @fmha_kernels::@dynamic_kernel {{.+}} args(%arg0 : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, {{.+}}) {fmha.operand_align = array<i64: 16, 16, 16, 16, 0, 0, 0, 0>}
func.func @dynamic(%q: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>) outs(%o : memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse : memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>) {mask = #fmha.mask<"b">}
  return
}

// BSHD memory of static strides ([B, S, H, D]: stride_h = D, stride_s =
// H D) and lse at an offset: the kernel is specialized to them.
// CHECK-LABEL: func.func @bshd(
// CHECK: gpu.launch_func @fmha_kernels::@bshd_kernel {{.+}} args(%arg0 : memref<?x8x?x64xbf16, strided<[?, 64, 512, 1]>>, {{.+}}, %arg4 : memref<?x8x?xf32, strided<[?, ?, 1], offset: 4>>,
func.func @bshd(%q: memref<?x8x?x64xbf16, strided<[?, 64, 512, 1]>>, %k: memref<?x2x?x64xbf16, strided<[?, 64, 128, 1]>>, %v: memref<?x2x?x64xbf16, strided<[?, 64, 128, 1]>>, %o: memref<?x8x?x64xbf16, strided<[?, 64, 512, 1]>>, %lse: memref<?x8x?xf32, strided<[?, ?, 1], offset: 4>>) {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xbf16, strided<[?, 64, 512, 1]>>, memref<?x2x?x64xbf16, strided<[?, 64, 128, 1]>>, memref<?x2x?x64xbf16, strided<[?, 64, 128, 1]>>) outs(%o : memref<?x8x?x64xbf16, strided<[?, 64, 512, 1]>>, %lse : memref<?x8x?xf32, strided<[?, ?, 1], offset: 4>>) {mask = #fmha.mask<"b">}
  return
}

// The backward: each of its nine tensors taken the same way (an identity
// layout cast to its strided form); the three kernels share the operands
// (dsum and the dq accumulator stay flat workspaces).
// CHECK-LABEL: func.func @bshd_bwd(
// CHECK-DAG: %[[O:.+]] = memref.cast %arg3 : memref<2x8x128x64xf16> to memref<2x8x128x64xf16, strided<[65536, 8192, 64, 1]>>
// CHECK: gpu.launch_func @fmha_kernels::@bshd_bwd_prep {{.+}}, %[[O]] : {{.+}}, %arg7 : memref<2x2x128x64xf16, strided<[32768, 64, 128, 1]>>, %{{.+}} : memref<?xf32>, %{{.+}} : memref<?xf32>, {{.+}} {fmha.operand_align = array<i64: 16, 16, 16, 16, 16, 0, 16, 16, 16, 0, 0, 0, 0, 0>}
// CHECK: gpu.launch_func @fmha_kernels::@bshd_bwd_dkdv {{.+}}, %arg7 : {{.+}}
// CHECK: gpu.launch_func @fmha_kernels::@bshd_bwd_dq {{.+}}, %arg7 : {{.+}}
func.func @bshd_bwd(%q: memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>, %k: memref<2x2x128x64xf16, strided<[16384, 64, 128, 1]>>, %v: memref<2x2x128x64xf16, strided<[16384, 64, 128, 1]>>, %o: memref<2x8x128x64xf16>, %lse: memref<2x8x128xf32>, %do: memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>, %dq: memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>, %dk: memref<2x2x128x64xf16, strided<[32768, 64, 128, 1]>>, %dv: memref<2x2x128x64xf16>) {
  fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>, memref<2x2x128x64xf16, strided<[16384, 64, 128, 1]>>, memref<2x2x128x64xf16, strided<[16384, 64, 128, 1]>>, memref<2x8x128x64xf16>, memref<2x8x128xf32>, memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>)
      outs(%dq, %dk, %dv : memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>, memref<2x2x128x64xf16, strided<[32768, 64, 128, 1]>>, memref<2x2x128x64xf16>) {mask = #fmha.mask<"t">}
  return
}

// The kernels, in the gpu.module after the host functions.
// CHECK: gpu.func @dynamic_kernel(%{{[^:]+}}: memref<?x8x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[AK:[^:]+]]: memref<?x2x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: %{{.+}}, %[[KOFF:.+]], %{{.+}}:4, %[[KSTR:.+]]:4 = memref.extract_strided_metadata %[[AK]]
// CHECK: %[[BZ:.+]] = gpu.block_id z
// CHECK-DAG: %[[KB0:.+]] = arith.muli %[[BZ]], %[[KSTR]]#0
// CHECK-DAG: %[[KB1:.+]] = arith.addi %[[KOFF]], %[[KB0]]
// CHECK-DAG: %[[KH:.+]] = arith.muli %{{.+}}, %[[KSTR]]#1
// CHECK-DAG: arith.addi %[[KB1]], %[[KH]]
// CHECK: arith.muli %{{.+}}, %[[KSTR]]#2
// CHECK: nvgpu.device_async_copy
// CHECK: gpu.func @bshd_kernel(%{{[^:]+}}: memref<?x8x?x64xbf16, strided<[?, 64, 512, 1]>>
// CHECK: gpu.func @bshd_bwd_prep(%{{[^:]+}}: memref<2x8x128x64xf16, strided<[65536, 64, 512, 1]>>
