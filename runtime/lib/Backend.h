//===- Backend.h - Interface between the runtime and MPI/NCCL ---*- C++ -*-===//
//
// A backend creates the world communicator, splits it, and runs collectives
// on the communicators it made. The runtime core (Context.cpp) validates
// arguments, keeps the communicator cache and the watchdog, and calls the
// backend only with arguments that are already checked: counts >= 0, valid
// dtypes and reductions, roots and peers in range.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_BACKEND_H
#define MESHRT_LIB_BACKEND_H

#include "meshrt/meshrt.h"

#include "MpiApi.h"

#include <cstdint>
#include <memory>
#include <string>

namespace meshrt {
namespace detail {

class ControlGroup;
class StoreClient;

/// One communicator of a backend: the world, or one split of it.
class BackendComm {
public:
  virtual ~BackendComm();

  /// This process's rank in the communicator.
  int64_t rank() const { return Rank; }
  /// Number of processes.
  int64_t size() const { return Size; }

  /// See meshrt_all_reduce (send may equal recv).
  virtual void allReduce(const void *Send, void *Recv, int64_t Count,
                         meshrt_dtype Type, meshrt_reduce_op Op) = 0;
  /// See meshrt_all_gather.
  virtual void allGather(const void *Send, void *Recv, int64_t Count,
                         meshrt_dtype Type) = 0;
  /// See meshrt_reduce_scatter.
  virtual void reduceScatter(const void *Send, void *Recv, int64_t Count,
                             meshrt_dtype Type, meshrt_reduce_op Op) = 0;
  /// See meshrt_all_gather_padded (0 < Valid < size() * Count).
  virtual void allGatherPadded(const void *Send, void *Recv, int64_t Count,
                               int64_t Valid, meshrt_dtype Type) = 0;
  /// See meshrt_reduce_scatter_padded (0 < Valid < size() * Count).
  virtual void reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                                   int64_t Valid, meshrt_dtype Type,
                                   meshrt_reduce_op Op) = 0;
  /// See meshrt_all_to_all.
  virtual void allToAll(const void *Send, void *Recv, int64_t Count,
                        meshrt_dtype Type) = 0;
  /// See meshrt_all_to_all_padded (0 <= Valid < size() * Count; Side is
  /// MESHRT_PADDED_SPLIT or MESHRT_PADDED_CONCAT).
  virtual void allToAllPadded(const void *Send, void *Recv, int64_t Count,
                              int64_t Valid, meshrt_dtype Type,
                              int32_t Side) = 0;
  /// See meshrt_broadcast.
  virtual void broadcast(void *Buf, int64_t Count, meshrt_dtype Type,
                         int64_t Root) = 0;
  /// Sends `Send` to rank `Dest` and receives `Recv` from rank `Source`;
  /// either may be -1 (nothing to send / receive). With `ZeroFill`, Recv is
  /// zeroed when there is no source.
  virtual void sendRecv(const void *Send, int64_t Dest, void *Recv,
                        int64_t Source, int64_t Count, meshrt_dtype Type,
                        bool ZeroFill) = 0;
  /// See meshrt_send: `Count` elements to rank `Peer` (not this rank).
  virtual void send(const void *Buf, int64_t Count, meshrt_dtype Type,
                    int64_t Peer, int64_t Tag) = 0;
  /// See meshrt_recv: `Count` elements from rank `Peer` (not this rank).
  virtual void recv(void *Buf, int64_t Count, meshrt_dtype Type, int64_t Peer,
                    int64_t Tag) = 0;
  /// See meshrt_barrier.
  virtual void barrier() = 0;
  /// See meshrt_comm_native_handle.
  virtual void *nativeHandle() = 0;

  /// Makes the following collectives stream-ordered on `Stream` (null: the
  /// shared stream) until endStreamCalls(): NCCL enqueues them and returns
  /// without waiting; MPI synchronises the stream and stages device buffers
  /// through host memory.
  void beginStreamCalls(void *Stream) {
    CallStream = Stream;
    OnStream = true;
  }
  /// Back to blocking collectives on the backend's own stream.
  void endStreamCalls() {
    CallStream = nullptr;
    OnStream = false;
  }

  /// The data elements of member `J`'s block of `Count` when the first
  /// `Valid` elements of the blocks hold data (the padded collectives).
  static int64_t validIn(int64_t J, int64_t Count, int64_t Valid) {
    int64_t Left = Valid - J * Count;
    return Left <= 0 ? 0 : (Left < Count ? Left : Count);
  }

protected:
  int64_t Rank = 0;
  int64_t Size = 1;
  /// See beginStreamCalls.
  void *CallStream = nullptr;
  bool OnStream = false;
};

/// Creates communicators of one kind.
class Backend {
public:
  virtual ~Backend();
  /// MESHRT_BACKEND_MPI, _NCCL or _GLOO.
  virtual meshrt_backend kind() const = 0;
  /// "mpi", "nccl" or "gloo".
  virtual const char *name() const = 0;
  /// The library's version, for the start-up line ("Open MPI v4.1.4").
  virtual std::string version() const { return ""; }
  /// The device its communicators use ("cpu", "cuda:0").
  virtual std::string device() const { return "cpu"; }
  /// The world communicator (collective over the control communicator).
  virtual std::unique_ptr<BackendComm> createWorld() = 0;
  /// Splits `World`: processes with the same `Color` end up together, ordered
  /// by `Key` (collective over the world). A negative `Color` takes part in
  /// the split and gets no communicator (null). `Label` names the group for
  /// the backend's own diagnostics.
  virtual std::unique_ptr<BackendComm> split(BackendComm &World, int64_t Color,
                                             int64_t Key,
                                             const std::string &Label) = 0;
  /// Throws meshrt::Error (MESHRT_ERROR_UNSUPPORTED) if `Op` on `Type`
  /// cannot run on this backend. Called after the generic checks.
  virtual void checkReduction(meshrt_dtype Type, meshrt_reduce_op Op) const;
  /// Waits for `Stream` and reports asynchronous communication errors, with
  /// `Op` in the message. Only backends whose communicators support streams
  /// get this call.
  virtual void synchronizeStream(void *Stream, const char *Op);
};

/// Creates the MPI backend on top of `Control` (a private duplicate of
/// MPI_COMM_WORLD owned by the context).
std::unique_ptr<Backend> createMpiBackend(MPI_Comm Control);

/// True if the runtime was built with the NCCL backend.
bool ncclBackendBuilt();

/// True if the NCCL backend is built and CUDA reports at least one device.
/// Otherwise sets `Why` to a reason.
bool cudaDeviceVisible(std::string &Why);

/// Creates the NCCL backend: picks this process's device from its node-local
/// rank and shares the NCCL unique id over `Control` (collective over it).
/// Throws meshrt::Error.
std::unique_ptr<Backend> createNcclBackend(ControlGroup &Control);

/// Creates the gloo backend (GlooBackend.cpp): its plugin loaded at run
/// time, its communicators meeting at `Store` under `Prefix`.
std::unique_ptr<Backend> createGlooBackend(StoreClient &Store,
                                           const std::string &Prefix,
                                           int64_t Rank, int64_t Size,
                                           double TimeoutSeconds);
/// True if the gloo backend can start here; else `Why` says what is missing.
bool glooAvailable(std::string &Why);

/// Throws meshrt::Error(MESHRT_ERROR_BACKEND) for MPI error `Code`.
[[noreturn]] void mpiFail(int Code, const char *What);

/// Throws meshrt::Error(MESHRT_ERROR_BACKEND) if `Code` is not MPI_SUCCESS.
inline void checkMpi(int Code, const char *What) {
  if (__builtin_expect(Code != MPI_SUCCESS, 0))
    mpiFail(Code, What);
}

/// Takes communicator `C` into use: its errors are returned, not fatal, and
/// `Rank`, `Size` are this process's place in it.
inline void adoptMpiComm(MPI_Comm C, int64_t &Rank, int64_t &Size) {
  MPI_Comm_set_errhandler(C, MPI_ERRORS_RETURN);
  int R = 0, S = 1;
  MPI_Comm_rank(C, &R);
  MPI_Comm_size(C, &S);
  Rank = R;
  Size = S;
}

/// Frees an owned communicator, unless MPI is finalized already.
inline void releaseMpiComm(MPI_Comm &C) {
  int Fin = 0;
  MPI_Finalized(&Fin);
  if (!Fin && C != MPI_COMM_NULL)
    MPI_Comm_free(&C);
}

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_BACKEND_H
