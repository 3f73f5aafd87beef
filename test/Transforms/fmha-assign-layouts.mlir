// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" -cse -split-input-file | FileCheck %s
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" --fmha-assign-layouts="mma=mfma16 warps=4" -cse -split-input-file | FileCheck %s --check-prefix=MFMA

// mma.sync m16n8k16 over 4 warps, a 64-row q tile (16 rows a warp), 64 keys,
// D = 128, Dv = 64. The scores, the accumulator and o: C fragments (lanes
// t = lane % 4 along columns 2t, g = lane / 4 along rows, warps along
// rows); m and l: C's row slice (the four lanes of a row hold it); q: A
// fragments, converted once per q tile; k: the transposed B of S and v the B
// of O, every warp the whole tile (zero warp bases), converted per kv tile.
// mma.sync's C of S is its A of PV: p goes from tile_softmax to tile_pv
// as it is. o and lse leave registers before they are sliced into the
// shared outs.
// CHECK-DAG: #[[C:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[ROW:layout[0-9]*]] = #fmha.layout<64x1, register = {{\[\[8, 0\]\]}}, lane = {{\[\[0, 0\], \[0, 0\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[QA:layout[0-9]*]] = #fmha.layout<64x128, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\], \[0, 64\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[KB:layout[0-9]*]] = #fmha.layout<64x128, register = {{\[\[0, 1\], \[0, 8\], \[8, 0\], \[16, 0\], \[32, 0\], \[0, 16\], \[0, 32\], \[0, 64\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// CHECK-DAG: #[[VB:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\], \[16, 0\], \[32, 0\]\]}}, lane = {{\[\[2, 0\], \[4, 0\], \[0, 1\], \[0, 2\], \[0, 4\]\]}}, warp = {{\[\[0, 0\], \[0, 0\]\]}}>
// CHECK-LABEL: func @causal
// CHECK: scf.forall
// CHECK:   %[[QP:.+]] = tensor.pad
// CHECK:   %[[Q:.+]] = fmha.convert_layout %[[QP]] : tensor<64x128xf16> -> tensor<64x128xf16, #[[QA]]>
// CHECK-DAG: %[[OE:.+]] = tensor.empty() : tensor<64x64xf16, #[[C]]>
// CHECK-DAG: %[[RE:.+]] = tensor.empty() : tensor<64xf32, #[[ROW]]>
// CHECK-DAG: %[[CE:.+]] = tensor.empty() : tensor<64x64xf32, #[[C]]>
// CHECK:   %[[INIT:.+]]:3 = fmha.tile_init %[[RE]], %[[RE]], %[[CE]] : tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]> -> tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]>
// CHECK:   %[[LOOP:.+]]:3 = scf.for {{.+}} iter_args(%[[M:[^ ]+]] = %[[INIT]]#0, %[[L:[^ ]+]] = %[[INIT]]#1, %[[ACC:[^ ]+]] = %[[INIT]]#2) -> (tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]>)
// CHECK:     %[[KP:.+]] = tensor.pad
// CHECK:     %[[K:.+]] = fmha.convert_layout %[[KP]] : tensor<64x128xf16> -> tensor<64x128xf16, #[[KB]]>
// CHECK:     %[[VP:.+]] = tensor.pad
// CHECK:     %[[V:.+]] = fmha.convert_layout %[[VP]] : tensor<64x64xf16> -> tensor<64x64xf16, #[[VB]]>
// CHECK:     %[[S:.+]] = scf.if %{{.+}} -> (tensor<64x64xf32, #[[C]]>) {
// CHECK:       %[[S1:.+]] = fmha.tile_qk %[[Q]], %[[K]] into %[[CE]] {{.+}} : tensor<64x128xf16, #[[QA]]>, tensor<64x128xf16, #[[KB]]>, tensor<64x64xf32, #[[C]]> -> tensor<64x64xf32, #[[C]]>
// CHECK:       scf.yield %[[S1]] : tensor<64x64xf32, #[[C]]>
// CHECK:     } else {
// CHECK:       fmha.tile_qk %[[Q]], %[[K]] into %[[CE]] masked
// CHECK:     }
// CHECK:     %[[SM:.+]]:4 = fmha.tile_softmax %[[S]], %[[M]], %[[L]], %[[ACC]] : tensor<64x64xf32, #[[C]]>, tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]> ->
// CHECK-NOT: convert_layout
// CHECK:     %[[PV:.+]] = fmha.tile_pv %[[SM]]#0, %[[V]] into %[[SM]]#3 : tensor<64x64xf32, #[[C]]>, tensor<64x64xf16, #[[VB]]>, tensor<64x64xf32, #[[C]]> -> tensor<64x64xf32, #[[C]]>
// CHECK:     scf.yield %[[SM]]#1, %[[SM]]#2, %[[PV]] : tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]>
// CHECK:   %[[FIN:.+]]:2 = fmha.tile_finalize %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2 into %[[OE]], %[[RE]] : {{.+}} -> tensor<64x64xf16, #[[C]]>, tensor<64xf32, #[[ROW]]>
// CHECK-DAG: %[[OUT:.+]] = fmha.convert_layout %[[FIN]]#0 : tensor<64x64xf16, #[[C]]> -> tensor<64x64xf16>
// CHECK-DAG: %[[LSE:.+]] = fmha.convert_layout %[[FIN]]#1 : tensor<64xf32, #[[ROW]]> -> tensor<64xf32>
// CHECK-DAG: tensor.extract_slice %[[OUT]][0, 0]
// CHECK-DAG: tensor.extract_slice %[[LSE]][0]

// AMD's MFMA 16x16x16 over 4 wavefronts: C holds a column of four rows per
// lane (rows along registers, columns along lanes), A a row of four
// columns: p is converted between the two products.
// MFMA-DAG: #[[C:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[1, 0\], \[2, 0\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], \[4, 0\], \[8, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// MFMA-DAG: #[[A:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[0, 2\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[1, 0\], \[2, 0\], \[4, 0\], \[8, 0\], \[0, 4\], \[0, 8\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// MFMA-DAG: #[[ROW:layout[0-9]*]] = #fmha.layout<64x1, register = {{\[\[1, 0\], \[2, 0\]\]}}, lane = {{\[\[0, 0\], \[0, 0\], \[0, 0\], \[0, 0\], \[4, 0\], \[8, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// MFMA-LABEL: func @causal
// MFMA: %[[SM:.+]]:4 = fmha.tile_softmax {{.+}} : tensor<64x64xf32, #[[C]]>, tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]> ->
// MFMA: %[[P:.+]] = fmha.convert_layout %[[SM]]#0 : tensor<64x64xf32, #[[C]]> -> tensor<64x64xf32, #[[A]]>
// MFMA: fmha.tile_pv %[[P]], %{{.+}} into %[[SM]]#3 : tensor<64x64xf32, #[[A]]>
func.func @causal(%q: tensor<1x4x?x128xf16>, %k: tensor<1x2x?x128xf16>, %v: tensor<1x2x?x64xf16>, %o: tensor<1x4x?x64xf16>, %l: tensor<1x4x?xf32>) -> (tensor<1x4x?x64xf16>, tensor<1x4x?xf32>) {
  %0:2 = fmha.attention ins(%q, %k, %v : tensor<1x4x?x128xf16>, tensor<1x2x?x128xf16>, tensor<1x2x?x64xf16>) outs(%o : tensor<1x4x?x64xf16>, %l : tensor<1x4x?xf32>) {mask = #fmha.mask<"b">} -> tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return %0#0, %0#1 : tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
}

// -----

// Two kv loops (sink tiles, then the window) carry the typed state one
// after the other; one operand used as both K and V is converted into both
// layouts.
// CHECK-LABEL: func @sink_window
// CHECK: %[[INIT:.+]]:3 = fmha.tile_init
// CHECK: %[[SINK:.+]]:3 = scf.for {{.+}} iter_args({{.+}} = %[[INIT]]#0, {{.+}} = %[[INIT]]#1, {{.+}} = %[[INIT]]#2) -> (tensor<64xf32, #[[ROW:.+]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C:.+]]>)
// CHECK:   %[[KV:.+]] = tensor.pad
// CHECK-DAG: fmha.convert_layout %[[KV]] : tensor<64x64xbf16> -> tensor<64x64xbf16, #[[KB:.+]]>
// CHECK-DAG: fmha.convert_layout %[[KV]] : tensor<64x64xbf16> -> tensor<64x64xbf16, #[[VB:.+]]>
// CHECK: } {fmha.kv_loop = "sink"}
// CHECK: %[[WIN:.+]]:3 = scf.for {{.+}} iter_args({{.+}} = %[[SINK]]#0, {{.+}} = %[[SINK]]#1, {{.+}} = %[[SINK]]#2) -> (tensor<64xf32, #[[ROW]]>, tensor<64xf32, #[[ROW]]>, tensor<64x64xf32, #[[C]]>)
// CHECK: } {fmha.kv_loop = "window"}
// CHECK: fmha.tile_finalize %[[WIN]]#0, %[[WIN]]#1, %[[WIN]]#2
func.func @sink_window(%q: tensor<2x8x?x64xbf16>, %k: tensor<2x2x?x64xbf16>, %o: tensor<2x8x?x64xbf16>) -> tensor<2x8x?x64xbf16> {
  %0 = fmha.attention ins(%q, %k, %k : tensor<2x8x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>) outs(%o : tensor<2x8x?x64xbf16>) {mask = #fmha.mask<"b:256,0,4">} -> tensor<2x8x?x64xbf16>
  return %0 : tensor<2x8x?x64xbf16>
}
