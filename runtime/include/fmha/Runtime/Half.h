//===- Half.h - IEEE half and bfloat16 conversions --------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Conversions between float and the 16-bit storage types of the kernels:
// IEEE 754 binary16 ("f16") and bfloat16 ("bf16"), both held as raw bits in a
// uint16_t. Float to 16 bits rounds to nearest, ties to even; infinities keep
// their sign; NaN stays NaN (quiet, sign and top payload bits kept); values
// beyond the largest finite f16 become infinity, values below half of the
// smallest f16 subnormal become a signed zero. Header-only so that test
// kernels and tools can use it without linking the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_HALF_H
#define FMHA_RUNTIME_HALF_H

#include <cstdint>
#include <cstring>

namespace fmha::rt {

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}

inline float floatFromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

/// float -> IEEE binary16 bits, round to nearest even.
inline uint16_t floatToHalfBits(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    if (abs == 0x7f800000u)
      return static_cast<uint16_t>(sign | 0x7c00u);
    // NaN: quiet it and keep the top payload bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 lies halfway between 65504 (largest f16, odd mantissa) and 2^16:
  // the tie rounds to even, i.e. up to infinity.
  if (abs >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    // Below 2^-14: an f16 subnormal n * 2^-24 (or zero). With the float as
    // m * 2^(e - 150), n = m / 2^(126 - e), rounded to nearest even.
    uint32_t e = abs >> 23;
    uint32_t m = (abs & 0x7fffffu) | (e ? 0x800000u : 0u);
    uint32_t shift = 126u - (e ? e : 1u);
    if (shift > 24u)
      return static_cast<uint16_t>(sign);
    uint32_t n = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (n & 1u)))
      ++n;
    return static_cast<uint16_t>(sign | n);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits;
  // a mantissa carry correctly bumps the exponent.
  uint32_t odd = (abs >> 13) & 1u;
  abs += 0xc8000000u + 0xfffu + odd;
  return static_cast<uint16_t>(sign | (abs >> 13));
}

/// IEEE binary16 bits -> float (exact).
inline float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31)
    return floatFromBits(sign | 0x7f800000u | (mant << 13));
  return floatFromBits(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// float -> bfloat16 bits, round to nearest even.
inline uint16_t floatToBFloat16Bits(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/// bfloat16 bits -> float (exact).
inline float bfloat16BitsToFloat(uint16_t b) {
  return floatFromBits(static_cast<uint32_t>(b) << 16);
}

/// float rounded to the nearest f16 value, returned as float.
inline float roundToHalf(float f) {
  return halfBitsToFloat(floatToHalfBits(f));
}

/// float rounded to the nearest bf16 value, returned as float.
inline float roundToBFloat16(float f) {
  return bfloat16BitsToFloat(floatToBFloat16Bits(f));
}

} // namespace fmha::rt

#endif // FMHA_RUNTIME_HALF_H
