//===- VectorToLLVM.cpp - Vector ops -> LLVM at a chosen index bitwidth ---===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// --fmha-vector-to-llvm{index-bitwidth}: the staged kernels' vector ops
// lowered with upstream's vector patterns, through a type converter whose
// index type has the kernel's bitwidth (Passes.td says why upstream's pass
// does not do for 32-bit kernels).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAVECTORTOLLVMPASS
#include "fmha/Conversion/Passes.h.inc"
} // namespace mlir::fmha

using namespace mlir;

namespace {

struct FmhaVectorToLLVMPass
    : mlir::fmha::impl::FmhaVectorToLLVMPassBase<FmhaVectorToLLVMPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (indexBitwidth != 32 && indexBitwidth != 64) {
      getOperation()->emitError()
          << "fmha-vector-to-llvm: index-bitwidth must be 32 or 64, got "
          << static_cast<unsigned>(indexBitwidth);
      return signalPassFailure();
    }
    const bool narrow = indexBitwidth == 32;
    // Vector ops to the ones the LLVM patterns take: n-D shapes to 1-D,
    // broadcasts, shape casts, transposes and masks to extracts, inserts
    // and selects.
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorToVectorCanonicalizationPatterns(patterns);
      vector::populateVectorBitCastLoweringPatterns(patterns);
      vector::populateVectorBroadcastLoweringPatterns(patterns);
      vector::populateVectorContractLoweringPatterns(
          patterns, vector::VectorContractLowering::Dot);
      vector::populateVectorMaskOpLoweringPatterns(patterns);
      vector::populateVectorShapeCastLoweringPatterns(patterns);
      vector::populateVectorInterleaveLoweringPatterns(patterns);
      vector::populateVectorTransposeLoweringPatterns(
          patterns, vector::VectorTransposeLowering::EltWise);
      vector::populateVectorTransferLoweringPatterns(patterns,
                                                     /*maxTransferRank=*/1);
      vector::populateVectorMaskMaterializationPatterns(patterns, narrow);
      vector::populateVectorInsertExtractStridedSliceTransforms(patterns);
      vector::populateVectorStepLoweringPatterns(patterns);
      vector::populateVectorRankReducingFMAPattern(patterns);
      // Not converging within the driver's limit leaves ops the conversion
      // below reports.
      (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    }
    LowerToLLVMOptions options(ctx);
    options.overrideIndexBitwidth(indexBitwidth);
    LLVMTypeConverter converter(ctx, options);
    RewritePatternSet patterns(ctx);
    vector::populateVectorTransferLoweringPatterns(patterns);
    populateVectorToLLVMConversionPatterns(
        converter, patterns, /*reassociateFPReductions=*/false,
        /*force32BitVectorIndices=*/narrow, /*useVectorAlignment=*/true);
    LLVMConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, memref::MemRefDialect>();
    target.addLegalOp<UnrealizedConversionCastOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
