//===- main.cpp - An out-of-tree user of the installed FMHA package -------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Registers the dialect and passes through fmha/InitAllFmha.h, parses an
// attention op, runs the CPU, NVVM and ROCDL pipelines and checks what they
// made.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/Passes.h"
#include "fmha/InitAllFmha.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

static const char *kSource = R"mlir(
func.func @attention(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>,
                     %v: memref<?x2x?x64xbf16>, %o: memref<?x8x?x64xbf16>,
                     %lse: memref<?x8x?xf32>) attributes {llvm.emit_c_interface} {
  fmha.attention ins(%q, %k, %v : memref<?x8x?x64xbf16>, memref<?x2x?x64xbf16>, memref<?x2x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>, %lse : memref<?x8x?xf32>)
      {mask = #fmha.mask<"b:-1,0,4">}
  return
}
)mlir";

static int fail(const char *what) {
  llvm::errs() << "fmha-consumer: FAIL: " << what << "\n";
  return 1;
}

int main() {
  mlir::DialectRegistry registry;
  mlir::fmha::registerAllFmhaDialects(registry);
  mlir::fmha::registerAllFmhaPasses();
  mlir::MLIRContext context(registry);

  // The CPU pipeline, built from C++.
  auto cpu = mlir::parseSourceString<mlir::ModuleOp>(kSource, &context);
  if (!cpu)
    return fail("parsing the fmha op");
  mlir::PassManager cpuPm(&context);
  mlir::fmha::CpuPipelineOptions cpuOptions;
  mlir::fmha::buildFmhaToCpuPipeline(cpuPm, cpuOptions);
  if (mlir::failed(cpuPm.run(*cpu)))
    return fail("fmha-to-cpu-pipeline");
  if (!cpu->lookupSymbol<mlir::LLVM::LLVMFuncOp>("_mlir_ciface_attention"))
    return fail("no LLVM C interface function after the CPU pipeline");

  // The NVVM pipeline, by its registered name (as a textual pipeline).
  auto gpu = mlir::parseSourceString<mlir::ModuleOp>(kSource, &context);
  mlir::PassManager gpuPm(&context);
  if (mlir::failed(mlir::parsePassPipeline(
          "fmha-to-nvvm-pipeline{chip=sm_90 format=isa}", gpuPm)))
    return fail("parsing the fmha-to-nvvm-pipeline");
  if (mlir::failed(gpuPm.run(*gpu)))
    return fail("fmha-to-nvvm-pipeline");
  std::string ptx;
  if (getenv("FMHA_CONSUMER_DUMP"))
    gpu->print(llvm::errs());
  gpu->walk([&](mlir::gpu::BinaryOp op) {
    for (mlir::Attribute attr : op.getObjectsAttr())
      ptx = mlir::cast<mlir::gpu::ObjectAttr>(attr).getObject().str();
  });
  if (ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") ==
      std::string::npos)
    return fail(("no bf16 mma.sync in the PTX (" + std::to_string(ptx.size()) +
                 " bytes)")
                    .c_str());
  // The ROCDL pipeline, built from C++, to AMDGPU assembly.
  auto amd = mlir::parseSourceString<mlir::ModuleOp>(kSource, &context);
  mlir::PassManager amdPm(&context);
  mlir::fmha::ROCDLPipelineOptions amdOptions;
  amdOptions.chip = "gfx942";
  amdOptions.format = "isa";
  mlir::fmha::buildFmhaToROCDLPipeline(amdPm, amdOptions);
  if (mlir::failed(amdPm.run(*amd)))
    return fail("fmha-to-rocdl-pipeline");
  std::string isa;
  amd->walk([&](mlir::gpu::BinaryOp op) {
    for (mlir::Attribute attr : op.getObjectsAttr())
      isa = mlir::cast<mlir::gpu::ObjectAttr>(attr).getObject().str();
  });
  if (isa.find("v_mfma_f32_16x16x16_bf16") == std::string::npos)
    return fail("no bf16 MFMA in the gfx942 ISA");

  llvm::outs() << "fmha-consumer: OK (CPU pipeline; NVVM pipeline: "
               << ptx.size() << " bytes of PTX; ROCDL pipeline: " << isa.size()
               << " bytes of gfx942 ISA)\n";
  return 0;
}
