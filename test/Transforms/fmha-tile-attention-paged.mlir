// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=32 static-tiles=1" -cse | FileCheck %s --check-prefix=STATIC
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=128 static-tiles=1" 2>&1 | FileCheck %s --check-prefix=FIT
// RUN: not fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a" 2>&1 | FileCheck %s --check-prefix=BUILDER
// RUN: fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a vector-tiles=1 block-n=32" | FileCheck %s --check-prefix=GPU
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 vector-tiles=1 block-n=32" | FileCheck %s --check-prefix=GPU

// A paged cache (block_table, seqlens_k): the grid is the contiguous one;
// the batch's length is read once (the mask's Sk) and each kv tile reads its
// page from the batch's table row, its keys at c0 % P of that page (the tile
// within one page: block-n divides P).
// STATIC-LABEL: func @paged_tensors
// STATIC: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %[[T:[a-z0-9_]+]]) in (%{{.+}}, 4, %{{.+}})
// STATIC:   %[[LEN:[a-z0-9_]+]] = tensor.extract %{{.+}}[%[[B]]] : tensor<?xi32>
// STATIC:   %[[SK:[a-z0-9_]+]] = arith.index_cast %[[LEN]]
// STATIC:   %[[KVH:[a-z0-9_]+]] = arith.divsi %[[H]], %{{.+}}
// STATIC:   scf.for %[[KT:[a-z0-9_]+]] =
// STATIC:     %[[C0:[a-z0-9_]+]] = arith.muli %[[KT]], %c32
// STATIC:     %[[COLS:[a-z0-9_]+]] = arith.minsi %{{.+}}, %c32
// STATIC:     %[[J:[a-z0-9_]+]] = arith.divsi %[[C0]], %c64
// STATIC:     %[[ENTRY:[a-z0-9_]+]] = tensor.extract %{{.+}}[%[[B]], %[[J]]] : tensor<?x?xi32>
// STATIC:     %[[PAGE:[a-z0-9_]+]] = arith.index_cast %[[ENTRY]]
// STATIC:     %[[OFF:[a-z0-9_]+]] = arith.remsi %[[C0]], %c64
// STATIC:     tensor.extract_slice %{{.+}}[%[[PAGE]], %[[KVH]], %[[OFF]], 0] [1, 1, %[[COLS]], 64] {{.+}} : tensor<?x2x64x64xbf16> to tensor<?x64xbf16>
// STATIC:     tensor.pad
// STATIC:     fmha.tile_qk {{.+}} masked[%{{.+}}, %[[C0]], %{{.+}}, %[[SK]]]
func.func @paged_tensors(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x64x64xbf16>, %t: tensor<?x?xi32>, %n: tensor<?xi32>, %o: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %r = fmha.attention ins(%q, %k, %k : tensor<?x4x?x64xbf16>, tensor<?x2x64x64xbf16>, tensor<?x2x64x64xbf16>) paged(%t, %n : tensor<?x?xi32>, tensor<?xi32>) outs(%o : tensor<?x4x?x64xbf16>) {mask = #fmha.mask<"b">} -> tensor<?x4x?x64xbf16>
  return %r : tensor<?x4x?x64xbf16>
}

// FIT: error: 'fmha.attention' op the page size of a paged cache (64) must be a multiple of block-n (128): a kv tile lies within one page

// The kernel builders refuse the op; the staged pipelines take it.
// BUILDER: error: 'fmha.attention' op a paged K/V cache (block_table) is tiled by fmha-tile-attention; the GPU kernel builders do not take it
// GPU: gpu.launch_func
