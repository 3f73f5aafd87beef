// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=32 static-tiles=1" -cse | FileCheck %s --check-prefix=STATIC
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=128 static-tiles=1" -cse | FileCheck %s --check-prefix=PAGES
// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=128 static-tiles=1" --fmha-assign-layouts="mma=mma.sync warps=4" --fmha-vectorize-tiles -cse | FileCheck %s --check-prefix=VPAGES
// RUN: fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a vector-tiles=1 block-n=128" | FileCheck %s --check-prefix=GPU
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 vector-tiles=1 block-n=128" | FileCheck %s --check-prefix=GPU
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=128" 2>&1 | FileCheck %s --check-prefix=FIT
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=64 block-n=96 static-tiles=1" 2>&1 | FileCheck %s --check-prefix=FITS
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

// Of static tiles, a kv tile may span whole pages: the concatenation of a
// padded slice of each page, the page of entry min(c0 / P + j, (Sk - 1) / P)
// (a slice past the length is empty and its entry the last page's: no entry
// past the length is read), its keys min(max(cols - j P, 0), P).
// PAGES-LABEL: func @paged_tensors
// PAGES:   %[[SK:[a-z0-9_]+]] = arith.index_cast %{{.+}} : i32 to index
// PAGES:   %[[SK1:[a-z0-9_]+]] = arith.subi %[[SK]], %c1
// PAGES:   scf.for %[[KT:[a-z0-9_]+]] =
// PAGES:     %[[C0:[a-z0-9_]+]] = arith.muli %[[KT]], %c128
// PAGES:     %[[COLS:[a-z0-9_]+]] = arith.minsi %{{.+}}, %c128
// PAGES:     %[[FIRST:[a-z0-9_]+]] = arith.divsi %[[C0]], %c64
// PAGES:     %[[LAST:[a-z0-9_]+]] = arith.divsi %[[SK1]], %c64
// PAGES:     %[[E0:[a-z0-9_]+]] = arith.minsi %[[FIRST]], %[[LAST]]
// PAGES:     %[[T0:[a-z0-9_]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[E0]]] : tensor<?x?xi32>
// PAGES:     %[[P0:[a-z0-9_]+]] = arith.index_cast %[[T0]]
// PAGES:     %[[M0:[a-z0-9_]+]] = arith.minsi %[[COLS]], %c64
// PAGES:     %[[K0:[a-z0-9_]+]] = arith.maxsi %[[M0]], %c0
// PAGES:     tensor.extract_slice %{{.+}}[%[[P0]], %{{.+}}, 0, 0] [1, 1, %[[K0]], 64] {{.+}} : tensor<?x2x64x64xbf16> to tensor<?x64xbf16>
// PAGES:     %[[PAD0:[a-z0-9_]+]] = tensor.pad
// PAGES:     %[[NEXT:[a-z0-9_]+]] = arith.addi %[[FIRST]], %c1
// PAGES:     %[[E1:[a-z0-9_]+]] = arith.minsi %[[NEXT]], %[[LAST]]
// PAGES:     %[[T1:[a-z0-9_]+]] = tensor.extract %{{.+}}[%{{.+}}, %[[E1]]] : tensor<?x?xi32>
// PAGES:     %[[P1:[a-z0-9_]+]] = arith.index_cast %[[T1]]
// PAGES:     %[[REST:[a-z0-9_]+]] = arith.subi %[[COLS]], %c64
// PAGES:     %[[M1:[a-z0-9_]+]] = arith.minsi %[[REST]], %c64
// PAGES:     %[[K1:[a-z0-9_]+]] = arith.maxsi %[[M1]], %c0
// PAGES:     tensor.extract_slice %{{.+}}[%[[P1]], %{{.+}}, 0, 0] [1, 1, %[[K1]], 64]
// PAGES:     %[[PAD1:[a-z0-9_]+]] = tensor.pad
// PAGES:     %[[KTILE:[a-z0-9_]+]] = tensor.concat dim(0) %[[PAD0]], %[[PAD1]] : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<128x64xbf16>
// PAGES:     fmha.tile_qk %{{.+}}, %[[KTILE]]

// Vectorized, each page's slice is a read (rows past its keys zero)
// inserted at its rows into a tile of zeros, anchored where the products
// take it.
// VPAGES-LABEL: func @paged_tensors
// VPAGES:   scf.for %
// VPAGES:     %[[R0:[a-z0-9_]+]] = vector.transfer_read %{{.+}} {in_bounds = [false, true]} : tensor<?x64xbf16>, vector<64x64xbf16>
// VPAGES:     %[[R1:[a-z0-9_]+]] = vector.transfer_read %{{.+}} {in_bounds = [false, true]} : tensor<?x64xbf16>, vector<64x64xbf16>
// VPAGES:     %[[I0:[a-z0-9_]+]] = vector.insert_strided_slice %[[R0]], %{{.+}} {offsets = [0, 0], strides = [1, 1]} : vector<64x64xbf16> into vector<128x64xbf16>
// VPAGES:     %[[I1:[a-z0-9_]+]] = vector.insert_strided_slice %[[R1]], %[[I0]] {offsets = [64, 0], strides = [1, 1]} : vector<64x64xbf16> into vector<128x64xbf16>
// VPAGES:     fmha.to_layout %[[I1]] to layout

// FIT: error: 'fmha.attention' op the page size of a paged cache (64) must be a multiple of block-n (128): a kv tile lies within one page (static tiles may span whole pages)
// FITS: error: 'fmha.attention' op the page size of a paged cache (64) must be a multiple of block-n (96): a kv tile lies within one page or, of static tiles, spans whole pages

// The kernel builders refuse the op; the staged pipelines take it.
// BUILDER: error: 'fmha.attention' op a paged K/V cache (block_table) is tiled by fmha-tile-attention; the GPU kernel builders do not take it
// GPU: gpu.launch_func
