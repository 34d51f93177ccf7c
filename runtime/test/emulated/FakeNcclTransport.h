//===- FakeNcclTransport.h - How the emulated NCCL moves bytes ------------===//
//
// Test-only. The emulated NCCL (FakeNccl.cpp) computes every collective on
// the host from bytes it moves between the members of a communicator. Two
// transports move them:
//   - MPI, when the process runs under an MPI launcher (MPI is initialized
//     by the runtime's control plane): communicators are MPI communicators.
//   - gloo (Debian's libgloo), when it does not (torchrun, an env launcher):
//     communicators are gloo contexts over TCP on this node, meeting through
//     a gloo FileStore in FAKE_NCCL_STORE_DIR (default
//     /tmp/meshrt-fake-nccl-store), under a key made from the NCCL unique
//     id, which the runtime hands to every member as it would to NCCL.
// Both give the same operations with the same results; only the NCCL
// semantics on top (reductions, ordering, tracing) live in FakeNccl.cpp.
// Errors are thrown as std::runtime_error naming the operation.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_TEST_EMULATED_FAKENCCLTRANSPORT_H
#define MESHRT_TEST_EMULATED_FAKENCCLTRANSPORT_H

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace fakenccl {

/// One side of a point-to-point transfer, completed by wait().
class PendingTransfer {
public:
  virtual ~PendingTransfer() = default;
  virtual void wait() = 0;
};

class Transport {
public:
  virtual ~Transport() = default;
  int rank() const { return Rank; }
  int size() const { return int(WorldRanks.size()); }
  /// The members' ranks in the job, in communicator order.
  const std::vector<int> &worldRanks() const { return WorldRanks; }
  /// "mpi" or "gloo".
  virtual const char *name() const = 0;

  /// Recv holds every member's `Bytes` of Send, in rank order.
  virtual void allGather(const void *Send, void *Recv, size_t Bytes) = 0;
  /// Like allGather, but only `Root` receives.
  virtual void gather(const void *Send, void *Recv, size_t Bytes, int Root) = 0;
  /// Buf on every member becomes Root's.
  virtual void broadcast(void *Buf, size_t Bytes, int Root) = 0;
  /// Starts a send to (or a receive from) `Peer`; transfers between two
  /// members pair in the order they are started.
  virtual std::unique_ptr<PendingTransfer> start(bool IsSend, void *Buf,
                                                 size_t Bytes, int Peer) = 0;
  /// NCCL's split: the members with one `Color` (>= 0) form a communicator,
  /// ordered by (Key, rank). Every member calls it; a negative colour gets
  /// null.
  virtual std::unique_ptr<Transport> split(int Color, int Key) = 0;

protected:
  int Rank = 0;
  std::vector<int> WorldRanks;
};

/// The communicator of everyone who passes the same `Id` (NCCL's unique id,
/// `IdBytes` bytes): `NRanks` members, this one `Rank`. Over MPI when MPI
/// is initialized, else over gloo.
std::unique_ptr<Transport> joinGroup(const char *Id, size_t IdBytes, int NRanks,
                                     int Rank);

/// Fills NCCL's unique id: unique to this call on this node.
void makeUniqueId(char *Id, size_t IdBytes);

} // namespace fakenccl

#endif // MESHRT_TEST_EMULATED_FAKENCCLTRANSPORT_H
