//===- Runtime.cpp - FMHA runtime C++ API ---------------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"

#include "Backends.h"
#include "Util.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <new>

#ifndef FMHA_VERSION_STRING
#define FMHA_VERSION_STRING "unknown"
#endif

namespace fmha::rt {

const char *versionString() { return FMHA_VERSION_STRING; }

//===----------------------------------------------------------------------===//
// Problem
//===----------------------------------------------------------------------===//

Status Problem::validate() const {
  struct Dim {
    const char *name;
    int64_t value;
  } dims[] = {{"B", b},   {"Hq", hq}, {"Hk", hk}, {"Sq", sq},
              {"Sk", sk}, {"D", d},   {"Dv", dv}};
  for (const Dim &dim : dims)
    if (dim.value <= 0)
      return Status::error(ErrorCode::InvalidArgument,
                           std::string("problem ") + dim.name +
                               " must be positive, got " +
                               std::to_string(dim.value));
  // The kernels treat window bounds and sink counts past 2^30 as unbounded
  // (MaskUtils), which holds while no sequence is longer.
  for (const Dim &dim : {Dim{"Sq", sq}, Dim{"Sk", sk}})
    if (dim.value > kMaxSequence)
      return Status::error(ErrorCode::InvalidArgument,
                           std::string("problem ") + dim.name + "=" +
                               std::to_string(dim.value) +
                               " is over the limit of 2^30 tokens");
  if (hq % hk != 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "problem Hq=" + std::to_string(hq) +
                             " is not a multiple of Hk=" + std::to_string(hk));
  // Every element count, in bytes at 4 bytes an element, must fit int64.
  const int64_t counts[][4] = {{b, hq, sq, d},
                               {b, hk, sk, d},
                               {b, hk, sk, dv},
                               {b, hq, sq, dv},
                               {b, hq, sq, 4}};
  for (const auto &factors : counts) {
    int64_t n = 4;
    for (int64_t f : factors)
      if (detail::mulOverflows(n, f, &n))
        return Status::error(ErrorCode::InvalidArgument,
                             "problem is too large: an element count "
                             "overflows 64 bits");
  }
  return Status::success();
}

Status MergeProblem::validate() const {
  struct Dim {
    const char *name;
    int64_t value;
  } dims[] = {{"B", b}, {"H", h}, {"S", s}, {"Dv", dv}};
  for (const Dim &dim : dims)
    if (dim.value <= 0)
      return Status::error(ErrorCode::InvalidArgument,
                           std::string("merge problem ") + dim.name +
                               " must be positive, got " +
                               std::to_string(dim.value));
  int64_t n = 4;
  for (int64_t f : {b, h, s, dv})
    if (detail::mulOverflows(n, f, &n))
      return Status::error(ErrorCode::InvalidArgument,
                           "merge problem is too large: an element count "
                           "overflows 64 bits");
  return Status::success();
}

int64_t countVisiblePairs(const MaskSpec &mask, int64_t sq, int64_t sk) {
  if (sq <= 0 || sk <= 0)
    return 0;
  if (mask.isNone())
    return sq * sk;
  int64_t off = mask.offset(sq, sk);
  // Bounds beyond the problem hide nothing; clamping avoids overflow.
  int64_t cap = sq + sk + 1;
  int64_t left = std::min(mask.left, cap), right = std::min(mask.right, cap);
  int64_t sink = std::min(mask.sink, sk);
  int64_t total = 0;
  for (int64_t i = 0; i < sq; ++i) {
    int64_t lo = mask.hasLeft() ? std::max<int64_t>(0, i + off - left) : 0;
    int64_t hi =
        mask.hasRight() ? std::min<int64_t>(sk - 1, i + off + right) : sk - 1;
    int64_t window = hi >= lo ? hi - lo + 1 : 0;
    // Keys [0, sink) are visible too; do not count the overlap twice.
    int64_t overlapHi = std::min(hi, sink - 1);
    int64_t overlap = overlapHi >= lo ? overlapHi - lo + 1 : 0;
    total += window + sink - overlap;
  }
  return total;
}

double forwardFlops(const Problem &p, const MaskSpec &mask) {
  return 2.0 * static_cast<double>(p.d + p.dv) *
         static_cast<double>(countVisiblePairs(mask, p.sq, p.sk)) *
         static_cast<double>(p.b) * static_cast<double>(p.hq);
}

double backwardFlops(const Problem &p, const MaskSpec &mask) {
  return 2.5 * forwardFlops(p, mask);
}

//===----------------------------------------------------------------------===//
// GPU launches
//===----------------------------------------------------------------------===//

namespace {

/// One tensor passed as a flattened 1-d memref descriptor.
struct FlatTensor {
  const void *ptr;
  int64_t elements;
};

/// The descriptors of `tensors` (allocated = aligned = ptr, offset 0, size
/// = elements, stride 1), then B, Sq, Sk: the parameters of both GPU ABIs.
template <size_t N, size_t M>
void packFlat(const Problem &p, const FlatTensor (&tensors)[N],
              uint64_t (&values)[M]) {
  static_assert(M == 5 * N + 3, "five values a descriptor, then B, Sq, Sk");
  size_t i = 0;
  for (const FlatTensor &t : tensors) {
    uint64_t address = reinterpret_cast<uintptr_t>(t.ptr);
    values[i++] = address;                           // allocated
    values[i++] = address;                           // aligned
    values[i++] = 0;                                 // offset
    values[i++] = static_cast<uint64_t>(t.elements); // size
    values[i++] = 1;                                 // stride
  }
  values[i++] = static_cast<uint64_t>(p.b);
  values[i++] = static_cast<uint64_t>(p.sq);
  values[i++] = static_cast<uint64_t>(p.sk);
}

} // namespace

void packGpuFlatV1(const Problem &p, const ForwardArgs &args,
                   uint64_t (&values)[kGpuFlatV1NumParams]) {
  const FlatTensor tensors[] = {{args.q, p.qElements()},
                                {args.k, p.kElements()},
                                {args.v, p.vElements()},
                                {args.o, p.oElements()},
                                {args.lse, p.lseElements()}};
  packFlat(p, tensors, values);
}

GpuBwdWorkspace gpuBwdV1Workspace(const Problem &p, bool deterministic) {
  GpuBwdWorkspace w;
  w.dsumBytes = static_cast<size_t>(p.lseElements()) * sizeof(float);
  w.totalBytes = w.dsumBytes;
  if (!deterministic) {
    w.dqaccOffset = (w.dsumBytes + 255) / 256 * 256;
    w.dqaccBytes = static_cast<size_t>(p.qElements()) * sizeof(float);
    w.totalBytes = w.dqaccOffset + w.dqaccBytes;
  }
  return w;
}

void packGpuBwdV1(const Problem &p, const BackwardArgs &args, void *workspace,
                  bool deterministic, uint64_t (&values)[kGpuBwdV1NumParams]) {
  GpuBwdWorkspace w = gpuBwdV1Workspace(p, deterministic);
  char *base = static_cast<char *>(workspace);
  const FlatTensor tensors[] = {{args.q, p.qElements()},
                                {args.k, p.kElements()},
                                {args.v, p.vElements()},
                                {args.o, p.oElements()},
                                {args.dO, p.oElements()},
                                {args.lse, p.lseElements()},
                                {args.dq, p.qElements()},
                                {args.dk, p.kElements()},
                                {args.dv, p.vElements()},
                                {base, p.lseElements()},
                                {deterministic ? nullptr : base + w.dqaccOffset,
                                 deterministic ? 0 : p.qElements()}};
  packFlat(p, tensors, values);
}

Expected<LaunchDims> gpuLaunchDims(const BundleMeta &meta, const Problem &p,
                                   const int64_t (&maxGrid)[3], GpuGrid grid) {
  const bool keys = grid == GpuGrid::KeyTiles;
  const int64_t tile = keys ? meta.blockN : meta.blockM;
  if (tile <= 0 || meta.blockThreads <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         std::string("the bundle states no GPU launch (") +
                             (keys ? "block_n" : "block_m") +
                             " and block_threads must be positive)");
  const int64_t rows = keys ? p.sk : p.sq;
  LaunchDims dims;
  dims.grid[0] = rows / tile + (rows % tile != 0);
  dims.grid[1] = keys ? p.hk : p.hq;
  dims.grid[2] = p.b;
  dims.block[0] = meta.blockThreads;
  dims.sharedBytes = meta.sharedBytes;
  const char *const what[] = {keys ? "x = ceil(Sk / block_n)"
                                   : "x = ceil(Sq / block_m)",
                              keys ? "y = Hk" : "y = Hq", "z = B"};
  for (int d = 0; d < 3; ++d)
    if (dims.grid[d] > maxGrid[d])
      return Status::error(
          ErrorCode::InvalidArgument,
          std::string("grid ") + what[d] + " = " +
              std::to_string(dims.grid[d]) + " exceeds the device limit " +
              std::to_string(maxGrid[d]) + "; nothing was launched");
  return dims;
}

//===----------------------------------------------------------------------===//
// Backends
//===----------------------------------------------------------------------===//

LoadedKernel::~LoadedKernel() = default;
Backend::~Backend() = default;
StreamTimer::~StreamTimer() = default;

Status LoadedKernel::launchBackward(const Problem &, const BackwardArgs &,
                                    void *) {
  return Status::error(ErrorCode::InvalidArgument,
                       "backward not supported by this backend");
}

Status LoadedKernel::launchMerge(const MergeProblem &, const MergeArgs &,
                                 void *) {
  return Status::error(ErrorCode::InvalidArgument,
                       "merge not supported by this backend");
}

Status LoadedKernel::launchAccumulate(int64_t, const AccumulateArgs &,
                                      void *) {
  return Status::error(ErrorCode::InvalidArgument,
                       "accumulate not supported by this backend");
}

Expected<LaunchDims> LoadedKernel::launchDims(const Problem &, GpuGrid) const {
  return Status::error(ErrorCode::InvalidArgument,
                       "a host kernel has no GPU launch");
}

namespace {

/// The wall clock between synchronize() calls.
class WallClockTimer final : public StreamTimer {
public:
  explicit WallClockTimer(Backend &backend) : backend_(backend) {}
  Status start(void *stream) override {
    Status s = backend_.synchronize(stream);
    start_ = std::chrono::steady_clock::now();
    return s;
  }
  Status stop(void *stream) override {
    Status s = backend_.synchronize(stream);
    stop_ = std::chrono::steady_clock::now();
    return s;
  }
  Expected<double> elapsedMs() override {
    return std::chrono::duration<double, std::milli>(stop_ - start_).count();
  }

private:
  Backend &backend_;
  std::chrono::steady_clock::time_point start_, stop_;
};

} // namespace

Expected<std::unique_ptr<StreamTimer>> Backend::createTimer() {
  return std::unique_ptr<StreamTimer>(new WallClockTimer(*this));
}

Expected<Backend *> getBackend(Target target) {
  static std::mutex mutex;
  static std::unique_ptr<Backend> host;
  // GPU backends are never destroyed: the driver may already be torn down
  // when static destructors run.
  static Backend *gpu[2] = {nullptr, nullptr};
  std::lock_guard<std::mutex> lock(mutex);
  switch (target) {
  case Target::Cpu:
    if (!host) {
      Expected<std::unique_ptr<Backend>> created = detail::createHostBackend();
      if (!created.ok())
        return created.status();
      host = created.take();
    }
    return host.get();
  case Target::Cuda:
  case Target::Hip: {
    Backend *&backend = gpu[target == Target::Hip];
    if (!backend) {
      // A failure is not cached: a later call tries the library again.
      Expected<std::unique_ptr<Backend>> created =
          target == Target::Cuda ? detail::createCudaBackend()
                                 : detail::createHipBackend();
      if (!created.ok())
        return created.status();
      backend = created.take().release();
    }
    return backend;
  }
  }
  return Status::error(ErrorCode::InvalidArgument, "unknown target");
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  if (this != &o) {
    reset();
    backend_ = std::exchange(o.backend_, nullptr);
    ptr_ = std::exchange(o.ptr_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

Expected<DeviceBuffer> DeviceBuffer::allocate(Backend &backend, size_t bytes) {
  Expected<void *> p = backend.allocate(bytes);
  if (!p.ok())
    return p.status();
  return DeviceBuffer(&backend, *p, bytes);
}

void DeviceBuffer::reset() {
  if (backend_ && ptr_)
    backend_->deallocate(ptr_);
  backend_ = nullptr;
  ptr_ = nullptr;
  size_ = 0;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

Kernel::~Kernel() = default;

Expected<std::unique_ptr<Kernel>> Kernel::loadFile(const std::string &path) {
  std::string bytes, problem;
  if (!detail::readFile(path, &bytes, &problem))
    return Status::error(
        ErrorCode::Io, detail::printable("bundle '" + path + "': " + problem));
  return loadBytes(bytes, path);
}

Expected<std::unique_ptr<Kernel>> Kernel::loadBytes(std::string_view bytes,
                                                    const std::string &name) {
  std::unique_ptr<Kernel> kernel(new (std::nothrow) Kernel());
  if (!kernel)
    return Status::error(ErrorCode::OutOfMemory, "out of memory");
  std::string binary, err;
  if (!parseBundle(bytes, name, &kernel->meta_, &binary, &err))
    return Status::error(ErrorCode::BadBundle, err);
  Expected<Backend *> backend = getBackend(kernel->meta_.target);
  if (!backend.ok())
    return Status::error(backend.status().code(),
                         "bundle '" + name + "': " + backend.message());
  kernel->backend_ = *backend;
  kernel->name_ = name;
  Expected<std::unique_ptr<LoadedKernel>> loaded =
      kernel->backend_->load(kernel->meta_, binary, name);
  if (!loaded.ok())
    return loaded.status();
  kernel->loaded_ = loaded.take();
  return kernel;
}

namespace {

/// With 32-bit kernel indices (index_bits=32), every buffer's element count
/// must stay below kMaxIndex32Elements; `counts` are (buffer, elements).
Status checkIndexRange(const BundleMeta &meta, const std::string &bundle,
                       std::initializer_list<std::pair<const char *, int64_t>>
                           counts) {
  if (meta.indexBits != 32)
    return Status::success();
  for (const auto &[buffer, elements] : counts)
    if (elements > kMaxIndex32Elements)
      return Status::error(
          ErrorCode::InvalidArgument,
          std::string("problem too large for bundle '") + bundle +
              "' (index_bits=32): " + buffer + " has " +
              std::to_string(elements) + " elements, more than " +
              std::to_string(kMaxIndex32Elements) +
              "; compile it with --index-bits=64; nothing was launched");
  return Status::success();
}

} // namespace

Status Kernel::checkProblem(const Problem &p) const {
  Status valid = p.validate();
  if (!valid.ok())
    return valid;
  struct Field {
    const char *name;
    int64_t problem, bundle;
  } fields[] = {{"Hq", p.hq, meta_.hq},
                {"Hk", p.hk, meta_.hk},
                {"D", p.d, meta_.d},
                {"Dv", p.dv, meta_.dv}};
  for (const Field &f : fields)
    if (f.problem != f.bundle)
      return Status::error(ErrorCode::ProblemMismatch,
                           std::string("problem ") + f.name + "=" +
                               std::to_string(f.problem) +
                               " does not match bundle " + f.name + "=" +
                               std::to_string(f.bundle));
  // Validated above: these products fit 64 bits.
  return checkIndexRange(meta_, name_,
                         {{"q", p.b * p.hq * p.sq * p.d},
                          {"k", p.b * p.hk * p.sk * p.d},
                          {"v", p.b * p.hk * p.sk * p.dv},
                          {"o", p.b * p.hq * p.sq * p.dv}});
}

Expected<LaunchDims> Kernel::launchDims(const Problem &p, GpuGrid grid) const {
  return loaded_->launchDims(p, grid);
}

Expected<size_t> Kernel::backwardWorkspaceBytes(const Problem &p) const {
  Status check = checkRun(KernelKind::Backward, p);
  if (!check.ok())
    return check;
  if (meta_.abi != kAbiGpuBwdV1)
    return size_t(0);
  return gpuBwdV1Workspace(p, meta_.deterministic).totalBytes;
}

namespace {

/// One tensor of a run over host memory on a GPU backend: `in` is copied to
/// the device before the launch, the device buffer is copied to `out` (when
/// not null) after it.
struct HostTensor {
  const void *in;
  void *out;
  size_t bytes;
};

/// Allocates a device buffer per tensor, copies the inputs in, calls
/// `launch` with the device pointers (in the order of `tensors`), waits
/// for `stream` and copies the outputs back.
template <size_t N, typename Launch>
Status runStaged(Backend &backend, void *stream, const HostTensor (&tensors)[N],
                 Launch launch) {
  DeviceBuffer buffers[N];
  void *device[N];
  for (size_t i = 0; i < N; ++i) {
    Expected<DeviceBuffer> buf =
        DeviceBuffer::allocate(backend, tensors[i].bytes);
    if (!buf.ok())
      return buf.status();
    buffers[i] = buf.take();
    device[i] = buffers[i].get();
    if (tensors[i].in) {
      Status copied =
          backend.copyToDevice(device[i], tensors[i].in, tensors[i].bytes);
      if (!copied.ok())
        return copied;
    }
  }
  Status launched = launch(device);
  if (!launched.ok())
    return launched;
  Status synced = backend.synchronize(stream);
  if (!synced.ok())
    return synced;
  for (size_t i = 0; i < N; ++i) {
    if (!tensors[i].out)
      continue;
    Status copied =
        backend.copyToHost(tensors[i].out, device[i], tensors[i].bytes);
    if (!copied.ok())
      return copied;
  }
  return Status::success();
}

Status nullPointer(const char *name) {
  return Status::error(ErrorCode::InvalidArgument,
                       std::string("null pointer for ") + name);
}

Status checkForwardPointers(const ForwardArgs &args) {
  if (!args.q)
    return nullPointer("q");
  if (!args.k)
    return nullPointer("k");
  if (!args.v)
    return nullPointer("v");
  if (!args.o)
    return nullPointer("o");
  return Status::success();
}

Status checkBackwardPointers(const BackwardArgs &args) {
  struct Named {
    const char *name;
    const void *ptr;
  } pointers[] = {{"q", args.q},   {"k", args.k},     {"v", args.v},
                  {"o", args.o},   {"lse", args.lse}, {"dO", args.dO},
                  {"dq", args.dq}, {"dk", args.dk},   {"dv", args.dv}};
  for (const Named &n : pointers)
    if (!n.ptr)
      return nullPointer(n.name);
  return Status::success();
}

} // namespace

Status Kernel::checkRun(KernelKind kind, const Problem &p) const {
  Status s = checkKind(kind);
  return s.ok() ? checkProblem(p) : s;
}

Status Kernel::checkKind(KernelKind kind) const {
  if (meta_.kind == kind)
    return Status::success();
  if (meta_.kind == KernelKind::Merge)
    return Status::error(ErrorCode::ProblemMismatch,
                         "bundle '" + name_ +
                             "' is a merge kernel (kind=merge); run it with "
                             "runMerge (C API: fmhaKernelRunMerge)");
  if (meta_.kind == KernelKind::Accumulate)
    return Status::error(ErrorCode::ProblemMismatch,
                         "bundle '" + name_ +
                             "' is an accumulate kernel (kind=acc); run it "
                             "with runAccumulate (C API: "
                             "fmhaKernelRunAccumulate)");
  if (kind == KernelKind::Merge)
    return Status::error(ErrorCode::ProblemMismatch,
                         "bundle '" + name_ + "' is not a merge kernel (kind=" +
                             toString(meta_.kind) + ")");
  if (kind == KernelKind::Accumulate)
    return Status::error(ErrorCode::ProblemMismatch,
                         "bundle '" + name_ +
                             "' is not an accumulate kernel (kind=" +
                             toString(meta_.kind) + ")");
  if (meta_.kind == KernelKind::Backward)
    return Status::error(ErrorCode::ProblemMismatch,
                         "bundle '" + name_ +
                             "' is a backward kernel (kind=bwd); run it with "
                             "runBackward (C API: fmhaKernelRunBackward)");
  return Status::error(ErrorCode::ProblemMismatch,
                       "bundle '" + name_ +
                           "' is a forward kernel (kind=fwd); run it with "
                           "run (C API: fmhaKernelRunForward)");
}

Status Kernel::run(const Problem &p, const ForwardArgs &args,
                   void *stream) const {
  Status check = checkRun(KernelKind::Forward, p);
  if (!check.ok())
    return check;
  Status pointers = checkForwardPointers(args);
  if (!pointers.ok())
    return pointers;
  if (args.lse)
    return loaded_->launchForward(p, args, stream);
  Expected<DeviceBuffer> scratch = DeviceBuffer::allocate(
      *backend_, static_cast<size_t>(p.lseElements()) * sizeof(float));
  if (!scratch.ok())
    return scratch.status();
  ForwardArgs withLse = args;
  withLse.lse = static_cast<float *>(scratch->get());
  Status launched = loaded_->launchForward(p, withLse, stream);
  if (!launched.ok())
    return launched;
  // The scratch buffer is freed on return: wait for the kernel first.
  return backend_->synchronize(stream);
}

Status Kernel::runHost(const Problem &p, const ForwardArgs &hostArgs,
                       void *stream) const {
  if (backend_->target() == Target::Cpu)
    return run(p, hostArgs, stream);
  Status check = checkRun(KernelKind::Forward, p);
  if (!check.ok())
    return check;
  Status pointers = checkForwardPointers(hostArgs);
  if (!pointers.ok())
    return pointers;
  size_t elem = dtypeSize(meta_.dtype);
  auto bytes = [&](int64_t elements, size_t size) {
    return static_cast<size_t>(elements) * size;
  };
  const HostTensor tensors[] = {
      {hostArgs.q, nullptr, bytes(p.qElements(), elem)},
      {hostArgs.k, nullptr, bytes(p.kElements(), elem)},
      {hostArgs.v, nullptr, bytes(p.vElements(), elem)},
      {nullptr, hostArgs.o, bytes(p.oElements(), elem)},
      {nullptr, hostArgs.lse, bytes(p.lseElements(), sizeof(float))}};
  return runStaged(*backend_, stream, tensors, [&](void *const *device) {
    ForwardArgs deviceArgs;
    deviceArgs.q = device[0];
    deviceArgs.k = device[1];
    deviceArgs.v = device[2];
    deviceArgs.o = device[3];
    deviceArgs.lse = static_cast<float *>(device[4]);
    return loaded_->launchForward(p, deviceArgs, stream);
  });
}

Status Kernel::runBackward(const Problem &p, const BackwardArgs &args,
                           void *stream) const {
  Status check = checkRun(KernelKind::Backward, p);
  if (!check.ok())
    return check;
  Status pointers = checkBackwardPointers(args);
  if (!pointers.ok())
    return pointers;
  if (args.workspace && meta_.abi == kAbiGpuBwdV1) {
    size_t need = gpuBwdV1Workspace(p, meta_.deterministic).totalBytes;
    if (args.workspaceBytes < need)
      return Status::error(
          ErrorCode::InvalidArgument,
          "backward workspace of " + std::to_string(args.workspaceBytes) +
              " bytes is too small: B=" + std::to_string(p.b) +
              " Sq=" + std::to_string(p.sq) + " needs " + std::to_string(need) +
              " bytes (backwardWorkspaceBytes; C API: "
              "fmhaKernelBackwardWorkspaceBytes); nothing was launched");
    if (reinterpret_cast<uintptr_t>(args.workspace) % 256 != 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "backward workspace must be 256-byte aligned; "
                           "nothing was launched");
  }
  return loaded_->launchBackward(p, args, stream);
}

Status Kernel::runBackwardHost(const Problem &p, const BackwardArgs &hostArgs,
                               void *stream) const {
  if (backend_->target() == Target::Cpu)
    return runBackward(p, hostArgs, stream);
  Status check = checkRun(KernelKind::Backward, p);
  if (!check.ok())
    return check;
  Status pointers = checkBackwardPointers(hostArgs);
  if (!pointers.ok())
    return pointers;
  size_t elem = dtypeSize(meta_.dtype);
  auto bytes = [&](int64_t elements, size_t size) {
    return static_cast<size_t>(elements) * size;
  };
  const HostTensor tensors[] = {
      {hostArgs.q, nullptr, bytes(p.qElements(), elem)},
      {hostArgs.k, nullptr, bytes(p.kElements(), elem)},
      {hostArgs.v, nullptr, bytes(p.vElements(), elem)},
      {hostArgs.o, nullptr, bytes(p.oElements(), elem)},
      {hostArgs.lse, nullptr, bytes(p.lseElements(), sizeof(float))},
      {hostArgs.dO, nullptr, bytes(p.oElements(), elem)},
      {nullptr, hostArgs.dq, bytes(p.qElements(), elem)},
      {nullptr, hostArgs.dk, bytes(p.kElements(), elem)},
      {nullptr, hostArgs.dv, bytes(p.vElements(), elem)}};
  return runStaged(*backend_, stream, tensors, [&](void *const *device) {
    BackwardArgs deviceArgs;
    deviceArgs.q = device[0];
    deviceArgs.k = device[1];
    deviceArgs.v = device[2];
    deviceArgs.o = device[3];
    deviceArgs.lse = static_cast<const float *>(device[4]);
    deviceArgs.dO = device[5];
    deviceArgs.dq = device[6];
    deviceArgs.dk = device[7];
    deviceArgs.dv = device[8];
    return loaded_->launchBackward(p, deviceArgs, stream);
  });
}

Status Kernel::checkMergeProblem(const MergeProblem &p) const {
  Status valid = p.validate();
  if (!valid.ok())
    return valid;
  if (p.h != meta_.hq)
    return Status::error(
        ErrorCode::ProblemMismatch,
        "merge problem H=" + std::to_string(p.h) +
            " does not match bundle H=" + std::to_string(meta_.hq));
  if (p.dv != meta_.dv)
    return Status::error(
        ErrorCode::ProblemMismatch,
        "merge problem Dv=" + std::to_string(p.dv) +
            " does not match bundle Dv=" + std::to_string(meta_.dv));
  return checkIndexRange(meta_, name_, {{"o", p.b * p.h * p.s * p.dv}});
}

Status Kernel::runMerge(const MergeProblem &p, const MergeArgs &args,
                        void *stream) const {
  Status kind = checkKind(KernelKind::Merge);
  if (!kind.ok())
    return kind;
  Status check = checkMergeProblem(p);
  if (!check.ok())
    return check;
  struct Named {
    const char *name;
    const void *ptr;
  } pointers[] = {{"o1", args.o1},     {"lse1", args.lse1}, {"o2", args.o2},
                  {"lse2", args.lse2}, {"o", args.o},       {"lse", args.lse}};
  for (const Named &n : pointers)
    if (!n.ptr)
      return nullPointer(n.name);
  return loaded_->launchMerge(p, args, stream);
}

Status Kernel::runAccumulate(int64_t n, const AccumulateArgs &args,
                             void *stream) const {
  Status kind = checkKind(KernelKind::Accumulate);
  if (!kind.ok())
    return kind;
  if (n < 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "accumulate: n must be non-negative, got " +
                             std::to_string(n));
  if (static_cast<uint64_t>(n) > (uint64_t(1) << 60))
    return Status::error(ErrorCode::InvalidArgument,
                         "accumulate: n=" + std::to_string(n) +
                             " is too large");
  if (Status range = checkIndexRange(meta_, name_, {{"x", n}}); !range.ok())
    return range;
  if (!args.x)
    return nullPointer("x");
  if (!args.acc)
    return nullPointer("acc");
  if (n == 0)
    return Status::success();
  return loaded_->launchAccumulate(n, args, stream);
}

} // namespace fmha::rt
