//===- GpuBackend.cpp - The gpu-flat-v1 backend over a vendor API ---------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "GpuBackend.h"
#include "Util.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace fmha::rt::detail {

GpuApi::~GpuApi() = default;

Status GpuApi::failure(ErrorCode code, const ApiCall &call,
                       const std::string &context) const {
  return Status::error(isOutOfMemory(call.code) ? ErrorCode::OutOfMemory : code,
                       printable(call.name + " failed: " + describe(call.code) +
                                 (context.empty() ? "" : "; " + context)));
}

namespace {

/// What the backend checks of a function loaded from a module.
struct GpuFunctionInfo {
  int maxThreads = 0;   ///< threads per block the compiled function can run
  int registers = 0;    ///< registers per thread (for messages)
  int staticShared = 0; ///< bytes of static shared memory
};

/// The backend's device current on this thread for the scope's life.
class ApiScope {
public:
  explicit ApiScope(GpuApi &api) : api_(api) {
    ApiCall call = api_.enter(&saved_);
    if (call.ok())
      entered_ = true;
    else
      status_ = api_.failure(ErrorCode::LaunchFailed, call);
  }
  ~ApiScope() {
    if (entered_)
      api_.leave(saved_);
  }
  ApiScope(const ApiScope &) = delete;
  ApiScope &operator=(const ApiScope &) = delete;
  const Status &status() const { return status_; }

private:
  GpuApi &api_;
  GpuApi::Saved saved_;
  Status status_;
  bool entered_ = false;
};

#define FMHA_ENTER_API(scope, api)                                             \
  ApiScope scope(api);                                                         \
  if (!scope.status().ok())                                                    \
  return scope.status()

/// Success, or the Status of the failed `call`.
Status check(const GpuApi &api, const ApiCall &call, ErrorCode code,
             const std::string &context = "") {
  return call.ok() ? Status::success() : api.failure(code, call, context);
}

class GpuBackend;

/// What the backend checks of a function loaded from a module.
struct GpuFunction {
  void *handle = nullptr;
  GpuFunctionInfo info;
};

/// A loaded module: one function a manifest kernel, in the manifest's
/// order.
class GpuKernel final : public LoadedKernel {
public:
  GpuKernel(GpuBackend &backend, const BundleMeta &meta, void *module,
            std::vector<GpuFunction> functions)
      : backend_(backend), meta_(meta), module_(module),
        functions_(std::move(functions)) {}
  ~GpuKernel() override;
  Status checkLaunch(const PlannedLaunch &launch) const override;
  Status launch(const LaunchPlan &plan, void *stream) override;

private:
  GpuBackend &backend_;
  BundleMeta meta_;
  void *module_;
  std::vector<GpuFunction> functions_;
};

class GpuTimer final : public StreamTimer {
public:
  GpuTimer(GpuApi &api, void *start, void *stop)
      : api_(api), start_(start), stop_(stop) {}
  ~GpuTimer() override {
    ApiScope scope(api_);
    api_.calls.destroyEvent(start_);
    api_.calls.destroyEvent(stop_);
  }
  Status start(void *stream) override { return record(start_, stream); }
  Status stop(void *stream) override { return record(stop_, stream); }
  Expected<double> elapsedMs() override {
    FMHA_ENTER_API(scope, api_);
    Status s = check(api_, api_.calls.synchronizeEvent(stop_),
                     ErrorCode::LaunchFailed);
    if (!s.ok())
      return s;
    float ms = 0;
    s = check(api_, api_.calls.elapsedMs(&ms, start_, stop_),
              ErrorCode::LaunchFailed);
    if (!s.ok())
      return s;
    return static_cast<double>(ms);
  }

private:
  Status record(void *event, void *stream) {
    FMHA_ENTER_API(scope, api_);
    return check(api_, api_.calls.recordEvent(event, stream),
                 ErrorCode::LaunchFailed);
  }

  GpuApi &api_;
  void *start_, *stop_;
};

class GpuBackend final : public Backend {
public:
  GpuBackend(std::unique_ptr<GpuApi> api, GpuDevice device)
      : api_(std::move(api)), device_(std::move(device)) {}

  GpuApi &api() const { return *api_; }
  const GpuDevice &device() const { return device_; }

  Target target() const override { return api_->target(); }
  int deviceOrdinal() const override { return device_.ordinal; }
  int64_t multiprocessors() const override { return device_.multiprocessors; }
  std::string description() const override { return device_.description; }

  Expected<std::unique_ptr<LoadedKernel>>
  load(const BundleMeta &meta, std::string_view binary,
       const std::string &name) override;

  Expected<void *> allocate(size_t bytes) override {
    FMHA_ENTER_API(scope, *api_);
    void *ptr = nullptr;
    ApiCall call = api_->allocate(std::max<size_t>(bytes, 1), &ptr);
    if (!call.ok())
      return api_->failure(ErrorCode::OutOfMemory, call,
                           "allocating " + std::to_string(bytes) +
                               " bytes on " + device_.name);
    return ptr;
  }

  void deallocate(void *ptr) override {
    ApiScope scope(*api_);
    if (scope.status().ok())
      api_->free(ptr);
  }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    return copy(dst, src, bytes, true);
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    return copy(dst, src, bytes, false);
  }

  Status fill(void *dst, unsigned char value, size_t bytes,
              void *stream) override {
    if (!bytes)
      return Status::success();
    FMHA_ENTER_API(scope, *api_);
    return check(*api_, api_->fill(dst, value, bytes, stream),
                 ErrorCode::LaunchFailed);
  }

  Status synchronize(void *stream) override {
    FMHA_ENTER_API(scope, *api_);
    return check(*api_,
                 stream ? api_->calls.synchronizeStream(stream)
                        : api_->calls.synchronizeDevice(),
                 ErrorCode::LaunchFailed);
  }

  Expected<std::unique_ptr<StreamTimer>> createTimer() override {
    FMHA_ENTER_API(scope, *api_);
    void *start = nullptr, *stop = nullptr;
    ApiCall call = api_->createEvent(&start);
    if (call.ok()) {
      call = api_->createEvent(&stop);
      if (!call.ok())
        api_->calls.destroyEvent(start);
    }
    if (!call.ok())
      return api_->failure(ErrorCode::LaunchFailed, call);
    return std::unique_ptr<StreamTimer>(new GpuTimer(*api_, start, stop));
  }

private:
  Status copy(void *dst, const void *src, size_t bytes, bool toDevice) {
    if (!bytes)
      return Status::success();
    FMHA_ENTER_API(scope, *api_);
    return check(*api_, api_->copy(dst, src, bytes, toDevice),
                 ErrorCode::LaunchFailed);
  }

  std::unique_ptr<GpuApi> api_;
  GpuDevice device_;
};

Expected<std::unique_ptr<LoadedKernel>>
GpuBackend::load(const BundleMeta &meta, std::string_view binary,
                 const std::string &name) {
  auto fail = [&](ErrorCode code, const std::string &problem) {
    return Status::error(code, "bundle '" + name + "': " + problem);
  };
  auto failed = [&](const Status &s) { return fail(s.code(), s.message()); };
  const std::string backendName = toString(target());
  const Manifest &manifest = meta.manifest;
  if (meta.target != target() || manifest.call != Manifest::Call::Gpu ||
      !api_->runs(meta.binaryFormat))
    return fail(ErrorCode::BadBundle,
                "the " + backendName + " backend runs target " + backendName +
                    ", binary_format " + api_->formats() +
                    ", manifests of call gpu only");
  for (const ManifestKernel &k : manifest.kernels) {
    const int64_t threads = k.block[0] * k.block[1] * k.block[2];
    if (threads > device_.maxThreads)
      return fail(ErrorCode::LoadFailed,
                  "kernel '" + k.symbol + "': " + std::to_string(threads) +
                      " threads a block exceeds the device's limit of " +
                      std::to_string(device_.maxThreads) +
                      " threads per block (" + device_.name + ")");
    std::optional<int64_t> shared = k.shared.constant();
    if (shared && *shared > device_.sharedLimit)
      return fail(
          ErrorCode::LoadFailed,
          "kernel '" + k.symbol + "': shared_bytes=" + std::to_string(*shared) +
              " exceeds the device's " + device_.sharedLimitName + " of " +
              std::to_string(device_.sharedLimit) +
              " bytes of shared memory per block (" + device_.name + ")");
  }

  FMHA_ENTER_API(scope, *api_);
  void *module = nullptr;
  std::string log;
  ApiCall call = api_->loadModule(binary, &module, &log);
  if (!call.ok()) {
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
      log.pop_back();
    std::replace(log.begin(), log.end(), '\n', ' ');
    std::string context = "bundle chip " + meta.chip + ", binary_format " +
                          toString(meta.binaryFormat) + ", device " +
                          (device_.arch.empty() ? device_.name : device_.arch);
    if (!log.empty())
      context += "; JIT log: " + log.substr(0, 1024);
    return failed(api_->failure(ErrorCode::LoadFailed, call, context));
  }
  auto unloadAndFail = [&](const Status &s) {
    api_->unloadModule(module);
    return failed(s);
  };
  // Each manifest kernel's function, checked against its launch and opted
  // in to its shared memory.
  std::string symbols;
  for (const ManifestKernel &k : manifest.kernels)
    symbols += (symbols.empty() ? "" : ", ") + k.symbol;
  std::vector<GpuFunction> functions;
  for (const ManifestKernel &k : manifest.kernels) {
    const std::string &kernel = k.symbol;
    GpuFunction f;
    call = api_->calls.getFunction(&f.handle, module, kernel.c_str());
    if (!call.ok())
      return unloadAndFail(
          api_->failure(ErrorCode::LoadFailed, call,
                        "kernel '" + kernel + "' not found in the module" +
                            (manifest.kernels.size() > 1
                                 ? " (the manifest names " + symbols + ")"
                                 : std::string())));
    GpuFunctionInfo &info = f.info;
    const auto &codes = api_->functionAttributes;
    for (auto [value, attribute] :
         {std::pair(&info.maxThreads, codes.maxThreads),
          std::pair(&info.registers, codes.registers),
          std::pair(&info.staticShared, codes.staticShared)}) {
      call = api_->calls.functionAttribute(value, attribute, f.handle);
      if (!call.ok())
        return unloadAndFail(api_->failure(ErrorCode::LoadFailed, call,
                                           "kernel '" + kernel + "'"));
    }
    const int64_t threads = k.block[0] * k.block[1] * k.block[2];
    if (info.maxThreads < threads)
      return unloadAndFail(Status::error(
          ErrorCode::LoadFailed,
          "kernel '" + kernel + "' runs at most " +
              std::to_string(info.maxThreads) + " threads per block (" +
              std::to_string(info.registers) +
              " registers per thread), the manifest launches it with " +
              std::to_string(threads)));
    // A constant amount is checked and opted in to here; an expression up
    // to the limit (checkLaunch checks each launch).
    std::optional<int64_t> constant = k.shared.constant();
    const int64_t dynamic =
        constant ? *constant : device_.sharedLimit - info.staticShared;
    int64_t shared = info.staticShared + dynamic;
    if (constant && shared > device_.sharedLimit)
      return unloadAndFail(Status::error(
          ErrorCode::LoadFailed,
          "kernel '" + kernel + "': static shared memory (" +
              std::to_string(info.staticShared) +
              " bytes) plus shared_bytes=" + std::to_string(dynamic) +
              " exceeds the device's " + device_.sharedLimitName + " of " +
              std::to_string(device_.sharedLimit) + " bytes per block"));
    if (shared > device_.sharedWithoutOptIn && dynamic > 0) {
      call = api_->setMaxDynamicShared(f.handle, dynamic);
      if (!call.ok())
        return unloadAndFail(api_->failure(ErrorCode::LoadFailed, call,
                                           "kernel '" + kernel + "'"));
    }
    functions.push_back(f);
  }
  return std::unique_ptr<LoadedKernel>(
      new GpuKernel(*this, meta, module, std::move(functions)));
}

GpuKernel::~GpuKernel() {
  GpuApi &api = backend_.api();
  ApiScope scope(api);
  api.unloadModule(module_);
}

Status GpuKernel::checkLaunch(const PlannedLaunch &launch) const {
  const GpuDevice &device = backend_.device();
  const ManifestKernel &k = meta_.manifest.kernels[launch.kernel];
  const GpuFunction &f = functions_[launch.kernel];
  const LaunchDims &d = launch.dims;
  int64_t limit[3] = {device.maxGrid[0], device.maxGrid[1], device.maxGrid[2]};
  const int64_t threadsX = d.block[0];
  if (device.maxGridThreadsX > 0 && threadsX > 0)
    limit[0] = std::min(limit[0], device.maxGridThreadsX / threadsX);
  const char *axis[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i)
    if (d.grid[i] > limit[i] || d.grid[i] < 0)
      return Status::error(
          ErrorCode::InvalidArgument,
          "kernel '" + k.symbol + "': grid." + axis[i] + " = " +
              (k.grid[i].constant() ? "" : k.grid[i].str() + " = ") +
              std::to_string(d.grid[i]) + " exceeds the device limit " +
              std::to_string(limit[i]) + "; nothing was launched");
  const int64_t shared = f.info.staticShared + d.sharedBytes;
  if (shared > device.sharedLimit)
    return Status::error(ErrorCode::InvalidArgument,
                         "kernel '" + k.symbol + "': static shared memory (" +
                             std::to_string(f.info.staticShared) +
                             " bytes) plus " + std::to_string(d.sharedBytes) +
                             " bytes of dynamic shared memory "
                             "exceeds the device's " +
                             device.sharedLimitName + " of " +
                             std::to_string(device.sharedLimit) +
                             " bytes per block; nothing was launched");
  return Status::success();
}

Status GpuKernel::launch(const LaunchPlan &plan, void *stream) {
  for (const LaunchPlan::Range &r : plan.zero) {
    Status s = backend_.fill(r.ptr, 0, r.bytes, stream);
    if (!s.ok())
      return s;
  }
  GpuApi &api = backend_.api();
  auto u = [](int64_t x) { return static_cast<unsigned>(x); };
  for (const PlannedLaunch &launch : plan.launches) {
    const LaunchDims &d = launch.dims;
    if (d.grid[0] == 0 || d.grid[1] == 0 || d.grid[2] == 0)
      continue; // An empty grid does nothing.
    std::vector<uint64_t> values = launch.params;
    std::vector<void *> params(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      params[i] = &values[i];
    const std::string &name = meta_.manifest.kernels[launch.kernel].symbol;
    FMHA_ENTER_API(scope, api);
    Status s = check(
        api,
        api.calls.launchKernel(functions_[launch.kernel].handle, u(d.grid[0]),
                               u(d.grid[1]), u(d.grid[2]), u(d.block[0]),
                               u(d.block[1]), u(d.block[2]), u(d.sharedBytes),
                               stream, params.empty() ? nullptr : params.data(),
                               nullptr),
        ErrorCode::LaunchFailed,
        "kernel '" + name + "', grid (" + std::to_string(d.grid[0]) + "," +
            std::to_string(d.grid[1]) + "," + std::to_string(d.grid[2]) +
            "), block (" + std::to_string(d.block[0]) + "," +
            std::to_string(d.block[1]) + "," + std::to_string(d.block[2]) +
            "), shared " + std::to_string(d.sharedBytes) + " bytes");
    if (!s.ok())
      return s;
  }
  return Status::success();
}

std::string dlMessage() {
  const char *msg = dlerror();
  return msg ? msg : "unknown dlopen error";
}

} // namespace

Expected<std::unique_ptr<Backend>> createGpuBackend(std::unique_ptr<GpuApi> api,
                                                    GpuDevice device) {
  std::unique_ptr<Backend> backend(
      new (std::nothrow) GpuBackend(std::move(api), std::move(device)));
  if (!backend)
    return Status::error(ErrorCode::OutOfMemory, "out of memory");
  return backend;
}

//===----------------------------------------------------------------------===//
// Finding a vendor library
//===----------------------------------------------------------------------===//

Status unavailable(const std::string &message) {
  return Status::error(ErrorCode::BackendUnavailable, printable(message));
}

Status openApiLibrary(const char *what, const char *envVar,
                      std::initializer_list<const char *> names, void **handle,
                      std::string *opened) {
  const char *env = std::getenv(envVar);
  std::vector<std::string> candidates;
  if (env && *env)
    candidates.push_back(env);
  else
    candidates.assign(names.begin(), names.end());
  // The reason shown: the first library that exists but does not load (a
  // missing dependency, a wrong architecture), else the first one's.
  std::string shown, reason;
  bool shownExists = false;
  for (const std::string &name : candidates) {
    dlerror();
    *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (*handle) {
      *opened = name;
      return Status::success();
    }
    std::string why = dlMessage();
    bool missing = why.rfind(name + ": cannot open shared object file", 0) == 0;
    if (shown.empty() || (!shownExists && !missing)) {
      shown = name;
      reason = why;
      shownExists = !missing;
    }
  }
  std::string others;
  for (const std::string &name : candidates)
    if (name != shown)
      others += (others.empty() ? "" : ", ") + name;
  return unavailable(std::string(what) + " not found: dlopen " + shown +
                     " failed: " + reason +
                     (others.empty() ? "" : " (also tried " + others + ")"));
}

Status lookupApiSymbols(void *handle, const char *what,
                        const std::string &library,
                        std::initializer_list<ApiSymbol> symbols) {
  static_assert(sizeof(void (*)()) == sizeof(void *),
                "function pointers are stored through void *");
  for (const ApiSymbol &s : symbols) {
    dlerror();
    void *sym = dlsym(handle, s.name);
    if (!sym) {
      std::string why = dlMessage();
      dlclose(handle);
      return unavailable(std::string(what) + " '" + library + "' lacks " +
                         s.name + ": " + why);
    }
    std::memcpy(s.slot, &sym, sizeof(sym));
  }
  return Status::success();
}

namespace {

template <typename... Args>
ApiSymbol bind(ApiFunction<Args...> &f, const char *name) {
  f.name = name;
  return {name, &f.fn};
}

} // namespace

Status openApi(GpuApi &api, const char *what, const char *envVar,
               std::initializer_list<const char *> libraries,
               std::initializer_list<ApiSymbol> symbols,
               const ApiCallNames &names) {
  void *handle = nullptr;
  std::string library;
  Status s = openApiLibrary(what, envVar, libraries, &handle, &library);
  if (!s.ok())
    return s;
  s = lookupApiSymbols(handle, what, library, symbols);
  if (!s.ok())
    return s;
  ApiCalls &c = api.calls;
  return lookupApiSymbols(handle, what, library,
                          {bind(c.unloadModule, names.unloadModule),
                           bind(c.getFunction, names.getFunction),
                           bind(c.functionAttribute, names.functionAttribute),
                           bind(c.launchKernel, names.launchKernel),
                           bind(c.synchronizeStream, names.synchronizeStream),
                           bind(c.synchronizeDevice, names.synchronizeDevice),
                           bind(c.recordEvent, names.recordEvent),
                           bind(c.synchronizeEvent, names.synchronizeEvent),
                           bind(c.elapsedMs, names.elapsedMs),
                           bind(c.destroyEvent, names.destroyEvent)});
}

Expected<std::optional<int>> deviceFromEnv(const char *envVar, int count,
                                           const char *who) {
  const char *s = std::getenv(envVar);
  if (!s || !*s)
    return std::optional<int>();
  std::optional<int64_t> v = parseInt(s);
  if (!v || *v < 0)
    return unavailable(std::string(envVar) + "='" + s +
                       "' is not a device number");
  if (*v >= count)
    return unavailable(std::string(envVar) + "=" + std::to_string(*v) +
                       " but " + who + " reports " + std::to_string(count) +
                       " device(s)");
  return std::optional<int>(static_cast<int>(*v));
}

} // namespace fmha::rt::detail
