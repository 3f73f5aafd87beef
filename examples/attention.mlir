// Causal (bottom-right) attention over a window of 256 keys plus 4 sink
// tokens, 8 query heads sharing 2 kv heads; batch and sequence lengths dynamic.
func.func @attention(%q: memref<?x8x?x64xf32>, %k: memref<?x2x?x64xf32>,
                     %v: memref<?x2x?x64xf32>, %o: memref<?x8x?x64xf32>,
                     %lse: memref<?x8x?xf32>) attributes {llvm.emit_c_interface} {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xf32>, memref<?x2x?x64xf32>, memref<?x2x?x64xf32>)
      outs(%o : memref<?x8x?x64xf32>, %lse : memref<?x8x?xf32>)
      {mask = #fmha.mask<"b:256,0,4">}
  return
}
