//===- CudaDriver.h - The CUDA driver calls of the device ring --*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Internal to runtime/ring: the few CUDA driver functions the device ring
// needs beyond the runtime's backend (streams, events, 32-bit fills),
// dlopen'ed from libcuda.so.1 (or $FMHA_CUDA_LIBRARY, as the runtime does).
// Nothing of CUDA is needed to build it.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RING_LIB_CUDADRIVER_H
#define FMHA_RING_LIB_CUDADRIVER_H

#include "fmha/Runtime/Runtime.h"

#include <cstddef>
#include <string>

namespace fmha::ring::detail {

struct CudaDriver {
  int (*cuInit)(unsigned);
  int (*cuDeviceGet)(int *, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuCtxSetCurrent)(void *);
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamCreateWithPriority)(void **, unsigned, int);
  int (*cuCtxGetStreamPriorityRange)(int *, int *);
  int (*cuStreamDestroy_v2)(void *);
  int (*cuStreamSynchronize)(void *);
  int (*cuStreamWaitEvent)(void *, void *, unsigned);
  int (*cuEventCreate)(void **, unsigned);
  int (*cuEventDestroy_v2)(void *);
  int (*cuEventRecord)(void *, void *);
  int (*cuEventSynchronize)(void *);
  int (*cuEventElapsedTime)(float *, void *, void *);
  int (*cuMemsetD32Async)(unsigned long long, unsigned, size_t, void *);
  int (*cuMemsetD8Async)(unsigned long long, unsigned char, size_t, void *);
  int (*cuGetErrorName)(int, const char **);
};

/// The process's driver table, loaded on first use.
rt::Expected<const CudaDriver *> cudaDriver();

/// Success, or "CALL failed: CUDA_ERROR_X".
rt::Status cudaCheck(const CudaDriver &d, const char *call, int code);

} // namespace fmha::ring::detail

#endif // FMHA_RING_LIB_CUDADRIVER_H
