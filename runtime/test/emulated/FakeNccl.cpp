//===- FakeNccl.cpp - A stand-in for libnccl on host memory -------------===//
//
// Test-only. Implements the NCCL calls libmeshrt's NCCL backend makes, on
// host memory, over MPI under an MPI launcher and over gloo under torchrun or
// another launcher without MPI (FakeNcclTransport.h), with NCCL's semantics
// (avg truncates for integers, grouped send/recv complete together, ranks of a
// split ordered by key). Together with FakeCudart.cpp it lets the NCCL backend
// and the NCCL test cases run on machines without a GPU. Built as libnccl.so.2.
//
// Reductions gather every member's buffer and combine them in rank order on
// each member, which is slow but simple and deterministic. Device buffers
// are opened for the duration of each call (they are not host-readable
// otherwise, see FakeCuda.cpp), and every collective is traced with its
// communicator, count and stream; every communicator once, when it is made,
// with its members ("nccl-comm c1 rank=0/4 members=0,2,4,6"); a group of
// sends and receives with its number of operations and their total bytes.
// Failure injection: FAKE_NCCL_HANG=1 makes the stream never finish;
// FAKE_NCCL_ASYNC_ERROR=1 makes the communicator report ncclRemoteError (and
// the stream never finish) after a collective.
//
//===----------------------------------------------------------------------===//

#include "FakeNcclTransport.h"
#include "meshrt/Half.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

extern "C" {
int fakeCudaCurrentDevice();
void fakeCudaMarkBusy(const void *S, int Polls);
void fakeCudaAccess(int Open);
int fakeCudaStreamId(const void *S);
void fakeCudaTrace(const char *Fmt, ...);
}

struct ncclComm {
  std::unique_ptr<fakenccl::Transport> T;
  int Rank = 0, Size = 1;
  int Id = 0;
  ncclResult_t AsyncError = ncclSuccess;
};

namespace {

struct P2P {
  bool IsSend;
  void *Buf;
  size_t Bytes;
  int Peer;
  ncclComm_t Comm;
};

int NextCommId = 0;

/// The last error of a communicator's creation, as ncclGetLastError gives
/// it (NCCL's own words for the cases emulated).
std::string LastInitError;

/// Device memory is readable while one of these lives.
struct OpenDeviceMemory {
  OpenDeviceMemory() { fakeCudaAccess(1); }
  ~OpenDeviceMemory() { fakeCudaAccess(0); }
};

bool envSet(const char *Name) {
  const char *E = std::getenv(Name);
  return E && *E && std::strcmp(E, "0");
}

/// `What`=`Value` is the reduction ("op", an ncclRedOp_t, -1 for none) or
/// the root ("root").
void traceCollective(const char *Op, ncclComm_t Comm, size_t Count,
                     ncclDataType_t T, const char *What, int Value,
                     cudaStream_t S) {
  fakeCudaTrace("collective %s comm=c%d rank=%d/%d count=%zu type=%d %s=%d "
                "stream=s%d",
                Op, Comm->Id, Comm->Rank, Comm->Size, Count, int(T), What,
                Value, fakeCudaStreamId(S));
}

thread_local int GroupDepth = 0;
thread_local std::vector<P2P> Pending;

size_t typeSize(ncclDataType_t T) {
  switch (T) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  default:
    return 0;
  }
}

template <typename T> T combineInt(T A, T B, ncclRedOp_t Op) {
  switch (Op) {
  case ncclSum:
  case ncclAvg:
    return T(A + B);
  case ncclProd:
    return T(A * B);
  case ncclMin:
    return B < A ? B : A;
  case ncclMax:
    return B > A ? B : A;
  default:
    return A;
  }
}

double combineFloat(double A, double B, ncclRedOp_t Op) {
  switch (Op) {
  case ncclSum:
  case ncclAvg:
    return A + B;
  case ncclProd:
    return A * B;
  case ncclMin:
    return B < A ? B : A;
  case ncclMax:
    return B > A ? B : A;
  default:
    return A;
  }
}

template <typename T>
void reduceInt(const char *All, size_t Stride, int N, T *Out, size_t Count,
               ncclRedOp_t Op) {
  for (size_t I = 0; I < Count; ++I) {
    T Acc;
    std::memcpy(&Acc, All + I * sizeof(T), sizeof(T));
    for (int R = 1; R < N; ++R) {
      T V;
      std::memcpy(&V, All + R * Stride + I * sizeof(T), sizeof(T));
      Acc = combineInt(Acc, V, Op);
    }
    if (Op == ncclAvg)
      Acc = T(Acc / T(N));
    Out[I] = Acc;
  }
}

double loadFloat(ncclDataType_t T, const char *P) {
  switch (T) {
  case ncclFloat16: {
    uint16_t B;
    std::memcpy(&B, P, 2);
    return meshrt::halfToFloat(B);
  }
  case ncclBfloat16: {
    uint16_t B;
    std::memcpy(&B, P, 2);
    return meshrt::bfloat16ToFloat(B);
  }
  case ncclFloat32: {
    float F;
    std::memcpy(&F, P, 4);
    return F;
  }
  default: {
    double D;
    std::memcpy(&D, P, 8);
    return D;
  }
  }
}

void storeFloat(ncclDataType_t T, char *P, double V) {
  switch (T) {
  case ncclFloat16: {
    uint16_t B = meshrt::floatToHalf(float(V));
    std::memcpy(P, &B, 2);
    return;
  }
  case ncclBfloat16: {
    uint16_t B = meshrt::floatToBFloat16(float(V));
    std::memcpy(P, &B, 2);
    return;
  }
  case ncclFloat32: {
    float F = float(V);
    std::memcpy(P, &F, 4);
    return;
  }
  default:
    std::memcpy(P, &V, 8);
  }
}

/// Out[0..Count) = reduction over the N blocks of All (each Stride bytes).
ncclResult_t reduce(const char *All, size_t Stride, int N, void *Out,
                    size_t Count, ncclDataType_t T, ncclRedOp_t Op) {
  if (Op < ncclSum || Op > ncclAvg)
    return ncclInvalidArgument;
  switch (T) {
  case ncclInt8:
    reduceInt(All, Stride, N, static_cast<int8_t *>(Out), Count, Op);
    return ncclSuccess;
  case ncclUint8:
    reduceInt(All, Stride, N, static_cast<uint8_t *>(Out), Count, Op);
    return ncclSuccess;
  case ncclInt32:
    reduceInt(All, Stride, N, static_cast<int32_t *>(Out), Count, Op);
    return ncclSuccess;
  case ncclInt64:
    reduceInt(All, Stride, N, static_cast<int64_t *>(Out), Count, Op);
    return ncclSuccess;
  case ncclFloat16:
  case ncclBfloat16:
  case ncclFloat32:
  case ncclFloat64: {
    size_t E = typeSize(T);
    for (size_t I = 0; I < Count; ++I) {
      double Acc = loadFloat(T, All + I * E);
      for (int R = 1; R < N; ++R)
        Acc = combineFloat(Acc, loadFloat(T, All + R * Stride + I * E), Op);
      if (Op == ncclAvg)
        Acc /= N;
      storeFloat(T, static_cast<char *>(Out) + I * E, Acc);
    }
    return ncclSuccess;
  }
  default:
    return ncclInvalidArgument;
  }
}

ncclResult_t done(cudaStream_t S, ncclComm_t Comm) {
  if (envSet("FAKE_NCCL_ASYNC_ERROR"))
    Comm->AsyncError = ncclRemoteError;
  bool Hang = envSet("FAKE_NCCL_HANG") || Comm->AsyncError != ncclSuccess;
  // The caller must poll before it sees completion.
  fakeCudaMarkBusy(S, Hang ? -1 : 2);
  return ncclSuccess;
}

/// A communicator over `T`, traced with its members (job ranks in
/// communicator order), which the collectives' lines refer to by id.
ncclComm_t wrap(std::unique_ptr<fakenccl::Transport> T) {
  ncclComm_t N = new ncclComm;
  N->Rank = T->rank();
  N->Size = T->size();
  N->Id = NextCommId++;
  std::string Members;
  for (int R : T->worldRanks())
    Members += (Members.empty() ? "" : ",") + std::to_string(R);
  fakeCudaTrace("nccl-comm c%d rank=%d/%d members=%s", N->Id, N->Rank, N->Size,
                Members.c_str());
  N->T = std::move(T);
  return N;
}

/// Runs `Body`; a transport's failure is printed and becomes the call's
/// ncclSystemError (ncclGetLastError gives it too).
template <typename F> ncclResult_t guarded(F &&Body) {
  try {
    return Body();
  } catch (const std::exception &E) {
    LastInitError = E.what();
    std::fprintf(stderr, "%s\n", E.what());
    return ncclSystemError;
  }
}

} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *V) {
  *V = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t R) {
  return R == ncclSuccess ? "no error (emulated)" : "error (emulated NCCL)";
}

const char *ncclGetLastError(ncclComm_t Comm) {
  if (Comm && Comm->AsyncError != ncclSuccess)
    return "emulated remote error (FAKE_NCCL_ASYNC_ERROR)";
  return LastInitError.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *Id) {
  fakenccl::makeUniqueId(Id->internal, sizeof(Id->internal));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *Comm, int NRanks,
                                    ncclUniqueId Id, int Rank, ncclConfig_t *) {
  // Everybody with the same id forms one communicator, ordered by rank.
  std::unique_ptr<fakenccl::Transport> T;
  if (ncclResult_t R = guarded([&] {
        T = fakenccl::joinGroup(Id.internal, sizeof(Id.internal), NRanks, Rank);
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  *Comm = wrap(std::move(T));
  if ((*Comm)->Size != NRanks || (*Comm)->Rank != Rank)
    return ncclInvalidUsage;
  // As NCCL does: two ranks of one communicator on one device (every
  // emulated device is on this one node) is invalid usage, on every rank.
  std::vector<int> Devices(NRanks);
  int Mine = fakeCudaCurrentDevice();
  if (ncclResult_t R = guarded([&] {
        (*Comm)->T->allGather(&Mine, Devices.data(), sizeof(int));
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  for (int A = 0; A < NRanks; ++A)
    for (int B = A + 1; B < NRanks; ++B)
      if (Devices[A] == Devices[B]) {
        LastInitError = "Duplicate GPU detected : rank " + std::to_string(A) +
                        " and rank " + std::to_string(B) +
                        " both on CUDA device " + std::to_string(Devices[A]);
        return ncclInvalidUsage;
      }
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t Parent, int Color, int Key,
                           ncclComm_t *New, ncclConfig_t *) {
  return guarded([&] {
    std::unique_ptr<fakenccl::Transport> T =
        Parent->T->split(Color == NCCL_SPLIT_NOCOLOR ? -1 : Color, Key);
    *New = T ? wrap(std::move(T)) : nullptr;
    return ncclSuccess;
  });
}

ncclResult_t ncclCommDestroy(ncclComm_t Comm) {
  delete Comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t Comm) { return ncclCommDestroy(Comm); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t Comm, ncclResult_t *E) {
  *E = Comm->AsyncError;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t Comm, int *Count) {
  *Count = Comm->Size;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t Comm, int *Rank) {
  *Rank = Comm->Rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *Send, void *Recv, size_t Count,
                           ncclDataType_t T, ncclRedOp_t Op, ncclComm_t Comm,
                           cudaStream_t S) {
  traceCollective("all_reduce", Comm, Count, T, "op", Op, S);
  OpenDeviceMemory Open;
  size_t Bytes = Count * typeSize(T);
  std::vector<char> All(Bytes * size_t(Comm->Size));
  if (ncclResult_t R = guarded([&] {
        Comm->T->allGather(Send, All.data(), Bytes);
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  ncclResult_t R = reduce(All.data(), Bytes, Comm->Size, Recv, Count, T, Op);
  return R == ncclSuccess ? done(S, Comm) : R;
}

ncclResult_t ncclReduceScatter(const void *Send, void *Recv, size_t Count,
                               ncclDataType_t T, ncclRedOp_t Op,
                               ncclComm_t Comm, cudaStream_t S) {
  traceCollective("reduce_scatter", Comm, Count, T, "op", Op, S);
  OpenDeviceMemory Open;
  size_t Block = Count * typeSize(T), Whole = Block * size_t(Comm->Size);
  std::vector<char> All(Whole * size_t(Comm->Size));
  if (ncclResult_t R = guarded([&] {
        Comm->T->allGather(Send, All.data(), Whole);
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  ncclResult_t R = reduce(All.data() + size_t(Comm->Rank) * Block, Whole,
                          Comm->Size, Recv, Count, T, Op);
  return R == ncclSuccess ? done(S, Comm) : R;
}

/// NCCL's reduce: `Recv` on `Root` is the reduction of every member's
/// `Send`; `Recv` is not touched elsewhere. Inside a group it runs at once,
/// which is equivalent because every member issues the same sequence.
ncclResult_t ncclReduce(const void *Send, void *Recv, size_t Count,
                        ncclDataType_t T, ncclRedOp_t Op, int Root,
                        ncclComm_t Comm, cudaStream_t S) {
  traceCollective("reduce", Comm, Count, T, "root", Root, S);
  if (Root < 0 || Root >= Comm->Size)
    return ncclInvalidArgument;
  OpenDeviceMemory Open;
  size_t Bytes = Count * typeSize(T);
  std::vector<char> All(Comm->Rank == Root ? Bytes * size_t(Comm->Size) : 0);
  if (ncclResult_t R = guarded([&] {
        Comm->T->gather(Send, All.data(), Bytes, Root);
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  if (Comm->Rank == Root) {
    ncclResult_t R = reduce(All.data(), Bytes, Comm->Size, Recv, Count, T, Op);
    if (R != ncclSuccess)
      return R;
  }
  return done(S, Comm);
}

ncclResult_t ncclAllGather(const void *Send, void *Recv, size_t Count,
                           ncclDataType_t T, ncclComm_t Comm, cudaStream_t S) {
  traceCollective("all_gather", Comm, Count, T, "op", -1, S);
  OpenDeviceMemory Open;
  size_t Bytes = Count * typeSize(T);
  if (ncclResult_t R = guarded([&] {
        Comm->T->allGather(Send, Recv, Bytes);
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  return done(S, Comm);
}

ncclResult_t ncclBroadcast(const void *Send, void *Recv, size_t Count,
                           ncclDataType_t T, int Root, ncclComm_t Comm,
                           cudaStream_t S) {
  traceCollective("broadcast", Comm, Count, T, "root", Root, S);
  OpenDeviceMemory Open;
  size_t Bytes = Count * typeSize(T);
  if (Comm->Rank == Root && Send != Recv)
    std::memmove(Recv, Send, Bytes);
  if (ncclResult_t R = guarded([&] {
        Comm->T->broadcast(Recv, Bytes, Root);
        return ncclSuccess;
      });
      R != ncclSuccess)
    return R;
  return done(S, Comm);
}

ncclResult_t ncclGroupStart() {
  ++GroupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (GroupDepth == 0)
    return ncclInvalidUsage;
  if (--GroupDepth > 0)
    return ncclSuccess;
  if (!Pending.empty()) {
    size_t Bytes = 0;
    for (const P2P &Op : Pending)
      Bytes += Op.Bytes;
    fakeCudaTrace("collective group ops=%zu comm=c%d bytes=%zu", Pending.size(),
                  Pending[0].Comm->Id, Bytes);
  }
  OpenDeviceMemory Open;
  std::vector<P2P> Ops;
  Ops.swap(Pending);
  // Every transfer starts before any is waited for: they complete together.
  return guarded([&] {
    std::vector<std::unique_ptr<fakenccl::PendingTransfer>> Started;
    for (P2P &Op : Ops)
      Started.push_back(
          Op.Comm->T->start(Op.IsSend, Op.Buf, Op.Bytes, Op.Peer));
    for (auto &T : Started)
      T->wait();
    return ncclSuccess;
  });
}

ncclResult_t ncclSend(const void *Buf, size_t Count, ncclDataType_t T, int Peer,
                      ncclComm_t Comm, cudaStream_t S) {
  Pending.push_back(
      {true, const_cast<void *>(Buf), Count * typeSize(T), Peer, Comm});
  if (GroupDepth == 0)
    return ncclInvalidUsage; // Alone it could deadlock; meshrt always groups.
  return done(S, Comm);
}

ncclResult_t ncclRecv(void *Buf, size_t Count, ncclDataType_t T, int Peer,
                      ncclComm_t Comm, cudaStream_t S) {
  Pending.push_back({false, Buf, Count * typeSize(T), Peer, Comm});
  if (GroupDepth == 0)
    return ncclInvalidUsage;
  return done(S, Comm);
}

} // extern "C"
