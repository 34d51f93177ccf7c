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

#include "GpuTestSupport.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace gputest;

namespace {

// A module image in the emulated driver's test format: the kernels it has.
char Image[] = "MESHRT-FAKE-IMAGE\nproduce\nconsume\n";

// Registered before main, like the global constructor of a compiled object;
// libmeshrt must not touch the driver here.
void *Module = mgpuModuleLoad(Image, sizeof(Image));

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

  // A host's (or a binding's) own device buffers: allocated, filled from
  // the host, copied device to device after a wait on another stream (the
  // legacy default stream, as a producer would name it), read back.
  int64_t Seen = 0;
  ok(meshrt_gpu_device_count(&Seen), "meshrt_gpu_device_count");
  expect(Seen == Devices, "meshrt_gpu_device_count gives " +
                              std::to_string(Seen) + ", not " +
                              std::to_string(Devices));
  const int64_t Bytes = Count * int64_t(sizeof(float));
  void *D1 = nullptr, *D2 = nullptr, *Zero = &Seen;
  ok(meshrt_device_alloc(Bytes, &D1), "meshrt_device_alloc");
  ok(meshrt_device_alloc(Bytes, &D2), "meshrt_device_alloc");
  ok(meshrt_device_alloc(0, &Zero), "meshrt_device_alloc(0)");
  expect(Zero == nullptr, "meshrt_device_alloc(0) gives null");
  std::vector<float> In(static_cast<size_t>(Count)),
      Back(static_cast<size_t>(Count), -1.0f);
  for (int64_t I = 0; I < Count; ++I)
    In[size_t(I)] = float(G * Count + I);
  ok(meshrt_device_copy(D1, In.data(), Bytes, nullptr), "copy to device");
  ok(meshrt_stream_wait_stream(nullptr, reinterpret_cast<void *>(1)),
     "meshrt_stream_wait_stream(shared, legacy)");
  ok(meshrt_stream_wait_stream(S, S), "meshrt_stream_wait_stream(S, S)");
  ok(meshrt_device_copy(D2, D1, Bytes, S), "copy device to device");
  ok(meshrt_device_copy(Back.data(), D2, Bytes, S), "copy to host");
  ok(meshrt_device_copy(Back.data(), D2, 0, S), "copy of 0 bytes");
  ok(meshrt_stream_synchronize(S), "meshrt_stream_synchronize");
  expectEqual(Back, In, "meshrt_device_copy round trip");
  expectError(meshrt_device_alloc(-1, &Zero), MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_device_alloc: bytes is -1; it must not be negative");
  expectError(meshrt_device_alloc(Bytes, nullptr),
              MESHRT_ERROR_INVALID_ARGUMENT,
              "meshrt_device_alloc: ptr is null");
  expectError(meshrt_device_copy(nullptr, D1, Bytes, S),
              MESHRT_ERROR_INVALID_ARGUMENT, "meshrt_device_copy: dst is null");
  expectError(meshrt_stream_wait_stream(reinterpret_cast<void *>(0x40), S),
              MESHRT_ERROR_BACKEND, "meshrt_stream_wait_stream: ");
  ok(meshrt_device_free(D1), "meshrt_device_free(D1)");
  ok(meshrt_device_free(D2), "meshrt_device_free(D2)");

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
  int64_t Devices = -1;
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  // No driver, or a driver without a device: an error, not a count.
  expectError(meshrt_gpu_device_count(&Devices), MESHRT_ERROR_BACKEND,
              "meshrt_gpu_device_count: c");
  expect(Devices == 0, "meshrt_gpu_device_count gives 0 on an error");
  if (Failures)
    return 1;
  meshrt_set_error_policy(MESHRT_ERRORS_ABORT);
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
