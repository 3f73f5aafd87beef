// RUN: not fmha-opt %s --fmha-tile-attention="block-m=0" 2>&1 | FileCheck %s
// RUN: not fmha-opt %s --fmha-tile-attention="block-m=x" 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not fmha-opt %s --fmha-tile-attention="block-k=3" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not fmha-opt %s --fmha-no-such-pass 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: not fmha-opt %s --fmha-tile-attention="static-tiles=1" 2>&1 | FileCheck %s --check-prefix=STATIC

// CHECK: error: 'fmha.attention' op tile sizes must be positive, got block-m=0 block-n=64
// PARSE: for the --block-m option: 'x' value invalid
// UNKNOWN: no such option block-k
// FLAG: Unknown command line argument '--fmha-no-such-pass'
// STATIC: error: 'fmha.attention' op static-tiles tiles the forward on tensors (its tiles are values); got memrefs
func.func @f(%q: memref<?x8x?x64xf32>, %o: memref<?x8x?x64xf32>) {
  fmha.attention ins(%q, %q, %q : memref<?x8x?x64xf32>, memref<?x8x?x64xf32>, memref<?x8x?x64xf32>) outs(%o : memref<?x8x?x64xf32>)
  return
}
