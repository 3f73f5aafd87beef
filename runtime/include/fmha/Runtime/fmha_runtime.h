/* clang-format off */
/*===- fmha_runtime.h - FMHA runtime C API ------------------------*- C -*-===*\
|*                                                                            *|
|* Part of the FMHA project.                                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/* clang-format on */
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
 *  - Memory: a cpu bundle runs on host memory; a cuda or hip bundle on
 *    device memory of the device its backend binds to (Runtime.h;
 *    CudaBackend.cpp: $FMHA_CUDA_DEVICE, else the device of the context
 *    current at first use, else 0; HipBackend.cpp: $FMHA_HIP_DEVICE, else
 *    the calling thread's current device at first use).
 *    fmhaKernelRunForward takes host memory for every target (it copies for
 *    GPU targets); fmhaKernelRunForwardDevice takes the backend's memory,
 *    with no copies.
 *  - GPU libraries are dlopen'ed on first use of a bundle or target: the
 *    CUDA driver libcuda.so.1 (or $FMHA_CUDA_LIBRARY), the HIP runtime
 *    libamdhip64.so, .so.5, .so.6 or .so.7 (or $FMHA_HIP_LIBRARY).
 *  - Built as a static library (FMHARuntime) and as a shared library
 *    (libfmha_runtime.so) that exports exactly these functions.
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

/* Marks the exported functions of libfmha_runtime.so. */
#if defined(__GNUC__) || defined(__clang__)
#define FMHA_API __attribute__((visibility("default")))
#else
#define FMHA_API
#endif

/* The version of this interface. It changes whenever a declaration here
 * changes incompatibly (a struct's layout, a function's parameters); a
 * caller built against another version (Python's ctypes bindings check at
 * load) must not use the library: compare fmhaGetApiVersion() with the
 * FMHA_API_VERSION it was built with. */
#define FMHA_API_VERSION 2

/* The bundle format version the runtime writes and reads; it also reads
 * version 1 (Bundle.h) and refuses others with a message naming them. */
#define FMHA_BUNDLE_VERSION 2

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
#define FMHA_KIND_MERGE 2
#define FMHA_KIND_ACC 3
#define FMHA_DTYPE_F32 0
#define FMHA_DTYPE_F16 1
#define FMHA_DTYPE_BF16 2

/* A loaded kernel. */
typedef struct fmhaKernel_st *fmhaKernel;

/* One attention problem, layout BHSD (DESIGN.md section 1). */
typedef struct fmhaProblem {
  int64_t b, hq, hk, sq, sk, d, dv;
} fmhaProblem;

/* The shape of a merge (kind=merge bundles): o1, o2, o [B,H,S,Dv], lse1,
 * lse2, lse [B,H,S]. */
typedef struct fmhaMergeProblem {
  int64_t b, h, s, dv;
} fmhaMergeProblem;

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
  /* GPU launch: threads per workgroup and dynamic shared memory bytes (0 for
   * cpu); grid = (ceil(Sq / block_m), Hq, B), block = (block_threads, 1, 1).
   */
  int64_t block_threads, shared_bytes;
  const char *abi; /* "memref-ciface-v1" (cpu), "gpu-flat-v1", "gpu-bwd-v1" */
  const char *binary_format; /* "elf-so", "cubin", "ptx", "hsaco" */
  int deterministic;         /* kind=bwd: 1 for bit-identical runs, else 0 */
  int bundle_version;        /* the format version the bundle was read from */
  int num_kernels;           /* kernels in the launch manifest */
} fmhaKernelInfo;

/* The kinds of a named launch argument. */
#define FMHA_ARG_SIZE 0
#define FMHA_ARG_TENSOR 1

/* One named argument of fmhaKernelLaunch: a size of the bundle's manifest
 * (kind FMHA_ARG_SIZE, `value`; e.g. "b", "sq", "sk") or one of its operands
 * (kind FMHA_ARG_TENSOR, `data`, and `strides`: `num_strides` strides in
 * elements, one per axis, or NULL and 0 for contiguous row-major). */
typedef struct fmhaArg {
  const char *name;
  int kind;
  const void *data;
  int64_t value;
  const int64_t *strides;
  int64_t num_strides;
} fmhaArg;

/* The message of the last failed call on this thread ("" if none). */
FMHA_API const char *fmhaGetLastError(void);

/* A short name for a status code ("FMHA_ERROR_BAD_BUNDLE"). */
FMHA_API const char *fmhaStatusString(int status);

/* The runtime version, e.g. "0.1.0". */
FMHA_API const char *fmhaGetVersion(void);

/* FMHA_API_VERSION of the library. */
FMHA_API int fmhaGetApiVersion(void);

/* The threads cpu kernels run their parallel loops on, for the process:
 * 1 to 1024, or 0 for the default ($FMHA_NUM_THREADS, else every hardware
 * thread). FMHA_ERROR_INVALID_ARGUMENT outside [0, 1024]. */
FMHA_API int fmhaSetHostThreads(int threads);
/* The threads cpu kernels run on now. */
FMHA_API int fmhaGetHostThreads(void);

/* Loads a bundle file for the backend its target names. On success stores
 * the handle in *kernel. */
FMHA_API int fmhaKernelLoadFile(const char *path, fmhaKernel *kernel);

/* The same from `size` bundle bytes in memory (copied; the caller keeps
 * ownership of `data`). */
FMHA_API int fmhaKernelLoadBytes(const void *data, size_t size,
                                 fmhaKernel *kernel);

/* Fills *info with the bundle's metadata. */
FMHA_API int fmhaKernelGetInfo(fmhaKernel kernel, fmhaKernelInfo *info);

/* The bundle's launch manifest in its text form (fmha/Runtime/Manifest.h):
 * its sizes, operands (name, role, type, shape), workspaces and kernels. */
FMHA_API int fmhaKernelGetManifest(fmhaKernel kernel, const char **manifest);

/* The generic launch: binds the named arguments to the manifest (every size
 * and every operand that is not optional given once; a name the manifest
 * does not have fails, naming the ones it has), checks every launch against
 * the device's limits and only then launches the kernels in order on
 * `stream`, over the backend's memory (device pointers for cuda and hip;
 * the host runs at once). `workspace`: NULL for the kernel object's own
 * (as fmhaKernelRunBackwardDevice), or device memory of at least
 * fmhaKernelWorkspaceBytes bytes, 256-byte aligned. An optional operand left
 * out (a forward's lse) gets scratch memory and the call waits for the
 * kernels; otherwise it does not wait. The per-kind functions below are
 * this call with their arguments named. */
FMHA_API int fmhaKernelLaunch(fmhaKernel kernel, const fmhaArg *args,
                              size_t num_args, void *workspace,
                              size_t workspace_bytes, void *stream);

/* fmhaKernelLaunch over host memory: for a cuda or hip bundle the runtime
 * copies the operands of role in and inout to the device, launches, waits
 * and copies those of role out and inout back. Returns when done. */
FMHA_API int fmhaKernelLaunchHost(fmhaKernel kernel, const fmhaArg *args,
                                  size_t num_args, void *stream);

/* The workspace bytes a launch with these arguments needs (operands may be
 * left out). */
FMHA_API int fmhaKernelWorkspaceBytes(fmhaKernel kernel, const fmhaArg *args,
                                      size_t num_args, size_t *bytes);

/* Checks `problem` against section 1 and the bundle (hq, hk, d, dv) without
 * running anything. */
FMHA_API int fmhaKernelCheckProblem(fmhaKernel kernel,
                                    const fmhaProblem *problem);

/* Runs the forward kernel on host memory and returns when it is done. q, k,
 * v, o point to contiguous BHSD host buffers of the bundle's dtype (f16/bf16
 * as raw 16-bit values), lse to b * hq * sq floats or NULL (then it is not
 * returned). For a cpu bundle the kernel runs on these buffers. For a cuda
 * or hip bundle the runtime allocates device buffers, copies q, k, v in,
 * launches on `stream` (a CUstream or hipStream_t; NULL is the default
 * stream), waits, copies o and lse out and frees the buffers. `stream` is
 * ignored on cpu. */
FMHA_API int fmhaKernelRunForward(fmhaKernel kernel, const fmhaProblem *problem,
                                  const void *q, const void *k, const void *v,
                                  void *o, float *lse, void *stream);

/* Runs the forward kernel on the backend's memory, with no copies. For a
 * cuda bundle q, k, v, o and lse are device pointers (CUdeviceptr values, as
 * given by cuMemAlloc, fmhaDeviceMalloc or torch's tensor.data_ptr()) on the
 * backend's device, and `stream` a CUstream of that device's primary context
 * (NULL: the legacy default stream); for a hip bundle they are hipMalloc'ed
 * pointers of the backend's device and `stream` a hipStream_t of that device
 * (NULL: its default stream). The launch is queued on `stream` and the
 * call returns without waiting, except when lse is NULL: the runtime then
 * gives the kernel a scratch lse buffer and waits for the kernel before
 * freeing it. A grid over the device's limits (Hq or B > 65535) fails before
 * anything is launched. For a cpu bundle this is fmhaKernelRunForward. */
FMHA_API int fmhaKernelRunForwardDevice(fmhaKernel kernel,
                                        const fmhaProblem *problem,
                                        const void *q, const void *k,
                                        const void *v, void *o, float *lse,
                                        void *stream);

/* Runs the backward kernel of a kind=bwd bundle on host memory and returns
 * when it is done (Runtime.h, host backward ABI). Inputs: q, k, v, o (the
 * forward's output), dO [B,Hq,Sq,Dv], all contiguous BHSD buffers of the
 * bundle's dtype, and lse, b * hq * sq floats (the forward's, natural log,
 * -inf for a row with no visible key). Outputs: dq (shaped like q), dk (like
 * k) and dv (like v), in the bundle's dtype, overwritten in full. No pointer
 * may be NULL. Running a kind=fwd bundle here, or a kind=bwd bundle through
 * fmhaKernelRunForward*, fails with FMHA_ERROR_PROBLEM_MISMATCH. A cuda or
 * hip bundle (abi gpu-bwd-v1) runs its three kernels with a workspace the
 * kernel object keeps (see fmhaKernelRunBackwardDeviceWorkspace). */
FMHA_API int fmhaKernelRunBackward(fmhaKernel kernel,
                                   const fmhaProblem *problem, const void *q,
                                   const void *k, const void *v, const void *o,
                                   const float *lse, const void *dO, void *dq,
                                   void *dk, void *dv, void *stream);

/* The same on the backend's memory, with no copies (as
 * fmhaKernelRunForwardDevice; the host backend runs synchronously). GPU
 * bundles use the kernel object's own workspace: allocated on first use and
 * grown when needed, with a wait for the whole device before growing it or
 * before using it on another stream than the last call's (Runtime.h,
 * BackwardArgs). */
FMHA_API int
fmhaKernelRunBackwardDevice(fmhaKernel kernel, const fmhaProblem *problem,
                            const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *dO,
                            void *dq, void *dk, void *dv, void *stream);

/* Stores in *bytes the device workspace a backward run of `problem` needs:
 * for a cuda or hip bundle (abi gpu-bwd-v1) 4*B*Hq*Sq bytes of dsum, then,
 * unless the bundle is deterministic, 4*B*Hq*Sq*D bytes of dq accumulator
 * at the next 256-byte boundary; 0 for a cpu bundle. Fails as
 * fmhaKernelRunBackward does on a kind=fwd bundle or a problem that does not
 * match. */
FMHA_API int fmhaKernelBackwardWorkspaceBytes(fmhaKernel kernel,
                                              const fmhaProblem *problem,
                                              size_t *bytes);

/* fmhaKernelRunBackwardDevice with the caller's workspace: `workspace` is
 * device memory of `workspace_bytes` bytes (at least
 * fmhaKernelBackwardWorkspaceBytes), 256-byte aligned, that no other work
 * uses until the launches on `stream` are done (the kernels need no
 * initialisation of it). The call never waits. NULL: the kernel object's
 * own, as fmhaKernelRunBackwardDevice. A workspace too small or misaligned
 * fails with FMHA_ERROR_INVALID_ARGUMENT before anything is launched.
 * Ignored for cpu bundles. */
FMHA_API int fmhaKernelRunBackwardDeviceWorkspace(
    fmhaKernel kernel, const fmhaProblem *problem, const void *q, const void *k,
    const void *v, const void *o, const float *lse, const void *dO, void *dq,
    void *dk, void *dv, void *workspace, size_t workspace_bytes, void *stream);

/* Runs the merge kernel of a kind=merge bundle (target cpu; Runtime.h, host
 * merge ABI) and returns when it is done: lse = logaddexp(lse1, lse2), o =
 * o1*exp(lse1-lse) + o2*exp(lse2-lse); a partial with lse -inf weighs 0, two
 * empty partials give o = 0, lse = -inf. o1, o2, o are contiguous [B,H,S,Dv]
 * buffers of the bundle's dtype, lse1, lse2, lse b*h*s floats; o may be o1
 * or o2 and lse may be lse1 or lse2 (in place). No pointer may be NULL.
 * `stream` is ignored. Other kinds fail with FMHA_ERROR_PROBLEM_MISMATCH. */
FMHA_API int fmhaKernelRunMerge(fmhaKernel kernel,
                                const fmhaMergeProblem *problem, const void *o1,
                                const float *lse1, const void *o2,
                                const float *lse2, void *o, float *lse,
                                void *stream);

/* Runs the kernel of a kind=acc bundle: acc[i] += x[i] for i < n, in float32
 * (Runtime.h, accumulate ABIs); x holds n elements of the bundle's dtype,
 * acc n floats, both in the backend's memory (device addresses for cuda and
 * hip, where the kernel is queued on `stream`; cpu runs it at once). x may
 * be acc. n = 0 does nothing; no pointer may be NULL. Other kinds fail with
 * FMHA_ERROR_PROBLEM_MISMATCH. */
FMHA_API int fmhaKernelRunAccumulate(fmhaKernel kernel, int64_t n,
                                     const void *x, float *acc, void *stream);

/* Stores the device ordinal the kernel's backend runs on in *device (the
 * CUDA or HIP device number; -1 for cpu). */
FMHA_API int fmhaKernelGetDevice(fmhaKernel kernel, int *device);

/* Loads the backend of `target` (FMHA_TARGET_*) if needed and stores a short
 * description in *description ("host", "cuda: NVIDIA H200 (sm_90, device
 * 0)", "hip: AMD Instinct MI300X (304 CUs, wave64, device 0)"); the string
 * lives as long as the process. Fails with
 * FMHA_ERROR_BACKEND_UNAVAILABLE and the reason (no driver, no device). */
FMHA_API int fmhaBackendDescription(int target, const char **description);

/* Memory of a backend (device memory for FMHA_TARGET_CUDA and
 * FMHA_TARGET_HIP, host memory for FMHA_TARGET_CPU). fmhaDeviceMalloc stores a
 * pointer to `bytes` bytes in *ptr; fmhaDeviceFree releases one (NULL is a
 * no-op). */
FMHA_API int fmhaDeviceMalloc(int target, size_t bytes, void **ptr);
FMHA_API int fmhaDeviceFree(int target, void *ptr);

/* Synchronous copies between host memory and the backend's memory. */
FMHA_API int fmhaMemcpyHostToDevice(int target, void *dst, const void *src,
                                    size_t bytes);
FMHA_API int fmhaMemcpyDeviceToHost(int target, void *dst, const void *src,
                                    size_t bytes);

/* Waits for the work queued on `stream` (NULL: all work of the backend's
 * context or device). */
FMHA_API int fmhaDeviceSynchronize(int target, void *stream);

/* Releases the kernel (unloads its binary). NULL is a no-op. */
FMHA_API void fmhaKernelDestroy(fmhaKernel kernel);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FMHA_RUNTIME_FMHA_RUNTIME_H */
