/*===- fmha_runtime.h - FMHA runtime C API -------------------------*- C
-*-===*\
|*                                                                            *|
|* Part of the FMHA project.                                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/*
 * A C interface to the FMHA runtime (Runtime.h), for callers that are not
 * C++ (Python ctypes, other languages' FFIs).
 *
 * Conventions:
 *  - Every function that can fail returns an int status: FMHA_SUCCESS (0) or
 *    one of the FMHA_ERROR_* codes below. On failure, fmhaGetLastError()
 *    returns a one-line message describing it.
 *  - Handles are opaque; fmhaKernelDestroy releases one (NULL is allowed).
 *  - Pointers to strings returned by a query stay valid while the handle
 *    lives.
 *  - No function aborts the process or lets a C++ exception escape.
 *
 * Typical use:
 *
 *   fmhaKernel kernel;
 *   if (fmhaKernelLoadFile("attn.fmha", &kernel) != FMHA_SUCCESS) {
 *     fprintf(stderr, "%s\n", fmhaGetLastError());
 *     return 1;
 *   }
 *   fmhaProblem p = {.b = 2, .hq = 16, .hk = 4, .sq = 1024, .sk = 1024,
 *                    .d = 128, .dv = 128};
 *   if (fmhaKernelRunForward(kernel, &p, q, k, v, o, lse, NULL) != 0)
 *     fprintf(stderr, "%s\n", fmhaGetLastError());
 *   fmhaKernelDestroy(kernel);
 */

#ifndef FMHA_RUNTIME_FMHA_RUNTIME_H
#define FMHA_RUNTIME_FMHA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes (the values of fmha::rt::ErrorCode). */
#define FMHA_SUCCESS 0
#define FMHA_ERROR_INVALID_ARGUMENT 1
#define FMHA_ERROR_BAD_BUNDLE 2
#define FMHA_ERROR_PROBLEM_MISMATCH 3
#define FMHA_ERROR_BACKEND_UNAVAILABLE 4
#define FMHA_ERROR_LOAD_FAILED 5
#define FMHA_ERROR_LAUNCH_FAILED 6
#define FMHA_ERROR_OUT_OF_MEMORY 7
#define FMHA_ERROR_IO 8

/* Targets, kinds and element types (the values of the fmha::rt enums). */
#define FMHA_TARGET_CPU 0
#define FMHA_TARGET_CUDA 1
#define FMHA_TARGET_HIP 2
#define FMHA_KIND_FWD 0
#define FMHA_KIND_BWD 1
#define FMHA_DTYPE_F32 0
#define FMHA_DTYPE_F16 1
#define FMHA_DTYPE_BF16 2

/* A loaded kernel. */
typedef struct fmhaKernel_st *fmhaKernel;

/* One attention problem, layout BHSD (DESIGN.md section 1). */
typedef struct fmhaProblem {
  int64_t b, hq, hk, sq, sk, d, dv;
} fmhaProblem;

/* What a bundle was compiled for. */
typedef struct fmhaKernelInfo {
  int target; /* FMHA_TARGET_* */
  int kind;   /* FMHA_KIND_* */
  int dtype;  /* FMHA_DTYPE_*: element type of q, k, v, o */
  int64_t hq, hk, d, dv;
  int64_t block_m, block_n;
  float scale; /* as stored: 0 means 1/sqrt(d) */
  float effective_scale;
  float softcap;      /* 0 means none */
  const char *mask;   /* canonical mask spec, e.g. "t" or "b:64,0,4" */
  const char *kernel; /* kernel symbol name */
  const char *chip;   /* may be "" for cpu */
} fmhaKernelInfo;

/* The message of the last failed call on this thread ("" if none). */
const char *fmhaGetLastError(void);

/* A short name for a status code ("FMHA_ERROR_BAD_BUNDLE"). */
const char *fmhaStatusString(int status);

/* The runtime version, e.g. "0.1.0". */
const char *fmhaGetVersion(void);

/* Loads a bundle file for the backend its target names. On success stores
 * the handle in *kernel. */
int fmhaKernelLoadFile(const char *path, fmhaKernel *kernel);

/* The same from `size` bundle bytes in memory (copied; the caller keeps
 * ownership of `data`). */
int fmhaKernelLoadBytes(const void *data, size_t size, fmhaKernel *kernel);

/* Fills *info with the bundle's metadata. */
int fmhaKernelGetInfo(fmhaKernel kernel, fmhaKernelInfo *info);

/* Checks `problem` against section 1 and the bundle (hq, hk, d, dv) without
 * running anything. */
int fmhaKernelCheckProblem(fmhaKernel kernel, const fmhaProblem *problem);

/* Runs the forward kernel. q, k, v, o point to contiguous BHSD buffers of
 * the bundle's dtype (f16/bf16 as raw 16-bit values), lse to
 * b * hq * sq floats or NULL (then it is not returned). For a cpu bundle the
 * pointers are host memory and the call returns when the kernel is done;
 * `stream` is the backend's stream handle (ignored on cpu, may be NULL). */
int fmhaKernelRunForward(fmhaKernel kernel, const fmhaProblem *problem,
                         const void *q, const void *k, const void *v, void *o,
                         float *lse, void *stream);

/* Releases the kernel (unloads its binary). NULL is a no-op. */
void fmhaKernelDestroy(fmhaKernel kernel);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FMHA_RUNTIME_FMHA_RUNTIME_H */
