//===- FmhaIrFuzzer.cpp - Fuzz the fmha dialect, tile pass and pipelines --===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Input: MLIR text (seeded from the lit tests). Parsing and verifying it may
// fail with diagnostics, never with a crash. A module that verifies and holds
// only fmha ops, functions and the few upstream ops the lit tests use then:
//   - prints and parses back to the same text (the dialect's printers and
//     parsers agree);
//   - goes through --fmha-tile-attention, the fmha-to-cpu-pipeline and
//     --fmha-lower-to-gpu (block sizes picked from the input), each of which
//     may fail with a diagnostic but never crashes, asserts, or succeeds with
//     IR that does not verify (checked after every pass).
// Upstream-only IR is not run through the passes: crashes of upstream passes
// on arbitrary upstream IR are not this project's findings. Inputs over 8 KiB
// or nested more than 64 brackets deep are skipped (they only find MLIR's
// recursive-descent parser running out of stack).
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "fmha/Conversion/Passes.h"
#include "fmha/InitAllFmha.h"
#include "fmha/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

using namespace mlir;

namespace {

constexpr size_t kMaxInput = 8192;
constexpr int kMaxNesting = 64;

/// Upstream ops that may appear beside fmha ops (what the lit tests use).
bool isAllowedOp(Operation *op) {
  StringRef dialect = op->getName().getDialectNamespace();
  if (dialect == "fmha")
    return true;
  static const llvm::StringSet<> allowed = {
      "builtin.module", "func.func",    "func.return",   "arith.constant",
      "tensor.empty",   "memref.alloc", "memref.alloca", "memref.dealloc",
      "memref.subview", "scf.parallel", "scf.reduce",    "scf.for",
      "scf.yield"};
  return allowed.contains(op->getName().getStringRef());
}

bool tooDeep(const char *data, size_t size) {
  int depth = 0;
  for (size_t i = 0; i < size; ++i) {
    char c = data[i];
    if (c == '(' || c == '[' || c == '{' || c == '<')
      ++depth;
    else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0)
      --depth;
    if (depth > kMaxNesting)
      return true;
  }
  return false;
}

std::string print(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

/// After every pass that succeeds, the IR must verify.
class VerifyAfterEachPass : public PassInstrumentation {
public:
  void runAfterPass(Pass *pass, Operation *op) override {
    FUZZ_CHECK(succeeded(verify(op)),
               "pass '" + pass->getArgument().str() +
                   "' succeeded but left IR that does not verify");
  }
};

const DialectRegistry &registry() {
  static DialectRegistry *r = [] {
    auto *reg = new DialectRegistry();
    mlir::fmha::registerAllFmhaDialects(*reg);
    return reg;
  }();
  return *r;
}

/// Runs `build`'s passes on a clone of `module`; failure is fine.
template <typename Build>
void runPasses(MLIRContext &ctx, ModuleOp module, Build build) {
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(&ctx);
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>());
  build(pm);
  (void)pm.run(*clone);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = reinterpret_cast<const char *>(data);
  if (size > kMaxInput || tooDeep(text, size))
    return -1;
  MLIRContext ctx(registry(), MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  ParserConfig config(&ctx);
  // MLIR's lexer reads the NUL after the buffer (as files have it).
  std::string source(text, size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, config);
  if (!module)
    return 0;
  bool onlyAllowed = true;
  module->walk([&](Operation *op) {
    if (!isAllowedOp(op))
      onlyAllowed = false;
  });
  if (!onlyAllowed)
    return 0;

  // The printed form parses back and prints the same.
  std::string printed = print(*module);
  {
    OwningOpRef<ModuleOp> again = parseSourceString<ModuleOp>(printed, config);
    FUZZ_CHECK(again, "the printed module does not parse:\n" + printed);
    FUZZ_CHECK(print(*again) == printed,
               "print-parse-print changes the text:\n" + printed);
  }

  // Tile sizes from the input: mostly the usual ones, sometimes odd ones.
  static const int64_t kBlocks[][2] = {{64, 64}, {32, 64}, {16, 16},
                                       {1, 1},   {3, 5},   {128, 32}};
  uint32_t h = 0;
  for (size_t i = 0; i < size; ++i)
    h = h * 31 + data[i];
  const int64_t *block = kBlocks[h % 6];

  runPasses(ctx, *module, [&](PassManager &pm) {
    mlir::fmha::FmhaTileAttentionPassOptions tile;
    tile.blockM = block[0];
    tile.blockN = block[1];
    pm.addPass(mlir::fmha::createFmhaTileAttentionPass(tile));
  });
  runPasses(ctx, *module, [&](PassManager &pm) {
    mlir::fmha::CpuPipelineOptions options;
    options.blockM = block[0];
    options.blockN = block[1];
    mlir::fmha::buildFmhaToCpuPipeline(pm, options);
  });
  runPasses(ctx, *module, [&](PassManager &pm) {
    mlir::fmha::FmhaLowerToGpuPassOptions gpu;
    gpu.blockM = block[0];
    gpu.blockN = block[1];
    pm.addPass(mlir::fmha::createFmhaLowerToGpuPass(gpu));
  });
  return 0;
}
