//===- GpuMergeKernel.cpp - fmha.merge -> GPU kernel ----------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"

using namespace mlir;
using namespace mlir::fmha;

LogicalResult mlir::fmha::lowerMergeToGpu(MergeOp op, const GpuTarget &target,
                                          StringRef, StringRef) {
  return op.emitOpError() << "has no " << target.getName()
                          << " lowering in this build";
}
