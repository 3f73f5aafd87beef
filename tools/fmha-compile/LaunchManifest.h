//===- LaunchManifest.h - The manifest of a lowered module ------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// fmha-compile's bridge from IR to the bundle's launch manifest
// (fmha/Runtime/Manifest.h): the operands come from the signature of the
// function it built, the kernels from the `gpu.launch_func` ops the GPU
// pipeline leaves in that function, their grids, shared memory and
// parameters from the values those ops take (sizes read with memref.dim,
// arith on them, flat views of the operands, allocations the runtime turns
// into workspaces). Nothing about a kernel kind is written here: a new
// operand or workspace of the lowering reaches the runtime with no change.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_COMPILE_LAUNCHMANIFEST_H
#define FMHA_TOOLS_FMHA_COMPILE_LAUNCHMANIFEST_H

#include "fmha/Runtime/Manifest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace fmha::compile {

/// One argument of the function fmha-compile builds: the operand's name,
/// role, whether a caller may leave it out, and the size names of its
/// dynamic dimensions, in order ("b", "sq"; "b+1" for one size more than b).
struct OperandSpec {
  std::string name;
  rt::ManifestOperand::Role role = rt::ManifestOperand::Role::In;
  bool optional = false;
  std::vector<std::string> dynamicDims;
};

/// The manifest's sizes and operands for `func`'s arguments described by
/// `specs` (one each, in order); the call is ciface with one kernel that
/// takes every operand as a memref, in order (the host ABI). Fails (false,
/// *err) when an argument is neither a ranked tensor nor a memref of
/// identity layout, an element type has no manifest type, or the counts
/// differ.
bool hostManifest(mlir::func::FuncOp func,
                  const std::vector<OperandSpec> &specs, rt::Manifest *out,
                  std::string *err);

/// Replaces the kernels of `m` (built by hostManifest for the same
/// function) with the `gpu.launch_func` ops of `hostFunc`, in order: call
/// gpu, the grids, blocks (constants), shared memory, and per launch
/// operand its parameters: a memref<?xT> of identity layout is five
/// (NAME.allocated, NAME.aligned: ptr; NAME.offset = 0, NAME.size, NAME.stride
/// = 1: index), an index one (its size name when it is one, else argN).
/// Index parameters are i32 when `indexBits` is 32. A memref.alloc a launch
/// takes becomes a workspace, named by its `fmha.workspace` attribute (else
/// workspaceN). Fails with a message naming the op and the value it cannot
/// express.
bool gpuManifest(mlir::func::FuncOp hostFunc, int64_t indexBits,
                 rt::Manifest *m, std::string *err);

} // namespace fmha::compile

#endif // FMHA_TOOLS_FMHA_COMPILE_LAUNCHMANIFEST_H
