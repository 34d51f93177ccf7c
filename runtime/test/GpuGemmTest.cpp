//===- GpuGemmTest.cpp - meshrt_gpu_gemm against the emulated cuBLASLt ---===//
//
// The gemm mode of meshrt-gpu-tests: GPU products (meshrt_gpu_gemm) against
// the emulated cuBLASLt, numbers checked here, the cuBLASLt calls by
// check-gemm-trace.py.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"
#include "meshrt/Half.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <vector>

namespace gputest {

namespace {

size_t elementSize(meshrt_dtype T) {
  return T == MESHRT_F64 ? 8 : T == MESHRT_F32 ? 4 : 2;
}

/// Element `I` of a host buffer of dtype T, as a double.
double getElement(meshrt_dtype T, const std::vector<unsigned char> &B,
                  int64_t I) {
  const unsigned char *P = B.data() + size_t(I) * elementSize(T);
  switch (T) {
  case MESHRT_F64: {
    double D;
    std::memcpy(&D, P, 8);
    return D;
  }
  case MESHRT_F32: {
    float F;
    std::memcpy(&F, P, 4);
    return F;
  }
  default: {
    uint16_t H;
    std::memcpy(&H, P, 2);
    return T == MESHRT_F16 ? meshrt::halfToFloat(H)
                           : meshrt::bfloat16ToFloat(H);
  }
  }
}

/// Stores `V` (rounded to T) as element `I` of a host buffer of dtype T.
void putElement(meshrt_dtype T, std::vector<unsigned char> &B, int64_t I,
                double V) {
  unsigned char *P = B.data() + size_t(I) * elementSize(T);
  switch (T) {
  case MESHRT_F64:
    std::memcpy(P, &V, 8);
    return;
  case MESHRT_F32: {
    float F = float(V);
    std::memcpy(P, &F, 4);
    return;
  }
  default: {
    uint16_t H = T == MESHRT_F16 ? meshrt::floatToHalf(float(V))
                                 : meshrt::floatToBFloat16(float(V));
    std::memcpy(P, &H, 2);
  }
  }
}

/// `V` rounded to TF32 (10 mantissa bits), to nearest even.
double roundTf32(double V) {
  float F = float(V);
  uint32_t U;
  std::memcpy(&U, &F, 4);
  U = (U + 0xfffu + ((U >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&F, &U, 4);
  return F;
}

/// `V` rounded to bfloat16, to nearest even.
double roundBf16(double V) {
  return meshrt::bfloat16ToFloat(meshrt::floatToBFloat16(float(V)));
}

/// A device buffer of raw bytes (mgpuMemAlloc on the shared stream).
struct DeviceBytes {
  void *D = nullptr;
  size_t Bytes = 0;
  void *S = nullptr;
  DeviceBytes(const std::vector<unsigned char> &H, void *Stream)
      : Bytes(H.size()), S(Stream) {
    D = mgpuMemAlloc(Bytes, S, false);
    mgpuMemcpy(D, const_cast<unsigned char *>(H.data()), Bytes, S);
  }
  ~DeviceBytes() { mgpuMemFree(D, S); }
  DeviceBytes(const DeviceBytes &) = delete;
  DeviceBytes &operator=(const DeviceBytes &) = delete;
  char *at(int64_t Offset, meshrt_dtype T) const {
    return static_cast<char *>(D) + Offset * int64_t(elementSize(T));
  }
  /// The contents, read back (and the stream synchronised).
  std::vector<unsigned char> get() {
    std::vector<unsigned char> H(Bytes);
    mgpuMemcpy(H.data(), D, Bytes, S);
    mgpuStreamSynchronize(S);
    return H;
  }
};

/// Elements a Batch x Rows x Cols view with non-negative strides spans.
int64_t spanOf(int64_t Batch, int64_t Rows, int64_t Cols, const int64_t *St) {
  if (Batch == 0 || Rows == 0 || Cols == 0)
    return 1;
  return (Batch - 1) * St[0] + (Rows - 1) * St[1] + (Cols - 1) * St[2] + 1;
}

/// One product: shapes, strides (batch, row, col), options, where the views
/// start in their buffers, the values, and the tolerance of the result
/// (relative to max(1, |reference|)). The reference is computed here in
/// double from the values as stored in the dtype, with the f32 inputs
/// rounded as the precision says.
struct GemmCase {
  std::string Name;
  meshrt_dtype T = MESHRT_F32; // A's and B's.
  /// C's and the bias's, where it is not T (meshrt_gpu_gemm_mixed).
  std::optional<meshrt_dtype> Out;
  int64_t Batch = 1, M = 5, N = 7, K = 3;
  int64_t AS[3] = {0, 3, 1}, BS[3] = {0, 7, 1}, CS[3] = {0, 7, 1};
  bool Accumulate = false, Bias = false;
  int32_t Epilogue = MESHRT_EPILOGUE_NONE;
  int32_t Precision = MESHRT_PRECISION_HIGHEST;
  double Tol = 1e-6;
  int64_t AOff = 0, BOff = 0, COff = 0;
  void *Stream = nullptr;
  /// Values of A[b](i, p) and B[b](p, j).
  double (*AVal)(int64_t, int64_t, int64_t) = [](int64_t B, int64_t I,
                                                 int64_t P) {
    return double((B * 5 + I * 3 + P * 7) % 17 - 8) / 8;
  };
  double (*BVal)(int64_t, int64_t, int64_t) = [](int64_t B, int64_t P,
                                                 int64_t J) {
    return double((B * 3 + P * 5 + J * 2) % 13 - 6) / 4;
  };
  /// The result must differ from the product of the unrounded inputs by
  /// more than 1e-5 somewhere (TF32 and BF16 precision).
  bool ExposeRounding = false;
  /// The reference must differ from itself rounded to T by more than 1e-4
  /// somewhere, so that a mixed product rounded to its inputs' type fails.
  bool ExposeNarrowing = false;
};

// Filler of A's and B's gaps (a product that read one would be far off) and
// of C's (which must stay as they were).
const double kGapIn = 1000, kGapOut = -96;

GemmCase baseCase(const std::string &Name) {
  GemmCase G;
  G.Name = Name;
  return G;
}

/// A case's host data: A, B, C (its view and the filler around it) and the
/// bias, as stored in their dtypes, and the expected contents of C's buffer
/// (`Want`: with the precision's rounding; `Exact`: without), `InView`
/// where the product writes.
struct GemmData {
  std::vector<unsigned char> A, B, C, Bias;
  std::vector<double> Want, Exact;
  std::vector<bool> InView;
};

/// Element offsets of A(b, i, p), B(b, p, j) and C(b, i, j) in their
/// buffers.
struct GemmIndex {
  const GemmCase &G;
  int64_t a(int64_t Bt, int64_t I, int64_t P) const {
    return G.AOff + Bt * G.AS[0] + I * G.AS[1] + P * G.AS[2];
  }
  int64_t b(int64_t Bt, int64_t P, int64_t J) const {
    return G.BOff + Bt * G.BS[0] + P * G.BS[1] + J * G.BS[2];
  }
  int64_t c(int64_t Bt, int64_t I, int64_t J) const {
    return G.COff + Bt * G.CS[0] + I * G.CS[1] + J * G.CS[2];
  }
};

/// The operands of `G` on the host: the filler, then the values in the
/// views.
GemmData gemmOperands(const GemmCase &G) {
  const meshrt_dtype T = G.T, CT = G.Out.value_or(G.T);
  const size_t E = elementSize(T), CE = elementSize(CT);
  int64_t AN = G.AOff + spanOf(G.Batch, G.M, G.K, G.AS);
  int64_t BN = G.BOff + spanOf(G.Batch, G.K, G.N, G.BS);
  int64_t CN = G.COff + spanOf(G.Batch, G.M, G.N, G.CS);
  GemmData D;
  D.A.resize(size_t(AN) * E);
  D.B.resize(size_t(BN) * E);
  D.C.resize(size_t(CN) * CE);
  D.Bias.resize(size_t(std::max<int64_t>(1, G.N)) * CE);
  for (int64_t I = 0; I < AN; ++I)
    putElement(T, D.A, I, kGapIn);
  for (int64_t I = 0; I < BN; ++I)
    putElement(T, D.B, I, kGapIn);
  for (int64_t I = 0; I < CN; ++I)
    putElement(CT, D.C, I, kGapOut);
  GemmIndex X{G};
  for (int64_t Bt = 0; Bt < G.Batch; ++Bt) {
    for (int64_t I = 0; I < G.M; ++I)
      for (int64_t P = 0; P < G.K; ++P)
        putElement(T, D.A, X.a(Bt, I, P), G.AVal(Bt, I, P));
    for (int64_t P = 0; P < G.K; ++P)
      for (int64_t J = 0; J < G.N; ++J)
        putElement(T, D.B, X.b(Bt, P, J), G.BVal(Bt, P, J));
    if (G.Accumulate)
      for (int64_t I = 0; I < G.M; ++I)
        for (int64_t J = 0; J < G.N; ++J)
          putElement(CT, D.C, X.c(Bt, I, J),
                     double((Bt + I + 2 * J) % 5 - 2) / 2);
  }
  for (int64_t J = 0; J < G.N; ++J)
    putElement(CT, D.Bias, J, double((J * 5) % 7 - 3) / 4);
  return D;
}

/// Sets `D`'s expected C from the stored operands, in double.
void gemmReference(const GemmCase &G, GemmData &D) {
  const meshrt_dtype T = G.T, CT = G.Out.value_or(G.T);
  auto In = [&](double V) {
    if (T != MESHRT_F32)
      return V;
    return G.Precision == MESHRT_PRECISION_TF32   ? roundTf32(V)
           : G.Precision == MESHRT_PRECISION_BF16 ? roundBf16(V)
                                                  : V;
  };
  auto Act = [&](double X) {
    if (G.Epilogue == MESHRT_EPILOGUE_RELU)
      return X > 0 ? X : 0;
    if (G.Epilogue == MESHRT_EPILOGUE_GELU)
      return 0.5 * X *
             (1 + std::tanh(std::sqrt(2 / M_PI) * (X + 0.044715 * X * X * X)));
    return X;
  };
  size_t CN = D.C.size() / elementSize(CT);
  D.Want.assign(CN, 0);
  D.InView.assign(CN, false);
  for (size_t I = 0; I < CN; ++I)
    D.Want[I] = getElement(CT, D.C, int64_t(I));
  D.Exact = D.Want;
  GemmIndex X{G};
  for (int64_t Bt = 0; Bt < G.Batch; ++Bt)
    for (int64_t I = 0; I < G.M; ++I)
      for (int64_t J = 0; J < G.N; ++J) {
        double Sum = 0, SumExact = 0;
        for (int64_t P = 0; P < G.K; ++P) {
          double A = getElement(T, D.A, X.a(Bt, I, P));
          double B = getElement(T, D.B, X.b(Bt, P, J));
          Sum += In(A) * In(B);
          SumExact += A * B;
        }
        size_t At = size_t(X.c(Bt, I, J));
        double Add = (G.Accumulate ? getElement(CT, D.C, int64_t(At)) : 0) +
                     (G.Bias ? getElement(CT, D.Bias, J) : 0);
        D.Want[At] = Act(Sum + Add);
        D.Exact[At] = Act(SumExact + Add);
        D.InView[At] = true;
      }
  if (G.ExposeNarrowing) {
    double Farthest = 0;
    std::vector<unsigned char> One(elementSize(T));
    for (double W : D.Want) {
      putElement(T, One, 0, W);
      Farthest = std::max(Farthest, std::fabs(getElement(T, One, 0) - W));
    }
    expect(Farthest > 1e-4, G.Name + ": the values do not expose a result "
                                     "rounded to the inputs' type");
  }
}

/// Checks C's buffer as the product left it against `D`: the reference in
/// the view (within the case's tolerance), the filler untouched around it.
void checkGemmResult(const GemmCase &G, const GemmData &D,
                     const std::vector<unsigned char> &Got) {
  const meshrt_dtype CT = G.Out.value_or(G.T);
  double FarthestFromExact = 0;
  int Bad = 0;
  for (size_t I = 0; I < D.Want.size(); ++I) {
    double V = getElement(CT, Got, int64_t(I)), W = D.Want[I];
    if (!D.InView[I]) {
      if (V != W && Bad++ < 3)
        expect(false, G.Name + ": element " + std::to_string(I) +
                          " outside C's view changed to " + std::to_string(V));
      continue;
    }
    double Rel = std::fabs(V - W) / std::max(1.0, std::fabs(W));
    FarthestFromExact = std::max(FarthestFromExact, std::fabs(V - D.Exact[I]));
    if (!(Rel <= G.Tol) && Bad++ < 3)
      expect(false, G.Name + ": C element " + std::to_string(I) + " = " +
                        std::to_string(V) + ", expected " + std::to_string(W) +
                        " (tolerance " + std::to_string(G.Tol) + ")");
  }
  if (G.ExposeRounding)
    expect(FarthestFromExact > 1e-5,
           G.Name +
               ": the result equals the unrounded product (largest "
               "difference " +
               std::to_string(FarthestFromExact) +
               "): the inputs were not rounded");
}

/// Runs `G` through `Slot` (meshrt_gpu_gemm, or meshrt_gpu_gemm_mixed for a
/// case with an output type) and checks every element of C's buffer.
void runGemmCase(const GemmCase &G, void **Slot, void *S) {
  const meshrt_dtype T = G.T, CT = G.Out.value_or(G.T);
  GemmData D = gemmOperands(G);
  gemmReference(G, D);
  DeviceBytes DA(D.A, S), DB(D.B, S), DC(D.C, S), DBias(D.Bias, S);
  traceMark("mark case " + G.Name);
  const void *DAt = DA.at(G.AOff, T), *DBt = DB.at(G.BOff, T);
  void *DCt = DC.at(G.COff, CT), *DBiasAt = G.Bias ? DBias.D : nullptr;
  ok(G.Out ? meshrt_gpu_gemm_mixed(Slot, T, CT, G.Batch, G.M, G.N, G.K, DAt,
                                   G.AS[0], G.AS[1], G.AS[2], DBt, G.BS[0],
                                   G.BS[1], G.BS[2], DCt, G.CS[0], G.CS[1],
                                   G.CS[2], G.Accumulate, DBiasAt, G.Epilogue,
                                   G.Precision, G.Stream)
           : meshrt_gpu_gemm(Slot, T, G.Batch, G.M, G.N, G.K, DAt, G.AS[0],
                             G.AS[1], G.AS[2], DBt, G.BS[0], G.BS[1], G.BS[2],
                             DCt, G.CS[0], G.CS[1], G.CS[2], G.Accumulate,
                             DBiasAt, G.Epilogue, G.Precision, G.Stream),
     ("meshrt_gpu_gemm (" + G.Name + ")").c_str());
  checkGemmResult(G, D, DC.get());
}

/// A stream other than the shared one, from the (emulated) driver.
void *otherStream() {
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto *Create = Lib ? reinterpret_cast<int (*)(void **, unsigned)>(
                           dlsym(Lib, "cuStreamCreate"))
                     : nullptr;
  void *Stream = nullptr;
  expect(Create && Create(&Stream, 1) == 0, "cuStreamCreate");
  return Stream;
}

/// A plain f32 row-major product m x k times k x n on device buffers, for
/// the plan-cache checks; `Out` receives C.
struct PlainProduct {
  int64_t M, N, K;
  std::vector<float> A, B;
  void *DA, *DB, *DC;
  void *S;
  PlainProduct(int64_t M, int64_t N, int64_t K, void *S)
      : M(M), N(N), K(K), A(size_t(M * K)), B(size_t(K * N)), S(S) {
    for (int64_t I = 0; I < M * K; ++I)
      A[size_t(I)] = float(I % 7 - 3) / 2;
    for (int64_t I = 0; I < K * N; ++I)
      B[size_t(I)] = float(I % 5 - 2) / 4;
    DA = upload(A, S);
    DB = upload(B, S);
    DC = mgpuMemAlloc(uint64_t(M * N) * sizeof(float), S, false);
  }
  ~PlainProduct() {
    for (void *P : {DA, DB, DC})
      mgpuMemFree(P, S);
  }
  meshrt_status run(void **Slot, void *C = nullptr) {
    return meshrt_gpu_gemm(Slot, MESHRT_F32, 1, M, N, K, DA, 0, K, 1, DB, 0, N,
                           1, C ? C : DC, 0, N, 1, 0, nullptr,
                           MESHRT_EPILOGUE_NONE, MESHRT_PRECISION_HIGHEST,
                           nullptr);
  }
  void check(const std::string &What, void *C = nullptr) {
    std::vector<float> Got = download(C ? C : DC, M * N, S);
    mgpuStreamSynchronize(S);
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J) {
        double W = 0;
        for (int64_t P = 0; P < K; ++P)
          W += double(A[size_t(I * K + P)]) * B[size_t(P * N + J)];
        if (std::fabs(Got[size_t(I * N + J)] - W) > 1e-6) {
          expect(false, What + ": C[" + std::to_string(I) + "," +
                            std::to_string(J) +
                            "] = " + std::to_string(Got[size_t(I * N + J)]) +
                            ", expected " + std::to_string(W));
          return;
        }
      }
  }
};

/// The cases of runGemm, in order; `add` starts one from the base case.
struct CaseList {
  std::vector<GemmCase> Cases;
  GemmCase &add(const std::string &Name) {
    Cases.push_back(baseCase(Name));
    return Cases.back();
  }
};

/// Layouts: operands read by rows or by columns, leading dimensions above
/// the rows, C column-major, strided batches with a broadcast operand.
void addLayoutCases(CaseList &L) {
  {
    GemmCase &G = L.add("f32_transposed_a"); // A read down its columns.
    G.AS[1] = 1, G.AS[2] = 5;
  }
  {
    GemmCase &G = L.add("f32_transposed_b");
    G.BS[1] = 1, G.BS[2] = 3;
  }
  {
    GemmCase &G = L.add("f32_transposed_both");
    G.AS[1] = 1, G.AS[2] = 5, G.BS[1] = 1, G.BS[2] = 3;
  }
  {
    GemmCase &G = L.add("f32_padded_ld"); // Leading dimensions > the rows.
    G.AS[1] = 5, G.BS[1] = 10, G.CS[1] = 9;
  }
  {
    GemmCase &G = L.add("f32_colmajor_c"); // D = A B directly, ops T, T.
    G.CS[1] = 1, G.CS[2] = 5;
  }
  {
    GemmCase &G = L.add("f32_colmajor_all");
    G.CS[1] = 1, G.CS[2] = 6, G.AS[1] = 1, G.AS[2] = 5, G.BS[1] = 1,
    G.BS[2] = 3;
  }
  {
    GemmCase &G = L.add("f32_batched"); // B broadcast (batch stride 0).
    G.Batch = 3, G.M = 4, G.N = 6, G.K = 5;
    G.AS[0] = 20, G.AS[1] = 5, G.BS[0] = 0, G.BS[1] = 6, G.CS[0] = 26,
    G.CS[1] = 6;
  }
  {
    GemmCase &G = L.add("f32_batched_colmajor_a");
    G.Batch = 2, G.M = 3, G.N = 4, G.K = 2;
    G.AS[0] = 8, G.AS[1] = 1, G.AS[2] = 4, G.BS[0] = 8, G.BS[1] = 4,
    G.CS[0] = 12, G.CS[1] = 4;
  }
}

/// Accumulation, the bias and the activations, and a larger product.
void addEpilogueCases(CaseList &L) {
  L.add("f32_accumulate").Accumulate = true;
  L.add("f32_bias").Bias = true;
  {
    GemmCase &G = L.add("f32_bias_relu");
    G.Bias = true, G.Epilogue = MESHRT_EPILOGUE_RELU;
  }
  {
    GemmCase &G = L.add("f32_bias_gelu");
    G.Bias = true, G.Epilogue = MESHRT_EPILOGUE_GELU, G.Tol = 1e-5;
  }
  L.add("f32_relu").Epilogue = MESHRT_EPILOGUE_RELU;
  {
    GemmCase &G = L.add("f32_gelu_accumulate");
    G.Accumulate = true, G.Epilogue = MESHRT_EPILOGUE_GELU, G.Tol = 1e-5;
  }
  {
    GemmCase &G = L.add("f32_11x13x9");
    G.M = 11, G.N = 13, G.K = 9, G.AS[1] = 9, G.BS[1] = 13, G.CS[1] = 13;
  }
}

/// Element types: f64, f16, bf16, and 16-bit inputs into f32.
void addTypeCases(CaseList &L) {
  {
    GemmCase &G = L.add("f64");
    G.T = MESHRT_F64, G.Tol = 1e-12;
  }
  {
    GemmCase &G = L.add("f64_bias_relu");
    G.T = MESHRT_F64, G.Tol = 1e-12, G.Bias = true;
    G.Epilogue = MESHRT_EPILOGUE_RELU;
  }
  {
    // f16 results rounded once (half an ulp: 2^-11 relative).
    GemmCase &G = L.add("f16");
    G.T = MESHRT_F16, G.Tol = 1e-3;
  }
  {
    GemmCase &G = L.add("f16_bias_gelu");
    G.T = MESHRT_F16, G.Tol = 1e-3, G.Bias = true;
    G.Epilogue = MESHRT_EPILOGUE_GELU;
  }
  {
    // bf16 results rounded once (half an ulp: 2^-8 relative).
    GemmCase &G = L.add("bf16");
    G.T = MESHRT_BF16, G.Tol = 4e-3;
  }
  {
    // f16 inputs into f32: products of 1 + units of 2^-10 by units of 2^-9
    // need about 20 bits, which f32 holds and f16 does not.
    GemmCase &G = L.add("f16_into_f32");
    G.T = MESHRT_F16, G.Out = MESHRT_F32, G.ExposeNarrowing = true;
    G.AVal = [](int64_t, int64_t I, int64_t P) {
      return 1 + double((I * 7 + P * 3) % 13) / 1024;
    };
    G.BVal = [](int64_t, int64_t P, int64_t J) {
      return -1 + double((P * 5 + J * 3) % 11) / 512;
    };
  }
  {
    // bf16 into f32 with an f32 bias and ReLU, B read by columns; bf16
    // keeps 7 mantissa bits, the sums about 16.
    GemmCase &G = L.add("bf16_into_f32_bias_relu");
    G.T = MESHRT_BF16, G.Out = MESHRT_F32, G.ExposeNarrowing = true;
    G.Bias = true, G.Epilogue = MESHRT_EPILOGUE_RELU;
    G.BS[1] = 1, G.BS[2] = 3;
    G.AVal = [](int64_t, int64_t I, int64_t P) {
      return 1 + double((I * 7 + P * 3) % 13) / 128;
    };
    G.BVal = [](int64_t, int64_t P, int64_t J) {
      return double((P * 5 + J * 3) % 11 - 5) / 64 + 1.0 / 128;
    };
  }
  {
    // Batched, A read by columns, accumulating into the f32 C.
    GemmCase &G = L.add("f16_into_f32_batched_accumulate");
    G.T = MESHRT_F16, G.Out = MESHRT_F32, G.Accumulate = true;
    G.Batch = 2, G.M = 4, G.N = 6, G.K = 5;
    G.AS[0] = 20, G.AS[1] = 1, G.AS[2] = 4, G.BS[0] = 30, G.BS[1] = 6,
    G.CS[0] = 24, G.CS[1] = 6;
  }
  {
    // TF32 asked for: 16-bit inputs are not rounded again (compute 32F).
    GemmCase &G = L.add("bf16_into_f32_tf32_asked");
    G.T = MESHRT_BF16, G.Out = MESHRT_F32;
    G.Precision = MESHRT_PRECISION_TF32;
  }
}

/// The f32 precisions, unaligned views, another stream, and the empty
/// products.
void addPrecisionAndEdgeCases(CaseList &L) {
  {
    // Inputs 1 + a few units of 2^-13 (A) and 2^-12 (B): TF32 keeps 10
    // mantissa bits, so they round, and the product shows it.
    GemmCase &G = L.add("tf32");
    G.Precision = MESHRT_PRECISION_TF32, G.ExposeRounding = true;
    G.AVal = [](int64_t, int64_t I, int64_t P) {
      return 1 + double((I * 7 + P * 3) % 13) / 8192;
    };
    G.BVal = [](int64_t, int64_t P, int64_t J) {
      return 1 + double((P * 5 + J * 3) % 11) / 4096;
    };
  }
  {
    // bfloat16 keeps 7 mantissa bits: units of 2^-10 round.
    GemmCase &G = L.add("bf16_precision");
    G.Precision = MESHRT_PRECISION_BF16, G.ExposeRounding = true;
    G.AVal = [](int64_t, int64_t I, int64_t P) {
      return 1 + double((I * 7 + P * 3) % 13) / 1024;
    };
    G.BVal = [](int64_t, int64_t P, int64_t J) {
      return -1 - double((P * 5 + J * 3) % 11) / 1024;
    };
  }
  {
    // Views 4, 8 and 12 bytes into their buffers: the heuristic must be
    // told (the emulation refuses a pointer less aligned than it was told,
    // 256 bytes by default).
    GemmCase &G = L.add("misaligned_views");
    G.AOff = 1, G.BOff = 2, G.COff = 3;
  }
  {
    GemmCase &G = L.add("other_stream"); // No workspace, a plan of its own.
    G.Stream = otherStream();
  }
  {
    GemmCase &G = L.add("k0_zero"); // C = 0, row by row (ld 6 > n 5).
    G.M = 4, G.N = 5, G.K = 0, G.CS[1] = 6;
  }
  {
    GemmCase &G = L.add("k0_accumulate"); // C unchanged.
    G.M = 4, G.N = 5, G.K = 0, G.Accumulate = true;
    G.CS[1] = 5;
  }
  {
    GemmCase &G = L.add("empty_m0");
    G.M = 0;
  }
}

/// The plan cache with `P` and `Q` (two shapes): one call site's slot, the
/// same call five times with no host synchronisation in between, one plan;
/// another shape, a second plan; the first again, found; no slot, a plan
/// per call. Returns the slot's plan for P.
void *checkPlanCache(PlainProduct &P, PlainProduct &Q, void *S) {
  void *Slot = nullptr;
  traceMark("mark repeat");
  for (int I = 0; I < 5; ++I)
    ok(P.run(&Slot), "meshrt_gpu_gemm (repeated)");
  void *First = Slot;
  expect(First != nullptr, "the slot holds no plan after a product");
  P.check("repeated product");
  // Another shape through the same slot: a second plan.
  traceMark("mark reshape");
  ok(Q.run(&Slot), "meshrt_gpu_gemm (another shape)");
  expect(Slot != First, "the slot kept the plan of another shape");
  Q.check("another shape");
  // The first shape again, through this slot and another one: the map
  // has its plan.
  traceMark("mark back");
  ok(P.run(&Slot), "meshrt_gpu_gemm (first shape again)");
  expect(Slot == First, "the first shape's plan was not found again");
  void *Other = nullptr;
  ok(P.run(&Other), "meshrt_gpu_gemm (another slot)");
  expect(Other == First, "another slot did not get the same plan");
  // Other buffers of the same alignment: the same plan.
  void *C2 = mgpuMemAlloc(uint64_t(6 * 4) * sizeof(float), S, false);
  ok(P.run(&Slot, C2), "meshrt_gpu_gemm (other buffers)");
  expect(Slot == First, "other buffers made another plan");
  P.check("first shape again");
  P.check("other buffers", C2);
  mgpuMemFree(C2, S);
  // No slot: a plan per call.
  traceMark("mark null-slot");
  ok(P.run(nullptr), "meshrt_gpu_gemm (no slot)");
  ok(P.run(nullptr), "meshrt_gpu_gemm (no slot, again)");
  P.check("no slot");
  return First;
}

/// A row-parallel linear layer: each rank multiplies its slice of the inner
/// dim, the partial products are summed on the stream, and a second product
/// reads the sum; no host synchronisation until the result is read.
void checkChainedLayers(void *S) {
  const int64_t M = 4, N = 6, Kr = 3, N2 = 5;
  std::vector<float> X(size_t(M * Kr)), W(size_t(Kr * N)), W2(size_t(N * N2));
  for (int64_t I = 0; I < M * Kr; ++I)
    X[size_t(I)] = float((I + Rank) % 5 - 2) / 2;
  for (int64_t I = 0; I < Kr * N; ++I)
    W[size_t(I)] = float((I * 3 + Rank) % 7 - 3) / 4;
  for (int64_t I = 0; I < N * N2; ++I)
    W2[size_t(I)] = float(I % 3 - 1);
  void *DX = upload(X, S), *DW = upload(W, S), *DW2 = upload(W2, S);
  void *DH = mgpuMemAlloc(uint64_t(M * N) * sizeof(float), S, false);
  void *DY = mgpuMemAlloc(uint64_t(M * N2) * sizeof(float), S, false);
  meshrt_comm_t C = worldComm();
  void *Slot1 = nullptr, *Slot2 = nullptr;
  traceMark("mark chain");
  ok(meshrt_gpu_gemm(&Slot1, MESHRT_F32, 1, M, N, Kr, DX, 0, Kr, 1, DW, 0, N, 1,
                     DH, 0, N, 1, 0, nullptr, MESHRT_EPILOGUE_NONE,
                     MESHRT_PRECISION_HIGHEST, S),
     "meshrt_gpu_gemm (partial product)");
  ok(meshrt_all_reduce_on_stream(C, DH, DH, M * N, MESHRT_F32, MESHRT_SUM, S),
     "meshrt_all_reduce_on_stream");
  ok(meshrt_gpu_gemm(&Slot2, MESHRT_F32, 1, M, N2, N, DH, 0, N, 1, DW2, 0, N2,
                     1, DY, 0, N2, 1, 0, nullptr, MESHRT_EPILOGUE_RELU,
                     MESHRT_PRECISION_HIGHEST, nullptr),
     "meshrt_gpu_gemm (second layer)");
  traceMark("mark chain-end");
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  std::vector<float> Y = download(DY, M * N2, S);
  mgpuStreamSynchronize(S);
  std::vector<double> H(size_t(M * N), 0.0);
  for (int64_t R = 0; R < Size; ++R)
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J)
        for (int64_t P = 0; P < Kr; ++P)
          H[size_t(I * N + J)] += double((I * Kr + P + R) % 5 - 2) / 2 *
                                  double(((P * N + J) * 3 + R) % 7 - 3) / 4;
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N2; ++J) {
      double V = 0;
      for (int64_t P = 0; P < N; ++P)
        V += H[size_t(I * N + P)] * W2[size_t(P * N2 + J)];
      V = V > 0 ? V : 0;
      if (std::fabs(Y[size_t(I * N2 + J)] - V) > 1e-5) {
        expect(false, "chained layer: Y[" + std::to_string(I) + "," +
                          std::to_string(J) +
                          "] = " + std::to_string(Y[size_t(I * N2 + J)]) +
                          ", expected " + std::to_string(V));
        break;
      }
    }
  for (void *P : {DX, DW, DW2, DH, DY})
    mgpuMemFree(P, S);
}

/// The argument errors, each before anything is enqueued, with the call's
/// name; P's buffers serve as valid operands.
void checkGemmErrors(PlainProduct &P, void *S) {
  traceMark("mark errors");
  std::vector<float> Host(64, 1.0f);
  auto Gemm = [&](void **Sl, meshrt_dtype T, int64_t Batch, int64_t M,
                  int64_t N, int64_t K, const void *A, int64_t AR, int64_t AC,
                  const void *B, int64_t BR, int64_t BC, void *Cp, int64_t CB,
                  int64_t CR, int64_t CC, const void *Bias, int32_t Epi,
                  int32_t Prec) {
    return meshrt_gpu_gemm(Sl, T, Batch, M, N, K, A, 0, AR, AC, B, 0, BR, BC,
                           Cp, CB, CR, CC, 0, Bias, Epi, Prec, S);
  };
  void *E = nullptr;
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, Host.data(), 5, 1, P.DB, 4, 1,
                   P.DC, 0, 4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: operand A is host memory");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, Host.data(), 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: the bias is host memory");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 3, P.DA, 3, 1, P.DB, 7, 3, P.DC, 0,
                   4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: operand B has no unit stride (row stride 7, "
              "column stride 3)");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 2, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: operand A: inconsistent leading dimension "
              "(row stride 2, column stride 1)");
  expectError(Gemm(&E, MESHRT_F32, 1, -1, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: negative size (batch 1, m -1, n 4, k 5)");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, nullptr, 7, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: unknown epilogue 7");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, nullptr, 0, 9),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: unknown precision 9");
  expectError(Gemm(&E, MESHRT_I32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: dtype 5 (a GPU product takes f16, bf16, f32 "
              "or f64)");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   1, 6, P.DB, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: a bias needs C with unit column stride");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, nullptr, 4, 1, P.DC,
                   0, 4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: operand B is null");
  expectError(Gemm(&E, MESHRT_F32, 2, 3, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: operand C has batch stride 0 with batch 2");
  expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 0, P.DA, 5, 1, P.DB, 4, 1, P.DC, 0,
                   4, 1, P.DB, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: k = 0 is not supported by cuBLASLt");
  void *Freed = mgpuMemAlloc(64, S, false);
  ok(meshrt_device_free(Freed), "meshrt_device_free");
  expectError(Gemm(&E, MESHRT_F32, 1, 2, 2, 2, Freed, 2, 1, P.DB, 2, 1, P.DC, 0,
                   2, 1, nullptr, 0, 0),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm: operand A was freed");
  // Mixed pairs cuBLASLt has no product for.
  auto Mixed = [&](meshrt_dtype In, meshrt_dtype Out) {
    return meshrt_gpu_gemm_mixed(&E, In, Out, 1, 6, 4, 5, P.DA, 0, 5, 1, P.DB,
                                 0, 4, 1, P.DC, 0, 4, 1, 0, nullptr, 0, 0, S);
  };
  expectError(Mixed(MESHRT_F32, MESHRT_F64), MESHRT_ERROR_UNSUPPORTED,
              "meshrt_gpu_gemm_mixed: dtypes f32 into f64 (a mixed GPU "
              "product takes f16 or bf16 inputs into f32 output; cuBLASLt "
              "has no other)");
  expectError(Mixed(MESHRT_BF16, MESHRT_F16), MESHRT_ERROR_UNSUPPORTED,
              "meshrt_gpu_gemm_mixed: dtypes bf16 into f16");
  expectError(Mixed(MESHRT_F16, MESHRT_F64), MESHRT_ERROR_UNSUPPORTED,
              "meshrt_gpu_gemm_mixed: dtypes f16 into f64");
  expectError(Mixed(MESHRT_I8, MESHRT_I32), MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_gpu_gemm_mixed: dtype");
  expect(E == nullptr, "a failed call left a plan in its slot");
  // A passes the runtime's check (its first element is device memory)
  // but ends past its buffer: cuBLASLt (here, its emulation) refuses the
  // product, and the status comes back named.
  void *Short = mgpuMemAlloc(2 * sizeof(float), S, false);
  expectError(Gemm(&E, MESHRT_F32, 1, 7, 2, 2, Short, 2, 1, P.DB, 2, 1, P.DC, 0,
                   2, 1, nullptr, 0, 0),
              MESHRT_ERROR_BACKEND,
              "meshrt_gpu_gemm: cublasLtMatmul failed: "
              "CUBLAS_STATUS_INVALID_VALUE (");
  mgpuMemFree(Short, S);
  traceMark("mark errors-end");
}

} // namespace

/// meshrt_gpu_gemm against the emulated cuBLASLt: the numbers of every
/// layout, batch, epilogue, dtype and precision the runtime maps, the plan
/// cache, a product chained with a collective on the stream, the argument
/// errors, and a second runtime after finalize. check-gemm-trace.py checks
/// the emulator's trace (the cuBLASLt calls each case made, plans, streams,
/// workspace, no sync, no leak) between the "mark" lines written here.
int runGemm() {
  ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  void *S = nullptr;
  ok(meshrt_gpu_stream(&S), "meshrt_gpu_stream");

  // The first product under the default error policy: where cuBLASLt does
  // not load, the job ends here with the library named
  // (runtime.gpu.error.gemm-no-cublaslt).
  {
    void *Slot = nullptr;
    runGemmCase(baseCase("f32_rowmajor"), &Slot, S);
  }
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);

  CaseList L;
  addLayoutCases(L);
  addEpilogueCases(L);
  addTypeCases(L);
  addPrecisionAndEdgeCases(L);
  for (const GemmCase &G : L.Cases) {
    void *Slot = nullptr;
    runGemmCase(G, &Slot, S);
  }
  {
    PlainProduct P(6, 4, 5, S), Q(3, 4, 5, S);
    void *First = checkPlanCache(P, Q, S);
    checkChainedLayers(S);
    checkGemmErrors(P, S);
    // After finalize, a new runtime: the slot's plan is remade (its
    // descriptors went with the workspace), then reused.
    mgpuStreamSynchronize(S);
    ok(meshrt_finalize(), "meshrt_finalize");
    ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init (again)");
    traceMark("mark reinit");
    void *Slot = First;
    ok(P.run(&Slot), "meshrt_gpu_gemm (after a restart)");
    expect(Slot == First, "the plan object changed across a restart");
    ok(P.run(&Slot), "meshrt_gpu_gemm (after a restart, again)");
    P.check("after a restart");
    traceMark("mark end");
  }
  mgpuStreamSynchronize(S);
  return finish(Rank);
}

} // namespace gputest
