// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" -cse | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mfma16 warps=4" -cse | FileCheck %s --check-prefix=MFMA
// RUN: fmha-opt %s --fmha-tile-attention="block-m=32 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=8 warp-rows=16" -cse | FileCheck %s --check-prefix=ROWS

// The backward with atomic dQ (not deterministic) in mma.sync fragments over
// 4 warps: the dK/dV loop's dS^T is a C tile with the keys across the warps;
// scale dS K reads it transposed, so the tile converts to the transpose of
// A's layout (the queries across the warps: warp bases along the columns);
// the product's C tile (queries x head dim) converts to the line layout
// (lanes on consecutive columns of a row) before its atomic add, so that
// each add of a warp goes to 32 consecutive floats. The Dsum loop zeroes
// the accumulator's tile from a C tile.
// CHECK-DAG: #[[C:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[AT:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[0, 8\], \[8, 0\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[2, 0\], \[4, 0\], \[0, 1\], \[0, 2\], \[0, 4\]\]}}, warp = {{\[\[0, 16\], \[0, 32\]\]}}>
// CHECK-DAG: #[[LINE:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[2, 0\], \[4, 0\], \[8, 0\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], \[0, 16\]\]}}, warp = {{\[\[0, 32\], \[1, 0\]\]}}>
// CHECK-DAG: #[[B:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[2, 0\], \[4, 0\], \[0, 1\], \[0, 2\], \[0, 4\]\]}}, warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// CHECK-LABEL: func @bwd_atomic
// CHECK: scf.forall
// CHECK:   fmha.tile_store %{{.+}} into %{{.+}} : tensor<64x64xf32, #[[C]]>, memref<64x64xf32, strided<[64, 1], offset: ?>>
// CHECK: scf.forall
// CHECK:       %[[DST:.+]] = fmha.tile_bwd_ds {{.+}} -> tensor<64x64xf32, #[[C]]>
// CHECK:       %[[DSA:.+]] = fmha.convert_layout %[[DST]] : tensor<64x64xf32, #[[C]]> -> tensor<64x64xf32, #[[AT]]>
// CHECK:       %[[P:.+]] = fmha.tile_matmul %[[DSA]], %{{.+}} into %{{.+}} {alpha = 1.250000e-01 : f32, transpose_a} : tensor<64x64xf32, #[[AT]]>, tensor<64x64xbf16, #[[B]]>, tensor<64x64xf32, #[[C]]> -> tensor<64x64xf32, #[[C]]>
// CHECK:       %[[PL:.+]] = fmha.convert_layout %[[P]] : tensor<64x64xf32, #[[C]]> -> tensor<64x64xf32, #[[LINE]]>
// CHECK:       fmha.atomic_add %[[PL]], %{{.+}} : tensor<64x64xf32, #[[LINE]]>, memref<64x64xf32, strided<[64, 1], offset: ?>>

// MFMA 16: the same roles in its fragments (lanes along the columns of C,
// the transpose of A's with the warps along the columns).
// MFMA-DAG: #[[MLINE:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[4, 0\], \[8, 0\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, warp = {{\[\[1, 0\], \[2, 0\]\]}}>
// MFMA-DAG: #[[MC:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[2, 0\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], \[4, 0\], \[8, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// MFMA-DAG: #[[MAT:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[2, 0\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], \[4, 0\], \[8, 0\]\]}}, warp = {{\[\[0, 16\], \[0, 32\]\]}}>
// MFMA-LABEL: func @bwd_atomic
// MFMA: fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {alpha = 1.250000e-01 : f32, transpose_a} : tensor<64x64xf32, #[[MAT]]>, {{.+}} -> tensor<64x64xf32, #[[MC]]>
// MFMA: fmha.atomic_add %{{.+}}, %{{.+}} : tensor<64x64xf32, #[[MLINE]]>

// With a warp each 16 rows of each loop and block-m < block-n, the dK/dV
// loop's 4 warps have more rows of fragments than the dQ product's 32
// queries: its first two warps split the rows, the pairs of them the
// columns of C (each 32 of the 64), and A (dS^T read transposed) is whole
// in each pair.
// ROWS-DAG: #[[RC:layout[0-9]*]] = #fmha.layout<32x64, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[0, 32\]\]}}>
// ROWS-DAG: #[[RAT:layout[0-9]*]] = #fmha.layout<64x32, register = {{\[\[1, 0\], \[0, 8\], \[8, 0\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[2, 0\], \[4, 0\], \[0, 1\], \[0, 2\], \[0, 4\]\]}}, warp = {{\[\[0, 16\], \[0, 0\]\]}}>
// ROWS-LABEL: func @bwd_atomic
// ROWS: fmha.tile_fill %{{.+}}, 0.000000e+00 : tensor<32x64xf32, #[[RC]]>
// ROWS-NEXT: fmha.tile_matmul %{{.+}}, %{{.+}} into %{{.+}} {alpha = 1.250000e-01 : f32, transpose_a} : tensor<64x32xf32, #[[RAT]]>, tensor<64x64xbf16, #{{.+}}>, tensor<32x64xf32, #[[RC]]> -> tensor<32x64xf32, #[[RC]]>
func.func @bwd_atomic(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x64xbf16>, %dk: tensor<?x2x?x64xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {mask = #fmha.mask<"t">} -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
}
