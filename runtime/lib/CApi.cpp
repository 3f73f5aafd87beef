//===- CApi.cpp - FMHA runtime C API --------------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Thin wrappers over Runtime.h. Each entry point catches every exception so
// that none crosses into C.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"
#include "fmha/Runtime/fmha_runtime.h"

#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

using namespace fmha::rt;

struct fmhaKernel_st {
  std::unique_ptr<Kernel> kernel;
  std::string mask;
  std::string manifest; ///< fmhaKernelGetManifest's text, made on first use
};

static_assert(
    FMHA_ERROR_INVALID_ARGUMENT ==
            static_cast<int>(ErrorCode::InvalidArgument) &&
        FMHA_ERROR_BAD_BUNDLE == static_cast<int>(ErrorCode::BadBundle) &&
        FMHA_ERROR_PROBLEM_MISMATCH ==
            static_cast<int>(ErrorCode::ProblemMismatch) &&
        FMHA_ERROR_BACKEND_UNAVAILABLE ==
            static_cast<int>(ErrorCode::BackendUnavailable) &&
        FMHA_ERROR_LOAD_FAILED == static_cast<int>(ErrorCode::LoadFailed) &&
        FMHA_ERROR_LAUNCH_FAILED == static_cast<int>(ErrorCode::LaunchFailed) &&
        FMHA_ERROR_OUT_OF_MEMORY == static_cast<int>(ErrorCode::OutOfMemory) &&
        FMHA_ERROR_IO == static_cast<int>(ErrorCode::Io),
    "C status codes follow fmha::rt::ErrorCode");
static_assert(FMHA_TARGET_CUDA == static_cast<int>(Target::Cuda) &&
                  FMHA_TARGET_HIP == static_cast<int>(Target::Hip) &&
                  FMHA_KIND_BWD == static_cast<int>(KernelKind::Backward) &&
                  FMHA_KIND_MERGE == static_cast<int>(KernelKind::Merge) &&
                  FMHA_KIND_ACC == static_cast<int>(KernelKind::Accumulate) &&
                  FMHA_DTYPE_F16 == static_cast<int>(DType::F16) &&
                  FMHA_DTYPE_BF16 == static_cast<int>(DType::BF16),
              "C enum values follow fmha::rt");

namespace {

thread_local std::string lastError;

int setError(int code, const char *message) {
  try {
    lastError = message;
  } catch (...) {
  }
  return code;
}

int report(const Status &s) {
  if (s.ok())
    return FMHA_SUCCESS;
  return setError(static_cast<int>(s.code()), s.message().c_str());
}

/// Runs `body` (returning an int status), turning exceptions into errors.
template <typename Body> int guarded(Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return setError(FMHA_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return setError(FMHA_ERROR_INVALID_ARGUMENT, e.what());
  } catch (...) {
    return setError(FMHA_ERROR_INVALID_ARGUMENT, "unknown C++ exception");
  }
}

int wrap(Expected<std::unique_ptr<Kernel>> loaded, fmhaKernel *out) {
  if (!loaded.ok())
    return report(loaded.status());
  auto *handle = new fmhaKernel_st;
  handle->kernel = loaded.take();
  handle->mask = handle->kernel->meta().mask.str();
  *out = handle;
  return FMHA_SUCCESS;
}

Problem toProblem(const fmhaProblem &p) {
  Problem r;
  r.b = p.b;
  r.hq = p.hq;
  r.hk = p.hk;
  r.sq = p.sq;
  r.sk = p.sk;
  r.d = p.d;
  r.dv = p.dv;
  return r;
}

ForwardArgs toArgs(const void *q, const void *k, const void *v, void *o,
                   float *lse) {
  ForwardArgs args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.lse = lse;
  return args;
}

BackwardArgs toBackwardArgs(const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *dO,
                            void *dq, void *dk, void *dv) {
  BackwardArgs args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.o = o;
  args.lse = lse;
  args.dO = dO;
  args.dq = dq;
  args.dk = dk;
  args.dv = dv;
  return args;
}

/// The named arguments of a C launch, or an error status (non-zero): a
/// null handle or array, a null or repeated name, an unknown kind, strides
/// with a negative count.
int toLaunchArgs(fmhaKernel kernel, const fmhaArg *args, size_t num_args,
                 const char *fn, LaunchArgs *out) {
  auto bad = [&](const std::string &why) {
    return setError(FMHA_ERROR_INVALID_ARGUMENT,
                    (std::string(fn) + ": " + why).c_str());
  };
  if (!kernel || (!args && num_args))
    return bad("null argument");
  for (size_t i = 0; i < num_args; ++i) {
    const fmhaArg &a = args[i];
    const std::string where = "argument " + std::to_string(i);
    if (!a.name)
      return bad(where + " has no name");
    std::string name = a.name;
    if (out->sizes.count(name) || out->tensors.count(name))
      return bad("argument '" + name + "' is given twice");
    if (a.kind == FMHA_ARG_SIZE) {
      out->size(name, a.value);
    } else if (a.kind == FMHA_ARG_TENSOR) {
      if (a.num_strides < 0 || a.num_strides > 64 ||
          (a.num_strides > 0 && !a.strides))
        return bad("argument '" + name + "' has a bad stride array (" +
                   std::to_string(a.num_strides) + " strides)");
      std::vector<int64_t> strides;
      if (a.num_strides > 0)
        strides.assign(a.strides, a.strides + a.num_strides);
      if (!a.data)
        return bad("null pointer for " + name);
      out->tensor(name, a.data, std::move(strides));
    } else {
      return bad(where + " ('" + name + "') has kind " +
                 std::to_string(a.kind) +
                 " (FMHA_ARG_SIZE or FMHA_ARG_TENSOR)");
    }
  }
  return FMHA_SUCCESS;
}

/// The backend of a C target value, or an error status (non-zero).
int backendFor(int target, const char *fn, Backend **out) {
  if (target != FMHA_TARGET_CPU && target != FMHA_TARGET_CUDA &&
      target != FMHA_TARGET_HIP)
    return setError(FMHA_ERROR_INVALID_ARGUMENT,
                    (std::string(fn) + ": unknown target " +
                     std::to_string(target) +
                     " (FMHA_TARGET_CPU, _CUDA or _HIP)")
                        .c_str());
  Expected<Backend *> backend = getBackend(static_cast<Target>(target));
  if (!backend.ok())
    return report(backend.status());
  *out = *backend;
  return FMHA_SUCCESS;
}

} // namespace

extern "C" {

const char *fmhaGetLastError(void) { return lastError.c_str(); }

const char *fmhaStatusString(int status) {
  switch (status) {
  case FMHA_SUCCESS:
    return "FMHA_SUCCESS";
  case FMHA_ERROR_INVALID_ARGUMENT:
    return "FMHA_ERROR_INVALID_ARGUMENT";
  case FMHA_ERROR_BAD_BUNDLE:
    return "FMHA_ERROR_BAD_BUNDLE";
  case FMHA_ERROR_PROBLEM_MISMATCH:
    return "FMHA_ERROR_PROBLEM_MISMATCH";
  case FMHA_ERROR_BACKEND_UNAVAILABLE:
    return "FMHA_ERROR_BACKEND_UNAVAILABLE";
  case FMHA_ERROR_LOAD_FAILED:
    return "FMHA_ERROR_LOAD_FAILED";
  case FMHA_ERROR_LAUNCH_FAILED:
    return "FMHA_ERROR_LAUNCH_FAILED";
  case FMHA_ERROR_OUT_OF_MEMORY:
    return "FMHA_ERROR_OUT_OF_MEMORY";
  case FMHA_ERROR_IO:
    return "FMHA_ERROR_IO";
  default:
    return "FMHA_ERROR_UNKNOWN";
  }
}

const char *fmhaGetVersion(void) { return versionString(); }

int fmhaKernelLoadFile(const char *path, fmhaKernel *kernel) {
  return guarded([&] {
    if (!path || !kernel)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelLoadFile: null argument");
    *kernel = nullptr;
    return wrap(Kernel::loadFile(path), kernel);
  });
}

int fmhaKernelLoadBytes(const void *data, size_t size, fmhaKernel *kernel) {
  return guarded([&] {
    if (!kernel || (!data && size))
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelLoadBytes: null argument");
    *kernel = nullptr;
    std::string_view bytes(static_cast<const char *>(data), data ? size : 0);
    return wrap(Kernel::loadBytes(bytes), kernel);
  });
}

int fmhaKernelGetInfo(fmhaKernel kernel, fmhaKernelInfo *info) {
  return guarded([&] {
    if (!kernel || !info)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelGetInfo: null argument");
    const BundleMeta &m = kernel->kernel->meta();
    info->target = static_cast<int>(m.target);
    info->kind = static_cast<int>(m.kind);
    info->dtype = static_cast<int>(m.dtype);
    info->hq = m.hq;
    info->hk = m.hk;
    info->d = m.d;
    info->dv = m.dv;
    info->block_m = m.blockM;
    info->block_n = m.blockN;
    info->scale = m.scale;
    info->effective_scale = m.effectiveScale();
    info->softcap = m.softcap;
    info->mask = kernel->mask.c_str();
    info->kernel = m.kernel.c_str();
    info->chip = m.chip.c_str();
    info->block_threads = m.blockThreads;
    info->shared_bytes = m.sharedBytes;
    info->abi = m.abi.c_str();
    info->binary_format = toString(m.binaryFormat);
    info->deterministic = m.deterministic ? 1 : 0;
    info->bundle_version = m.formatVersion;
    info->num_kernels = static_cast<int>(m.manifest.kernels.size());
    return FMHA_SUCCESS;
  });
}

int fmhaGetApiVersion(void) { return FMHA_API_VERSION; }

int fmhaSetHostThreads(int threads) {
  return guarded([&] { return report(setHostThreads(threads)); });
}

int fmhaGetHostThreads(void) { return hostThreads(); }

int fmhaKernelGetManifest(fmhaKernel kernel, const char **manifest) {
  return guarded([&] {
    if (!kernel || !manifest)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelGetManifest: null argument");
    if (kernel->manifest.empty())
      kernel->manifest = kernel->kernel->meta().manifest.str();
    *manifest = kernel->manifest.c_str();
    return FMHA_SUCCESS;
  });
}

int fmhaKernelLaunch(fmhaKernel kernel, const fmhaArg *args, size_t num_args,
                     void *workspace, size_t workspace_bytes, void *stream) {
  return guarded([&] {
    LaunchArgs named;
    if (int rc =
            toLaunchArgs(kernel, args, num_args, "fmhaKernelLaunch", &named))
      return rc;
    return report(
        kernel->kernel->launch(named, stream, workspace, workspace_bytes));
  });
}

int fmhaKernelLaunchHost(fmhaKernel kernel, const fmhaArg *args,
                         size_t num_args, void *stream) {
  return guarded([&] {
    LaunchArgs named;
    if (int rc = toLaunchArgs(kernel, args, num_args, "fmhaKernelLaunchHost",
                              &named))
      return rc;
    return report(kernel->kernel->launchHost(named, stream));
  });
}

int fmhaKernelWorkspaceBytes(fmhaKernel kernel, const fmhaArg *args,
                             size_t num_args, size_t *bytes) {
  return guarded([&] {
    LaunchArgs named;
    if (!bytes)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelWorkspaceBytes: null argument");
    if (int rc = toLaunchArgs(kernel, args, num_args,
                              "fmhaKernelWorkspaceBytes", &named))
      return rc;
    Expected<size_t> need = kernel->kernel->workspaceBytes(named);
    if (!need.ok())
      return report(need.status());
    *bytes = *need;
    return FMHA_SUCCESS;
  });
}

int fmhaKernelCheckProblem(fmhaKernel kernel, const fmhaProblem *problem) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelCheckProblem: null argument");
    return report(kernel->kernel->checkProblem(toProblem(*problem)));
  });
}

int fmhaKernelRunForward(fmhaKernel kernel, const fmhaProblem *problem,
                         const void *q, const void *k, const void *v, void *o,
                         float *lse, void *stream) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunForward: null kernel or problem");
    return report(kernel->kernel->runHost(toProblem(*problem),
                                          toArgs(q, k, v, o, lse), stream));
  });
}

int fmhaKernelRunForwardDevice(fmhaKernel kernel, const fmhaProblem *problem,
                               const void *q, const void *k, const void *v,
                               void *o, float *lse, void *stream) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunForwardDevice: null kernel or problem");
    return report(kernel->kernel->run(toProblem(*problem),
                                      toArgs(q, k, v, o, lse), stream));
  });
}

int fmhaKernelRunBackward(fmhaKernel kernel, const fmhaProblem *problem,
                          const void *q, const void *k, const void *v,
                          const void *o, const float *lse, const void *dO,
                          void *dq, void *dk, void *dv, void *stream) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunBackward: null kernel or problem");
    return report(kernel->kernel->runBackwardHost(
        toProblem(*problem), toBackwardArgs(q, k, v, o, lse, dO, dq, dk, dv),
        stream));
  });
}

int fmhaKernelRunBackwardDevice(fmhaKernel kernel, const fmhaProblem *problem,
                                const void *q, const void *k, const void *v,
                                const void *o, const float *lse, const void *dO,
                                void *dq, void *dk, void *dv, void *stream) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunBackwardDevice: null kernel or problem");
    return report(kernel->kernel->runBackward(
        toProblem(*problem), toBackwardArgs(q, k, v, o, lse, dO, dq, dk, dv),
        stream));
  });
}

int fmhaKernelBackwardWorkspaceBytes(fmhaKernel kernel,
                                     const fmhaProblem *problem,
                                     size_t *bytes) {
  return guarded([&] {
    if (!kernel || !problem || !bytes)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelBackwardWorkspaceBytes: null argument");
    Expected<size_t> need =
        kernel->kernel->backwardWorkspaceBytes(toProblem(*problem));
    if (!need.ok())
      return report(need.status());
    *bytes = *need;
    return FMHA_SUCCESS;
  });
}

int fmhaKernelRunBackwardDeviceWorkspace(
    fmhaKernel kernel, const fmhaProblem *problem, const void *q, const void *k,
    const void *v, const void *o, const float *lse, const void *dO, void *dq,
    void *dk, void *dv, void *workspace, size_t workspace_bytes, void *stream) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunBackwardDeviceWorkspace: null kernel or "
                      "problem");
    BackwardArgs args = toBackwardArgs(q, k, v, o, lse, dO, dq, dk, dv);
    args.workspace = workspace;
    args.workspaceBytes = workspace_bytes;
    return report(
        kernel->kernel->runBackward(toProblem(*problem), args, stream));
  });
}

int fmhaKernelRunMerge(fmhaKernel kernel, const fmhaMergeProblem *problem,
                       const void *o1, const float *lse1, const void *o2,
                       const float *lse2, void *o, float *lse, void *stream) {
  return guarded([&] {
    if (!kernel || !problem)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunMerge: null kernel or problem");
    MergeProblem p;
    p.b = problem->b;
    p.h = problem->h;
    p.s = problem->s;
    p.dv = problem->dv;
    MergeArgs args;
    args.o1 = o1;
    args.lse1 = lse1;
    args.o2 = o2;
    args.lse2 = lse2;
    args.o = o;
    args.lse = lse;
    return report(kernel->kernel->runMerge(p, args, stream));
  });
}

int fmhaKernelRunAccumulate(fmhaKernel kernel, int64_t n, const void *x,
                            float *acc, void *stream) {
  return guarded([&] {
    if (!kernel)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelRunAccumulate: null kernel");
    AccumulateArgs args;
    args.x = x;
    args.acc = acc;
    return report(kernel->kernel->runAccumulate(n, args, stream));
  });
}

int fmhaKernelGetDevice(fmhaKernel kernel, int *device) {
  return guarded([&] {
    if (!kernel || !device)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaKernelGetDevice: null argument");
    *device = kernel->kernel->backend().deviceOrdinal();
    return FMHA_SUCCESS;
  });
}

int fmhaBackendDescription(int target, const char **description) {
  return guarded([&] {
    if (!description)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaBackendDescription: null argument");
    Backend *backend = nullptr;
    if (int status = backendFor(target, "fmhaBackendDescription", &backend))
      return status;
    static std::mutex mutex;
    static std::map<int, std::string> descriptions;
    std::lock_guard<std::mutex> lock(mutex);
    std::string &d = descriptions[target];
    if (d.empty())
      d = backend->description();
    *description = d.c_str();
    return FMHA_SUCCESS;
  });
}

int fmhaDeviceMalloc(int target, size_t bytes, void **ptr) {
  return guarded([&] {
    if (!ptr)
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaDeviceMalloc: null argument");
    *ptr = nullptr;
    Backend *backend = nullptr;
    if (int status = backendFor(target, "fmhaDeviceMalloc", &backend))
      return status;
    Expected<void *> p = backend->allocate(bytes);
    if (!p.ok())
      return report(p.status());
    *ptr = *p;
    return FMHA_SUCCESS;
  });
}

int fmhaDeviceFree(int target, void *ptr) {
  return guarded([&] {
    Backend *backend = nullptr;
    if (int status = backendFor(target, "fmhaDeviceFree", &backend))
      return status;
    if (ptr)
      backend->deallocate(ptr);
    return FMHA_SUCCESS;
  });
}

int fmhaMemcpyHostToDevice(int target, void *dst, const void *src,
                           size_t bytes) {
  return guarded([&] {
    if (bytes && (!dst || !src))
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaMemcpyHostToDevice: null pointer");
    Backend *backend = nullptr;
    if (int status = backendFor(target, "fmhaMemcpyHostToDevice", &backend))
      return status;
    return report(backend->copyToDevice(dst, src, bytes));
  });
}

int fmhaMemcpyDeviceToHost(int target, void *dst, const void *src,
                           size_t bytes) {
  return guarded([&] {
    if (bytes && (!dst || !src))
      return setError(FMHA_ERROR_INVALID_ARGUMENT,
                      "fmhaMemcpyDeviceToHost: null pointer");
    Backend *backend = nullptr;
    if (int status = backendFor(target, "fmhaMemcpyDeviceToHost", &backend))
      return status;
    return report(backend->copyToHost(dst, src, bytes));
  });
}

int fmhaDeviceSynchronize(int target, void *stream) {
  return guarded([&] {
    Backend *backend = nullptr;
    if (int status = backendFor(target, "fmhaDeviceSynchronize", &backend))
      return status;
    return report(backend->synchronize(stream));
  });
}

void fmhaKernelDestroy(fmhaKernel kernel) {
  try {
    delete kernel;
  } catch (...) {
  }
}

} // extern "C"
