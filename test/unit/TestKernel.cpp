//===- TestKernel.cpp - Naive host kernels for runtime tests --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A shared object with `_mlir_ciface_<name>` entry points that follow the host
// kernel ABI (memref-ciface-v1, Runtime.h) and compute attention the naive way
// (double accumulation over MaskSpec::visible). It stands in for a compiled
// kernel so that the runtime, the C API and fmha-run are tested without the
// compiler. The `flawed_*` entry points are wrong on purpose, so that tests
// can check that --validate notices.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"
#include "fmha/Support/MaskSpec.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

template <int Rank> struct MemRef {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};
using MemRef4 = MemRef<4>;
using MemRef3 = MemRef<3>;

enum class Elem { F32, F16, BF16 };
enum class Flaw { None, Perturb, NoOutput, EmptyRowLseZero };

double load(const MemRef4 &m, Elem e, int64_t b, int64_t h, int64_t s,
            int64_t x) {
  int64_t idx = m.offset + b * m.strides[0] + h * m.strides[1] +
                s * m.strides[2] + x * m.strides[3];
  if (e == Elem::F32)
    return static_cast<const float *>(m.aligned)[idx];
  uint16_t bits = static_cast<const uint16_t *>(m.aligned)[idx];
  return e == Elem::F16 ? fmha::rt::halfBitsToFloat(bits)
                        : fmha::rt::bfloat16BitsToFloat(bits);
}

void store(MemRef4 &m, Elem e, int64_t b, int64_t h, int64_t s, int64_t x,
           double value) {
  int64_t idx = m.offset + b * m.strides[0] + h * m.strides[1] +
                s * m.strides[2] + x * m.strides[3];
  float f = static_cast<float>(value);
  if (e == Elem::F32)
    static_cast<float *>(m.aligned)[idx] = f;
  else
    static_cast<uint16_t *>(m.aligned)[idx] =
        e == Elem::F16 ? fmha::rt::floatToHalfBits(f)
                       : fmha::rt::floatToBFloat16Bits(f);
}

void naive(MemRef4 *q, MemRef4 *k, MemRef4 *v, MemRef4 *o, MemRef3 *lse, Elem e,
           const char *maskSpec, double scale, double softcap,
           Flaw flaw = Flaw::None) {
  fmha::MaskSpec mask = *fmha::MaskSpec::parse(maskSpec);
  int64_t nb = q->sizes[0], hq = q->sizes[1], sq = q->sizes[2], d = q->sizes[3];
  int64_t hk = k->sizes[1], sk = k->sizes[2], dv = v->sizes[3];
  if (scale == 0.0)
    scale = 1.0 / std::sqrt(static_cast<double>(d));
  float *lseData = static_cast<float *>(lse->aligned) + lse->offset;
  std::vector<double> s(sk), acc(dv);
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kvh = h / (hq / hk);
      for (int64_t i = 0; i < sq; ++i) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < sk; ++j) {
          s[j] = -std::numeric_limits<double>::infinity();
          if (!mask.visible(i, j, sq, sk))
            continue;
          double dot = 0;
          for (int64_t x = 0; x < d; ++x)
            dot += load(*q, e, b, h, i, x) * load(*k, e, b, kvh, j, x);
          s[j] = scale * dot;
          if (softcap > 0)
            s[j] = softcap * std::tanh(s[j] / softcap);
          m = std::max(m, s[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        if (m != -std::numeric_limits<double>::infinity()) {
          for (int64_t j = 0; j < sk; ++j) {
            double p = std::exp(s[j] - m);
            sum += p;
            for (int64_t x = 0; x < dv && p != 0; ++x)
              acc[x] += p * load(*v, e, b, kvh, j, x);
          }
        }
        double rowLse = sum > 0 ? m + std::log(sum)
                                : -std::numeric_limits<double>::infinity();
        if (sum == 0 && flaw == Flaw::EmptyRowLseZero)
          rowLse = 0;
        lseData[b * lse->strides[0] + h * lse->strides[1] +
                i * lse->strides[2]] = static_cast<float>(rowLse);
        if (flaw == Flaw::NoOutput)
          continue;
        for (int64_t x = 0; x < dv; ++x) {
          double val = sum > 0 ? acc[x] / sum : 0.0;
          if (flaw == Flaw::Perturb && b == 0 && h == 0 && i == 0 && x == 0)
            val += 0.5;
          store(*o, e, b, h, i, x, val);
        }
      }
    }
  }
}

} // namespace

#define FMHA_TEST_KERNEL(NAME, ...)                                            \
  extern "C" void _mlir_ciface_##NAME(MemRef4 *q, MemRef4 *k, MemRef4 *v,      \
                                      MemRef4 *o, MemRef3 *lse) {              \
    naive(q, k, v, o, lse, __VA_ARGS__);                                       \
  }

FMHA_TEST_KERNEL(naive_f32, Elem::F32, "0", 0.0, 0.0)
FMHA_TEST_KERNEL(naive_f32_b, Elem::F32, "b", 0.0, 0.0)
FMHA_TEST_KERNEL(naive_f32_sink, Elem::F32, "t:3,0,2", 0.25, 5.0)
FMHA_TEST_KERNEL(naive_f16_xb, Elem::F16, "xb:5", 0.0, 0.0)
FMHA_TEST_KERNEL(naive_bf16_t, Elem::BF16, "t", 0.0, 0.0)
FMHA_TEST_KERNEL(flawed_perturb_f32, Elem::F32, "0", 0.0, 0.0, Flaw::Perturb)
FMHA_TEST_KERNEL(flawed_no_output_f32, Elem::F32, "0", 0.0, 0.0, Flaw::NoOutput)
FMHA_TEST_KERNEL(flawed_lse_f32_b, Elem::F32, "b", 0.0, 0.0,
                 Flaw::EmptyRowLseZero)
