//===- Backends.h - Factories of the built-in backends ----------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Internal to runtime/: each backend under runtime/backends/<name>/ exposes
// one factory here, and getBackend() (Runtime.cpp) picks by target. A CUDA
// or HIP backend adds its factory, which dlopen's its driver library and
// returns BackendUnavailable when that fails.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_LIB_BACKENDS_H
#define FMHA_RUNTIME_LIB_BACKENDS_H

#include "fmha/Runtime/Runtime.h"

#include <memory>

namespace fmha::rt::detail {

/// The host backend: kernels are ELF shared objects run on the calling
/// thread and, for their parallel loops, the thread pool below; memory is
/// host memory.
Expected<std::unique_ptr<Backend>> createHostBackend();

/// The parallel-for a cpu kernel's `fmha_parallel_for` hook is set to: runs
/// body(ctx, i, i + 1) for every i in [0, n) on up to hostThreads() threads
/// and returns when all have run (HostThreads.cpp).
void hostParallelFor(int64_t n, void (*body)(void *, int64_t, int64_t),
                     void *ctx);

/// The CUDA backend over the driver API, dlopen'ed at run time (libcuda.so.1,
/// or $FMHA_CUDA_LIBRARY). Fails with BackendUnavailable when the library,
/// one of its functions or a device is missing.
Expected<std::unique_ptr<Backend>> createCudaBackend();

/// The HIP backend over the HIP runtime API, dlopen'ed at run time
/// (libamdhip64.so, .so.5, .so.6 or .so.7, or $FMHA_HIP_LIBRARY). Fails
/// with BackendUnavailable when the library, one of its functions or an AMD
/// GPU is missing.
Expected<std::unique_ptr<Backend>> createHipBackend();

} // namespace fmha::rt::detail

#endif // FMHA_RUNTIME_LIB_BACKENDS_H
