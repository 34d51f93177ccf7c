//===- meshrt/Half.h - binary16 and bfloat16 conversions --------*- C++ -*-===//
//
// Conversions between float and the two 16-bit float formats the runtime
// reduces: IEEE binary16 (f16) and bfloat16 (bf16). Rounding is to nearest,
// ties to even; NaNs stay NaNs (quiet) and overflow goes to infinity. The MPI
// backend uses them in its user-defined reduction operators (MPI has no
// 16-bit float arithmetic); tests and programs use the small value types.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_HALF_H
#define MESHRT_HALF_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace meshrt {

namespace detail {
/// The bits of `F`.
inline uint32_t floatBits(float F) {
  uint32_t U;
  std::memcpy(&U, &F, sizeof(U));
  return U;
}
/// The float with bits `U`.
inline float bitsFloat(uint32_t U) {
  float F;
  std::memcpy(&F, &U, sizeof(F));
  return F;
}
} // namespace detail

/// Widens the binary16 bit pattern `H` to float (exact).
inline float halfToFloat(uint16_t H) {
  uint32_t Sign = uint32_t(H & 0x8000u) << 16;
  uint32_t Exp = (H >> 10) & 0x1fu;
  uint32_t Mant = H & 0x3ffu;
  if (Exp == 0x1f) // Infinity or NaN: keep the payload.
    return detail::bitsFloat(Sign | 0x7f800000u | (Mant << 13));
  if (Exp == 0) { // Zero or subnormal: Mant * 2^-24, exact in float.
    float Mag = float(Mant) * (1.0f / 16777216.0f);
    return Sign ? -Mag : Mag;
  }
  return detail::bitsFloat(Sign | ((Exp + 112u) << 23) | (Mant << 13));
}

/// Rounds `F` to the nearest binary16 value (ties to even).
inline uint16_t floatToHalf(float F) {
  uint32_t X = detail::floatBits(F);
  uint16_t Sign = uint16_t((X >> 16) & 0x8000u);
  uint32_t Abs = X & 0x7fffffffu;
  if (Abs >= 0x7f800000u) // Infinity stays infinity; NaN becomes a quiet NaN.
    return Sign | 0x7c00u |
           (Abs > 0x7f800000u ? uint16_t(0x200u | ((Abs >> 13) & 0x3ffu)) : 0);
  if (Abs >= 0x477ff000u) // >= 65520 rounds to infinity.
    return Sign | 0x7c00u;
  if (Abs >= 0x38800000u) { // Normal binary16: round at bit 13, rebias.
    uint32_t Rounded = Abs + 0xfffu + ((Abs >> 13) & 1u);
    return Sign | uint16_t((Rounded - 0x38000000u) >> 13);
  }
  // Subnormal or zero: count units of 2^-24; the scaling is exact and
  // nearbyint rounds ties to even. 1024 units is the smallest normal.
  float Units = std::nearbyint(detail::bitsFloat(Abs) * 16777216.0f);
  return Sign | uint16_t(Units);
}

/// Widens the bfloat16 bit pattern `B` to float (exact).
inline float bfloat16ToFloat(uint16_t B) {
  return detail::bitsFloat(uint32_t(B) << 16);
}

/// Rounds `F` to the nearest bfloat16 value (ties to even).
inline uint16_t floatToBFloat16(float F) {
  uint32_t X = detail::floatBits(F);
  if ((X & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet.
    return uint16_t((X >> 16) | 0x40u);
  return uint16_t((X + 0x7fffu + ((X >> 16) & 1u)) >> 16);
}

/// An f16 value (MESHRT_F16 buffer element).
struct Half {
  /// The binary16 bit pattern.
  uint16_t Bits = 0;
  Half() = default;
  /// Rounds `F` to binary16.
  explicit Half(float F) : Bits(floatToHalf(F)) {}
  /// The value as float.
  explicit operator float() const { return halfToFloat(Bits); }
};

/// A bf16 value (MESHRT_BF16 buffer element).
struct BFloat16 {
  /// The bfloat16 bit pattern.
  uint16_t Bits = 0;
  BFloat16() = default;
  /// Rounds `F` to bfloat16.
  explicit BFloat16(float F) : Bits(floatToBFloat16(F)) {}
  /// The value as float.
  explicit operator float() const { return bfloat16ToFloat(Bits); }
};

} // namespace meshrt

#endif // MESHRT_HALF_H
