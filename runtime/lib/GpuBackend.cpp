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

/// The suffixes of a gpu-bwd-v1 module's kernels, in launch order.
constexpr const char *kBwdStages[] = {"_prep", "_dkdv", "_dq"};
constexpr int kNumBwdStages = 3;

/// A loaded module: the forward's one function (abi gpu-flat-v1), or the
/// backward's three (gpu-bwd-v1: prep, dkdv, dq).
class GpuKernel final : public LoadedKernel {
public:
  GpuKernel(GpuBackend &backend, const BundleMeta &meta, void *module,
            const std::vector<void *> &functions)
      : backend_(backend), meta_(meta), module_(module), functions_(functions) {
  }
  ~GpuKernel() override;
  Status launchForward(const Problem &p, const ForwardArgs &args,
                       void *stream) override;
  Status launchBackward(const Problem &p, const BackwardArgs &args,
                        void *stream) override;
  Status launchMerge(const MergeProblem &p, const MergeArgs &args,
                     void *stream) override;
  Status launchAccumulate(int64_t n, const AccumulateArgs &args,
                          void *stream) override;
  Expected<LaunchDims> launchDims(const Problem &p,
                                  GpuGrid grid) const override;

private:
  /// The largest grid.x the device launches with block_threads threads.
  int64_t maxGridX() const;
  /// A launch of `blocks` workgroups in x (merge, accumulate: grid (blocks,
  /// 1, 1), block (block_threads, 1, 1), shared_bytes), or InvalidArgument,
  /// "`what` needs grid.x=..., over the device's limit of ...", when blocks
  /// is over maxGridX().
  Expected<LaunchDims> flatLaunchDims(int64_t blocks,
                                      const std::string &what) const;
  /// Launches `function` (called `name` in messages) with `params`.
  Status launch(void *function, const std::string &name, const LaunchDims &d,
                void **params, void *stream);
  /// The cached workspace, at least `bytes` long, for a launch on `stream`
  /// (workspaceMutex_ held): grown, and the device waited for first, when
  /// too small; the device waited for when last used on another stream.
  Expected<void *> cachedWorkspace(size_t bytes, void *stream);

  GpuBackend &backend_;
  BundleMeta meta_;
  void *module_;
  std::vector<void *> functions_;
  std::mutex workspaceMutex_;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
  void *workspaceStream_ = nullptr;
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
  const bool backward = meta.kind == KernelKind::Backward;
  const char *abi = backward                           ? kAbiGpuBwdV1
                    : meta.kind == KernelKind::Merge ? kAbiGpuMergeV1
                    : meta.kind == KernelKind::Accumulate ? kAbiGpuAccV1
                                                     : kAbiGpuFlatV1;
  if (meta.target != target() || meta.abi != abi ||
      !api_->runs(meta.binaryFormat))
    return fail(ErrorCode::BadBundle,
                "the " + backendName + " backend runs target " + backendName +
                    ", binary_format " + api_->formats() +
                    (meta.kind == KernelKind::Merge
                         ? ", abi gpu-merge-v1 (kind=merge) only"
                     : meta.kind == KernelKind::Accumulate
                         ? ", abi gpu-acc-v1 (kind=acc) only"
                         : ", abi gpu-flat-v1 (kind=fwd) or gpu-bwd-v1 "
                           "(kind=bwd) only"));
  if (meta.blockThreads > device_.maxThreads)
    return fail(ErrorCode::LoadFailed,
                "block_threads=" + std::to_string(meta.blockThreads) +
                    " exceeds the device's limit of " +
                    std::to_string(device_.maxThreads) +
                    " threads per block (" + device_.name + ")");
  if (meta.sharedBytes > device_.sharedLimit)
    return fail(ErrorCode::LoadFailed,
                "shared_bytes=" + std::to_string(meta.sharedBytes) +
                    " exceeds the device's " + device_.sharedLimitName +
                    " of " + std::to_string(device_.sharedLimit) +
                    " bytes of shared memory per block (" + device_.name + ")");

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
  // The forward's one kernel, or the backward's three; each is checked
  // against the bundle's launch and opted in to its shared memory.
  std::vector<std::string> names;
  if (backward)
    for (const char *stage : kBwdStages)
      names.push_back(meta.kernel + stage);
  else
    names.push_back(meta.kernel);
  std::vector<void *> functions;
  for (const std::string &kernel : names) {
    void *function = nullptr;
    call = api_->calls.getFunction(&function, module, kernel.c_str());
    if (!call.ok())
      return unloadAndFail(api_->failure(
          ErrorCode::LoadFailed, call,
          "kernel '" + kernel + "' not found in the module" +
              (backward ? " (abi gpu-bwd-v1 needs " + names[0] + ", " +
                              names[1] + " and " + names[2] + ")"
                        : std::string())));
    GpuFunctionInfo info;
    const auto &codes = api_->functionAttributes;
    for (auto [value, attribute] :
         {std::pair(&info.maxThreads, codes.maxThreads),
          std::pair(&info.registers, codes.registers),
          std::pair(&info.staticShared, codes.staticShared)}) {
      call = api_->calls.functionAttribute(value, attribute, function);
      if (!call.ok())
        return unloadAndFail(api_->failure(ErrorCode::LoadFailed, call,
                                           "kernel '" + kernel + "'"));
    }
    if (info.maxThreads < meta.blockThreads)
      return unloadAndFail(Status::error(
          ErrorCode::LoadFailed,
          "kernel '" + kernel + "' runs at most " +
              std::to_string(info.maxThreads) + " threads per block (" +
              std::to_string(info.registers) +
              " registers per thread), the bundle's block_threads is " +
              std::to_string(meta.blockThreads)));
    int64_t shared = info.staticShared + meta.sharedBytes;
    if (shared > device_.sharedLimit)
      return unloadAndFail(Status::error(
          ErrorCode::LoadFailed,
          (backward ? "kernel '" + kernel + "': " : std::string()) +
              "static shared memory (" + std::to_string(info.staticShared) +
              " bytes) plus shared_bytes=" + std::to_string(meta.sharedBytes) +
              " exceeds the device's " + device_.sharedLimitName + " of " +
              std::to_string(device_.sharedLimit) + " bytes per block"));
    if (shared > device_.sharedWithoutOptIn) {
      call = api_->setMaxDynamicShared(function, meta.sharedBytes);
      if (!call.ok())
        return unloadAndFail(api_->failure(ErrorCode::LoadFailed, call,
                                           "kernel '" + kernel + "'"));
    }
    functions.push_back(function);
  }
  return std::unique_ptr<LoadedKernel>(
      new GpuKernel(*this, meta, module, functions));
}

GpuKernel::~GpuKernel() {
  GpuApi &api = backend_.api();
  ApiScope scope(api);
  if (workspace_ && scope.status().ok()) {
    // A backward queued with it may still run.
    api.calls.synchronizeDevice();
    api.free(workspace_);
  }
  api.unloadModule(module_);
}

int64_t GpuKernel::maxGridX() const {
  const GpuDevice &device = backend_.device();
  int64_t limit = device.maxGrid[0];
  if (device.maxGridThreadsX > 0 && meta_.blockThreads > 0)
    limit = std::min(limit, device.maxGridThreadsX / meta_.blockThreads);
  return limit;
}

Expected<LaunchDims> GpuKernel::launchDims(const Problem &p,
                                           GpuGrid grid) const {
  const GpuDevice &device = backend_.device();
  int64_t maxGrid[3] = {maxGridX(), device.maxGrid[1], device.maxGrid[2]};
  return gpuLaunchDims(meta_, p, maxGrid, grid);
}

Expected<LaunchDims> GpuKernel::flatLaunchDims(int64_t blocks,
                                               const std::string &what) const {
  const int64_t limit = maxGridX();
  if (blocks > limit)
    return Status::error(ErrorCode::InvalidArgument,
                         what + " needs grid.x=" + std::to_string(blocks) +
                             ", over the device's limit of " +
                             std::to_string(limit));
  LaunchDims d;
  d.grid[0] = blocks;
  d.block[0] = meta_.blockThreads;
  d.sharedBytes = meta_.sharedBytes;
  return d;
}

Status GpuKernel::launch(void *function, const std::string &name,
                         const LaunchDims &d, void **params, void *stream) {
  GpuApi &api = backend_.api();
  auto u = [](int64_t x) { return static_cast<unsigned>(x); };
  FMHA_ENTER_API(scope, api);
  return check(
      api,
      api.calls.launchKernel(function, u(d.grid[0]), u(d.grid[1]), u(d.grid[2]),
                             u(d.block[0]), u(d.block[1]), u(d.block[2]),
                             u(d.sharedBytes), stream, params, nullptr),
      ErrorCode::LaunchFailed,
      "kernel '" + name + "', grid (" + std::to_string(d.grid[0]) + "," +
          std::to_string(d.grid[1]) + "," + std::to_string(d.grid[2]) +
          "), block (" + std::to_string(d.block[0]) + ",1,1), shared " +
          std::to_string(d.sharedBytes) + " bytes");
}

Expected<void *> GpuKernel::cachedWorkspace(size_t bytes, void *stream) {
  GpuApi &api = backend_.api();
  const bool grow = bytes > workspaceBytes_;
  if (workspace_ && (grow || stream != workspaceStream_)) {
    // The last backward may still use it on its stream.
    FMHA_ENTER_API(scope, api);
    Status s =
        check(api, api.calls.synchronizeDevice(), ErrorCode::LaunchFailed,
              "waiting for the device before reusing the backward "
              "workspace");
    if (!s.ok())
      return s;
  }
  if (grow) {
    if (workspace_)
      backend_.deallocate(workspace_);
    workspace_ = nullptr;
    workspaceBytes_ = 0;
    Expected<void *> allocated = backend_.allocate(bytes);
    if (!allocated.ok())
      return Status::error(allocated.status().code(),
                           allocated.message() + " (the backward workspace)");
    workspace_ = *allocated;
    workspaceBytes_ = bytes;
  }
  workspaceStream_ = stream;
  return workspace_;
}

Status GpuKernel::launchBackward(const Problem &p, const BackwardArgs &args,
                                 void *stream) {
  if (functions_.size() != kNumBwdStages)
    return Status::error(ErrorCode::InvalidArgument,
                         "internal error: backward launch of a forward "
                         "kernel");
  // Every grid is checked before anything is launched.
  Expected<LaunchDims> dims[kNumBwdStages] = {
      launchDims(p, GpuGrid::QueryTiles), launchDims(p, GpuGrid::KeyTiles),
      launchDims(p, GpuGrid::QueryTiles)};
  for (const Expected<LaunchDims> &d : dims)
    if (!d.ok())
      return d.status();
  std::unique_lock<std::mutex> lock(workspaceMutex_, std::defer_lock);
  void *workspace = args.workspace;
  if (!workspace) {
    lock.lock();
    Expected<void *> cached = cachedWorkspace(
        gpuBwdV1Workspace(p, meta_.deterministic).totalBytes, stream);
    if (!cached.ok())
      return cached.status();
    workspace = *cached;
  }
  // A caller's workspace: Kernel::runBackward checked its size.
  uint64_t values[kGpuBwdV1NumParams];
  packGpuBwdV1(p, args, workspace, meta_.deterministic, values);
  void *params[kGpuBwdV1NumParams];
  for (int i = 0; i < kGpuBwdV1NumParams; ++i)
    params[i] = &values[i];
  for (int stage = 0; stage < kNumBwdStages; ++stage) {
    Status s = launch(functions_[stage], meta_.kernel + kBwdStages[stage],
                      *dims[stage], params, stream);
    if (!s.ok())
      return s;
  }
  return Status::success();
}

Status GpuKernel::launchForward(const Problem &p, const ForwardArgs &args,
                                void *stream) {
  Expected<LaunchDims> dims = launchDims(p, GpuGrid::QueryTiles);
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
  return launch(functions_[0], meta_.kernel, *dims, params, stream);
}

/// gpu-merge-v1 (Runtime.h): 31 parameters, 32 threads a row.
constexpr int kGpuMergeV1NumParams = 31;
constexpr int64_t kGpuMergeLanesPerRow = 32;

Status GpuKernel::launchMerge(const MergeProblem &p, const MergeArgs &args,
                              void *stream) {
  const int64_t rowsPerBlock = meta_.blockThreads / kGpuMergeLanesPerRow;
  if (rowsPerBlock <= 0 || meta_.blockThreads % kGpuMergeLanesPerRow != 0)
    return Status::error(ErrorCode::BadBundle,
                         "gpu-merge-v1 needs block_threads a multiple of 32, "
                         "the bundle has " +
                             std::to_string(meta_.blockThreads));
  const int64_t rows = p.lseElements();
  Expected<LaunchDims> d =
      flatLaunchDims((rows + rowsPerBlock - 1) / rowsPerBlock,
                     "merge of " + std::to_string(rows) + " rows");
  if (!d.ok())
    return d.status();
  uint64_t values[kGpuMergeV1NumParams];
  const void *buffers[6] = {args.o1, args.lse1, args.o2,
                            args.lse2, args.o, args.lse};
  for (int i = 0; i < 6; ++i) {
    uint64_t ptr = reinterpret_cast<uintptr_t>(buffers[i]);
    values[5 * i + 0] = ptr; // allocated
    values[5 * i + 1] = ptr; // aligned
    values[5 * i + 2] = 0;   // offset
    values[5 * i + 3] =
        static_cast<uint64_t>(i % 2 == 0 ? p.oElements() : rows); // size
    values[5 * i + 4] = 1;                                         // stride
  }
  values[30] = static_cast<uint64_t>(rows);
  void *params[kGpuMergeV1NumParams];
  for (int i = 0; i < kGpuMergeV1NumParams; ++i)
    params[i] = &values[i];
  return launch(functions_[0], meta_.kernel, *d, params, stream);
}

/// gpu-acc-v1 (Runtime.h): 11 parameters, 4 elements a thread.
constexpr int kGpuAccV1NumParams = 11;
constexpr int64_t kGpuAccPerThread = 4;

Status GpuKernel::launchAccumulate(int64_t n, const AccumulateArgs &args,
                                   void *stream) {
  const int64_t perBlock = meta_.blockThreads * kGpuAccPerThread;
  Expected<LaunchDims> d =
      flatLaunchDims((n + perBlock - 1) / perBlock,
                     "accumulate of " + std::to_string(n) + " elements");
  if (!d.ok())
    return d.status();
  uint64_t values[kGpuAccV1NumParams];
  const void *buffers[2] = {args.x, args.acc};
  for (int i = 0; i < 2; ++i) {
    uint64_t ptr = reinterpret_cast<uintptr_t>(buffers[i]);
    values[5 * i + 0] = ptr;                     // allocated
    values[5 * i + 1] = ptr;                     // aligned
    values[5 * i + 2] = 0;                       // offset
    values[5 * i + 3] = static_cast<uint64_t>(n); // size
    values[5 * i + 4] = 1;                       // stride
  }
  values[10] = static_cast<uint64_t>(n);
  void *params[kGpuAccV1NumParams];
  for (int i = 0; i < kGpuAccV1NumParams; ++i)
    params[i] = &values[i];
  return launch(functions_[0], meta_.kernel, *d, params, stream);
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
