//===- GpuAttentionBwdKernel.cpp - fmha.attention_bwd -> GPU kernels ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "GpuKernelUtils.h"

using namespace mlir;
using namespace mlir::fmha;

LogicalResult mlir::fmha::lowerAttentionBwdToGpu(AttentionBwdOp op,
                                                 const GpuTarget &target,
                                                 StringRef, StringRef) {
  return op.emitOpError() << "has no " << target.getName()
                          << " lowering in this build";
}
