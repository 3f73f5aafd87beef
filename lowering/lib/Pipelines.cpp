//===- Pipelines.cpp - Named FMHA pipelines -------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::fmha::buildFmhaToCpuPipeline(OpPassManager &pm,
                                        const CpuPipelineOptions &options) {
  FmhaTileAttentionPassOptions tile;
  tile.blockM = options.blockM;
  tile.blockN = options.blockN;
  pm.addPass(createFmhaTileAttentionPass(tile));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createFmhaLowerToCpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::fmha::registerFmhaPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "fmha-to-cpu-pipeline",
      "Tile fmha.attention and lower it to the LLVM dialect for the host CPU",
      buildFmhaToCpuPipeline);
}
