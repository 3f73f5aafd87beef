//===- NcclTransport.cpp - The ring's CUDA device and NCCL transport ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"
#include "fmha/Ring/DeviceRing.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

namespace fmha::ring {

using rt::ErrorCode;
using rt::Status;

namespace {

/// dlopen's the file named by $envVar, else the first of `names` that
/// loads; "WHAT not found: dlopen NAME failed: REASON" otherwise.
Status openLibrary(const char *what, const char *envVar,
                   const std::vector<std::string> &names, void **handle,
                   std::string *opened) {
  const char *env = std::getenv(envVar);
  std::vector<std::string> candidates = names;
  if (env && *env)
    candidates = {env};
  std::string first;
  for (const std::string &name : candidates) {
    dlerror();
    *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (*handle) {
      *opened = name;
      return Status::success();
    }
    const char *why = dlerror();
    if (first.empty())
      first = "dlopen " + name + " failed: " + (why ? why : "unknown error");
  }
  return Status::error(
      ErrorCode::BackendUnavailable,
      std::string(what) + " not found: " + first +
          (env && *env ? std::string(" (") + envVar + ")" : std::string()));
}

/// Looks up `name` into `slot`; "WHAT 'LIB' lacks NAME: REASON" otherwise.
Status lookup(void *handle, const char *what, const std::string &library,
              const char *name, void *slot) {
  dlerror();
  void *sym = dlsym(handle, name);
  if (!sym) {
    const char *why = dlerror();
    return Status::error(ErrorCode::BackendUnavailable,
                         std::string(what) + " '" + library + "' lacks " +
                             name + ": " + (why ? why : "not found"));
  }
  std::memcpy(slot, &sym, sizeof(sym));
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// The CUDA driver
//===----------------------------------------------------------------------===//

namespace detail {

rt::Expected<const CudaDriver *> cudaDriver() {
  static std::mutex mutex;
  static CudaDriver driver;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return static_cast<const CudaDriver *>(&driver);
  void *handle = nullptr;
  std::string library;
  Status s = openLibrary("CUDA driver", "FMHA_CUDA_LIBRARY", {"libcuda.so.1"},
                         &handle, &library);
  if (!s.ok())
    return s;
  CudaDriver d{};
#define FMHA_CUDA_SYMBOL(name)                                                 \
  if (!(s = lookup(handle, "CUDA driver", library, #name, &d.name)).ok())      \
    return s;
  FMHA_CUDA_SYMBOL(cuInit)
  FMHA_CUDA_SYMBOL(cuDeviceGet)
  FMHA_CUDA_SYMBOL(cuDevicePrimaryCtxRetain)
  FMHA_CUDA_SYMBOL(cuCtxSetCurrent)
  FMHA_CUDA_SYMBOL(cuStreamCreate)
  FMHA_CUDA_SYMBOL(cuStreamCreateWithPriority)
  FMHA_CUDA_SYMBOL(cuCtxGetStreamPriorityRange)
  FMHA_CUDA_SYMBOL(cuStreamDestroy_v2)
  FMHA_CUDA_SYMBOL(cuStreamSynchronize)
  FMHA_CUDA_SYMBOL(cuStreamWaitEvent)
  FMHA_CUDA_SYMBOL(cuEventCreate)
  FMHA_CUDA_SYMBOL(cuEventDestroy_v2)
  FMHA_CUDA_SYMBOL(cuEventRecord)
  FMHA_CUDA_SYMBOL(cuEventSynchronize)
  FMHA_CUDA_SYMBOL(cuEventElapsedTime)
  FMHA_CUDA_SYMBOL(cuMemsetD32Async)
  FMHA_CUDA_SYMBOL(cuMemsetD8Async)
  FMHA_CUDA_SYMBOL(cuGetErrorName)
#undef FMHA_CUDA_SYMBOL
  driver = d;
  loaded = true;
  return static_cast<const CudaDriver *>(&driver);
}

Status cudaCheck(const CudaDriver &d, const char *call, int code) {
  if (code == 0)
    return Status::success();
  const char *name = nullptr;
  if (d.cuGetErrorName(code, &name) != 0 || !name)
    name = nullptr;
  return Status::error(ErrorCode::LaunchFailed,
                       std::string(call) + " failed: " +
                           (name ? name : "CUresult " + std::to_string(code)));
}

} // namespace detail

using detail::cudaCheck;
using detail::cudaDriver;

//===----------------------------------------------------------------------===//
// CudaRingDevice
//===----------------------------------------------------------------------===//

rt::Expected<std::unique_ptr<CudaRingDevice>>
CudaRingDevice::create(int ordinal) {
  rt::Expected<const detail::CudaDriver *> loaded = cudaDriver();
  if (!loaded.ok())
    return loaded.status();
  const detail::CudaDriver &d = **loaded;
  std::unique_ptr<CudaRingDevice> dev(new CudaRingDevice);
  dev->ordinal_ = ordinal;
  int device = 0;
  Status s;
  if (!(s = cudaCheck(d, "cuInit", d.cuInit(0))).ok() ||
      !(s = cudaCheck(d, "cuDeviceGet", d.cuDeviceGet(&device, ordinal)))
           .ok() ||
      !(s = cudaCheck(d, "cuDevicePrimaryCtxRetain",
                      d.cuDevicePrimaryCtxRetain(&dev->context_, device)))
           .ok() ||
      !(s = cudaCheck(d, "cuCtxSetCurrent", d.cuCtxSetCurrent(dev->context_)))
           .ok())
    return Status::error(s.code(), s.message() + " (device " +
                                       std::to_string(ordinal) + ")");
  // Non-blocking streams (CU_STREAM_NON_BLOCKING = 1): no implicit order
  // with the legacy default stream. The communication stream has the
  // highest priority, so that the shift's NCCL kernel gets SMs as soon as
  // blocks of the step's attention kernel retire. Events without timing
  // (CU_EVENT_DISABLE_TIMING = 2) order the streams.
  int least = 0, greatest = 0;
  if (!(s = cudaCheck(d, "cuCtxGetStreamPriorityRange",
                      d.cuCtxGetStreamPriorityRange(&least, &greatest)))
           .ok() ||
      !(s = cudaCheck(d, "cuStreamCreate", d.cuStreamCreate(&dev->compute_, 1)))
           .ok() ||
      !(s = cudaCheck(d, "cuStreamCreateWithPriority",
                      d.cuStreamCreateWithPriority(&dev->comm_, 1, greatest)))
           .ok() ||
      !(s = cudaCheck(d, "cuEventCreate",
                      d.cuEventCreate(&dev->computeDone_, 2)))
           .ok() ||
      !(s = cudaCheck(d, "cuEventCreate", d.cuEventCreate(&dev->commDone_, 2)))
           .ok())
    return s;
  return dev;
}

CudaRingDevice::~CudaRingDevice() {
  rt::Expected<const detail::CudaDriver *> loaded = cudaDriver();
  if (!loaded.ok())
    return;
  const detail::CudaDriver &d = **loaded;
  for (void *stream : {compute_, comm_})
    if (stream)
      d.cuStreamSynchronize(stream);
  for (void *e : marks_)
    d.cuEventDestroy_v2(e);
  for (void *e : {computeDone_, commDone_})
    if (e)
      d.cuEventDestroy_v2(e);
  for (void *stream : {compute_, comm_})
    if (stream)
      d.cuStreamDestroy_v2(stream);
}

static Status streamAfter(void *waiter, void *event, void *stream) {
  const detail::CudaDriver &d = **cudaDriver();
  Status s = cudaCheck(d, "cuEventRecord", d.cuEventRecord(event, stream));
  if (!s.ok())
    return s;
  return cudaCheck(d, "cuStreamWaitEvent",
                   d.cuStreamWaitEvent(waiter, event, 0));
}

Status CudaRingDevice::commAfterCompute() {
  return streamAfter(comm_, computeDone_, compute_);
}

Status CudaRingDevice::computeAfterComm() {
  return streamAfter(compute_, commDone_, comm_);
}

rt::Expected<void *> CudaRingDevice::mark(void *stream) {
  const detail::CudaDriver &d = **cudaDriver();
  void *event = nullptr;
  Status s = cudaCheck(d, "cuEventCreate", d.cuEventCreate(&event, 0));
  if (!s.ok())
    return s;
  marks_.push_back(event);
  s = cudaCheck(d, "cuEventRecord", d.cuEventRecord(event, stream));
  if (!s.ok())
    return s;
  return event;
}

rt::Expected<double> CudaRingDevice::eventMs(void *from, void *to) {
  const detail::CudaDriver &d = **cudaDriver();
  Status s = cudaCheck(d, "cuEventSynchronize", d.cuEventSynchronize(to));
  if (!s.ok())
    return s;
  float ms = 0;
  s = cudaCheck(d, "cuEventElapsedTime", d.cuEventElapsedTime(&ms, from, to));
  if (!s.ok())
    return s;
  return static_cast<double>(ms);
}

Status CudaRingDevice::fill32(void *ptr, unsigned value, size_t count) {
  const detail::CudaDriver &d = **cudaDriver();
  return cudaCheck(d, "cuMemsetD32Async",
                   d.cuMemsetD32Async(reinterpret_cast<uintptr_t>(ptr), value,
                                      count, compute_));
}

Status CudaRingDevice::synchronize() {
  const detail::CudaDriver &d = **cudaDriver();
  for (void *stream : {compute_, comm_}) {
    Status s =
        cudaCheck(d, "cuStreamSynchronize", d.cuStreamSynchronize(stream));
    if (!s.ok())
      return s;
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

namespace {

// The NCCL API subset, as nccl.h declares it (ABI stable since NCCL 2.0).
using ncclResult_t = int;
using ncclComm_t = void *;
struct ncclUniqueId {
  char internal[128];
};
constexpr int ncclInt8 = 0;

struct Nccl {
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*ncclSend)(const void *, size_t, int, int, ncclComm_t, void *);
  ncclResult_t (*ncclRecv)(void *, size_t, int, int, ncclComm_t, void *);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  const char *(*ncclGetErrorString)(ncclResult_t);
};

const char *ncclResultName(ncclResult_t r) {
  static const char *const names[] = {
      "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
      "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
      "ncclRemoteError",   "ncclInProgress"};
  return r >= 0 && r < 8 ? names[r] : nullptr;
}

rt::Expected<const Nccl *> nccl() {
  static std::mutex mutex;
  static Nccl lib;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return static_cast<const Nccl *>(&lib);
  void *handle = nullptr;
  std::string library;
  Status s = openLibrary("NCCL", "FMHA_NCCL_LIBRARY", {"libnccl.so.2"}, &handle,
                         &library);
  if (!s.ok())
    return s;
  Nccl n{};
#define FMHA_NCCL_SYMBOL(name)                                                 \
  if (!(s = lookup(handle, "NCCL", library, #name, &n.name)).ok()) {           \
    dlclose(handle);                                                           \
    return s;                                                                  \
  }
  FMHA_NCCL_SYMBOL(ncclGetUniqueId)
  FMHA_NCCL_SYMBOL(ncclCommInitRank)
  FMHA_NCCL_SYMBOL(ncclSend)
  FMHA_NCCL_SYMBOL(ncclRecv)
  FMHA_NCCL_SYMBOL(ncclGroupStart)
  FMHA_NCCL_SYMBOL(ncclGroupEnd)
  FMHA_NCCL_SYMBOL(ncclCommDestroy)
  FMHA_NCCL_SYMBOL(ncclGetErrorString)
#undef FMHA_NCCL_SYMBOL
  lib = n;
  loaded = true;
  return static_cast<const Nccl *>(&lib);
}

/// Success, or "CALL failed: ncclX (what NCCL says)".
Status ncclCheck(const Nccl &n, const char *call, ncclResult_t r) {
  if (r == 0)
    return Status::success();
  const char *name = ncclResultName(r);
  const char *text = n.ncclGetErrorString(r);
  return Status::error(ErrorCode::LaunchFailed,
                       std::string(call) + " failed: " +
                           (name ? name : "ncclResult_t " + std::to_string(r)) +
                           (text ? std::string(" (") + text + ")" : ""));
}

class NcclTransport final : public Transport {
public:
  NcclTransport(const Nccl &n, Transport &bootstrap, CudaRingDevice &device,
                ncclComm_t comm)
      : nccl_(n), bootstrap_(bootstrap), device_(device), comm_(comm) {}
  ~NcclTransport() override {
    device_.synchronize();
    nccl_.ncclCommDestroy(comm_);
  }
  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }
  std::string description() const override {
    return "nccl: " + std::to_string(size()) + " ranks, device " +
           std::to_string(device_.ordinal());
  }

  Status startShift(const void *send, void *recv, size_t bytes) override {
    Status s = device_.commAfterCompute();
    if (!s.ok())
      return s;
    int n = size(), r = rank();
    void *stream = device_.commStream();
    if (!(s = ncclCheck(nccl_, "ncclGroupStart", nccl_.ncclGroupStart())).ok())
      return s;
    Status sent = ncclCheck(
        nccl_, "ncclSend",
        nccl_.ncclSend(send, bytes, ncclInt8, (r + 1) % n, comm_, stream));
    Status received = ncclCheck(
        nccl_, "ncclRecv",
        nccl_.ncclRecv(recv, bytes, ncclInt8, (r + n - 1) % n, comm_, stream));
    s = ncclCheck(nccl_, "ncclGroupEnd", nccl_.ncclGroupEnd());
    return !sent.ok() ? sent : !received.ok() ? received : s;
  }

  Status waitShifts() override { return device_.computeAfterComm(); }

  Status allGather(const void *send, void *recv, size_t bytes) override {
    return bootstrap_.allGather(send, recv, bytes);
  }
  rt::Expected<bool> allOk(bool ok) override { return bootstrap_.allOk(ok); }

private:
  const Nccl &nccl_;
  Transport &bootstrap_;
  CudaRingDevice &device_;
  ncclComm_t comm_;
};

} // namespace

Status loadNccl() {
  rt::Expected<const Nccl *> n = nccl();
  return n.ok() ? Status::success() : n.status();
}

rt::Expected<std::unique_ptr<Transport>>
createNcclTransport(Transport &bootstrap, CudaRingDevice &device) {
  // NCCL's send/recv run as kernels on SMs, beside the attention kernels
  // they overlap. The shift of a step is short next to the step's kernels,
  // so two channels suffice and leave the SMs to them (2 x H200, 128k
  // causal: ring 118.3 ms with 2 channels, 120.4-145.6 ms with NCCL's
  // default; docs/PERFORMANCE.md). The user's NCCL_MAX_NCHANNELS wins.
  ::setenv("NCCL_MAX_NCHANNELS", "2", /*overwrite=*/0);
  rt::Expected<const Nccl *> loaded = nccl();
  rt::Expected<bool> everyone = bootstrap.allOk(loaded.ok());
  if (!loaded.ok())
    return loaded.status();
  if (!everyone.ok())
    return everyone.status();
  if (!*everyone)
    return Status::error(ErrorCode::BackendUnavailable,
                         "NCCL could not be loaded on another rank");
  const Nccl &n = **loaded;
  // Rank 0's unique id reaches every rank through the bootstrap.
  struct Packet {
    int ok;
    ncclUniqueId id;
  } mine{}, *all = nullptr;
  Status got = Status::success();
  if (bootstrap.rank() == 0) {
    got = ncclCheck(n, "ncclGetUniqueId", n.ncclGetUniqueId(&mine.id));
    mine.ok = got.ok();
  }
  std::vector<Packet> packets(bootstrap.size());
  all = packets.data();
  Status s = bootstrap.allGather(&mine, all, sizeof(Packet));
  if (!s.ok())
    return s;
  if (!got.ok())
    return got;
  if (!all[0].ok)
    return Status::error(ErrorCode::LaunchFailed,
                         "ncclGetUniqueId failed on rank 0");
  ncclComm_t comm = nullptr;
  Status init = ncclCheck(
      n, "ncclCommInitRank",
      n.ncclCommInitRank(&comm, bootstrap.size(), all[0].id, bootstrap.rank()));
  rt::Expected<bool> inited = bootstrap.allOk(init.ok());
  if (!init.ok())
    return Status::error(init.code(),
                         init.message() + " (rank " +
                             std::to_string(bootstrap.rank()) + ", device " +
                             std::to_string(device.ordinal()) + ")");
  if (!inited.ok() || !*inited) {
    n.ncclCommDestroy(comm);
    return inited.ok() ? Status::error(ErrorCode::LaunchFailed,
                                       "ncclCommInitRank failed on another "
                                       "rank")
                       : inited.status();
  }
  return std::unique_ptr<Transport>(
      new NcclTransport(n, bootstrap, device, comm));
}

} // namespace fmha::ring
