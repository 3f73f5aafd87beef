// RUN: fmha-opt %s --split-input-file --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1 backward-on-tensors=1" --fmha-assign-layouts="mma=mma.sync warps=4 warp-rows=16" --fmha-register-order-workspace -cse | FileCheck %s
// RUN: fmha-opt %s --split-input-file --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1 backward-on-tensors=1" --fmha-assign-layouts="mma=mma.sync warps=4 warp-rows=16" --fmha-register-order-workspace --fmha-vectorize-tiles -cse | FileCheck %s --check-prefix=VEC

// The backward with atomic dQ over wgmma's warpgroup (4 warps, 16 rows
// each): the dK/dV loop's dQ part (64 queries x 64, in the C layout: 32
// registers a lane) is added, without its conversion to the line layout,
// into its tile of the workspace, now allocated as [B, Hq, q tiles, 32 x 4,
// 32] (the same bytes) in the C layout's register order (row w 32 + r,
// column lane); the dQ loop reads each packed tile in the layout that
// unpacks into the C layout it rounds from (here the register order itself:
// its threads are the adds'). The Dsum loop zeroes each packed tile from
// its zeros' layout.
// CHECK-DAG: #[[C:layout[0-9]*]] = #fmha.layout<64x64, register = {{\[\[0, 1\], \[8, 0\], \[0, 8\], \[0, 16\], \[0, 32\]\]}}, lane = {{\[\[0, 2\], \[0, 4\], \[1, 0\], \[2, 0\], \[4, 0\]\]}}, warp = {{\[\[16, 0\], \[32, 0\]\]}}>
// CHECK-DAG: #[[P:layout[0-9]*]] = #fmha.layout<128x32, register = {{\[\[1, 0\], \[2, 0\], \[4, 0\], \[8, 0\], \[16, 0\]\]}}, lane = {{\[\[0, 1\], \[0, 2\], \[0, 4\], \[0, 8\], \[0, 16\]\]}}, warp = {{\[\[32, 0\], \[64, 0\]\]}}>
// CHECK-LABEL: func @bwd_atomic
// CHECK: %[[ALLOC:.+]] = memref.alloc(%{{.+}}, %[[QT:.+]]) {fmha.workspace = "dq_accum"} : memref<?x4x?x128x32xf32>
// CHECK-NOT: memref<?x4x?x64xf32>
// CHECK: scf.forall (%[[B0:.+]], %[[H0:.+]], %[[T0:.+]]) in
// CHECK:   %[[Z:.+]] = memref.subview %[[ALLOC]][%[[B0]], %[[H0]], %[[T0]], 0, 0] [1, 1, 1, 128, 32] [1, 1, 1, 1, 1] : memref<?x4x?x128x32xf32> to memref<128x32xf32, strided<[32, 1], offset: ?>>
// CHECK:   %[[ZP:.+]] = fmha.pack_tile %{{.+}} {order = #[[C]]} : tensor<64x64xf32, #[[C]]> -> tensor<128x32xf32, #[[P]]>
// CHECK:   fmha.tile_store %[[ZP]] into %[[Z]] : tensor<128x32xf32, #[[P]]>, memref<128x32xf32, strided<[32, 1], offset: ?>>
// CHECK: scf.forall
// CHECK:       scf.for %[[QI:[^ ]+]] = %{{[0-9]+}} to %{{[0-9]+}} step
// CHECK:       %[[DQP:.+]] = fmha.tile_matmul {{.+}} transpose_a} {{.+}} -> tensor<64x64xf32, #[[C]]>
// CHECK-NOT:   fmha.convert_layout %[[DQP]]
// CHECK:       %[[VIEW:.+]] = memref.subview %[[ALLOC]][%{{.+}}, %{{.+}}, %[[QI]], 0, 0] [1, 1, 1, 128, 32] [1, 1, 1, 1, 1] : memref<?x4x?x128x32xf32> to memref<128x32xf32, strided<[32, 1], offset: ?>>
// CHECK:       %[[PT:.+]] = fmha.pack_tile %[[DQP]] {order = #[[C]]} : tensor<64x64xf32, #[[C]]> -> tensor<128x32xf32, #[[P]]>
// CHECK:       fmha.atomic_add %[[PT]], %[[VIEW]] : tensor<128x32xf32, #[[P]]>, memref<128x32xf32, strided<[32, 1], offset: ?>>
// CHECK: %[[VALUES:.+]] = bufferization.to_tensor %[[ALLOC]] restrict : memref<?x4x?x128x32xf32> to tensor<?x4x?x128x32xf32>
// CHECK: scf.forall (%[[B1:.+]], %[[H1:.+]], %[[T1:.+]]) in
// CHECK:   %[[SLICE:.+]] = tensor.extract_slice %[[VALUES]][%[[B1]], %[[H1]], %[[T1]], 0, 0] [1, 1, 1, 128, 32] [1, 1, 1, 1, 1] : tensor<?x4x?x128x32xf32> to tensor<128x32xf32>
// CHECK:   %[[HELD:.+]] = fmha.convert_layout %[[SLICE]] : tensor<128x32xf32> -> tensor<128x32xf32, #[[P]]>
// CHECK:   %[[DQ:.+]] = fmha.unpack_tile %[[HELD]] {order = #[[C]]} : tensor<128x32xf32, #[[P]]> -> tensor<64x64xf32, #[[C]]>
// CHECK:   fmha.tile_store %[[DQ]] into
// CHECK: memref.dealloc %[[ALLOC]] : memref<?x4x?x128x32xf32>

// Vectorized: the same ops on the vectors, anchored in their layouts.
// VEC-LABEL: func @bwd_atomic
// VEC: %[[Z:.+]] = fmha.pack_tile %{{.+}} {order = #{{.+}}} : vector<64x64xf32> -> vector<128x32xf32>
// VEC: %[[ZA:.+]] = fmha.to_layout %[[Z]] to layout(#{{.+}}) : vector<128x32xf32>
// VEC: vector.transfer_write %[[ZA]], %{{.+}} : vector<128x32xf32>, memref<128x32xf32, strided<[32, 1], offset: ?>>
// VEC: %[[V:.+]] = fmha.pack_tile %{{.+}} {order = #{{.+}}} : vector<64x64xf32> -> vector<128x32xf32>
// VEC: %[[A:.+]] = fmha.to_layout %[[V]] to layout(#{{.+}}) : vector<128x32xf32>
// VEC: fmha.atomic_add %[[A]], %{{.+}} : vector<128x32xf32>, memref<128x32xf32, strided<[32, 1], offset: ?>>
// VEC: %[[R:.+]] = vector.transfer_read %{{.+}} : tensor<?x4x?x128x32xf32>, vector<128x32xf32>
// VEC: %[[RA:.+]] = fmha.to_layout %[[R]] to layout(#{{.+}}) : vector<128x32xf32>
// VEC: %[[U:.+]] = fmha.unpack_tile %[[RA]] {order = #{{.+}}} : vector<128x32xf32> -> vector<64x64xf32>
// VEC: fmha.to_layout %[[U]] to layout(#{{.+}}) : vector<64x64xf32>
func.func @bwd_atomic(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x64xbf16>, %dk: tensor<?x2x?x64xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {mask = #fmha.mask<"t">} -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
}

// -----

// The deterministic backward has no workspace: nothing changes.
// CHECK-LABEL: func @bwd_deterministic
// CHECK-NOT: fmha.pack_tile
// CHECK-NOT: fmha.unpack_tile
// CHECK-NOT: memref.expand_shape
// CHECK: return
func.func @bwd_deterministic(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x32xbf16>, %o: tensor<?x4x?x32xbf16>, %lse: tensor<?x4x?xf32>, %do: tensor<?x4x?x32xbf16>, %dq: tensor<?x4x?x64xbf16>, %dk: tensor<?x2x?x64xbf16>, %dv: tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {
  %r:3 = fmha.attention_bwd ins(%q, %k, %v, %o, %lse, %do : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>, tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>, tensor<?x4x?x32xbf16>) outs(%dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>) {mask = #fmha.mask<"t">, deterministic} -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x32xbf16>
}
