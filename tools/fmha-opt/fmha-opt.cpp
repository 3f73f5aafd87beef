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

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::fmha::registerAllFmhaPasses();
  mlir::DialectRegistry registry;
  mlir::fmha::registerAllFmhaDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FMHA optimizer driver\n", registry));
}
