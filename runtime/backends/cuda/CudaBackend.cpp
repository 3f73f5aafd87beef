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
// This file is the driver API under the GPU backend (GpuBackend.h), which
// does what CUDA and HIP do alike.
//
//===----------------------------------------------------------------------===//

#include "Backends.h"
#include "GpuBackend.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>

namespace fmha::rt::detail {

namespace {

//===----------------------------------------------------------------------===//
// The driver API subset (types and values as cuda.h declares them)
//===----------------------------------------------------------------------===//

// Handles (CUcontext, CUmodule, CUfunction, CUstream, CUevent) are opaque
// pointers: void * here.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;

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

/// Shared memory a kernel may use without opting in.
constexpr int64_t kDefaultSharedLimit = 48 * 1024;

/// X(member, return type, parameter types...): the driver functions used
/// beside ApiCalls', looked up by the member's name. Versioned names (_v2)
/// are the ones cuda.h maps the plain names to; the unversioned cuMemAlloc &
/// co. are the old 32-bit entry points.
#define FMHA_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuGetErrorName, CUresult, CUresult, const char **)                         \
  X(cuGetErrorString, CUresult, CUresult, const char **)                       \
  X(cuInit, CUresult, unsigned)                                                \
  X(cuDriverGetVersion, CUresult, int *)                                       \
  X(cuDeviceGetCount, CUresult, int *)                                         \
  X(cuDeviceGet, CUresult, CUdevice *, int)                                    \
  X(cuDeviceGetName, CUresult, char *, int, CUdevice)                          \
  X(cuDeviceGetAttribute, CUresult, int *, int, CUdevice)                      \
  X(cuDevicePrimaryCtxRetain, CUresult, void **, CUdevice)                     \
  X(cuCtxGetCurrent, CUresult, void **)                                        \
  X(cuCtxSetCurrent, CUresult, void *)                                         \
  X(cuCtxGetDevice, CUresult, CUdevice *)                                      \
  X(cuCtxPushCurrent_v2, CUresult, void *)                                     \
  X(cuCtxPopCurrent_v2, CUresult, void **)                                     \
  X(cuModuleLoadDataEx, CUresult, void **, const void *, unsigned, int *,      \
    void **)                                                                   \
  X(cuFuncSetAttribute, CUresult, void *, int, int)                            \
  X(cuMemAlloc_v2, CUresult, CUdeviceptr *, size_t)                            \
  X(cuMemFree_v2, CUresult, CUdeviceptr)                                       \
  X(cuMemcpyHtoD_v2, CUresult, CUdeviceptr, const void *, size_t)              \
  X(cuMemcpyDtoH_v2, CUresult, void *, CUdeviceptr, size_t)                    \
  X(cuMemsetD8Async, CUresult, CUdeviceptr, unsigned char, size_t, void *)     \
  X(cuEventCreate, CUresult, void **, unsigned)

/// The loaded driver: one pointer per function.
struct Driver {
#define FMHA_DECLARE(name, ret, ...) ret (*name)(__VA_ARGS__) = nullptr;
  FMHA_CUDA_DRIVER_FUNCTIONS(FMHA_DECLARE)
#undef FMHA_DECLARE
};

CUdeviceptr devicePtr(const void *p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

/// The driver API over the backend's device: calls run in its primary
/// context, pushed when another one is current and popped afterwards.
class CudaApi final : public GpuApi {
public:
  Driver d;
  void *context = nullptr;

  CudaApi() {
    functionAttributes = {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                          CU_FUNC_ATTRIBUTE_NUM_REGS,
                          CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES};
  }

  Target target() const override { return Target::Cuda; }
  bool runs(BinaryFormat f) const override {
    return f == BinaryFormat::Cubin || f == BinaryFormat::Ptx;
  }
  const char *formats() const override { return "cubin or ptx"; }
  std::string describe(int r) const override {
    const char *name = nullptr, *text = nullptr;
    if (d.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
      return "CUresult " + std::to_string(r);
    std::string s = name;
    if (d.cuGetErrorString(r, &text) == CUDA_SUCCESS && text && *text)
      s += std::string(" (") + text + ")";
    return s;
  }
  bool isOutOfMemory(int r) const override {
    return r == CUDA_ERROR_OUT_OF_MEMORY;
  }

  ApiCall enter(Saved *saved) override {
    void *current = nullptr;
    CUresult r = d.cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS || current == context)
      return {"cuCtxGetCurrent", r};
    r = d.cuCtxPushCurrent_v2(context);
    saved->changed = r == CUDA_SUCCESS;
    return {"cuCtxPushCurrent", r};
  }
  void leave(const Saved &saved) override {
    void *popped = nullptr;
    if (saved.changed)
      d.cuCtxPopCurrent_v2(&popped);
  }

  ApiCall loadModule(std::string_view binary, void **module,
                     std::string *log) override {
    // PTX must be NUL-terminated; a cubin does not mind the extra byte.
    std::string image(binary);
    image.push_back('\0');
    char buffer[4096] = {0};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER,
                     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {buffer, reinterpret_cast<void *>(
                                  static_cast<uintptr_t>(sizeof(buffer) - 1))};
    CUresult r = d.cuModuleLoadDataEx(module, image.data(), 2, options, values);
    if (r != CUDA_SUCCESS)
      log->assign(buffer, strnlen(buffer, sizeof(buffer)));
    return {"cuModuleLoadDataEx", r};
  }
  ApiCall setMaxDynamicShared(void *function, int64_t bytes) override {
    return {"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                std::to_string(bytes) + ")",
            d.cuFuncSetAttribute(
                function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                static_cast<int>(bytes))};
  }

  ApiCall allocate(size_t bytes, void **ptr) override {
    CUdeviceptr p = 0;
    CUresult r = d.cuMemAlloc_v2(&p, bytes);
    *ptr = reinterpret_cast<void *>(static_cast<uintptr_t>(p));
    return {"cuMemAlloc", r};
  }
  void free(void *ptr) override { d.cuMemFree_v2(devicePtr(ptr)); }
  ApiCall copy(void *dst, const void *src, size_t bytes,
               bool toDevice) override {
    if (toDevice)
      return {"cuMemcpyHtoD", d.cuMemcpyHtoD_v2(devicePtr(dst), src, bytes)};
    return {"cuMemcpyDtoH", d.cuMemcpyDtoH_v2(dst, devicePtr(src), bytes)};
  }
  ApiCall fill(void *dst, unsigned char value, size_t bytes,
               void *stream) override {
    return {"cuMemsetD8Async",
            d.cuMemsetD8Async(devicePtr(dst), value, bytes, stream)};
  }
  ApiCall createEvent(void **event) override {
    return {"cuEventCreate", d.cuEventCreate(event, 0)};
  }
};

} // namespace

Expected<std::unique_ptr<Backend>> createCudaBackend() {
  std::unique_ptr<CudaApi> api(new (std::nothrow) CudaApi);
  if (!api)
    return Status::error(ErrorCode::OutOfMemory, "out of memory");
  Driver &d = api->d;
#define FMHA_SYMBOL(name, ...) {#name, &d.name},
  Status s =
      openApi(*api, "CUDA driver", "FMHA_CUDA_LIBRARY", {"libcuda.so.1"},
              {FMHA_CUDA_DRIVER_FUNCTIONS(FMHA_SYMBOL)},
              {"cuModuleUnload", "cuModuleGetFunction", "cuFuncGetAttribute",
               "cuLaunchKernel", "cuStreamSynchronize", "cuCtxSynchronize",
               "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
               "cuEventDestroy_v2"});
#undef FMHA_SYMBOL
  if (!s.ok())
    return s;

  // From here on the library stays loaded: the driver may have started
  // threads. Until a context is set, the api only describes errors.
  auto failure = [&](const char *call, CUresult r) {
    return api->failure(ErrorCode::BackendUnavailable, {call, r}).message();
  };
  CUresult r = d.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return unavailable("no CUDA device: " + failure("cuInit", r));
  if (r != CUDA_SUCCESS)
    return unavailable("the CUDA driver did not initialize: " +
                       failure("cuInit", r));
  int count = 0;
  if ((r = d.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
    return unavailable(failure("cuDeviceGetCount", r));
  if (count <= 0)
    return unavailable("no CUDA device: the driver reports 0 devices");

  GpuDevice info;
  Expected<std::optional<int>> wanted =
      deviceFromEnv("FMHA_CUDA_DEVICE", count, "the driver");
  if (!wanted.ok())
    return wanted.status();
  if (*wanted) {
    info.ordinal = **wanted;
  } else {
    void *current = nullptr;
    CUdevice device = 0;
    if (d.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current &&
        d.cuCtxGetDevice(&device) == CUDA_SUCCESS)
      info.ordinal = device;
  }
  CUdevice device = 0;
  if ((r = d.cuDeviceGet(&device, info.ordinal)) != CUDA_SUCCESS)
    return unavailable(failure("cuDeviceGet", r));
  char name[256] = {0};
  if ((r = d.cuDeviceGetName(name, sizeof(name) - 1, device)) != CUDA_SUCCESS)
    return unavailable(failure("cuDeviceGetName", r));
  info.name = name[0] ? name : "unnamed device";
  int ccMajor = 0, ccMinor = 0, sms = 0, grid[3] = {0, 0, 0}, optin = 0;
  s = readAttributes(
      *api,
      {{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        "COMPUTE_CAPABILITY_MAJOR", &ccMajor},
       {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        "COMPUTE_CAPABILITY_MINOR", &ccMinor},
       {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT", &sms},
       {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
        &info.maxThreads},
       {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "MAX_GRID_DIM_X", &grid[0]},
       {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "MAX_GRID_DIM_Y", &grid[1]},
       {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "MAX_GRID_DIM_Z", &grid[2]},
       {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", &optin}},
      [&](int attribute, int *out) {
        return ApiCall{"cuDeviceGetAttribute",
                       d.cuDeviceGetAttribute(out, attribute, device)};
      });
  if (!s.ok())
    return s;
  for (int i = 0; i < 3; ++i)
    info.maxGrid[i] = grid[i];
  info.arch = "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor);
  info.description = "cuda: " + info.name + " (" + info.arch + ", device " +
                     std::to_string(info.ordinal) + ")";
  info.sharedLimit = optin;
  info.multiprocessors = sms;
  info.sharedLimitName = "opt-in limit";
  info.sharedWithoutOptIn = kDefaultSharedLimit;

  // The primary context stays retained for the life of the process.
  if ((r = d.cuDevicePrimaryCtxRetain(&api->context, device)) != CUDA_SUCCESS)
    return unavailable(failure("cuDevicePrimaryCtxRetain", r));
  return createGpuBackend(std::move(api), std::move(info));
}

} // namespace fmha::rt::detail
