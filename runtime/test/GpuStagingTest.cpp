//===- GpuStagingTest.cpp - Stream-ordered collectives on the MPI backend ===//
//
// The mpi-backend modes of meshrt-gpu-tests: the meshrt_*_on_stream
// collectives on the MPI backend, which synchronises the stream and stages
// device buffers through host memory (trace: check-staging-trace.py), and
// the same backend without a CUDA driver.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace gputest {

namespace {

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

} // namespace

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

} // namespace gputest
