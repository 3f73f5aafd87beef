//===- NVGPUToNVVM.cpp - nvgpu -> NVVM at a chosen index bitwidth ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The kernels' nvgpu ops lowered with upstream's patterns and a type
// converter whose index type has the pipeline's bitwidth, so that the 32-bit
// kernel lowering sees no 64-bit index casts (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHANVGPUTONVVMPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

struct FmhaNVGPUToNVVMPass
    : mlir::fmha::impl::FmhaNVGPUToNVVMPassBase<FmhaNVGPUToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (indexBitwidth != 32 && indexBitwidth != 64) {
      getOperation()->emitError()
          << "fmha-nvgpu-to-nvvm: index-bitwidth must be 32 or 64, got "
          << static_cast<unsigned>(indexBitwidth);
      return signalPassFailure();
    }
    LowerToLLVMOptions options(ctx);
    options.overrideIndexBitwidth(indexBitwidth);
    LLVMTypeConverter converter(ctx, options);
    // A copy group's token only orders the IR; the lowered wait takes a
    // count, so the token becomes a value nothing reads.
    converter.addConversion([ctx](nvgpu::DeviceAsyncTokenType) -> Type {
      return IntegerType::get(ctx, 32);
    });
    // Workgroup memory is NVVM's shared address space.
    nvgpu::populateCommonGPUTypeAndAttributeConversions(converter);
    RewritePatternSet patterns(ctx);
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*ctx);
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect,
                           memref::MemRefDialect>();
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
