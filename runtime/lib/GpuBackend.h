//===- GpuBackend.h - The gpu-flat-v1 backend over a vendor API -*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Internal to runtime/: one Backend for every GPU vendor. What CUDA and HIP
// do alike (checking a bundle against the device before loading it, the
// kernel's limits after, the grid rule and the gpu-flat-v1 parameters,
// memory, events, messages that name the failing call) is here, once; a
// vendor file (runtime/backends/<name>/) implements GpuApi over its
// library, dlopen'ed with openApiLibrary() and lookupApiSymbols(), finds its
// device and hands both to createGpuBackend().
//
// Every GpuApi call returns an ApiCall: the call's name for messages and the
// API's result code, 0 on success (CUDA_SUCCESS and hipSuccess are both 0).
// The backend turns a failure into "NAME failed: DESCRIPTION[; CONTEXT]".
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_LIB_GPUBACKEND_H
#define FMHA_RUNTIME_LIB_GPUBACKEND_H

#include "fmha/Runtime/Runtime.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace fmha::rt::detail {

/// One call of a vendor API: its name ("cuMemAlloc", "hipMalloc") and its
/// result code.
struct ApiCall {
  std::string name;
  int code = 0;
  bool ok() const { return code == 0; }
};

/// The device a GPU backend is bound to, and its limits.
struct GpuDevice {
  int ordinal = 0;
  std::string name; ///< "NVIDIA H200", "AMD Instinct MI300X"
  /// "sm_90"; empty when the API does not tell (messages use the name).
  std::string arch;
  std::string description;     ///< Backend::description()
  int maxThreads = 0;          ///< threads per block
  int64_t multiprocessors = 1; ///< SMs (CUDA), compute units (HIP)
  int64_t maxGrid[3] = {0, 0, 0};
  /// The largest grid.x * block.x (HIP's dispatch packet counts work-items
  /// in 32 bits); 0 when only maxGrid bounds the grid.
  int64_t maxGridThreadsX = 0;
  /// Static plus dynamic shared memory a block may use, and what messages
  /// call that limit ("opt-in limit" on CUDA).
  int64_t sharedLimit = 0;
  const char *sharedLimitName = "limit";
  /// Above this much static plus dynamic shared memory a function needs
  /// GpuApi::setMaxDynamicShared (CUDA: 48 KiB); sharedLimit when no API
  /// call is needed.
  int64_t sharedWithoutOptIn = 0;
};

/// A function of a vendor library that returns the API's result code, and
/// the name messages give it.
template <typename... Args> struct ApiFunction {
  const char *name = "";
  int (*fn)(Args...) = nullptr;
  ApiCall operator()(Args... args) const { return {name, fn(args...)}; }
};

/// The calls CUDA and HIP make with the same arguments (their handles are
/// void * here). The vendor file looks them up by its own names
/// (ApiSymbol::named).
struct ApiCalls {
  ApiFunction<void *> unloadModule;
  ApiFunction<void **, void *, const char *> getFunction; ///< (out, module)
  ApiFunction<int *, int, void *> functionAttribute; ///< (out, attribute, fn)
  /// (function, grid x y z, block x y z, dynamic shared bytes, stream,
  /// kernel parameters, extra)
  ApiFunction<void *, unsigned, unsigned, unsigned, unsigned, unsigned,
              unsigned, unsigned, void *, void **, void **>
      launchKernel;
  ApiFunction<void *> synchronizeStream;
  ApiFunction<> synchronizeDevice;
  ApiFunction<void *, void *> recordEvent; ///< (event, stream)
  ApiFunction<void *> synchronizeEvent;
  ApiFunction<float *, void *, void *> elapsedMs; ///< (out, start, stop)
  ApiFunction<void *> destroyEvent;
};

/// One vendor's API under the GPU backend: ApiCalls plus what differs.
/// Calls are made with the backend's device current (enter/leave around
/// them), from any thread.
class GpuApi {
public:
  virtual ~GpuApi();

  ApiCalls calls;
  /// The API's codes of a function's attributes: threads per block,
  /// registers per thread, static shared bytes.
  struct {
    int maxThreads, registers, staticShared;
  } functionAttributes = {0, 0, 0};

  virtual Target target() const = 0;
  /// Whether bundles of this binary format run, and the formats in words
  /// ("cubin or ptx").
  virtual bool runs(BinaryFormat format) const = 0;
  virtual const char *formats() const = 0;
  /// "CUDA_ERROR_X (what it means)", or "CUresult N" for a code the API
  /// does not name.
  virtual std::string describe(int code) const = 0;
  virtual bool isOutOfMemory(int code) const = 0;

  /// What enter() changed on the calling thread, for leave() to restore.
  struct Saved {
    bool changed = false;
    uintptr_t previous = 0;
  };
  /// Makes the backend's device (CUDA: its context) current on the calling
  /// thread, recording in *saved what to restore.
  virtual ApiCall enter(Saved *saved) = 0;
  virtual void leave(const Saved &saved) = 0;

  /// Loads a module image; *log gets the API's log, if any, on failure.
  virtual ApiCall loadModule(std::string_view image, void **module,
                             std::string *log) = 0;
  virtual void unloadModule(void *module) { calls.unloadModule(module); }
  /// Lets `function` use `bytes` of dynamic shared memory (called only when
  /// the total exceeds GpuDevice::sharedWithoutOptIn).
  virtual ApiCall setMaxDynamicShared(void *function, int64_t bytes) = 0;

  virtual ApiCall allocate(size_t bytes, void **ptr) = 0;
  virtual void free(void *ptr) = 0;
  /// A blocking copy from host to device memory (`toDevice`) or back.
  virtual ApiCall copy(void *dst, const void *src, size_t bytes,
                       bool toDevice) = 0;
  /// Sets `bytes` bytes to `value`, queued on `stream`.
  virtual ApiCall fill(void *dst, unsigned char value, size_t bytes,
                       void *stream) = 0;
  virtual ApiCall createEvent(void **event) = 0;

  /// The Status of the failed `call`: "NAME failed: DESCRIPTION[; CONTEXT]"
  /// with ErrorCode::OutOfMemory for an out-of-memory code, else `code`.
  Status failure(ErrorCode code, const ApiCall &call,
                 const std::string &context = "") const;
};

/// The backend over `api` bound to `device`. It keeps both for its life.
Expected<std::unique_ptr<Backend>> createGpuBackend(std::unique_ptr<GpuApi> api,
                                                    GpuDevice device);

//===----------------------------------------------------------------------===//
// Finding a vendor library
//===----------------------------------------------------------------------===//

/// A BackendUnavailable Status with `message` made printable.
Status unavailable(const std::string &message);

/// dlopen's a vendor library (RTLD_NOW | RTLD_LOCAL): the file named by the
/// environment variable `envVar` when it is set and not empty, else the
/// first of `names` that loads. `what` names the library in messages ("CUDA
/// driver"). On failure: "WHAT not found: dlopen NAME failed: REASON" for
/// the first name that exists but does not load, else for the first name,
/// followed by " (also tried ...)" when there were more.
Status openApiLibrary(const char *what, const char *envVar,
                      std::initializer_list<const char *> names, void **handle,
                      std::string *opened);

/// A function to look up and the function pointer to store it in.
struct ApiSymbol {
  const char *name;
  void *slot;
};

/// Looks up every symbol into its slot. On a missing one, closes `handle`
/// and fails: "WHAT 'LIBRARY' lacks NAME: REASON".
Status lookupApiSymbols(void *handle, const char *what,
                        const std::string &library,
                        std::initializer_list<ApiSymbol> symbols);

/// The names of ApiCalls' functions in a vendor library, in ApiCalls'
/// order.
struct ApiCallNames {
  const char *unloadModule, *getFunction, *functionAttribute, *launchKernel,
      *synchronizeStream, *synchronizeDevice, *recordEvent, *synchronizeEvent,
      *elapsedMs, *destroyEvent;
};

/// Opens the vendor library (openApiLibrary) and looks up `symbols` (the
/// vendor's own functions) and api.calls by `names`. Once this succeeds the
/// library stays loaded for the life of the process.
Status openApi(GpuApi &api, const char *what, const char *envVar,
               std::initializer_list<const char *> libraries,
               std::initializer_list<ApiSymbol> symbols,
               const ApiCallNames &names);

/// The device number in the environment variable `envVar` (nullopt when
/// unset or empty), checked against `count` devices: "VAR='x' is not a
/// device number", "VAR=3 but WHO reports 1 device(s)".
Expected<std::optional<int>> deviceFromEnv(const char *envVar, int count,
                                           const char *who);

/// A device attribute to read and where to put it.
struct AttributeQuery {
  int attribute;
  const char *what; ///< for messages: "cuDeviceGetAttribute(WHAT) failed"
  int *out;
};

/// Reads every attribute with `get(attribute, &value)`, which returns the
/// ApiCall; the first failure is a BackendUnavailable Status.
template <typename Get>
Status readAttributes(const GpuApi &api,
                      std::initializer_list<AttributeQuery> queries, Get get) {
  for (const AttributeQuery &q : queries) {
    ApiCall call = get(q.attribute, q.out);
    if (!call.ok()) {
      call.name += std::string("(") + q.what + ")";
      return unavailable(
          api.failure(ErrorCode::BackendUnavailable, call).message());
    }
  }
  return Status::success();
}

} // namespace fmha::rt::detail

#endif // FMHA_RUNTIME_LIB_GPUBACKEND_H
