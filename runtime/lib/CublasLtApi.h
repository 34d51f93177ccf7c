//===- CublasLtApi.h - What the runtime uses of cuBLASLt --------*- C++ -*-===//
//
// libcublasLt is loaded with dlopen at the first GPU product (GpuGemm.cpp),
// and the runtime is built without its headers: these are the few types,
// enum values and entry points it uses, with the values and layouts of
// cublasLt.h, cublas_api.h and library_types.h. The emulated libcublasLt of
// the tests includes both this file and cublasLt.h, and checks every value
// and size here against the toolkit's header at compile time
// (runtime/test/emulated/FakeCublasLt.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_CUBLASLTAPI_H
#define MESHRT_LIB_CUBLASLTAPI_H

#include <cstddef>
#include <cstdint>

namespace meshrt {
namespace detail {
namespace lt {

// Opaque handles: pointers the library hands out (cublasLtHandle_t,
// cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t).
using Handle = void *;
using MatmulDesc = void *;
using Layout = void *;
using Preference = void *;

/// cublasLtMatmulAlgo_t: semi-opaque, filled in by the heuristic.
struct MatmulAlgo {
  uint64_t Data[8];
};

/// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  MatmulAlgo Algo;
  size_t WorkspaceSize;
  int State; // cublasStatus_t
  float WavesCount;
  int Reserved[4];
};

// cublasStatus_t (cublas_api.h).
enum : int {
  StatusSuccess = 0,
  StatusNotInitialized = 1,
  StatusAllocFailed = 3,
  StatusInvalidValue = 7,
  StatusArchMismatch = 8,
  StatusMappingError = 11,
  StatusExecutionFailed = 13,
  StatusInternalError = 14,
  StatusNotSupported = 15,
  StatusLicenseError = 16,
};

// cudaDataType_t (library_types.h).
enum : int { R16F = 2, R16BF = 14, R32F = 0, R64F = 1 };

// cublasComputeType_t (cublas_api.h).
enum : int {
  Compute32F = 68,
  Compute32FFastTF32 = 77,
  Compute32FFast16BF = 75,
  Compute64F = 70,
};

// cublasOperation_t (cublas_api.h).
enum : int { OpN = 0, OpT = 1 };

// cublasLtOrder_t.
enum : int { OrderCol = 0 };

// cublasLtMatrixLayoutAttribute_t.
enum : int {
  LayoutType = 0,
  LayoutOrder = 1,
  LayoutRows = 2,
  LayoutCols = 3,
  LayoutLd = 4,
  LayoutBatchCount = 5,
  LayoutStridedBatchOffset = 6,
};

// cublasLtMatmulDescAttributes_t.
enum : int {
  DescComputeType = 0,
  DescScaleType = 1,
  DescTransA = 3,
  DescTransB = 4,
  DescEpilogue = 7,
  DescBiasPointer = 8,
  DescBiasDataType = 26,
};

// cublasLtEpilogue_t.
enum : uint32_t {
  EpilogueDefault = 1,
  EpilogueRelu = 2,
  EpilogueBias = 4,
  EpilogueReluBias = 6,
  EpilogueGelu = 32,
  EpilogueGeluBias = 36,
};

// cublasLtMatmulPreferenceAttributes_t.
enum : int {
  PrefMaxWorkspaceBytes = 1,
  PrefMinAlignmentABytes = 5,
  PrefMinAlignmentBBytes = 6,
  PrefMinAlignmentCBytes = 7,
  PrefMinAlignmentDBytes = 8,
};

// The entry points (enums are int-sized in the C ABI).
using CreateFn = int (*)(Handle *);
using DestroyFn = int (*)(Handle);
using GetVersionFn = size_t (*)();
using GetStatusStringFn = const char *(*)(int);
using MatmulDescCreateFn = int (*)(MatmulDesc *, int ComputeType,
                                   int ScaleType);
using MatmulDescDestroyFn = int (*)(MatmulDesc);
using MatmulDescSetAttributeFn = int (*)(MatmulDesc, int Attr, const void *,
                                         size_t);
using MatrixLayoutCreateFn = int (*)(Layout *, int Type, uint64_t Rows,
                                     uint64_t Cols, int64_t Ld);
using MatrixLayoutDestroyFn = int (*)(Layout);
using MatrixLayoutSetAttributeFn = int (*)(Layout, int Attr, const void *,
                                           size_t);
using MatmulPreferenceCreateFn = int (*)(Preference *);
using MatmulPreferenceDestroyFn = int (*)(Preference);
using MatmulPreferenceSetAttributeFn = int (*)(Preference, int Attr,
                                               const void *, size_t);
using MatmulAlgoGetHeuristicFn = int (*)(Handle, MatmulDesc, Layout A, Layout B,
                                         Layout C, Layout D, Preference,
                                         int Requested,
                                         HeuristicResult *Results,
                                         int *Returned);
using MatmulFn = int (*)(Handle, MatmulDesc, const void *Alpha, const void *A,
                         Layout ADesc, const void *B, Layout BDesc,
                         const void *Beta, const void *C, Layout CDesc, void *D,
                         Layout DDesc, const MatmulAlgo *Algo, void *Workspace,
                         size_t WorkspaceBytes, void *Stream);

/// The name of a cublasStatus_t ("CUBLAS_STATUS_INVALID_VALUE").
inline const char *statusName(int S) {
  switch (S) {
  case StatusSuccess:
    return "CUBLAS_STATUS_SUCCESS";
  case StatusNotInitialized:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case StatusAllocFailed:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case StatusInvalidValue:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case StatusArchMismatch:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case StatusMappingError:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case StatusExecutionFailed:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case StatusInternalError:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case StatusNotSupported:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case StatusLicenseError:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  default:
    return "CUBLAS_STATUS_?";
  }
}

} // namespace lt
} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_CUBLASLTAPI_H
