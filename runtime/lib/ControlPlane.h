//===- ControlPlane.h - Small agreements between ranks ----------*- C++ -*-===//
//
// Everything the runtime exchanges between ranks outside the data path goes
// through a ControlGroup: start-up agreement, mesh declaration digests,
// error broadcasts, the collective check, the node-local rank, NCCL's unique
// id and the exit fence. Two implementations:
//
//   * MPI (MpiControl.cpp): a duplicate of MPI_COMM_WORLD and its splits,
//     when an MPI launcher started the job;
//   * the store (StoreControl.cpp): keys in the TCP store of Store.h, when
//     torchrun, Kubernetes or srun without PMI started it.
//
// The layers, bottom up: Launch.h says who started the process; Bootstrap.h
// joins the job once per process (MPI_Init, or the store's rendezvous) and
// hands each runtime context its own world ControlGroup; the context runs
// its data backends (MPI, NCCL, gloo) beside it.
//
// Every call is collective over the group, and sequential: ranks make the
// same calls in the same order. The payloads are small (a few words, a
// message, a 128-byte id); nothing here is on a collective's hot path.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_CONTROLPLANE_H
#define MESHRT_LIB_CONTROLPLANE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace meshrt {
namespace detail {

/// A group of processes for control traffic: the world or one split of it.
class ControlGroup {
public:
  virtual ~ControlGroup();

  /// This process's rank in the group.
  int64_t rank() const { return Rank; }
  /// Number of processes.
  int64_t size() const { return Size; }
  /// "mpi" or "store".
  virtual const char *kind() const = 0;

  /// Elementwise maximum (`Max`) or minimum over the group of `N` integers,
  /// in place. `What` names the call in errors ("start-up").
  virtual void allReduce(int64_t *Data, size_t N, bool Max,
                         const char *What) = 0;
  /// `Bytes` bytes of `Buf` from group rank `Root` to every rank.
  virtual void broadcast(void *Buf, size_t Bytes, int64_t Root,
                         const char *What) = 0;
  /// Every rank's `Bytes` bytes of `Mine`, in rank order, into `All`
  /// (size() * Bytes bytes).
  virtual void allGather(const void *Mine, void *All, size_t Bytes,
                         const char *What) = 0;
  /// Splits the group: processes with the same `Color` end up together,
  /// ordered by `Key`; a negative `Color` takes part and gets null.
  virtual std::unique_ptr<ControlGroup> split(int64_t Color, int64_t Key,
                                              const char *What) = 0;
  /// A new group of the same processes, whose traffic does not mix with
  /// this one's.
  virtual std::unique_ptr<ControlGroup> duplicate(const char *What) = 0;
  /// The rank among the processes of this group on the same host.
  virtual int64_t nodeLocalRank(const char *What) = 0;
  /// Waits until every rank reached the fence, for at most `Bound` seconds
  /// (0: no bound); true if every rank did. Used at process exit: it must
  /// not throw, and a rank that never comes only makes it return false.
  virtual bool fence(double Bound) noexcept = 0;

  /// A string from `Root` to every rank.
  std::string broadcastString(const std::string &S, int64_t Root,
                              const char *What);

protected:
  int64_t Rank = 0;
  int64_t Size = 1;
};

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_CONTROLPLANE_H
