//===- Blas.cpp - Contractions of compiled code through a CBLAS -----------===//
//
// meshrt_gemm: C[b] = A[b] * B[b] (+ C[b]) over strided operands, computed by
// the CBLAS libmeshrt loads (OpenBLAS from Debian; docs/compiling.md says
// why). meshrt_gemm_mixed: the same with C of a wider type than A and B
// (f16 into f32, i8 into i32, ...), A and B widened exactly first. The
// compiler's mesh-linalg-to-blas pass turns the contractions of a host program
// into calls of it.
//
// Operand layouts: a matrix whose column stride is 1 is row-major, one whose
// row stride is 1 is column-major; both go to the library as they are, with
// the transpose flag saying which. Anything else (a broadcast, a stride of 2,
// a slice read down its columns of another array) is copied into a packed
// buffer first. Those buffers and the f32 copies of f16/bf16 operands are
// thread-local and grow only: a call in a loop allocates nothing after its
// first iteration.
//
// Threads: one per process by default (the ranks are the parallelism).
// MESHRT_BLAS_THREADS=n sets the library's count; so do the library's own
// variables (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, ...), which are then left
// to it. The library is loaded with dlopen at the first product, after the
// count is in the environment it reads when it starts.
//
//===----------------------------------------------------------------------===//

#include "Blas.h"
#include "Abort.h"
#include "Debug.h"
#include "DynamicLibrary.h"

#include "meshrt/Error.h"
#include "meshrt/Half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <strings.h>
#include <type_traits>
#include <vector>

// The reference CBLAS interface's enums (ints).
enum { CblasRowMajor = 101, CblasColMajor = 102 };
enum { CblasNoTrans = 111, CblasTrans = 112 };

namespace meshrt {
namespace detail {
namespace {

/// The few CBLAS entry points used, from the library loaded at the first
/// product. Loaded, not linked: a program that computes no product never
/// loads it, and OpenBLAS's pthread build starts its worker threads when it
/// is loaded, with the count it reads from the environment then; workers of
/// several ranks that share the cores would spin against each other.
struct Cblas {
  void (*sgemm)(int, int, int, int, int, int, float, const float *, int,
                const float *, int, float, float *, int);
  void (*dgemm)(int, int, int, int, int, int, double, const double *, int,
                const double *, int, double, double *, int);
  void (*sgemv)(int, int, int, int, float, const float *, int, const float *,
                int, float, float *, int);
  void (*dgemv)(int, int, int, int, double, const double *, int, const double *,
                int, double, double *, int);
};

#ifndef MESHRT_BLAS_PATH
#define MESHRT_BLAS_PATH "libopenblas.so.0"
#endif

/// The OpenBLAS kernel family for this CPU's vector instructions, or null
/// where the library's own choice stands. OpenBLAS picks its kernels by CPU
/// model, and a model newer than the library gets its SSE3 fallback,
/// "Prescott": Debian 12's 0.3.21 on Intel's Emerald Rapids multiplies at a
/// fifth of the speed its AVX-512 kernels reach there. On Intel the family
/// follows from the instruction set alone (every AVX-512 model the library
/// knows uses the SkylakeX or, with BF16, the Cooperlake kernels; the AVX2
/// models the Haswell ones), so it is named before the library loads. Other
/// vendors keep the library's choice (its Zen kernels are tuned per family);
/// a fallback there is reported after loading (reportKernels).
const char *openblasCoreForCpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_is("intel"))
    return nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return nullptr;
}

/// Who names the kernels OpenBLAS runs.
enum class CoreChoice { User, Meshrt, Library };

/// MESHRT_BLAS_CORETYPE: "auto" (unset: openblasCoreForCpu where the user
/// has not set OPENBLAS_CORETYPE) or "library" (the library's own choice).
/// Sets OPENBLAS_CORETYPE, read by the library when it loads (unless another
/// library of the process, numpy say, loaded it first). Null, with
/// `Failure` set, for any other MESHRT_BLAS_CORETYPE.
std::optional<CoreChoice> chooseOpenblasCore(std::string &Failure) {
  const char *E = std::getenv("MESHRT_BLAS_CORETYPE");
  std::string Mode = E ? E : "auto";
  if (Mode != "auto" && Mode != "library") {
    Failure = "MESHRT_BLAS_CORETYPE='" + Mode +
              "' is not auto or library (name a core with OPENBLAS_CORETYPE)";
    return std::nullopt;
  }
  if (std::getenv("OPENBLAS_CORETYPE"))
    return CoreChoice::User;
  if (Mode == "auto")
    if (const char *Core = openblasCoreForCpu()) {
      setenv("OPENBLAS_CORETYPE", Core, 1);
      return CoreChoice::Meshrt;
    }
  return CoreChoice::Library;
}

/// After loading: with MESHRT_DEBUG=INFO, a line naming the library and the
/// kernels it runs; and a warning, once, where those are the SSE3 fallback
/// on a CPU with AVX2 and the user did not ask for it (the library does not
/// know the CPU's model, and either the vendor is not Intel,
/// MESHRT_BLAS_CORETYPE is "library", or another library of the process
/// loaded it first).
void reportKernels(void *Lib, CoreChoice Choice) {
  using NameFn = char *(*)();
  auto CoreFn = reinterpret_cast<NameFn>(dlsym(Lib, "openblas_get_corename"));
  auto ConfigFn = reinterpret_cast<NameFn>(dlsym(Lib, "openblas_get_config"));
  std::string Core = CoreFn && CoreFn() ? CoreFn() : "";
  std::string Config = ConfigFn && ConfigFn() ? ConfigFn() : "a CBLAS";
  bool Info = false;
  try {
    Info = debugLevel() >= DebugLevel::Info;
  } catch (const Error &) {
    // A bad MESHRT_DEBUG is reported where the runtime starts.
  }
  // The library ignores the name where it was loaded before (by numpy, in
  // a Python process): its choice stands then.
  const char *Named = std::getenv("OPENBLAS_CORETYPE");
  if (Choice == CoreChoice::Meshrt &&
      (!Named || strcasecmp(Core.c_str(), Named) != 0))
    Choice = CoreChoice::Library;
  const char *Why = Choice == CoreChoice::User ? " (OPENBLAS_CORETYPE)"
                    : Choice == CoreChoice::Meshrt
                        ? " (named by libmeshrt for the CPU's vector "
                          "instructions)"
                        : " (the library's choice)";
  if (Info)
    debugWrite("meshrt: INFO: BLAS: " + Config +
                   (Core.empty() ? std::string() : ", kernels " + Core + Why),
               -1);
#if defined(__x86_64__)
  if (Choice == CoreChoice::User || strcasecmp(Core.c_str(), "Prescott") != 0 ||
      !__builtin_cpu_supports("avx2"))
    return;
  writeStderr("meshrt: warning: the BLAS (" + Config +
              ") does not know this CPU's model and runs its SSE3 kernels "
              "(Prescott), several times slower than its AVX2 or AVX-512 "
              "ones: set OPENBLAS_CORETYPE=Haswell, SkylakeX or Cooperlake "
              "(the kernels of the CPU's vector instructions) in the "
              "environment the process starts with\n");
#endif
}

/// Loads the BLAS once, with one thread unless the user says otherwise:
/// MESHRT_BLAS_THREADS=n, or the library's own variables, which are then
/// left to it. MESHRT_BLAS_LIBRARY names another CBLAS to load.
const Cblas &cblas() {
  static Cblas Lib;
  static std::once_flag Once;
  static std::string Failure;
  std::call_once(Once, [] {
    std::string Threads = "1";
    bool Own = false;
    if (const char *E = std::getenv("MESHRT_BLAS_THREADS")) {
      char *End = nullptr;
      long N = std::strtol(E, &End, 10);
      if (!*E || *End || N < 1 || N > 4096) {
        Failure = std::string("MESHRT_BLAS_THREADS='") + E +
                  "' is not a thread count (1 to 4096)";
        return;
      }
      Threads = std::to_string(N);
    } else {
      for (const char *V : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                            "OMP_NUM_THREADS", "BLIS_NUM_THREADS"})
        if (std::getenv(V))
          Own = true;
    }
    if (!Own) {
      // Read by the library when it is loaded, just below.
      setenv("OPENBLAS_NUM_THREADS", Threads.c_str(), 1);
      setenv("BLIS_NUM_THREADS", Threads.c_str(), 1);
    }
    std::optional<CoreChoice> Choice = chooseOpenblasCore(Failure);
    if (!Choice)
      return;
    std::string Tried;
    void *H = openFirst("MESHRT_BLAS_LIBRARY", {MESHRT_BLAS_PATH}, Tried);
    if (!H) {
      Failure = "cannot load the BLAS (apt-get install libopenblas0-pthread, "
                "or set MESHRT_BLAS_LIBRARY): " +
                Tried;
      return;
    }
    std::string Missing;
    bind(H, "cblas_sgemm", Lib.sgemm, Missing);
    bind(H, "cblas_dgemm", Lib.dgemm, Missing);
    bind(H, "cblas_sgemv", Lib.sgemv, Missing);
    bind(H, "cblas_dgemv", Lib.dgemv, Missing);
    if (!Missing.empty())
      Failure = "the BLAS is not a CBLAS: " + Missing;
    else
      reportKernels(H, *Choice);
  });
  if (!Failure.empty())
    throw Error(MESHRT_ERROR_BACKEND, Failure);
  return Lib;
}

/// One matrix operand: Rows x Cols elements, element (i, j) at
/// Data + i * RowStride + j * ColStride.
template <typename T> struct Matrix {
  T *Data;
  int64_t Rows, Cols, RowStride, ColStride;
};

/// How the library can read a matrix as it is: row-major (ColStride 1) or
/// column-major (RowStride 1) with a leading dimension it accepts.
struct Layout {
  bool Usable = false;
  bool RowMajor = true;
  int64_t Ld = 1;
};

constexpr int64_t kMaxBlasInt = 0x7fffffff;

template <typename T> Layout layoutOf(const Matrix<T> &X) {
  Layout L;
  int64_t R = X.Rows, C = X.Cols;
  // A dim of size 1 may have any stride: it is never stepped over.
  bool UnitCol = X.ColStride == 1 || C == 1;
  bool UnitRow = X.RowStride == 1 || R == 1;
  if (UnitCol && (R == 1 || X.RowStride >= std::max<int64_t>(1, C))) {
    L.Usable = true;
    L.RowMajor = true;
    L.Ld = R == 1 ? std::max<int64_t>(1, C) : X.RowStride;
  } else if (UnitRow && (C == 1 || X.ColStride >= std::max<int64_t>(1, R))) {
    L.Usable = true;
    L.RowMajor = false;
    L.Ld = C == 1 ? std::max<int64_t>(1, R) : X.ColStride;
  }
  if (L.Ld > kMaxBlasInt)
    L.Usable = false;
  return L;
}

/// Thread-local scratch that only grows. Pool 0 belongs to gemmOne (its
/// packed operands), pool 1 to the widened copies made around it.
template <typename T, int Pool = 0> T *scratch(int Slot, int64_t Count) {
  thread_local std::vector<T> Buffers[3];
  std::vector<T> &V = Buffers[Slot];
  if (V.size() < size_t(Count))
    V.resize(size_t(Count));
  return V.data();
}

#if defined(__x86_64__)
/// Widens N contiguous binary16 values with the CPU's F16C conversion (8
/// per instruction); the caller checks that the CPU has it.
__attribute__((target("avx,f16c"))) void halfRowF16c(const uint16_t *In,
                                                     float *Out, int64_t N) {
  int64_t J = 0;
  for (; J + 8 <= N; J += 8)
    _mm256_storeu_ps(Out + J, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(In + J))));
  for (; J < N; ++J)
    Out[J] = halfToFloat(In[J]);
}

bool hasF16c() {
  static const bool Has = __builtin_cpu_supports("f16c");
  return Has;
}
#endif

/// Out[J] = Convert(In[J * Stride]) for J < N: binary16 rows through F16C
/// where the CPU has it (the portable conversion branches per element and
/// does not vectorise), the rest element by element.
template <typename T, typename S>
void convertRow(const S *In, int64_t Stride, T *Out, int64_t N,
                T (*Convert)(S)) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<S, uint16_t> && std::is_same_v<T, float>)
    if (Convert == halfToFloat && Stride == 1 && hasF16c())
      return halfRowF16c(In, Out, N);
#endif
  if (Stride == 1)
    for (int64_t J = 0; J < N; ++J)
      Out[J] = Convert(In[J]);
  else
    for (int64_t J = 0; J < N; ++J)
      Out[J] = Convert(In[J * Stride]);
}

/// Copies X into packed row-major storage at Dst and returns that view.
template <typename T, typename S>
Matrix<T> packInto(const Matrix<const S> &X, T *Dst, T (*Convert)(S)) {
  for (int64_t I = 0; I < X.Rows; ++I)
    convertRow<T, S>(X.Data + I * X.RowStride, X.ColStride, Dst + I * X.Cols,
                     X.Cols, Convert);
  return {Dst, X.Rows, X.Cols, X.Cols, 1};
}

template <typename T> T identity(T V) { return V; }

template <typename T> Matrix<const T> constView(const Matrix<T> &X) {
  return {X.Data, X.Rows, X.Cols, X.RowStride, X.ColStride};
}

template <typename T>
void callGemm(bool RowMajorC, bool TransA, bool TransB, int64_t M, int64_t N,
              int64_t K, const T *A, int64_t Lda, const T *B, int64_t Ldb,
              T Beta, T *C, int64_t Ldc) {
  int Layout = RowMajorC ? CblasRowMajor : CblasColMajor;
  int TA = TransA ? CblasTrans : CblasNoTrans;
  int TB = TransB ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas().sgemm(Layout, TA, TB, int(M), int(N), int(K), 1.0f, A, int(Lda), B,
                  int(Ldb), Beta, C, int(Ldc));
  else
    cblas().dgemm(Layout, TA, TB, int(M), int(N), int(K), 1.0, A, int(Lda), B,
                  int(Ldb), Beta, C, int(Ldc));
}

template <typename T>
void callGemv(bool RowMajor, bool Trans, int64_t M, int64_t N, const T *A,
              int64_t Lda, const T *X, int64_t IncX, T Beta, T *Y,
              int64_t IncY) {
  int Layout = RowMajor ? CblasRowMajor : CblasColMajor;
  int TA = Trans ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas().sgemv(Layout, TA, int(M), int(N), 1.0f, A, int(Lda), X, int(IncX),
                  Beta, Y, int(IncY));
  else
    cblas().dgemv(Layout, TA, int(M), int(N), 1.0, A, int(Lda), X, int(IncX),
                  Beta, Y, int(IncY));
}

bool blasInt(int64_t V) { return V >= -kMaxBlasInt && V <= kMaxBlasInt; }

/// Y = op(X) V with op the transpose when `Trans`, if the library can read X
/// as it is and both increments are positive 32-bit values; false if not
/// (CBLAS takes a vector with a negative increment by its lowest address,
/// not by its element 0: such vectors go to the packing path).
template <typename T>
bool gemvIfUsable(const Matrix<const T> &X, bool Trans, const T *V,
                  int64_t IncV, T Beta, T *Y, int64_t IncY) {
  if (IncV <= 0 || IncY <= 0 || !blasInt(IncV) || !blasInt(IncY))
    return false;
  Layout L = layoutOf(X);
  if (!L.Usable)
    return false;
  callGemv<T>(L.RowMajor, Trans, X.Rows, X.Cols, X.Data, L.Ld, V, IncV, Beta, Y,
              IncY);
  return true;
}

/// C = A * B (+ C) for one batch entry, T = float or double.
template <typename T>
void gemmOne(Matrix<const T> A, Matrix<const T> B, Matrix<T> C,
             bool Accumulate) {
  int64_t M = C.Rows, N = C.Cols, K = A.Cols;
  T Beta = Accumulate ? T(1) : T(0);
  if (K == 0) {
    if (!Accumulate)
      for (int64_t I = 0; I < M; ++I)
        for (int64_t J = 0; J < N; ++J)
          C.Data[I * C.RowStride + J * C.ColStride] = T(0);
    return;
  }

  // Matrix-vector products (n = 1: y = A x; m = 1: y = B^T x): the vectors
  // may have any non-zero stride.
  if ((N == 1 && M > 1 &&
       gemvIfUsable<T>(A, false, B.Data, B.RowStride, Beta, C.Data,
                       C.RowStride)) ||
      (M == 1 && N > 1 &&
       gemvIfUsable<T>(B, true, A.Data, A.ColStride, Beta, C.Data,
                       C.ColStride)))
    return;

  // C in a layout the library writes, else a packed copy written back.
  Layout LC = layoutOf(C);
  Matrix<T> Out = C;
  bool CopyOut = !LC.Usable;
  if (CopyOut) {
    T *P = scratch<T>(2, M * N);
    if (Accumulate)
      packInto<T, T>(constView(C), P, identity<T>);
    Out = {P, M, N, N, 1};
    LC = layoutOf(Out);
  }
  Layout LA = layoutOf(A), LB = layoutOf(B);
  if (!LA.Usable) {
    A = constView(
        packInto<T, T>(A, scratch<T>(0, A.Rows * A.Cols), identity<T>));
    LA = layoutOf(A);
  }
  if (!LB.Usable) {
    B = constView(
        packInto<T, T>(B, scratch<T>(1, B.Rows * B.Cols), identity<T>));
    LB = layoutOf(B);
  }
  // In C's layout, an operand stored the other way round is transposed.
  callGemm<T>(LC.RowMajor, LA.RowMajor != LC.RowMajor,
              LB.RowMajor != LC.RowMajor, M, N, K, A.Data, LA.Ld, B.Data, LB.Ld,
              Beta, Out.Data, LC.Ld);
  if (CopyOut)
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J)
        C.Data[I * C.RowStride + J * C.ColStride] = Out.Data[I * N + J];
}

/// A and B widened from S to T into packed buffers of their own (scratch
/// pool 1), as read-only operands of gemmOne<T>.
template <typename S, typename T>
std::pair<Matrix<const T>, Matrix<const T>>
widenOperands(Matrix<const S> A, Matrix<const S> B, T (*Widen)(S)) {
  return {
      constView(packInto<T, S>(A, scratch<T, 1>(0, A.Rows * A.Cols), Widen)),
      constView(packInto<T, S>(B, scratch<T, 1>(1, B.Rows * B.Cols), Widen))};
}

/// f16/bf16: the operands widened to f32, one sgemm, the result rounded.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void gemmHalf(Matrix<const uint16_t> A, Matrix<const uint16_t> B,
              Matrix<uint16_t> C, bool Accumulate) {
  int64_t M = C.Rows, N = C.Cols;
  auto [A32, B32] = widenOperands<uint16_t, float>(A, B, Widen);
  float *C32 = scratch<float, 1>(2, M * N);
  if (Accumulate)
    packInto<float, uint16_t>(constView(C), C32, Widen);
  gemmOne<float>(A32, B32, Matrix<float>{C32, M, N, N, 1}, Accumulate);
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N; ++J)
      C.Data[I * C.RowStride + J * C.ColStride] = Narrow(C32[I * N + J]);
}

/// V as a T (an exact widening: float to double, an 8-bit integer to a
/// float).
template <typename S, typename T> T castTo(S V) { return T(V); }
template <float (*Widen)(uint16_t)> double halfToDouble(uint16_t V) {
  return Widen(V);
}

/// A mixed product: A and B of S widened exactly to C's T, one GEMM of T
/// straight into C (nothing rounded but the library's sums).
template <typename S, typename T, T (*Widen)(S)>
void gemmWidened(Matrix<const S> A, Matrix<const S> B, Matrix<T> C,
                 bool Accumulate) {
  auto [AT, BT] = widenOperands<S, T>(A, B, Widen);
  gemmOne<T>(AT, BT, C, Accumulate);
}

/// An integer product of 8-bit inputs into the wider integer T, as the
/// loops compute it: exact sums, wrapping modulo 2^bits(T) (MLIR's integer
/// arithmetic). Every partial sum is at most K * 2^16 in magnitude, so the
/// product runs as an sgemm where that is below 2^24 (K < 256 for u8, 1024
/// for i8: f32 holds each sum exactly) and as a dgemm otherwise (K < 2^31,
/// the library's sizes, keeps the sums below 2^47, exact in a double), then
/// wraps into C (plus C's old value, also wrapping).
template <typename S, typename T>
void gemmInteger(Matrix<const S> A, Matrix<const S> B, Matrix<T> C,
                 bool Accumulate) {
  int64_t M = C.Rows, N = C.Cols, K = A.Cols;
  const int64_t MaxProduct = std::is_signed_v<S> ? 128 * 128 : 255 * 255;
  // The exact product in P (packed, of a float type F), wrapped into C.
  auto Product = [&](auto *P) {
    using F = std::remove_pointer_t<decltype(P)>;
    gemmWidened<S, F, castTo<S, F>>(A, B, Matrix<F>{P, M, N, N, 1}, false);
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J) {
        T &Out = C.Data[I * C.RowStride + J * C.ColStride];
        uint64_t Sum = uint64_t(int64_t(P[I * N + J]));
        Out = T(Accumulate ? uint64_t(Out) + Sum : Sum);
      }
  };
  if (K * MaxProduct < (int64_t(1) << 24))
    Product(scratch<float, 1>(2, M * N));
  else
    Product(scratch<double, 1>(2, M * N));
}

/// One GEMM per batch entry: A and B of S, C of T.
template <typename S, typename T = S>
void gemmBatches(const GemmArgs &G,
                 void (*One)(Matrix<const S>, Matrix<const S>, Matrix<T>,
                             bool)) {
  const S *A = static_cast<const S *>(G.A);
  const S *B = static_cast<const S *>(G.B);
  T *C = static_cast<T *>(G.C);
  for (int64_t I = 0; I < G.Batch; ++I)
    One(Matrix<const S>{A + I * G.AStrides[0], G.M, G.K, G.AStrides[1],
                        G.AStrides[2]},
        Matrix<const S>{B + I * G.BStrides[0], G.K, G.N, G.BStrides[1],
                        G.BStrides[2]},
        Matrix<T>{C + I * G.CStrides[0], G.M, G.N, G.CStrides[1],
                  G.CStrides[2]},
        G.Accumulate);
}

constexpr int dtypePair(meshrt_dtype In, meshrt_dtype Out) {
  return In * 256 + Out;
}

/// A product whose C is wider than A and B.
void gemmMixed(const GemmArgs &G) {
  switch (dtypePair(G.Dtype, G.CDtype)) {
  case dtypePair(MESHRT_F16, MESHRT_F32):
    return gemmBatches<uint16_t, float>(
        G, gemmWidened<uint16_t, float, halfToFloat>);
  case dtypePair(MESHRT_BF16, MESHRT_F32):
    return gemmBatches<uint16_t, float>(
        G, gemmWidened<uint16_t, float, bfloat16ToFloat>);
  case dtypePair(MESHRT_F16, MESHRT_F64):
    return gemmBatches<uint16_t, double>(
        G, gemmWidened<uint16_t, double, halfToDouble<halfToFloat>>);
  case dtypePair(MESHRT_BF16, MESHRT_F64):
    return gemmBatches<uint16_t, double>(
        G, gemmWidened<uint16_t, double, halfToDouble<bfloat16ToFloat>>);
  case dtypePair(MESHRT_F32, MESHRT_F64):
    return gemmBatches<float, double>(
        G, gemmWidened<float, double, castTo<float, double>>);
  case dtypePair(MESHRT_I8, MESHRT_I32):
    return gemmBatches<int8_t, int32_t>(G, gemmInteger<int8_t, int32_t>);
  case dtypePair(MESHRT_I8, MESHRT_I64):
    return gemmBatches<int8_t, int64_t>(G, gemmInteger<int8_t, int64_t>);
  case dtypePair(MESHRT_U8, MESHRT_I32):
    return gemmBatches<uint8_t, int32_t>(G, gemmInteger<uint8_t, int32_t>);
  case dtypePair(MESHRT_U8, MESHRT_I64):
    return gemmBatches<uint8_t, int64_t>(G, gemmInteger<uint8_t, int64_t>);
  default:
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "dtypes " + std::to_string(int(G.Dtype)) + " into " +
                    std::to_string(int(G.CDtype)) +
                    " (a mixed GEMM widens f16 or bf16 into f32 or f64, "
                    "f32 into f64, or i8 or u8 into i32 or i64)");
  }
}

} // namespace

void gemm(const GemmArgs &G) {
  if (G.Batch < 0 || G.M < 0 || G.N < 0 || G.K < 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "negative size (batch " + std::to_string(G.Batch) + ", m " +
                    std::to_string(G.M) + ", n " + std::to_string(G.N) +
                    ", k " + std::to_string(G.K) + ")");
  if (G.M > kMaxBlasInt || G.N > kMaxBlasInt || G.K > kMaxBlasInt)
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "a size over 2^31-1 (the BLAS takes 32-bit sizes)");
  if (G.Batch == 0 || G.M == 0 || G.N == 0)
    return;
  if (!G.C || (G.K > 0 && (!G.A || !G.B)))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(!G.C   ? "c"
                                                           : !G.A ? "a"
                                                                  : "b") +
                                                   " is null");
  cblas(); // loaded (or the reason it cannot be) before any work
  if (G.CDtype != G.Dtype)
    return gemmMixed(G);
  switch (G.Dtype) {
  case MESHRT_F32:
    return gemmBatches<float>(G, gemmOne<float>);
  case MESHRT_F64:
    return gemmBatches<double>(G, gemmOne<double>);
  case MESHRT_F16:
    return gemmBatches<uint16_t>(G, gemmHalf<halfToFloat, floatToHalf>);
  case MESHRT_BF16:
    return gemmBatches<uint16_t>(G, gemmHalf<bfloat16ToFloat, floatToBFloat16>);
  default:
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "dtype " + std::to_string(int(G.Dtype)) +
                    " (a GEMM takes f16, bf16, f32 or f64)");
  }
}

namespace {

double loadElement(meshrt_dtype T, const void *P, int64_t I) {
  switch (T) {
  case MESHRT_F32:
    return static_cast<const float *>(P)[I];
  case MESHRT_F64:
    return static_cast<const double *>(P)[I];
  case MESHRT_F16:
    return halfToFloat(static_cast<const uint16_t *>(P)[I]);
  default:
    return bfloat16ToFloat(static_cast<const uint16_t *>(P)[I]);
  }
}

void storeElement(meshrt_dtype T, void *P, int64_t I, double V) {
  switch (T) {
  case MESHRT_F32:
    static_cast<float *>(P)[I] = float(V);
    return;
  case MESHRT_F64:
    static_cast<double *>(P)[I] = V;
    return;
  case MESHRT_F16:
    static_cast<uint16_t *>(P)[I] = floatToHalf(float(V));
    return;
  default:
    static_cast<uint16_t *>(P)[I] = floatToBFloat16(float(V));
  }
}

} // namespace

void gemmEpilogue(const GemmArgs &G, const void *Bias, int32_t Epilogue) {
  if (Epilogue < MESHRT_EPILOGUE_NONE || Epilogue > MESHRT_EPILOGUE_GELU)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "unknown epilogue " + std::to_string(Epilogue) +
                    " (a meshrt_epilogue: 0 none, 1 ReLU, 2 GELU)");
  bool FloatC = G.CDtype == MESHRT_F16 || G.CDtype == MESHRT_BF16 ||
                G.CDtype == MESHRT_F32 || G.CDtype == MESHRT_F64;
  if ((Bias || Epilogue != MESHRT_EPILOGUE_NONE) && !FloatC)
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "a bias or an activation on C of dtype " +
                    std::to_string(int(G.CDtype)) +
                    " (the epilogue takes f16, bf16, f32 or f64)");
  gemm(G);
  if ((!Bias && Epilogue == MESHRT_EPILOGUE_NONE) || G.Batch == 0 || G.M == 0 ||
      G.N == 0)
    return;
  // The bias and the activation in double, rounded once to the dtype (as
  // cuBLASLt's epilogue works on its f32 or f64 accumulator).
  for (int64_t B = 0; B < G.Batch; ++B)
    for (int64_t I = 0; I < G.M; ++I)
      for (int64_t J = 0; J < G.N; ++J) {
        int64_t At = B * G.CStrides[0] + I * G.CStrides[1] + J * G.CStrides[2];
        double X = loadElement(G.CDtype, G.C, At);
        if (Bias)
          X += loadElement(G.CDtype, Bias, J);
        if (Epilogue == MESHRT_EPILOGUE_RELU)
          X = X > 0 ? X : 0;
        else if (Epilogue == MESHRT_EPILOGUE_GELU)
          X = 0.5 * X *
              (1 + std::tanh(0.7978845608028654 * (X + 0.044715 * X * X * X)));
        storeElement(G.CDtype, G.C, At, X);
      }
}

} // namespace detail
} // namespace meshrt
