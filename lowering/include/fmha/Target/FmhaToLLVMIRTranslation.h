//===- FmhaToLLVMIRTranslation.h - fmha attributes in LLVM IR ---*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The fmha dialect's LLVM IR translation interface: discardable `fmha.*`
// attributes on LLVM dialect operations that become LLVM IR metadata, for
// what MLIR's LLVM dialect cannot say itself.
//
//   llvm.atomicrmw fadd %p, %v monotonic
//       {fmha.amdgpu_no_fine_grained_memory, fmha.amdgpu_no_remote_memory}
//   -> atomicrmw fadd ptr %p, float %v monotonic,
//        !amdgpu.no.fine.grained.memory !0, !amdgpu.no.remote.memory !0
//
// Each attribute is a unit attribute allowed on `llvm.atomicrmw` only; it
// states a fact about the memory the atomic addresses that the AMDGPU
// backend needs to select a native instruction (LLVM's AMDGPUUsage, the
// `amdgpu.no.*` atomicrmw metadata). On any other operation, or not a unit,
// the translation fails with an error naming the attribute. Other `fmha.*`
// attributes pass through translation untouched.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TARGET_FMHATOLLVMIRTRANSLATION_H
#define FMHA_TARGET_FMHATOLLVMIRTRANSLATION_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class DialectRegistry;

namespace fmha {

/// The atomic never addresses fine-grained (host-coherent) memory:
/// `!amdgpu.no.fine.grained.memory`.
inline constexpr llvm::StringLiteral kAmdgpuNoFineGrainedMemoryAttrName =
    "fmha.amdgpu_no_fine_grained_memory";
/// The atomic never addresses memory of another device over PCIe/xGMI:
/// `!amdgpu.no.remote.memory`.
inline constexpr llvm::StringLiteral kAmdgpuNoRemoteMemoryAttrName =
    "fmha.amdgpu_no_remote_memory";
/// A floating-point atomic may flush denormals (gfx90a's global f32 add
/// does): `!amdgpu.ignore.denormal.mode`.
inline constexpr llvm::StringLiteral kAmdgpuIgnoreDenormalModeAttrName =
    "fmha.amdgpu_ignore_denormal_mode";

/// Adds the fmha dialect with its LLVM IR translation interface (through a
/// dialect extension); registerAllFmhaDialects calls it.
void registerFmhaDialectTranslation(DialectRegistry &registry);

} // namespace fmha
} // namespace mlir

#endif // FMHA_TARGET_FMHATOLLVMIRTRANSLATION_H
