//===- HipBackend.cpp - Runs gpu-flat-v1 kernels through the HIP runtime --===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The HIP runtime API, dlopen'ed at run time: nothing of ROCm is needed to
// build this file. The library is libamdhip64.so, else libamdhip64.so.5,
// .so.6 or .so.7 (Debian's libamdhip64-5 package ships only the versioned
// name), or the file named by the environment variable FMHA_HIP_LIBRARY
// (the unit tests point it at a missing file and at a fake runtime).
//
// The backend binds to one device for the life of the process: the one in
// $FMHA_HIP_DEVICE if set, else the calling thread's current device at
// first use (what PyTorch leaves current), else device 0. HIP's current
// device is per thread: each call sets the backend's device when another
// one is current and restores it afterwards. Streams given to the backend
// must belong to that device (a null stream is its default stream).
//
// The launch is the one of CUDA (GpuBackend.h): the same gpu-flat-v1
// parameters through hipModuleLaunchKernel, grid (ceil(Sq/block_m), Hq, B),
// block (block_threads, 1, 1), shared_bytes of dynamic LDS. AMD GPUs need
// no opt-in for dynamic LDS up to the device's hipDeviceAttribute-
// MaxSharedMemoryPerBlock (64 KiB on gfx90a and gfx942), so the limit is
// checked and hipFuncSetAttribute, which takes a host stub of the runtime
// API rather than a module's function, is not used. HIP's dispatch counts
// work-items in 32 bits: grid.x * block_threads must stay below 2^32.
//
// Every call is checked; a failure becomes a Status whose message names the
// call and the error ("hipModuleLoadData failed: hipErrorInvalidImage;
// bundle chip gfx942, ...").
//
//===----------------------------------------------------------------------===//

#include "Backends.h"
#include "GpuBackend.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unistd.h>

namespace fmha::rt::detail {

namespace {

//===----------------------------------------------------------------------===//
// The HIP API subset (types and values as hip_runtime_api.h declares them;
// checked against ROCm 5.2's and 7's headers)
//===----------------------------------------------------------------------===//

// Handles (hipModule_t, hipFunction_t, hipStream_t, hipEvent_t) are opaque
// pointers: void * here.
using hipError_t = int;
using hipDevice_t = int;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorUnknown = 999;

// hipDeviceAttribute_t (the CUDA-compatible range, stable since ROCm 5.0)
constexpr int hipDeviceAttributeMaxGridDimX = 29;
constexpr int hipDeviceAttributeMaxGridDimY = 30;
constexpr int hipDeviceAttributeMaxGridDimZ = 31;
constexpr int hipDeviceAttributeMaxThreadsPerBlock = 56;
constexpr int hipDeviceAttributeMultiprocessorCount = 63;
constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
constexpr int hipDeviceAttributeWarpSize = 87;

// hipFunction_attribute
constexpr int HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int HIP_FUNC_ATTRIBUTE_NUM_REGS = 4;

// hipMemcpyKind
constexpr int hipMemcpyHostToDevice = 1;
constexpr int hipMemcpyDeviceToHost = 2;

/// grid.x * block.x must fit the dispatch packet's 32-bit work-item count.
constexpr int64_t kMaxGridThreadsX = 4294967295LL;

/// X(member, return type, parameter types...): the runtime functions used
/// beside ApiCalls', looked up by the member's name.
#define FMHA_HIP_FUNCTIONS(X)                                                  \
  X(hipGetErrorName, const char *, hipError_t)                                 \
  X(hipGetErrorString, const char *, hipError_t)                               \
  X(hipInit, hipError_t, unsigned)                                             \
  X(hipGetDeviceCount, hipError_t, int *)                                      \
  X(hipGetDevice, hipError_t, int *)                                           \
  X(hipSetDevice, hipError_t, int)                                             \
  X(hipDeviceGet, hipError_t, hipDevice_t *, int)                              \
  X(hipDeviceGetName, hipError_t, char *, int, hipDevice_t)                    \
  X(hipDeviceGetAttribute, hipError_t, int *, int, int)                        \
  X(hipModuleLoadData, hipError_t, void **, const void *)                      \
  X(hipMalloc, hipError_t, void **, size_t)                                    \
  X(hipFree, hipError_t, void *)                                               \
  X(hipMemcpy, hipError_t, void *, const void *, size_t, int)                  \
  X(hipMemsetAsync, hipError_t, void *, int, size_t, void *)                   \
  X(hipEventCreate, hipError_t, void **)

/// The loaded runtime: one pointer per function.
struct HipRuntime {
#define FMHA_DECLARE(name, ret, ...) ret (*name)(__VA_ARGS__) = nullptr;
  FMHA_HIP_FUNCTIONS(FMHA_DECLARE)
#undef FMHA_DECLARE
};

/// The HIP runtime API over the backend's device.
class HipApi final : public GpuApi {
public:
  HipRuntime hip;
  int ordinal = 0;

  HipApi() {
    functionAttributes = {HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                          HIP_FUNC_ATTRIBUTE_NUM_REGS,
                          HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES};
  }

  Target target() const override { return Target::Hip; }
  bool runs(BinaryFormat f) const override { return f == BinaryFormat::Hsaco; }
  const char *formats() const override { return "hsaco"; }
  std::string describe(int r) const override {
    // hipGetErrorName answers "hipErrorUnknown" for any code it does not
    // know; only 999 is that error.
    const char *name = hip.hipGetErrorName(r);
    if (!name || !*name ||
        (r != hipErrorUnknown && std::strcmp(name, "hipErrorUnknown") == 0))
      return "hipError_t " + std::to_string(r);
    std::string s = name;
    // ROCm 5 returns the name again as the string; later ones a sentence.
    const char *text = hip.hipGetErrorString(r);
    if (text && *text && s != text)
      s += std::string(" (") + text + ")";
    return s;
  }
  bool isOutOfMemory(int r) const override { return r == hipErrorOutOfMemory; }

  ApiCall enter(Saved *saved) override {
    int current = -1;
    hipError_t r = hip.hipGetDevice(&current);
    if (r != hipSuccess || current == ordinal)
      return {"hipGetDevice", r};
    r = hip.hipSetDevice(ordinal);
    if (r == hipSuccess) {
      saved->changed = true;
      saved->previous = static_cast<uintptr_t>(current);
    }
    return {"hipSetDevice", r};
  }
  void leave(const Saved &saved) override {
    if (saved.changed)
      hip.hipSetDevice(static_cast<int>(saved.previous));
  }

  ApiCall loadModule(std::string_view binary, void **module,
                     std::string *) override {
    // The runtime may read the code object after loading it (for another
    // device, lazily): the image lives as long as the module.
    std::unique_ptr<std::string> image(new std::string(binary));
    hipError_t r = hip.hipModuleLoadData(module, image->data());
    if (r == hipSuccess) {
      std::lock_guard<std::mutex> lock(mutex_);
      images_[*module] = std::move(image);
    }
    return {"hipModuleLoadData", r};
  }
  void unloadModule(void *module) override {
    calls.unloadModule(module);
    std::lock_guard<std::mutex> lock(mutex_);
    images_.erase(module);
  }
  ApiCall setMaxDynamicShared(void *, int64_t) override {
    // Never called: GpuDevice::sharedWithoutOptIn is the device's limit.
    return {"", hipSuccess};
  }

  ApiCall allocate(size_t bytes, void **ptr) override {
    return {"hipMalloc", hip.hipMalloc(ptr, bytes)};
  }
  void free(void *ptr) override { hip.hipFree(ptr); }
  ApiCall copy(void *dst, const void *src, size_t bytes,
               bool toDevice) override {
    int kind = toDevice ? hipMemcpyHostToDevice : hipMemcpyDeviceToHost;
    return {toDevice ? "hipMemcpy(HostToDevice)" : "hipMemcpy(DeviceToHost)",
            hip.hipMemcpy(dst, src, bytes, kind)};
  }
  ApiCall fill(void *dst, unsigned char value, size_t bytes,
               void *stream) override {
    return {"hipMemsetAsync", hip.hipMemsetAsync(dst, value, bytes, stream)};
  }
  ApiCall createEvent(void **event) override {
    return {"hipEventCreate", hip.hipEventCreate(event)};
  }

private:
  std::mutex mutex_;
  std::map<void *, std::unique_ptr<std::string>> images_;
};

/// Why no device shows: the counts' answers, and the kernel driver's device
/// file when it is missing.
std::string noDeviceReason(const HipApi &api, hipError_t countResult,
                           hipError_t initResult) {
  std::string why = countResult == hipSuccess
                        ? "hipGetDeviceCount: 0 devices"
                        : "hipGetDeviceCount: " + api.describe(countResult);
  if (initResult != hipSuccess)
    why += "; hipInit: " + api.describe(initResult);
  if (access("/dev/kfd", F_OK) != 0)
    why += "; /dev/kfd is missing: no ROCm kernel driver (amdgpu) on this "
           "machine";
  return why;
}

} // namespace

Expected<std::unique_ptr<Backend>> createHipBackend() {
  std::unique_ptr<HipApi> api(new (std::nothrow) HipApi);
  if (!api)
    return Status::error(ErrorCode::OutOfMemory, "out of memory");
  HipRuntime &hip = api->hip;
#define FMHA_SYMBOL(name, ...) {#name, &hip.name},
  Status s =
      openApi(*api, "HIP runtime", "FMHA_HIP_LIBRARY",
              {"libamdhip64.so", "libamdhip64.so.5", "libamdhip64.so.6",
               "libamdhip64.so.7"},
              {FMHA_HIP_FUNCTIONS(FMHA_SYMBOL)},
              {"hipModuleUnload", "hipModuleGetFunction", "hipFuncGetAttribute",
               "hipModuleLaunchKernel", "hipStreamSynchronize",
               "hipDeviceSynchronize", "hipEventRecord", "hipEventSynchronize",
               "hipEventElapsedTime", "hipEventDestroy"});
#undef FMHA_SYMBOL
  if (!s.ok())
    return s;

  // From here on the library stays loaded: the runtime may have started
  // threads. Without a GPU (or without /dev/kfd) ROCm's hipInit fails with
  // an error of its own choosing (ROCm 5.2: hipErrorInvalidDevice), so the
  // device count is asked in any case and decides what is reported.
  auto failure = [&](const char *call, hipError_t r) {
    return api->failure(ErrorCode::BackendUnavailable, {call, r}).message();
  };
  hipError_t init = hip.hipInit(0);
  int count = 0;
  hipError_t counted = hip.hipGetDeviceCount(&count);
  if (counted == hipErrorNoDevice || (counted == hipSuccess && count <= 0))
    return unavailable("no AMD GPU found (" +
                       noDeviceReason(*api, counted, init) + ")");
  if (init != hipSuccess)
    return unavailable("the HIP runtime did not initialize: " +
                       failure("hipInit", init));
  if (counted != hipSuccess)
    return unavailable(failure("hipGetDeviceCount", counted));

  GpuDevice info;
  Expected<std::optional<int>> wanted =
      deviceFromEnv("FMHA_HIP_DEVICE", count, "the HIP runtime");
  if (!wanted.ok())
    return wanted.status();
  int current = 0;
  if (*wanted)
    info.ordinal = **wanted;
  else if (hip.hipGetDevice(&current) == hipSuccess && current >= 0 &&
           current < count)
    info.ordinal = current;
  hipError_t r;
  hipDevice_t device = 0;
  if ((r = hip.hipDeviceGet(&device, info.ordinal)) != hipSuccess)
    return unavailable(failure("hipDeviceGet", r));
  char name[256] = {0};
  if ((r = hip.hipDeviceGetName(name, sizeof(name) - 1, device)) != hipSuccess)
    return unavailable(failure("hipDeviceGetName", r));
  info.name = name[0] ? name : "unnamed device";
  int cus = 0, wave = 0, grid[3] = {0, 0, 0}, lds = 0;
  s = readAttributes(
      *api,
      {{hipDeviceAttributeMultiprocessorCount, "MultiprocessorCount", &cus},
       {hipDeviceAttributeWarpSize, "WarpSize", &wave},
       {hipDeviceAttributeMaxThreadsPerBlock, "MaxThreadsPerBlock",
        &info.maxThreads},
       {hipDeviceAttributeMaxGridDimX, "MaxGridDimX", &grid[0]},
       {hipDeviceAttributeMaxGridDimY, "MaxGridDimY", &grid[1]},
       {hipDeviceAttributeMaxGridDimZ, "MaxGridDimZ", &grid[2]},
       {hipDeviceAttributeMaxSharedMemoryPerBlock, "MaxSharedMemoryPerBlock",
        &lds}},
      [&](int attribute, int *out) {
        return ApiCall{"hipDeviceGetAttribute",
                       hip.hipDeviceGetAttribute(out, attribute, info.ordinal)};
      });
  if (!s.ok())
    return s;
  for (int i = 0; i < 3; ++i)
    info.maxGrid[i] = grid[i];
  info.maxGridThreadsX = kMaxGridThreadsX;
  info.multiprocessors = cus;
  info.description = "hip: " + info.name + " (" + std::to_string(cus) +
                     " CUs, wave" + std::to_string(wave) + ", device " +
                     std::to_string(info.ordinal) + ")";
  info.sharedLimit = lds;
  info.sharedLimitName = "limit";
  info.sharedWithoutOptIn = lds;
  api->ordinal = info.ordinal;
  return createGpuBackend(std::move(api), std::move(info));
}

} // namespace fmha::rt::detail
