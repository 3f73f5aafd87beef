// RUN: fmha-opt %s --fmha-tile-attention="block-m=16 block-n=32" -cse -split-input-file | FileCheck %s

// Atomic mode, GQA 4:2, bottom-right window with sinks and a softcap:
//  1. Dsum per (b, hq, q tile), and the f32 dQ accumulator zeroed;
//  2. per (b, hk, kv tile): dK and dV in scratch over the 2 q heads of the
//     group and the q tiles that see the kv tile; dQ added atomically;
//  3. dQ rounded into the output.
// CHECK-LABEL: func @atomic
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x4x?x32xf32>, %[[K:[^:]+]]: memref<?x2x?x32xf32>, %[[V:[^:]+]]: memref<?x2x?x32xf32>, %[[O:[^:]+]]: memref<?x4x?x32xf32>, %[[L:[^:]+]]: memref<?x4x?xf32>, %[[DO:[^:]+]]: memref<?x4x?x32xf32>, %[[DQ:[^:]+]]: memref<?x4x?x32xf32>, %[[DK:[^:]+]]: memref<?x2x?x32xf32>, %[[DV:[^:]+]]: memref<?x2x?x32xf32>)
// CHECK: %[[DSUM:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x4x?xf32>
// CHECK: %[[DQACC:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x4x?x32xf32>
// CHECK: scf.parallel ({{.+}}) = (%c0, %c0, %c0) to (%{{.+}}, %c4, %{{.+}})
// CHECK:   fmha.tile_row_dot
// CHECK:   fmha.tile_fill %{{.+}}, 0.000000e+00
// CHECK: scf.parallel ({{.+}}) = (%c0, %c0, %c0) to (%{{.+}}, %c2, %{{.+}})
// CHECK:   fmha.tile_fill
// CHECK:   fmha.tile_fill
// CHECK:   scf.for %{{.+}} = %c0 to %c2 step %c1 {
// CHECK:     scf.for
// CHECK:       scf.if
// CHECK:         fmha.tile_qk {{.+}} {scale = 0.176776692 : f32, softcap = 5.000000e+00 : f32}
// CHECK:       } else {
// CHECK:         fmha.tile_qk {{.+}} masked[{{.+}}] {mask = #fmha.mask<"b:40,0,4">
// CHECK:       fmha.tile_bwd_probs %[[S:[^,]+]], %{{.+}} into %[[P:[^ ]+]] :
// CHECK:       fmha.tile_matmul %[[P]], %{{.+}} into %[[DVACC:[^ ]+]] {accumulate, alpha = 1.000000e+00 : f32, transpose_a}
// CHECK:       fmha.tile_matmul %{{.+}}, %{{.+}} into %[[DP:[^ ]+]] {alpha = 1.000000e+00 : f32, transpose_b}
// CHECK:       fmha.tile_bwd_ds %[[P]], %{{.+}} capped %[[S]] into %[[DP]] {softcap = 5.000000e+00 : f32}
// CHECK:       fmha.tile_matmul %[[DP]], %{{.+}} into %[[DKACC:[^ ]+]] {accumulate, alpha = 0.176776692 : f32, transpose_a}
// CHECK:       fmha.tile_matmul %[[DP]], %{{.+}} into %{{.+}} {accumulate, alpha = 0.176776692 : f32, atomic}
// CHECK:     } {fmha.q_loop}
// CHECK:   } {fmha.group_loop}
// CHECK:   fmha.tile_store %[[DKACC]] into
// CHECK:   fmha.tile_store %[[DVACC]] into
// CHECK: scf.parallel
// CHECK:   fmha.tile_store %{{.+}} into
// CHECK: memref.dealloc %[[DSUM]]
// CHECK: memref.dealloc %[[DQACC]]
func.func @atomic(%q: memref<?x4x?x32xf32>, %k: memref<?x2x?x32xf32>, %v: memref<?x2x?x32xf32>, %o: memref<?x4x?x32xf32>, %l: memref<?x4x?xf32>, %do: memref<?x4x?x32xf32>, %dq: memref<?x4x?x32xf32>, %dk: memref<?x2x?x32xf32>, %dv: memref<?x2x?x32xf32>) {
  fmha.attention_bwd ins(%q, %k, %v, %o, %l, %do : memref<?x4x?x32xf32>, memref<?x2x?x32xf32>, memref<?x2x?x32xf32>, memref<?x4x?x32xf32>, memref<?x4x?xf32>, memref<?x4x?x32xf32>) outs(%dq, %dk, %dv : memref<?x4x?x32xf32>, memref<?x2x?x32xf32>, memref<?x2x?x32xf32>) {mask = #fmha.mask<"b:40,0,4">, softcap = 5.0 : f32}
  return
}

// -----

// Deterministic mode: no atomics; dQ recomputed per q tile over its kv tiles
// (sink loop, then window loop) in a fixed order.
// CHECK-LABEL: func @deterministic
// CHECK-NOT: atomic
// CHECK: scf.parallel
// CHECK:   fmha.tile_row_dot
// CHECK: scf.parallel
// CHECK: } {fmha.group_loop}
// CHECK: scf.parallel
// CHECK:   fmha.tile_fill
// CHECK:   scf.for
// CHECK:     fmha.tile_bwd_ds
// CHECK:     fmha.tile_matmul {{.+}} {accumulate, alpha = 1.250000e-01 : f32}
// CHECK:   } {fmha.kv_loop = "sink"}
// CHECK:   scf.for
// CHECK:     fmha.tile_bwd_ds
// CHECK:     fmha.tile_matmul {{.+}} {accumulate, alpha = 1.250000e-01 : f32}
// CHECK:   } {fmha.kv_loop = "window"}
// CHECK:   fmha.tile_store
// CHECK-NOT: atomic
func.func @deterministic(%q: memref<?x2x?x64xbf16>, %k: memref<?x2x?x64xbf16>, %o: memref<?x2x?x64xbf16>, %l: memref<?x2x?xf32>, %dq: memref<?x2x?x64xbf16>, %dk: memref<?x2x?x64xbf16>, %dv: memref<?x2x?x64xbf16>) {
  fmha.attention_bwd ins(%q, %k, %k, %o, %l, %o : memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?xf32>, memref<?x2x?x64xbf16>) outs(%dq, %dk, %dv : memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>) {deterministic, mask = #fmha.mask<"t:64,0,8">}
  return
}

// -----

// On tensors: inputs through to_buffer (once per distinct value), gradients in fresh buffers returned as
// tensors.
// CHECK-LABEL: func @tensors
// CHECK-COUNT-4: bufferization.to_buffer
// CHECK-COUNT-3: memref.alloc
// CHECK: %[[DQ:.+]] = bufferization.to_tensor
// CHECK: %[[DK:.+]] = bufferization.to_tensor
// CHECK: %[[DV:.+]] = bufferization.to_tensor
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @tensors(%q: tensor<1x4x?x32xf16>, %k: tensor<1x1x?x32xf16>, %o: tensor<1x4x?x32xf16>, %l: tensor<1x4x?xf32>) -> (tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %k, %o, %l, %o : tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x4x?x32xf16>, tensor<1x4x?xf32>, tensor<1x4x?x32xf16>) outs(%q, %k, %k : tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>) -> tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>
  return %r#0, %r#1, %r#2 : tensor<1x4x?x32xf16>, tensor<1x1x?x32xf16>, tensor<1x1x?x32xf16>
}
