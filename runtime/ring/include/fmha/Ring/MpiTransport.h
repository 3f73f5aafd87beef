//===- MpiTransport.h - The ring over MPI (CPU ranks) ----------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Transport over MPI_COMM_WORLD, one process per rank (`mpirun -np N`):
// shifts are MPI_Isend / MPI_Irecv pairs completed by MPI_Waitall, so a shift
// proceeds while the caller computes (as far as the MPI library progresses
// it). MPI errors are returned (MPI_ERRORS_RETURN), never fatal. Library
// FMHARingMpi, built only where CMake finds MPI.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RING_MPITRANSPORT_H
#define FMHA_RING_MPITRANSPORT_H

#include "fmha/Ring/Transport.h"

#include <memory>

namespace fmha::ring {

/// Initializes MPI (MPI_Init) and returns the transport over
/// MPI_COMM_WORLD; MPI_Finalize runs when it is destroyed.
rt::Expected<std::unique_ptr<Transport>> createMpiTransport(int *argc,
                                                            char ***argv);

/// Ends every rank at once (MPI_Abort) with `code`: for a rank that fails
/// while others may wait for it.
[[noreturn]] void mpiAbort(int code);

} // namespace fmha::ring

#endif // FMHA_RING_MPITRANSPORT_H
