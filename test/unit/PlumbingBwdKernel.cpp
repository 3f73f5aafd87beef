//===- PlumbingBwdKernel.cpp - Backward-ABI plumbing fakes ----------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Entry points with the host BACKWARD kernel signature (memref-ciface-v1,
// kind=bwd, Runtime.h) that compute NO attention gradient. They only assert
// the plumbing: every descriptor is contiguous row-major BHSD with offset 0,
// allocated == aligned, the nine buffers are distinct, the shapes agree with
// each other (dq like q, dk like k, dv like v, dO like o, lse [B,Hq,Sq]) and
// the inputs o, lse and dO hold no NaN (the caller passed real values, not
// poison). They then write a CONSTANT to every element of dq, dk, dv: 1, 2
// and 3 (`plumbing_bwd_const_*`), 0 (`plumbing_bwd_zero_f32`), or nothing
// at all (`plumbing_bwd_nothing_f32`). When a plumbing check fails, dq, dk
// and dv are filled with NaN instead, so that the caller's test notices.
//
// Linked into the FMHATestKernel module next to TestKernel.cpp, so that
// tests reach them with testKernelBinary().
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

enum class Elem { F32, F16 };
enum class Write { Const, Zero, Nothing };

template <int Rank> int64_t elements(const MemRef<Rank> &m) {
  int64_t n = 1;
  for (int i = 0; i < Rank; ++i)
    n *= m.sizes[i];
  return n;
}

template <int Rank> bool contiguous(const MemRef<Rank> &m) {
  if (!m.aligned || m.allocated != m.aligned || m.offset != 0)
    return false;
  int64_t stride = 1;
  for (int i = Rank - 1; i >= 0; --i) {
    if (m.sizes[i] <= 0 || m.strides[i] != stride)
      return false;
    stride *= m.sizes[i];
  }
  return true;
}

bool sameSizes(const MemRef4 &a, const MemRef4 &b) {
  return std::memcmp(a.sizes, b.sizes, sizeof(a.sizes)) == 0;
}

double loadElem(const void *data, Elem e, int64_t i) {
  if (e == Elem::F32)
    return static_cast<const float *>(data)[i];
  return fmha::rt::halfBitsToFloat(static_cast<const uint16_t *>(data)[i]);
}

bool anyNaN(const MemRef4 &m, Elem e) {
  for (int64_t i = 0, n = elements(m); i < n; ++i)
    if (std::isnan(loadElem(m.aligned, e, i)))
      return true;
  return false;
}

bool plumbingOk(MemRef4 *q, MemRef4 *k, MemRef4 *v, MemRef4 *o, MemRef3 *lse,
                MemRef4 *dO, MemRef4 *dq, MemRef4 *dk, MemRef4 *dv, Elem e) {
  MemRef4 *all4[] = {q, k, v, o, dO, dq, dk, dv};
  for (MemRef4 *m : all4)
    if (!m || !contiguous(*m))
      return false;
  if (!lse || !contiguous(*lse))
    return false;
  // Nine distinct buffers.
  const void *ptrs[] = {q->aligned,  k->aligned,   v->aligned,
                        o->aligned,  lse->aligned, dO->aligned,
                        dq->aligned, dk->aligned,  dv->aligned};
  for (int i = 0; i < 9; ++i)
    for (int j = i + 1; j < 9; ++j)
      if (ptrs[i] == ptrs[j])
        return false;
  int64_t b = q->sizes[0], hq = q->sizes[1], sq = q->sizes[2], d = q->sizes[3],
          hk = k->sizes[1], sk = k->sizes[2], dvDim = v->sizes[3];
  if (hq % hk != 0)
    return false;
  const int64_t kWant[] = {b, hk, sk, d}, vWant[] = {b, hk, sk, dvDim},
                oWant[] = {b, hq, sq, dvDim}, lseWant[] = {b, hq, sq};
  if (std::memcmp(k->sizes, kWant, sizeof(kWant)) ||
      std::memcmp(v->sizes, vWant, sizeof(vWant)) ||
      std::memcmp(o->sizes, oWant, sizeof(oWant)) ||
      std::memcmp(lse->sizes, lseWant, sizeof(lseWant)))
    return false;
  if (!sameSizes(*dO, *o) || !sameSizes(*dq, *q) || !sameSizes(*dk, *k) ||
      !sameSizes(*dv, *v))
    return false;
  // Inputs the caller must have filled (lse may be -inf, never NaN).
  const float *lseData = static_cast<const float *>(lse->aligned);
  for (int64_t i = 0, n = elements(*lse); i < n; ++i)
    if (std::isnan(lseData[i]))
      return false;
  return !anyNaN(*o, e) && !anyNaN(*dO, e);
}

void fill(MemRef4 *m, Elem e, float value) {
  if (!m || !m->aligned)
    return;
  int64_t n = elements(*m);
  if (e == Elem::F32) {
    float *data = static_cast<float *>(m->aligned);
    for (int64_t i = 0; i < n; ++i)
      data[i] = value;
  } else {
    uint16_t bits = fmha::rt::floatToHalfBits(value);
    uint16_t *data = static_cast<uint16_t *>(m->aligned);
    for (int64_t i = 0; i < n; ++i)
      data[i] = bits;
  }
}

void plumbing(MemRef4 *q, MemRef4 *k, MemRef4 *v, MemRef4 *o, MemRef3 *lse,
              MemRef4 *dO, MemRef4 *dq, MemRef4 *dk, MemRef4 *dv, Elem e,
              Write w) {
  if (!plumbingOk(q, k, v, o, lse, dO, dq, dk, dv, e)) {
    float nan = std::numeric_limits<float>::quiet_NaN();
    fill(dq, e, nan);
    fill(dk, e, nan);
    fill(dv, e, nan);
    return;
  }
  if (w == Write::Nothing)
    return;
  bool zero = w == Write::Zero;
  fill(dq, e, zero ? 0.0f : 1.0f);
  fill(dk, e, zero ? 0.0f : 2.0f);
  fill(dv, e, zero ? 0.0f : 3.0f);
}

} // namespace

#define FMHA_PLUMBING_BWD(NAME, ...)                                           \
  extern "C" void _mlir_ciface_##NAME(MemRef4 *q, MemRef4 *k, MemRef4 *v,      \
                                      MemRef4 *o, MemRef3 *lse, MemRef4 *dO,   \
                                      MemRef4 *dq, MemRef4 *dk, MemRef4 *dv) { \
    plumbing(q, k, v, o, lse, dO, dq, dk, dv, __VA_ARGS__);                    \
  }

FMHA_PLUMBING_BWD(plumbing_bwd_const_f32, Elem::F32, Write::Const)
FMHA_PLUMBING_BWD(plumbing_bwd_const_f16, Elem::F16, Write::Const)
FMHA_PLUMBING_BWD(plumbing_bwd_zero_f32, Elem::F32, Write::Zero)
FMHA_PLUMBING_BWD(plumbing_bwd_nothing_f32, Elem::F32, Write::Nothing)
