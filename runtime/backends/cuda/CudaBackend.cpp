//===- CudaBackend.cpp - Runs gpu-flat-v1 kernels through the CUDA driver -===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA driver API, dlopen'ed at run time: nothing of CUDA is needed to
// build this file. The driver library is libcuda.so.1, or the file named by
// the environment variable FMHA_CUDA_LIBRARY (the unit tests point it at a
// missing file and at a fake driver).
//
// The backend binds to one device for the life of the process: the one in
// $FMHA_CUDA_DEVICE if set, else the device of the context current on the
// calling thread at first use (what PyTorch leaves current), else device 0.
// It uses that device's primary context (the one the CUDA runtime and
// PyTorch use too), pushing it around each driver call when another context
// is current and popping it afterwards, so the caller's context is left as
// it was. Streams given to it must belong to that context (a null stream is
// the legacy default stream).
//
// Every driver call is checked; a failure becomes a Status whose message
// names the call and the error ("cuModuleLoadDataEx failed:
// CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed); JIT log: ...").
//
//===----------------------------------------------------------------------===//

#include "Backends.h"
#include "Util.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <string>

namespace fmha::rt::detail {

namespace {

//===----------------------------------------------------------------------===//
// The driver API subset (types and values as cuda.h declares them)
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// CUjit_option
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// Dynamic shared memory a kernel may use without opting in.
constexpr int64_t kDefaultSharedLimit = 48 * 1024;

/// X(member, return type, parameter types...): every driver function used,
/// looked up by the member's name. Versioned names (_v2) are the ones
/// cuda.h maps the plain names to; the unversioned cuMemAlloc & co. are the
/// old 32-bit entry points.
#define FMHA_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuGetErrorName, CUresult, CUresult, const char **)                         \
  X(cuGetErrorString, CUresult, CUresult, const char **)                       \
  X(cuInit, CUresult, unsigned)                                                \
  X(cuDriverGetVersion, CUresult, int *)                                       \
  X(cuDeviceGetCount, CUresult, int *)                                         \
  X(cuDeviceGet, CUresult, CUdevice *, int)                                    \
  X(cuDeviceGetName, CUresult, char *, int, CUdevice)                          \
  X(cuDeviceGetAttribute, CUresult, int *, int, CUdevice)                      \
  X(cuDevicePrimaryCtxRetain, CUresult, CUcontext *, CUdevice)                 \
  X(cuCtxGetCurrent, CUresult, CUcontext *)                                    \
  X(cuCtxSetCurrent, CUresult, CUcontext)                                      \
  X(cuCtxGetDevice, CUresult, CUdevice *)                                      \
  X(cuCtxPushCurrent_v2, CUresult, CUcontext)                                  \
  X(cuCtxPopCurrent_v2, CUresult, CUcontext *)                                 \
  X(cuCtxSynchronize, CUresult)                                                \
  X(cuModuleLoadDataEx, CUresult, CUmodule *, const void *, unsigned, int *,   \
    void **)                                                                   \
  X(cuModuleUnload, CUresult, CUmodule)                                        \
  X(cuModuleGetFunction, CUresult, CUfunction *, CUmodule, const char *)       \
  X(cuFuncGetAttribute, CUresult, int *, int, CUfunction)                      \
  X(cuFuncSetAttribute, CUresult, CUfunction, int, int)                        \
  X(cuLaunchKernel, CUresult, CUfunction, unsigned, unsigned, unsigned,        \
    unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **)        \
  X(cuMemAlloc_v2, CUresult, CUdeviceptr *, size_t)                            \
  X(cuMemFree_v2, CUresult, CUdeviceptr)                                       \
  X(cuMemcpyHtoD_v2, CUresult, CUdeviceptr, const void *, size_t)              \
  X(cuMemcpyDtoH_v2, CUresult, void *, CUdeviceptr, size_t)                    \
  X(cuMemsetD8Async, CUresult, CUdeviceptr, unsigned char, size_t, CUstream)   \
  X(cuStreamSynchronize, CUresult, CUstream)                                   \
  X(cuEventCreate, CUresult, CUevent *, unsigned)                              \
  X(cuEventRecord, CUresult, CUevent, CUstream)                                \
  X(cuEventSynchronize, CUresult, CUevent)                                     \
  X(cuEventElapsedTime, CUresult, float *, CUevent, CUevent)                   \
  X(cuEventDestroy_v2, CUresult, CUevent)

/// The loaded driver: the library handle and one pointer per function.
struct Driver {
#define FMHA_DECLARE(name, ret, ...) ret (*name)(__VA_ARGS__) = nullptr;
  FMHA_CUDA_DRIVER_FUNCTIONS(FMHA_DECLARE)
#undef FMHA_DECLARE

  /// "CUDA_ERROR_X (what it means)", or "CUresult N" for a code the driver
  /// does not name.
  std::string describe(CUresult r) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
      return "CUresult " + std::to_string(r);
    std::string s = name;
    if (cuGetErrorString(r, &text) == CUDA_SUCCESS && text && *text)
      s += std::string(" (") + text + ")";
    return s;
  }

  /// The Status of a failed call `call`. Out-of-memory results get
  /// ErrorCode::OutOfMemory, every other one `code`.
  Status fail(ErrorCode code, const std::string &call, CUresult r,
              const std::string &context = "") const {
    return Status::error(r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::OutOfMemory
                                                       : code,
                         printable(call + " failed: " + describe(r) +
                                   (context.empty() ? "" : "; " + context)));
  }
};

std::string dlMessage() {
  const char *msg = dlerror();
  return msg ? msg : "unknown dlopen error";
}

CUdeviceptr toDevice(const void *p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

/// Makes `ctx` current on this thread for the scope's life, restoring the
/// previous context afterwards (push/pop only when another one is current).
class ContextScope {
public:
  ContextScope(const Driver &d, CUcontext ctx) : d_(d) {
    CUcontext current = nullptr;
    CUresult r = d_.cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS) {
      status_ = d_.fail(ErrorCode::LaunchFailed, "cuCtxGetCurrent", r);
      return;
    }
    if (current == ctx)
      return;
    r = d_.cuCtxPushCurrent_v2(ctx);
    if (r != CUDA_SUCCESS) {
      status_ = d_.fail(ErrorCode::LaunchFailed, "cuCtxPushCurrent", r);
      return;
    }
    pushed_ = true;
  }
  ~ContextScope() {
    if (pushed_) {
      CUcontext popped = nullptr;
      d_.cuCtxPopCurrent_v2(&popped);
    }
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
  const Status &status() const { return status_; }

private:
  const Driver &d_;
  Status status_;
  bool pushed_ = false;
};

#define FMHA_ENTER_CONTEXT(scope)                                              \
  ContextScope scope(driver_, context_);                                       \
  if (!scope.status().ok())                                                    \
  return scope.status()

//===----------------------------------------------------------------------===//
// Kernels, timers, the backend
//===----------------------------------------------------------------------===//

class CudaBackend;

class CudaKernel final : public LoadedKernel {
public:
  CudaKernel(CudaBackend &backend, const BundleMeta &meta, CUmodule module,
             CUfunction function)
      : backend_(backend), meta_(meta), module_(module), function_(function) {}
  ~CudaKernel() override;
  Status launchForward(const Problem &p, const ForwardArgs &args,
                       void *stream) override;

private:
  CudaBackend &backend_;
  BundleMeta meta_;
  CUmodule module_;
  CUfunction function_;
};

class CudaTimer final : public StreamTimer {
public:
  CudaTimer(const Driver &driver, CUcontext context, CUevent start,
            CUevent stop)
      : driver_(driver), context_(context), start_(start), stop_(stop) {}
  ~CudaTimer() override {
    ContextScope scope(driver_, context_);
    driver_.cuEventDestroy_v2(start_);
    driver_.cuEventDestroy_v2(stop_);
  }
  Status start(void *stream) override { return record(start_, stream); }
  Status stop(void *stream) override { return record(stop_, stream); }
  Expected<double> elapsedMs() override {
    FMHA_ENTER_CONTEXT(scope);
    CUresult r = driver_.cuEventSynchronize(stop_);
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuEventSynchronize", r);
    float ms = 0;
    r = driver_.cuEventElapsedTime(&ms, start_, stop_);
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuEventElapsedTime", r);
    return static_cast<double>(ms);
  }

private:
  Status record(CUevent event, void *stream) {
    FMHA_ENTER_CONTEXT(scope);
    CUresult r = driver_.cuEventRecord(event, static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuEventRecord", r);
    return Status::success();
  }

  const Driver &driver_;
  CUcontext context_;
  CUevent start_, stop_;
};

class CudaBackend final : public Backend {
public:
  struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    int ccMajor = 0, ccMinor = 0, sms = 0, maxThreads = 0;
    int64_t maxGrid[3] = {0, 0, 0};
    int64_t sharedOptin = 0;
  };

  CudaBackend(const Driver &driver, CUcontext context, DeviceInfo info)
      : driver_(driver), context_(context), info_(std::move(info)) {}

  const Driver &driver() const { return driver_; }
  CUcontext context() const { return context_; }
  const DeviceInfo &info() const { return info_; }

  Target target() const override { return Target::Cuda; }
  int deviceOrdinal() const override { return info_.ordinal; }

  std::string description() const override {
    return "cuda: " + info_.name + " (sm_" + std::to_string(info_.ccMajor) +
           std::to_string(info_.ccMinor) + ", device " +
           std::to_string(info_.ordinal) + ")";
  }

  Expected<std::unique_ptr<LoadedKernel>>
  load(const BundleMeta &meta, std::string_view binary,
       const std::string &name) override {
    auto fail = [&](ErrorCode code, const std::string &problem) {
      return Status::error(code, "bundle '" + name + "': " + problem);
    };
    if (meta.target != Target::Cuda || meta.abi != kAbiGpuFlatV1 ||
        (meta.binaryFormat != BinaryFormat::Cubin &&
         meta.binaryFormat != BinaryFormat::Ptx))
      return fail(ErrorCode::BadBundle,
                  "the cuda backend runs target cuda, binary_format cubin or "
                  "ptx, abi gpu-flat-v1 only");
    if (meta.kind != KernelKind::Forward)
      return fail(ErrorCode::BadBundle,
                  "the cuda backend has no backward ABI yet");
    if (meta.blockThreads > info_.maxThreads)
      return fail(ErrorCode::LoadFailed,
                  "block_threads=" + std::to_string(meta.blockThreads) +
                      " exceeds the device's limit of " +
                      std::to_string(info_.maxThreads) +
                      " threads per block (" + info_.name + ")");
    if (meta.sharedBytes > info_.sharedOptin)
      return fail(ErrorCode::LoadFailed,
                  "shared_bytes=" + std::to_string(meta.sharedBytes) +
                      " exceeds the device's opt-in limit of " +
                      std::to_string(info_.sharedOptin) +
                      " bytes of shared memory per block (" + info_.name + ")");

    ContextScope scope(driver_, context_);
    if (!scope.status().ok())
      return scope.status();
    // PTX must be NUL-terminated; a cubin does not mind the extra byte.
    std::string image(binary);
    image.push_back('\0');
    char log[4096] = {0};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER,
                     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {
        log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(log) - 1))};
    CUmodule module = nullptr;
    CUresult r =
        driver_.cuModuleLoadDataEx(&module, image.data(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      std::string jitLog(log, strnlen(log, sizeof(log)));
      while (!jitLog.empty() && (jitLog.back() == '\n' || jitLog.back() == ' '))
        jitLog.pop_back();
      for (char &c : jitLog)
        if (c == '\n')
          c = ' ';
      std::string context = std::string("bundle chip ") + meta.chip +
                            ", binary_format " + toString(meta.binaryFormat) +
                            ", device sm_" + std::to_string(info_.ccMajor) +
                            std::to_string(info_.ccMinor);
      if (!jitLog.empty())
        context += "; JIT log: " + jitLog.substr(0, 1024);
      Status s =
          driver_.fail(ErrorCode::LoadFailed, "cuModuleLoadDataEx", r, context);
      return fail(s.code(), s.message());
    }
    auto unload = [&] { driver_.cuModuleUnload(module); };
    CUfunction function = nullptr;
    r = driver_.cuModuleGetFunction(&function, module, meta.kernel.c_str());
    if (r != CUDA_SUCCESS) {
      unload();
      Status s =
          driver_.fail(ErrorCode::LoadFailed, "cuModuleGetFunction", r,
                       "kernel '" + meta.kernel + "' not found in the module");
      return fail(s.code(), s.message());
    }
    int maxThreads = 0, regs = 0, staticShared = 0;
    if ((r = driver_.cuFuncGetAttribute(&maxThreads,
                                        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                        function)) != CUDA_SUCCESS ||
        (r = driver_.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                        function)) != CUDA_SUCCESS ||
        (r = driver_.cuFuncGetAttribute(&staticShared,
                                        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                        function)) != CUDA_SUCCESS) {
      unload();
      Status s = driver_.fail(ErrorCode::LoadFailed, "cuFuncGetAttribute", r);
      return fail(s.code(), s.message());
    }
    if (maxThreads < meta.blockThreads) {
      unload();
      return fail(ErrorCode::LoadFailed,
                  "kernel '" + meta.kernel + "' runs at most " +
                      std::to_string(maxThreads) + " threads per block (" +
                      std::to_string(regs) +
                      " registers per thread), the bundle's block_threads is " +
                      std::to_string(meta.blockThreads));
    }
    if (staticShared + meta.sharedBytes > info_.sharedOptin) {
      unload();
      return fail(
          ErrorCode::LoadFailed,
          "static shared memory (" + std::to_string(staticShared) +
              " bytes) plus shared_bytes=" + std::to_string(meta.sharedBytes) +
              " exceeds the device's opt-in limit of " +
              std::to_string(info_.sharedOptin) + " bytes per block");
    }
    if (staticShared + meta.sharedBytes > kDefaultSharedLimit) {
      r = driver_.cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          static_cast<int>(meta.sharedBytes));
      if (r != CUDA_SUCCESS) {
        unload();
        Status s =
            driver_.fail(ErrorCode::LoadFailed,
                         "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                             std::to_string(meta.sharedBytes) + ")",
                         r);
        return fail(s.code(), s.message());
      }
    }
    return std::unique_ptr<LoadedKernel>(
        new CudaKernel(*this, meta, module, function));
  }

  Expected<void *> allocate(size_t bytes) override {
    FMHA_ENTER_CONTEXT(scope);
    CUdeviceptr ptr = 0;
    CUresult r = driver_.cuMemAlloc_v2(&ptr, std::max<size_t>(bytes, 1));
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::OutOfMemory, "cuMemAlloc", r,
                          "allocating " + std::to_string(bytes) + " bytes on " +
                              info_.name);
    return reinterpret_cast<void *>(static_cast<uintptr_t>(ptr));
  }

  void deallocate(void *ptr) override {
    ContextScope scope(driver_, context_);
    if (scope.status().ok())
      driver_.cuMemFree_v2(toDevice(ptr));
  }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    if (!bytes)
      return Status::success();
    FMHA_ENTER_CONTEXT(scope);
    CUresult r = driver_.cuMemcpyHtoD_v2(toDevice(dst), src, bytes);
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuMemcpyHtoD", r);
    return Status::success();
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    if (!bytes)
      return Status::success();
    FMHA_ENTER_CONTEXT(scope);
    CUresult r = driver_.cuMemcpyDtoH_v2(dst, toDevice(src), bytes);
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuMemcpyDtoH", r);
    return Status::success();
  }

  Status fill(void *dst, unsigned char value, size_t bytes,
              void *stream) override {
    if (!bytes)
      return Status::success();
    FMHA_ENTER_CONTEXT(scope);
    CUresult r = driver_.cuMemsetD8Async(toDevice(dst), value, bytes,
                                         static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuMemsetD8Async", r);
    return Status::success();
  }

  Status synchronize(void *stream) override {
    FMHA_ENTER_CONTEXT(scope);
    CUresult r =
        stream ? driver_.cuStreamSynchronize(static_cast<CUstream>(stream))
               : driver_.cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed,
                          stream ? "cuStreamSynchronize" : "cuCtxSynchronize",
                          r);
    return Status::success();
  }

  Expected<std::unique_ptr<StreamTimer>> createTimer() override {
    FMHA_ENTER_CONTEXT(scope);
    CUevent start = nullptr, stop = nullptr;
    CUresult r = driver_.cuEventCreate(&start, 0);
    if (r != CUDA_SUCCESS)
      return driver_.fail(ErrorCode::LaunchFailed, "cuEventCreate", r);
    r = driver_.cuEventCreate(&stop, 0);
    if (r != CUDA_SUCCESS) {
      driver_.cuEventDestroy_v2(start);
      return driver_.fail(ErrorCode::LaunchFailed, "cuEventCreate", r);
    }
    return std::unique_ptr<StreamTimer>(
        new CudaTimer(driver_, context_, start, stop));
  }

private:
  Driver driver_;
  CUcontext context_;
  DeviceInfo info_;
};

CudaKernel::~CudaKernel() {
  ContextScope scope(backend_.driver(), backend_.context());
  backend_.driver().cuModuleUnload(module_);
}

Status CudaKernel::launchForward(const Problem &p, const ForwardArgs &args,
                                 void *stream) {
  const Driver &driver = backend_.driver();
  Expected<LaunchDims> dims = gpuLaunchDims(meta_, p, backend_.info().maxGrid);
  if (!dims.ok())
    return dims.status();
  if (!args.lse)
    return Status::error(ErrorCode::InvalidArgument,
                         "null pointer for lse (gpu-flat-v1 needs one)");
  uint64_t values[kGpuFlatV1NumParams];
  packGpuFlatV1(p, args, values);
  void *params[kGpuFlatV1NumParams];
  for (int i = 0; i < kGpuFlatV1NumParams; ++i)
    params[i] = &values[i];
  ContextScope scope(driver, backend_.context());
  if (!scope.status().ok())
    return scope.status();
  const LaunchDims &d = *dims;
  CUresult r = driver.cuLaunchKernel(
      function_, static_cast<unsigned>(d.grid[0]),
      static_cast<unsigned>(d.grid[1]), static_cast<unsigned>(d.grid[2]),
      static_cast<unsigned>(d.block[0]), static_cast<unsigned>(d.block[1]),
      static_cast<unsigned>(d.block[2]), static_cast<unsigned>(d.sharedBytes),
      static_cast<CUstream>(stream), params, nullptr);
  if (r != CUDA_SUCCESS)
    return driver.fail(
        ErrorCode::LaunchFailed, "cuLaunchKernel", r,
        "kernel '" + meta_.kernel + "', grid (" + std::to_string(d.grid[0]) +
            "," + std::to_string(d.grid[1]) + "," + std::to_string(d.grid[2]) +
            "), block (" + std::to_string(d.block[0]) + ",1,1), shared " +
            std::to_string(d.sharedBytes) + " bytes");
  return Status::success();
}

/// Reads a non-negative decimal from the environment; nullopt when unset.
std::optional<int64_t> envInt(const char *name, bool *bad) {
  const char *s = std::getenv(name);
  *bad = false;
  if (!s || !*s)
    return std::nullopt;
  std::optional<int64_t> v = parseInt(s);
  if (!v || *v < 0) {
    *bad = true;
    return std::nullopt;
  }
  return v;
}

} // namespace

Expected<std::unique_ptr<Backend>> createCudaBackend() {
  auto unavailable = [](const std::string &message) {
    return Status::error(ErrorCode::BackendUnavailable, printable(message));
  };
  const char *env = std::getenv("FMHA_CUDA_LIBRARY");
  std::string library = env && *env ? env : "libcuda.so.1";
  dlerror();
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return unavailable("CUDA driver not found: dlopen " + library +
                       " failed: " + dlMessage());

  Driver d;
  void *sym = nullptr;
#define FMHA_LOOKUP(name, ...)                                                 \
  dlerror();                                                                   \
  sym = dlsym(handle, #name);                                                  \
  if (!sym) {                                                                  \
    std::string why = dlMessage();                                             \
    dlclose(handle);                                                           \
    return unavailable("CUDA driver '" + library + "' lacks " #name ": " +     \
                       why);                                                   \
  }                                                                            \
  static_assert(sizeof(d.name) == sizeof(sym), "function pointer size");       \
  std::memcpy(&d.name, &sym, sizeof(sym));
  FMHA_CUDA_DRIVER_FUNCTIONS(FMHA_LOOKUP)
#undef FMHA_LOOKUP

  // From here on the library stays loaded: the driver may have started
  // threads.
  CUresult r = d.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return unavailable(
        "no CUDA device: " +
        d.fail(ErrorCode::BackendUnavailable, "cuInit", r).message());
  if (r != CUDA_SUCCESS)
    return unavailable(
        "the CUDA driver did not initialize: " +
        d.fail(ErrorCode::BackendUnavailable, "cuInit", r).message());
  int count = 0;
  if ((r = d.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
    return unavailable(
        d.fail(ErrorCode::BackendUnavailable, "cuDeviceGetCount", r).message());
  if (count <= 0)
    return unavailable("no CUDA device: the driver reports 0 devices");

  CudaBackend::DeviceInfo info;
  bool badEnv = false;
  std::optional<int64_t> wanted = envInt("FMHA_CUDA_DEVICE", &badEnv);
  if (badEnv)
    return unavailable(std::string("FMHA_CUDA_DEVICE='") +
                       std::getenv("FMHA_CUDA_DEVICE") +
                       "' is not a device number");
  if (wanted) {
    if (*wanted >= count)
      return unavailable("FMHA_CUDA_DEVICE=" + std::to_string(*wanted) +
                         " but the driver reports " + std::to_string(count) +
                         " device(s)");
    info.ordinal = static_cast<int>(*wanted);
  } else {
    CUcontext current = nullptr;
    CUdevice device = 0;
    if (d.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current &&
        d.cuCtxGetDevice(&device) == CUDA_SUCCESS)
      info.ordinal = device;
  }
  CUdevice device = 0;
  if ((r = d.cuDeviceGet(&device, info.ordinal)) != CUDA_SUCCESS)
    return unavailable(
        d.fail(ErrorCode::BackendUnavailable, "cuDeviceGet", r).message());
  char name[256] = {0};
  if ((r = d.cuDeviceGetName(name, sizeof(name) - 1, device)) != CUDA_SUCCESS)
    return unavailable(
        d.fail(ErrorCode::BackendUnavailable, "cuDeviceGetName", r).message());
  info.name = name[0] ? name : "unnamed device";
  struct Attr {
    int attribute;
    const char *what;
    int *out;
  };
  int grid[3] = {0, 0, 0}, optin = 0;
  Attr attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR",
       &info.ccMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR",
       &info.ccMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT",
       &info.sms},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
       &info.maxThreads},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "MAX_GRID_DIM_X", &grid[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "MAX_GRID_DIM_Y", &grid[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "MAX_GRID_DIM_Z", &grid[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", &optin},
  };
  for (const Attr &a : attrs)
    if ((r = d.cuDeviceGetAttribute(a.out, a.attribute, device)) !=
        CUDA_SUCCESS)
      return unavailable(
          d.fail(ErrorCode::BackendUnavailable,
                 std::string("cuDeviceGetAttribute(") + a.what + ")", r)
              .message());
  for (int i = 0; i < 3; ++i)
    info.maxGrid[i] = grid[i];
  info.sharedOptin = optin;

  CUcontext context = nullptr;
  if ((r = d.cuDevicePrimaryCtxRetain(&context, device)) != CUDA_SUCCESS)
    return unavailable(
        d.fail(ErrorCode::BackendUnavailable, "cuDevicePrimaryCtxRetain", r)
            .message());
  // The primary context stays retained for the life of the process.
  std::unique_ptr<Backend> backend(
      new (std::nothrow) CudaBackend(d, context, std::move(info)));
  if (!backend)
    return Status::error(ErrorCode::OutOfMemory, "out of memory");
  return backend;
}

} // namespace fmha::rt::detail
