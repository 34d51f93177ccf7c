//===- GemmTest.cpp - meshrt_gemm against a reference loop ----------------===//
//
// Every operand layout meshrt_gemm distinguishes (row-major, column-major,
// strided and broadcast operands that it packs, a transposed or strided
// output), batches, the matrix-vector and dot shapes, f32/f64/f16/bf16,
// mixed precision (meshrt_gemm_mixed), accumulate and overwrite, empty sizes,
// and the errors, each against a plain triple loop in double on the same
// strided views. Values are small integers, so f32 and f64 results must be
// exact whatever order the library sums in; f16/bf16 results must equal the f32
// result rounded once.
//
//===----------------------------------------------------------------------===//

#include "meshrt/Half.h"
#include "meshrt/meshrt.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

namespace {

/// A strided view (in elements) of Batch x Rows x Cols over a buffer.
struct View {
  int64_t Offset, BatchStride, RowStride, ColStride;
  int64_t at(int64_t B, int64_t I, int64_t J) const {
    return Offset + B * BatchStride + I * RowStride + J * ColStride;
  }
};

/// The extent of a buffer holding every element of the view.
int64_t extent(const View &V, int64_t Batch, int64_t Rows, int64_t Cols) {
  int64_t Max = V.Offset;
  for (int64_t B : {int64_t(0), Batch - 1})
    for (int64_t I : {int64_t(0), Rows - 1})
      for (int64_t J : {int64_t(0), Cols - 1})
        Max = std::max(Max, V.at(B, I, J));
  return Max + 1;
}

struct Case {
  int64_t Batch, M, N, K;
  View A, B, C;
  bool Accumulate;
};

template <typename T> T value(int64_t I) { return T(int((I * 37) % 7) - 3); }

template <typename T>
void check(const Case &Cs, meshrt_dtype Dtype = MESHRT_F32) {
  std::vector<T> A(extent(Cs.A, Cs.Batch, Cs.M, Cs.K));
  std::vector<T> B(extent(Cs.B, Cs.Batch, Cs.K, Cs.N));
  std::vector<T> C(extent(Cs.C, Cs.Batch, Cs.M, Cs.N));
  for (size_t I = 0; I < A.size(); ++I)
    A[I] = value<T>(int64_t(I));
  for (size_t I = 0; I < B.size(); ++I)
    B[I] = value<T>(int64_t(I) + 3);
  for (size_t I = 0; I < C.size(); ++I)
    C[I] = value<T>(int64_t(I) + 5);
  std::vector<T> Want = C;
  for (int64_t Bt = 0; Bt < Cs.Batch; ++Bt)
    for (int64_t I = 0; I < Cs.M; ++I)
      for (int64_t J = 0; J < Cs.N; ++J) {
        double S = Cs.Accumulate ? double(C[Cs.C.at(Bt, I, J)]) : 0.0;
        for (int64_t P = 0; P < Cs.K; ++P)
          S += double(A[Cs.A.at(Bt, I, P)]) * double(B[Cs.B.at(Bt, P, J)]);
        Want[Cs.C.at(Bt, I, J)] = T(S);
      }
  ASSERT_EQ(meshrt_gemm(Dtype, Cs.Batch, Cs.M, Cs.N, Cs.K,
                        A.data() + Cs.A.Offset, Cs.A.BatchStride,
                        Cs.A.RowStride, Cs.A.ColStride, B.data() + Cs.B.Offset,
                        Cs.B.BatchStride, Cs.B.RowStride, Cs.B.ColStride,
                        C.data() + Cs.C.Offset, Cs.C.BatchStride,
                        Cs.C.RowStride, Cs.C.ColStride, Cs.Accumulate),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  for (size_t I = 0; I < C.size(); ++I)
    ASSERT_EQ(C[I], Want[I]) << "element " << I;
}

class Gemm : public ::testing::Test {
protected:
  void SetUp() override { meshrt_set_error_policy(MESHRT_ERRORS_RETURN); }
};

// Row-major operands: (m, k) = (5, 7), (7, 3), (5, 3), packed.
TEST_F(Gemm, RowMajor) {
  for (bool Acc : {false, true}) {
    check<float>({1, 5, 3, 7, {0, 0, 7, 1}, {0, 0, 3, 1}, {0, 0, 3, 1}, Acc});
    check<double>({1, 5, 3, 7, {0, 0, 7, 1}, {0, 0, 3, 1}, {0, 0, 3, 1}, Acc},
                  MESHRT_F64);
  }
}

// Column-major operands (a transposed view), leading dims larger than the
// extent, an offset, and a column-major output.
TEST_F(Gemm, ColumnMajorAndLeadingDims) {
  check<float>({1, 5, 3, 7, {2, 0, 1, 6}, {0, 0, 1, 9}, {1, 0, 4, 1}, true});
  check<float>({1, 5, 3, 7, {0, 0, 9, 1}, {0, 0, 3, 1}, {0, 0, 1, 5}, false});
}

// Layouts the library cannot read: strides of 2 in both dims, a broadcast
// (stride 0) along k, negative strides, an output with no unit stride.
TEST_F(Gemm, PackedOperands) {
  check<float>({1, 4, 6, 5, {0, 0, 10, 2}, {0, 0, 12, 2}, {0, 0, 6, 1}, true});
  check<float>({1, 4, 6, 5, {0, 0, 1, 0}, {0, 0, 6, 1}, {0, 0, 6, 1}, false});
  check<float>({1, 4, 6, 5, {19, 0, -5, -1}, {0, 0, 6, 1}, {0, 0, 6, 1}, true});
  check<float>({1, 4, 6, 5, {0, 0, 5, 1}, {0, 0, 6, 1}, {0, 0, 14, 2}, true});
}

// Batches, with a shared (stride 0) operand and strided batches.
TEST_F(Gemm, Batches) {
  check<float>({3, 4, 6, 5, {0, 20, 5, 1}, {0, 30, 6, 1}, {0, 24, 6, 1}, true});
  check<float>({3, 4, 6, 5, {0, 0, 5, 1}, {0, 40, 1, 5}, {0, 30, 6, 1}, false});
}

// matvec (n = 1), vecmat (m = 1) with strided vectors, and dot.
TEST_F(Gemm, Vectors) {
  check<float>({1, 6, 1, 5, {0, 0, 5, 1}, {0, 0, 3, 0}, {0, 0, 2, 0}, true});
  check<float>({1, 6, 1, 5, {0, 0, 1, 6}, {0, 0, 1, 0}, {0, 0, 1, 0}, false});
  check<float>({1, 1, 6, 5, {0, 0, 0, 2}, {0, 0, 6, 1}, {0, 0, 0, 3}, true});
  check<double>({1, 1, 1, 9, {0, 0, 0, 1}, {0, 0, 2, 0}, {0, 0, 0, 0}, true},
                MESHRT_F64);
  check<float>({1, 1, 1, 9, {0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 0}, false});
  // Vectors read or written backwards (negative increments).
  check<float>({1, 6, 1, 5, {0, 0, 5, 1}, {4, 0, -1, 0}, {0, 0, 1, 0}, true});
  check<float>({1, 6, 1, 5, {0, 0, 5, 1}, {0, 0, 1, 0}, {5, 0, -1, 0}, true});
  check<float>({1, 1, 6, 5, {4, 0, 0, -1}, {0, 0, 6, 1}, {0, 0, 0, 1}, false});
  check<float>({1, 1, 6, 5, {0, 0, 0, 1}, {0, 0, 6, 1}, {10, 0, 0, -2}, true});
}

// Empty products: k = 0 overwrites with zeros or leaves C; m = 0 touches
// nothing (null pointers allowed).
TEST_F(Gemm, EmptySizes) {
  check<float>({1, 3, 4, 0, {0, 0, 1, 1}, {0, 0, 4, 1}, {0, 0, 4, 1}, false});
  check<float>({1, 3, 4, 0, {0, 0, 1, 1}, {0, 0, 4, 1}, {0, 0, 4, 1}, true});
  EXPECT_EQ(meshrt_gemm(MESHRT_F32, 1, 0, 4, 4, nullptr, 0, 4, 1, nullptr, 0, 4,
                        1, nullptr, 0, 4, 1, 0),
            MESHRT_SUCCESS);
}

// f16 and bf16: the f32 product of the widened values, rounded once.
TEST_F(Gemm, HalfFormats) {
  for (meshrt_dtype T : {MESHRT_F16, MESHRT_BF16}) {
    auto Widen =
        T == MESHRT_F16 ? meshrt::halfToFloat : meshrt::bfloat16ToFloat;
    auto Narrow =
        T == MESHRT_F16 ? meshrt::floatToHalf : meshrt::floatToBFloat16;
    const int64_t M = 3, N = 4, K = 5;
    std::vector<uint16_t> A(M * K), B(N * K), C(M * N);
    for (int64_t I = 0; I < M * K; ++I)
      A[I] = Narrow(0.25f * float(I % 7) - 0.5f);
    for (int64_t I = 0; I < N * K; ++I)
      B[I] = Narrow(0.125f * float(I % 5) + 0.5f);
    for (int64_t I = 0; I < M * N; ++I)
      C[I] = Narrow(float(I) / 3.0f);
    std::vector<uint16_t> Want(M * N);
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J) {
        float S = Widen(C[I * N + J]);
        for (int64_t P = 0; P < K; ++P)
          S += Widen(A[I * K + P]) * Widen(B[J * K + P]); // B read transposed
        Want[I * N + J] = Narrow(S);
      }
    ASSERT_EQ(meshrt_gemm(T, 1, M, N, K, A.data(), 0, K, 1, B.data(), 0, 1, K,
                          C.data(), 0, N, 1, 1),
              MESHRT_SUCCESS)
        << meshrt_last_error();
    for (int64_t I = 0; I < M * N; ++I)
      EXPECT_EQ(C[I], Want[I]) << "element " << I << " of dtype " << T;
  }
}

/// A meshrt_gemm_mixed case: A and B of S and C of T laid out as the views
/// of `Cs` say, the result the loops compute, and the call under test.
template <typename S, typename T> struct MixedCase {
  const Case &Cs;
  std::vector<S> A, B;
  std::vector<T> C, Want;
  explicit MixedCase(const Case &Cs)
      : Cs(Cs), A(extent(Cs.A, Cs.Batch, Cs.M, Cs.K)),
        B(extent(Cs.B, Cs.Batch, Cs.K, Cs.N)),
        C(extent(Cs.C, Cs.Batch, Cs.M, Cs.N)) {}
  /// Want: C's old value (when accumulating) plus the sum over k of
  /// Mul(a, b), all in Acc, then converted to T.
  template <typename Acc, typename MulFn> void computeWant(MulFn Mul) {
    Want = C;
    for (int64_t Bt = 0; Bt < Cs.Batch; ++Bt)
      for (int64_t I = 0; I < Cs.M; ++I)
        for (int64_t J = 0; J < Cs.N; ++J) {
          Acc Sum = Cs.Accumulate ? Acc(C[Cs.C.at(Bt, I, J)]) : Acc(0);
          for (int64_t P = 0; P < Cs.K; ++P)
            Sum += Mul(A[Cs.A.at(Bt, I, P)], B[Cs.B.at(Bt, P, J)]);
          Want[Cs.C.at(Bt, I, J)] = T(Sum);
        }
  }
  void run(meshrt_dtype In, meshrt_dtype Out) {
    EXPECT_EQ(meshrt_gemm_mixed(
                  In, Out, Cs.Batch, Cs.M, Cs.N, Cs.K, A.data() + Cs.A.Offset,
                  Cs.A.BatchStride, Cs.A.RowStride, Cs.A.ColStride,
                  B.data() + Cs.B.Offset, Cs.B.BatchStride, Cs.B.RowStride,
                  Cs.B.ColStride, C.data() + Cs.C.Offset, Cs.C.BatchStride,
                  Cs.C.RowStride, Cs.C.ColStride, Cs.Accumulate),
              MESHRT_SUCCESS)
        << meshrt_last_error();
  }
};

/// meshrt_gemm_mixed on the strided views of `Cs`: A and B of S (dtype
/// `In`, values `Widen` reads), C of the wider T (dtype `Out`), against the
/// loop in double, exactly: A holds multiples of 4 up to 60, B eighths up to
/// 1.75, C (when accumulated) 64ths plus 2^-40, so every sum is exact in T.
/// Returns how many results S cannot hold: a result rounded to S, not
/// computed in T, fails wherever that count is not zero.
template <typename S, typename T>
int checkMixed(const Case &Cs, meshrt_dtype In, meshrt_dtype Out,
               S (*Narrow)(float), double (*Widen)(S)) {
  MixedCase<S, T> X(Cs);
  for (size_t I = 0; I < X.A.size(); ++I)
    X.A[I] = Narrow(float(int(I * 7 % 31) - 15) * 4.0f);
  for (size_t I = 0; I < X.B.size(); ++I)
    X.B[I] = Narrow(float(int(I * 11 % 29) - 14) / 8.0f);
  for (size_t I = 0; I < X.C.size(); ++I)
    X.C[I] = T(int(I % 9) * 64 + 1) / T(64) + T(std::ldexp(1.0, -40));
  X.template computeWant<double>([&](S U, S V) { return Widen(U) * Widen(V); });
  X.run(In, Out);
  int Inexact = 0;
  for (size_t I = 0; I < X.C.size(); ++I) {
    EXPECT_EQ(X.C[I], X.Want[I])
        << "element " << I << ", " << In << " into " << Out;
    Inexact += Widen(Narrow(float(X.Want[I]))) != double(X.Want[I]);
  }
  return Inexact;
}

double halfValue(uint16_t V) { return meshrt::halfToFloat(V); }
double bfloat16Value(uint16_t V) { return meshrt::bfloat16ToFloat(V); }
float floatOf(float V) { return V; }
double floatValue(float V) { return V; }

// meshrt_gemm_mixed: f16 and bf16 into f32 and f64, f32 into f64, on the
// layouts meshrt_gemm distinguishes (row-major, a transposed B, a packed
// strided A, a column-major C with a leading dim, batches with a broadcast
// A, a matvec), accumulating and overwriting: each the exact product of
// the widened inputs, never rounded to the input type.
TEST_F(Gemm, MixedPrecision) {
  const Case Cases[] = {
      {1, 5, 3, 7, {0, 0, 7, 1}, {0, 0, 3, 1}, {0, 0, 3, 1}, true},
      {1, 5, 3, 7, {0, 0, 7, 1}, {0, 0, 1, 7}, {1, 0, 1, 6}, false},
      {1, 4, 6, 5, {0, 0, 10, 2}, {0, 0, 6, 1}, {0, 0, 6, 1}, true},
      {3, 4, 6, 5, {0, 0, 5, 1}, {0, 30, 6, 1}, {0, 24, 6, 1}, false},
      {1, 6, 1, 5, {0, 0, 5, 1}, {0, 0, 1, 0}, {0, 0, 1, 0}, true},
  };
  int Inexact[5] = {};
  for (const Case &Cs : Cases) {
    Inexact[0] += checkMixed<uint16_t, float>(Cs, MESHRT_F16, MESHRT_F32,
                                              meshrt::floatToHalf, halfValue);
    Inexact[1] += checkMixed<uint16_t, float>(
        Cs, MESHRT_BF16, MESHRT_F32, meshrt::floatToBFloat16, bfloat16Value);
    Inexact[2] += checkMixed<uint16_t, double>(Cs, MESHRT_F16, MESHRT_F64,
                                               meshrt::floatToHalf, halfValue);
    Inexact[3] += checkMixed<uint16_t, double>(
        Cs, MESHRT_BF16, MESHRT_F64, meshrt::floatToBFloat16, bfloat16Value);
    Inexact[4] += checkMixed<float, double>(Cs, MESHRT_F32, MESHRT_F64, floatOf,
                                            floatValue);
  }
  // Each pair saw results its input type cannot hold.
  for (int Pair = 0; Pair < 5; ++Pair)
    EXPECT_GT(Inexact[Pair], 0) << "pair " << Pair;
  // Equal dtypes are meshrt_gemm.
  checkMixed<float, float>(Cases[0], MESHRT_F32, MESHRT_F32, floatOf,
                           floatValue);
}

// Every finite f16 and bf16 value widened through meshrt_gemm_mixed: A holds
// each bit pattern once, row-major in rows of 256 (the runtime widens
// contiguous f16 rows with F16C where the CPU has it, 8 at a time, and the
// rest one by one), B is the identity, so C must equal the portable
// widening of each element exactly.
TEST_F(Gemm, MixedPrecisionEveryValue) {
  for (meshrt_dtype T : {MESHRT_F16, MESHRT_BF16}) {
    auto Widen =
        T == MESHRT_F16 ? meshrt::halfToFloat : meshrt::bfloat16ToFloat;
    uint16_t ExpMask = T == MESHRT_F16 ? 0x7c00 : 0x7f80;
    std::vector<uint16_t> A;
    for (uint32_t Bits = 0; Bits < 0x10000; ++Bits)
      if ((Bits & ExpMask) != ExpMask)
        A.push_back(uint16_t(Bits));
    const int64_t K = 256, M = int64_t(A.size()) / K;
    ASSERT_EQ(M * K, int64_t(A.size()));
    std::vector<uint16_t> Identity(K * K, 0);
    uint16_t One = T == MESHRT_F16 ? meshrt::floatToHalf(1.0f)
                                   : meshrt::floatToBFloat16(1.0f);
    for (int64_t I = 0; I < K; ++I)
      Identity[I * K + I] = One;
    std::vector<float> C(M * K, -1.0f);
    ASSERT_EQ(meshrt_gemm_mixed(T, MESHRT_F32, 1, M, K, K, A.data(), 0, K, 1,
                                Identity.data(), 0, K, 1, C.data(), 0, K, 1, 0),
              MESHRT_SUCCESS)
        << meshrt_last_error();
    for (int64_t I = 0; I < M * K; ++I)
      ASSERT_EQ(C[I], Widen(A[I])) << "bits " << std::hex << A[I];
  }
}

/// meshrt_gemm_mixed of 8-bit integers S (dtype `In`) into T (dtype `Out`)
/// on the views of `Cs`, against the loop in wrapping integer arithmetic
/// (uint64_t, cast to T): exact, whatever float GEMM the runtime sums in.
/// C starts at `CStart` plus a small pattern.
template <typename S, typename T>
void checkInteger(const Case &Cs, meshrt_dtype In, meshrt_dtype Out,
                  T CStart = 0) {
  MixedCase<S, T> X(Cs);
  // Extremes included: -128 (or 255) times itself is the largest product.
  const int Extreme = std::is_signed_v<S> ? -128 : 255;
  const int Shift = std::is_signed_v<S> ? 125 : 0;
  for (size_t I = 0; I < X.A.size(); ++I)
    X.A[I] = S(I % 5 == 0 ? Extreme : int(I * 37 % 251) - Shift);
  for (size_t I = 0; I < X.B.size(); ++I)
    X.B[I] = S(I % 7 == 0 ? Extreme : int(I * 53 % 241) - Shift);
  for (size_t I = 0; I < X.C.size(); ++I)
    X.C[I] = T(uint64_t(CStart) + I % 11);
  X.template computeWant<uint64_t>(
      [](S U, S V) { return uint64_t(int64_t(U) * int64_t(V)); });
  X.run(In, Out);
  for (size_t I = 0; I < X.C.size(); ++I)
    ASSERT_EQ(X.C[I], X.Want[I])
        << "element " << I << ", " << In << " into " << Out << ", k " << Cs.K;
}

// i8 and u8 into i32 and i64 (quantized layers): exact on the layouts
// meshrt_gemm distinguishes, with k small enough for an sgemm to hold every
// sum (k < 1024 for i8, 256 for u8) and past it (a dgemm), accumulating into
// values near the top of i32 so that the sums wrap as the loops' do.
TEST_F(Gemm, IntegerProducts) {
  const Case Cases[] = {
      {1, 5, 3, 7, {0, 0, 7, 1}, {0, 0, 3, 1}, {0, 0, 3, 1}, true},
      {1, 5, 3, 7, {0, 0, 7, 1}, {0, 0, 1, 7}, {1, 0, 1, 6}, false},
      {3, 4, 6, 5, {0, 0, 10, 2}, {0, 30, 6, 1}, {0, 24, 6, 1}, true},
      {1, 6, 1, 5, {0, 0, 5, 1}, {0, 0, 1, 0}, {0, 0, 1, 0}, true},
      {1, 3, 4, 300, {0, 0, 300, 1}, {0, 0, 4, 1}, {0, 0, 4, 1}, true},
      {1, 3, 4, 1500, {0, 0, 1500, 1}, {0, 0, 1, 1500}, {0, 0, 4, 1}, false},
  };
  for (const Case &Cs : Cases) {
    checkInteger<int8_t, int32_t>(Cs, MESHRT_I8, MESHRT_I32);
    checkInteger<uint8_t, int32_t>(Cs, MESHRT_U8, MESHRT_I32);
    checkInteger<int8_t, int64_t>(Cs, MESHRT_I8, MESHRT_I64);
    checkInteger<uint8_t, int64_t>(Cs, MESHRT_U8, MESHRT_I64);
    checkInteger<int8_t, int32_t>(Cs, MESHRT_I8, MESHRT_I32,
                                  std::numeric_limits<int32_t>::max() - 5);
    checkInteger<uint8_t, int64_t>(Cs, MESHRT_U8, MESHRT_I64,
                                   std::numeric_limits<int64_t>::max() - 5);
  }
}

// A pair that is no widening (narrowing, f16 into bf16, integers) is
// refused with both dtypes named, and C is left as it was.
TEST_F(Gemm, MixedPrecisionErrors) {
  float X[4] = {1, 2, 3, 4};
  uint16_t H[4] = {0, 0, 0, 0};
  EXPECT_EQ(meshrt_gemm_mixed(MESHRT_F32, MESHRT_F16, 1, 2, 2, 2, X, 0, 2, 1, X,
                              0, 2, 1, H, 0, 2, 1, 0),
            MESHRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(meshrt_last_error()).find("meshrt_gemm_mixed"),
            std::string::npos)
      << meshrt_last_error();
  EXPECT_NE(std::string(meshrt_last_error()).find("widens"), std::string::npos)
      << meshrt_last_error();
  EXPECT_EQ(H[0], 0);
  EXPECT_EQ(meshrt_gemm_mixed(MESHRT_F16, MESHRT_BF16, 1, 2, 2, 2, H, 0, 2, 1,
                              H, 0, 2, 1, H, 0, 2, 1, 0),
            MESHRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(meshrt_gemm_mixed(MESHRT_I32, MESHRT_F64, 1, 2, 2, 2, X, 0, 2, 1, X,
                              0, 2, 1, X, 0, 2, 1, 0),
            MESHRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(meshrt_gemm_mixed(MESHRT_F16, MESHRT_F32, 1, -2, 2, 2, H, 0, 2, 1,
                              H, 0, 2, 1, X, 0, 2, 1, 0),
            MESHRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(Gemm, Errors) {
  float X[4] = {1, 2, 3, 4};
  EXPECT_EQ(meshrt_gemm(MESHRT_F32, 1, -1, 2, 2, X, 0, 2, 1, X, 0, 2, 1, X, 0,
                        2, 1, 0),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(meshrt_last_error()).find("negative size"),
            std::string::npos)
      << meshrt_last_error();
  EXPECT_EQ(meshrt_gemm(MESHRT_F32, 1, 2, 2, 2, nullptr, 0, 2, 1, X, 0, 2, 1, X,
                        0, 2, 1, 0),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(meshrt_last_error()).find("a is null"),
            std::string::npos);
  EXPECT_EQ(meshrt_gemm(MESHRT_I32, 1, 2, 2, 2, X, 0, 2, 1, X, 0, 2, 1, X, 0, 2,
                        1, 0),
            MESHRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(meshrt_last_error()).find("meshrt_gemm"),
            std::string::npos);
}

// meshrt_gemm_epilogue (the gpu-on-host form of meshrt_gpu_gemm): the
// product, then the bias along the columns and the activation, against the
// same loop in double: exact for ReLU on small integers, 1e-6 relative for
// the tanh GELU; a transposed output, batches with a broadcast operand, f16
// (the result rounded once from the f32 product); an unknown epilogue is an
// error that names it.
TEST_F(Gemm, Epilogues) {
  const int64_t Batch = 2, M = 3, N = 4, K = 5;
  std::vector<float> A(size_t(Batch * M * K)), B(size_t(K * N)), Bias(N);
  for (size_t I = 0; I < A.size(); ++I)
    A[I] = value<float>(int64_t(I));
  for (size_t I = 0; I < B.size(); ++I)
    B[I] = value<float>(int64_t(I) + 3);
  for (int64_t J = 0; J < N; ++J)
    Bias[size_t(J)] = float(J) - 1.5f;
  auto gelu = [](double X) {
    return 0.5 * X *
           (1 + std::tanh(0.7978845608028654 * (X + 0.044715 * X * X * X)));
  };
  for (int32_t Epi :
       {MESHRT_EPILOGUE_NONE, MESHRT_EPILOGUE_RELU, MESHRT_EPILOGUE_GELU})
    for (bool WithBias : {false, true})
      for (bool Transposed : {false, true}) {
        // C row-major [b][m][n], or each batch column-major.
        int64_t CRow = Transposed ? 1 : N, CCol = Transposed ? M : 1;
        std::vector<float> C(size_t(Batch * M * N), 7.0f);
        ASSERT_EQ(meshrt_gemm_epilogue(MESHRT_F32, Batch, M, N, K, A.data(),
                                       M * K, K, 1, B.data(), 0, N, 1, C.data(),
                                       M * N, CRow, CCol, 0,
                                       WithBias ? Bias.data() : nullptr, Epi),
                  MESHRT_SUCCESS)
            << meshrt_last_error();
        for (int64_t Bt = 0; Bt < Batch; ++Bt)
          for (int64_t I = 0; I < M; ++I)
            for (int64_t J = 0; J < N; ++J) {
              double S = WithBias ? double(Bias[size_t(J)]) : 0.0;
              for (int64_t P = 0; P < K; ++P)
                S += double(A[size_t(Bt * M * K + I * K + P)]) *
                     double(B[size_t(P * N + J)]);
              if (Epi == MESHRT_EPILOGUE_RELU)
                S = S > 0 ? S : 0;
              else if (Epi == MESHRT_EPILOGUE_GELU)
                S = gelu(S);
              float Got = C[size_t(Bt * M * N + I * CRow + J * CCol)];
              EXPECT_NEAR(Got, S, 1e-6 * std::max(1.0, std::fabs(S)))
                  << "epilogue " << Epi << " bias " << WithBias
                  << " transposed " << Transposed << " at " << Bt << "," << I
                  << "," << J;
            }
      }
  // f16: the product's f32 value plus the bias, ReLU, rounded once.
  std::vector<uint16_t> HA(size_t(M * K)), HB(size_t(K * N)), HBias(N),
      HC(size_t(M * N));
  for (size_t I = 0; I < HA.size(); ++I)
    HA[I] = meshrt::floatToHalf(A[I]);
  for (size_t I = 0; I < HB.size(); ++I)
    HB[I] = meshrt::floatToHalf(B[I]);
  for (int64_t J = 0; J < N; ++J)
    HBias[size_t(J)] = meshrt::floatToHalf(Bias[size_t(J)]);
  ASSERT_EQ(meshrt_gemm_epilogue(MESHRT_F16, 1, M, N, K, HA.data(), 0, K, 1,
                                 HB.data(), 0, N, 1, HC.data(), 0, N, 1, 0,
                                 HBias.data(), MESHRT_EPILOGUE_RELU),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N; ++J) {
      double S = double(Bias[size_t(J)]);
      for (int64_t P = 0; P < K; ++P)
        S += double(A[size_t(I * K + P)]) * double(B[size_t(P * N + J)]);
      EXPECT_EQ(HC[size_t(I * N + J)],
                meshrt::floatToHalf(float(S > 0 ? S : 0)))
          << I << "," << J;
    }
  float X[4] = {1, 2, 3, 4};
  EXPECT_EQ(meshrt_gemm_epilogue(MESHRT_F32, 1, 2, 2, 1, X, 0, 1, 1, X, 0, 2, 1,
                                 X, 0, 2, 1, 0, nullptr, 3),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(meshrt_last_error()).find("unknown epilogue 3"),
            std::string::npos)
      << meshrt_last_error();
}

// meshrt_gemm_epilogue_mixed (the gpu-on-host form of
// meshrt_gpu_gemm_mixed): bf16 and f16 inputs into f32, the f32 bias and the
// activation on the f32 result, which the inputs' type cannot hold (a
// product rounded to it fails); an activation on an integer C is refused.
TEST_F(Gemm, MixedEpilogues) {
  const int64_t M = 3, N = 4, K = 5;
  std::vector<float> A(size_t(M * K)), B(size_t(K * N)), Bias(N);
  for (int64_t I = 0; I < M * K; ++I)
    A[size_t(I)] = 1 + float((I * 7) % 13) / 128;
  for (int64_t I = 0; I < K * N; ++I)
    B[size_t(I)] = float((I * 5) % 11 - 5) / 64 + 1.0f / 128;
  for (int64_t J = 0; J < N; ++J)
    Bias[size_t(J)] = float(J) / 4 - 0.25f;
  for (meshrt_dtype In : {MESHRT_BF16, MESHRT_F16})
    for (int32_t Epi : {MESHRT_EPILOGUE_RELU, MESHRT_EPILOGUE_GELU}) {
      auto Narrow =
          In == MESHRT_F16 ? meshrt::floatToHalf : meshrt::floatToBFloat16;
      auto Widen =
          In == MESHRT_F16 ? meshrt::halfToFloat : meshrt::bfloat16ToFloat;
      std::vector<uint16_t> HA(A.size()), HB(B.size());
      for (size_t I = 0; I < A.size(); ++I)
        HA[I] = Narrow(A[I]);
      for (size_t I = 0; I < B.size(); ++I)
        HB[I] = Narrow(B[I]);
      std::vector<float> C(size_t(M * N), 7.0f);
      ASSERT_EQ(meshrt_gemm_epilogue_mixed(
                    In, MESHRT_F32, 1, M, N, K, HA.data(), 0, K, 1, HB.data(),
                    0, N, 1, C.data(), 0, N, 1, 0, Bias.data(), Epi),
                MESHRT_SUCCESS)
          << meshrt_last_error();
      bool Exposed = false;
      for (int64_t I = 0; I < M; ++I)
        for (int64_t J = 0; J < N; ++J) {
          double S = Bias[size_t(J)];
          for (int64_t P = 0; P < K; ++P)
            S += double(Widen(HA[size_t(I * K + P)])) *
                 double(Widen(HB[size_t(P * N + J)]));
          S = Epi == MESHRT_EPILOGUE_RELU
                  ? (S > 0 ? S : 0)
                  : 0.5 * S *
                        (1 + std::tanh(0.7978845608028654 *
                                       (S + 0.044715 * S * S * S)));
          float Got = C[size_t(I * N + J)];
          EXPECT_NEAR(Got, S, 1e-6 * std::max(1.0, std::fabs(S)))
              << "dtype " << In << " epilogue " << Epi << " at " << I << ","
              << J;
          Exposed |= std::fabs(Widen(Narrow(float(S))) - S) > 1e-4;
        }
      EXPECT_TRUE(Exposed) << "the values do not expose a rounded result";
    }
  int8_t I8[4] = {1, 2, 3, 4};
  int32_t I32[4] = {};
  EXPECT_EQ(meshrt_gemm_epilogue_mixed(MESHRT_I8, MESHRT_I32, 1, 2, 2, 2, I8, 0,
                                       2, 1, I8, 0, 2, 1, I32, 0, 2, 1, 0,
                                       nullptr, MESHRT_EPILOGUE_RELU),
            MESHRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(meshrt_last_error())
                .find("meshrt_gemm_epilogue_mixed: a bias or an activation on "
                      "C of dtype"),
            std::string::npos)
      << meshrt_last_error();
  // Without one, the integer product is meshrt_gemm_mixed's.
  ASSERT_EQ(meshrt_gemm_epilogue_mixed(MESHRT_I8, MESHRT_I32, 1, 2, 2, 2, I8, 0,
                                       2, 1, I8, 0, 2, 1, I32, 0, 2, 1, 0,
                                       nullptr, MESHRT_EPILOGUE_NONE),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  EXPECT_EQ(I32[0], 7);
  EXPECT_EQ(I32[3], 22);
}

} // namespace

namespace {
// Run by ctest with MESHRT_BLAS_LIBRARY naming a library that does not
// exist (runtime.unit.gemm_missing_blas): the first product fails with an
// error naming it, and so does every later one; nothing crashes.
/// Whether the user's environment names the BLAS's kernels (read at start:
/// the first product sets OPENBLAS_CORETYPE itself).
const bool kCoreTypeInEnvironment =
    std::getenv("OPENBLAS_CORETYPE") || std::getenv("MESHRT_BLAS_CORETYPE");

/// The kernel family the loaded OpenBLAS runs (openblas_get_corename), or
/// "" when the BLAS is another library; after a first product.
std::string blasCore() {
  float X[4] = {1, 2, 3, 4};
  EXPECT_EQ(meshrt_gemm(MESHRT_F32, 1, 2, 2, 2, X, 0, 2, 1, X, 0, 2, 1, X, 0, 2,
                        1, 0),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  void *Lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  auto Core =
      Lib ? reinterpret_cast<char *(*)()>(dlsym(Lib, "openblas_get_corename"))
          : nullptr;
  return Core && Core() ? Core() : "";
}

/// Whether this is an Intel CPU with AVX2 (and FMA), and with AVX-512.
bool intelAvx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_is("intel") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
bool avx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

// OpenBLAS runs the kernels of the CPU's vector instructions, not its SSE3
// fallback (Prescott), on Intel CPUs it does not know by model (Debian 12's
// 0.3.21 on Emerald Rapids: 5x slower): libmeshrt names the kernel family
// from the CPU's features before loading it.
TEST(GemmCoreType, KernelsForTheCpu) {
  if (kCoreTypeInEnvironment)
    GTEST_SKIP() << "the core type is set in the environment";
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  std::string Core = blasCore();
  if (Core.empty() || !intelAvx2())
    GTEST_SKIP() << "needs OpenBLAS on an Intel CPU with AVX2 (core '" << Core
                 << "')";
  EXPECT_NE(Core, "Prescott");
  if (avx512())
    EXPECT_TRUE(Core == "SkylakeX" || Core == "Cooperlake") << Core;
  else
    EXPECT_EQ(Core, "Haswell");
}

// MESHRT_BLAS_CORETYPE=library keeps the library's own choice; where that
// is the SSE3 fallback on a CPU with AVX2, libmeshrt says so once, naming
// OPENBLAS_CORETYPE; otherwise it says nothing.
TEST(GemmCoreType, LibraryChoiceWarnsOnFallback) {
  const char *Mode = std::getenv("MESHRT_BLAS_CORETYPE");
  if (!Mode || std::string(Mode) != "library")
    GTEST_SKIP() << "needs MESHRT_BLAS_CORETYPE=library";
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  testing::internal::CaptureStderr();
  std::string Core = blasCore();
  blasCore();
  std::string Err = testing::internal::GetCapturedStderr();
  bool Fallback = Core == "Prescott" && __builtin_cpu_supports("avx2");
  if (Fallback) {
    EXPECT_NE(Err.find("runs its SSE3 kernels (Prescott)"), std::string::npos)
        << Err;
    EXPECT_NE(Err.find("OPENBLAS_CORETYPE=Haswell"), std::string::npos) << Err;
    EXPECT_EQ(Err.find("warning"), Err.rfind("warning")) << "twice: " << Err;
  } else {
    EXPECT_EQ(Err.find("warning"), std::string::npos) << Err;
  }
}

/// Every product (the first and the next) fails with MESHRT_ERROR_BACKEND
/// and a message holding each of `Parts`: the BLAS could not be set up.
void expectLoadFailure(const std::vector<std::string> &Parts) {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  float X[4] = {1, 2, 3, 4};
  for (int I = 0; I < 2; ++I) {
    EXPECT_EQ(meshrt_gemm(MESHRT_F32, 1, 2, 2, 2, X, 0, 2, 1, X, 0, 2, 1, X, 0,
                          2, 1, 0),
              MESHRT_ERROR_BACKEND);
    std::string Msg = meshrt_last_error();
    for (const std::string &Part : Parts)
      EXPECT_NE(Msg.find(Part), std::string::npos) << Msg;
  }
}

// Any other MESHRT_BLAS_CORETYPE is an error of every product, naming it.
TEST(GemmCoreType, BadSettingIsAnError) {
  const char *Mode = std::getenv("MESHRT_BLAS_CORETYPE");
  if (!Mode || std::string(Mode) != "Cooperlake")
    GTEST_SKIP() << "needs MESHRT_BLAS_CORETYPE=Cooperlake";
  expectLoadFailure(
      {"MESHRT_BLAS_CORETYPE='Cooperlake' is not auto or library"});
}

TEST(GemmMissingLibrary, ErrorNamesTheLibrary) {
  const char *Path = std::getenv("MESHRT_BLAS_LIBRARY");
  if (!Path || std::string(Path).find("no-such-blas") == std::string::npos)
    GTEST_SKIP() << "needs MESHRT_BLAS_LIBRARY=.../no-such-blas.so";
  expectLoadFailure({"cannot load the BLAS", Path});
}
} // namespace
