//===- InitAllFmha.cpp - Register everything FMHA provides ----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/InitAllFmha.h"
#include "fmha/Dialect/FmhaDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::fmha::registerAllFmhaDialects(DialectRegistry &registry) {
  registry.insert<FmhaDialect, arith::ArithDialect, func::FuncDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect,
                  bufferization::BufferizationDialect>();
}

void mlir::fmha::registerAllFmhaPasses() {}
