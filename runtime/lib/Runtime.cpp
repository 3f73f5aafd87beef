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
#include <thread>

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
  if (pageSize < 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "problem page size " + std::to_string(pageSize) +
                             " is negative (0: contiguous K/V)");
  if (paged()) {
    for (const Dim &dim : {Dim{"pages", pages}, Dim{"max_pages", maxPages}})
      if (dim.value <= 0 || dim.value > kMaxSequence)
        return Status::error(ErrorCode::InvalidArgument,
                             std::string("problem ") + dim.name +
                                 " of a paged cache must be in [1, 2^30], "
                                 "got " +
                                 std::to_string(dim.value));
    if (pageSize > kMaxSequence / maxPages || sk != maxPages * pageSize)
      return Status::error(
          ErrorCode::InvalidArgument,
          "problem Sk of a paged cache is max_pages * page size (" +
              std::to_string(maxPages) + " * " + std::to_string(pageSize) +
              ", at most 2^30), got Sk=" + std::to_string(sk));
  }
  // Every element count, in bytes at 4 bytes an element, must fit int64.
  const int64_t n = batch();
  const int64_t kvRows[2] = {paged() ? pages : n, paged() ? pageSize : sk};
  const int64_t counts[][4] = {{n, hq, sq, d},
                               {kvRows[0], hk, kvRows[1], d},
                               {kvRows[0], hk, kvRows[1], dv},
                               {n, hq, sq, dv},
                               {n, hq, sq, 4},
                               {b, maxPages, 1, 1}};
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

Status checkSeqlens(const char *name, const int32_t *cu, int64_t b,
                    int64_t total) {
  auto bad = [&](const std::string &what) {
    return Status::error(ErrorCode::InvalidArgument,
                         std::string(name) + ": " + what);
  };
  if (cu[0] != 0)
    return bad("the offsets start at 0, got " + std::string(name) +
               "[0]=" + std::to_string(cu[0]));
  for (int64_t i = 1; i <= b; ++i)
    if (cu[i] < cu[i - 1])
      return bad(std::string(name) + "[" + std::to_string(i) +
                 "]=" + std::to_string(cu[i]) + " is less than " + name + "[" +
                 std::to_string(i - 1) + "]=" + std::to_string(cu[i - 1]) +
                 ": the offsets must be nondecreasing");
  if (cu[b] > total)
    return bad(std::string(name) + "[" + std::to_string(b) +
               "]=" + std::to_string(cu[b]) + " is past the tensors' " +
               std::to_string(total) + " rows");
  return Status::success();
}

Status checkPaged(const Problem &p, const int32_t *blockTable,
                  const int32_t *seqlensK) {
  const int64_t longest = p.maxPages * p.pageSize;
  for (int64_t n = 0; n < p.b; ++n) {
    const int64_t len = seqlensK[n];
    if (len < 0 || len > longest)
      return Status::error(
          ErrorCode::InvalidArgument,
          "seqlens_k[" + std::to_string(n) + "]=" + std::to_string(len) +
              " is outside the cache's [0, " + std::to_string(longest) +
              "] keys (max_pages " + std::to_string(p.maxPages) +
              " * page size " + std::to_string(p.pageSize) + ")");
    for (int64_t j = 0; j < (len + p.pageSize - 1) / p.pageSize; ++j) {
      const int64_t page = blockTable[n * p.maxPages + j];
      if (page < 0 || page >= p.pages)
        return Status::error(
            ErrorCode::InvalidArgument,
            "block_table[" + std::to_string(n) + ", " + std::to_string(j) +
                "]=" + std::to_string(page) + " is past the cache's " +
                std::to_string(p.pages) + " pages (seqlens_k[" +
                std::to_string(n) + "]=" + std::to_string(len) + " reads it)");
    }
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

double forwardFlops(const Problem &p, const MaskSpec &mask, const int32_t *cuQ,
                    const int32_t *cuK, const int32_t *seqlensK) {
  double visible = 0;
  for (int64_t n = 0; n < p.b; ++n) {
    const int64_t sq = cuQ ? cuQ[n + 1] - cuQ[n] : p.sq;
    const int64_t sk = cuK        ? cuK[n + 1] - cuK[n]
                       : seqlensK ? seqlensK[n]
                                  : p.sk;
    visible += static_cast<double>(countVisiblePairs(mask, sq, sk));
  }
  return 2.0 * static_cast<double>(p.d + p.dv) * visible *
         static_cast<double>(p.hq);
}

double backwardFlops(const Problem &p, const MaskSpec &mask) {
  return 2.5 * forwardFlops(p, mask);
}

//===----------------------------------------------------------------------===//
// Backends
//===----------------------------------------------------------------------===//

LoadedKernel::~LoadedKernel() = default;
Backend::~Backend() = default;
StreamTimer::~StreamTimer() = default;

Status LoadedKernel::checkLaunch(const PlannedLaunch &) const {
  return Status::success();
}

int64_t Backend::multiprocessors() const {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
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
  if (p.varlen != meta_.varlen)
    return Status::error(ErrorCode::ProblemMismatch,
                         p.varlen ? "a variable-length problem needs a "
                                    "varlen=1 bundle (fmha-compile --varlen)"
                                  : "bundle '" + name_ +
                                        "' takes variable-length batches "
                                        "(varlen=1): set Problem::varlen and "
                                        "give cu_seqlens_q and cu_seqlens_k");
  if (p.pageSize != meta_.pageSize)
    return Status::error(
        ErrorCode::ProblemMismatch,
        meta_.pageSize
            ? "bundle '" + name_ + "' takes a paged K/V cache of page size " +
                  std::to_string(meta_.pageSize) +
                  ": set Problem::pageSize (got " + std::to_string(p.pageSize) +
                  ") and give block_table and seqlens_k"
            : "a paged problem (page size " + std::to_string(p.pageSize) +
                  ") needs a bundle built for its page size (fmha-compile "
                  "--page-size)");
  // The operands' spans (index_bits=32) as the launch would bind them.
  Expected<size_t> bound = workspaceBytes(sizesOf(p));
  return bound.ok() ? Status::success() : bound.status();
}

LaunchArgs Kernel::sizesOf(const Problem &p) {
  LaunchArgs args;
  args.size("b", p.b).size("sq", p.sq);
  // A paged cache's keys are its pages'.
  if (p.paged())
    args.size("pages", p.pages).size("max_pages", p.maxPages);
  else
    args.size("sk", p.sk);
  return args;
}

Expected<size_t> Kernel::backwardWorkspaceBytes(const Problem &p) const {
  Status check = checkRun(KernelKind::Backward, p);
  if (!check.ok())
    return check;
  return workspaceBytes(sizesOf(p));
}

namespace {

Status nullPointer(const char *name) {
  return Status::error(ErrorCode::InvalidArgument,
                       std::string("null pointer for ") + name);
}

struct Named {
  const char *name;
  const void *ptr;
};

/// The first null pointer of `pointers` as an error, else success.
template <size_t N> Status checkPointers(const Named (&pointers)[N]) {
  for (const Named &n : pointers)
    if (!n.ptr)
      return nullPointer(n.name);
  return Status::success();
}

/// `args` with every pointer of `tensors` bound under its name (null ones
/// left out: the optional operands).
template <size_t N>
LaunchArgs withTensors(LaunchArgs args, const Named (&tensors)[N]) {
  for (const Named &n : tensors)
    if (n.ptr)
      args.tensor(n.name, n.ptr);
  return args;
}

/// Forward: q, k, v, o; lse may be null (scratch); the cu_seqlens of a
/// variable-length batch (checked when `hostOffsets`: they are in host
/// memory).
Status forwardArgs(const ForwardArgs &a, const Problem &p,
                   const LaunchArgs &sizes, bool hostOffsets, LaunchArgs *out) {
  const Named required[] = {{"q", a.q}, {"k", a.k}, {"v", a.v}, {"o", a.o}};
  Status s = checkPointers(required);
  if (!s.ok())
    return s;
  const bool given = a.cuSeqlensQ || (a.cuSeqlensK && !p.paged());
  if (p.varlen) {
    // A paged cache's sequences take their keys from the cache.
    const Named queries[] = {{"cu_seqlens_q", a.cuSeqlensQ}};
    const Named keys[] = {{"cu_seqlens_k", a.cuSeqlensK}};
    s = checkPointers(queries);
    if (s.ok() && !p.paged())
      s = checkPointers(keys);
    if (s.ok() && hostOffsets)
      s = checkSeqlens("cu_seqlens_q", a.cuSeqlensQ, p.b, p.sq);
    if (s.ok() && hostOffsets && !p.paged())
      s = checkSeqlens("cu_seqlens_k", a.cuSeqlensK, p.b, p.sk);
    if (!s.ok())
      return s;
  } else if (given) {
    return Status::error(ErrorCode::InvalidArgument,
                         "cu_seqlens given to a kernel of fixed-length "
                         "batches (its bundle has no varlen=1)");
  }
  if (p.paged()) {
    const Named cache[] = {{"block_table", a.blockTable},
                           {"seqlens_k", a.seqlensK}};
    s = checkPointers(cache);
    if (s.ok() && a.cuSeqlensK)
      s = Status::error(ErrorCode::InvalidArgument,
                        "cu_seqlens_k given to a paged cache's kernel: each "
                        "sequence's keys are seqlens_k's");
    if (s.ok() && hostOffsets)
      s = checkPaged(p, a.blockTable, a.seqlensK);
    if (!s.ok())
      return s;
  } else if (a.blockTable || a.seqlensK) {
    return Status::error(ErrorCode::InvalidArgument,
                         "block_table or seqlens_k given to a kernel of "
                         "contiguous K/V (its bundle has no page_size)");
  }
  const Named all[] = {{"q", a.q},
                       {"k", a.k},
                       {"v", a.v},
                       {"o", a.o},
                       {"lse", a.lse},
                       {"sinks", a.sinks},
                       {"cu_seqlens_q", a.cuSeqlensQ},
                       {"cu_seqlens_k", a.cuSeqlensK},
                       {"block_table", a.blockTable},
                       {"seqlens_k", a.seqlensK}};
  *out = withTensors(sizes, all);
  return Status::success();
}

Status backwardArgs(const BackwardArgs &a, const LaunchArgs &sizes,
                    LaunchArgs *out) {
  const Named all[] = {{"q", a.q},   {"k", a.k},     {"v", a.v},
                       {"o", a.o},   {"lse", a.lse}, {"dO", a.dO},
                       {"dq", a.dq}, {"dk", a.dk},   {"dv", a.dv}};
  Status s = checkPointers(all);
  if (!s.ok())
    return s;
  *out = withTensors(sizes, all);
  const Named sinks[] = {{"sinks", a.sinks}, {"dsinks", a.dsinks}};
  *out = withTensors(*out, sinks);
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
  LaunchArgs named;
  if (check.ok())
    // A cpu bundle's launch checks host offsets itself (any caller's).
    check = forwardArgs(args, p, sizesOf(p), /*hostOffsets=*/false, &named);
  return check.ok() ? launch(named, stream) : check;
}

Status Kernel::runHost(const Problem &p, const ForwardArgs &hostArgs,
                       void *stream) const {
  Status check = checkRun(KernelKind::Forward, p);
  LaunchArgs named;
  if (check.ok())
    // A cpu bundle's launch checks them itself (as for run()).
    check = forwardArgs(hostArgs, p, sizesOf(p),
                        /*hostOffsets=*/meta_.target != Target::Cpu, &named);
  return check.ok() ? launchHost(named, stream) : check;
}

Status Kernel::runBackward(const Problem &p, const BackwardArgs &args,
                           void *stream) const {
  Status check = checkRun(KernelKind::Backward, p);
  LaunchArgs named;
  if (check.ok())
    check = backwardArgs(args, sizesOf(p), &named);
  return check.ok() ? launch(named, stream, args.workspace, args.workspaceBytes)
                    : check;
}

Status Kernel::runBackwardHost(const Problem &p, const BackwardArgs &hostArgs,
                               void *stream) const {
  Status check = checkRun(KernelKind::Backward, p);
  LaunchArgs named;
  if (check.ok())
    check = backwardArgs(hostArgs, sizesOf(p), &named);
  return check.ok() ? launchHost(named, stream) : check;
}

namespace {

LaunchArgs mergeSizes(const MergeProblem &p) {
  LaunchArgs args;
  args.size("b", p.b).size("s", p.s);
  return args;
}

} // namespace

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
  Expected<size_t> bound = workspaceBytes(mergeSizes(p));
  return bound.ok() ? Status::success() : bound.status();
}

Status Kernel::runMerge(const MergeProblem &p, const MergeArgs &args,
                        void *stream) const {
  Status kind = checkKind(KernelKind::Merge);
  if (!kind.ok())
    return kind;
  Status check = checkMergeProblem(p);
  if (!check.ok())
    return check;
  const Named all[] = {{"o1", args.o1}, {"lse1", args.lse1},
                       {"o2", args.o2}, {"lse2", args.lse2},
                       {"o", args.o},   {"lse", args.lse}};
  Status pointers = checkPointers(all);
  if (!pointers.ok())
    return pointers;
  return launch(withTensors(mergeSizes(p), all), stream);
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
  LaunchArgs sizes;
  sizes.size("n", n);
  Expected<size_t> bound = workspaceBytes(sizes);
  if (!bound.ok())
    return bound.status();
  const Named all[] = {{"x", args.x}, {"acc", args.acc}};
  Status pointers = checkPointers(all);
  if (!pointers.ok())
    return pointers;
  if (n == 0)
    return Status::success();
  return launch(withTensors(sizes, all), stream);
}

} // namespace fmha::rt
