// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=16 static-tiles=1" -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=16 static-tiles=1" --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// The backward with static tiles on values (GQA 4:2, D 48 padded to 64, Dv
// 32, a bottom-right window with sinks and a softcap): three scf.forall,
// Dsum per (b, hq, q tile); dK and dV per (b, hk, kv tile), carried by the
// group loop and the q loop, on tiles with the keys as rows; dQ per (b, hq, q tile) over the sink and window
// kv loops (deterministic: no atomics). The lse pads with +inf (P = 0 on
// rows past Sq).
// CHECK-LABEL: func @bwd
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x4x?x48xbf16>, %[[K:[^:]+]]: tensor<?x2x?x48xbf16>, %[[V:[^:]+]]: tensor<?x2x?x32xbf16>, %[[O:[^:]+]]: tensor<?x4x?x32xbf16>, %[[L:[^:]+]]: tensor<?x4x?xf32>, %[[DO:[^:]+]]: tensor<?x4x?x32xbf16>, %[[DQ:[^:]+]]: tensor<?x4x?x48xbf16>, %[[DK:[^:]+]]: tensor<?x2x?x48xbf16>, %[[DV:[^:]+]]: tensor<?x2x?x32xbf16>)
// CHECK: %[[DS0:.+]] = bufferization.alloc_tensor(%{{.+}}, %{{.+}}) : tensor<?x4x?xf32>
// CHECK: %[[DSUM:.+]] = scf.forall (%[[B1:.+]], %[[H1:.+]], %[[T1:.+]]) in (%{{.+}}, 4, %{{.+}}) shared_outs(%[[DSO:.+]] = %[[DS0]])
// CHECK:   %[[R0:.+]] = arith.muli %[[T1]], %c32
// CHECK:   %[[ROWS:.+]] = arith.minsi
// CHECK:   tensor.extract_slice %[[DO]][%[[B1]], %[[H1]], %[[R0]], 0] [1, 1, %[[ROWS]], 32]
// CHECK:   %[[DOT:.+]] = tensor.pad
// CHECK:   tensor.extract_slice %[[O]]
// CHECK:   %[[OT:.+]] = tensor.pad
// CHECK:   %[[RD:.+]] = fmha.tile_row_dot %[[DOT]], %[[OT]] into %{{.+}} : tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32xf32> -> tensor<32xf32>
// CHECK:   %[[RDS:.+]] = tensor.extract_slice %[[RD]][0] [%[[ROWS]]] [1]
// CHECK:   tensor.parallel_insert_slice %[[RDS]] into %[[DSO]][%[[B1]], %[[H1]], %[[R0]]] [1, 1, %[[ROWS]]]
// CHECK: %[[KV:.+]]:2 = scf.forall (%[[B2:.+]], %[[H2:.+]], %[[T2:.+]]) in (%{{.+}}, 2, %{{.+}}) shared_outs(%[[DKO:.+]] = %[[DK]], %[[DVO:.+]] = %[[DV]])
// CHECK:   %[[C0:.+]] = arith.muli %[[T2]], %c16
// CHECK:   %[[COLS:.+]] = arith.minsi
// CHECK:   } : tensor<?x48xbf16> to tensor<16x64xbf16>
// CHECK:   } : tensor<?x32xbf16> to tensor<16x32xbf16>
// CHECK:   %[[DK0:.+]] = fmha.tile_fill %{{.+}}, 0.000000e+00 : tensor<16x64xf32>
// CHECK:   %[[DV0:.+]] = fmha.tile_fill %{{.+}}, 0.000000e+00 : tensor<16x32xf32>
// CHECK:   %[[G:.+]]:2 = scf.for %{{.+}} = %c0 to %c2 step %c1 iter_args(%[[GK:.+]] = %[[DK0]], %[[GV:.+]] = %[[DV0]])
// CHECK:     scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 iter_args(%[[AK:.+]] = %[[GK]], %[[AV:.+]] = %[[GV]])
// CHECK:       } : tensor<?x48xbf16> to tensor<32x64xbf16>
// CHECK:       tensor.extract_slice %[[L]]
// CHECK:       %[[INF:.+]] = arith.constant 0x7F800000 : f32
// CHECK:       tensor.pad
// CHECK:         tensor.yield %[[INF]] : f32
// CHECK:       tensor.extract_slice %[[DSUM]]
// The dK/dV loop's tiles are transposed (keys as rows): S^T = K Q^T with
// the mask's coordinates as given, P^T and dS^T with the lse and Dsum along
// the columns, dP^T = V dO^T, and dV += P^T dO, dK += dS^T Q untransposed.
// CHECK:       %[[S:.+]] = scf.if
// CHECK:         fmha.tile_qk %[[QT:.+]], %[[KT:.+]] into %{{.+}} transposed {scale = {{.+}}} : tensor<32x64xbf16>, tensor<16x64xbf16>, tensor<16x32xf32>
// CHECK:         fmha.tile_qk %[[QT]], %[[KT]] into %{{.+}} transposed masked[%{{.+}}, %[[C0]], %{{.+}}, %{{.+}}] {{.+}} -> tensor<16x32xf32>
// CHECK:       %[[P:.+]] = fmha.tile_bwd_probs %[[S]], %{{.+}} into %{{.+}} transposed : tensor<16x32xf32>, tensor<32xf32>
// CHECK:       %[[DP:.+]] = fmha.tile_matmul %{{.+}}, %[[DOQ:.+]] into %{{.+}} {alpha = 1.000000e+00 : f32, transpose_b} : tensor<16x32xbf16>, tensor<32x32xbf16>, tensor<16x32xf32> -> tensor<16x32xf32>
// CHECK:       %[[DSC:.+]] = fmha.tile_bwd_ds %[[P]], %{{.+}} capped %[[S]] into %[[DP]] transposed {softcap = 2.000000e+01 : f32}
// CHECK:       %[[NV:.+]] = fmha.tile_matmul %[[P]], %[[DOQ]] into %[[AV]] {accumulate, alpha = 1.000000e+00 : f32} : tensor<16x32xf32>, tensor<32x32xbf16>, tensor<16x32xf32> -> tensor<16x32xf32>
// CHECK:       %[[NK:.+]] = fmha.tile_matmul %[[DSC]], %[[QT]] into %[[AK]] {accumulate, alpha = 0.144337565 : f32} : tensor<16x32xf32>, tensor<32x64xbf16>, tensor<16x64xf32> -> tensor<16x64xf32>
// CHECK:       scf.yield %[[NK]], %[[NV]]
// CHECK:     } {fmha.q_loop}
// CHECK:   } {fmha.group_loop}
// CHECK:   %[[SK:.+]] = fmha.tile_store %[[G]]#0 into %{{.+}} : tensor<16x64xf32>, tensor<16x64xbf16> -> tensor<16x64xbf16>
// CHECK:   %[[SKS:.+]] = tensor.extract_slice %[[SK]][0, 0] [%[[COLS]], 48] [1, 1]
// CHECK:   %[[SV:.+]] = fmha.tile_store %[[G]]#1
// CHECK:   %[[SVS:.+]] = tensor.extract_slice %[[SV]][0, 0] [%[[COLS]], 32] [1, 1]
// CHECK:   tensor.parallel_insert_slice %[[SKS]] into %[[DKO]][%[[B2]], %[[H2]], %[[C0]], 0] [1, 1, %[[COLS]], 48]
// CHECK:   tensor.parallel_insert_slice %[[SVS]] into %[[DVO]][%[[B2]], %[[H2]], %[[C0]], 0] [1, 1, %[[COLS]], 32]
// CHECK: %[[DQR:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 4, %{{.+}}) shared_outs(%[[DQO:.+]] = %[[DQ]])
// CHECK:   %[[Q0:.+]] = fmha.tile_fill %{{.+}}, 0.000000e+00 : tensor<32x64xf32>
// CHECK:   %[[SINK:.+]] = scf.for %{{.+}} iter_args(%[[A1:.+]] = %[[Q0]]) -> (tensor<32x64xf32>)
// CHECK:     %[[DS1:.+]] = fmha.tile_bwd_ds
// CHECK:     %[[N1:.+]] = fmha.tile_matmul %[[DS1]], %{{.+}} into %[[A1]] {accumulate, alpha = 0.144337565 : f32} : tensor<32x16xf32>, tensor<16x64xbf16>, tensor<32x64xf32>
// CHECK:     scf.yield %[[N1]]
// CHECK:   } {fmha.kv_loop = "sink"}
// CHECK:   %[[WIN:.+]] = scf.for %{{.+}} iter_args(%{{.+}} = %[[SINK]]) -> (tensor<32x64xf32>)
// CHECK:   } {fmha.kv_loop = "window"}
// CHECK:   fmha.tile_store %[[WIN]]
// CHECK:   tensor.parallel_insert_slice %{{.+}} into %[[DQO]]
// CHECK: bufferization.dealloc_tensor %[[DSUM]]
// CHECK: return %[[DQR]], %[[KV]]#0, %[[KV]]#1

// One-Shot Bufferize turns it into the tile ops on buffers.
// BUF-LABEL: func @bwd
// BUF: fmha.tile_row_dot %{{.+}}, %{{.+}} into %{{.+}} : memref<32x32xbf16>, memref<32x32xbf16>, memref<32xf32>
// BUF: fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {accumulate, alpha = 1.000000e+00 : f32} : memref<16x32xf32>, memref<32x32xbf16>, memref<16x32xf32>
// BUF: fmha.tile_store %{{.+}} into %{{.+}} : memref<16x64xf32>, memref<16x64xbf16>
// BUF: memref.dealloc
// BUF-NOT: -> tensor<
func.func @bwd(%q: tensor<?x4x?x48xbf16>, %k: tensor<?x2x?x48xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x48xbf16>, %dk: tensor<?x2x?x48xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>) {deterministic, mask = #fmha.mask<"b:40,0,4">, softcap = 20.0 : f32} -> tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>
}

// Not deterministic: dQ is added atomically by the dK/dV loop into an f32
// accumulator of whole tiles (D 48 padded to 64, the rows to q tiles),
// the launch manifest's workspace "dq_accum". The Dsum loop zeroes its
// tile of each q tile; the dK/dV loop adds scale dS K, dS^T read
// transposed; the last loop rounds the accumulator into dQ (no kv loop).
// CHECK-LABEL: func @bwd_atomic
// CHECK: %[[ACC:.+]] = memref.alloc(%{{.+}}, %{{.+}}) {fmha.workspace = "dq_accum"} : memref<?x4x?x64xf32>
// CHECK: scf.forall (%[[B1:.+]], %[[H1:.+]], %{{.+}}) in
// CHECK:   fmha.tile_row_dot
// CHECK:   %[[Z:.+]] = fmha.tile_fill %{{.+}}, 0.000000e+00 : tensor<32x64xf32>
// CHECK:   %[[ZV:.+]] = memref.subview %[[ACC]][%[[B1]], %[[H1]], %{{.+}}, 0] [1, 1, 32, 64] [1, 1, 1, 1]
// CHECK:   fmha.tile_store %[[Z]] into %[[ZV]] : tensor<32x64xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>
// CHECK: scf.forall
// CHECK:       %[[DST:.+]] = fmha.tile_bwd_ds {{.+}} transposed
// CHECK:       %[[PART:.+]] = fmha.tile_matmul %[[DST]], %{{.+}} into %{{.+}} {alpha = 0.144337565 : f32, transpose_a} : tensor<16x32xf32>, tensor<16x64xbf16>, tensor<32x64xf32> -> tensor<32x64xf32>
// CHECK:       %[[AV:.+]] = memref.subview %[[ACC]]
// CHECK:       fmha.atomic_add %[[PART]], %[[AV]] : tensor<32x64xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>
// CHECK:     } {fmha.q_loop}
// CHECK: %[[ACCT:.+]] = bufferization.to_tensor %[[ACC]] restrict
// CHECK: scf.forall
// CHECK-NOT: scf.for
// CHECK:   %[[T:.+]] = tensor.extract_slice %[[ACCT]][%{{.+}}, %{{.+}}, %{{.+}}, 0] [1, 1, 32, 64] [1, 1, 1, 1] : tensor<?x4x?x64xf32> to tensor<32x64xf32>
// CHECK:   fmha.tile_store %[[T]] into %{{.+}} : tensor<32x64xf32>, tensor<32x64xbf16>
// CHECK: memref.dealloc %[[ACC]]
// BUF-LABEL: func @bwd_atomic
// BUF: fmha.tile_store %{{.+}} into %{{.+}} : memref<32x64xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>
// BUF: fmha.atomic_add %{{.+}}, %{{.+}} : memref<32x64xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>
// BUF: fmha.tile_store %{{.+}} into %{{.+}} : memref<32x64xf32, strided<[64, 1], offset: ?>>, memref<32x64xbf16>
func.func @bwd_atomic(%q: tensor<?x4x?x48xbf16>, %k: tensor<?x2x?x48xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x48xbf16>, %dk: tensor<?x2x?x48xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>) {mask = #fmha.mask<"t">} -> tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>
}
