// The staged forward on ROCDL (vector-tiles=1): the tiles take the chip's
// matrix instruction's layouts (gfx942: MFMA 16x16x16 over 4 waves of 64
// lanes; gfx1200: WMMA over 4 waves of 32), K and V go through LDS, and P,
// whose MFMA / WMMA C fragment is not the same lane's A fragment, through
// LDS too (fmha-distribute-tiles' conversion through workgroup memory:
// ds_write, s_barrier, ds_read); the softcap's tanh from the target's exp2
// (AMDGPU has no tanh instruction). Causal with 4 sinks, softcap, GQA:
// two kv loops. No scratch. (Checked as ISA: no AMD GPU runs here; the
// vector form is checked on the CPU and, distributed, on NVIDIA.)
// RUN: fmha-opt %S/Inputs/attention-staged.mlir --pass-pipeline="builtin.module(fmha-to-rocdl-pipeline{chip=gfx942 format=isa vector-tiles=1 block-m=64})" | FileCheck %s --check-prefix=CDNA
// CDNA: .amdhsa_kernel attention_kernel
// CDNA-DAG: .amdhsa_private_segment_fixed_size 0
// CDNA-DAG: .reqd_workgroup_size:
// CDNA-DAG: - 256
// CDNA-DAG: .wavefront_size: 64
// CDNA-DAG: .vgpr_spill_count: 0
// RUN: fmha-opt %S/Inputs/attention-staged.mlir --pass-pipeline="builtin.module(fmha-to-rocdl-pipeline{chip=gfx942 format=isa vector-tiles=1 block-m=64})" | grep -o 'v_mfma_f32_16x16x16_bf16' | count 96
// RUN: fmha-opt %S/Inputs/attention-staged.mlir --pass-pipeline="builtin.module(fmha-to-rocdl-pipeline{chip=gfx942 format=isa vector-tiles=1 block-m=64})" | FileCheck %s --check-prefix=LDS
// LDS: ds_write
// LDS: s_barrier
// LDS: ds_read
// LDS: v_mfma_f32_16x16x16_bf16
// LDS: v_exp_f32
// RUN: fmha-opt %S/Inputs/attention-staged.mlir --pass-pipeline="builtin.module(fmha-to-rocdl-pipeline{chip=gfx1200 format=isa vector-tiles=1 block-m=64 block-n=16})" | FileCheck %s --check-prefix=RDNA
// RDNA: v_wmma_f32_16x16x16_bf16
// RDNA-DAG: .amdhsa_private_segment_fixed_size 0
// RDNA-DAG: .wavefront_size: 32

// MFMA 32x32x8 (mfma=32): the layouts, the staging and the distribution all
// take the pipeline's MFMA size; four waves of 32 rows.
// RUN: fmha-opt %S/Inputs/attention-staged.mlir --pass-pipeline="builtin.module(fmha-to-rocdl-pipeline{chip=gfx942 format=isa vector-tiles=1 mfma=32 block-m=128})" | FileCheck %s --check-prefix=MFMA32
// MFMA32-DAG: v_mfma_f32_32x32x8_bf16
// MFMA32-DAG: .amdhsa_private_segment_fixed_size 0
// MFMA32-DAG: .vgpr_spill_count: 0
