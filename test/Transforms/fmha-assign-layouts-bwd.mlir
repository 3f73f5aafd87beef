// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mfma16 warps=4" -cse | FileCheck %s --check-prefix=MFMA
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" --fmha-vectorize-tiles -cse | FileCheck %s --check-prefix=VEC
// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=8 warp-rows=16" -cse | FileCheck %s --check-prefix=ROWS
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warp-rows=48" 2>&1 | FileCheck %s --check-prefix=ROWSERR

// The backward's static tiles in mma.sync fragments over 4 warps (64 x 64
// tiles, D 64, Dv 32, causal). The dK/dV loop's tiles have the keys as rows
// (the rows the warps split): k and v are the A operands of S^T = K Q^T and
// dP^T = V dO^T, q and dO their transposed B operands; P^T and dS^T are C
// tiles and, C being A on mma.sync, the A operands of dV += P^T dO and dK +=
// dS^T Q as they are; q and dO enter those products as B. The lse and Dsum,
// one value per query, run along the columns: the column slice of C (lanes
// t = lane % 4 along columns 2t, every lane group and every warp a replica).
// CHECK-DAG: #[[C:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[C32:layout[0-9]*]] = #fmha.layout<64x32, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[COL:layout[0-9]*]] = #fmha.layout<1x64, register = {{\[\[0, 1\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[0, 0\], \[0, 0\], \[0, 0\]\]}}, warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// CHECK-DAG: #[[ROW:layout[0-9]*]] = #fmha.layout<64x1, register = {{\[\[8, 0\]\]}}, lane = {{\[\[0, 0\], \[0, 0\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[BT:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[0, 8\], \[8, 0\], \[16, 0\], \[32, 0\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// CHECK-DAG: #[[B:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[2, 0\], \[4, 0\], \[0, 1\], \[0, 2\], \[0, 4\]\]}}, warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// CHECK-LABEL: func @bwd
// Dsum: dO and o as C tiles, the row sum in the row slice.
// CHECK: scf.forall
// CHECK:   fmha.tile_row_dot %{{.+}}, %{{.+}} into %{{.+}} : tensor<64x32xbf16, #[[C32]]>, tensor<64x32xbf16, #[[C32]]>, tensor<64xf32, #[[ROW]]>
// CHECK: scf.forall
// CHECK:   %[[K:.+]] = fmha.convert_layout %{{.+}} : tensor<64x64xbf16> -> tensor<64x64xbf16, #[[C]]>
// CHECK:   %[[V:.+]] = fmha.convert_layout %{{.+}} : tensor<64x32xbf16> -> tensor<64x32xbf16, #[[C32]]>
// CHECK:   scf.for
// CHECK:     scf.for {{.+}} -> (tensor<64x64xf32, #[[C]]>, tensor<64x32xf32, #[[C32]]>)
// CHECK-DAG:   %[[QB:.+]] = fmha.convert_layout %[[QP:.+]] : tensor<64x64xbf16> -> tensor<64x64xbf16, #[[B]]>
// CHECK-DAG:   %[[QBT:.+]] = fmha.convert_layout %[[QP]] : tensor<64x64xbf16> -> tensor<64x64xbf16, #[[BT]]>
// CHECK-DAG:   %[[LSE:.+]] = fmha.convert_layout %{{.+}} : tensor<64xf32> -> tensor<64xf32, #[[COL]]>
// CHECK:       %[[S:.+]] = scf.if
// CHECK:         fmha.tile_qk %[[QBT]], %[[K]] into %{{.+}} transposed {{.+}} : tensor<64x64xbf16, #[[BT]]>, tensor<64x64xbf16, #[[C]]>, tensor<64x64xf32, #[[C]]>
// CHECK:       %[[P:.+]] = fmha.tile_bwd_probs %[[S]], %[[LSE]] into %{{.+}} transposed : tensor<64x64xf32, #[[C]]>, tensor<64xf32, #[[COL]]>, tensor<64x64xf32, #[[C]]>
// CHECK:       %[[DP:.+]] = fmha.tile_matmul %[[V]], %{{.+}} into %{{.+}} {alpha = 1.000000e+00 : f32, transpose_b} : tensor<64x32xbf16, #[[C32]]>
// CHECK:       %[[DS:.+]] = fmha.tile_bwd_ds %[[P]], %{{.+}} into %[[DP]] transposed : tensor<64x64xf32, #[[C]]>, tensor<64xf32, #[[COL]]>
// CHECK:       fmha.tile_matmul %[[P]], %{{.+}} into %{{.+}} {accumulate, alpha = 1.000000e+00 : f32} : tensor<64x64xf32, #[[C]]>
// CHECK:       fmha.tile_matmul %[[DS]], %[[QB]] into %{{.+}} {accumulate, alpha = 1.250000e-01 : f32} : tensor<64x64xf32, #[[C]]>, tensor<64x64xbf16, #[[B]]>
// CHECK:     } {fmha.q_loop}
// dQ: the forward's forms (dS the A operand of dS K, the lse in the row slice).
// CHECK: scf.forall
// CHECK:   fmha.tile_bwd_probs %{{.+}}, %{{.+}} into %{{.+}} : tensor<64x64xf32, #[[C]]>, tensor<64xf32, #[[ROW]]>
// CHECK:   fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {accumulate, alpha = 1.250000e-01 : f32} : tensor<64x64xf32, #[[C]]>, tensor<64x64xbf16, #[[B]]>, tensor<64x64xf32, #[[C]]>

// On MFMA 16x16x16 the column slice of C: lanes along the 16 columns, the
// lane groups along rows and the warps replicas.
// MFMA-DAG: #[[MCOL:layout[0-9]*]] = #fmha.layout<1x64, {{.+}}warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// MFMA: fmha.tile_bwd_probs {{.+}} transposed : tensor<64x64xf32, #{{.+}}>, tensor<64xf32, #[[MCOL]]>

// The vectors keep the layouts as anchors: the lse broadcast down the
// columns of S^T.
// VEC-DAG: #[[VCOL:layout[0-9]*]] = #fmha.layout<1x64, {{.+}}>
// VEC: %[[L:.+]] = fmha.to_layout %{{.+}} to layout(#[[VCOL]]) : vector<64xf32>
// VEC: vector.broadcast %[[L]] : vector<64xf32> to vector<64x64xf32>
// warp-rows: each loop of tiles takes a warp each 16 of its rows (the
// tiling says them, `fmha.loop_rows`), whatever `warps` says: the Dsum and
// dQ loops' 32 query rows two warps, the dK/dV loop's 64 key rows four.
// ROWS-DAG: #[[C2:layout[0-9]*]] = #fmha.layout<32x32, {{.+}}warp = {{\[\[16, 0\]\]}}>
// ROWS-DAG: #[[C4:layout[0-9]*]] = #fmha.layout<64x32, {{.+}}warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// ROWS-DAG: #[[COL4:layout[0-9]*]] = #fmha.layout<1x32, {{.+}}warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// ROWS: fmha.tile_row_dot {{.+}} : tensor<32x32xbf16, #[[C2]]>
// ROWS: } {fmha.loop_rows = 32 : i64}
// ROWS: fmha.tile_bwd_probs {{.+}} transposed : tensor<64x32xf32, #[[C4]]>, tensor<32xf32, #[[COL4]]>
// ROWS: } {fmha.loop_rows = 64 : i64}
// ROWS: fmha.tile_matmul {{.+}} : tensor<32x64xf32, #{{.+}}>, tensor<64x64xbf16, #{{.+}}>, tensor<32x64xf32, #{{.+}}>
// ROWS: } {fmha.loop_rows = 32 : i64}
// ROWSERR: error: 'fmha.tile_row_dot' op is in a loop of tiles of 32 rows, which warp-rows=48 does not divide into warps
func.func @bwd(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x64xbf16>, %dk: tensor<?x2x?x64xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {deterministic, mask = #fmha.mask<"t">} -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
}
