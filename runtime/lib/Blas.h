//===- Blas.h - Contractions through a CBLAS --------------------*- C++ -*-===//
//
// The C++ side of meshrt_gemm (Blas.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_BLAS_H
#define MESHRT_LIB_BLAS_H

#include "meshrt/meshrt.h"

#include <cstdint>

namespace meshrt {
namespace detail {

/// The arguments of meshrt_gemm and meshrt_gemm_mixed. Strides are in
/// elements: {batch, row, col}. `Dtype` is A's and B's element type, `CDtype`
/// C's (the same, or a wider float for a mixed product).
struct GemmArgs {
  meshrt_dtype Dtype, CDtype;
  int64_t Batch, M, N, K;
  const void *A;
  int64_t AStrides[3];
  const void *B;
  int64_t BStrides[3];
  void *C;
  int64_t CStrides[3];
  bool Accumulate;
};

/// C[b] = A[b] * B[b] (+ C[b] when Accumulate) for every b < Batch. Throws
/// meshrt::Error on a bad argument.
void gemm(const GemmArgs &G);

/// gemm, then bias (null, or N contiguous elements) added to every row of
/// every C[b] and the activation `Epilogue` (a meshrt_epilogue) applied.
void gemmEpilogue(const GemmArgs &G, const void *Bias, int32_t Epilogue);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_BLAS_H
