//===- Passes.td - FMHA lowering passes --------------------*- tablegen -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_CONVERSION_PASSES_TD
#define FMHA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FmhaLowerToCpuPass : Pass<"fmha-lower-to-cpu"> {
  let summary = "Lower the fmha tile ops to loops for the host CPU";
  let description = [{
    Rewrites `fmha.tile_init`, `tile_qk`, `tile_softmax`, `tile_pv` and
    `tile_finalize` into scf loops of arith/math/memref ops written so that
    LLVM vectorizes the inner loops (reductions carry `reassoc`), and replaces
    exp/log/tanh by polynomial approximations that vectorize too. The result
    lowers to the LLVM dialect with the upstream conversions
    (`fmha-to-cpu-pipeline` runs them all).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect"
  ];
}

#endif // FMHA_CONVERSION_PASSES_TD
