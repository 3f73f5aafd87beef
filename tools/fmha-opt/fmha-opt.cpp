//===- fmha-opt.cpp - The FMHA optimizer driver ---------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt for the fmha dialect: parses fmha IR, runs the fmha passes and
// pipelines and the upstream passes they use.
//
//===----------------------------------------------------------------------===//

#include "fmha/InitAllFmha.h"

#include <cstdlib>

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // The ROCDL pipeline finds the device libraries and ld.lld under ROCM_PATH;
  // default to the folder the build prepared.
  setenv("ROCM_PATH", FMHA_ROCM_PATH, /*overwrite=*/0);
  mlir::registerAllPasses();
  mlir::fmha::registerAllFmhaPasses();
  mlir::DialectRegistry registry;
  mlir::fmha::registerAllFmhaDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "FMHA optimizer driver\n", registry));
}
