// The named pipeline gives the kernel fmha-compile gives (KernelDefaults.h):
// on sm_90a the warpgroup (wgmma) forward with 128 rows and 256 threads and
// 32-bit index parameters; a tile option given keeps the mma.sync kernel,
// as it does in fmha-compile.
// RUN: fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a kernel-name=fmha_fwd" | FileCheck %s --check-prefix=TUNED
// RUN: fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a block-m=64" | FileCheck %s --check-prefix=SYNC
// RUN: fmha-opt %s --fmha-to-nvvm-pipeline="chip=sm_90a index-bitwidth=64" | FileCheck %s --check-prefix=I64
// TUNED: gpu.launch_func @fmha_kernels::@fmha_fwd blocks in (%{{.+}}, %c16{{.*}}) threads in (%c256, %c1, %c1)
// TUNED: .param .u32 fmha_fwd_param_27
// TUNED-SAME: wgmma.mma_async
// SYNC: threads in (%c128, %c1, %c1)
// SYNC-NOT: wgmma.mma_async
// SYNC: mma.sync.aligned.m16n8k16
// I64: .param .u64 attn_kernel_param_27
func.func @attn(%q: memref<?x16x?x128xbf16>, %k: memref<?x4x?x128xbf16>, %v: memref<?x4x?x128xbf16>,
                %o: memref<?x16x?x128xbf16>, %lse: memref<?x16x?xf32>) {
  fmha.attention ins(%q, %k, %v : memref<?x16x?x128xbf16>, memref<?x4x?x128xbf16>, memref<?x4x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>, %lse : memref<?x16x?xf32>) {mask = #fmha.mask<"b">}
  return
}

// RUN: not fmha-opt %s --fmha-lower-to-gpu="tuned fixed=block-k" 2>&1 | FileCheck %s --check-prefix=FIXED
// FIXED: error: unknown option 'block-k' in fixed (expected block-m, block-n, warp-rows, q-in-shared or mma)
