//===- InitAllFmha.h - Register everything FMHA provides --------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What an embedding compiler calls to use the fmha dialect, its passes and its
// pipelines:
//
//   mlir::DialectRegistry registry;
//   mlir::fmha::registerAllFmhaDialects(registry);
//   mlir::fmha::registerAllFmhaPasses();      // flags + named pipelines
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_INITALLFMHA_H
#define FMHA_INITALLFMHA_H

namespace mlir {
class DialectRegistry;

namespace fmha {

/// Adds the fmha dialect and every upstream dialect (and dialect extension)
/// that the fmha passes create or that the pipelines lower through, and the
/// LLVM IR translations gpu-module-to-binary uses, the fmha dialect's own
/// (fmha/Target/FmhaToLLVMIRTranslation.h) among them.
void registerAllFmhaDialects(DialectRegistry &registry);

/// Registers the fmha passes (`--fmha-*`) and the named pipelines
/// (`fmha-to-cpu-pipeline`, ...) with the global pass registry.
void registerAllFmhaPasses();

} // namespace fmha
} // namespace mlir

#endif // FMHA_INITALLFMHA_H
