func.func @fmha_merge(%o1: memref<?x8x?x128xbf16>, %l1: memref<?x8x?xf32>, %o2: memref<?x8x?x128xbf16>, %l2: memref<?x8x?xf32>) {
  fmha.merge ins(%o1, %l1, %o2, %l2 : memref<?x8x?x128xbf16>, memref<?x8x?xf32>, memref<?x8x?x128xbf16>, memref<?x8x?xf32>) outs(%o1, %l1 : memref<?x8x?x128xbf16>, memref<?x8x?xf32>)
  return
}
func.func @fmha_acc(%x: memref<?xf16>, %acc: memref<?xf32>) {
  fmha.accumulate ins(%x : memref<?xf16>) outs(%acc : memref<?xf32>)
  return
}
