//===- FmhaToLLVMIRTranslation.cpp - fmha attributes in LLVM IR -----------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// MLIR's translation to LLVM IR hands every discardable attribute whose
// dialect is loaded and has this interface to amendOperation, after the
// operation became LLVM IR instructions. The `fmha.amdgpu_*` attributes on
// `llvm.atomicrmw` become the empty metadata nodes the AMDGPU backend reads.
//
//===----------------------------------------------------------------------===//

#include "fmha/Target/FmhaToLLVMIRTranslation.h"
#include "fmha/Dialect/FmhaDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"
#include "mlir/Target/LLVMIR/ModuleTranslation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {

class FmhaDialectLLVMIRTranslationInterface
    : public LLVMTranslationDialectInterface {
public:
  using LLVMTranslationDialectInterface::LLVMTranslationDialectInterface;

  LogicalResult
  amendOperation(Operation *op, ArrayRef<llvm::Instruction *> instructions,
                 NamedAttribute attribute,
                 LLVM::ModuleTranslation &moduleTranslation) const final {
    StringRef name = attribute.getName().getValue();
    StringRef kind =
        llvm::StringSwitch<StringRef>(name)
            .Case(kAmdgpuNoFineGrainedMemoryAttrName,
                  "amdgpu.no.fine.grained.memory")
            .Case(kAmdgpuNoRemoteMemoryAttrName, "amdgpu.no.remote.memory")
            .Case(kAmdgpuIgnoreDenormalModeAttrName,
                  "amdgpu.ignore.denormal.mode")
            .Default("");
    // Other fmha attributes mean nothing in LLVM IR.
    if (kind.empty())
      return success();
    if (!isa<LLVM::AtomicRMWOp>(op))
      return op->emitError()
             << "'" << name << "' applies only to 'llvm.atomicrmw', not to '"
             << op->getName() << "'";
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    llvm::MDNode *empty =
        llvm::MDNode::get(moduleTranslation.getLLVMContext(), {});
    for (llvm::Instruction *inst : instructions)
      if (isa<llvm::AtomicRMWInst>(inst))
        inst->setMetadata(kind, empty);
    return success();
  }
};

} // namespace

void mlir::fmha::registerFmhaDialectTranslation(DialectRegistry &registry) {
  registry.insert<FmhaDialect>();
  registry.addExtension(+[](MLIRContext *, FmhaDialect *dialect) {
    dialect->addInterfaces<FmhaDialectLLVMIRTranslationInterface>();
  });
}
