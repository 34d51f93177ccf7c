//===- FakeCublasLt.cpp - A host-memory stand-in for libcublasLt ----------===//
//
// Test-only. Implements the cuBLASLt calls libmeshrt's meshrt_gpu_gemm makes
// (GpuGemm.cpp), with cuBLASLt's semantics, on the emulated driver's device
// memory (FakeCuda.cpp), so that the runtime's mapping of strided row-major
// products onto column-major cuBLASLt layouts, its plan cache, workspace and
// stream use run, and their numbers are checked, on machines without a GPU.
// Built as libcublasLt.so.13 next to the emulated libcuda, libcudart and
// libnccl; tests point MESHRT_CUBLASLT_LIBRARY at it.
//
// cublasLtMatmul computes the product at once on the host (device memory
// opened for the call, as the emulated NCCL does), accumulating in double:
// D = act(alpha op(A) op(B) + beta C + bias), for every batch of the strided
// batch, with the inputs rounded first for CUBLAS_COMPUTE_32F_FAST_TF32 (to
// 10 mantissa bits, to nearest even) and _FAST_16BF (to bfloat16, to nearest
// even), the epilogues BIAS, RELU and GELU (tanh form) as cublasLt.h defines
// them, and the result rounded once to D's type. A and B have one type, C
// and D (and the bias) one type: the same, or f32 for f16 and bf16 inputs
// (cuBLASLt's mixed products with CUBLAS_COMPUTE_32F). It then marks the stream
// busy for two polls, as the emulated NCCL does, so that a host wait polls.
//
// What it refuses, with CUBLAS_STATUS_INVALID_VALUE or _NOT_SUPPORTED and a
// trace line "cublaslt-error <why>": a matrix (A, B, C, D, each over its
// whole strided-batch extent), a bias or a workspace that is not inside one
// live emulated device allocation (host memory, or past the end of a
// buffer); a workspace smaller than the preference's maximum that the
// heuristic reported as needed; a leading dimension below the rows; shapes,
// batch counts or types that do not fit together; an order other than
// column-major; a pointer less aligned than the heuristic was told
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, 256 by default; the bias's
// from its pointer at the heuristic); an algorithm found for other
// descriptors; C and D at one address with different layouts.
//
// Trace (MESHRT_EMU_TRACE, through the emulated driver): "cublaslt-create"
// per handle, "gemm plan-heuristic m=.. n=.. k=.." per heuristic query, and
// per product "gemm m=%d n=%d k=%d batch=%d transa=%d transb=%d epilogue=%d
// compute=%d atype=%u dtype=%u stream=s%d workspace=%zu" (cuBLASLt's m, n,
// k: D's rows and columns and the inner size; A's and D's cudaDataType).
//
// The runtime's own declarations of cuBLASLt (runtime/lib/CublasLtApi.h) are
// checked against the real header here, at compile time.
//
//===----------------------------------------------------------------------===//

#include "CublasLtApi.h"
#include "meshrt/Half.h"

#include <cublasLt.h>

#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>

extern "C" {
void fakeCudaAccess(int Open);
int fakeCudaIsDevicePointer(const void *P, size_t Bytes);
int fakeCudaStreamId(const void *S);
void fakeCudaMarkBusy(const void *S, int Polls);
void fakeCudaTrace(const char *Fmt, ...);
}

//===----------------------------------------------------------------------===//
// The runtime's declarations (CublasLtApi.h) against cublasLt.h
//===----------------------------------------------------------------------===//

namespace lt = meshrt::detail::lt;

static_assert(sizeof(cublasStatus_t) == sizeof(int) &&
                  sizeof(cublasComputeType_t) == sizeof(int) &&
                  sizeof(cudaDataType_t) == sizeof(int) &&
                  sizeof(cublasLtMatmulDescAttributes_t) == sizeof(int) &&
                  sizeof(cublasLtMatrixLayoutAttribute_t) == sizeof(int) &&
                  sizeof(cublasLtMatmulPreferenceAttributes_t) == sizeof(int),
              "cuBLASLt's enums are passed as int");
static_assert(lt::StatusSuccess == CUBLAS_STATUS_SUCCESS &&
                  lt::StatusNotInitialized == CUBLAS_STATUS_NOT_INITIALIZED &&
                  lt::StatusAllocFailed == CUBLAS_STATUS_ALLOC_FAILED &&
                  lt::StatusInvalidValue == CUBLAS_STATUS_INVALID_VALUE &&
                  lt::StatusArchMismatch == CUBLAS_STATUS_ARCH_MISMATCH &&
                  lt::StatusMappingError == CUBLAS_STATUS_MAPPING_ERROR &&
                  lt::StatusExecutionFailed == CUBLAS_STATUS_EXECUTION_FAILED &&
                  lt::StatusInternalError == CUBLAS_STATUS_INTERNAL_ERROR &&
                  lt::StatusNotSupported == CUBLAS_STATUS_NOT_SUPPORTED &&
                  lt::StatusLicenseError == CUBLAS_STATUS_LICENSE_ERROR,
              "cublasStatus_t");
static_assert(lt::R16F == CUDA_R_16F && lt::R16BF == CUDA_R_16BF &&
                  lt::R32F == CUDA_R_32F && lt::R64F == CUDA_R_64F,
              "cudaDataType_t");
static_assert(lt::Compute32F == CUBLAS_COMPUTE_32F &&
                  lt::Compute32FFastTF32 == CUBLAS_COMPUTE_32F_FAST_TF32 &&
                  lt::Compute32FFast16BF == CUBLAS_COMPUTE_32F_FAST_16BF &&
                  lt::Compute64F == CUBLAS_COMPUTE_64F,
              "cublasComputeType_t");
static_assert(lt::OpN == CUBLAS_OP_N && lt::OpT == CUBLAS_OP_T,
              "cublasOperation_t");
static_assert(lt::OrderCol == CUBLASLT_ORDER_COL, "cublasLtOrder_t");
static_assert(lt::LayoutType == CUBLASLT_MATRIX_LAYOUT_TYPE &&
                  lt::LayoutOrder == CUBLASLT_MATRIX_LAYOUT_ORDER &&
                  lt::LayoutRows == CUBLASLT_MATRIX_LAYOUT_ROWS &&
                  lt::LayoutCols == CUBLASLT_MATRIX_LAYOUT_COLS &&
                  lt::LayoutLd == CUBLASLT_MATRIX_LAYOUT_LD &&
                  lt::LayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
                  lt::LayoutStridedBatchOffset ==
                      CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
              "cublasLtMatrixLayoutAttribute_t");
static_assert(lt::DescComputeType == CUBLASLT_MATMUL_DESC_COMPUTE_TYPE &&
                  lt::DescScaleType == CUBLASLT_MATMUL_DESC_SCALE_TYPE &&
                  lt::DescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
                  lt::DescTransB == CUBLASLT_MATMUL_DESC_TRANSB &&
                  lt::DescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
                  lt::DescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
                  lt::DescBiasDataType == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
              "cublasLtMatmulDescAttributes_t");
static_assert(lt::EpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
                  lt::EpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
                  lt::EpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
                  lt::EpilogueReluBias == CUBLASLT_EPILOGUE_RELU_BIAS &&
                  lt::EpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
                  lt::EpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS,
              "cublasLtEpilogue_t");
static_assert(lt::PrefMaxWorkspaceBytes ==
                      CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
                  lt::PrefMinAlignmentABytes ==
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
                  lt::PrefMinAlignmentBBytes ==
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES &&
                  lt::PrefMinAlignmentCBytes ==
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES &&
                  lt::PrefMinAlignmentDBytes ==
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
              "cublasLtMatmulPreferenceAttributes_t");
static_assert(sizeof(lt::MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t),
              "cublasLtMatmulAlgo_t");
static_assert(sizeof(lt::HeuristicResult) ==
                      sizeof(cublasLtMatmulHeuristicResult_t) &&
                  offsetof(lt::HeuristicResult, Algo) ==
                      offsetof(cublasLtMatmulHeuristicResult_t, algo) &&
                  offsetof(lt::HeuristicResult, WorkspaceSize) ==
                      offsetof(cublasLtMatmulHeuristicResult_t,
                               workspaceSize) &&
                  offsetof(lt::HeuristicResult, State) ==
                      offsetof(cublasLtMatmulHeuristicResult_t, state) &&
                  offsetof(lt::HeuristicResult, WavesCount) ==
                      offsetof(cublasLtMatmulHeuristicResult_t, wavesCount),
              "cublasLtMatmulHeuristicResult_t");
// The entry points, as the runtime calls them, with cublasLt.h's parameter
// types in place of the ints it passes for enums.
static_assert(
    std::is_same_v<
        decltype(&cublasLtMatmul),
        cublasStatus_t (*)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                           const void *, cublasLtMatrixLayout_t, const void *,
                           cublasLtMatrixLayout_t, const void *, const void *,
                           cublasLtMatrixLayout_t, void *,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *,
                           void *, size_t, cudaStream_t)>,
    "cublasLtMatmul");
static_assert(
    std::is_same_v<decltype(&cublasLtMatrixLayoutCreate),
                   cublasStatus_t (*)(cublasLtMatrixLayout_t *, cudaDataType,
                                      uint64_t, uint64_t, int64_t)>,
    "cublasLtMatrixLayoutCreate");
static_assert(std::is_same_v<decltype(&cublasLtMatmulAlgoGetHeuristic),
                             cublasStatus_t (*)(
                                 cublasLtHandle_t, cublasLtMatmulDesc_t,
                                 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                 cublasLtMatmulPreference_t, int,
                                 cublasLtMatmulHeuristicResult_t *, int *)>,
              "cublasLtMatmulAlgoGetHeuristic");

//===----------------------------------------------------------------------===//
// Objects
//===----------------------------------------------------------------------===//

struct cublasLtContext {
  uint32_t Magic;
};

namespace {

constexpr uint32_t kHandleMagic = 0x4c544831, kDescMagic = 0x4c544432,
                   kLayoutMagic = 0x4c544c33, kPrefMagic = 0x4c545034,
                   kAlgoMagic = 0x4c544135;

struct Desc {
  uint32_t Magic;
  int32_t Compute, Scale, PointerMode, TransA, TransB;
  uint32_t Epilogue;
  int32_t BiasType;
  const void *Bias;
};

struct Layout {
  uint32_t Magic;
  uint32_t Type;
  int32_t Order, Batch;
  uint64_t Rows, Cols;
  int64_t Ld, BatchOffset;
};

struct Pref {
  uint32_t Magic;
  uint32_t Align[4]; // A, B, C, D
  uint64_t MaxWorkspace;
};

/// What the heuristic found, in cublasLtMatmulAlgo_t's 64 bytes: the
/// alignments and workspace it assumed, and a digest of the descriptors.
struct Algo {
  uint32_t Magic;
  uint32_t Align[5]; // A, B, C, D, bias
  uint64_t Workspace;
  uint64_t Digest;
};

static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t) &&
                  sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t) &&
                  sizeof(Pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t) &&
                  sizeof(Algo) <= sizeof(cublasLtMatmulAlgo_t),
              "the emulation's objects fit cuBLASLt's");

Desc *descOf(cublasLtMatmulDesc_t D) {
  auto *X = D ? reinterpret_cast<Desc *>(D->data) : nullptr;
  return X && X->Magic == kDescMagic ? X : nullptr;
}

Layout *layoutOf(cublasLtMatrixLayout_t L) {
  auto *X = L ? reinterpret_cast<Layout *>(L->data) : nullptr;
  return X && X->Magic == kLayoutMagic ? X : nullptr;
}

Pref *prefOf(cublasLtMatmulPreference_t P) {
  auto *X = P ? reinterpret_cast<Pref *>(P->data) : nullptr;
  return X && X->Magic == kPrefMagic ? X : nullptr;
}

bool validHandle(cublasLtHandle_t H) { return H && H->Magic == kHandleMagic; }

/// Traces "cublaslt-error <why>" and returns `S`.
cublasStatus_t refuse(cublasStatus_t S, const char *Fmt, ...)
    __attribute__((format(printf, 2, 3)));
cublasStatus_t refuse(cublasStatus_t S, const char *Fmt, ...) {
  char Why[512];
  va_list Args;
  va_start(Args, Fmt);
  std::vsnprintf(Why, sizeof(Why), Fmt, Args);
  va_end(Args);
  fakeCudaTrace("cublaslt-error %s", Why);
  return S;
}

size_t typeSize(uint32_t T) {
  switch (T) {
  case CUDA_R_16F:
  case CUDA_R_16BF:
    return 2;
  case CUDA_R_32F:
    return 4;
  case CUDA_R_64F:
    return 8;
  default:
    return 0;
  }
}

/// Copies the attribute value of exactly `Size` bytes into `Out`; false
/// (traced) for another size.
template <typename T>
bool take(T &Out, const void *Buf, size_t Size, const char *What) {
  if (!Buf || Size != sizeof(T)) {
    refuse(CUBLAS_STATUS_INVALID_VALUE,
           "%s: attribute of %zu bytes, expected %zu", What, Size, sizeof(T));
    return false;
  }
  std::memcpy(&Out, Buf, sizeof(T));
  return true;
}

uint64_t mix(uint64_t H, uint64_t V) {
  H ^= V + 0x9e3779b97f4a7c15ull + (H << 6) + (H >> 2);
  return H;
}

/// A digest of what an algorithm depends on (not the pointers).
uint64_t digest(const Desc &D, const Layout *const (&L)[4]) {
  uint64_t H = mix(mix(mix(0, uint64_t(D.Compute)), uint64_t(D.Scale)),
                   uint64_t(D.TransA));
  H = mix(mix(mix(H, uint64_t(D.TransB)), D.Epilogue), uint64_t(D.BiasType));
  for (const Layout *X : L)
    H = mix(mix(mix(mix(mix(mix(mix(H, X->Type), uint64_t(X->Order)), X->Rows),
                        X->Cols),
                    uint64_t(X->Ld)),
                uint64_t(X->Batch)),
            uint64_t(X->BatchOffset));
  return H;
}

/// The largest power of two (at most 256) dividing the address.
uint32_t alignmentOf(const void *P) {
  uint64_t Bits = uint64_t(reinterpret_cast<uintptr_t>(P)) | 256;
  return uint32_t(Bits & (~Bits + 1));
}

bool hasBias(uint32_t E) {
  return E == CUBLASLT_EPILOGUE_BIAS || E == CUBLASLT_EPILOGUE_RELU_BIAS ||
         E == CUBLASLT_EPILOGUE_GELU_BIAS;
}

/// Checks that the descriptors describe a product the emulation (and
/// cuBLASLt) computes: types, ops, shapes, leading dimensions, batches.
/// Sets `K`, the inner size.
cublasStatus_t checkProblem(const Desc &D, const Layout *const (&L)[4],
                            uint64_t &K) {
  static const char *Names[4] = {"A", "B", "C", "D"};
  for (int I = 0; I < 4; ++I) {
    const Layout &X = *L[I];
    if (X.Order != CUBLASLT_ORDER_COL)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                    "layout %s: order %d (the emulation reads ORDER_COL only)",
                    Names[I], X.Order);
    if (X.Ld < 1 || uint64_t(X.Ld) < X.Rows)
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "layout %s: ld %lld < rows %llu", Names[I], (long long)X.Ld,
                    (unsigned long long)X.Rows);
    // A and B of one type, C and D of one type.
    const Layout &Like = I < 2 ? *L[0] : *L[3];
    if (X.Type != Like.Type)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                    "layout %s: type %u, %s's is %u", Names[I], X.Type,
                    I < 2 ? "A" : "D", Like.Type);
    if (X.Batch != L[3]->Batch || X.Batch < 1)
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "layout %s: batch count %d, D's is %d", Names[I], X.Batch,
                    L[3]->Batch);
  }
  uint32_t T = L[0]->Type, Out = L[3]->Type;
  bool Ok = false;
  if (T != Out)
    Ok = (T == CUDA_R_16F || T == CUDA_R_16BF) && Out == CUDA_R_32F &&
         D.Scale == CUDA_R_32F && D.Compute == CUBLAS_COMPUTE_32F;
  else if (T == CUDA_R_32F)
    Ok = D.Scale == CUDA_R_32F && (D.Compute == CUBLAS_COMPUTE_32F ||
                                   D.Compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                                   D.Compute == CUBLAS_COMPUTE_32F_FAST_16BF);
  else if (T == CUDA_R_64F)
    Ok = D.Scale == CUDA_R_64F && D.Compute == CUBLAS_COMPUTE_64F;
  else if (T == CUDA_R_16F || T == CUDA_R_16BF)
    Ok = D.Scale == CUDA_R_32F && D.Compute == CUBLAS_COMPUTE_32F;
  if (!Ok)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  "A of type %u, D of type %u with compute type %d and scale "
                  "type %d",
                  T, Out, D.Compute, D.Scale);
  if ((D.TransA != CUBLAS_OP_N && D.TransA != CUBLAS_OP_T) ||
      (D.TransB != CUBLAS_OP_N && D.TransB != CUBLAS_OP_T))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "transa %d transb %d", D.TransA,
                  D.TransB);
  if (D.PointerMode != 0)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "pointer mode %d",
                  D.PointerMode);
  switch (D.Epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
  case CUBLASLT_EPILOGUE_RELU:
  case CUBLASLT_EPILOGUE_GELU:
  case CUBLASLT_EPILOGUE_BIAS:
  case CUBLASLT_EPILOGUE_RELU_BIAS:
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    break;
  default:
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "epilogue %u", D.Epilogue);
  }
  if (hasBias(D.Epilogue) && D.BiasType != -1 && uint32_t(D.BiasType) != Out)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  "bias type %d with D of type %u (the bias has D's type)",
                  D.BiasType, Out);
  const Layout &A = *L[0], &B = *L[1], &C = *L[2], &Dl = *L[3];
  uint64_t AR = D.TransA == CUBLAS_OP_N ? A.Rows : A.Cols;
  uint64_t AC = D.TransA == CUBLAS_OP_N ? A.Cols : A.Rows;
  uint64_t BR = D.TransB == CUBLAS_OP_N ? B.Rows : B.Cols;
  uint64_t BC = D.TransB == CUBLAS_OP_N ? B.Cols : B.Rows;
  if (AR != Dl.Rows || BC != Dl.Cols || AC != BR || C.Rows != Dl.Rows ||
      C.Cols != Dl.Cols)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "shapes: op(A) %llux%llu, op(B) %llux%llu, C %llux%llu, D "
                  "%llux%llu",
                  (unsigned long long)AR, (unsigned long long)AC,
                  (unsigned long long)BR, (unsigned long long)BC,
                  (unsigned long long)C.Rows, (unsigned long long)C.Cols,
                  (unsigned long long)Dl.Rows, (unsigned long long)Dl.Cols);
  K = AC;
  return CUBLAS_STATUS_SUCCESS;
}

/// [lo, hi) in elements of every batch of X, from its pointer.
void extent(const Layout &X, int64_t &Lo, int64_t &Hi) {
  int64_t Last = int64_t(X.Batch - 1) * X.BatchOffset;
  int64_t Span = X.Cols == 0 || X.Rows == 0
                     ? 0
                     : int64_t(X.Cols - 1) * X.Ld + int64_t(X.Rows);
  Lo = Last < 0 ? Last : 0;
  Hi = (Last > 0 ? Last : 0) + Span;
}

bool onDevice(const void *P, int64_t Lo, int64_t Hi, size_t Elem) {
  const char *C = static_cast<const char *>(P) + Lo * int64_t(Elem);
  return Hi <= Lo || fakeCudaIsDevicePointer(C, size_t(Hi - Lo) * Elem);
}

double load(uint32_t T, const void *Base, int64_t I) {
  switch (T) {
  case CUDA_R_16F:
    return meshrt::halfToFloat(static_cast<const uint16_t *>(Base)[I]);
  case CUDA_R_16BF:
    return meshrt::bfloat16ToFloat(static_cast<const uint16_t *>(Base)[I]);
  case CUDA_R_32F:
    return static_cast<const float *>(Base)[I];
  default:
    return static_cast<const double *>(Base)[I];
  }
}

void store(uint32_t T, void *Base, int64_t I, double V) {
  switch (T) {
  case CUDA_R_16F:
    static_cast<uint16_t *>(Base)[I] = meshrt::floatToHalf(float(V));
    return;
  case CUDA_R_16BF:
    static_cast<uint16_t *>(Base)[I] = meshrt::floatToBFloat16(float(V));
    return;
  case CUDA_R_32F:
    static_cast<float *>(Base)[I] = float(V);
    return;
  default:
    static_cast<double *>(Base)[I] = V;
  }
}

/// An f32 input as the compute type reads it: rounded to TF32 (10 mantissa
/// bits) or bfloat16, to nearest even, for the _FAST_ types.
double input(double V, int32_t Compute) {
  if (Compute == CUBLAS_COMPUTE_32F_FAST_16BF)
    return meshrt::bfloat16ToFloat(meshrt::floatToBFloat16(float(V)));
  if (Compute != CUBLAS_COMPUTE_32F_FAST_TF32)
    return V;
  uint32_t U;
  float F = float(V);
  std::memcpy(&U, &F, 4);
  if ((U & 0x7f800000u) != 0x7f800000u) // Finite: round at bit 13.
    U = (U + 0xfffu + ((U >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&F, &U, 4);
  return F;
}

} // namespace

//===----------------------------------------------------------------------===//
// The API
//===----------------------------------------------------------------------===//

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *Out) {
  if (!Out)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtCreate: null");
  *Out = new cublasLtContext{kHandleMagic};
  fakeCudaTrace("cublaslt-create");
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t H) {
  if (!validHandle(H))
    return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy: bad handle");
  H->Magic = 0;
  delete H;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

const char *cublasLtGetStatusName(cublasStatus_t S) {
  return lt::statusName(S);
}

const char *cublasLtGetStatusString(cublasStatus_t S) {
  switch (S) {
  case CUBLAS_STATUS_SUCCESS:
    return "success (emulated cuBLASLt)";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid value was used as an argument (emulated cuBLASLt)";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the functionality requested is not supported (emulated cuBLASLt)";
  default:
    return "error (emulated cuBLASLt)";
  }
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *Out,
                                        cublasComputeType_t Compute,
                                        cudaDataType_t Scale) {
  if (!Out)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulDescCreate: null");
  auto *O = new cublasLtMatmulDescOpaque_t();
  new (O->data) Desc{kDescMagic,
                     int32_t(Compute),
                     int32_t(Scale),
                     0,
                     int32_t(CUBLAS_OP_N),
                     int32_t(CUBLAS_OP_N),
                     uint32_t(CUBLASLT_EPILOGUE_DEFAULT),
                     -1,
                     nullptr};
  *Out = O;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t D) {
  Desc *X = descOf(D);
  if (!X)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulDescDestroy: bad descriptor");
  X->Magic = 0;
  delete D;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t D,
                                              cublasLtMatmulDescAttributes_t A,
                                              const void *Buf, size_t Size) {
  Desc *X = descOf(D);
  if (!X)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulDescSetAttribute: bad descriptor");
  bool Ok;
  switch (A) {
  case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
    Ok = take(X->Compute, Buf, Size, "COMPUTE_TYPE");
    break;
  case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
    Ok = take(X->Scale, Buf, Size, "SCALE_TYPE");
    break;
  case CUBLASLT_MATMUL_DESC_POINTER_MODE:
    Ok = take(X->PointerMode, Buf, Size, "POINTER_MODE");
    break;
  case CUBLASLT_MATMUL_DESC_TRANSA:
    Ok = take(X->TransA, Buf, Size, "TRANSA");
    break;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    Ok = take(X->TransB, Buf, Size, "TRANSB");
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    Ok = take(X->Epilogue, Buf, Size, "EPILOGUE");
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    Ok = take(X->Bias, Buf, Size, "BIAS_POINTER");
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    Ok = take(X->BiasType, Buf, Size, "BIAS_DATA_TYPE");
    break;
  default:
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  "matmul descriptor attribute %d (not emulated)", int(A));
  }
  return Ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *Out,
                                          cudaDataType Type, uint64_t Rows,
                                          uint64_t Cols, int64_t Ld) {
  if (!Out)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatrixLayoutCreate: null");
  if (!typeSize(uint32_t(Type)))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "layout type %d", int(Type));
  auto *O = new cublasLtMatrixLayoutOpaque_t();
  new (O->data) Layout{kLayoutMagic,
                       uint32_t(Type),
                       int32_t(CUBLASLT_ORDER_COL),
                       1,
                       Rows,
                       Cols,
                       Ld,
                       0};
  *Out = O;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t L) {
  Layout *X = layoutOf(L);
  if (!X)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatrixLayoutDestroy: bad layout");
  X->Magic = 0;
  delete L;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t L,
                                 cublasLtMatrixLayoutAttribute_t A,
                                 const void *Buf, size_t Size) {
  Layout *X = layoutOf(L);
  if (!X)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatrixLayoutSetAttribute: bad layout");
  bool Ok;
  switch (A) {
  case CUBLASLT_MATRIX_LAYOUT_TYPE:
    Ok = take(X->Type, Buf, Size, "LAYOUT_TYPE");
    break;
  case CUBLASLT_MATRIX_LAYOUT_ORDER:
    Ok = take(X->Order, Buf, Size, "LAYOUT_ORDER");
    break;
  case CUBLASLT_MATRIX_LAYOUT_ROWS:
    Ok = take(X->Rows, Buf, Size, "LAYOUT_ROWS");
    break;
  case CUBLASLT_MATRIX_LAYOUT_COLS:
    Ok = take(X->Cols, Buf, Size, "LAYOUT_COLS");
    break;
  case CUBLASLT_MATRIX_LAYOUT_LD:
    Ok = take(X->Ld, Buf, Size, "LAYOUT_LD");
    break;
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    Ok = take(X->Batch, Buf, Size, "LAYOUT_BATCH_COUNT");
    break;
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    Ok = take(X->BatchOffset, Buf, Size, "LAYOUT_STRIDED_BATCH_OFFSET");
    break;
  default:
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  "matrix layout attribute %d (not emulated)", int(A));
  }
  return Ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *Out) {
  if (!Out)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulPreferenceCreate: null");
  auto *O = new cublasLtMatmulPreferenceOpaque_t();
  // cublasLt.h's defaults: no workspace, 256-byte alignment.
  new (O->data) Pref{kPrefMagic, {256, 256, 256, 256}, 0};
  *Out = O;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t P) {
  Pref *X = prefOf(P);
  if (!X)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulPreferenceDestroy: bad preference");
  X->Magic = 0;
  delete P;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t P,
                                     cublasLtMatmulPreferenceAttributes_t A,
                                     const void *Buf, size_t Size) {
  Pref *X = prefOf(P);
  if (!X)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulPreferenceSetAttribute: bad preference");
  bool Ok;
  switch (A) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    Ok = take(X->MaxWorkspace, Buf, Size, "MAX_WORKSPACE_BYTES");
    break;
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    Ok = take(X->Align[A - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], Buf,
              Size, "MIN_ALIGNMENT_*_BYTES");
    break;
  default:
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  "preference attribute %d (not emulated)", int(A));
  }
  return Ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

/// One algorithm, which needs the whole workspace the preference allows and
/// the alignments it states (the bias's from its pointer now).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t H, cublasLtMatmulDesc_t OpDesc, cublasLtMatrixLayout_t A,
    cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
    cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t P, int Requested,
    cublasLtMatmulHeuristicResult_t Results[], int *Returned) {
  Desc *X = descOf(OpDesc);
  Pref *Pr = prefOf(P);
  const Layout *L[4] = {layoutOf(A), layoutOf(B), layoutOf(C), layoutOf(D)};
  if (!validHandle(H) || !X || !Pr || !L[0] || !L[1] || !L[2] || !L[3] ||
      Requested < 1 || !Results || !Returned)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmulAlgoGetHeuristic: bad argument");
  uint64_t K = 0;
  if (cublasStatus_t S = checkProblem(*X, L, K))
    return S;
  fakeCudaTrace("gemm plan-heuristic m=%llu n=%llu k=%llu",
                (unsigned long long)L[3]->Rows, (unsigned long long)L[3]->Cols,
                (unsigned long long)K);
  std::memset(Results, 0, sizeof(cublasLtMatmulHeuristicResult_t));
  Algo G{kAlgoMagic,
         {Pr->Align[0], Pr->Align[1], Pr->Align[2], Pr->Align[3],
          hasBias(X->Epilogue) ? alignmentOf(X->Bias) : 1u},
         Pr->MaxWorkspace,
         digest(*X, L)};
  std::memcpy(Results[0].algo.data, &G, sizeof(G));
  Results[0].workspaceSize = size_t(Pr->MaxWorkspace);
  Results[0].state = CUBLAS_STATUS_SUCCESS;
  Results[0].wavesCount = 1.0f;
  *Returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t H, cublasLtMatmulDesc_t OpDesc,
                              const void *Alpha, const void *APtr,
                              cublasLtMatrixLayout_t ADesc, const void *BPtr,
                              cublasLtMatrixLayout_t BDesc, const void *Beta,
                              const void *CPtr, cublasLtMatrixLayout_t CDesc,
                              void *DPtr, cublasLtMatrixLayout_t DDesc,
                              const cublasLtMatmulAlgo_t *AlgoIn,
                              void *Workspace, size_t WorkspaceBytes,
                              cudaStream_t Stream) {
  Desc *X = descOf(OpDesc);
  const Layout *L[4] = {layoutOf(ADesc), layoutOf(BDesc), layoutOf(CDesc),
                        layoutOf(DDesc)};
  if (!validHandle(H) || !X || !L[0] || !L[1] || !L[2] || !L[3])
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmul: bad handle or descriptor");
  if (!Alpha || !Beta)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmul: null alpha or beta");
  uint64_t K = 0;
  if (cublasStatus_t S = checkProblem(*X, L, K))
    return S;
  // Without an algorithm cuBLASLt asks its heuristic with the default
  // preference: no workspace, 256-byte alignment.
  Algo G{kAlgoMagic, {256, 256, 256, 256, 1}, 0, digest(*X, L)};
  if (AlgoIn) {
    std::memcpy(&G, AlgoIn->data, sizeof(G));
    if (G.Magic != kAlgoMagic)
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatmul: the algorithm is not one the heuristic "
                    "returned");
    if (G.Digest != digest(*X, L))
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatmul: the algorithm was found for other "
                    "descriptors");
  }
  const Layout &A = *L[0], &B = *L[1], &C = *L[2], &D = *L[3];
  uint32_t T = D.Type, In = A.Type;
  size_t E = typeSize(T);
  bool Bias = hasBias(X->Epilogue);
  if (Bias && !X->Bias)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmul: a bias epilogue without a bias pointer");
  if (CPtr == DPtr && (C.Ld != D.Ld || C.BatchOffset != D.BatchOffset))
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmul: C and D in place with different layouts");
  // Memory: every matrix of every batch, the bias, the workspace, inside
  // live device allocations.
  const void *Ptr[4] = {APtr, BPtr, CPtr, DPtr};
  static const char *Names[4] = {"A", "B", "C", "D"};
  for (int I = 0; I < 4; ++I) {
    int64_t Lo, Hi;
    extent(*L[I], Lo, Hi);
    size_t Elem = typeSize(L[I]->Type);
    if (!Ptr[I] || !onDevice(Ptr[I], Lo, Hi, Elem))
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatmul: %s (%p, elements [%lld, %lld)) is not in "
                    "one live device allocation",
                    Names[I], Ptr[I], (long long)Lo, (long long)Hi);
    for (int32_t Bt = 0; Bt < L[I]->Batch; ++Bt) {
      const char *At = static_cast<const char *>(Ptr[I]) +
                       int64_t(Bt) * L[I]->BatchOffset * int64_t(Elem);
      if (alignmentOf(At) < G.Align[I])
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                      "cublasLtMatmul: %s of batch %d at %p is %u-byte "
                      "aligned, the algorithm needs %u",
                      Names[I], Bt, static_cast<const void *>(At),
                      alignmentOf(At), G.Align[I]);
    }
  }
  if (Bias) {
    if (!onDevice(X->Bias, 0, int64_t(D.Rows), E))
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    "cublasLtMatmul: the bias (%p, %llu elements) is not in "
                    "one live device allocation",
                    X->Bias, (unsigned long long)D.Rows);
    if (alignmentOf(X->Bias) < G.Align[4])
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                    "cublasLtMatmul: the bias at %p is %u-byte aligned, the "
                    "algorithm needs %u",
                    X->Bias, alignmentOf(X->Bias), G.Align[4]);
  }
  if (WorkspaceBytes < G.Workspace)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmul: a workspace of %zu bytes, the algorithm "
                  "needs %llu",
                  WorkspaceBytes, (unsigned long long)G.Workspace);
  if (WorkspaceBytes > 0 &&
      (!Workspace || !fakeCudaIsDevicePointer(Workspace, WorkspaceBytes)))
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "cublasLtMatmul: the workspace (%p, %zu bytes) is not in one "
                  "live device allocation",
                  Workspace, WorkspaceBytes);

  // The product, on the host.
  double Al, Be;
  if (X->Scale == CUDA_R_64F) {
    Al = *static_cast<const double *>(Alpha);
    Be = *static_cast<const double *>(Beta);
  } else {
    Al = *static_cast<const float *>(Alpha);
    Be = *static_cast<const float *>(Beta);
  }
  fakeCudaAccess(1);
  for (int32_t Bt = 0; Bt < D.Batch; ++Bt) {
    int64_t AO = Bt * A.BatchOffset, BO = Bt * B.BatchOffset,
            CO = Bt * C.BatchOffset, DO = Bt * D.BatchOffset;
    for (uint64_t I = 0; I < D.Rows; ++I)
      for (uint64_t J = 0; J < D.Cols; ++J) {
        double Acc = 0;
        for (uint64_t P = 0; P < K; ++P) {
          int64_t AI = X->TransA == CUBLAS_OP_N ? int64_t(I + P * A.Ld)
                                                : int64_t(P + I * A.Ld);
          int64_t BI = X->TransB == CUBLAS_OP_N ? int64_t(P + J * B.Ld)
                                                : int64_t(J + P * B.Ld);
          Acc += input(load(In, APtr, AO + AI), X->Compute) *
                 input(load(In, BPtr, BO + BI), X->Compute);
        }
        double V = Al * Acc;
        if (Be != 0)
          V += Be * load(T, CPtr, CO + int64_t(I + J * C.Ld));
        if (Bias)
          V += load(T, X->Bias, int64_t(I));
        if (X->Epilogue == CUBLASLT_EPILOGUE_RELU ||
            X->Epilogue == CUBLASLT_EPILOGUE_RELU_BIAS)
          V = V > 0 ? V : 0;
        else if (X->Epilogue == CUBLASLT_EPILOGUE_GELU ||
                 X->Epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
          V = 0.5 * V *
              (1 + std::tanh(0.7978845608028654 * (V + 0.044715 * V * V * V)));
        store(T, DPtr, DO + int64_t(I + J * D.Ld), V);
      }
  }
  fakeCudaAccess(0);
  fakeCudaTrace("gemm m=%llu n=%llu k=%llu batch=%d transa=%d transb=%d "
                "epilogue=%u compute=%d atype=%u dtype=%u stream=s%d "
                "workspace=%zu",
                (unsigned long long)D.Rows, (unsigned long long)D.Cols,
                (unsigned long long)K, D.Batch, X->TransA, X->TransB,
                X->Epilogue, X->Compute, In, T, fakeCudaStreamId(Stream),
                WorkspaceBytes);
  // The work "runs" on the stream: the next two host polls see it busy.
  fakeCudaMarkBusy(Stream, 2);
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
