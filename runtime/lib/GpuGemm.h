//===- GpuGemm.h - Contractions on the GPU through cuBLASLt -----*- C++ -*-===//
//
// The C++ side of meshrt_gpu_gemm (GpuGemm.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_GPUGEMM_H
#define MESHRT_LIB_GPUGEMM_H

#include "meshrt/meshrt.h"

#include <cstdint>

namespace meshrt {
namespace detail {

/// The arguments of meshrt_gpu_gemm and meshrt_gpu_gemm_mixed. Strides are
/// in elements: {batch, row, col}. `Dtype` is A's and B's element type,
/// `CDtype` C's and the bias's (the same, or f32 for f16 and bf16 inputs).
struct GpuGemmArgs {
  void **Plan;
  meshrt_dtype Dtype, CDtype;
  int64_t Batch, M, N, K;
  const void *A;
  int64_t AStrides[3];
  const void *B;
  int64_t BStrides[3];
  void *C;
  int64_t CStrides[3];
  bool Accumulate;
  const void *Bias;
  int32_t Epilogue;
  int32_t Precision;
  void *Stream;
};

/// Enqueues C[b] = act(A[b] * B[b] (+ C[b]) + bias) for every b < Batch on
/// the stream, through cuBLASLt. Throws meshrt::Error on a bad argument, a
/// library that cannot be loaded or a cuBLASLt error.
void gpuGemm(const GpuGemmArgs &G);

/// Gives back what the products hold on the device: the cuBLASLt workspace
/// (freed in stream order on the shared stream) and the plans' descriptors
/// (the call sites' slots stay valid: a plan is remade at its next use).
/// Called when a context is finalized, before the kept buffers are released;
/// a no-op when no product ran.
void gpuGemmRelease();

/// How many plans (descriptors, layouts and a heuristic query) were made in
/// this process.
int64_t gpuGemmPlansMade();

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_GPUGEMM_H
