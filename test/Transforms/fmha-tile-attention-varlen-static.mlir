// RUN: fmha-opt %s --fmha-tile-attention="block-m=64 block-n=64 static-tiles=1" -cse | FileCheck %s --check-prefix=STATIC
// RUN: not fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a" 2>&1 | FileCheck %s --check-prefix=BUILDER
// RUN: fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a vector-tiles=1" | FileCheck %s --check-prefix=GPU
// RUN: fmha-opt %s --fmha-to-rocdl-pipeline="chip=gfx942 vector-tiles=1" | FileCheck %s --check-prefix=GPU

// A variable-length batch (cu_seqlens) with static tiles, the GPU's form.
// On tensors the offsets are read with tensor.extract and the q tile's rows
// go back into o at cu_q[n] + r0 (none when the tile is inactive).
// STATIC-LABEL: func @varlen_tensors
// STATIC: %[[CEIL:[a-z0-9_]+]] = arith.ceildivsi
// STATIC: %[[N:[a-z0-9_]+]] = arith.subi
// STATIC: %[[TILES:[a-z0-9_]+]] = arith.addi %[[CEIL]], %[[N]]
// STATIC: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]], %[[T:[a-z0-9_]+]]) in (1, 4, %[[TILES]]) shared_outs(%[[OUT:[a-z0-9_]+]] = %{{.+}})
// STATIC:   %[[SCAN:[a-z0-9_]+]]:5 = scf.for
// STATIC:     tensor.extract
// STATIC:   %[[ACTIVE:[a-z0-9_]+]] = arith.cmpi slt, %[[SCAN]]#2, %[[N]]
// STATIC:   %[[ROW0:[a-z0-9_]+]] = arith.addi %[[SCAN]]#4, %{{.+}}
// STATIC:   tensor.extract_slice %{{.+}}[%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS:[a-z0-9_]+]], 64]
// STATIC:   tensor.pad
// STATIC:   scf.forall.in_parallel
// STATIC:     tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS]], 64]
func.func @varlen_tensors(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %c: tensor<?xi32>, %d: tensor<?xi32>, %o: tensor<1x4x?x64xbf16>) -> tensor<1x4x?x64xbf16> {
  %r = fmha.attention ins(%q, %k, %k : tensor<1x4x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) cu_seqlens(%c, %d : tensor<?xi32>, tensor<?xi32>) outs(%o : tensor<1x4x?x64xbf16>) {mask = #fmha.mask<"b">} -> tensor<1x4x?x64xbf16>
  return %r : tensor<1x4x?x64xbf16>
}

// The kernel builders refuse the op; the staged pipelines take it (the
// grid from the operands' sizes).
// BUILDER: error: 'fmha.attention' op variable-length batches (cu_seqlens) are tiled by fmha-tile-attention; the GPU kernel builders do not take them
// GPU: gpu.launch_func
