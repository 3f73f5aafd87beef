//===- FmhaPlugin.cpp - fmha as an mlir-opt dialect and pass plugin -------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Loads the fmha dialect, its passes and its pipelines into upstream tools:
//
//   mlir-opt-22 --load-dialect-plugin=libFmhaPlugin.so \
//               --load-pass-plugin=libFmhaPlugin.so \
//               --pass-pipeline="builtin.module(fmha-to-cpu-pipeline)" in.mlir
//
//===----------------------------------------------------------------------===//

#include "fmha/InitAllFmha.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FmhaDialect", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::fmha::registerAllFmhaDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FmhaPasses", LLVM_VERSION_STRING,
          []() { mlir::fmha::registerAllFmhaPasses(); }};
}
