//===- GpuStreamTest.cpp - Stream-ordered collectives and mgpu* -----------===//
//
// Drives what compiled GPU code calls: the mgpu* functions (module, launch,
// stream, events, memory) and the meshrt_*_on_stream collectives, the way a
// lowered program does: module registered before main's runtime set-up,
// device buffers only, kernels and collectives enqueued on one stream, one
// synchronisation. Run against the emulated driver/NCCL (which cannot run
// kernels), so numbers come from the collectives and copies only; the ctest
// driver also checks the emulator's trace (check-emu-trace.py). The
// mpi-backend modes run the same collectives on the MPI backend, which stages
// device buffers through host memory (trace: check-staging-trace.py).
//
// The gemm mode runs meshrt_gpu_gemm against the emulated cuBLASLt (numbers
// checked here, the cuBLASLt calls by check-gemm-trace.py).
//
//   meshrt-gpu-tests [stream|padded|gemm|mpi-backend|mpi-backend-no-driver|
//                     host-access|no-driver|sync-error]
//
// Exit code 0 and "PASS" on success; a failed check prints "FAIL:" and exits
// 1 (the failure cases are checked by expect-failure.sh).
//
//===----------------------------------------------------------------------===//

#include "meshrt/Half.h"
#include "meshrt/meshrt.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

// The mgpu* functions libmeshrt exports, as MLIR 22's gpu-to-llvm calls them.
extern "C" {
void *mgpuModuleLoad(void *Data, size_t Size);
void mgpuModuleUnload(void *Module);
void *mgpuModuleGetFunction(void *Module, const char *Name);
void mgpuLaunchKernel(void *F, intptr_t GX, intptr_t GY, intptr_t GZ,
                      intptr_t BX, intptr_t BY, intptr_t BZ, int32_t Smem,
                      void *Stream, void **Params, void **Extra,
                      size_t NParams);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *Stream);
void mgpuStreamSynchronize(void *Stream);
void mgpuStreamWaitEvent(void *Stream, void *Event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *Event);
void mgpuEventSynchronize(void *Event);
void mgpuEventRecord(void *Event, void *Stream);
void *mgpuMemAlloc(uint64_t Bytes, void *Stream, bool HostShared);
void mgpuMemFree(void *Ptr, void *Stream);
void mgpuMemcpy(void *Dst, void *Src, size_t Bytes, void *Stream);
void mgpuMemset32(void *Dst, unsigned Value, size_t Count, void *Stream);
void mgpuMemset16(void *Dst, unsigned short Value, size_t Count, void *Stream);
}

namespace {

int Failures = 0;
int64_t Rank = 0, Size = 1;

void expect(bool Ok, const std::string &What) {
  if (!Ok) {
    std::printf("FAIL: rank %lld: %s\n", (long long)Rank, What.c_str());
    ++Failures;
  }
}

void expectError(meshrt_status S, meshrt_status Want, const char *Needle) {
  std::string Msg = meshrt_last_error();
  expect(S == Want, std::string("status ") + meshrt_status_name(S) +
                        ", expected " + meshrt_status_name(Want) + " (" + Msg +
                        ")");
  expect(Msg.find(Needle) != std::string::npos,
         "message '" + Msg + "' lacks '" + Needle + "'");
}

void ok(meshrt_status S, const char *What) {
  expect(S == MESHRT_SUCCESS,
         std::string(What) + " failed: " + meshrt_last_error());
}

/// Ends a mode: finalizes the runtime, then 1 on any failure, else prints
/// PASS for `Who` (a rank) and 0.
int finish(int64_t Who) {
  ok(meshrt_finalize(), "meshrt_finalize");
  if (Failures)
    return 1;
  std::printf("PASS rank %lld\n", (long long)Who);
  return 0;
}

// A module image in the emulated driver's test format: the kernels it has.
char Image[] = "MESHRT-FAKE-IMAGE\nproduce\nconsume\n";

// Registered before main, like the global constructor of a compiled object;
// libmeshrt must not touch the driver here.
void *Module = mgpuModuleLoad(Image, sizeof(Image));

const int64_t Count = 4;

/// Rank `G`'s send buffer: 10 G + i.
std::vector<float> sendInput(int64_t G) {
  std::vector<float> V(Count);
  for (int64_t I = 0; I < Count; ++I)
    V[size_t(I)] = float(G * 10 + I);
  return V;
}

/// Rank `G`'s all_to_all input over `N` ranks: block j holds 100 G + 10 j + i.
std::vector<float> allToAllInput(int64_t G, int64_t N) {
  std::vector<float> V(size_t(N * Count));
  for (int64_t J = 0; J < N; ++J)
    for (int64_t I = 0; I < Count; ++I)
      V[size_t(J * Count + I)] = float(G * 100 + J * 10 + I);
  return V;
}

std::vector<float> download(void *D, int64_t N, void *S) {
  std::vector<float> H(size_t(N), -1.0f);
  mgpuMemcpy(H.data(), D, size_t(N) * sizeof(float), S);
  return H;
}

void *upload(const std::vector<float> &H, void *S) {
  void *D = mgpuMemAlloc(H.size() * sizeof(float), S, false);
  mgpuMemcpy(D, const_cast<float *>(H.data()), H.size() * sizeof(float), S);
  return D;
}

meshrt_comm_t worldComm() {
  const int64_t Sizes[] = {-1};
  const char *Names[] = {"x"};
  meshrt_mesh_t M = nullptr;
  ok(meshrt_mesh_declare("m", 1, Sizes, Names, &M), "meshrt_mesh_declare");
  const int64_t Axes[] = {0};
  meshrt_comm_t C = nullptr;
  ok(meshrt_comm_get(M, 1, Axes, &C), "meshrt_comm_get");
  return C;
}

/// The scenario of a compiled function: kernels and collectives on one
/// stream, one host synchronisation, then results copied back.
int runStream() {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  const int64_t N = Size, G = Rank;

  int64_t Dev = -1, Dev2 = -2;
  ok(meshrt_gpu_select_device(&Dev), "meshrt_gpu_select_device");
  ok(meshrt_gpu_select_device(&Dev2), "meshrt_gpu_select_device (again)");
  expect(Dev == Dev2, "meshrt_gpu_select_device is not idempotent");
  const char *Local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int64_t Devices = std::getenv("FAKE_CUDA_DEVICES")
                        ? std::atoll(std::getenv("FAKE_CUDA_DEVICES"))
                        : 8;
  expect(Dev == (Local ? std::atoll(Local) : 0) % Devices,
         "device " + std::to_string(Dev) + " is not local rank % devices");
  void *S = nullptr;
  ok(meshrt_gpu_stream(&S), "meshrt_gpu_stream");
  expect(S && mgpuStreamCreate() == S,
         "mgpuStreamCreate does not return the shared stream");
  meshrt_comm_t C = worldComm();

  // Inputs.
  std::vector<float> Send = sendInput(G), A2A = allToAllInput(G, N), Bc = Send;
  void *DSend = upload(Send, S);
  void *DA2A = upload(A2A, S);
  void *DBc = upload(Bc, S);
  void *DSum = mgpuMemAlloc(Count * sizeof(float), S, false);
  void *DGath = mgpuMemAlloc(uint64_t(N * Count) * sizeof(float), S, false);
  void *DRs = mgpuMemAlloc(Count * sizeof(float), S, false);
  void *DA2AOut = mgpuMemAlloc(uint64_t(N * Count) * sizeof(float), S, false);
  void *DPerm = mgpuMemAlloc(Count * sizeof(float), S, false);

  // Kernels and collectives, no synchronisation in between.
  void *Produce = mgpuModuleGetFunction(Module, "produce");
  void *Consume = mgpuModuleGetFunction(Module, "consume");
  void *Params[] = {&DSend};
  mgpuLaunchKernel(Produce, 2, 1, 1, 128, 1, 1, 0, S, Params, nullptr, 1);
  ok(meshrt_all_reduce_on_stream(C, DSend, DSum, Count, MESHRT_F32, MESHRT_SUM,
                                 S),
     "meshrt_all_reduce_on_stream");
  mgpuLaunchKernel(Consume, 1, 1, 1, 32, 1, 1, 0, S, Params, nullptr, 1);
  ok(meshrt_all_gather_on_stream(C, DSend, DGath, Count, MESHRT_F32, S),
     "meshrt_all_gather_on_stream");
  ok(meshrt_reduce_scatter_on_stream(C, DGath, DRs, Count, MESHRT_F32,
                                     MESHRT_SUM, nullptr),
     "meshrt_reduce_scatter_on_stream");
  ok(meshrt_all_to_all_on_stream(C, DA2A, DA2AOut, Count, MESHRT_F32, S),
     "meshrt_all_to_all_on_stream");
  ok(meshrt_broadcast_on_stream(C, DBc, Count, MESHRT_F32, N - 1, S),
     "meshrt_broadcast_on_stream");
  ok(meshrt_permute_on_stream(C, DSend, DPerm, Count, MESHRT_F32, 1,
                              MESHRT_PERMUTE_WRAP, S),
     "meshrt_permute_on_stream");
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");

  // Results.
  std::vector<float> Sum = download(DSum, Count, S);
  std::vector<float> Gath = download(DGath, N * Count, S);
  std::vector<float> Rs = download(DRs, Count, S);
  std::vector<float> A2AOut = download(DA2AOut, N * Count, S);
  std::vector<float> BcOut = download(DBc, Count, S);
  std::vector<float> Perm = download(DPerm, Count, S);
  mgpuStreamSynchronize(S);
  for (int64_t I = 0; I < Count; ++I) {
    float WantSum = float(10 * N * (N - 1) / 2 + N * I);
    expect(Sum[size_t(I)] == WantSum,
           "all_reduce[" + std::to_string(I) +
               "] = " + std::to_string(Sum[size_t(I)]));
    expect(Rs[size_t(I)] == float(N * (G * 10 + I)), "reduce_scatter");
    expect(BcOut[size_t(I)] == float((N - 1) * 10 + I), "broadcast");
    expect(Perm[size_t(I)] == float(((G - 1 + N) % N) * 10 + I), "permute");
    for (int64_t J = 0; J < N; ++J) {
      expect(Gath[size_t(J * Count + I)] == float(J * 10 + I), "all_gather");
      expect(A2AOut[size_t(J * Count + I)] == float(J * 100 + G * 10 + I),
             "all_to_all");
    }
  }

  // Memset, events, managed memory.
  mgpuMemset32(DSum, 0x3f800000u, Count, S); // 1.0f
  void *E = mgpuEventCreate();
  mgpuEventRecord(E, S);
  mgpuStreamWaitEvent(S, E);
  mgpuEventSynchronize(E);
  mgpuEventDestroy(E);
  std::vector<float> Ones = download(DSum, Count, S);
  mgpuMemset16(DRs, 0x3c00, 2 * Count, S); // f16 1.0 in every half word.
  std::vector<float> Halves = download(DRs, Count, S);
  mgpuStreamSynchronize(S);
  uint32_t HalfBits;
  std::memcpy(&HalfBits, &Halves[0], 4);
  expect(Ones[0] == 1.0f && Ones[size_t(Count - 1)] == 1.0f, "mgpuMemset32");
  expect(HalfBits == 0x3c003c00u, "mgpuMemset16");
  auto *Shared = static_cast<float *>(mgpuMemAlloc(64, S, true));
  Shared[0] = 2.0f; // Host-shared memory is host-accessible.
  mgpuMemFree(Shared, S);
  expect(mgpuMemAlloc(0, S, false) == nullptr, "a 0-byte mgpuMemAlloc");

  // Synchronous argument checks, each naming the call.
  std::vector<float> Host(size_t(N * Count));
  expectError(meshrt_all_reduce_on_stream(C, Host.data(), Host.data(), Count,
                                          MESHRT_F32, MESHRT_SUM, S),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_all_reduce_on_stream: all_reduce: the send buffer is "
              "host memory");
  expectError(
      meshrt_all_gather_on_stream(nullptr, DSend, DGath, Count, MESHRT_F32, S),
      MESHRT_ERROR_INVALID_ARGUMENT,
      "meshrt_all_gather_on_stream: comm is null");
  expectError(meshrt_reduce_scatter_on_stream(C, DGath, DRs, -1, MESHRT_F32,
                                              MESHRT_SUM, S),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_reduce_scatter_on_stream: reduce_scatter on mesh 'm' "
              "axes [x]: negative count -1");
  expectError(
      meshrt_all_to_all_on_stream(C, DA2A, DA2AOut, Count, meshrt_dtype(99), S),
      MESHRT_ERROR_INVALID_ARGUMENT,
      "meshrt_all_to_all_on_stream: all_to_all on mesh 'm' axes [x]: "
      "invalid dtype 99");
  expectError(meshrt_broadcast_on_stream(C, DBc, Count, MESHRT_F32, N, S),
              MESHRT_ERROR_INVALID_ARGUMENT, "is not a group rank");
  expectError(meshrt_permute_on_stream(C, DSend, Host.data(), Count, MESHRT_F32,
                                       1, 0, S),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_permute_on_stream: permute: the recv buffer is host "
              "memory");
  expectError(meshrt_all_reduce_on_stream(C, DSend, DSum, Count, MESHRT_I32,
                                          MESHRT_BXOR, S),
              MESHRT_ERROR_UNSUPPORTED, "NCCL has no bitwise reductions");

  // Frees: stream-ordered, one through the C ABI as host code would.
  for (void *P : {DSend, DA2A, DBc, DGath, DRs, DA2AOut})
    mgpuMemFree(P, S);
  mgpuMemFree(nullptr, S);
  ok(meshrt_device_free(DPerm), "meshrt_device_free");
  ok(meshrt_device_free(nullptr), "meshrt_device_free(null)");
  ok(meshrt_device_free(DSum), "meshrt_device_free");
  ok(meshrt_stream_synchronize(nullptr), "meshrt_stream_synchronize(null)");
  mgpuStreamDestroy(S); // A no-op on the shared stream.
  mgpuModuleUnload(Module);
  Module = nullptr;
  return finish(G);
}

/// cudaPointerGetAttributes calls so far (the emulated libcudart's count).
long pointerQueries() {
  static auto *Fn = [] {
    void *Lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!Lib)
      if (const char *E = std::getenv("MESHRT_CUDART_LIBRARY"))
        Lib = dlopen(E, RTLD_NOW | RTLD_NOLOAD);
    return Lib ? reinterpret_cast<long (*)()>(
                     dlsym(Lib, "fakeCudartPointerQueries"))
               : nullptr;
  }();
  expect(Fn != nullptr, "the emulated libcudart has no query counter");
  return Fn ? Fn() : 0;
}

/// The NCCL backend's memo of validated device buffers: repeated calls on
/// the same buffers (or views into them) skip cudaPointerGetAttributes, yet
/// host buffers are still rejected after device ones, and buffers freed
/// through the runtime (meshrt_device_free, mgpuMemFree, from any thread)
/// are asked about again, so a dangling pointer is still an error.
int runPointerMemo() {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  void *S = nullptr;
  ok(meshrt_gpu_stream(&S), "meshrt_gpu_stream");
  meshrt_comm_t C = worldComm();
  const float N = float(Size);

  std::vector<float> Two(size_t(2 * Count)), Host(size_t(2 * Count), 0.0f);
  for (int64_t I = 0; I < 2 * Count; ++I)
    Two[size_t(I)] = float(Rank + I);
  void *A = upload(Two, S); // 2 * Count elements.
  void *B = mgpuMemAlloc(Count * sizeof(float), S, false);
  void *D = mgpuMemAlloc(Count * sizeof(float), S, false);
  float *AHigh = static_cast<float *>(A) + Count; // A view into A.
  auto allReduce = [&](const void *Send, void *Recv) {
    return meshrt_all_reduce_on_stream(C, Send, Recv, Count, MESHRT_F32,
                                       MESHRT_SUM, S);
  };
  auto queriesOf = [&](const char *What, long Want, auto &&Call) {
    long Before = pointerQueries();
    Call();
    long Got = pointerQueries() - Before;
    expect(Got == Want, std::string(What) + ": " + std::to_string(Got) +
                            " pointer queries, expected " +
                            std::to_string(Want));
  };

  // Buffers this thread allocated through the runtime are device memory by
  // construction: never asked about, also for a view.
  queriesOf("first call", 0, [&] { ok(allReduce(A, B), "all_reduce(A, B)"); });
  queriesOf("same buffers", 0,
            [&] { ok(allReduce(A, B), "all_reduce(A, B) again"); });
  queriesOf("a view into A, in place", 0,
            [&] { ok(allReduce(AHigh, AHigh), "all_reduce(A + n, A + n)"); });
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  std::vector<float> Sum = download(B, Count, S);
  std::vector<float> High = download(AHigh, Count, S);
  mgpuStreamSynchronize(S);
  for (int64_t I = 0; I < Count; ++I) {
    // sum over ranks r of (r + I); the view was reduced once in place.
    float Want = N * (N - 1) / 2 + N * float(I);
    expect(Sum[size_t(I)] == Want, "all_reduce(A, B)[" + std::to_string(I) +
                                       "] = " + std::to_string(Sum[size_t(I)]));
    float WantHigh = N * (N - 1) / 2 + N * float(Count + I);
    expect(High[size_t(I)] == WantHigh, "in place on a view");
  }

  // Host memory after device memory is still host memory.
  expectError(allReduce(A, Host.data()), MESHRT_ERROR_INVALID_ARGUMENT,
              "all_reduce: the recv buffer is host memory");
  expectError(allReduce(Host.data(), B), MESHRT_ERROR_INVALID_ARGUMENT,
              "all_reduce: the send buffer is host memory");
  expectError(allReduce(Host.data(), Host.data()),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "all_reduce: the send buffer is host memory");
  queriesOf("device buffers after host errors", 0,
            [&] { ok(allReduce(A, B), "all_reduce(A, B) after errors"); });

  // A buffer another thread allocated: asked about once, then known.
  void *F = nullptr;
  std::thread([&] {
    F = mgpuMemAlloc(Count * sizeof(float), S, false);
  }).join();
  queriesOf("another thread's buffer", 1,
            [&] { ok(allReduce(A, F), "all_reduce(A, F)"); });
  queriesOf("another thread's buffer again", 0,
            [&] { ok(allReduce(A, F), "all_reduce(A, F) again"); });

  // Freed through the runtime: the runtime keeps the memory for reuse on
  // the stream, and a use after the free is caught by its own record (no
  // driver query); the other buffers stay known.
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  ok(meshrt_device_free(B), "meshrt_device_free(B)");
  queriesOf("after meshrt_device_free", 0, [&] {
    expectError(allReduce(A, B), MESHRT_ERROR_INVALID_ARGUMENT,
                "all_reduce: the recv buffer was freed");
  });
  queriesOf("A again", 0, [&] { ok(allReduce(A, D), "all_reduce(A, D)"); });
  // The next buffer of that size is B's memory again, live and known.
  void *B2 = mgpuMemAlloc(Count * sizeof(float), S, false);
  expect(B2 == B, "a freed buffer of the same size is reused");
  queriesOf("reused buffer", 0,
            [&] { ok(allReduce(A, B2), "all_reduce(A, B2)"); });
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  std::vector<float> Reused = download(B2, Count, S);
  mgpuStreamSynchronize(S);
  for (int64_t I = 0; I < Count; ++I)
    expect(Reused[size_t(I)] == N * (N - 1) / 2 + N * float(I),
           "all_reduce(A, B2)[" + std::to_string(I) + "]");
  mgpuMemFree(B2, S);
  mgpuMemFree(F, S);
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  mgpuMemFree(D, S);
  expectError(allReduce(A, D), MESHRT_ERROR_INVALID_ARGUMENT,
              "all_reduce: the recv buffer was freed");

  // A free on another thread empties this thread's memo too.
  void *E = mgpuMemAlloc(Count * sizeof(float), S, false);
  ok(allReduce(A, E), "all_reduce(A, E)");
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  std::thread([&] { mgpuMemFree(E, S); }).join();
  expectError(allReduce(A, E), MESHRT_ERROR_INVALID_ARGUMENT,
              "all_reduce: the recv buffer was freed");

  mgpuMemFree(A, S);
  expectError(allReduce(AHigh, AHigh), MESHRT_ERROR_INVALID_ARGUMENT,
              "all_reduce: the send buffer was freed");
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  return finish(Rank);
}

/// A buffer of `N` elements of T, in device memory (mgpuMemAlloc on the
/// runtime's stream, filled by a host-to-device copy) or in host memory.
template <typename T> class Buf {
public:
  Buf(bool Device, const std::vector<T> &Init, void *S)
      : Device(Device), S(S), Host(Init) {
    if (Device) {
      D = mgpuMemAlloc(Init.size() * sizeof(T), S, false);
      mgpuMemcpy(D, Host.data(), Init.size() * sizeof(T), S);
    }
  }
  Buf(bool Device, int64_t N, T Fill, void *S)
      : Buf(Device, std::vector<T>(size_t(N), Fill), S) {}
  ~Buf() {
    if (D)
      mgpuMemFree(D, S);
  }
  Buf(const Buf &) = delete;
  Buf &operator=(const Buf &) = delete;
  void *ptr() { return Device ? D : static_cast<void *>(Host.data()); }
  /// The contents, read back to the host.
  std::vector<T> get() {
    if (!Device)
      return Host;
    std::vector<T> H(Host.size());
    mgpuMemcpy(H.data(), D, H.size() * sizeof(T), S);
    mgpuStreamSynchronize(S);
    return H;
  }

private:
  bool Device;
  void *S;
  std::vector<T> Host;
  void *D = nullptr;
};

/// Compares `Got` with `Want` element by element, exactly.
template <typename T>
void expectEqual(const std::vector<T> &Got, const std::vector<T> &Want,
                 const std::string &What) {
  bool Same = Got.size() == Want.size();
  for (size_t I = 0; Same && I < Got.size(); ++I)
    Same = Got[I] == Want[I];
  std::string Shown;
  for (size_t I = 0; !Same && I < Got.size() && I < 16; ++I)
    Shown += (I ? ", " : "") + std::to_string(Got[I]);
  expect(Same, What + ": got [" + Shown + "]");
}

/// Writes `Line` into the emulated driver's trace (MESHRT_EMU_TRACE), where
/// check-staging-trace.py finds it; a no-op without the emulated driver.
void traceMark(const std::string &Line) {
  static auto *Fn = [] {
    void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return Lib ? reinterpret_cast<void (*)(const char *, ...)>(
                     dlsym(Lib, "fakeCudaTrace"))
               : nullptr;
  }();
  if (Fn)
    Fn("%s", Line.c_str());
}

/// Every stream-ordered collective on the MPI backend, on device buffers
/// (`Device`) or host buffers, out of place and in place, with the numbers
/// checked for N ranks. `S` is the stream the calls name (null: the shared
/// stream); allocations and copies use `Alloc`.
void runStagedCollectives(meshrt_comm_t C, bool Device, void *S, void *Alloc) {
  const int64_t N = Size, G = Rank;
  const std::string Where = Device ? " (device buffers)" : " (host buffers)";
  std::vector<float> SendV = sendInput(G), A2AV = allToAllInput(G, N);
  std::vector<int32_t> IntV(SendV.begin(), SendV.end());

  std::vector<float> WantSum(Count), WantRs(Count), WantBc(Count),
      WantWrap(Count), WantZero(Count), WantKeep(Count),
      WantGath(size_t(N * Count)), WantA2A(size_t(N * Count));
  std::vector<int32_t> WantMax(Count);
  for (int64_t I = 0; I < Count; ++I) {
    size_t K = size_t(I);
    WantSum[K] = float(10 * N * (N - 1) / 2 + N * I);
    WantRs[K] = float(N * (G * 10 + I));
    WantBc[K] = float((N - 1) * 10 + I);
    WantWrap[K] = float(((G - 1 + N) % N) * 10 + I);
    WantZero[K] = G == 0 ? 0.0f : float((G - 1) * 10 + I);
    WantKeep[K] = G == 0 ? 7.0f : float((G - 1) * 10 + I);
    WantMax[K] = int32_t((N - 1) * 10 + I);
    for (int64_t J = 0; J < N; ++J) {
      WantGath[size_t(J * Count + I)] = float(J * 10 + I);
      WantA2A[size_t(J * Count + I)] = float(J * 100 + G * 10 + I);
    }
  }

  Buf<float> Send(Device, SendV, Alloc), Sum(Device, Count, -1.0f, Alloc);
  traceMark("mark staged all_reduce");
  ok(meshrt_all_reduce_on_stream(C, Send.ptr(), Sum.ptr(), Count, MESHRT_F32,
                                 MESHRT_SUM, S),
     "meshrt_all_reduce_on_stream");
  traceMark("mark end");
  expectEqual(Sum.get(), WantSum, "all_reduce" + Where);
  expectEqual(Send.get(), SendV, "all_reduce left its send buffer" + Where);

  Buf<float> Gath(Device, N * Count, -1.0f, Alloc);
  traceMark("mark staged all_gather");
  ok(meshrt_all_gather_on_stream(C, Send.ptr(), Gath.ptr(), Count, MESHRT_F32,
                                 S),
     "meshrt_all_gather_on_stream");
  traceMark("mark end");
  expectEqual(Gath.get(), WantGath, "all_gather" + Where);

  Buf<float> Rs(Device, Count, -1.0f, Alloc);
  ok(meshrt_reduce_scatter_on_stream(C, Gath.ptr(), Rs.ptr(), Count, MESHRT_F32,
                                     MESHRT_SUM, S),
     "meshrt_reduce_scatter_on_stream");
  expectEqual(Rs.get(), WantRs, "reduce_scatter" + Where);

  Buf<float> A2A(Device, A2AV, Alloc), A2AOut(Device, N * Count, -1.0f, Alloc);
  ok(meshrt_all_to_all_on_stream(C, A2A.ptr(), A2AOut.ptr(), Count, MESHRT_F32,
                                 S),
     "meshrt_all_to_all_on_stream");
  expectEqual(A2AOut.get(), WantA2A, "all_to_all" + Where);

  Buf<float> Bc(Device, SendV, Alloc);
  ok(meshrt_broadcast_on_stream(C, Bc.ptr(), Count, MESHRT_F32, N - 1, S),
     "meshrt_broadcast_on_stream");
  expectEqual(Bc.get(), WantBc, "broadcast" + Where);

  Buf<float> Wrap(Device, Count, -1.0f, Alloc);
  ok(meshrt_permute_on_stream(C, Send.ptr(), Wrap.ptr(), Count, MESHRT_F32, 1,
                              MESHRT_PERMUTE_WRAP, S),
     "meshrt_permute_on_stream (wrap)");
  expectEqual(Wrap.get(), WantWrap, "permute with wrap" + Where);

  // Rank 0 has no source: its recv is zeroed, or left as it was.
  Buf<float> Zero(Device, Count, 7.0f, Alloc), Keep(Device, Count, 7.0f, Alloc);
  ok(meshrt_permute_on_stream(C, Send.ptr(), Zero.ptr(), Count, MESHRT_F32, 1,
                              MESHRT_PERMUTE_ZERO_FILL, S),
     "meshrt_permute_on_stream (zero fill)");
  expectEqual(Zero.get(), WantZero, "permute with zero fill" + Where);
  ok(meshrt_permute_on_stream(C, Send.ptr(), Keep.ptr(), Count, MESHRT_F32, 1,
                              0, S),
     "meshrt_permute_on_stream (no wrap)");
  expectEqual(Keep.get(), WantKeep, "permute without wrap" + Where);

  // In place: all_reduce with send == recv, in f32 (sum) and i32 (max, a
  // reduction MPI has on integers).
  Buf<float> InPlace(Device, SendV, Alloc);
  traceMark("mark staged all_reduce in place");
  ok(meshrt_all_reduce_on_stream(C, InPlace.ptr(), InPlace.ptr(), Count,
                                 MESHRT_F32, MESHRT_SUM, S),
     "meshrt_all_reduce_on_stream (in place)");
  traceMark("mark end");
  expectEqual(InPlace.get(), WantSum, "all_reduce in place" + Where);
  Buf<int32_t> IntBuf(Device, IntV, Alloc);
  ok(meshrt_all_reduce_on_stream(C, IntBuf.ptr(), IntBuf.ptr(), Count,
                                 MESHRT_I32, MESHRT_MAX, S),
     "meshrt_all_reduce_on_stream (i32 max, in place)");
  expectEqual(IntBuf.get(), WantMax, "all_reduce i32 max in place" + Where);
}

/// On the MPI backend the stream-ordered calls synchronise the stream and
/// stage device buffers through host memory: real results, device or host
/// buffers, in place or not; argument errors are still synchronous.
int runMpiBackend() {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  ok(meshrt_init(MESHRT_BACKEND_MPI), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  meshrt_backend Kind = MESHRT_BACKEND_NCCL;
  ok(meshrt_get_backend(&Kind), "meshrt_get_backend");
  expect(Kind == MESHRT_BACKEND_MPI, "the backend is not MPI");
  meshrt_comm_t C = worldComm();
  void *S = nullptr;
  ok(meshrt_gpu_stream(&S), "meshrt_gpu_stream");

  runStagedCollectives(C, /*Device=*/true, S, S);
  runStagedCollectives(C, /*Device=*/true, nullptr, S); // The shared stream.
  runStagedCollectives(C, /*Device=*/false, S, S);

  // Mixed: device send, host recv, and the other way round.
  {
    std::vector<float> V(Count, float(Rank + 1)), Want(Count);
    for (float &W : Want)
      W = float(Size * (Size + 1) / 2);
    Buf<float> DIn(true, V, S), HOut(false, Count, -1.0f, S);
    ok(meshrt_all_reduce_on_stream(C, DIn.ptr(), HOut.ptr(), Count, MESHRT_F32,
                                   MESHRT_SUM, S),
       "meshrt_all_reduce_on_stream (device to host)");
    expectEqual(HOut.get(), Want, "all_reduce device send, host recv");
    Buf<float> HIn(false, V, S), DOut(true, Count, -1.0f, S);
    ok(meshrt_all_reduce_on_stream(C, HIn.ptr(), DOut.ptr(), Count, MESHRT_F32,
                                   MESHRT_SUM, S),
       "meshrt_all_reduce_on_stream (host to device)");
    expectEqual(DOut.get(), Want, "all_reduce host send, device recv");
  }

  // Arguments are still checked before anything is staged.
  Buf<float> D(true, Count, 0.0f, S);
  expectError(meshrt_reduce_scatter_on_stream(C, D.ptr(), D.ptr(), -1,
                                              MESHRT_F32, MESHRT_SUM, S),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_reduce_scatter_on_stream: reduce_scatter on mesh 'm' "
              "axes [x]: negative count -1");
  expectError(meshrt_all_reduce_on_stream(C, D.ptr(), D.ptr(), Count,
                                          MESHRT_F32, MESHRT_BXOR, S),
              MESHRT_ERROR_UNSUPPORTED,
              "reduction 'bxor' is not defined for dtype f32");
  expectError(
      meshrt_broadcast_on_stream(C, D.ptr(), Count, MESHRT_F32, Size, S),
      MESHRT_ERROR_INVALID_ARGUMENT, "is not a group rank");
  expectError(
      meshrt_all_gather_on_stream(C, D.ptr(), D.ptr(), Count, MESHRT_F32, S),
      MESHRT_ERROR_INVALID_ARGUMENT, "this collective is not in place");
  return finish(Rank);
}

/// The padded collectives on the NCCL backend: blocks of 3 elements, data in
/// the first 3 N - 2 (the last member holds one element of data). Numbers
/// are checked here; check-padded-trace.py checks from the emulator's trace
/// that the padding is neither sent nor reduced (one ncclReduce per member
/// of its data, one grouped send/receive of the data for the gather and for
/// each all_to_all_padded, split then concat).
int runPadded() {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  const int64_t N = Size, G = Rank, Block = 3, Valid = 3 * N - 2;
  void *S = nullptr;
  ok(meshrt_gpu_stream(&S), "meshrt_gpu_stream");
  meshrt_comm_t C = worldComm();
  // Send: element e of rank g is 100 g + e, padding included (it must not
  // reach a result).
  std::vector<float> In(size_t(N * Block)), Mine(static_cast<size_t>(Block));
  for (int64_t E = 0; E < N * Block; ++E)
    In[size_t(E)] = float(100 * G + E);
  for (int64_t E = 0; E < Block; ++E)
    Mine[size_t(E)] = float(100 * G + E);
  void *DIn = upload(In, S);
  void *DMine = upload(Mine, S);
  void *DRs = upload(std::vector<float>(size_t(Block), 7.0f), S);
  void *DAg = upload(std::vector<float>(size_t(N * Block), 7.0f), S);
  void *DA2aSplit = upload(std::vector<float>(size_t(N * Block), 7.0f), S);
  void *DA2aConcat = upload(std::vector<float>(size_t(N * Block), 7.0f), S);
  ok(meshrt_reduce_scatter_padded_on_stream(C, DIn, DRs, Block, Valid,
                                            MESHRT_F32, MESHRT_SUM, S),
     "meshrt_reduce_scatter_padded_on_stream");
  ok(meshrt_all_gather_padded_on_stream(C, DMine, DAg, Block, Valid, MESHRT_F32,
                                        S),
     "meshrt_all_gather_padded_on_stream");
  // All to all of In (block j element i is 100 g + 3 j + i).
  ok(meshrt_all_to_all_padded_on_stream(C, DIn, DA2aSplit, Block, Valid,
                                        MESHRT_F32, MESHRT_PADDED_SPLIT, S),
     "meshrt_all_to_all_padded_on_stream (split)");
  ok(meshrt_all_to_all_padded_on_stream(C, DIn, DA2aConcat, Block, Valid,
                                        MESHRT_F32, MESHRT_PADDED_CONCAT, S),
     "meshrt_all_to_all_padded_on_stream (concat)");
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  std::vector<float> Rs = download(DRs, Block, S);
  std::vector<float> Ag = download(DAg, N * Block, S);
  std::vector<float> A2aSplit = download(DA2aSplit, N * Block, S);
  std::vector<float> A2aConcat = download(DA2aConcat, N * Block, S);
  mgpuStreamSynchronize(S);
  for (int64_t I = 0; I < Block; ++I) {
    int64_t E = G * Block + I;
    float Want = E < Valid ? float(100 * N * (N - 1) / 2 + N * E) : 0.0f;
    expect(Rs[size_t(I)] == Want, "reduce_scatter_padded[" + std::to_string(I) +
                                      "] = " + std::to_string(Rs[size_t(I)]));
  }
  for (int64_t E = 0; E < N * Block; ++E) {
    float Want = E < Valid ? float(100 * (E / Block) + E % Block) : 0.0f;
    expect(Ag[size_t(E)] == Want, "all_gather_padded[" + std::to_string(E) +
                                      "] = " + std::to_string(Ag[size_t(E)]));
  }
  // Split: every block from member j holds this member's share of data;
  // concat: the block from member j holds j's share.
  auto DataIn = [&](int64_t J) {
    return std::min(Block, std::max<int64_t>(0, Valid - J * Block));
  };
  for (int64_t J = 0; J < N; ++J)
    for (int64_t I = 0; I < Block; ++I) {
      size_t E = size_t(J * Block + I);
      float Sent = float(100 * J + Block * G + I);
      float WantSplit = I < DataIn(G) ? Sent : 0.0f;
      float WantConcat = I < DataIn(J) ? Sent : 0.0f;
      expect(A2aSplit[E] == WantSplit,
             "all_to_all_padded split[" + std::to_string(E) +
                 "] = " + std::to_string(A2aSplit[E]));
      expect(A2aConcat[E] == WantConcat,
             "all_to_all_padded concat[" + std::to_string(E) +
                 "] = " + std::to_string(A2aConcat[E]));
    }
  for (void *D : {DIn, DMine, DRs, DAg, DA2aSplit, DA2aConcat})
    mgpuMemFree(D, S);
  mgpuStreamSynchronize(S);
  return finish(Rank);
}

//===----------------------------------------------------------------------===//
// GPU products (meshrt_gpu_gemm) against the emulated cuBLASLt
//===----------------------------------------------------------------------===//

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
  char *at(int64_t Offset, meshrt_dtype T) {
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
  meshrt_dtype T = MESHRT_F32;
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
};

// Filler of A's and B's gaps (a product that read one would be far off) and
// of C's (which must stay as they were).
const double kGapIn = 1000, kGapOut = -96;

GemmCase baseCase(const std::string &Name) {
  GemmCase G;
  G.Name = Name;
  return G;
}

/// Runs `G` through `Slot` and checks every element of C's buffer: the
/// product where C's view is, the filler elsewhere.
void runGemmCase(const GemmCase &G, void **Slot, void *S) {
  const meshrt_dtype T = G.T;
  const size_t E = elementSize(T);
  int64_t AN = G.AOff + spanOf(G.Batch, G.M, G.K, G.AS);
  int64_t BN = G.BOff + spanOf(G.Batch, G.K, G.N, G.BS);
  int64_t CN = G.COff + spanOf(G.Batch, G.M, G.N, G.CS);
  std::vector<unsigned char> A(size_t(AN) * E), B(size_t(BN) * E),
      C(size_t(CN) * E), Bias(size_t(std::max<int64_t>(1, G.N)) * E);
  for (int64_t I = 0; I < AN; ++I)
    putElement(T, A, I, kGapIn);
  for (int64_t I = 0; I < BN; ++I)
    putElement(T, B, I, kGapIn);
  for (int64_t I = 0; I < CN; ++I)
    putElement(T, C, I, kGapOut);
  auto AAt = [&](int64_t Bt, int64_t I, int64_t P) {
    return G.AOff + Bt * G.AS[0] + I * G.AS[1] + P * G.AS[2];
  };
  auto BAt = [&](int64_t Bt, int64_t P, int64_t J) {
    return G.BOff + Bt * G.BS[0] + P * G.BS[1] + J * G.BS[2];
  };
  auto CAt = [&](int64_t Bt, int64_t I, int64_t J) {
    return G.COff + Bt * G.CS[0] + I * G.CS[1] + J * G.CS[2];
  };
  for (int64_t Bt = 0; Bt < G.Batch; ++Bt) {
    for (int64_t I = 0; I < G.M; ++I)
      for (int64_t P = 0; P < G.K; ++P)
        putElement(T, A, AAt(Bt, I, P), G.AVal(Bt, I, P));
    for (int64_t P = 0; P < G.K; ++P)
      for (int64_t J = 0; J < G.N; ++J)
        putElement(T, B, BAt(Bt, P, J), G.BVal(Bt, P, J));
    if (G.Accumulate)
      for (int64_t I = 0; I < G.M; ++I)
        for (int64_t J = 0; J < G.N; ++J)
          putElement(T, C, CAt(Bt, I, J), double((Bt + I + 2 * J) % 5 - 2) / 2);
  }
  for (int64_t J = 0; J < G.N; ++J)
    putElement(T, Bias, J, double((J * 5) % 7 - 3) / 4);

  // The reference, from the stored values.
  auto In = [&](double V) {
    if (T != MESHRT_F32)
      return V;
    return G.Precision == MESHRT_PRECISION_TF32   ? roundTf32(V)
           : G.Precision == MESHRT_PRECISION_BF16 ? roundBf16(V)
                                                  : V;
  };
  std::vector<double> Want(static_cast<size_t>(CN)),
      Exact(static_cast<size_t>(CN));
  std::vector<bool> InView(size_t(CN), false);
  for (int64_t I = 0; I < CN; ++I)
    Want[size_t(I)] = Exact[size_t(I)] = getElement(T, C, I);
  auto Act = [&](double X) {
    if (G.Epilogue == MESHRT_EPILOGUE_RELU)
      return X > 0 ? X : 0;
    if (G.Epilogue == MESHRT_EPILOGUE_GELU)
      return 0.5 * X *
             (1 + std::tanh(std::sqrt(2 / M_PI) * (X + 0.044715 * X * X * X)));
    return X;
  };
  for (int64_t Bt = 0; Bt < G.Batch; ++Bt)
    for (int64_t I = 0; I < G.M; ++I)
      for (int64_t J = 0; J < G.N; ++J) {
        double Sum = 0, SumExact = 0;
        for (int64_t P = 0; P < G.K; ++P) {
          double X = getElement(T, A, AAt(Bt, I, P));
          double Y = getElement(T, B, BAt(Bt, P, J));
          Sum += In(X) * In(Y);
          SumExact += X * Y;
        }
        int64_t At = CAt(Bt, I, J);
        double Add = (G.Accumulate ? getElement(T, C, At) : 0) +
                     (G.Bias ? getElement(T, Bias, J) : 0);
        Want[size_t(At)] = Act(Sum + Add);
        Exact[size_t(At)] = Act(SumExact + Add);
        InView[size_t(At)] = true;
      }

  DeviceBytes DA(A, S), DB(B, S), DC(C, S), DBias(Bias, S);
  traceMark("mark case " + G.Name);
  ok(meshrt_gpu_gemm(Slot, T, G.Batch, G.M, G.N, G.K, DA.at(G.AOff, T), G.AS[0],
                     G.AS[1], G.AS[2], DB.at(G.BOff, T), G.BS[0], G.BS[1],
                     G.BS[2], DC.at(G.COff, T), G.CS[0], G.CS[1], G.CS[2],
                     G.Accumulate, G.Bias ? DBias.D : nullptr, G.Epilogue,
                     G.Precision, G.Stream),
     ("meshrt_gpu_gemm (" + G.Name + ")").c_str());
  std::vector<unsigned char> Got = DC.get();
  double WorstRel = 0, FarthestFromExact = 0;
  int Bad = 0;
  for (int64_t I = 0; I < CN; ++I) {
    double V = getElement(T, Got, I), W = Want[size_t(I)];
    if (!InView[size_t(I)]) {
      if (V != W && Bad++ < 3)
        expect(false, G.Name + ": element " + std::to_string(I) +
                          " outside C's view changed to " + std::to_string(V));
      continue;
    }
    double Rel = std::fabs(V - W) / std::max(1.0, std::fabs(W));
    WorstRel = std::max(WorstRel, Rel);
    FarthestFromExact =
        std::max(FarthestFromExact, std::fabs(V - Exact[size_t(I)]));
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

  std::vector<GemmCase> Cases;
  auto Add = [&](const std::string &Name) -> GemmCase & {
    Cases.push_back(baseCase(Name));
    return Cases.back();
  };
  {
    GemmCase &G = Add("f32_transposed_a"); // A read down its columns.
    G.AS[1] = 1, G.AS[2] = 5;
  }
  {
    GemmCase &G = Add("f32_transposed_b");
    G.BS[1] = 1, G.BS[2] = 3;
  }
  {
    GemmCase &G = Add("f32_transposed_both");
    G.AS[1] = 1, G.AS[2] = 5, G.BS[1] = 1, G.BS[2] = 3;
  }
  {
    GemmCase &G = Add("f32_padded_ld"); // Leading dimensions > the rows.
    G.AS[1] = 5, G.BS[1] = 10, G.CS[1] = 9;
  }
  {
    GemmCase &G = Add("f32_colmajor_c"); // D = A B directly, ops T, T.
    G.CS[1] = 1, G.CS[2] = 5;
  }
  {
    GemmCase &G = Add("f32_colmajor_all");
    G.CS[1] = 1, G.CS[2] = 6, G.AS[1] = 1, G.AS[2] = 5, G.BS[1] = 1,
    G.BS[2] = 3;
  }
  {
    GemmCase &G = Add("f32_batched"); // B broadcast (batch stride 0).
    G.Batch = 3, G.M = 4, G.N = 6, G.K = 5;
    G.AS[0] = 20, G.AS[1] = 5, G.BS[0] = 0, G.BS[1] = 6, G.CS[0] = 26,
    G.CS[1] = 6;
  }
  {
    GemmCase &G = Add("f32_batched_colmajor_a");
    G.Batch = 2, G.M = 3, G.N = 4, G.K = 2;
    G.AS[0] = 8, G.AS[1] = 1, G.AS[2] = 4, G.BS[0] = 8, G.BS[1] = 4,
    G.CS[0] = 12, G.CS[1] = 4;
  }
  Add("f32_accumulate").Accumulate = true;
  Add("f32_bias").Bias = true;
  {
    GemmCase &G = Add("f32_bias_relu");
    G.Bias = true, G.Epilogue = MESHRT_EPILOGUE_RELU;
  }
  {
    GemmCase &G = Add("f32_bias_gelu");
    G.Bias = true, G.Epilogue = MESHRT_EPILOGUE_GELU, G.Tol = 1e-5;
  }
  Add("f32_relu").Epilogue = MESHRT_EPILOGUE_RELU;
  {
    GemmCase &G = Add("f32_gelu_accumulate");
    G.Accumulate = true, G.Epilogue = MESHRT_EPILOGUE_GELU, G.Tol = 1e-5;
  }
  {
    GemmCase &G = Add("f32_11x13x9");
    G.M = 11, G.N = 13, G.K = 9, G.AS[1] = 9, G.BS[1] = 13, G.CS[1] = 13;
  }
  {
    GemmCase &G = Add("f64");
    G.T = MESHRT_F64, G.Tol = 1e-12;
  }
  {
    GemmCase &G = Add("f64_bias_relu");
    G.T = MESHRT_F64, G.Tol = 1e-12, G.Bias = true;
    G.Epilogue = MESHRT_EPILOGUE_RELU;
  }
  {
    // f16 results rounded once (half an ulp: 2^-11 relative).
    GemmCase &G = Add("f16");
    G.T = MESHRT_F16, G.Tol = 1e-3;
  }
  {
    GemmCase &G = Add("f16_bias_gelu");
    G.T = MESHRT_F16, G.Tol = 1e-3, G.Bias = true;
    G.Epilogue = MESHRT_EPILOGUE_GELU;
  }
  {
    // bf16 results rounded once (half an ulp: 2^-8 relative).
    GemmCase &G = Add("bf16");
    G.T = MESHRT_BF16, G.Tol = 4e-3;
  }
  {
    // Inputs 1 + a few units of 2^-13 (A) and 2^-12 (B): TF32 keeps 10
    // mantissa bits, so they round, and the product shows it.
    GemmCase &G = Add("tf32");
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
    GemmCase &G = Add("bf16_precision");
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
    GemmCase &G = Add("misaligned_views");
    G.AOff = 1, G.BOff = 2, G.COff = 3;
  }
  {
    GemmCase &G = Add("other_stream"); // No workspace, a plan of its own.
    G.Stream = otherStream();
  }
  {
    GemmCase &G = Add("k0_zero"); // C = 0, row by row (ld 6 > n 5).
    G.M = 4, G.N = 5, G.K = 0, G.CS[1] = 6;
  }
  {
    GemmCase &G = Add("k0_accumulate"); // C unchanged.
    G.M = 4, G.N = 5, G.K = 0, G.Accumulate = true;
    G.CS[1] = 5;
  }
  {
    GemmCase &G = Add("empty_m0");
    G.M = 0;
  }
  for (const GemmCase &G : Cases) {
    void *Slot = nullptr;
    runGemmCase(G, &Slot, S);
  }

  // The plan cache. One call site's slot, the same call five times with no
  // host synchronisation in between: one plan.
  {
    PlainProduct P(6, 4, 5, S), Q(3, 4, 5, S);
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

    // A row-parallel linear layer: each rank multiplies its slice of the
    // inner dim, the partial products are summed on the stream, and a
    // second product reads the sum; no host synchronisation until the
    // result is read.
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
    ok(meshrt_gpu_gemm(&Slot1, MESHRT_F32, 1, M, N, Kr, DX, 0, Kr, 1, DW, 0, N,
                       1, DH, 0, N, 1, 0, nullptr, MESHRT_EPILOGUE_NONE,
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

    // Errors, each before anything is enqueued, with the call's name.
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
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, Host.data(), 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: the bias is host memory");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 3, P.DA, 3, 1, P.DB, 7, 3, P.DC,
                     0, 4, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: operand B has no unit stride (row stride 7, "
                "column stride 3)");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 2, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: operand A: inconsistent leading dimension "
                "(row stride 2, column stride 1)");
    expectError(Gemm(&E, MESHRT_F32, 1, -1, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: negative size (batch 1, m -1, n 4, k 5)");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, nullptr, 7, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: unknown epilogue 7");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, nullptr, 0, 9),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: unknown precision 9");
    expectError(Gemm(&E, MESHRT_I32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: dtype 5 (a GPU product takes f16, bf16, f32 "
                "or f64)");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 1, 6, P.DB, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: a bias needs C with unit column stride");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 5, P.DA, 5, 1, nullptr, 4, 1,
                     P.DC, 0, 4, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: operand B is null");
    expectError(Gemm(&E, MESHRT_F32, 2, 3, 4, 5, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: operand C has batch stride 0 with batch 2");
    expectError(Gemm(&E, MESHRT_F32, 1, 6, 4, 0, P.DA, 5, 1, P.DB, 4, 1, P.DC,
                     0, 4, 1, P.DB, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: k = 0 is not supported by cuBLASLt");
    void *Freed = mgpuMemAlloc(64, S, false);
    ok(meshrt_device_free(Freed), "meshrt_device_free");
    expectError(Gemm(&E, MESHRT_F32, 1, 2, 2, 2, Freed, 2, 1, P.DB, 2, 1, P.DC,
                     0, 2, 1, nullptr, 0, 0),
                MESHRT_ERROR_INVALID_ARGUMENT,
                "meshrt_gpu_gemm: operand A was freed");
    expect(E == nullptr, "a failed call left a plan in its slot");
    // A passes the runtime's check (its first element is device memory)
    // but ends past its buffer: cuBLASLt (here, its emulation) refuses the
    // product, and the status comes back named.
    void *Short = mgpuMemAlloc(2 * sizeof(float), S, false);
    expectError(Gemm(&E, MESHRT_F32, 1, 7, 2, 2, Short, 2, 1, P.DB, 2, 1, P.DC,
                     0, 2, 1, nullptr, 0, 0),
                MESHRT_ERROR_BACKEND,
                "meshrt_gpu_gemm: cublasLtMatmul failed: "
                "CUBLAS_STATUS_INVALID_VALUE (");
    mgpuMemFree(Short, S);
    traceMark("mark errors-end");

    // After finalize, a new runtime: the slot's plan is remade (its
    // descriptors went with the workspace), then reused.
    mgpuStreamSynchronize(S);
    ok(meshrt_finalize(), "meshrt_finalize");
    ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init (again)");
    traceMark("mark reinit");
    ok(P.run(&Slot), "meshrt_gpu_gemm (after a restart)");
    expect(Slot == First, "the plan object changed across a restart");
    ok(P.run(&Slot), "meshrt_gpu_gemm (after a restart, again)");
    P.check("after a restart");
    traceMark("mark end");
  }
  mgpuStreamSynchronize(S);
  return finish(Rank);
}

/// The MPI backend without a CUDA driver (MESHRT_CUDA_DRIVER_LIBRARY names
/// none): host buffers on the null stream work; memory the host cannot read
/// (mapped PROT_NONE, like device memory) or a given stream is a clear error.
int runMpiBackendNoDriver() {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  ok(meshrt_init(MESHRT_BACKEND_MPI), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  meshrt_comm_t C = worldComm();
  std::vector<float> In(Count, 1.0f), Out(Count, 0.0f);
  ok(meshrt_all_reduce_on_stream(C, In.data(), Out.data(), Count, MESHRT_F32,
                                 MESHRT_SUM, nullptr),
     "meshrt_all_reduce_on_stream (host buffers, no driver)");
  expect(Out[0] == float(Size) && Out[size_t(Count - 1)] == float(Size),
         "all_reduce on host buffers without a driver");
  ok(meshrt_broadcast_on_stream(C, In.data(), Count, MESHRT_F32, 0, nullptr),
     "meshrt_broadcast_on_stream (host buffers, no driver)");
  size_t Page = size_t(sysconf(_SC_PAGESIZE));
  void *Closed =
      mmap(nullptr, 2 * Page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  expect(Closed != MAP_FAILED, "mmap");
  // Only the second page is closed: every page of the range is asked.
  void *Open = mmap(Closed, Page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  expect(Open == Closed, "mmap (fixed)");
  int64_t Straddle = int64_t(Page / sizeof(float)) + Count;
  std::vector<float> Big(size_t(Straddle), 0.0f);
  expectError(meshrt_all_reduce_on_stream(C, Closed, Big.data(), Straddle,
                                          MESHRT_F32, MESHRT_SUM, nullptr),
              MESHRT_ERROR_BACKEND,
              "meshrt_all_reduce_on_stream: all_reduce: the send buffer is "
              "not host memory, and device memory cannot be staged through "
              "the host without the CUDA driver: cannot load the CUDA driver");
  void *ClosedPage = static_cast<char *>(Closed) + Page;
  expectError(meshrt_all_gather_on_stream(C, In.data(), ClosedPage, Count,
                                          MESHRT_F32, nullptr),
              MESHRT_ERROR_BACKEND,
              "all_gather: the recv buffer is not host memory");
  int NotAStream = 0;
  expectError(meshrt_permute_on_stream(C, In.data(), Out.data(), Count,
                                       MESHRT_F32, 1, MESHRT_PERMUTE_WRAP,
                                       &NotAStream),
              MESHRT_ERROR_BACKEND,
              "meshrt_permute_on_stream: permute: cannot synchronise the "
              "given stream: cannot load the CUDA driver");
  munmap(Closed, 2 * Page);
  return finish(Rank);
}

void onFault(int) {
  const char Msg[] = "host access to device memory faulted (SIGSEGV)\n";
  ssize_t Ignored = write(2, Msg, sizeof(Msg) - 1);
  (void)Ignored;
  _exit(3);
}

/// A host load of a device buffer dies.
int runHostAccess() {
  void *S = mgpuStreamCreate();
  auto *D = static_cast<volatile float *>(mgpuMemAlloc(16, S, false));
  mgpuStreamSynchronize(S);
  std::signal(SIGSEGV, onFault);
  std::signal(SIGBUS, onFault);
  float V = D[0];
  std::printf("read %f from device memory on the host: not caught\n", V);
  return 0;
}

/// No driver: the first mgpu* call that needs it ends the job clearly.
int runNoDriver() {
  void *S = mgpuStreamCreate();
  std::printf("mgpuStreamCreate returned %p without a driver\n", S);
  return 0;
}

/// A stream-ordered collective whose failure shows only at synchronisation.
int runSyncError() {
  ok(meshrt_init(MESHRT_BACKEND_NCCL), "meshrt_init");
  meshrt_world_rank(&Rank);
  meshrt_comm_t C = worldComm();
  void *S = mgpuStreamCreate();
  void *D = mgpuMemAlloc(Count * sizeof(float), S, false);
  mgpuMemset32(D, 0, Count, S);
  ok(meshrt_all_reduce_on_stream(C, D, D, Count, MESHRT_F32, MESHRT_SUM, S),
     "meshrt_all_reduce_on_stream");
  std::printf("rank %lld: enqueued\n", (long long)Rank);
  std::fflush(stdout);
  meshrt_stream_synchronize(S); // Aborts the job (default policy).
  // No fault was injected (a real GPU): end cleanly, finalize included (a
  // rank that exits with the runtime initialised aborts the job).
  std::printf("rank %lld: synchronize returned\n", (long long)Rank);
  mgpuMemFree(D, S);
  mgpuStreamDestroy(S);
  ok(meshrt_finalize(), "meshrt_finalize");
  return 0;
}

} // namespace

int main(int Argc, char **Argv) {
  std::string Mode = Argc > 1 ? Argv[1] : "stream";
  if (Mode == "stream")
    return runStream();
  if (Mode == "padded")
    return runPadded();
  if (Mode == "mpi-backend")
    return runMpiBackend();
  if (Mode == "pointer-memo")
    return runPointerMemo();
  if (Mode == "gemm")
    return runGemm();
  if (Mode == "mpi-backend-no-driver")
    return runMpiBackendNoDriver();
  if (Mode == "host-access")
    return runHostAccess();
  if (Mode == "no-driver")
    return runNoDriver();
  if (Mode == "sync-error")
    return runSyncError();
  std::fprintf(stderr, "unknown mode '%s'\n", Mode.c_str());
  return 2;
}
