/*===- capi_test.c - The runtime's C API, used from C ---------------------===*\
|*                                                                            *|
|* Part of the FMHA project.                                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/*
 * Compiled as C. Builds a bundle in memory around the naive test kernel
 * (argv[1]), loads it through the C API, queries it, runs it on a problem
 * with one key (so o must equal v) and checks the error paths. Prints
 * "N passed, N failed" and exits non-zero on any failure.
 */

#include "fmha/Runtime/fmha_runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++passed;                                                                \
    } else {                                                                   \
      ++failed;                                                                \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, fmhaGetLastError());                            \
    }                                                                          \
  } while (0)

static char *readFile(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  char *data;
  long n;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc((size_t)n);
  if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* A cpu bundle of kind `kind` ("fwd" or "bwd") for `kernel` in the test
 * shared object. */
static char *makeKindBundle(const char *so, size_t soSize, const char *kind,
                            const char *kernel, const char *mask,
                            size_t *size) {
  char header[1024];
  int len = snprintf(header, sizeof(header),
                     "FMHA-BUNDLE 1\ntarget=cpu\nchip=\nkind=%s\ndtype=f32\n"
                     "hq=2\nhk=1\nd=4\ndv=3\nmask=%s\nscale=0\nsoftcap=0\n"
                     "block_m=64\nblock_n=64\nkernel=%s\n"
                     "abi=memref-ciface-v1\nbinary_format=elf-so\n"
                     "binary_size=%zu\n\n",
                     kind, mask, kernel, soSize);
  char *bytes = malloc((size_t)len + soSize);
  memcpy(bytes, header, (size_t)len);
  memcpy(bytes + len, so, soSize);
  *size = (size_t)len + soSize;
  return bytes;
}

static char *makeBundle(const char *so, size_t soSize, const char *kernel,
                        const char *mask, size_t *size) {
  return makeKindBundle(so, soSize, "fwd", kernel, mask, size);
}

int main(int argc, char **argv) {
  size_t soSize = 0, size = 0;
  char *so, *bytes;
  fmhaKernel kernel = NULL;
  fmhaKernelInfo info;
  fmhaProblem p = {1, 2, 1, 3, 1, 4, 3};
  float q[2 * 3 * 4], k[4] = {1, 2, 3, 4}, v[3] = {5, -6, 7}, o[2 * 3 * 3],
                      lse[2 * 3];
  int i, status;

  if (argc != 2) {
    fprintf(stderr, "usage: capi_test TEST_KERNEL_SO\n");
    return 2;
  }
  so = readFile(argv[1], &soSize);
  if (!so) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }

  CHECK(strcmp(fmhaGetVersion(), "") != 0);
  /* The host threads: a count in [1, 1024] holds, 0 is the default, anything
   * else is refused with a message naming the range. */
  CHECK(fmhaSetHostThreads(3) == FMHA_SUCCESS);
  CHECK(fmhaGetHostThreads() == 3);
  CHECK(fmhaSetHostThreads(-1) == FMHA_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(fmhaGetLastError(), "is not in [0, 1024]") != NULL);
  CHECK(fmhaSetHostThreads(1025) == FMHA_ERROR_INVALID_ARGUMENT);
  CHECK(fmhaGetHostThreads() == 3);
  CHECK(fmhaSetHostThreads(0) == FMHA_SUCCESS);
  CHECK(fmhaGetHostThreads() >= 1);
  CHECK(strcmp(fmhaStatusString(FMHA_ERROR_BAD_BUNDLE),
               "FMHA_ERROR_BAD_BUNDLE") == 0);

  /* Load and query. */
  bytes = makeBundle(so, soSize, "naive_f32", "0", &size);
  CHECK(fmhaKernelLoadBytes(bytes, size, &kernel) == FMHA_SUCCESS);
  CHECK(kernel != NULL);
  CHECK(fmhaKernelGetInfo(kernel, &info) == FMHA_SUCCESS);
  CHECK(info.target == FMHA_TARGET_CPU);
  CHECK(info.kind == FMHA_KIND_FWD);
  CHECK(info.dtype == FMHA_DTYPE_F32);
  CHECK(info.hq == 2 && info.hk == 1 && info.d == 4 && info.dv == 3);
  CHECK(info.block_m == 64 && info.block_n == 64);
  CHECK(info.scale == 0.0f && info.effective_scale == 0.5f);
  CHECK(strcmp(info.mask, "0") == 0);
  CHECK(strcmp(info.kernel, "naive_f32") == 0);
  CHECK(strcmp(info.chip, "") == 0);

  /* Run: one key, so every row of o is v and lse is the score. */
  for (i = 0; i < 24; ++i)
    q[i] = (float)i * 0.25f;
  for (i = 0; i < 18; ++i)
    o[i] = NAN;
  CHECK(fmhaKernelCheckProblem(kernel, &p) == FMHA_SUCCESS);
  CHECK(fmhaKernelRunForward(kernel, &p, q, k, v, o, lse, NULL) ==
        FMHA_SUCCESS);
  for (i = 0; i < 6; ++i) {
    float dot =
        q[4 * i] * 1 + q[4 * i + 1] * 2 + q[4 * i + 2] * 3 + q[4 * i + 3] * 4;
    CHECK(o[3 * i] == 5 && o[3 * i + 1] == -6 && o[3 * i + 2] == 7);
    CHECK(fabsf(lse[i] - 0.5f * dot) < 1e-5f);
  }
  /* lse may be NULL. */
  CHECK(fmhaKernelRunForward(kernel, &p, q, k, v, o, NULL, NULL) ==
        FMHA_SUCCESS);

  /* Errors: mismatch, null pointers, bad problem. */
  p.hq = 4;
  status = fmhaKernelRunForward(kernel, &p, q, k, v, o, lse, NULL);
  CHECK(status == FMHA_ERROR_PROBLEM_MISMATCH);
  CHECK(strcmp(fmhaGetLastError(), "problem Hq=4 does not match bundle Hq=2") ==
        0);
  p.hq = 2;
  p.sq = 0;
  CHECK(fmhaKernelCheckProblem(kernel, &p) == FMHA_ERROR_INVALID_ARGUMENT);
  CHECK(strcmp(fmhaGetLastError(), "problem Sq must be positive, got 0") == 0);
  p.sq = 3;
  CHECK(fmhaKernelRunForward(kernel, &p, q, NULL, v, o, lse, NULL) ==
        FMHA_ERROR_INVALID_ARGUMENT);
  CHECK(strcmp(fmhaGetLastError(), "null pointer for k") == 0);
  CHECK(fmhaKernelRunForward(NULL, &p, q, k, v, o, lse, NULL) ==
        FMHA_ERROR_INVALID_ARGUMENT);
  CHECK(fmhaKernelGetInfo(kernel, NULL) == FMHA_ERROR_INVALID_ARGUMENT);

  /* Backward: a forward bundle refuses it; the plumbing fake (it writes
   * dq = 1, dk = 2, dv = 3 and computes no gradient) runs through it. */
  {
    float o2[18], lse2[6], dO[18], dq[24], dk[4], dv[3];
    fmhaKernel bwd = NULL;
    char *bwdBytes;
    size_t bwdSize = 0;
    for (i = 0; i < 18; ++i)
      o2[i] = dO[i] = 0.5f;
    for (i = 0; i < 6; ++i)
      lse2[i] = 1.0f;
    for (i = 0; i < 24; ++i)
      dq[i] = NAN;
    CHECK(fmhaKernelRunBackward(kernel, &p, q, k, v, o2, lse2, dO, dq, dk, dv,
                                NULL) == FMHA_ERROR_PROBLEM_MISMATCH);
    CHECK(strstr(fmhaGetLastError(), "is a forward kernel (kind=fwd)") != NULL);
    bwdBytes = makeKindBundle(so, soSize, "bwd", "plumbing_bwd_const_f32", "0",
                              &bwdSize);
    CHECK(fmhaKernelLoadBytes(bwdBytes, bwdSize, &bwd) == FMHA_SUCCESS);
    CHECK(fmhaKernelGetInfo(bwd, &info) == FMHA_SUCCESS);
    CHECK(info.kind == FMHA_KIND_BWD);
    CHECK(fmhaKernelRunBackward(bwd, &p, q, k, v, o2, lse2, dO, dq, dk, dv,
                                NULL) == FMHA_SUCCESS);
    CHECK(dq[0] == 1 && dq[23] == 1 && dk[0] == 2 && dk[3] == 2 && dv[0] == 3 &&
          dv[2] == 3);
    CHECK(fmhaKernelRunBackwardDevice(bwd, &p, q, k, v, o2, lse2, dO, NULL, dk,
                                      dv, NULL) == FMHA_ERROR_INVALID_ARGUMENT);
    CHECK(strcmp(fmhaGetLastError(), "null pointer for dq") == 0);
    CHECK(fmhaKernelRunForward(bwd, &p, q, k, v, o, lse, NULL) ==
          FMHA_ERROR_PROBLEM_MISMATCH);
    CHECK(strstr(fmhaGetLastError(), "is a backward kernel (kind=bwd)") !=
          NULL);
    fmhaKernelDestroy(bwd);
    free(bwdBytes);
  }
  fmhaKernelDestroy(kernel);
  fmhaKernelDestroy(NULL);
  free(bytes);

  /* Load errors. */
  kernel = NULL;
  CHECK(fmhaKernelLoadBytes("FMHA-BUNDLE 1\n\n", 15, &kernel) ==
        FMHA_ERROR_BAD_BUNDLE);
  CHECK(kernel == NULL);
  CHECK(strcmp(fmhaGetLastError(), "bundle '<memory>': missing key 'target'") ==
        0);
  CHECK(fmhaKernelLoadFile("/nonexistent.fmha", &kernel) == FMHA_ERROR_IO);
  CHECK(strstr(fmhaGetLastError(), "/nonexistent.fmha") != NULL);
  CHECK(fmhaKernelLoadFile(NULL, &kernel) == FMHA_ERROR_INVALID_ARGUMENT);
  bytes = makeBundle(so, soSize, "missing_kernel", "t", &size);
  CHECK(fmhaKernelLoadBytes(bytes, size, &kernel) == FMHA_ERROR_LOAD_FAILED);
  CHECK(strstr(fmhaGetLastError(), "_mlir_ciface_missing_kernel") != NULL);
  free(bytes);
  free(so);

  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
