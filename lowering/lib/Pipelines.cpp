//===- Pipelines.cpp - Named FMHA pipelines -------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/GpuTarget.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;

namespace {

/// The pipelines take the fmha ops on tensors: One-Shot Bufferize first
/// (the ops' models: fmha/Transforms/BufferizableOpInterfaceImpl.h), with
/// identity layouts at function boundaries (the kernels take contiguous
/// operands); then fmha-drop-out-results drops every function result that
/// is one of its arguments' buffers (an out written in place), so that a
/// function on tensors gets the signature of its form on memrefs (the
/// runtime's ABIs). IR on memrefs passes through unchanged.
void addBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // The tile scratch gets the alignment of its element type, as the
  // allocas of the tiled form on memrefs do.
  options.bufferAlignment = 0;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
  pm.addPass(mlir::fmha::createFmhaDropOutResultsPass());
}

/// A buffer of a static shape small enough for a tile's scratch (m, l, acc
/// and the scores of a q tile with head dims up to 1024): what One-Shot
/// Bufferize allocates for the tensor.empty ops of the tiled attention.
bool isTileScratch(Value alloc) {
  auto type = dyn_cast<MemRefType>(alloc.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return false;
  constexpr int64_t kMaxScratchBytes = 256 * 1024;
  return type.getNumElements() * type.getElementTypeBitWidth() / 8 <=
         kMaxScratchBytes;
}

/// The forward tiled on tensors, with static tiles or as vector tiles (the
/// GPU's tile level: vectors before bufferization, which leaves them as they
/// are); with `backwardOnValues` the backward on tensors too, with the same
/// tiles (otherwise the CPU tiles it on memrefs after bufferization, the
/// GPUs' builder lowers it).
/// With `mma`, the static tiles take the register layouts of that matrix
/// instruction over `warps` warps before they become vectors.
void addForwardTiling(OpPassManager &pm, int64_t blockM, int64_t blockN,
                      bool staticTiles, bool vectorTiles, bool backwardOnValues,
                      StringRef mma = "", int64_t warps = 1,
                      bool longestFirst = false, bool deferPV = false,
                      int64_t warpRows = 0) {
  mlir::fmha::FmhaTileAttentionPassOptions tile;
  tile.blockM = blockM;
  tile.blockN = blockN;
  tile.backwardOnTensors = backwardOnValues;
  tile.staticTiles = staticTiles;
  tile.longestFirst = longestFirst;
  pm.addPass(mlir::fmha::createFmhaTileAttentionPass(tile));
  if (!mma.empty()) {
    mlir::fmha::FmhaAssignLayoutsPassOptions layouts;
    layouts.mma = mma.str();
    layouts.warps = warps;
    layouts.warpRows = warpRows;
    pm.addPass(mlir::fmha::createFmhaAssignLayoutsPass(layouts));
    // The backward's atomic dQ accumulator in its adds' register order.
    pm.addPass(mlir::fmha::createFmhaRegisterOrderWorkspacePass());
  }
  if (vectorTiles)
    pm.addPass(mlir::fmha::createFmhaVectorizeTilesPass());
  if (vectorTiles && deferPV)
    pm.addPass(mlir::fmha::createFmhaDeferPVPass());
}

/// fmha-assign-layouts' name of `instr` (empty for one it does not know).
StringRef stagedInstruction(const ::fmha::MmaInstruction &instr) {
  using Make = ::fmha::MmaInstruction (*)();
  for (auto [key, make] :
       {std::pair<StringRef, Make>(
            "mma.sync", ::fmha::MmaInstruction::nvidiaMmaSyncM16N8K16),
        std::pair<StringRef, Make>("mfma16",
                                   ::fmha::MmaInstruction::amdMfma16x16x16),
        std::pair<StringRef, Make>("mfma32",
                                   ::fmha::MmaInstruction::amdMfma32x32x8),
        std::pair<StringRef, Make>("wmma-rdna3",
                                   ::fmha::MmaInstruction::amdWmmaRdna3),
        std::pair<StringRef, Make>("wmma-rdna4",
                                   ::fmha::MmaInstruction::amdWmmaRdna4)})
    if (make().name == instr.name)
      return key;
  return "";
}

/// Warps of the staged forward's workgroup: each a band of at least the
/// instruction's M rows of the q tile, at most 4.
int64_t stagedWarps(int64_t blockM, int64_t mmaM) {
  return std::clamp<int64_t>(blockM / mmaM, 1, 4);
}

} // namespace

void mlir::fmha::buildFmhaToCpuPipeline(OpPassManager &pm,
                                        const CpuPipelineOptions &options) {
  // The forward is tiled on tensors (the tile ops on values), then
  // bufferized with the rest: the q-tile scf.forall becomes the
  // scf.parallel of the form on memrefs and each tile's static scratch
  // (m, l, acc, scores) a stack buffer of its iteration.
  addForwardTiling(
      pm, options.blockM, options.blockN,
      options.staticTiles || options.vectorTiles, options.vectorTiles,
      /*backwardOnValues=*/options.staticTiles || options.vectorTiles,
      /*mma=*/"", /*warps=*/1,
      /*longestFirst=*/false, options.deferPV);
  addBufferization(pm);
  // The padding of static tiles bufferizes into linalg.map fills.
  if (options.staticTiles)
    pm.addPass(createConvertLinalgToLoopsPass());
  // The backward without static tiles is tiled on memrefs.
  FmhaTileAttentionPassOptions tile;
  tile.blockM = options.blockM;
  tile.blockN = options.blockN;
  pm.addPass(createFmhaTileAttentionPass(tile));
  pm.addPass(createForallToParallelLoopPass());
  // The loops stop carrying the buffers (and the insertions of the o and
  // lse tiles into themselves fold away) before the scratch, which then
  // leaves no scope, goes on the stack.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(
      bufferization::createPromoteBuffersToStackPass(isTileScratch));
  pm.addPass(createFmhaTileElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createFmhaLowerToCpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  // After the invariant code left the loops: the parallel bodies read it
  // from the context.
  pm.addPass(createFmhaCpuParallelForPass());
  pm.addPass(createCanonicalizerPass());
  // Vector tiles: contractions and row reductions in the host's forms, the
  // transfers of whole tiles (out of bounds along their rows) row by row.
  if (options.vectorTiles) {
    pm.addPass(createFmhaUnrollVectorTilesPass());
    pm.addPass(createConvertVectorToSCFPass());
    pm.addPass(createLowerAffinePass());
  }
  // bf16 conversions as integer arithmetic (round to nearest even, NaN kept
  // quiet): x86 has no instruction for them before AVX512-BF16, and LLVM's
  // libcall (__truncsfbf2) is not in the libraries a bundle links. Vector
  // tiles: before their ops go to LLVM with the arith ops on vectors.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  if (options.vectorTiles) {
    pm.addPass(arith::createArithExpandOpsPass(expand));
    pm.addPass(createConvertVectorToLLVMPass());
  }
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  if (!options.vectorTiles)
    pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {

/// The target-independent head of a GPU pipeline: the kernel, then cleanup.
template <typename Options>
void addGpuKernelPasses(OpPassManager &pm, StringRef target,
                        const Options &options, unsigned indexBitwidth,
                        int64_t mfma = 0, StringRef mma = "",
                        bool mmaGiven = false) {
  // The staged forward: tiled on tensors with the static tiles, typed with
  // the register layouts of the chip's matrix instruction (the target's
  // configuration: mma.sync, MFMA 16 or 32, WMMA), which become vectors
  // (anchored in those layouts) before bufferization.
  std::unique_ptr<mlir::fmha::GpuTarget> gpuTarget =
      mlir::fmha::createGpuTarget(target);
  const bool configured =
      gpuTarget && gpuTarget->configure(options.chip, mfma).empty();
  // mma=wgmma: warpgroup products (fmha-distribute-tiles makes them of the
  // contractions whose B lies in the 128-byte swizzle) over mma.sync's
  // fragments, one warp each 16 rows of the q tile.
  const bool warpgroup = options.vectorTiles && mma == "wgmma";
  const int64_t warps =
      warpgroup ? std::max<int64_t>(options.blockM / 16, 4)
                : stagedWarps(options.blockM,
                              configured ? gpuTarget->getMmaM() : int64_t(16));
  const int64_t warpSize = configured ? gpuTarget->getWarpSize() : 32;
  if (options.vectorTiles) {
    // The grid runs the q tiles in loop order: longest first under causal
    // masks, as the builder's kernels (the light tiles fill the tail). The
    // backward too (its three loops become the Dsum, dK/dV and dQ kernels;
    // on ROCDL only where asked for: the builder's stays the default there
    // until the staged one is measured on AMD). With warpgroup products each
    // of the backward's loops
    // gets a warp each 16 of its rows (the dK/dV kernel block-n / 16, the
    // others block-m / 16) and its kernel the workgroup of those warps.
    addForwardTiling(pm, options.blockM, options.blockN,
                     /*staticTiles=*/true, /*vectorTiles=*/true,
                     /*backwardOnValues=*/true,
                     configured ? stagedInstruction(gpuTarget->getMma()) : "",
                     warps, /*longestFirst=*/true, options.deferPV,
                     /*warpRows=*/warpgroup ? 16 : 0);
  }
  addBufferization(pm);
  // The q-tile loop of the staged forward: a workgroup per q tile whose
  // threads all run it (the workgroup form of fmha-map-parallel-to-gpu);
  // the kernel module's fmha-distribute-tiles spreads the tiles over them.
  if (options.vectorTiles) {
    pm.addPass(createForallToParallelLoopPass());
    pm.addPass(createCSEPass());
    mlir::fmha::FmhaMapParallelToGpuPassOptions map;
    map.kernelName = options.kernelName;
    map.blockThreads = warps * warpSize;
    map.rowThreads = 1;
    map.threadElements = 1;
    map.workgroup = true;
    map.warpSize = warpgroup ? warpSize : 0;
    pm.addPass(mlir::fmha::createFmhaMapParallelToGpuPass(map));
  }
  // The elementwise ops (merge, accumulate): their loops, mapped to a grid.
  // CSE only: the canonicalizer would inline a loop of one iteration
  // (a rank-0 accumulate) into the host function.
  pm.addPass(mlir::fmha::createFmhaTileElementwisePass());
  pm.addPass(createCSEPass());
  pm.addPass(mlir::fmha::createFmhaVectorizeElementsPass());
  mlir::fmha::FmhaMapParallelToGpuPassOptions map;
  map.kernelName = options.kernelName;
  pm.addPass(mlir::fmha::createFmhaMapParallelToGpuPass(map));
  mlir::fmha::FmhaLowerToGpuPassOptions gpu;
  // Each chip's fastest kernel (KernelDefaults.h, what fmha-compile gives)
  // for every tile option not given.
  gpu.tuned = true;
  for (auto [given, name] :
       {std::pair(options.blockM.hasValue(), "block-m"),
        std::pair(options.blockN.hasValue(), "block-n"),
        std::pair(options.warpRows.hasValue(), "warp-rows"),
        std::pair(options.qInShared.hasValue(), "q-in-shared"),
        std::pair(mmaGiven, "mma")})
    if (given)
      gpu.fixed.push_back(name);
  gpu.target = target.str();
  gpu.chip = options.chip;
  gpu.blockM = options.blockM;
  gpu.blockN = options.blockN;
  gpu.warpRows = options.warpRows;
  gpu.qInShared = options.qInShared;
  gpu.rescale = options.rescale;
  gpu.kernelName = options.kernelName;
  gpu.mfma = mfma;
  gpu.mma = mma.str();
  gpu.indexBitwidth = indexBitwidth;
  pm.addPass(mlir::fmha::createFmhaLowerToGpuPass(gpu));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// The kernel module's lowering to the target's LLVM dialect: `toTarget`
/// adds the target's conversions between the common passes.
void addKernelLowering(OpPassManager &pm, StringRef target, StringRef chip,
                       function_ref<void(OpPassManager &)> toTarget,
                       StringRef format, bool vectorTiles, bool qInShared,
                       int64_t kvStages, unsigned indexBitwidth,
                       int64_t swizzle = 0, int64_t mfma = 0,
                       bool bulkAdd = false) {
  // The vector tiles spread over the threads by their layouts; the reads
  // and writes of rows that may lie past the operands as branches. The
  // workgroup buffers in dynamic workgroup memory (the launches get its
  // size).
  if (vectorTiles) {
    OpPassManager &tiles = pm.nest<gpu::GPUModuleOp>();
    // The scores' scale past the mask and the row max, into the exponent's
    // fma (fmha-gpu-math-to-target).
    tiles.addPass(mlir::fmha::createFmhaDeferScalePass());
    mlir::fmha::FmhaStageKVPassOptions stage;
    stage.target = target.str();
    stage.chip = chip.str();
    stage.mfma = mfma;
    stage.swizzle = swizzle;
    tiles.addPass(mlir::fmha::createFmhaStageKVPass(stage));
    if (qInShared) {
      mlir::fmha::FmhaStageQPassOptions stageQ;
      stageQ.target = target.str();
      stageQ.chip = chip.str();
      stageQ.mfma = mfma;
      stageQ.swizzle = swizzle;
      tiles.addPass(mlir::fmha::createFmhaStageQPass(stageQ));
    }
    // Warpgroup products read a transposed A (the backward's atomic dQ)
    // from a swizzled buffer by descriptor.
    if (swizzle)
      tiles.addPass(mlir::fmha::createFmhaStageTransposedAPass());
    // The atomic adds of a tile into a contiguous one (the backward's dQ) as
    // bulk adds of a workgroup buffer (cp.reduce.async.bulk, sm_90).
    if (swizzle && bulkAdd)
      tiles.addPass(mlir::fmha::createFmhaBulkAddPass());
    mlir::fmha::FmhaPipelineCopiesPassOptions pipeline;
    pipeline.stages = kvStages;
    tiles.addPass(mlir::fmha::createFmhaPipelineCopiesPass(pipeline));
    mlir::fmha::FmhaDistributeTilesPassOptions distribute;
    distribute.target = target.str();
    distribute.chip = chip.str();
    distribute.mfma = mfma;
    distribute.indexBitwidth = indexBitwidth;
    tiles.addPass(mlir::fmha::createFmhaDistributeTilesPass(distribute));
    pm.addPass(mlir::fmha::createFmhaWorkgroupToDynamicSharedPass());
    // The launches learn the row alignment the distributed accesses take.
    pm.addPass(mlir::fmha::createFmhaOperandAlignmentPass());
  }
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  if (vectorTiles) {
    kernels.addPass(createCanonicalizerPass());
    kernels.addPass(createCSEPass());
    // Transfers unrolled to 1-D ones (no temporary buffer and
    // vector.type_cast, whose LLVM lowering knows only 64-bit indices).
    kernels.addPass(createConvertVectorToSCFPass(
        VectorTransferToSCFOptions().enableFullUnroll()));
  }
  mlir::fmha::FmhaGpuMathToTargetPassOptions math;
  math.target = target.str();
  kernels.addPass(mlir::fmha::createFmhaGpuMathToTargetPass(math));
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  // Vector loads and stores at their vector's alignment: every run of a
  // distributed tile starts at a multiple of its size (operands' bases and
  // strides are multiples of 16 bytes), so 16-byte copies stay one access.
  if (vectorTiles) {
    mlir::fmha::FmhaVectorToLLVMPassOptions vectorToLLVM;
    vectorToLLVM.indexBitwidth = indexBitwidth;
    kernels.addPass(mlir::fmha::createFmhaVectorToLLVMPass(vectorToLLVM));
  }
  toTarget(kernels);
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = format.str();
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

} // namespace

void mlir::fmha::buildFmhaToNVVMPipeline(OpPassManager &pm,
                                         const NVVMPipelineOptions &options) {
  // 32-bit indices by default, as fmha-compile (measured on the H200,
  // docs/PERFORMANCE.md, v13).
  const unsigned indexBitwidth =
      options.indexBitwidth.hasValue() ? options.indexBitwidth : 32;
  addGpuKernelPasses(pm, "nvvm", options, indexBitwidth, /*mfma=*/0,
                     options.mma, options.mma.hasValue());
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.features = "+ptx80";
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  addKernelLowering(
      pm, "nvvm", options.chip,
      [&](OpPassManager &kernels) {
        // One index bitwidth for every conversion of the kernel: upstream's
        // nvgpu lowering only knows 64.
        if (indexBitwidth == 64) {
          kernels.addPass(createConvertNVGPUToNVVMPass());
        } else {
          FmhaNVGPUToNVVMPassOptions nvgpu;
          nvgpu.indexBitwidth = indexBitwidth;
          kernels.addPass(createFmhaNVGPUToNVVMPass(nvgpu));
        }
        ConvertGpuOpsToNVVMOpsOptions nvvm;
        nvvm.indexBitwidth = indexBitwidth;
        kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
        // NVVM ops written as inline PTX (wgmma.mma_async).
        kernels.addPass(createConvertNVVMToLLVMPass());
      },
      options.format, options.vectorTiles, options.qInShared, options.kvStages,
      indexBitwidth,
      // Warpgroup products read K, V (and Q) in the 128-byte swizzle.
      options.mma == "wgmma" ? 128 : 0, /*mfma=*/0, options.bulkAdd);
}

void mlir::fmha::buildFmhaToROCDLPipeline(OpPassManager &pm,
                                          const ROCDLPipelineOptions &options) {
  const unsigned indexBitwidth = options.indexBitwidth;
  addGpuKernelPasses(pm, "rocdl", options, indexBitwidth, options.mfma);
  GpuROCDLAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.optLevel = 3;
  // The wavefront size of the chip's matrix instruction: wave32 for RDNA's
  // WMMA, wave64 otherwise (an unsupported chip fails in the kernel pass).
  std::unique_ptr<GpuTarget> target = createROCDLTarget();
  attach.wave64Flag = !target->configure(options.chip, options.mfma).empty() ||
                      target->getWarpSize() == 64;
  pm.addPass(createGpuROCDLAttachTarget(attach));
  std::string chip = options.chip;
  addKernelLowering(
      pm, "rocdl", chip,
      [&](OpPassManager &kernels) {
        ConvertAMDGPUToROCDLPassOptions amdgpu;
        amdgpu.chipset = chip;
        kernels.addPass(createConvertAMDGPUToROCDLPass(amdgpu));
        ConvertGpuOpsToROCDLOpsOptions rocdl;
        rocdl.chipset = chip;
        // The matrix ops (amdgpu.mfma, wmma) take no indices: one index
        // width for the whole kernel comes from this conversion alone.
        rocdl.indexBitwidth = indexBitwidth;
        rocdl.runtime = gpu::amd::Runtime::HIP;
        kernels.addPass(createConvertGpuOpsToROCDLOps(rocdl));
      },
      options.format, options.vectorTiles, options.qInShared, options.kvStages,
      indexBitwidth, /*swizzle=*/0, options.mfma);
}

void mlir::fmha::registerFmhaPipelines() {
  PassPipelineRegistration<ROCDLPipelineOptions>(
      "fmha-to-rocdl-pipeline",
      "Lower fmha.attention to an AMD GPU kernel (ROCDL, ISA or hsaco)",
      buildFmhaToROCDLPipeline);
  PassPipelineRegistration<NVVMPipelineOptions>(
      "fmha-to-nvvm-pipeline",
      "Lower fmha.attention to an NVIDIA GPU kernel (NVVM, PTX or cubin)",
      buildFmhaToNVVMPipeline);
  PassPipelineRegistration<CpuPipelineOptions>(
      "fmha-to-cpu-pipeline",
      "Tile fmha.attention and lower it to the LLVM dialect for the host CPU",
      buildFmhaToCpuPipeline);
}
