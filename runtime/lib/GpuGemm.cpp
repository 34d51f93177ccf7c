//===- GpuGemm.cpp - Contractions of compiled GPU code through cuBLASLt ---===//
//
// meshrt_gpu_gemm: C[b] = act(A[b] * B[b] (+ C[b]) + bias) over strided
// device operands, enqueued on a stream by cuBLASLt, which libmeshrt loads
// with dlopen at the first product (MESHRT_CUBLASLT_LIBRARY, else
// libcublasLt.so.13, else libcublasLt.so) and declares itself (CublasLtApi.h):
// no cuBLAS header or library is needed to build it, and a machine without
// the library runs everything else.
//
// Layouts: cuBLASLt reads column-major matrices (ORDER_COL) with a leading
// dimension, each optionally transposed. Our operands are row-major
// products C[m, n] = A[m, k] B[k, n] with any strides, so:
//  * C with a unit column stride (row-major, ld = its row stride) is taken
//    as D' = C^T (n x m, column-major) = B^T A^T: cuBLASLt's A is our B and
//    its B is our A. An operand with a unit column stride read column-major
//    is already its transpose (op N); one with a unit row stride is itself
//    (op T).
//  * C with a unit row stride (column-major, ld = its column stride) is
//    D = A B directly, with the analogous ops.
// A dim of extent 1 may have any stride (it is never stepped over). Batches
// are strided batches (a batch stride of 0 broadcasts that operand). A bias
// is a vector along D's rows, so it needs the first form (one value per
// column of our C).
//
// Plans: descriptors, four layouts, a preference and the heuristic's
// algorithm for one (dtype, sizes, strides, options, pointer alignments)
// key. A call site keeps the last plan it used in its slot and reuses it
// when the key is equal (no allocation, no lock); otherwise the process-wide
// map gives (or makes) the plan for the key, under a mutex. Plan objects are
// never deleted, so a slot never dangles: meshrt_finalize destroys their
// descriptors and frees the workspace, and bumps a generation that makes the
// next call remake them. Alignment is part of the key because cuBLASLt's
// heuristic assumes 256-byte aligned matrices unless told otherwise
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), and views into a buffer (or
// an odd batch stride) are less aligned.
//
// Workspace: one of 32 MiB per device, allocated on the shared stream (the
// stream-ordered pool, as mgpuMemAlloc does) at the first product there,
// and freed in stream order at meshrt_finalize. A product on another stream
// uses no workspace (the workspace may not be shared by two streams that
// can run at once), with a plan of its own.
//
//===----------------------------------------------------------------------===//

#include "GpuGemm.h"

#include "meshrt/Error.h"

#include <string>

using namespace meshrt;
using namespace meshrt::detail;

#if MESHRT_HAVE_NCCL

#include "CublasLtApi.h"
#include "DynamicLibrary.h"
#include "Gpu.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;
constexpr int64_t kMaxInt32 = 0x7fffffff;

//===----------------------------------------------------------------------===//
// Loading libcublasLt
//===----------------------------------------------------------------------===//

struct LtApi {
  lt::CreateFn Create = nullptr;
  lt::DestroyFn Destroy = nullptr;
  lt::GetVersionFn GetVersion = nullptr;
  lt::MatmulDescCreateFn MatmulDescCreate = nullptr;
  lt::MatmulDescDestroyFn MatmulDescDestroy = nullptr;
  lt::MatmulDescSetAttributeFn MatmulDescSetAttribute = nullptr;
  lt::MatrixLayoutCreateFn MatrixLayoutCreate = nullptr;
  lt::MatrixLayoutDestroyFn MatrixLayoutDestroy = nullptr;
  lt::MatrixLayoutSetAttributeFn MatrixLayoutSetAttribute = nullptr;
  lt::MatmulPreferenceCreateFn MatmulPreferenceCreate = nullptr;
  lt::MatmulPreferenceDestroyFn MatmulPreferenceDestroy = nullptr;
  lt::MatmulPreferenceSetAttributeFn MatmulPreferenceSetAttribute = nullptr;
  lt::MatmulAlgoGetHeuristicFn MatmulAlgoGetHeuristic = nullptr;
  lt::MatmulFn Matmul = nullptr;
  /// Optional: only words the status in messages.
  lt::GetStatusStringFn GetStatusString = nullptr;
  size_t Version = 0;
  std::string Name; // The library that was opened.
  bool Loaded = false;
  std::string Error; // Why loading failed.
};

std::string withoutTrailingSeparator(std::string S) {
  while (!S.empty() && (S.back() == ' ' || S.back() == ';'))
    S.pop_back();
  return S;
}

std::string versionString(size_t V) {
  return std::to_string(V / 10000) + "." + std::to_string(V / 100 % 100) + "." +
         std::to_string(V % 100);
}

/// Opens libcublasLt and binds the entry points used; sets `L.Loaded`, or
/// `L.Error` to why that failed (naming the library).
void loadLt(LtApi &L) {
  std::string Tried;
  void *Lib = nullptr;
  if (const char *E = std::getenv("MESHRT_CUBLASLT_LIBRARY"); E && *E) {
    Lib = dlopen(E, RTLD_NOW | RTLD_LOCAL);
    if (Lib)
      L.Name = E;
    else
      Tried = std::string("MESHRT_CUBLASLT_LIBRARY=") + E + ": " + dlerror();
  } else {
    for (const char *N : {"libcublasLt.so.13", "libcublasLt.so"}) {
      Lib = dlopen(N, RTLD_NOW | RTLD_LOCAL);
      if (Lib) {
        L.Name = N;
        break;
      }
      Tried += std::string(Tried.empty() ? "" : "; ") + N + ": " + dlerror();
    }
  }
  if (!Lib) {
    L.Error = "cannot load cuBLASLt (" + Tried +
              "); GPU products need libcublasLt from the CUDA toolkit, or "
              "MESHRT_CUBLASLT_LIBRARY naming it";
    return;
  }
  std::string Missing;
  bind(Lib, "cublasLtCreate", L.Create, Missing);
  bind(Lib, "cublasLtDestroy", L.Destroy, Missing);
  bind(Lib, "cublasLtGetVersion", L.GetVersion, Missing);
  bind(Lib, "cublasLtMatmulDescCreate", L.MatmulDescCreate, Missing);
  bind(Lib, "cublasLtMatmulDescDestroy", L.MatmulDescDestroy, Missing);
  bind(Lib, "cublasLtMatmulDescSetAttribute", L.MatmulDescSetAttribute,
       Missing);
  bind(Lib, "cublasLtMatrixLayoutCreate", L.MatrixLayoutCreate, Missing);
  bind(Lib, "cublasLtMatrixLayoutDestroy", L.MatrixLayoutDestroy, Missing);
  bind(Lib, "cublasLtMatrixLayoutSetAttribute", L.MatrixLayoutSetAttribute,
       Missing);
  bind(Lib, "cublasLtMatmulPreferenceCreate", L.MatmulPreferenceCreate,
       Missing);
  bind(Lib, "cublasLtMatmulPreferenceDestroy", L.MatmulPreferenceDestroy,
       Missing);
  bind(Lib, "cublasLtMatmulPreferenceSetAttribute",
       L.MatmulPreferenceSetAttribute, Missing);
  bind(Lib, "cublasLtMatmulAlgoGetHeuristic", L.MatmulAlgoGetHeuristic,
       Missing);
  bind(Lib, "cublasLtMatmul", L.Matmul, Missing);
  std::string Optional;
  bind(Lib, "cublasLtGetStatusString", L.GetStatusString, Optional);
  if (!Missing.empty()) {
    L.Error = "the cuBLASLt library " + L.Name +
              " lacks what meshrt needs: " + withoutTrailingSeparator(Missing);
    return;
  }
  L.Version = L.GetVersion();
  // The epilogues with a bias type and the alignment preferences are
  // cuBLASLt 11's (CUDA 11).
  if (L.Version < 110000) {
    L.Error = "the cuBLASLt library " + L.Name + " is version " +
              versionString(L.Version) + "; meshrt needs 11.0 or later";
    return;
  }
  L.Loaded = true;
}

/// The library once loaded (whether that worked or not).
std::atomic<const LtApi *> LoadedLt{nullptr};

[[gnu::noinline]] const LtApi &loadLtOnce() {
  static LtApi *L = new LtApi; // Never destroyed: plans outlive statics.
  static std::once_flag Once;
  std::call_once(Once, [] {
    loadLt(*L);
    LoadedLt.store(L, std::memory_order_release);
  });
  return *L;
}

/// The library, loaded at the first product; throws if it cannot be.
const LtApi &library() {
  const LtApi *L = LoadedLt.load(std::memory_order_acquire);
  if (!L)
    L = &loadLtOnce();
  if (!L->Loaded)
    throw Error(MESHRT_ERROR_BACKEND, L->Error);
  return *L;
}

/// "cublasLtMatmul failed: CUBLAS_STATUS_INVALID_VALUE (..., code 7)".
[[noreturn]] void ltFail(int S, const std::string &Call) {
  const LtApi *L = LoadedLt.load(std::memory_order_acquire);
  const char *Str = L && L->GetStatusString ? L->GetStatusString(S) : nullptr;
  throw Error(MESHRT_ERROR_BACKEND,
              Call + " failed: " + lt::statusName(S) + " (" +
                  (Str && *Str ? std::string(Str) + ", " : std::string()) +
                  "code " + std::to_string(S) + ")");
}

inline void ltCheck(int S, const char *Call) {
  if (__builtin_expect(S != lt::StatusSuccess, 0))
    ltFail(S, Call);
}

//===----------------------------------------------------------------------===//
// The problem as cuBLASLt sees it
//===----------------------------------------------------------------------===//

size_t elementSize(meshrt_dtype T) {
  return T == MESHRT_F64 ? 8 : T == MESHRT_F32 ? 4 : 2;
}

/// How one of our matrices (Rows x Cols, element (i, j) at i * RowStride +
/// j * ColStride) can be read: by rows (unit column stride) or by columns,
/// with the stride between them.
struct View {
  bool RowMajor;
  int64_t Ld;
};

View viewOf(const char *Name, int64_t Rows, int64_t Cols, int64_t RowStride,
            int64_t ColStride) {
  // A dim of extent 1 may have any stride: it is never stepped over.
  bool UnitCol = ColStride == 1 || Cols == 1;
  bool UnitRow = RowStride == 1 || Rows == 1;
  if (UnitCol && (Rows == 1 || RowStride >= std::max<int64_t>(1, Cols)))
    return {true, Rows == 1 ? std::max<int64_t>(1, Cols) : RowStride};
  if (UnitRow && (Cols == 1 || ColStride >= std::max<int64_t>(1, Rows)))
    return {false, Cols == 1 ? std::max<int64_t>(1, Rows) : ColStride};
  std::string Strides = "(row stride " + std::to_string(RowStride) +
                        ", column stride " + std::to_string(ColStride) + ")";
  if (!UnitCol && !UnitRow)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string("operand ") + Name + " has no unit stride " +
                    Strides +
                    "; cuBLASLt reads a matrix by rows or by columns");
  std::string Shape = std::to_string(Rows) + "x" + std::to_string(Cols);
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
              std::string("operand ") + Name +
                  ": inconsistent leading dimension " + Strides + " for a " +
                  Shape + " matrix: " +
                  (UnitCol ? "read by rows, its row stride must be at least "
                             "its number of columns"
                           : "read by columns, its column stride must be at "
                             "least its number of rows"));
}

/// One of cuBLASLt's matrices: a column-major Rows x Cols layout with
/// leading dimension Ld, the op applied to it, its batch stride and where
/// its pointer comes from.
struct LtMatrix {
  uint64_t Rows = 0, Cols = 0;
  int64_t Ld = 1;
  int32_t Op = lt::OpN;
  int64_t BatchStride = 0;
};

/// Everything a plan is made from (derived from the key's fields only).
struct Problem {
  View CView{true, 1};
  bool Swap = false; // cuBLASLt's A is our B (row-major C).
  LtMatrix A, B, D;
  /// A's and B's type, and C's, D's and the bias's.
  int32_t InType = lt::R32F, OutType = lt::R32F;
  int32_t ComputeType = lt::Compute32F, ScaleType = lt::R32F;
  uint32_t Epilogue = lt::EpilogueDefault;
  uint32_t AlignA = 256, AlignB = 256, AlignD = 256;
};

int32_t ltType(meshrt_dtype T) {
  switch (T) {
  case MESHRT_F16:
    return lt::R16F;
  case MESHRT_BF16:
    return lt::R16BF;
  case MESHRT_F32:
    return lt::R32F;
  default:
    return lt::R64F;
  }
}

std::string dtypeName(meshrt_dtype T) {
  switch (T) {
  case MESHRT_F16:
    return "f16";
  case MESHRT_BF16:
    return "bf16";
  case MESHRT_F32:
    return "f32";
  default:
    return "f64";
  }
}

/// The product's dtypes as a phrase: "f32", or "f16 into f32".
std::string dtypesName(const GpuGemmArgs &G) {
  return G.Dtype == G.CDtype
             ? dtypeName(G.Dtype)
             : dtypeName(G.Dtype) + " into " + dtypeName(G.CDtype);
}

bool isGpuFloat(meshrt_dtype T) {
  return T == MESHRT_F16 || T == MESHRT_BF16 || T == MESHRT_F32 ||
         T == MESHRT_F64;
}

/// Sizes, dtypes, epilogue and precision: what needs no pointer.
void checkScalars(const GpuGemmArgs &G) {
  if (G.Batch < 0 || G.M < 0 || G.N < 0 || G.K < 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "negative size (batch " + std::to_string(G.Batch) + ", m " +
                    std::to_string(G.M) + ", n " + std::to_string(G.N) +
                    ", k " + std::to_string(G.K) + ")");
  if (!isGpuFloat(G.Dtype) || !isGpuFloat(G.CDtype))
    throw Error(
        MESHRT_ERROR_INVALID_ARGUMENT,
        "dtype " +
            std::to_string(int(isGpuFloat(G.Dtype) ? G.CDtype : G.Dtype)) +
            " (a GPU product takes f16, bf16, f32 or f64)");
  // cuBLASLt's mixed products: 16-bit inputs accumulated into f32 output.
  if (G.Dtype != G.CDtype &&
      !((G.Dtype == MESHRT_F16 || G.Dtype == MESHRT_BF16) &&
        G.CDtype == MESHRT_F32))
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "dtypes " + dtypesName(G) +
                    " (a mixed GPU product takes f16 or bf16 inputs into f32 "
                    "output; cuBLASLt has no other)");
  if (G.Epilogue < MESHRT_EPILOGUE_NONE || G.Epilogue > MESHRT_EPILOGUE_GELU)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "unknown epilogue " + std::to_string(G.Epilogue) +
                    " (a meshrt_epilogue: 0 none, 1 ReLU, 2 GELU)");
  if (G.Precision < MESHRT_PRECISION_HIGHEST ||
      G.Precision > MESHRT_PRECISION_BF16)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "unknown precision " + std::to_string(G.Precision) +
                    " (a meshrt_matmul_precision: 0 highest, 1 TF32, 2 BF16)");
  if (G.Batch > kMaxInt32 || G.M > kMaxInt32 || G.N > kMaxInt32 ||
      G.K > kMaxInt32)
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "a size over 2^31-1 (cuBLASLt takes 32-bit sizes and batch "
                "counts)");
}

/// Null operands of a non-empty product.
void checkNull(const GpuGemmArgs &G) {
  const char *Null = !G.C              ? "operand C"
                     : G.K > 0 && !G.A ? "operand A"
                     : G.K > 0 && !G.B ? "operand B"
                                       : nullptr;
  if (Null)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(Null) + " is null");
}

/// The largest power of two (at most 256) that divides the address of
/// every batch's matrix.
uint32_t alignmentOf(const void *P, int64_t BatchStride, int64_t Batch,
                     size_t Elem) {
  uint64_t Bits = uint64_t(reinterpret_cast<uintptr_t>(P)) | 256;
  if (Batch > 1)
    Bits |= uint64_t(BatchStride) * Elem;
  return uint32_t(Bits & (~Bits + 1));
}

/// The layouts, ops and types of the product; throws on an operand
/// cuBLASLt cannot read. With k = 0 only C's view is set.
Problem problemOf(const GpuGemmArgs &G) {
  Problem P;
  if (G.Batch > 1 && G.CStrides[0] == 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "operand C has batch stride 0 with batch " +
                    std::to_string(G.Batch) +
                    ": every product would write the same matrix");
  P.CView = viewOf("C", G.M, G.N, G.CStrides[1], G.CStrides[2]);
  if (G.Bias && !P.CView.RowMajor)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "a bias needs C with unit column stride (cuBLASLt adds it "
                "along the rows of D = C^T); C has row stride " +
                    std::to_string(G.CStrides[1]) + " and column stride " +
                    std::to_string(G.CStrides[2]));
  if (G.K == 0)
    return P;
  View AV = viewOf("A", G.M, G.K, G.AStrides[1], G.AStrides[2]);
  View BV = viewOf("B", G.K, G.N, G.BStrides[1], G.BStrides[2]);
  uint64_t M = uint64_t(G.M), N = uint64_t(G.N), K = uint64_t(G.K);
  // A column-major Rows x Cols matrix with leading dimension Ld, op Op.
  auto Mat = [](uint64_t Rows, uint64_t Cols, int64_t Ld, int32_t Op,
                int64_t BatchStride) {
    LtMatrix X;
    X.Rows = Rows;
    X.Cols = Cols;
    X.Ld = Ld;
    X.Op = Op;
    X.BatchStride = BatchStride;
    return X;
  };
  if (P.CView.RowMajor) {
    // D' = C^T (n x m) = B^T A^T. A row-major operand read column-major is
    // its transpose already (op N); a column-major one is transposed (op T).
    P.Swap = true;
    P.D = Mat(N, M, P.CView.Ld, lt::OpN, G.CStrides[0]);
    P.A = BV.RowMajor ? Mat(N, K, BV.Ld, lt::OpN, G.BStrides[0])
                      : Mat(K, N, BV.Ld, lt::OpT, G.BStrides[0]);
    P.B = AV.RowMajor ? Mat(K, M, AV.Ld, lt::OpN, G.AStrides[0])
                      : Mat(M, K, AV.Ld, lt::OpT, G.AStrides[0]);
  } else {
    // D = C (m x n, column-major) = A B.
    P.D = Mat(M, N, P.CView.Ld, lt::OpN, G.CStrides[0]);
    P.A = AV.RowMajor ? Mat(K, M, AV.Ld, lt::OpT, G.AStrides[0])
                      : Mat(M, K, AV.Ld, lt::OpN, G.AStrides[0]);
    P.B = BV.RowMajor ? Mat(N, K, BV.Ld, lt::OpT, G.BStrides[0])
                      : Mat(K, N, BV.Ld, lt::OpN, G.BStrides[0]);
  }
  P.InType = ltType(G.Dtype);
  P.OutType = ltType(G.CDtype);
  switch (G.Dtype) {
  case MESHRT_F32:
    P.ComputeType =
        G.Precision == MESHRT_PRECISION_TF32   ? lt::Compute32FFastTF32
        : G.Precision == MESHRT_PRECISION_BF16 ? lt::Compute32FFast16BF
                                               : lt::Compute32F;
    break;
  case MESHRT_F64:
    P.ComputeType = lt::Compute64F;
    P.ScaleType = lt::R64F;
    break;
  default: // f16, bf16: accumulated in f32, into their type or f32.
    break;
  }
  switch (G.Epilogue) {
  case MESHRT_EPILOGUE_RELU:
    P.Epilogue = G.Bias ? lt::EpilogueReluBias : lt::EpilogueRelu;
    break;
  case MESHRT_EPILOGUE_GELU:
    P.Epilogue = G.Bias ? lt::EpilogueGeluBias : lt::EpilogueGelu;
    break;
  default:
    P.Epilogue = G.Bias ? lt::EpilogueBias : lt::EpilogueDefault;
  }
  size_t E = elementSize(G.Dtype);
  uint32_t AlignA = alignmentOf(G.A, G.AStrides[0], G.Batch, E);
  uint32_t AlignB = alignmentOf(G.B, G.BStrides[0], G.Batch, E);
  P.AlignA = P.Swap ? AlignB : AlignA;
  P.AlignB = P.Swap ? AlignA : AlignB;
  P.AlignD = alignmentOf(G.C, G.CStrides[0], G.Batch, elementSize(G.CDtype));
  return P;
}

std::string describe(const GpuGemmArgs &G, const Problem &P) {
  return dtypesName(G) + " product m=" + std::to_string(G.M) +
         " n=" + std::to_string(G.N) + " k=" + std::to_string(G.K) +
         " batch=" + std::to_string(G.Batch) +
         " (cuBLASLt: " + std::to_string(P.D.Rows) + "x" +
         std::to_string(P.D.Cols) + ", transa=" + std::to_string(P.A.Op) +
         ", transb=" + std::to_string(P.B.Op) + ", compute type " +
         std::to_string(P.ComputeType) + ", epilogue " +
         std::to_string(P.Epilogue) + ")";
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// Everything that decides a plan: dtype, sizes, strides, options, whether
/// the workspace is used, and the operands' alignments.
struct PlanKey {
  int64_t V[18];
  bool operator==(const PlanKey &O) const {
    return std::memcmp(V, O.V, sizeof(V)) == 0;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey &K) const {
    uint64_t H = 1469598103934665603ull;
    for (int64_t X : K.V) {
      H ^= uint64_t(X);
      H *= 1099511628211ull;
    }
    return size_t(H);
  }
};

PlanKey keyOf(const GpuGemmArgs &G, bool Workspace) {
  size_t E = elementSize(G.Dtype), CE = elementSize(G.CDtype);
  uint64_t Align = alignmentOf(G.A, G.AStrides[0], G.Batch, E) |
                   uint64_t(alignmentOf(G.B, G.BStrides[0], G.Batch, E)) << 16 |
                   uint64_t(alignmentOf(G.C, G.CStrides[0], G.Batch, CE))
                       << 32 |
                   (G.Bias ? uint64_t(alignmentOf(G.Bias, 0, 1, CE)) << 48 : 0);
  return PlanKey{{int64_t(G.Dtype) | int64_t(G.CDtype) << 8, G.Batch, G.M, G.N,
                  G.K, G.AStrides[0], G.AStrides[1], G.AStrides[2],
                  G.BStrides[0], G.BStrides[1], G.BStrides[2], G.CStrides[0],
                  G.CStrides[1], G.CStrides[2],
                  int64_t(G.Accumulate) | int64_t(G.Bias != nullptr) << 1 |
                      int64_t(Workspace) << 2,
                  G.Epilogue, G.Precision, int64_t(Align)}};
}

struct Plan {
  PlanKey Key{};
  /// The generation the descriptors below were made in; stale (remade at
  /// the next use) after gpuGemmRelease.
  std::atomic<uint64_t> Generation{0};
  const LtApi *Api = nullptr;
  lt::Handle Handle = nullptr;
  lt::MatmulDesc Desc = nullptr;
  lt::Layout A = nullptr, B = nullptr, C = nullptr, D = nullptr;
  lt::Preference Pref = nullptr;
  lt::MatmulAlgo Algo{};
  void *Workspace = nullptr;
  size_t WorkspaceBytes = 0;
  bool Swap = false;
  bool HasBias = false;
  bool DoubleScale = false;
  /// The bias pointer in Desc; a call with another bias sets it, under
  /// BiasMutex (plans are shared by call sites with equal keys).
  const void *Bias = nullptr;
  std::mutex BiasMutex;
};

/// Destroys what cuBLASLt made for `P` (statuses ignored: nothing to do
/// about them) and nulls it.
void destroyPlan(Plan &P) {
  const LtApi *L = LoadedLt.load(std::memory_order_acquire);
  if (!L || !L->Loaded)
    return;
  for (lt::Layout *X : {&P.A, &P.B, &P.C, &P.D})
    if (*X) {
      L->MatrixLayoutDestroy(*X);
      *X = nullptr;
    }
  if (P.Desc) {
    L->MatmulDescDestroy(P.Desc);
    P.Desc = nullptr;
  }
  if (P.Pref) {
    L->MatmulPreferenceDestroy(P.Pref);
    P.Pref = nullptr;
  }
}

struct GemmState {
  std::mutex Mutex;
  /// Bumped by gpuGemmRelease: plans of an older generation are stale.
  std::atomic<uint64_t> Generation{1};
  lt::Handle Handle = nullptr; // Lives as long as the process.
  void *Workspace = nullptr;   // On the shared stream, kWorkspaceBytes.
  /// Plans by key. Never deleted: call sites' slots point at them.
  std::unordered_map<PlanKey, Plan *, PlanKeyHash> Plans;
  std::atomic<int64_t> PlansMade{0};
};

GemmState &state() {
  static GemmState *S = new GemmState; // Never destroyed: slots point in.
  return *S;
}

template <typename T>
void setDesc(const LtApi &L, lt::MatmulDesc D, int Attr, const T &V,
             const char *What) {
  ltCheck(L.MatmulDescSetAttribute(D, Attr, &V, sizeof(V)), What);
}

template <typename T>
void setLayout(const LtApi &L, lt::Layout X, int Attr, const T &V,
               const char *What) {
  ltCheck(L.MatrixLayoutSetAttribute(X, Attr, &V, sizeof(V)), What);
}

template <typename T>
void setPref(const LtApi &L, lt::Preference X, int Attr, const T &V,
             const char *What) {
  ltCheck(L.MatmulPreferenceSetAttribute(X, Attr, &V, sizeof(V)), What);
}

/// Makes `P`'s descriptors, layouts and preference for problem `Pr` and asks
/// the heuristic for an algorithm; on an error destroys what it made.
void makePlan(Plan &P, const GpuGemmArgs &G, const Problem &Pr, const LtApi &L,
              lt::Handle H, void *Workspace, size_t WorkspaceBytes) {
  P.Api = &L;
  P.Handle = H;
  P.Workspace = Workspace;
  P.WorkspaceBytes = WorkspaceBytes;
  P.Swap = Pr.Swap;
  P.HasBias = G.Bias != nullptr;
  P.DoubleScale = Pr.ScaleType == lt::R64F;
  P.Bias = G.Bias;
  try {
    ltCheck(L.MatmulDescCreate(&P.Desc, Pr.ComputeType, Pr.ScaleType),
            "cublasLtMatmulDescCreate");
    setDesc(L, P.Desc, lt::DescTransA, Pr.A.Op,
            "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_TRANSA)");
    setDesc(L, P.Desc, lt::DescTransB, Pr.B.Op,
            "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_TRANSB)");
    setDesc(L, P.Desc, lt::DescEpilogue, Pr.Epilogue,
            "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE)");
    if (G.Bias) {
      // The bias has D's type (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_
      // TYPE: for every type used here). Its pointer is set before the
      // heuristic, which derives its alignment from it.
      setDesc(L, P.Desc, lt::DescBiasDataType, Pr.OutType,
              "cublasLtMatmulDescSetAttribute("
              "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE)");
      setDesc(L, P.Desc, lt::DescBiasPointer, G.Bias,
              "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_BIAS_"
              "POINTER)");
    }
    int32_t Batch = int32_t(G.Batch), Order = lt::OrderCol;
    auto Make = [&](lt::Layout &X, const LtMatrix &Mx, int32_t Type) {
      ltCheck(L.MatrixLayoutCreate(&X, Type, Mx.Rows, Mx.Cols, Mx.Ld),
              "cublasLtMatrixLayoutCreate");
      setLayout(L, X, lt::LayoutOrder, Order,
                "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_"
                "ORDER)");
      setLayout(L, X, lt::LayoutBatchCount, Batch,
                "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_"
                "BATCH_COUNT)");
      setLayout(L, X, lt::LayoutStridedBatchOffset, Mx.BatchStride,
                "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_"
                "STRIDED_BATCH_OFFSET)");
    };
    Make(P.A, Pr.A, Pr.InType);
    Make(P.B, Pr.B, Pr.InType);
    Make(P.C, Pr.D, Pr.OutType);
    Make(P.D, Pr.D, Pr.OutType);
    ltCheck(L.MatmulPreferenceCreate(&P.Pref),
            "cublasLtMatmulPreferenceCreate");
    uint64_t MaxWorkspace = WorkspaceBytes;
    setPref(L, P.Pref, lt::PrefMaxWorkspaceBytes, MaxWorkspace,
            "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_MATMUL_PREF_MAX_"
            "WORKSPACE_BYTES)");
    const char *SetAlign = "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_"
                           "MATMUL_PREF_MIN_ALIGNMENT_*_BYTES)";
    setPref(L, P.Pref, lt::PrefMinAlignmentABytes, Pr.AlignA, SetAlign);
    setPref(L, P.Pref, lt::PrefMinAlignmentBBytes, Pr.AlignB, SetAlign);
    setPref(L, P.Pref, lt::PrefMinAlignmentCBytes, Pr.AlignD, SetAlign);
    setPref(L, P.Pref, lt::PrefMinAlignmentDBytes, Pr.AlignD, SetAlign);
    lt::HeuristicResult R;
    std::memset(&R, 0, sizeof(R));
    int Found = 0;
    ltCheck(L.MatmulAlgoGetHeuristic(H, P.Desc, P.A, P.B, P.C, P.D, P.Pref, 1,
                                     &R, &Found),
            "cublasLtMatmulAlgoGetHeuristic");
    if (Found < 1 || R.State != lt::StatusSuccess)
      throw Error(MESHRT_ERROR_BACKEND,
                  "cublasLtMatmulAlgoGetHeuristic found no algorithm for the " +
                      describe(G, Pr) + " (cuBLASLt " +
                      versionString(L.Version) + ", " +
                      (Found < 1 ? std::string("no result")
                                 : std::string(lt::statusName(R.State))) +
                      ")");
    P.Algo = R.Algo;
  } catch (...) {
    destroyPlan(P);
    throw;
  }
  state().PlansMade.fetch_add(1, std::memory_order_relaxed);
}

/// The handle, and the workspace when `Workspace`; made at the first
/// product. Call with the state's mutex held.
void ensureResources(GemmState &S, const LtApi &L, bool Workspace) {
  if (!S.Handle)
    ltCheck(L.Create(&S.Handle), "cublasLtCreate");
  if (Workspace && !S.Workspace)
    S.Workspace = gpuAlloc(kWorkspaceBytes, nullptr,
                           "cuMemAllocAsync (the cuBLASLt workspace)");
}

//===----------------------------------------------------------------------===//
// A product
//===----------------------------------------------------------------------===//

/// Throws unless `P` is device or managed memory; `Which` names it.
void checkDevice(const void *P, const char *Which) {
  if (__builtin_expect(gpuKnownDeviceMemory(P), 1))
    return;
  if (gpuKeptForReuse(P))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Which) +
                    " was freed (meshrt_device_free or mgpuMemFree); the "
                    "runtime keeps its memory for reuse");
  if (!gpuIsDeviceMemory(P, Which))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Which) +
                    " is host memory; cuBLASLt needs device (mgpuMemAlloc, "
                    "cudaMalloc) or managed memory");
  gpuRememberDeviceMemory(P);
}

void checkDevicePointers(const GpuGemmArgs &G) {
  if (G.K > 0) {
    checkDevice(G.A, "operand A");
    checkDevice(G.B, "operand B");
  }
  checkDevice(G.C, "operand C");
  if (G.Bias)
    checkDevice(G.Bias, "the bias");
}

/// Enqueues the product with plan `P`.
void run(Plan &P, const GpuGemmArgs &G, void *Stream) {
  const LtApi &L = *P.Api;
  float AlphaF = 1.0f, BetaF = G.Accumulate ? 1.0f : 0.0f;
  double AlphaD = 1.0, BetaD = G.Accumulate ? 1.0 : 0.0;
  const void *Alpha = P.DoubleScale ? static_cast<const void *>(&AlphaD)
                                    : static_cast<const void *>(&AlphaF);
  const void *Beta = P.DoubleScale ? static_cast<const void *>(&BetaD)
                                   : static_cast<const void *>(&BetaF);
  const void *LA = P.Swap ? G.B : G.A;
  const void *LB = P.Swap ? G.A : G.B;
  auto Enqueue = [&] {
    return L.Matmul(P.Handle, P.Desc, Alpha, LA, P.A, LB, P.B, Beta, G.C, P.C,
                    G.C, P.D, &P.Algo, P.Workspace, P.WorkspaceBytes, Stream);
  };
  int S;
  if (P.HasBias) {
    std::lock_guard<std::mutex> Lock(P.BiasMutex);
    if (P.Bias != G.Bias) {
      setDesc(L, P.Desc, lt::DescBiasPointer, G.Bias,
              "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_BIAS_"
              "POINTER)");
      P.Bias = G.Bias;
    }
    S = Enqueue();
  } else {
    S = Enqueue();
  }
  ltCheck(S, "cublasLtMatmul");
}

/// k = 0: C = act(beta C + bias) with no product. Supported where that needs
/// no kernel: C zeroed (act(0) = 0 for every epilogue), or left as it is
/// when accumulating without an activation.
void emptyReduction(const GpuGemmArgs &G, const View &CView, void *Stream) {
  if (G.Bias || (G.Accumulate && G.Epilogue != MESHRT_EPILOGUE_NONE))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "k = 0 is not supported by cuBLASLt with a bias or with an "
                "activation of the accumulated C");
  if (G.Accumulate)
    return;
  checkDevice(G.C, "operand C");
  size_t E = elementSize(G.CDtype);
  // C is Outer runs of Inner contiguous elements, Ld apart.
  int64_t Inner = CView.RowMajor ? G.N : G.M;
  int64_t Outer = CView.RowMajor ? G.M : G.N;
  char *C = static_cast<char *>(G.C);
  const char *What = "zeroing C (k = 0)";
  if (CView.Ld == Inner && (G.Batch == 1 || G.CStrides[0] == Inner * Outer)) {
    gpuZeroAsync(C, size_t(G.Batch * Outer * Inner) * E, Stream, What);
    return;
  }
  for (int64_t B = 0; B < G.Batch; ++B) {
    char *Batch = C + G.CStrides[0] * B * int64_t(E);
    if (CView.Ld == Inner) {
      gpuZeroAsync(Batch, size_t(Outer * Inner) * E, Stream, What);
      continue;
    }
    for (int64_t O = 0; O < Outer; ++O)
      gpuZeroAsync(Batch + CView.Ld * O * int64_t(E), size_t(Inner) * E, Stream,
                   What);
  }
}

/// A product whose slot gave no plan: the whole check, then the map (or a
/// plan for this call alone when there is no slot).
[[gnu::noinline]] void slowPath(const GpuGemmArgs &G, void *Stream,
                                bool Shared) {
  Problem Pr = problemOf(G);
  if (G.K == 0)
    return emptyReduction(G, Pr.CView, Stream);
  const LtApi &L = library();
  checkDevicePointers(G);
  GemmState &S = state();
  if (!G.Plan) {
    Plan Once;
    {
      std::lock_guard<std::mutex> Lock(S.Mutex);
      ensureResources(S, L, Shared);
      makePlan(Once, G, Pr, L, S.Handle, Shared ? S.Workspace : nullptr,
               Shared ? kWorkspaceBytes : 0);
    }
    try {
      run(Once, G, Stream);
    } catch (...) {
      destroyPlan(Once);
      throw;
    }
    // cuBLASLt has what it needs once the product is enqueued.
    destroyPlan(Once);
    return;
  }
  PlanKey Key = keyOf(G, Shared);
  Plan *P;
  {
    std::lock_guard<std::mutex> Lock(S.Mutex);
    ensureResources(S, L, Shared);
    Plan *&Entry = S.Plans[Key];
    if (!Entry) {
      Entry = new Plan;
      Entry->Key = Key;
    }
    uint64_t Generation = S.Generation.load(std::memory_order_relaxed);
    if (Entry->Generation.load(std::memory_order_relaxed) != Generation) {
      makePlan(*Entry, G, Pr, L, S.Handle, Shared ? S.Workspace : nullptr,
               Shared ? kWorkspaceBytes : 0);
      Entry->Generation.store(Generation, std::memory_order_release);
    }
    P = Entry;
  }
  *G.Plan = P;
  run(*P, G, Stream);
}

} // namespace

void meshrt::detail::gpuGemm(const GpuGemmArgs &G) {
  checkScalars(G);
  if (G.Batch == 0 || G.M == 0 || G.N == 0)
    return; // Nothing to compute.
  checkNull(G);
  // The device's context current on this thread (cuBLASLt runs in it).
  void *Shared = gpuSharedStream();
  void *Stream = G.Stream ? G.Stream : Shared;
  bool OnShared = Stream == Shared;
  // The call site's last plan, if its key is this call's: a plan is made
  // only from arguments that passed every check below, and the key holds
  // all of them but the pointers, which are checked here.
  if (G.K > 0 && G.Plan && *G.Plan) {
    Plan *P = static_cast<Plan *>(*G.Plan);
    if (P->Generation.load(std::memory_order_acquire) ==
            state().Generation.load(std::memory_order_relaxed) &&
        P->Key == keyOf(G, OnShared)) {
      checkDevicePointers(G);
      run(*P, G, Stream);
      return;
    }
  }
  slowPath(G, Stream, OnShared);
}

void meshrt::detail::gpuGemmRelease() {
  GemmState &S = state();
  std::lock_guard<std::mutex> Lock(S.Mutex);
  if (!S.Workspace && S.Plans.empty())
    return;
  S.Generation.fetch_add(1, std::memory_order_acq_rel);
  for (auto &Entry : S.Plans) {
    destroyPlan(*Entry.second);
    Entry.second->Generation.store(0, std::memory_order_relaxed);
  }
  if (void *W = S.Workspace) {
    S.Workspace = nullptr;
    // In stream order: after the products already enqueued there.
    gpuFree(W, nullptr, "finalize (the cuBLASLt workspace)");
  }
}

int64_t meshrt::detail::gpuGemmPlansMade() {
  return state().PlansMade.load(std::memory_order_relaxed);
}

#else // !MESHRT_HAVE_NCCL

void meshrt::detail::gpuGemm(const GpuGemmArgs &) {
  throw Error(MESHRT_ERROR_UNSUPPORTED,
              "meshrt was built without CUDA (the CUDA toolkit and NCCL were "
              "not found when it was configured), so it has no GPU products");
}

void meshrt::detail::gpuGemmRelease() {}

int64_t meshrt::detail::gpuGemmPlansMade() { return 0; }

#endif // MESHRT_HAVE_NCCL
