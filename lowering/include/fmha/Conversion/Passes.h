//===- Passes.h - FMHA lowering passes and pipelines ------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_CONVERSION_PASSES_H
#define FMHA_CONVERSION_PASSES_H

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
class RewritePatternSet;
namespace fmha {

#define GEN_PASS_DECL
#include "fmha/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fmha/Conversion/Passes.h.inc"

/// The unit attribute `--fmha-lower-to-cpu` puts on the per-iteration scratch
/// allocas it hoists out of a parallel loop.
constexpr const char *kScratchAttrName = "fmha.scratch";

/// The exported global of a cpu bundle through which the loader gives the
/// kernel its parallel-for (fmha-cpu-parallel-for).
constexpr const char *kParallelForHookName = "fmha_parallel_for";

/// Patterns that rewrite the fmha tile ops into scalar loops (host CPU).
void populateFmhaTileOpsToLoopsPatterns(RewritePatternSet &patterns);

/// Options of `fmha-to-cpu-pipeline`.
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<int64_t> blockM{*this, "block-m",
                         llvm::cl::desc("Query rows per tile"),
                         llvm::cl::init(64)};
  Option<int64_t> blockN{*this, "block-n", llvm::cl::desc("Keys per kv tile"),
                         llvm::cl::init(64)};
  Option<bool> staticTiles{
      *this, "static-tiles",
      llvm::cl::desc("Tile the forward with the GPU's static tiles (padded "
                     "at the edges of Sq and Sk; the forward on tensors)"),
      llvm::cl::init(false)};
  Option<bool> vectorTiles{
      *this, "vector-tiles",
      llvm::cl::desc("The static tiles as vectors, the tile ops as generic "
                     "vector ops (fmha-vectorize-tiles); implies "
                     "static-tiles"),
      llvm::cl::init(false)};
  Option<bool> deferPV{
      *this, "defer-pv",
      llvm::cl::desc("With vector-tiles: each kv tile's P V product in the "
                     "next iteration, after the next tile's scores "
                     "(fmha-defer-pv; the GPU's overlap, run on the host to "
                     "check it)"),
      llvm::cl::init(false)};
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Host CPU (recorded; codegen uses "
                                          "the host when empty)"),
                           llvm::cl::init("")};
};

/// The options both GPU pipelines take; `Derived` is the pipeline's options.
template <typename Derived>
struct GpuPipelineOptions : public PassPipelineOptions<Derived> {
  using Base = PassPipelineOptions<Derived>;
  typename Base::template Option<int64_t> blockM{
      *this, "block-m", llvm::cl::desc("Query rows per workgroup"),
      llvm::cl::init(64)};
  typename Base::template Option<int64_t> blockN{
      *this, "block-n", llvm::cl::desc("Keys per kv tile"), llvm::cl::init(64)};
  typename Base::template Option<int64_t> warpRows{
      *this, "warp-rows", llvm::cl::desc("Query rows per warp (wave)"),
      llvm::cl::init(16)};
  typename Base::template Option<bool> qInShared{
      *this, "q-in-shared",
      llvm::cl::desc("Q tile in workgroup memory (fragments read per kv "
                     "tile; with vector-tiles, fmha-stage-q)"),
      llvm::cl::init(false)};
  typename Base::template Option<std::string> rescale{
      *this, "rescale",
      llvm::cl::desc("O rescaling of the forward's online softmax: lazy, "
                     "eager or empty (the target's choice)"),
      llvm::cl::init("")};
  typename Base::template Option<std::string> kernelName{
      *this, "kernel-name", llvm::cl::desc("Kernel name"), llvm::cl::init("")};
  typename Base::template Option<bool> vectorTiles{
      *this, "vector-tiles",
      llvm::cl::desc("The forward from the staged passes: static tiles as "
                     "vectors (fmha-vectorize-tiles) in the target's register "
                     "layouts, a workgroup per q tile, the tiles distributed "
                     "to its lanes (fmha-distribute-tiles)"),
      llvm::cl::init(false)};
  typename Base::template Option<bool> deferPV{
      *this, "defer-pv",
      llvm::cl::desc("With vector-tiles: each kv tile's P V product in the "
                     "next iteration, after the next tile's scores, so that "
                     "asynchronous products (wgmma) run under the softmax "
                     "(fmha-defer-pv)"),
      llvm::cl::init(false)};
  typename Base::template Option<int64_t> kvStages{
      *this, "kv-stages",
      llvm::cl::desc("With vector-tiles: the stages of the kv loop's "
                     "workgroup buffers, 2 (the next tiles copied while the "
                     "products run on these, fmha-pipeline-copies) or 1"),
      llvm::cl::init(2)};
  typename Base::template Option<unsigned> indexBitwidth{
      *this, "index-bitwidth",
      llvm::cl::desc("Bits of the kernels' index type: 64, or 32 (index "
                     "arithmetic and index parameters in 32 bits; every "
                     "element offset must stay below 2^31)"),
      llvm::cl::init(64)};
};

/// Options of `fmha-to-nvvm-pipeline`.
struct NVVMPipelineOptions : public GpuPipelineOptions<NVVMPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("NVIDIA chip"),
                           llvm::cl::init("sm_90")};
  Option<std::string> mma{
      *this, "mma",
      llvm::cl::desc("Matrix instruction: empty (mma.sync) or wgmma "
                     "(sm_90a warpgroup MMA: the forward kernel, the "
                     "backward's dkdv kernel)"),
      llvm::cl::init("")};
  Option<std::string> format{*this, "format",
                             llvm::cl::desc("Binary format: bin (cubin, needs "
                                            "ptxas), isa (PTX), fatbin, llvm"),
                             llvm::cl::init("isa")};
  Option<bool> bulkAdd{
      *this, "bulk-add",
      llvm::cl::desc("With vector-tiles and wgmma: the atomic adds of a tile "
                     "into a contiguous one (the backward's dQ) as one "
                     "cp.reduce.async.bulk of a workgroup buffer "
                     "(fmha-bulk-add)"),
      llvm::cl::init(false)};
};

/// Options of `fmha-to-rocdl-pipeline`.
struct ROCDLPipelineOptions : public GpuPipelineOptions<ROCDLPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("AMD chip (gfx942)"),
                           llvm::cl::init("gfx942")};
  Option<int64_t> mfma{
      *this, "mfma",
      llvm::cl::desc("CDNA MFMA shape: 16 (16x16x16) or 32 (32x32x8, needs "
                     "warp-rows a multiple of 32); 0: the default (16)"),
      llvm::cl::init(0)};
  Option<std::string> format{*this, "format",
                             llvm::cl::desc("Binary format: bin (hsaco, needs "
                                            "ld.lld under ROCM_PATH), isa "
                                            "(AMDGPU assembly), llvm"),
                             llvm::cl::init("isa")};
};

/// fmha.attention -> GPU kernel -> ROCDL -> AMDGPU ISA/hsaco (gpu.binary).
void buildFmhaToROCDLPipeline(OpPassManager &pm,
                              const ROCDLPipelineOptions &options);

/// fmha.attention -> GPU kernel -> NVVM -> PTX/cubin (gpu.binary).
void buildFmhaToNVVMPipeline(OpPassManager &pm,
                             const NVVMPipelineOptions &options);

/// fmha.attention -> tiled form -> loops -> LLVM dialect for the host.
void buildFmhaToCpuPipeline(OpPassManager &pm,
                            const CpuPipelineOptions &options);

/// Registers the named pipelines (`fmha-to-cpu-pipeline`, ...).
void registerFmhaPipelines();

} // namespace fmha
} // namespace mlir

#endif // FMHA_CONVERSION_PASSES_H
