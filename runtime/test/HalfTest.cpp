//===- HalfTest.cpp - f16 and bf16 conversions ----------------------------===//
//
// Checks the 16-bit float conversions used by the MPI backend's reduction
// operators: every binary16 and bfloat16 bit pattern round-trips through
// float, and float -> 16-bit rounding matches an independent reference
// (the compiler's _Float16 where available, and a nearest-candidate search
// with ties to even for both formats) on many floats, including every
// midpoint between neighbouring 16-bit values.
//
//===----------------------------------------------------------------------===//

#include "meshrt/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace meshrt;

namespace {

/// Reference rounding: among the 16-bit patterns whose float value brackets
/// F, pick the nearer (exact arithmetic in double), ties to the even pattern.
template <float (*Widen)(uint16_t)>
uint16_t referenceRound(float F, uint16_t MaxFinite, uint16_t Inf) {
  double X = std::fabs(double(F));
  uint16_t Sign = std::signbit(F) ? 0x8000 : 0;
  // Binary search the largest magnitude pattern <= X among finite values.
  uint16_t Lo = 0, Hi = MaxFinite;
  if (X >= double(Widen(MaxFinite))) {
    // Overflow threshold: halfway to the next power step rounds to inf.
    double Max = Widen(MaxFinite);
    double Ulp = Max - double(Widen(uint16_t(MaxFinite - 1)));
    if (X >= Max + Ulp / 2)
      return Sign | Inf;
    return Sign | MaxFinite;
  }
  while (Lo < Hi) {
    uint16_t Mid = uint16_t((Lo + Hi + 1) / 2);
    if (double(Widen(Mid)) <= X)
      Lo = Mid;
    else
      Hi = uint16_t(Mid - 1);
  }
  double Below = Widen(Lo), Above = Widen(uint16_t(Lo + 1));
  uint16_t Pick;
  if (X - Below < Above - X)
    Pick = Lo;
  else if (X - Below > Above - X)
    Pick = uint16_t(Lo + 1);
  else
    Pick = (Lo & 1) ? uint16_t(Lo + 1) : Lo;
  return Sign | Pick;
}

uint16_t refHalf(float F) {
  return referenceRound<halfToFloat>(F, 0x7bff, 0x7c00);
}
uint16_t refBFloat(float F) {
  return referenceRound<bfloat16ToFloat>(F, 0x7f7f, 0x7f80);
}

std::vector<float> probeFloats(float (*Widen)(uint16_t), uint16_t MaxFinite) {
  std::vector<float> V;
  // Every midpoint and its float neighbours, between all adjacent patterns.
  for (uint32_t B = 0; B < MaxFinite; ++B) {
    float A = Widen(uint16_t(B)), C = Widen(uint16_t(B + 1));
    float Mid = float((double(A) + double(C)) / 2);
    V.push_back(A);
    V.push_back(Mid);
    V.push_back(std::nextafter(Mid, 0.0f));
    V.push_back(std::nextafter(Mid, INFINITY));
  }
  std::mt19937 Gen(42);
  std::uniform_int_distribution<uint32_t> Bits;
  for (int I = 0; I < 200000; ++I) {
    uint32_t U = Bits(Gen) & 0x7fffffffu;
    if (U >= 0x7f800000u)
      continue;
    V.push_back(detail::bitsFloat(U));
  }
  V.push_back(0.0f);
  V.push_back(1e-30f);
  V.push_back(65504.0f);
  V.push_back(65519.99f);
  V.push_back(65520.0f);
  V.push_back(3.0e38f);
  return V;
}

TEST(Half, EveryPatternRoundTrips) {
  for (uint32_t B = 0; B < 0x10000; ++B) {
    uint16_t H = uint16_t(B);
    float F = halfToFloat(H);
    if (std::isnan(F)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(F))));
      EXPECT_EQ(floatToHalf(F) & 0x7e00, 0x7e00) << "quiet NaN, bits " << B;
      continue;
    }
    EXPECT_EQ(floatToHalf(F), H) << "bits " << B;
  }
}

TEST(Half, RoundingMatchesReference) {
  for (float F : probeFloats(halfToFloat, 0x7bff)) {
    ASSERT_EQ(floatToHalf(F), refHalf(F)) << "float " << F;
    ASSERT_EQ(floatToHalf(-F), refHalf(-F)) << "float " << -F;
  }
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00);
}

#ifdef __FLT16_MANT_DIG__
TEST(Half, MatchesCompilerFloat16) {
  for (float F : probeFloats(halfToFloat, 0x7bff)) {
    _Float16 H = static_cast<_Float16>(F);
    uint16_t Bits;
    std::memcpy(&Bits, &H, 2);
    ASSERT_EQ(floatToHalf(F), Bits) << "float " << F;
  }
  for (uint32_t B = 0; B < 0x10000; ++B) {
    _Float16 H;
    uint16_t Bits = uint16_t(B);
    std::memcpy(&H, &Bits, 2);
    float Ref = float(H), Mine = halfToFloat(Bits);
    if (std::isnan(Ref))
      EXPECT_TRUE(std::isnan(Mine));
    else
      EXPECT_EQ(Mine, Ref) << "bits " << B;
  }
}
#endif

TEST(BFloat16, EveryPatternRoundTrips) {
  for (uint32_t B = 0; B < 0x10000; ++B) {
    uint16_t H = uint16_t(B);
    float F = bfloat16ToFloat(H);
    if (std::isnan(F)) {
      EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(F))));
      continue;
    }
    EXPECT_EQ(floatToBFloat16(F), H) << "bits " << B;
  }
}

TEST(BFloat16, RoundingMatchesReference) {
  for (float F : probeFloats(bfloat16ToFloat, 0x7f7f)) {
    ASSERT_EQ(floatToBFloat16(F), refBFloat(F)) << "float " << F;
    ASSERT_EQ(floatToBFloat16(-F), refBFloat(-F)) << "float " << -F;
  }
}

TEST(ValueTypes, ConvertBothWays) {
  EXPECT_EQ(float(Half(1.5f)), 1.5f);
  EXPECT_EQ(Half(1.0f).Bits, 0x3c00);
  EXPECT_EQ(float(BFloat16(-2.0f)), -2.0f);
  EXPECT_EQ(BFloat16(1.0f).Bits, 0x3f80);
}

} // namespace
