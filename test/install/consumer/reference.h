/*===- reference.h - A naive attention for the consumer programs ---------===*
 *
 * Part of the FMHA project.
 *
 *===----------------------------------------------------------------------===*
 *
 * Unmasked attention in double over logical BHSD tensors addressed through
 * strides (elements), for the installed-package tests: o[b][h][i][:] =
 * softmax_j(scale q.k_j) v_j, query head h reading kv head h / (hq / hk).
 *
 *===----------------------------------------------------------------------===*/

#ifndef FMHA_TEST_INSTALL_CONSUMER_REFERENCE_H
#define FMHA_TEST_INSTALL_CONSUMER_REFERENCE_H

#include <math.h>
#include <stdint.h>

static inline double fmhaTestAt(const float *x, const int64_t *st, int64_t b,
                                int64_t h, int64_t s, int64_t d) {
  return x[b * st[0] + h * st[1] + s * st[2] + d * st[3]];
}

/* The largest |o - reference| over the problem. */
static inline double fmhaTestMaxError(int64_t B, int64_t hq, int64_t hk,
                                      int64_t sq, int64_t sk, int64_t D,
                                      int64_t dv, double scale, const float *q,
                                      const int64_t *qs, const float *k,
                                      const int64_t *ks, const float *v,
                                      const int64_t *vs, const float *o,
                                      const int64_t *os) {
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t g = h / (hq / hk);
        double m = -INFINITY, l = 0;
        for (int64_t j = 0; j < sk; ++j) {
          double s = 0;
          for (int64_t c = 0; c < D; ++c)
            s += fmhaTestAt(q, qs, b, h, i, c) * fmhaTestAt(k, ks, b, g, j, c);
          m = fmax(m, scale * s);
        }
        for (int64_t c = 0; c < dv; ++c) {
          double acc = 0;
          l = 0;
          for (int64_t j = 0; j < sk; ++j) {
            double s = 0;
            for (int64_t e = 0; e < D; ++e)
              s +=
                  fmhaTestAt(q, qs, b, h, i, e) * fmhaTestAt(k, ks, b, g, j, e);
            const double p = exp(scale * s - m);
            l += p;
            acc += p * fmhaTestAt(v, vs, b, g, j, c);
          }
          const double err = fabs(acc / l - fmhaTestAt(o, os, b, h, i, c));
          worst = err > worst ? err : worst;
        }
      }
  return worst;
}

#endif /* FMHA_TEST_INSTALL_CONSUMER_REFERENCE_H */
