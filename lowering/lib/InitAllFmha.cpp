//===- InitAllFmha.cpp - Register everything FMHA provides ----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/InitAllFmha.h"
#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaDialect.h"
#include "fmha/Target/FmhaToLLVMIRTranslation.h"
#include "fmha/Transforms/BufferizableOpInterfaceImpl.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"

void mlir::fmha::registerAllFmhaDialects(DialectRegistry &registry) {
  registry.insert<
      FmhaDialect, arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
      math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
      tensor::TensorDialect, bufferization::BufferizationDialect,
      affine::AffineDialect, cf::ControlFlowDialect, index::IndexDialect,
      ub::UBDialect, gpu::GPUDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect,
      vector::VectorDialect, amdgpu::AMDGPUDialect, ROCDL::ROCDLDialect,
      linalg::LinalgDialect, transform::TransformDialect>();
  // The transform dialect's structured ops (tile_using_for, ...) drive
  // fmha.attention's TilingInterface.
  linalg::registerTransformDialectExtension(registry);
  // One-Shot Bufferize of the fmha ops on tensors (the named pipelines'
  // first pass), of the functions around them and of what builds tensors.
  fmha::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // tensor.pad (the edges of static tiles) bufferizes into a linalg.map.
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // The vector tiles' transfers from and to the operands.
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  // The tiled attention on values: scf.forall, scf.for and scf.if on
  // tensors.
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  // promote-buffers-to-stack turns memref.alloc into memref.alloca through
  // its AllocationOpInterface model.
  memref::registerAllocationOpInterfaceExternalModels(registry);
  // What `convert-to-llvm` needs to lower the dialects the pipelines emit.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  // What gpu-module-to-binary needs to serialize NVVM kernels.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  registerROCDLDialectTranslation(registry);
  // fmha.amdgpu_* attributes on llvm.atomicrmw become AMDGPU metadata when
  // gpu-module-to-binary translates a kernel (the fmha dialect is loaded
  // wherever an fmha pipeline ran).
  registerFmhaDialectTranslation(registry);
}

void mlir::fmha::registerAllFmhaPasses() {
  registerFmhaTransformsPasses();
  registerFmhaConversionPasses();
  registerFmhaPipelines();
}
