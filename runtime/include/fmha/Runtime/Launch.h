//===- Launch.h - Named launch arguments and launch plans -------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The generic launch path: a caller names the sizes and the tensors of a
// launch (LaunchArgs); the runtime binds them to the bundle's manifest
// (Manifest.h), checks them, evaluates every expression and hands a backend
// a LaunchPlan: the kernels to launch, in order, with their grids and the
// values of their parameters. Kernel::launch (Runtime.h) does all of it; the
// per-kind entry points (run, runBackward, runMerge, runAccumulate) are thin
// wrappers that name their arguments.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_LAUNCH_H
#define FMHA_RUNTIME_LAUNCH_H

#include "fmha/Runtime/Manifest.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fmha::rt {

/// The named arguments of one launch: sizes (the manifest's `size` items)
/// and tensors (its operands). A tensor's strides are in elements, one per
/// axis; empty means contiguous row-major.
struct LaunchArgs {
  struct Tensor {
    const void *data = nullptr;
    std::vector<int64_t> strides;
  };
  std::map<std::string, int64_t, std::less<>> sizes;
  std::map<std::string, Tensor, std::less<>> tensors;

  LaunchArgs &size(std::string name, int64_t value) {
    sizes[std::move(name)] = value;
    return *this;
  }
  LaunchArgs &tensor(std::string name, const void *data,
                     std::vector<int64_t> strides = {}) {
    tensors[std::move(name)] = Tensor{data, std::move(strides)};
    return *this;
  }
};

/// Grid, block and dynamic shared memory of one launch.
struct LaunchDims {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t sharedBytes = 0;
};

/// One kernel launch of a plan.
struct PlannedLaunch {
  /// The kernel's index in the manifest (and in the backend's functions).
  size_t kernel = 0;
  /// gpu: the launch.
  LaunchDims dims;
  /// gpu: one value a parameter, in order (an i32 in the low 4 bytes).
  std::vector<uint64_t> params;
  /// ciface: one memref descriptor a parameter: allocated, aligned, offset,
  /// sizes..., strides... (8 bytes each, as MLIR lays them out).
  std::vector<std::vector<int64_t>> memrefs;
};

/// What a backend executes: memory to zero, then the launches in order, on
/// one stream.
struct LaunchPlan {
  struct Range {
    void *ptr = nullptr;
    size_t bytes = 0;
  };
  std::vector<Range> zero;
  std::vector<PlannedLaunch> launches;
};

/// A manifest's sizes, operands and workspaces bound to the arguments of
/// one launch, before any address is known.
struct LaunchBinding {
  /// Every name an expression may read: sizes, num_sms, stride(op,axis).
  std::map<std::string, int64_t, std::less<>> env;
  /// Per manifest operand: its sizes, strides (elements) and the number of
  /// elements its memory spans (0 when any size is 0).
  struct Operand {
    std::vector<int64_t> sizes, strides;
    int64_t span = 0;
    bool given = false;
  };
  std::vector<Operand> operands;
  /// Per manifest workspace: its offset in the workspace (256-byte
  /// aligned) and size; then the total.
  std::vector<size_t> workspaceOffsets, workspaceSizes;
  size_t workspaceBytes = 0;
};

/// Binds `args` to `m`: every name known (else "the bundle takes no size
/// 'x'", with the names it takes), every size given and non-negative,
/// every non-optional operand given (when `requireOperands`) and not null,
/// strides of the rank of the operand and, for a non-strided operand,
/// contiguous; then evaluates shapes and workspace sizes. `numSms` is the
/// device's num_sms. `indexBits` 32 also refuses an operand spanning more
/// than kMaxIndex32Elements (Bundle.h). On failure returns false and sets
/// *err.
bool bindLaunch(const Manifest &m, const LaunchArgs &args, int64_t numSms,
                int64_t indexBits, bool requireOperands, LaunchBinding *out,
                std::string *err);

/// The plan of a bound launch: `operandAddress[i]` is the address of
/// operand i (the caller's, or scratch for an optional one left out) and
/// `workspace` the base of binding.workspaceBytes bytes (may be null when
/// that is 0). Evaluates the kernels' conditions, grids, shared memory and
/// parameters; an i32 parameter whose value does not fit 32 bits fails.
bool planLaunch(const Manifest &m, const LaunchBinding &binding,
                const std::vector<const void *> &operandAddress,
                void *workspace, LaunchPlan *out, std::string *err);

} // namespace fmha::rt

#endif // FMHA_RUNTIME_LAUNCH_H
