//===- DeviceRing.h - Ring attention on CUDA devices over NCCL --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The ring of RingAttention.h with every buffer in device memory and every
// kernel a cuda bundle, one process (rank) per GPU:
//
// CudaRingDevice: the device's primary context (the one the runtime's CUDA
// backend and NCCL use) made current on the calling thread, a compute stream
// for the kernels and a communication stream for NCCL. The CUDA driver is
// dlopen'ed (libcuda.so.1 or $FMHA_CUDA_LIBRARY).
//
// NcclTransport: the Transport over NCCL (libnccl.so.2 or
// $FMHA_NCCL_LIBRARY, dlopen'ed; no NCCL header or library at build time).
// Shifts are ncclSend/ncclRecv pairs in one group on the communication
// stream, ordered with the compute stream by events: a shift starts after
// the work queued on the compute stream before startShift() (the kernels
// that last read its receive buffer), and waitShifts() makes the work queued
// on the compute stream afterwards wait for the shifts; neither blocks the
// host, so the next K/V block travels while the current step's kernels run.
// The NCCL unique id and allGather/allOk go through a bootstrap transport
// over host memory (MPI: fmha-ring runs under mpirun).
//
// runRingDevice: the forward of RingAttention.h (causal skip, zigzag, GQA):
// per step, the step's pair kernels and merges on the compute stream, the
// next K/V packet on the communication stream. The backward (kind=bwd cuda
// bundles, abi gpu-bwd-v1) is the same loop with the final o and lse: each
// pair's dq, dk, dv are added in f32 on the device (the accumulate bundle,
// kind=acc, abi gpu-acc-v1) into dq and into the dK/dV packet that travels
// with its K/V, shifted after the step's sums and home after the last step.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RING_DEVICERING_H
#define FMHA_RING_DEVICERING_H

#include "fmha/Ring/RingAttention.h"
#include "fmha/Ring/Transport.h"

#include <memory>
#include <vector>

namespace fmha::ring {

class CudaRingDevice {
public:
  /// Binds the calling thread to device `ordinal` (its primary context) and
  /// creates the two streams.
  static rt::Expected<std::unique_ptr<CudaRingDevice>> create(int ordinal);
  ~CudaRingDevice();
  int ordinal() const { return ordinal_; }
  void *computeStream() const { return compute_; }
  void *commStream() const { return comm_; }
  /// The communication stream waits for the work queued so far on the
  /// compute stream (and the other way round).
  rt::Status commAfterCompute();
  rt::Status computeAfterComm();
  /// Records a new timing event on `stream`; eventMs gives the time between
  /// two of them (waiting for the later one).
  rt::Expected<void *> mark(void *stream);
  rt::Expected<double> eventMs(void *from, void *to);
  /// Fills `count` 32-bit words at device address `ptr` with `value` on the
  /// compute stream.
  rt::Status fill32(void *ptr, unsigned value, size_t count);
  rt::Status synchronize();

private:
  CudaRingDevice() = default;
  int ordinal_ = 0;
  void *context_ = nullptr, *compute_ = nullptr, *comm_ = nullptr;
  void *computeDone_ = nullptr, *commDone_ = nullptr;
  std::vector<void *> marks_;
};

/// Whether NCCL can be loaded: "NCCL not found: dlopen NAME failed: ..." or
/// "NCCL 'NAME' lacks SYMBOL: ..." otherwise.
rt::Status loadNccl();

/// The NCCL transport of this rank: rank and size are the bootstrap's, the
/// device's streams carry the shifts. Collective: every rank calls it.
rt::Expected<std::unique_ptr<Transport>>
createNcclTransport(Transport &bootstrap, CudaRingDevice &device);

/// What runRingDevice runs: the ring; only its kernels (no shifts: each step
/// reuses the K/V it has, for the compute time alone); only its shifts.
enum class RingMode { Full, ComputeOnly, CommOnly };

struct DeviceRingTimes {
  /// Device time of the forward (events on the compute stream, from before
  /// the first step to after the last).
  double forwardMs = 0;
  /// Device time of the backward (config.backward; run once, after the
  /// forward iterations, from the last forward's o and lse).
  double backwardMs = 0;
  /// Per step: from the end of the previous step to the end of this one.
  std::vector<double> stepMs;
  int64_t kernelCalls = 0, skippedPairs = 0;
};

/// The ring on this rank's device: `iterations` forwards, then (with
/// config.backward) one backward. `in` is host memory (uploaded once);
/// `out` gets o, lse (and dq, dk, dv as f32) back in host memory (unless
/// `out` is null).
/// The kernels must be cuda bundles loaded on the device's ordinal.
rt::Status runRingDevice(Transport &transport, CudaRingDevice &device,
                         const RingKernels &kernels, const RingConfig &config,
                         const RingInputs &in, RingOutputs *out,
                         DeviceRingTimes *times = nullptr,
                         RingMode mode = RingMode::Full, int iterations = 1);

} // namespace fmha::ring

#endif // FMHA_RING_DEVICERING_H
