//===- Runtime.h - FMHA runtime C++ API -------------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Loads a bundle (Bundle.h) into a Kernel for the backend its target names and
// launches it. Backends are found at run time: the host backend is built in;
// the CUDA backend dlopen's the driver, libcuda.so.1 (or the file named by
// the environment variable FMHA_CUDA_LIBRARY), on first use; the HIP backend
// the HIP runtime, libamdhip64.so (.so.5, .so.6, .so.7; or the file named by
// FMHA_HIP_LIBRARY). Both run through the same code
// (runtime/lib/GpuBackend.h). Every failure is a returned
// Status or Expected carrying a one-line message; nothing aborts and no
// exception leaves this API.
//
// One launch path serves every bundle: Kernel::launch binds named sizes and
// tensors (LaunchArgs, Launch.h) to the bundle's launch manifest
// (Manifest.h: its operands, workspaces and kernels with their grids and
// typed parameters) and launches what the manifest says. run, runBackward,
// runMerge and runAccumulate are that call with the arguments of their
// kind named: b, sq, sk and q, k, v, o, lse (forward; lse optional); the
// same plus dO, dq, dk, dv (backward); b, s and o1, lse1, o2, lse2, o, lse
// (merge); n and x, acc (accumulate). The manifests fmha-compile writes,
// and those a version-1 bundle is given (LegacyManifest.cpp), launch the
// ABIs below; the comments keep them as the reference for both.
//
// Host kernel ABI (abi=memref-ciface-v1, binary_format=elf-so): the bundle's
// binary is an ELF shared object exporting
//
//   void _mlir_ciface_<kernel>(MemRef4 *q, MemRef4 *k, MemRef4 *v,
//                              MemRef4 *o, MemRef3 *lse);
//
// over contiguous row-major BHSD buffers: q [B,Hq,Sq,D], k [B,Hk,Sk,D],
// v [B,Hk,Sk,Dv], o [B,Hq,Sq,Dv] in the bundle's dtype (f16 and bf16 as raw
// uint16_t bits) and lse [B,Hq,Sq] in float32.
//
// Host backward ABI (kind=bwd, target cpu, abi=memref-ciface-v1,
// binary_format=elf-so): the shared object exports
//
//   void _mlir_ciface_<kernel>(MemRef4 *q, MemRef4 *k, MemRef4 *v,
//                              MemRef4 *o, MemRef3 *lse, MemRef4 *dO,
//                              MemRef4 *dq, MemRef4 *dk, MemRef4 *dv);
//
// over the same contiguous BHSD buffers: q, k, v, o as in the forward, dO
// shaped like o [B,Hq,Sq,Dv], dq like q, dk like k, dv like v, all in the
// bundle's dtype; lse [B,Hq,Sq] float32, the forward's (natural log, -inf
// for a row with no visible key). q, k, v, o, lse and dO are inputs; the
// kernel overwrites every element of dq, dk and dv (callers need not zero
// them). dk and dv are summed over the Hq/Hk query heads of each kv head
// (DESIGN.md section 1). A bundle with deterministic=1 gives bit-identical
// dq, dk, dv run to run.
//
// GPU backward ABI (kind=bwd, abi=gpu-bwd-v1, targets cuda and hip; the
// kernels, grids and parameters are listed at kAbiGpuBwdV1 in Bundle.h): the
// runtime launches `<kernel>_prep`, `<kernel>_dkdv` and `<kernel>_dq` in that
// order on the caller's stream, 58 parameters each, with a workspace
// (Kernel::backwardWorkspaceBytes) of device bytes:
// dsum (float32, B*Hq*Sq), then, unless deterministic, dqacc (float32,
// B*Hq*Sq*D, in the kernels' own order: a permutation of row-major that
// only they read) at the next 256-byte boundary. The prep kernel zeroes
// dqacc; the workspace needs no initialisation. Callers may pass their own
// (BackwardArgs::workspace, 256-byte aligned, at least
// Kernel::backwardWorkspaceBytes); otherwise the kernel object keeps one,
// allocated on first use and grown when a problem needs more.
//
// Host merge ABI (kind=merge, target cpu, abi=memref-ciface-v1,
// binary_format=elf-so): the shared object exports
//
//   void _mlir_ciface_<kernel>(MemRef4 *o1, MemRef3 *lse1, MemRef4 *o2,
//                              MemRef3 *lse2, MemRef4 *o, MemRef3 *lse);
//
// over contiguous row-major buffers: o1, o2, o [B,H,S,Dv] in the bundle's
// dtype (H = the bundle's hq, Dv its dv) and lse1, lse2, lse [B,H,S] in
// float32. It writes lse = logaddexp(lse1, lse2) and o = o1*exp(lse1-lse) +
// o2*exp(lse2-lse), in f32 arithmetic, rounded to the dtype (DESIGN.md
// section 1); a partial with lse -inf weighs 0 (its o is not read into the
// sum) and two empty partials give o = 0, lse = -inf, never NaN. o may be
// o1 or o2 and lse may be lse1 or lse2 (the same buffer, in place); other
// overlaps are not allowed.
//
// GPU merge ABI (kind=merge, abi=gpu-merge-v1, target cuda: cubin or ptx;
// hip: hsaco): the same arithmetic and aliasing rules over device buffers.
// The binary holds one kernel named by `kernel`, the lowering of
//
//   gpu.func @kernel(%o1: memref<?xT>, %lse1: memref<?xf32>, %o2, %lse2,
//                    %o, %lse, %rows: index) kernel
//
// 31 kernel parameters of 8 bytes: for each of o1, lse1, o2, lse2, o, lse
// the five values of a flat memref descriptor (as gpu-flat-v1: allocated =
// aligned = device address, offset 0, size = element count, stride 1), then
// rows = B*H*S. A row is handled by 32 consecutive threads; the launch is
// grid (ceil(rows / (block_threads / 32)), 1, 1), block (block_threads, 1,
// 1), shared_bytes of dynamic shared memory (0 for the kernels fmha-compile
// writes: 256 threads, 8 rows a workgroup).
//
// Host accumulate ABI (kind=acc, target cpu, abi=memref-ciface-v1,
// binary_format=elf-so): the shared object exports
//
//   void _mlir_ciface_<kernel>(MemRef1 *x, MemRef1 *acc);
//
// over n contiguous elements: x in the bundle's dtype, acc float32. It
// writes acc[i] = acc[i] + float(x[i]) (one f32 addition per element, the
// same bits on every target). x may be acc; other overlaps are not allowed.
//
// GPU accumulate ABI (kind=acc, abi=gpu-acc-v1, target cuda: cubin or ptx;
// hip: hsaco): the same over device buffers. The binary holds one kernel
// named by `kernel`, the lowering of
//
//   gpu.func @kernel(%x: memref<?xT>, %acc: memref<?xf32>, %n: index) kernel
//
// 11 kernel parameters of 8 bytes: the five values of x's and of acc's flat
// memref descriptor (as gpu-flat-v1), then n. Thread t of workgroup w adds
// the 4 elements from (w * block_threads + t) * 4 (vector loads when both
// buffers are aligned for them, element by element otherwise); the launch
// is grid (ceil(n / (4 * block_threads)), 1, 1), block (block_threads, 1,
// 1), shared_bytes of dynamic shared memory (256 threads and 0 bytes for
// the kernels fmha-compile writes).
//
// GPU kernel ABI (abi=gpu-flat-v1, target cuda: binary_format cubin or ptx;
// target hip: hsaco). The binary holds one kernel named by the bundle's
// `kernel` key, the lowering of
//
//   gpu.func @kernel(%q: memref<?xT>, %k: memref<?xT>, %v: memref<?xT>,
//                    %o: memref<?xT>, %lse: memref<?xf32>,
//                    %b: index, %sq: index, %sk: index) kernel
//
// by MLIR's gpu-to-nvvm (gpu-to-rocdl) conversion with 64-bit indices: 28
// kernel parameters of 8 bytes each, in this order:
//
//   for each of q, k, v, o, lse (5 parameters each):
//     allocated pointer (u64), aligned pointer (u64), offset (i64),
//     size (i64), stride (i64)
//   then B, Sq, Sk (i64)
//
// The runtime passes allocated = aligned = the buffer's device address,
// offset = 0, size = the element count and stride = 1, over the same
// contiguous BHSD buffers as the host ABI (T = the bundle's dtype, lse
// float32). Hq, Hk, D and Dv are the bundle's, compiled into the kernel.
// The launch (grid, block, dynamic shared memory) is the rule in Bundle.h.
// With index_bits=32 the offset, size and stride of each descriptor and B,
// Sq, Sk are 32-bit parameters (the manifest's i32).
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_RUNTIME_H
#define FMHA_RUNTIME_RUNTIME_H

#include "fmha/Runtime/Bundle.h"
#include "fmha/Runtime/Launch.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fmha::rt {

/// The runtime version ("0.1.0").
const char *versionString();

//===----------------------------------------------------------------------===//
// Status and Expected
//===----------------------------------------------------------------------===//

enum class ErrorCode {
  Ok = 0,
  InvalidArgument,    ///< A null pointer, a bad size, a bad option.
  BadBundle,          ///< The bundle does not parse or validate.
  ProblemMismatch,    ///< The problem does not fit the bundle's signature.
  BackendUnavailable, ///< No driver / backend for the bundle's target.
  LoadFailed,         ///< The binary could not be loaded (dlopen, module).
  LaunchFailed,       ///< The launch or a synchronisation failed.
  OutOfMemory,
  Io, ///< Reading or writing a file failed.
};

/// Success, or an error code with a one-line message.
class Status {
public:
  Status() = default;
  static Status success() { return Status(); }
  static Status error(ErrorCode code, std::string message) {
    Status s;
    s.code_ = code == ErrorCode::Ok ? ErrorCode::InvalidArgument : code;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return code_ == ErrorCode::Ok; }
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
};

/// A value or an error Status.
template <typename T> class Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  /// `status` must be an error.
  Expected(Status status) : status_(std::move(status)) {
    if (status_.ok())
      status_ = Status::error(ErrorCode::InvalidArgument,
                              "internal error: Expected built from success");
  }
  bool ok() const { return value_.has_value(); }
  const Status &status() const { return status_; }
  const std::string &message() const { return status_.message(); }
  T &value() { return *value_; }
  const T &value() const { return *value_; }
  T &operator*() { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  T take() { return std::move(*value_); }

private:
  std::optional<T> value_;
  Status status_;
};

//===----------------------------------------------------------------------===//
// Problems and arguments
//===----------------------------------------------------------------------===//

/// The longest Sq or Sk a problem may have (2^30 tokens).
constexpr int64_t kMaxSequence = int64_t(1) << 30;

/// One attention problem, DESIGN.md section 1.
struct Problem {
  int64_t b = 0, hq = 0, hk = 0, sq = 0, sk = 0, d = 0, dv = 0;
  /// A variable-length batch (a varlen=1 bundle): b sequences back to back
  /// in tensors of batch 1, sq and sk the totals along their sequence axes
  /// (at least cu_seqlens_q[b] and cu_seqlens_k[b]).
  bool varlen = false;
  /// A paged K/V cache (a bundle with page_size=P): k and v are `pages`
  /// pages [pages, Hk, P, D]; block_table [b, maxPages] and seqlens_k [b]
  /// give each batch's (each sequence's, with varlen) pages and length; sk
  /// is then the longest a batch may be, maxPages * P. 0 when contiguous.
  int64_t pageSize = 0, pages = 0, maxPages = 0;

  bool paged() const { return pageSize > 0; }
  /// The tensors' batch: b, or 1 for a variable-length batch.
  int64_t batch() const { return varlen ? 1 : b; }
  int64_t qElements() const { return batch() * hq * sq * d; }
  /// k and v as [kvBatch, Hk, kvRows, D]: (batch, Sk), or of a paged
  /// cache (pages, P).
  int64_t kvBatch() const { return paged() ? pages : batch(); }
  int64_t kvRows() const { return paged() ? pageSize : sk; }
  int64_t kElements() const { return kvBatch() * hk * kvRows() * d; }
  int64_t vElements() const { return kvBatch() * hk * kvRows() * dv; }
  int64_t oElements() const { return batch() * hq * sq * dv; }
  int64_t lseElements() const { return batch() * hq * sq; }

  /// Section 1 on its own: every size positive, Sq and Sk at most
  /// kMaxSequence, hq % hk == 0, and no element count that overflows int64
  /// (the counts above are then safe to use); of a paged cache, pages and
  /// maxPages positive and sk = maxPages * pageSize.
  Status validate() const;
};

/// A paged cache's block_table (int32 [p.b, p.maxPages]) and seqlens_k
/// (int32 [p.b]) in host memory: each length in [0, maxPages * pageSize]
/// and each entry a length reaches (the first ceil(len / pageSize) of its
/// row) in [0, pages); else InvalidArgument naming the entry.
Status checkPaged(const Problem &p, const int32_t *blockTable,
                  const int32_t *seqlensK);

/// The offsets `cu` (int32 [b + 1], host memory) of a variable-length batch
/// over `total` rows: 0 first, nondecreasing, the last at most `total`;
/// else InvalidArgument naming `name` and the entry.
Status checkSeqlens(const char *name, const int32_t *cu, int64_t b,
                    int64_t total);

/// Forward arguments: pointers the backend can read (host memory for the host
/// backend, device memory for GPU backends). `lse` may be null: the runtime
/// then gives the kernel scratch space for it.
struct ForwardArgs {
  const void *q = nullptr;
  const void *k = nullptr;
  const void *v = nullptr;
  void *o = nullptr;
  float *lse = nullptr;
  /// The learned sink logits (float32 [Hq]) of a bundle built with them
  /// (sinks=1); null otherwise.
  const float *sinks = nullptr;
  /// The offsets (int32 [B + 1], nondecreasing from 0, the last at most Sq
  /// and Sk) of a variable-length batch (varlen=1); null otherwise.
  const int32_t *cuSeqlensQ = nullptr;
  const int32_t *cuSeqlensK = nullptr;
  /// A paged cache's table (int32 [B, max_pages]) and lengths (int32 [B])
  /// (page_size=P); null otherwise. With varlen, cuSeqlensK is null: each
  /// sequence's keys are its pages.
  const int32_t *blockTable = nullptr;
  const int32_t *seqlensK = nullptr;
};

/// Backward arguments (host ABI above): inputs q, k, v, o (the forward's
/// output in the bundle's dtype), lse (float32, the forward's) and dO;
/// outputs dq, dk, dv, which the kernel overwrites. None may be null.
///
/// `workspace` (GPU bundles only; ignored on the host): device memory of at
/// least Kernel::backwardWorkspaceBytes(p) bytes, 256-byte aligned, that the
/// kernels use as scratch (dsum, dqacc), or null. With null, the kernel
/// object uses a workspace of its own: allocated on first use, grown when a
/// problem needs more, freed with the kernel. That cached workspace serves
/// one launch sequence at a time: before growing it, and before using it on
/// another stream than the last call's, the runtime waits for the whole
/// device (cuCtxSynchronize / hipDeviceSynchronize); calls are serialised by
/// a mutex. Callers that run on several streams, or that must not wait
/// (PyTorch), pass their own workspace.
struct BackwardArgs {
  const void *q = nullptr;
  const void *k = nullptr;
  const void *v = nullptr;
  const void *o = nullptr;
  const float *lse = nullptr;
  const void *dO = nullptr;
  void *dq = nullptr;
  void *dk = nullptr;
  void *dv = nullptr;
  /// A bundle built with learned sink logits (sinks=1): the forward's sinks
  /// (float32 [Hq]) in, their gradient dsinks (float32 [Hq]) out; null
  /// otherwise.
  const float *sinks = nullptr;
  float *dsinks = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

/// The shape of a merge (kind=merge bundles): o1, o2, o [B,H,S,Dv] and
/// lse1, lse2, lse [B,H,S].
struct MergeProblem {
  int64_t b = 0, h = 0, s = 0, dv = 0;

  int64_t oElements() const { return b * h * s * dv; }
  int64_t lseElements() const { return b * h * s; }

  /// Every size positive and no element count that overflows int64.
  Status validate() const;
};

/// Merge arguments (host merge ABI above); none may be null. o may equal o1
/// or o2, lse may equal lse1 or lse2.
struct MergeArgs {
  const void *o1 = nullptr;
  const float *lse1 = nullptr;
  const void *o2 = nullptr;
  const float *lse2 = nullptr;
  void *o = nullptr;
  float *lse = nullptr;
};

/// Accumulate arguments (kind=acc bundles; host accumulate ABI above): acc
/// += x over n elements; neither may be null. x may equal acc.
struct AccumulateArgs {
  const void *x = nullptr;
  float *acc = nullptr;
};

/// Number of (i, j) pairs with key j visible to query i under `mask`, for one
/// (batch, head). Computed row by row in O(sq).
int64_t countVisiblePairs(const MaskSpec &mask, int64_t sq, int64_t sk);

/// Forward FLOPs counting only visible pairs: 2 * (d + dv) * visible * b * hq.
double forwardFlops(const Problem &p, const MaskSpec &mask);

/// The same for a variable-length batch or a paged cache: the visible pairs
/// of each of the p.b sequences, sequence n with the rows of offsets cuQ
/// (int32 [p.b + 1]) or p.sq, the keys of offsets cuK, or seqlensK[n]
/// (int32 [p.b], paged) or p.sk; each null when not given (host memory).
double forwardFlops(const Problem &p, const MaskSpec &mask, const int32_t *cuQ,
                    const int32_t *cuK, const int32_t *seqlensK = nullptr);

/// Backward FLOPs: 2.5 * forwardFlops (the usual convention: the backward
/// does five matmuls to the forward's two).
double backwardFlops(const Problem &p, const MaskSpec &mask);

//===----------------------------------------------------------------------===//
// Backends
//===----------------------------------------------------------------------===//

/// Times work queued on a stream, as the device sees it (CUDA or HIP events
/// on a GPU; the wall clock, after synchronising, on the host).
class StreamTimer {
public:
  virtual ~StreamTimer();
  /// Marks the start of the timed work on `stream`.
  virtual Status start(void *stream) = 0;
  /// Marks its end on `stream`.
  virtual Status stop(void *stream) = 0;
  /// Milliseconds from start to stop; waits for the stop mark.
  virtual Expected<double> elapsedMs() = 0;
};

/// A kernel loaded by a backend: the functions of its manifest's kernels,
/// in order. Launched only through Kernel::launch, which has bound and
/// checked the arguments and evaluated the plan.
class LoadedKernel {
public:
  virtual ~LoadedKernel();
  /// Whether `launch` fits the device (grid and block limits, shared
  /// memory): InvalidArgument naming the kernel, the dimension and the
  /// limit otherwise. The host has no limits.
  virtual Status checkLaunch(const PlannedLaunch &launch) const;
  /// Zeroes the plan's ranges and launches its kernels in order on
  /// `stream` (the host runs them at once).
  virtual Status launch(const LaunchPlan &plan, void *stream) = 0;
};

/// One execution target: loads binaries, owns memory, synchronises. The host
/// backend's memory is ordinary host memory and its stream is ignored; a GPU
/// backend allocates device memory and takes its API's stream handle.
class Backend {
public:
  virtual ~Backend();
  virtual Target target() const = 0;
  /// A short description for messages ("host", "cuda: NVIDIA H200", ...).
  virtual std::string description() const = 0;
  /// Loads a validated bundle's binary. `name` is the bundle's name for
  /// messages.
  virtual Expected<std::unique_ptr<LoadedKernel>>
  load(const BundleMeta &meta, std::string_view binary,
       const std::string &name) = 0;
  virtual Expected<void *> allocate(size_t bytes) = 0;
  virtual void deallocate(void *ptr) = 0;
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  /// Sets `bytes` bytes at `dst` (the backend's memory) to `value`, queued on
  /// `stream` (0xFF makes every f16, bf16 and f32 element a NaN).
  virtual Status fill(void *dst, unsigned char value, size_t bytes,
                      void *stream) = 0;
  /// Waits until all work queued on `stream` has finished.
  virtual Status synchronize(void *stream) = 0;
  /// A timer for work on this backend's streams. The default measures the
  /// wall clock between synchronize() calls; GPU backends use events.
  virtual Expected<std::unique_ptr<StreamTimer>> createTimer();
  /// The device ordinal the backend runs on (CUDA or HIP device number), or
  /// -1 for the host.
  virtual int deviceOrdinal() const { return -1; }
  /// The manifests' num_sms: multiprocessors (CUDA), compute units (HIP),
  /// hardware threads (host).
  virtual int64_t multiprocessors() const;
};

/// The most threads the host backend runs a cpu kernel on.
constexpr int kMaxHostThreads = 1024;
/// The threads the host backend runs a cpu kernel's parallel loops on:
/// setHostThreads' value, else $FMHA_NUM_THREADS (1 to kMaxHostThreads),
/// else the machine's hardware threads.
int hostThreads();
/// Sets it for the process; 0 returns to the default. Fails outside
/// [0, kMaxHostThreads].
Status setHostThreads(int threads);

/// The backend for `target`, created on first use and kept for the life of
/// the process. Fails with BackendUnavailable when it cannot be loaded.
Expected<Backend *> getBackend(Target target);

/// A buffer allocated on a backend, freed on destruction.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend *backend, void *ptr, size_t size)
      : backend_(backend), ptr_(ptr), size_(size) {}
  DeviceBuffer(DeviceBuffer &&o) noexcept { *this = std::move(o); }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { reset(); }

  static Expected<DeviceBuffer> allocate(Backend &backend, size_t bytes);
  void *get() const { return ptr_; }
  size_t size() const { return size_; }
  void reset();

private:
  Backend *backend_ = nullptr;
  void *ptr_ = nullptr;
  size_t size_ = 0;
};

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

class Kernel {
public:
  /// Reads, validates and loads a bundle file.
  static Expected<std::unique_ptr<Kernel>> loadFile(const std::string &path);
  /// The same from bytes in memory; `name` is used in messages.
  static Expected<std::unique_ptr<Kernel>>
  loadBytes(std::string_view bytes, const std::string &name = "<memory>");

  const BundleMeta &meta() const { return meta_; }
  const std::string &name() const { return name_; }
  Backend &backend() const { return *backend_; }

  /// Whether `p` is a valid problem (section 1) that this kernel computes:
  /// hq, hk, d and dv must equal the bundle's. Messages read
  /// "problem Hq=8 does not match bundle Hq=16".
  Status checkProblem(const Problem &p) const;

  /// The generic launch (Launch.h): binds `args` to the bundle's manifest
  /// (every size and non-optional operand named, nothing it does not take),
  /// evaluates the plan, checks every launch against the device's limits
  /// and only then zeroes the workspaces marked so and launches the kernels
  /// in order on `stream` (the host backend runs them at once). Pointers
  /// are the backend's memory. `workspace`, when not null, is device memory
  /// of at least workspaceBytes(args) bytes, 256-byte aligned, that no other
  /// work uses until the launches are done; with null the kernel object
  /// keeps one (allocated on first use, grown when needed; before growing
  /// it, and before using it on another stream than the last call's, the
  /// runtime waits for the whole device; calls are serialised by a mutex).
  /// Optional operands left out get scratch memory, and the call then waits
  /// for the launches before freeing it. Otherwise the launch is
  /// asynchronous on GPU backends.
  Status launch(const LaunchArgs &args, void *stream = nullptr,
                void *workspace = nullptr, size_t workspaceBytes = 0) const;

  /// The same over host memory on every backend: a GPU backend allocates
  /// a device buffer per given operand (its span), copies in those of role
  /// in and inout, launches on `stream`, waits and copies back those of
  /// role out and inout. Returns when done.
  Status launchHost(const LaunchArgs &hostArgs, void *stream = nullptr) const;

  /// The workspace a launch with `args` needs (operands may be left out).
  Expected<size_t> workspaceBytes(const LaunchArgs &args) const;

  /// The launches `args` would make (operands may be left out: their
  /// addresses are then 0), each checked against the device's limits;
  /// nothing runs.
  Expected<LaunchPlan> plan(const LaunchArgs &args) const;

  /// The named sizes of a problem for this bundle's kind (b, sq, sk; b, s
  /// for a merge; n for an accumulate is not a Problem).
  static LaunchArgs sizesOf(const Problem &p);

  /// The device workspace a backward run of `p` needs (workspaceBytes of
  /// its sizes; 0 for a cpu bundle). Fails like runBackward on a bundle of
  /// another kind or a problem that does not match.
  Expected<size_t> backwardWorkspaceBytes(const Problem &p) const;

  /// Checks the problem and the pointers, then launches the forward kernel
  /// on `stream` (ignored by the host backend, which runs synchronously).
  /// The pointers are the backend's memory (device addresses for a GPU
  /// backend). The launch is asynchronous on GPU backends unless
  /// `args.lse` is null (the scratch lse buffer is freed after a
  /// synchronize).
  Status run(const Problem &p, const ForwardArgs &args,
             void *stream = nullptr) const;

  /// The same over host memory on every backend: a GPU backend allocates
  /// device buffers, copies q, k, v in, launches on `stream`, waits and
  /// copies o (and lse, when not null) back. Returns when done.
  Status runHost(const Problem &p, const ForwardArgs &hostArgs,
                 void *stream = nullptr) const;

  /// Checks the problem and the pointers (none may be null), then launches
  /// the backward kernel of a kind=bwd bundle on `stream` over the
  /// backend's memory (ignored by the host backend, which runs
  /// synchronously). A workspace given in `args` must hold
  /// backwardWorkspaceBytes(p) and be 256-byte aligned (InvalidArgument,
  /// nothing launched, otherwise). run() and runHost() fail with
  /// ProblemMismatch on a kind=bwd bundle, runBackward() and runBackwardHost()
  /// on a kind=fwd one.
  Status runBackward(const Problem &p, const BackwardArgs &args,
                     void *stream = nullptr) const;

  /// The same over host memory on every backend: a GPU backend allocates
  /// device buffers, copies q, k, v, o, lse, dO in, launches on `stream`,
  /// waits and copies dq, dk, dv back. Returns when done.
  Status runBackwardHost(const Problem &p, const BackwardArgs &hostArgs,
                         void *stream = nullptr) const;

  /// Whether `p` is a valid merge shape this kind=merge kernel computes
  /// (h equal to the bundle's hq, dv to its dv).
  Status checkMergeProblem(const MergeProblem &p) const;

  /// Checks the kind (merge), the shape and the pointers (none null), then
  /// runs the merge kernel over the backend's memory (the host backend runs
  /// synchronously; GPU backends queue it on `stream`). run(), runHost(),
  /// runBackward() and runBackwardHost() fail with ProblemMismatch on a
  /// kind=merge bundle, runMerge() on the other kinds.
  Status runMerge(const MergeProblem &p, const MergeArgs &args,
                  void *stream = nullptr) const;

  /// Checks the kind (acc), n (>= 0; 0 does nothing) and the pointers
  /// (none null), then runs acc += x over n elements of the backend's
  /// memory (the host backend runs synchronously; GPU backends queue it on
  /// `stream`). Every other run fails with ProblemMismatch on a kind=acc
  /// bundle, runAccumulate() on the other kinds.
  Status runAccumulate(int64_t n, const AccumulateArgs &args,
                       void *stream = nullptr) const;

  ~Kernel();

private:
  Kernel() = default;
  /// bindLaunch of `args` to the manifest, its failure as a Status naming
  /// the bundle (and "nothing was launched" when `launching`, which also
  /// requires every operand that is not optional).
  Status bind(const LaunchArgs &args, bool launching,
              LaunchBinding *binding) const;
  /// launch() on `args` with scratch for every optional operand left out.
  Status launchBound(const LaunchArgs &args, const LaunchBinding &binding,
                     void *stream, void *workspace) const;
  /// ProblemMismatch unless the bundle's kind is `kind`.
  Status checkKind(KernelKind kind) const;
  /// checkKind(kind), then checkProblem(p).
  Status checkRun(KernelKind kind, const Problem &p) const;
  BundleMeta meta_;
  std::string name_;
  Backend *backend_ = nullptr;
  std::unique_ptr<LoadedKernel> loaded_;
  /// The workspace launch() keeps when the caller gives none.
  mutable std::mutex workspaceMutex_;
  mutable void *workspace_ = nullptr;
  mutable size_t workspaceCapacity_ = 0;
  mutable void *workspaceStream_ = nullptr;
};

} // namespace fmha::rt

#endif // FMHA_RUNTIME_RUNTIME_H
