//===- HostReduce.h - Reductions on host buffers shared by backends -*- C++
//-*-===//
//
// What the CPU backends (MPI, and the gloo plugin, a separate library) need
// beyond their library's own reductions: 16-bit floats widened to float and
// rounded back (ties to even), and the division that turns a sum into an
// average. Header-only, so that the plugin shares it without linking
// libmeshrt.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_HOSTREDUCE_H
#define MESHRT_LIB_HOSTREDUCE_H

#include "meshrt/Half.h"
#include "meshrt/meshrt.h"

#include <cstdint>

namespace meshrt {
namespace detail {

/// The 16-bit float formats: load to float, store rounded back.
struct HalfFormat {
  static float load(uint16_t V) { return halfToFloat(V); }
  static uint16_t store(float F) { return floatToHalf(F); }
};
struct BFloat16Format {
  static float load(uint16_t V) { return bfloat16ToFloat(V); }
  static uint16_t store(float F) { return floatToBFloat16(F); }
};

/// The arithmetic reductions on floats.
struct SumFn {
  static float apply(float A, float B) { return A + B; }
};
struct ProdFn {
  static float apply(float A, float B) { return A * B; }
};
struct MinFn {
  static float apply(float A, float B) { return B < A ? B : A; }
};
struct MaxFn {
  static float apply(float A, float B) { return B > A ? B : A; }
};

template <typename T> void divideAll(void *Buf, int64_t Count, int64_t N) {
  T *P = static_cast<T *>(Buf);
  for (int64_t I = 0; I < Count; ++I)
    P[I] = T(P[I] / T(N)); // Truncates toward zero for integers.
}

template <typename Format> void divide16(void *Buf, int64_t Count, int64_t N) {
  uint16_t *P = static_cast<uint16_t *>(Buf);
  for (int64_t I = 0; I < Count; ++I)
    P[I] = Format::store(Format::load(P[I]) / float(N));
}

/// Turns the `Count` sums in `Buf` into averages over `N` members.
inline void divideBy(void *Buf, int64_t Count, meshrt_dtype T, int64_t N) {
  switch (T) {
  case MESHRT_F16:
    return divide16<HalfFormat>(Buf, Count, N);
  case MESHRT_BF16:
    return divide16<BFloat16Format>(Buf, Count, N);
  case MESHRT_F32:
    return divideAll<float>(Buf, Count, N);
  case MESHRT_F64:
    return divideAll<double>(Buf, Count, N);
  case MESHRT_I8:
    return divideAll<int8_t>(Buf, Count, N);
  case MESHRT_I32:
    return divideAll<int32_t>(Buf, Count, N);
  case MESHRT_I64:
    return divideAll<int64_t>(Buf, Count, N);
  case MESHRT_U8:
    return divideAll<uint8_t>(Buf, Count, N);
  }
}

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_HOSTREDUCE_H
