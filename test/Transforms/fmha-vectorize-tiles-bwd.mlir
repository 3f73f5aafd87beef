// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=16 static-tiles=1" --fmha-vectorize-tiles -cse | FileCheck %s

// The backward's static tiles as vectors (D 48 padded to 64, Dv 40 padded
// to 64 for dO V^T's reduction, a softcap): Dsum a row sum of products. In
// the dK/dV loop the tiles have the keys as rows: S^T = K Q^T, P^T = exp(s -
// lse) with the lse broadcast down the columns, 0 on columns with lse =
// -inf; dP^T = V dO^T and the scores stop at the real head dims
// (fmha.k_extent); dS^T = P^T (dP^T - Dsum) (1 - (s / cap)^2), 0 where P = 0;
// dV += P^T dO fused into its accumulator with P^T in dO's element type; dK
// += scale dS^T Q through a product into 0, then the scale and the sum; the
// tiles written back as vector.transfer_write.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[AT:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-LABEL: func @bwd
// CHECK: scf.forall
// CHECK:   %[[DO:.+]] = vector.transfer_read {{.+}} : tensor<?x40xbf16>, vector<32x64xbf16>
// CHECK:   %[[O:.+]] = vector.transfer_read {{.+}} : tensor<?x40xbf16>, vector<32x64xbf16>
// CHECK:   %[[DOF:.+]] = arith.extf %[[DO]] : vector<32x64xbf16> to vector<32x64xf32>
// CHECK:   %[[OF:.+]] = arith.extf %[[O]]
// CHECK:   %[[PR:.+]] = arith.mulf %[[DOF]], %[[OF]] : vector<32x64xf32>
// CHECK:   %[[SUM:.+]] = vector.multi_reduction <add>, %[[PR]], %{{.+}} [1] : vector<32x64xf32> to vector<32xf32>
// CHECK:   vector.transfer_write %[[SUM]], %{{.+}}[%c0] : vector<32xf32>, tensor<?xf32>
// CHECK: scf.forall
// CHECK:   %[[K:.+]] = vector.transfer_read {{.+}} : tensor<?x48xbf16>, vector<16x64xbf16>
// CHECK:   %[[V:.+]] = vector.transfer_read {{.+}} : tensor<?x40xbf16>, vector<16x64xbf16>
// CHECK:   scf.for {{.+}} iter_args(%{{.+}} = %[[Z1:.+]], %{{.+}} = %[[Z2:.+]]) -> (vector<16x64xf32>, vector<16x64xf32>)
// CHECK:     scf.for {{.+}} iter_args(%[[DK:.+]] = %{{.+}}, %[[DV:.+]] = %{{.+}}) -> (vector<16x64xf32>, vector<16x64xf32>)
// CHECK:       %[[Q:.+]] = vector.transfer_read {{.+}} : tensor<?x48xbf16>, vector<32x64xbf16>
// CHECK:       %[[DOT:.+]] = vector.transfer_read {{.+}} : tensor<?x40xbf16>, vector<32x64xbf16>
// CHECK:       %[[LSE:.+]] = vector.transfer_read {{.+}} : tensor<?xf32>, vector<32xf32>
// CHECK:       %[[DSUM:.+]] = vector.transfer_read {{.+}} : tensor<?xf32>, vector<32xf32>
// CHECK:       %[[S:.+]] = scf.if
// CHECK:         vector.contract {indexing_maps = [#[[A]], #[[BT]], #[[C]]], {{.+}}} %[[K]], %[[Q]], %{{.+}} {fmha.k_extent = 48 : i64} : vector<16x64xbf16>, vector<32x64xbf16> into vector<16x32xf32>
// The mask of the transposed scores: keys down the rows, queries along the
// columns.
// CHECK:         %[[KEYS:.+]] = vector.broadcast %{{.+}} : vector<16x1xindex> to vector<16x32xindex>
// CHECK:         %[[QIDS:.+]] = vector.broadcast %{{.+}} : vector<32xindex> to vector<16x32xindex>
// CHECK:       %[[NONE:.+]] = arith.cmpf oeq, %[[LSE]], %{{.+}} : vector<32xf32>
// CHECK:       %[[LSEC:.+]] = vector.broadcast %[[LSE]] : vector<32xf32> to vector<16x32xf32>
// CHECK:       %[[SL:.+]] = arith.subf %[[S]], %[[LSEC]]
// CHECK:       %[[E:.+]] = math.exp %[[SL]]
// CHECK:       %[[NONEC:.+]] = vector.broadcast %[[NONE]] : vector<32xi1> to vector<16x32xi1>
// CHECK:       %[[P:.+]] = arith.select %[[NONEC]], %{{.+}}, %[[E]] : vector<16x32xi1>, vector<16x32xf32>
// CHECK:       %[[DP:.+]] = vector.contract {indexing_maps = [#[[A]], #[[BT]], #[[C]]], {{.+}}} %[[V]], %[[DOT]], %{{.+}} {fmha.k_extent = 40 : i64} : vector<16x64xbf16>, vector<32x64xbf16> into vector<16x32xf32>
// CHECK:       %[[DSUMC:.+]] = vector.broadcast %[[DSUM]] : vector<32xf32> to vector<16x32xf32>
// CHECK:       %[[DIFF:.+]] = arith.subf %[[DP]], %[[DSUMC]]
// CHECK:       arith.mulf %[[P]], %[[DIFF]]
// CHECK:       %[[HID:.+]] = arith.cmpf oeq, %[[P]], %{{.+}} : vector<16x32xf32>
// CHECK:       %[[DS:.+]] = arith.select %[[HID]]
// CHECK:       %[[PB:.+]] = arith.truncf %[[P]] : vector<16x32xf32> to vector<16x32xbf16>
// CHECK:       %[[NV:.+]] = vector.contract {indexing_maps = [#[[A]], #[[B]], #[[C]]], {{.+}}} %[[PB]], %[[DOT]], %[[DV]] : vector<16x32xbf16>, vector<32x64xbf16> into vector<16x64xf32>
// CHECK:       %[[DSB:.+]] = arith.truncf %[[DS]] : vector<16x32xf32> to vector<16x32xbf16>
// CHECK:       %[[PK:.+]] = vector.contract {indexing_maps = [#[[A]], #[[B]], #[[C]]], {{.+}}} %[[DSB]], %[[Q]], %{{.+}} : vector<16x32xbf16>, vector<32x64xbf16> into vector<16x64xf32>
// CHECK:       %[[SK:.+]] = arith.mulf %[[PK]], %{{.+}} : vector<16x64xf32>
// CHECK:       %[[NK:.+]] = arith.addf %[[DK]], %[[SK]] : vector<16x64xf32>
// CHECK:       scf.yield %[[NK]], %[[NV]]
// CHECK:   arith.truncf {{.+}} : vector<16x64xf32> to vector<16x64xbf16>
// CHECK:   vector.transfer_write {{.+}} : vector<16x64xbf16>, tensor<?x48xbf16>
// CHECK: scf.forall
// CHECK:   scf.for {{.+}} -> (vector<32x64xf32>)
// CHECK:     vector.contract {indexing_maps = [#[[A]], #[[B]], #[[C]]], {{.+}} : vector<32x16xbf16>, vector<16x64xbf16> into vector<32x64xf32>
// CHECK:   } {fmha.kv_loop = "window"}
// CHECK-NOT: fmha.tile_
func.func @bwd(%q: tensor<?x4x?x48xbf16>, %k: tensor<?x2x?x48xbf16>, %v: tensor<?x2x?x40xbf16>, %o: tensor<?x4x?x40xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x40xbf16>, %dq: tensor<?x4x?x48xbf16>, %dk: tensor<?x2x?x48xbf16>, %dv: tensor<?x2x?x40xbf16>) -> (tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x40xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x40xbf16>, tensor<?x4x?x40xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x40xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x40xbf16>) {deterministic, mask = #fmha.mask<"t">, softcap = 20.0 : f32} -> tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x40xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x40xbf16>
}

// Not deterministic: the Dsum loop zeroes the dQ accumulator's tile with a
// whole-tile write; the dK/dV loop's scale dS K reads dS^T (the one
// truncation dK's product takes too) transposed in place (lhs map (k, i))
// and adds into the accumulator atomically (fmha.atomic_add of the vector).
// CHECK-LABEL: func @bwd_atomic
// CHECK: %[[ACC:.+]] = memref.alloc({{.+}}) {fmha.workspace = "dq_accum"}
// CHECK: scf.forall
// CHECK:   %[[ZV:.+]] = memref.subview %[[ACC]]
// CHECK:   vector.transfer_write %{{.+}}, %[[ZV]][%{{.+}}, %{{.+}}] {in_bounds = [true, true]} : vector<32x64xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>
// CHECK: scf.forall
// CHECK:         vector.contract {indexing_maps = [#[[A]], #[[B]], #[[C]]], {{.+}} %[[DS:[^,]+]], %{{.+}}, %{{.+}} : vector<16x32xbf16>, vector<32x64xbf16> into vector<16x64xf32>
// CHECK:         %[[P:.+]] = vector.contract {indexing_maps = [#[[AT]], #[[B]], #[[C]]], {{.+}} %[[DS]], %{{.+}}, %{{.+}} : vector<16x32xbf16>, vector<16x64xbf16> into vector<32x64xf32>
// CHECK:         %[[PS:.+]] = arith.mulf %[[P]], %{{.+}} : vector<32x64xf32>
// CHECK:         %[[AV:.+]] = memref.subview %[[ACC]]
// CHECK:         fmha.atomic_add %[[PS]], %[[AV]] : vector<32x64xf32>, memref<32x64xf32, strided<[64, 1], offset: ?>>
// CHECK:       } {fmha.q_loop}
func.func @bwd_atomic(%q: tensor<?x4x?x48xbf16>, %k: tensor<?x2x?x48xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x48xbf16>, %dk: tensor<?x2x?x48xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>) {mask = #fmha.mask<"t">} -> tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x48xbf16>, tensor<?x2x?x48xbf16>, tensor<?x2x?x32xbf16>
}
