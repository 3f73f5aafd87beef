// RUN: fmha-opt %s --fmha-lower-to-gpu -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s --fmha-lower-to-gpu="target=spirv" -split-input-file 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_75" -split-input-file 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=gfx942" -split-input-file 2>&1 | FileCheck %s --check-prefix=VENDOR
// RUN: not fmha-opt %s --fmha-lower-to-gpu="block-m=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fmha-opt %s --fmha-lower-to-gpu="block-n=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fmha-opt %s --fmha-lower-to-gpu="block-n=512" -split-input-file 2>&1 | FileCheck %s --check-prefix=SHARED
// RUN: not fmha-opt %s --fmha-lower-to-gpu="warp-rows=24" -split-input-file 2>&1 | FileCheck %s --check-prefix=WARPROWS
// RUN: not fmha-opt %s --fmha-lower-to-gpu="warp-rows=32 block-m=48" -split-input-file 2>&1 | FileCheck %s --check-prefix=WARPBLOCK
// RUN: not fmha-opt %s --fmha-lower-to-gpu="chip=sm_90 rescale=sometimes" -split-input-file 2>&1 | FileCheck %s --check-prefix=RESCALE
// RESCALE: error: unknown rescale 'sometimes' (expected lazy, eager, or empty for the target's choice)

// TARGET: error: unknown GPU target 'spirv' (expected nvvm or rocdl)
// CHIP: error: chip 'sm_75' has no bf16 mma.sync m16n8k16: need sm_80 or newer
// VENDOR: error: unknown NVIDIA chip 'gfx942' (expected sm_80, sm_86, sm_89, sm_90 or sm_90a)
// BLOCKM: error: 'fmha.attention' op block-m=24 must be a multiple of 16 (warp-rows) with at most 32 warps
// BLOCKN: error: 'fmha.attention' op block-n=24 must be a positive multiple of 16
// WARPROWS: error: 'fmha.attention' op warp-rows=24 must be a multiple of 16 up to 64
// WARPBLOCK: error: 'fmha.attention' op block-m=48 must be a multiple of 32 (warp-rows) with at most 32 warps
// SHARED: error: 'fmha.attention' op block-m=64 block-n=512 need 294912 bytes of workgroup memory, over the 232448 bytes of sm_90

func.func @f32(%q: memref<?x4x?x64xf32>) {
  // expected-error @+1 {{the nvvm kernel needs f16 or bf16 inputs, got f32}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xf32>, memref<?x4x?x64xf32>, memref<?x4x?x64xf32>) outs(%q : memref<?x4x?x64xf32>)
  return
}

// -----

func.func @head_dim(%q: memref<?x4x?x96xf16>) {
  // expected-error @+1 {{head dims D=96, Dv=96 are not supported by the GPU kernel (supported: 32, 64, 128)}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x96xf16>, memref<?x4x?x96xf16>, memref<?x4x?x96xf16>) outs(%q : memref<?x4x?x96xf16>)
  return
}

// -----

func.func @tensors(%q: tensor<?x4x?x64xf16>) -> tensor<?x4x?x64xf16> {
  // expected-error @+1 {{the GPU lowering takes fmha.attention on memrefs (bufferize first)}}
  %0 = fmha.attention ins(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) outs(%q : tensor<?x4x?x64xf16>) -> tensor<?x4x?x64xf16>
  return %0 : tensor<?x4x?x64xf16>
}

// -----

func.func @output_type(%q: memref<?x4x?x64xf16>, %o: memref<?x4x?x64xf32>) {
  // expected-error @+1 {{the GPU kernel writes o in the input element type}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xf16>, memref<?x4x?x64xf16>, memref<?x4x?x64xf16>) outs(%o : memref<?x4x?x64xf32>)
  return
}

// -----

// Any strides on B, H and S (BSHD, views) lower; a head-dim axis that is
// not contiguous does not.
func.func @strided(%q: memref<?x4x?x64xf16, strided<[?, ?, 128, 1]>>, %v: memref<?x4x?x64xf16, strided<[?, ?, 128, 2]>>, %o: memref<?x4x?x64xf16>) {
  // expected-error @+1 {{v needs a contiguous last axis (stride 1), got memref<?x4x?x64xf16, strided<[?, ?, 128, 2]>>}}
  fmha.attention ins(%q, %q, %v : memref<?x4x?x64xf16, strided<[?, ?, 128, 1]>>, memref<?x4x?x64xf16, strided<[?, ?, 128, 1]>>, memref<?x4x?x64xf16, strided<[?, ?, 128, 2]>>) outs(%o : memref<?x4x?x64xf16>)
  return
}

// -----

// Learned sink logits come from the staged forward (vector-tiles=1) alone.
func.func @sinks(%q: memref<?x4x?x64xf16>, %s: memref<4xf32>) {
  // expected-error @+1 {{learned sink logits (sinks) are built by the staged forward: give the pipeline vector-tiles=1 (fmha-compile --vector-tiles)}}
  fmha.attention ins(%q, %q, %q : memref<?x4x?x64xf16>, memref<?x4x?x64xf16>, memref<?x4x?x64xf16>) sinks(%s : memref<4xf32>) outs(%q : memref<?x4x?x64xf16>)
  return
}
