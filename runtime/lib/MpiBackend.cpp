//===- MpiBackend.cpp - Collectives on MPI communicators ------------------===//
//
// The CPU backend. The world is a private duplicate of MPI_COMM_WORLD; groups
// are MPI_Comm_split of it. Collectives map one to one onto MPI calls on host
// buffers. MPI has no 16-bit float arithmetic, so f16 and bf16 reductions use
// user-defined MPI_Ops (widen to float, combine, round back, ties to even);
// avg is a sum followed by a local division (truncating for integers). Counts
// above INT_MAX are split into chunks where the collective allows it.
//
// Stream-ordered collectives (meshrt_*_on_stream) run here too, blocking:
// the stream is synchronised, device buffers are copied to a host staging
// area, the MPI collective runs on host memory, and the results are copied
// back. Correct, not fast: for several ranks sharing one GPU (which NCCL
// refuses) and for machines without NCCL.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "Gpu.h"
#include "HostReduce.h"

#include "meshrt/Error.h"
#include "meshrt/Half.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

//===----------------------------------------------------------------------===//
// 16-bit float reductions
//===----------------------------------------------------------------------===//

/// MPI_User_function: InOut[i] = In[i] op InOut[i], in 16-bit floats.
template <typename Format, typename Fn>
void reduce16(void *In, void *InOut, int *Len, MPI_Datatype *) {
  const uint16_t *A = static_cast<const uint16_t *>(In);
  uint16_t *B = static_cast<uint16_t *>(InOut);
  for (int I = 0, N = *Len; I < N; ++I)
    B[I] = Format::store(Fn::apply(Format::load(A[I]), Format::load(B[I])));
}

/// The four user-defined ops of one 16-bit format, created once per backend.
struct Ops16 {
  MPI_Op Sum = MPI_OP_NULL, Prod = MPI_OP_NULL, Min = MPI_OP_NULL,
         Max = MPI_OP_NULL;
  template <typename Format> void create() {
    MPI_Op_create(&reduce16<Format, SumFn>, 1, &Sum);
    MPI_Op_create(&reduce16<Format, ProdFn>, 1, &Prod);
    MPI_Op_create(&reduce16<Format, MinFn>, 1, &Min);
    MPI_Op_create(&reduce16<Format, MaxFn>, 1, &Max);
  }
  void free() {
    for (MPI_Op *O : {&Sum, &Prod, &Min, &Max})
      if (*O != MPI_OP_NULL)
        MPI_Op_free(O);
  }
};

MPI_Datatype mpiType(meshrt_dtype T) {
  switch (T) {
  case MESHRT_F16:
  case MESHRT_BF16:
    return MPI_UINT16_T; // Moved as bits; reduced by the user ops.
  case MESHRT_F32:
    return MPI_FLOAT;
  case MESHRT_F64:
    return MPI_DOUBLE;
  case MESHRT_I8:
    return MPI_INT8_T;
  case MESHRT_I32:
    return MPI_INT32_T;
  case MESHRT_I64:
    return MPI_INT64_T;
  case MESHRT_U8:
    return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

class MpiBackend;

class MpiComm final : public BackendComm {
public:
  MpiComm(MPI_Comm C, const MpiBackend &B) : C(C), B(B) {
    adoptMpiComm(C, Rank, Size);
  }
  ~MpiComm() override { releaseMpiComm(C); }

  // Blocking calls run on host memory directly; stream-ordered ones
  // (OnStream) stage device buffers (see staged()).
  void allReduce(const void *Send, void *Recv, int64_t Count, meshrt_dtype T,
                 meshrt_reduce_op Op) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T);
      return staged(
          "all_reduce", Send, Bytes, Recv, Bytes,
          [&](const void *S, void *R) { allReduceHost(S, R, Count, T, Op); });
    }
    allReduceHost(Send, Recv, Count, T, Op);
  }
  void allGather(const void *Send, void *Recv, int64_t Count,
                 meshrt_dtype T) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T);
      return staged(
          "all_gather", Send, Bytes, Recv, Bytes * Size,
          [&](const void *S, void *R) { allGatherHost(S, R, Count, T); });
    }
    allGatherHost(Send, Recv, Count, T);
  }
  void reduceScatter(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T, meshrt_reduce_op Op) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T);
      return staged("reduce_scatter", Send, Bytes * Size, Recv, Bytes,
                    [&](const void *S, void *R) {
                      reduceScatterHost(S, R, Count, T, Op);
                    });
    }
    reduceScatterHost(Send, Recv, Count, T, Op);
  }
  void allGatherPadded(const void *Send, void *Recv, int64_t Count,
                       int64_t Valid, meshrt_dtype T) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T);
      return staged("all_gather_padded", Send, Bytes, Recv, Bytes * Size,
                    [&](const void *S, void *R) {
                      allGatherPaddedHost(S, R, Count, Valid, T);
                    });
    }
    allGatherPaddedHost(Send, Recv, Count, Valid, T);
  }
  void reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                           int64_t Valid, meshrt_dtype T,
                           meshrt_reduce_op Op) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T);
      return staged("reduce_scatter_padded", Send, Bytes * Size, Recv, Bytes,
                    [&](const void *S, void *R) {
                      reduceScatterPaddedHost(S, R, Count, Valid, T, Op);
                    });
    }
    reduceScatterPaddedHost(Send, Recv, Count, Valid, T, Op);
  }
  void allToAll(const void *Send, void *Recv, int64_t Count,
                meshrt_dtype T) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T) * Size;
      return staged(
          "all_to_all", Send, Bytes, Recv, Bytes,
          [&](const void *S, void *R) { allToAllHost(S, R, Count, T); });
    }
    allToAllHost(Send, Recv, Count, T);
  }
  void allToAllPadded(const void *Send, void *Recv, int64_t Count,
                      int64_t Valid, meshrt_dtype T, int32_t Side) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T) * Size;
      return staged("all_to_all_padded", Send, Bytes, Recv, Bytes,
                    [&](const void *S, void *R) {
                      allToAllPaddedHost(S, R, Count, Valid, T, Side);
                    });
    }
    allToAllPaddedHost(Send, Recv, Count, Valid, T, Side);
  }
  void broadcast(void *Buf, int64_t Count, meshrt_dtype T,
                 int64_t Root) override {
    if (__builtin_expect(OnStream, 0)) {
      int64_t Bytes = Count * dtypeSize(T);
      return staged(
          "broadcast", Buf, Bytes, Buf, Bytes,
          [&](const void *, void *R) { broadcastHost(R, Count, T, Root); });
    }
    broadcastHost(Buf, Count, T, Root);
  }
  void sendRecv(const void *Send, int64_t Dest, void *Recv, int64_t Source,
                int64_t Count, meshrt_dtype T, bool ZeroFill) override {
    if (__builtin_expect(OnStream, 0)) {
      // Only what moves is staged: no destination, no send; recv is
      // written (and copied back) only with a source or a zero fill.
      int64_t Bytes = Count * dtypeSize(T);
      bool Writes = Source >= 0 || ZeroFill;
      return staged("permute", Send, Dest >= 0 ? Bytes : 0, Recv,
                    Writes ? Bytes : 0, [&](const void *S, void *R) {
                      sendRecvHost(S, Dest, R, Source, Count, T, ZeroFill);
                    });
    }
    sendRecvHost(Send, Dest, Recv, Source, Count, T, ZeroFill);
  }
  void send(const void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag) override;
  void recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag) override;
  void barrier() override { checkMpi(MPI_Barrier(C), "MPI_Barrier"); }
  void *nativeHandle() override { return &C; }

  MPI_Comm C;

private:
  /// Runs the blocking collective `Run(HostSend, HostRecv)` for a
  /// stream-ordered call (OnStream): synchronises CallStream, copies the
  /// `SendBytes` of Send to host staging if Send is device memory, runs, and
  /// copies the `RecvBytes` of the result back if Recv is device memory.
  /// Host buffers are used as they are; 0 bytes means the buffer is not
  /// touched; Send == Recv (in place) is staged once.
  template <typename F>
  void staged(const char *Op, const void *Send, int64_t SendBytes, void *Recv,
              int64_t RecvBytes, F &&Run);

  void allReduceHost(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T, meshrt_reduce_op Op);
  void allGatherPaddedHost(const void *Send, void *Recv, int64_t Count,
                           int64_t Valid, meshrt_dtype T);
  void reduceScatterPaddedHost(const void *Send, void *Recv, int64_t Count,
                               int64_t Valid, meshrt_dtype T,
                               meshrt_reduce_op Op);
  void allGatherHost(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T);
  void reduceScatterHost(const void *Send, void *Recv, int64_t Count,
                         meshrt_dtype T, meshrt_reduce_op Op);
  void allToAllHost(const void *Send, void *Recv, int64_t Count,
                    meshrt_dtype T);
  void allToAllPaddedHost(const void *Send, void *Recv, int64_t Count,
                          int64_t Valid, meshrt_dtype T, int32_t Side);
  void broadcastHost(void *Buf, int64_t Count, meshrt_dtype T, int64_t Root);
  void sendRecvHost(const void *Send, int64_t Dest, void *Recv, int64_t Source,
                    int64_t Count, meshrt_dtype T, bool ZeroFill);

  const MpiBackend &B;
};

class MpiBackend final : public Backend {
public:
  explicit MpiBackend(MPI_Comm Control) : Control(Control) {
    Half.create<HalfFormat>();
    BFloat.create<BFloat16Format>();
    for (int T = 0; T < kNumDTypes; ++T) {
      Types[T] = mpiType(meshrt_dtype(T));
      for (int R = 0; R < kNumReduceOps; ++R)
        Ops[T][R] = makeOp(meshrt_dtype(T), meshrt_reduce_op(R));
    }
  }
  ~MpiBackend() override {
    int Fin = 0;
    MPI_Finalized(&Fin);
    if (!Fin) {
      Half.free();
      BFloat.free();
    }
  }
  meshrt_backend kind() const override { return MESHRT_BACKEND_MPI; }
  const char *name() const override { return "mpi"; }
  std::string version() const override {
    char V[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int Len = 0;
    MPI_Get_library_version(V, &Len);
    std::string S(V, size_t(Len));
    size_t Cut = S.find_first_of(",\n");
    return Cut == std::string::npos ? S : S.substr(0, Cut);
  }

  std::unique_ptr<BackendComm> createWorld() override {
    MPI_Comm W;
    checkMpi(MPI_Comm_dup(Control, &W), "MPI_Comm_dup (world)");
    return std::make_unique<MpiComm>(W, *this);
  }

  std::unique_ptr<BackendComm> split(BackendComm &World, int64_t Color,
                                     int64_t Key,
                                     const std::string &) override {
    if (Color > INT_MAX || Key > INT_MAX)
      throw Error(MESHRT_ERROR_UNSUPPORTED,
                  "MPI_Comm_split takes int colors and keys");
    MPI_Comm New;
    checkMpi(MPI_Comm_split(static_cast<MpiComm &>(World).C,
                            Color < 0 ? MPI_UNDEFINED : int(Color), int(Key),
                            &New),
             "MPI_Comm_split");
    if (New == MPI_COMM_NULL)
      return nullptr;
    return std::make_unique<MpiComm>(New, *this);
  }

  /// The MPI datatype of `T` (valid).
  MPI_Datatype type(meshrt_dtype T) const { return Types[T]; }
  /// The MPI_Op for `Op` on `T` (valid; avg maps to sum).
  MPI_Op op(meshrt_dtype T, meshrt_reduce_op Op) const { return Ops[T][Op]; }

private:
  MPI_Op makeOp(meshrt_dtype T, meshrt_reduce_op Op) const {
    if (T == MESHRT_F16 || T == MESHRT_BF16) {
      const Ops16 &O = T == MESHRT_F16 ? Half : BFloat;
      switch (Op) {
      case MESHRT_SUM:
      case MESHRT_AVG:
        return O.Sum;
      case MESHRT_PROD:
        return O.Prod;
      case MESHRT_MIN:
        return O.Min;
      case MESHRT_MAX:
        return O.Max;
      default:
        return MPI_OP_NULL; // Bitwise: rejected by the generic checks.
      }
    }
    switch (Op) {
    case MESHRT_SUM:
    case MESHRT_AVG:
      return MPI_SUM;
    case MESHRT_PROD:
      return MPI_PROD;
    case MESHRT_MIN:
      return MPI_MIN;
    case MESHRT_MAX:
      return MPI_MAX;
    case MESHRT_BAND:
      return MPI_BAND;
    case MESHRT_BOR:
      return MPI_BOR;
    case MESHRT_BXOR:
      return MPI_BXOR;
    }
    return MPI_OP_NULL;
  }

  MPI_Comm Control;
  Ops16 Half, BFloat;
  MPI_Datatype Types[kNumDTypes];
  MPI_Op Ops[kNumDTypes][kNumReduceOps];
};

//===----------------------------------------------------------------------===//
// Staging of stream-ordered collectives through host memory
//===----------------------------------------------------------------------===//

/// The host staging area of the calling thread: grows, never shrinks, so
/// that a loop of collectives allocates once.
char *stagingArea(size_t Bytes) {
  struct Area {
    char *P = nullptr;
    size_t Size = 0;
    ~Area() { std::free(P); }
  };
  thread_local Area A;
  if (Bytes > A.Size) {
    size_t Want = std::max(Bytes, A.Size * 2);
    Want = (Want + 4095) / 4096 * 4096;
    void *P = std::aligned_alloc(4096, Want);
    if (!P)
      throw Error(MESHRT_ERROR_BACKEND, "cannot allocate " +
                                            std::to_string(Want) +
                                            " bytes of host staging memory");
    std::free(A.P);
    A.P = static_cast<char *>(P);
    A.Size = Want;
  }
  return A.P;
}

/// True if the host can read every byte of [P, P + Bytes), asked without
/// touching it (a one-byte write from each page into a pipe fails with
/// EFAULT where the host cannot read): without a CUDA driver this tells host
/// buffers from device buffers without faulting.
bool hostReadable(const void *P, size_t Bytes) {
  static int Fds[2] = {-1, -1};
  static std::once_flag Once;
  std::call_once(Once, [] {
    if (pipe2(Fds, O_CLOEXEC | O_NONBLOCK) != 0)
      Fds[0] = Fds[1] = -1;
  });
  if (Fds[1] < 0)
    return true; // Cannot ask; assume host memory, as the blocking calls do.
  const uintptr_t Page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t Begin = reinterpret_cast<uintptr_t>(P);
  const uintptr_t Last = Begin + (Bytes ? Bytes - 1 : 0);
  for (uintptr_t A = Begin;; A = (A / Page + 1) * Page) {
    if (A > Last)
      A = Last;
    if (write(Fds[1], reinterpret_cast<const void *>(A), 1) != 1) {
      if (errno == EFAULT)
        return false;
    } else {
      char C; // Drain it (another thread may have: then this read fails).
      ssize_t Got = read(Fds[0], &C, 1);
      (void)Got;
    }
    if (A == Last)
      return true;
  }
}

/// How one stream-ordered call on the MPI backend reaches its buffers.
class Stager {
public:
  /// Synchronises `Stream` (null: the shared stream). Without a driver or a
  /// device there is nothing to synchronise on the null stream; a given
  /// stream is then an error.
  Stager(const char *Op, void *Stream) : Op(Op), Stream(Stream) {
    Gpu = gpuTryMakeCurrent(NoGpu);
    if (!Gpu) {
      if (Stream)
        throw Error(MESHRT_ERROR_BACKEND,
                    std::string(Op) +
                        ": cannot synchronise the given stream: " + NoGpu);
      return;
    }
    gpuPollStream(Stream, Op, "before staging");
  }

  /// True if the `Which` buffer [P, P + Bytes) is device memory and must be
  /// staged; false for host memory.
  bool isDevice(const void *P, int64_t Bytes, const char *Which) const {
    if (Gpu)
      return gpuIsDeviceMemory(P, Op);
    if (hostReadable(P, size_t(Bytes)))
      return false;
    throw Error(MESHRT_ERROR_BACKEND,
                std::string(Op) + ": the " + Which +
                    " buffer is not host memory, and device memory cannot be "
                    "staged through the host without the CUDA driver: " +
                    NoGpu);
  }

  /// Enqueues a copy on the stream.
  void copy(void *Dst, const void *Src, int64_t Bytes, const char *What) const {
    gpuCopyAsync(Dst, Src, size_t(Bytes), Stream, Op, What);
  }

  /// Waits for the copies.
  void wait(const char *When) const { gpuPollStream(Stream, Op, When); }

private:
  const char *Op;
  void *Stream;
  bool Gpu = false;
  std::string NoGpu;
};

void requireIntCount(int64_t Count, int64_t Blocks, const char *Op) {
  if (Count > INT_MAX || Count * Blocks > INT64_MAX / 2)
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                std::string(Op) + " of more than 2^31-1 elements per block "
                                  "is not supported on the MPI backend");
}

template <typename F>
void MpiComm::staged(const char *Op, const void *Send, int64_t SendBytes,
                     void *Recv, int64_t RecvBytes, F &&Run) {
  Stager S(Op, CallStream);
  const bool InPlace = Send == Recv;
  const bool SendDev = SendBytes > 0 && S.isDevice(Send, SendBytes, "send");
  const bool RecvDev =
      InPlace ? SendDev : RecvBytes > 0 && S.isDevice(Recv, RecvBytes, "recv");
  if (!SendDev && !RecvDev) {
    Run(Send, Recv);
    return;
  }
  // Send first, recv after it at a 64-byte boundary.
  const int64_t SendRoom = SendDev && !InPlace ? (SendBytes + 63) / 64 * 64 : 0;
  char *Area = stagingArea(size_t(SendRoom + (RecvDev ? RecvBytes : 0)));
  void *HostSend = SendDev ? Area : const_cast<void *>(Send);
  void *HostRecv = InPlace ? HostSend : RecvDev ? Area + SendRoom : Recv;
  if (SendDev) {
    S.copy(HostSend, Send, SendBytes, "send buffer, device to host");
    S.wait("copy to the host");
  }
  Run(HostSend, HostRecv);
  if (RecvDev) {
    S.copy(Recv, HostRecv, RecvBytes, "recv buffer, host to device");
    S.wait("copy to the device");
  }
}

void MpiComm::allReduceHost(const void *Send, void *Recv, int64_t Count,
                            meshrt_dtype T, meshrt_reduce_op Op) {
  MPI_Datatype Type = B.type(T);
  MPI_Op MOp = B.op(T, Op);
  if (__builtin_expect(Count <= INT_MAX, 1)) {
    checkMpi(MPI_Allreduce(Send == Recv ? MPI_IN_PLACE : Send, Recv, int(Count),
                           Type, MOp, C),
             "MPI_Allreduce");
    if (Op == MESHRT_AVG)
      divideBy(Recv, Count, T, Size);
    return;
  }
  int64_t Elem = dtypeSize(T);
  for (int64_t Done = 0; Done < Count;) {
    int N = int(std::min<int64_t>(Count - Done, INT_MAX));
    char *R = static_cast<char *>(Recv) + Done * Elem;
    const void *S = Send == Recv
                        ? MPI_IN_PLACE
                        : static_cast<const char *>(Send) + Done * Elem;
    checkMpi(MPI_Allreduce(S, R, N, Type, MOp, C), "MPI_Allreduce");
    Done += N;
  }
  if (Op == MESHRT_AVG)
    divideBy(Recv, Count, T, Size);
}

void MpiComm::allGatherHost(const void *Send, void *Recv, int64_t Count,
                            meshrt_dtype T) {
  requireIntCount(Count, Size, "all_gather");
  MPI_Datatype Type = B.type(T);
  checkMpi(MPI_Allgather(Send, int(Count), Type, Recv, int(Count), Type, C),
           "MPI_Allgather");
}

void MpiComm::reduceScatterHost(const void *Send, void *Recv, int64_t Count,
                                meshrt_dtype T, meshrt_reduce_op Op) {
  requireIntCount(Count, Size, "reduce_scatter");
  checkMpi(MPI_Reduce_scatter_block(Send, Recv, int(Count), B.type(T),
                                    B.op(T, Op), C),
           "MPI_Reduce_scatter_block");
  if (Op == MESHRT_AVG)
    divideBy(Recv, Count, T, Size);
}

/// MPI_Allgatherv of each member's data elements, at its block; the
/// padding after `Valid` zeroed.
void MpiComm::allGatherPaddedHost(const void *Send, void *Recv, int64_t Count,
                                  int64_t Valid, meshrt_dtype T) {
  // MPI_Allgatherv's displacements are ints too.
  requireIntCount(Count * Size, 1, "all_gather_padded");
  std::vector<int> Counts(static_cast<size_t>(Size)),
      Displs(static_cast<size_t>(Size));
  for (int64_t J = 0; J < Size; ++J) {
    Counts[size_t(J)] = int(validIn(J, Count, Valid));
    Displs[size_t(J)] = int(J * Count);
  }
  MPI_Datatype Type = B.type(T);
  checkMpi(MPI_Allgatherv(Send, Counts[size_t(Rank)], Type, Recv, Counts.data(),
                          Displs.data(), Type, C),
           "MPI_Allgatherv");
  int64_t Elem = dtypeSize(T);
  std::memset(static_cast<char *>(Recv) + Valid * Elem, 0,
              size_t((Size * Count - Valid) * Elem));
}

/// MPI_Reduce_scatter of the first `Valid` elements, each member's data
/// elements of its block; the rest of its block zeroed.
void MpiComm::reduceScatterPaddedHost(const void *Send, void *Recv,
                                      int64_t Count, int64_t Valid,
                                      meshrt_dtype T, meshrt_reduce_op Op) {
  requireIntCount(Count * Size, 1, "reduce_scatter_padded");
  std::vector<int> Counts(static_cast<size_t>(Size));
  for (int64_t J = 0; J < Size; ++J)
    Counts[size_t(J)] = int(validIn(J, Count, Valid));
  checkMpi(
      MPI_Reduce_scatter(Send, Recv, Counts.data(), B.type(T), B.op(T, Op), C),
      "MPI_Reduce_scatter");
  int64_t Mine = Counts[size_t(Rank)], Elem = dtypeSize(T);
  if (Op == MESHRT_AVG)
    divideBy(Recv, Mine, T, Size);
  std::memset(static_cast<char *>(Recv) + Mine * Elem, 0,
              size_t((Count - Mine) * Elem));
}

void MpiComm::allToAllHost(const void *Send, void *Recv, int64_t Count,
                           meshrt_dtype T) {
  requireIntCount(Count, Size, "all_to_all");
  MPI_Datatype Type = B.type(T);
  checkMpi(MPI_Alltoall(Send, int(Count), Type, Recv, int(Count), Type, C),
           "MPI_Alltoall");
}

/// MPI_Alltoallv of the data elements of each block, at its block (see
/// MESHRT_PADDED_SPLIT / MESHRT_PADDED_CONCAT for which member's share a
/// block holds); the rest of each recv block zeroed.
void MpiComm::allToAllPaddedHost(const void *Send, void *Recv, int64_t Count,
                                 int64_t Valid, meshrt_dtype T, int32_t Side) {
  // MPI_Alltoallv's displacements are ints too.
  requireIntCount(Count * Size, 1, "all_to_all_padded");
  const size_t N = static_cast<size_t>(Size);
  std::vector<int> SendCounts(N), RecvCounts(N), Displs(N);
  const int Mine = int(validIn(Rank, Count, Valid));
  const bool Split = Side == MESHRT_PADDED_SPLIT;
  for (int64_t J = 0; J < Size; ++J) {
    int Theirs = int(validIn(J, Count, Valid));
    SendCounts[size_t(J)] = Split ? Theirs : Mine;
    RecvCounts[size_t(J)] = Split ? Mine : Theirs;
    Displs[size_t(J)] = int(J * Count);
  }
  MPI_Datatype Type = B.type(T);
  checkMpi(MPI_Alltoallv(Send, SendCounts.data(), Displs.data(), Type, Recv,
                         RecvCounts.data(), Displs.data(), Type, C),
           "MPI_Alltoallv");
  int64_t Elem = dtypeSize(T);
  char *Out = static_cast<char *>(Recv);
  for (int64_t J = 0; J < Size; ++J) {
    int64_t Got = RecvCounts[size_t(J)];
    std::memset(Out + (J * Count + Got) * Elem, 0,
                size_t((Count - Got) * Elem));
  }
}

void MpiComm::broadcastHost(void *Buf, int64_t Count, meshrt_dtype T,
                            int64_t Root) {
  MPI_Datatype Type = B.type(T);
  int64_t Elem = dtypeSize(T);
  for (int64_t Done = 0; Done < Count;) {
    int N = int(std::min<int64_t>(Count - Done, INT_MAX));
    checkMpi(MPI_Bcast(static_cast<char *>(Buf) + Done * Elem, N, Type,
                       int(Root), C),
             "MPI_Bcast");
    Done += N;
  }
}

void MpiComm::send(const void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
                   int64_t Tag) {
  int64_t Elem = dtypeSize(T);
  for (int64_t Done = 0; Done < Count;) {
    int N = int(std::min<int64_t>(Count - Done, INT_MAX));
    checkMpi(MPI_Send(static_cast<const char *>(Buf) + Done * Elem, N,
                      B.type(T), int(Peer), int(Tag), C),
             "MPI_Send");
    Done += N;
  }
}
void MpiComm::recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
                   int64_t Tag) {
  int64_t Elem = dtypeSize(T);
  for (int64_t Done = 0; Done < Count;) {
    int N = int(std::min<int64_t>(Count - Done, INT_MAX));
    MPI_Status St;
    checkMpi(MPI_Recv(static_cast<char *>(Buf) + Done * Elem, N, B.type(T),
                      int(Peer), int(Tag), C, &St),
             "MPI_Recv");
    int Got = 0;
    MPI_Get_count(&St, B.type(T), &Got);
    if (Got != N)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "received " + std::to_string(Got) + " elements from rank " +
                      std::to_string(Peer) + " but expected " +
                      std::to_string(N) +
                      " (the sender's count or dtype differs)");
    Done += N;
  }
}
void MpiComm::sendRecvHost(const void *Send, int64_t Dest, void *Recv,
                           int64_t Source, int64_t Count, meshrt_dtype T,
                           bool ZeroFill) {
  int64_t Elem = dtypeSize(T);
  if (Source < 0 && ZeroFill)
    std::memset(Recv, 0, size_t(Count * Elem));
  if (Dest == Rank && Source == Rank) {
    std::memcpy(Recv, Send, size_t(Count * Elem));
    return;
  }
  MPI_Datatype Type = B.type(T);
  int To = Dest < 0 ? MPI_PROC_NULL : int(Dest);
  int From = Source < 0 ? MPI_PROC_NULL : int(Source);
  for (int64_t Done = 0; Done < Count;) {
    int N = int(std::min<int64_t>(Count - Done, INT_MAX));
    checkMpi(MPI_Sendrecv(static_cast<const char *>(Send) + Done * Elem, N,
                          Type, To, 0, static_cast<char *>(Recv) + Done * Elem,
                          N, Type, From, 0, C, MPI_STATUS_IGNORE),
             "MPI_Sendrecv");
    Done += N;
  }
}

} // namespace

std::unique_ptr<Backend> meshrt::detail::createMpiBackend(MPI_Comm Control) {
  return std::make_unique<MpiBackend>(Control);
}
