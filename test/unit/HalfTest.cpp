//===- HalfTest.cpp - f16 and bf16 conversions ----------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace fmha::rt;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

TEST(Half, ExactValues) {
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(0.5f), 0x3800);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400); // min normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001); // min subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.0f, -24)), 0x03ff);
  EXPECT_EQ(halfBitsToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(halfBitsToFloat(0x8000)));
  EXPECT_EQ(halfBitsToFloat(0xc500), -5.0f);
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: even is 1.
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: even is up.
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above the halfway point rounds up.
  EXPECT_EQ(floatToHalfBits(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)),
            0x3c01);
  // Mantissa carry into the exponent: 2 - 2^-12 rounds to 2.
  EXPECT_EQ(floatToHalfBits(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  // Subnormal ties: 0.5, 1.5 and 2.5 units of 2^-24.
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalfBits(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalfBits(5 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalfBits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)),
            0x0001);
  // Largest subnormal rounding up to the smallest normal.
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.5f, -24)), 0x0400);
  // Tiny values and float subnormals become signed zeros.
  EXPECT_EQ(floatToHalfBits(1e-30f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-std::numeric_limits<float>::denorm_min()), 0x8000);
}

TEST(Half, OverflowInfinityAndNaN) {
  EXPECT_EQ(floatToHalfBits(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00); // tie, rounds to even = inf
  EXPECT_EQ(floatToHalfBits(-1e9f), 0xfc00);
  EXPECT_EQ(floatToHalfBits(kInf), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-kInf), 0xfc00);
  EXPECT_EQ(halfBitsToFloat(0x7c00), kInf);
  EXPECT_EQ(halfBitsToFloat(0xfc00), -kInf);
  uint16_t nan = floatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  // A signalling NaN whose payload lives only in the low bits stays NaN.
  EXPECT_TRUE(
      std::isnan(halfBitsToFloat(floatToHalfBits(floatFromBits(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0xfc01)));
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfBitsToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(f))));
      continue;
    }
    ASSERT_EQ(floatToHalfBits(f), h) << std::hex << h;
  }
}

TEST(Half, RoundsLikeTheNearestValue) {
  // For random floats in range, the result is the nearest f16, ties even:
  // checked against the neighbours of the result.
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0x477fefffu);
  for (int n = 0; n < 200000; ++n) {
    float f = floatFromBits(bits(gen));
    uint16_t h = floatToHalfBits(f);
    double r = halfBitsToFloat(h);
    double lo = h == 0 ? -halfBitsToFloat(1) : halfBitsToFloat(h - 1);
    double hi = halfBitsToFloat(h + 1);
    double err = std::fabs(r - f);
    ASSERT_LE(err, std::fabs(lo - f)) << f;
    ASSERT_LE(err, std::fabs(hi - f)) << f;
    if (err == std::fabs(hi - f) || err == std::fabs(lo - f)) {
      ASSERT_EQ(h & 1, 0) << "tie not to even at " << f;
    }
  }
#ifdef __FLT16_MAX__
  // And against the compiler's own conversion where it has one.
  for (int n = 0; n < 200000; ++n) {
    float f = floatFromBits(static_cast<uint32_t>(gen()));
    if (std::isnan(f))
      continue;
    _Float16 c = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &c, 2);
    ASSERT_EQ(floatToHalfBits(f), expected) << f;
  }
#endif
}

TEST(BFloat16, ValuesTiesInfNaN) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBFloat16Bits(-2.0f), 0xc000);
  EXPECT_EQ(floatToBFloat16Bits(0.0f), 0x0000);
  EXPECT_EQ(floatToBFloat16Bits(-0.0f), 0x8000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1.
  EXPECT_EQ(floatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8: halfway, even is up.
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(
      floatToBFloat16Bits(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)),
      0x3f81);
  EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBFloat16Bits(kInf), 0x7f80);
  EXPECT_EQ(floatToBFloat16Bits(-kInf), 0xff80);
  EXPECT_TRUE(std::isnan(bfloat16BitsToFloat(
      floatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload is only in the low 16 bits must not become inf.
  EXPECT_TRUE(std::isnan(
      bfloat16BitsToFloat(floatToBFloat16Bits(floatFromBits(0x7f800001u)))));
  EXPECT_EQ(bfloat16BitsToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16BitsToFloat(0x4049), 3.140625f);
  EXPECT_EQ(roundToBFloat16(3.14159265f), 3.140625f);
  EXPECT_EQ(roundToHalf(3.14159265f), 3.140625f);
}

TEST(BFloat16, EveryValueRoundTrips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bfloat16BitsToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToBFloat16Bits(f), b) << std::hex << b;
  }
}

} // namespace
