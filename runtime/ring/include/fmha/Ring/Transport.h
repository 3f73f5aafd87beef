//===- Transport.h - Ring communication between ranks ----------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// What the ring driver (RingAttention.h) needs from a communication library:
// the rank, the ring size, a non-blocking shift of buffers one step around the
// ring (send to rank + 1, receive from rank - 1) that the driver overlaps with
// the kernels of the current step, an all-gather for checking, and an
// agreement on failure so that no rank waits for one that gave up.
//
// Buffers are the memory of the kernels' backend: host memory for the MPI
// transport (MpiTransport.h) and cpu bundles. A GPU transport (NCCL over
// device memory, streams for the overlap) implements the same interface.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RING_TRANSPORT_H
#define FMHA_RING_TRANSPORT_H

#include "fmha/Runtime/Runtime.h"

#include <cstddef>

namespace fmha::ring {

class Transport {
public:
  virtual ~Transport();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// A short description for messages ("mpi: 4 ranks").
  virtual std::string description() const = 0;

  /// Starts sending `bytes` bytes at `send` to rank + 1 and receiving as
  /// many into `recv` from rank - 1 (mod size). Several shifts may be in
  /// flight; `send` must stay unchanged and `recv` unread until
  /// waitShifts(). `send` and `recv` must not overlap.
  virtual rt::Status startShift(const void *send, void *recv, size_t bytes) = 0;
  /// Waits for every shift started since the last wait.
  virtual rt::Status waitShifts() = 0;

  /// Every rank's `bytes` bytes at `send`, in rank order, into `recv`
  /// (size() * bytes bytes) on every rank.
  virtual rt::Status allGather(const void *send, void *recv, size_t bytes) = 0;

  /// Whether `ok` holds on every rank (a collective: every rank calls it).
  virtual rt::Expected<bool> allOk(bool ok) = 0;
};

} // namespace fmha::ring

#endif // FMHA_RING_TRANSPORT_H
