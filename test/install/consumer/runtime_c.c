/*===- runtime_c.c - A C program on the installed FMHA runtime -----------===*
 *
 * Part of the FMHA project.
 *
 *===----------------------------------------------------------------------===*
 *
 * Links only the installed libfmha_runtime.so and its header: loads a cpu
 * forward bundle (f32, no mask), launches it by name through
 * fmhaKernelLaunch on contiguous BHSD host memory and checks o against a
 * float64 attention written here.
 *
 *===----------------------------------------------------------------------===*/

#include "fmha/Runtime/fmha_runtime.h"
#include "reference.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fmha-runtime-c BUNDLE\n");
    return 2;
  }
  if (fmhaGetApiVersion() != FMHA_API_VERSION) {
    fprintf(stderr, "fmha-runtime-c: API version %d, header %d\n",
            fmhaGetApiVersion(), FMHA_API_VERSION);
    return 1;
  }
  fmhaKernel kernel = NULL;
  fmhaKernelInfo info;
  if (fmhaKernelLoadFile(argv[1], &kernel) != FMHA_SUCCESS ||
      fmhaKernelGetInfo(kernel, &info) != FMHA_SUCCESS) {
    fprintf(stderr, "fmha-runtime-c: %s\n", fmhaGetLastError());
    return 1;
  }
  const int64_t B = 2, sq = 5, sk = 7, hq = info.hq, hk = info.hk, D = info.d,
                dv = info.dv;
  float *q = malloc(sizeof(float) * B * hq * sq * D);
  float *k = malloc(sizeof(float) * B * hk * sk * D);
  float *v = malloc(sizeof(float) * B * hk * sk * dv);
  float *o = malloc(sizeof(float) * B * hq * sq * dv);
  for (int64_t i = 0; i < B * hq * sq * D; ++i)
    q[i] = (float)sin(0.37 * (double)i);
  for (int64_t i = 0; i < B * hk * sk * D; ++i)
    k[i] = (float)cos(0.23 * (double)i);
  for (int64_t i = 0; i < B * hk * sk * dv; ++i)
    v[i] = (float)sin(0.11 * (double)i + 1.0);
  const fmhaArg args[] = {
      {"b", FMHA_ARG_SIZE, NULL, B, NULL, 0},
      {"sq", FMHA_ARG_SIZE, NULL, sq, NULL, 0},
      {"sk", FMHA_ARG_SIZE, NULL, sk, NULL, 0},
      {"q", FMHA_ARG_TENSOR, q, 0, NULL, 0},
      {"k", FMHA_ARG_TENSOR, k, 0, NULL, 0},
      {"v", FMHA_ARG_TENSOR, v, 0, NULL, 0},
      {"o", FMHA_ARG_TENSOR, o, 0, NULL, 0},
  };
  if (fmhaKernelLaunch(kernel, args, sizeof(args) / sizeof(args[0]), NULL, 0,
                       NULL) != FMHA_SUCCESS) {
    fprintf(stderr, "fmha-runtime-c: %s\n", fmhaGetLastError());
    return 1;
  }
  const int64_t qs[] = {hq * sq * D, sq * D, D, 1},
                ks[] = {hk * sk * D, sk * D, D, 1},
                vs[] = {hk * sk * dv, sk * dv, dv, 1},
                os[] = {hq * sq * dv, sq * dv, dv, 1};
  const double err =
      fmhaTestMaxError(B, hq, hk, sq, sk, D, dv, info.effective_scale, q, qs, k,
                       ks, v, vs, o, os);
  fmhaKernelDestroy(kernel);
  free(q);
  free(k);
  free(v);
  free(o);
  printf("fmha-runtime-c: max |o - reference| = %.3g\n", err);
  return err <= 1e-5 ? 0 : 1;
}
