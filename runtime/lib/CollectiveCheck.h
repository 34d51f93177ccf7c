//===- CollectiveCheck.h - Cross-rank check of collective calls -*- C++ -*-===//
//
// With MESHRT_CHECK_COLLECTIVES=1 (off by default, like PyTorch's
// TORCH_DISTRIBUTED_DEBUG=DETAIL), every member of a group compares the
// signature of the collective it is about to run (kind, count, dtype,
// reduction, root, permute offset and flags, communicator) with the others
// before any data moves. A mismatch, which would otherwise compute wrong
// numbers silently, fail inside MPI (MPI_ERR_TRUNCATE) or hang, stops every
// member with a message that names the first rank that differs from group
// rank 0 and both signatures. Communicator creation (a split) is checked the
// same way over the world.
//
// The comparison runs over MPI on a communicator of its own per grouping,
// whatever the backend: one MPI_Allreduce of a 16-byte digest per call, and
// an MPI_Allgather of the full signatures only when the digests differ.
// Off, a collective pays one null-pointer test (Comm::Check).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_COLLECTIVECHECK_H
#define MESHRT_LIB_COLLECTIVECHECK_H

#include "ControlPlane.h"

#include <memory>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshrt {
namespace detail {

/// What is checked; values are part of the digest only.
enum class CollectiveKind : int32_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllGatherPadded,     ///< Offset holds `valid`.
  ReduceScatterPadded, ///< Offset holds `valid`.
  AllToAll,
  AllToAllPadded, ///< Offset holds `valid`, Flags the side.
  Broadcast,
  Permute,
  Barrier,
  Split, ///< Communicator creation.
};

/// The arguments every member of the group must agree on. Fields a kind does
/// not use are -1 (0 for Offset and Flags).
struct CollectiveSignature {
  CollectiveKind Kind;
  int32_t DType = -1;
  int32_t RedOp = -1;
  int32_t Flags = 0;
  int64_t Count = -1;
  int64_t Root = -1;
  int64_t Offset = 0;
  /// A hash of the communicator's label ("mesh 'm' axes [shard]").
  uint64_t CommId = 0;
};

/// The check communicator of one grouping (a duplicate or split of the
/// context's check world).
class CollectiveCheck {
public:
  /// Runs on the control group `G` (a duplicate or split of the world's).
  explicit CollectiveCheck(std::unique_ptr<ControlGroup> G);
  ~CollectiveCheck();
  CollectiveCheck(const CollectiveCheck &) = delete;
  CollectiveCheck &operator=(const CollectiveCheck &) = delete;

  /// The check group (for splitting it).
  ControlGroup &group() const { return *G; }

  /// Compares `S`, called on the communicator labelled `Label`, across the
  /// group (collective over it). Returns nothing when all members agree,
  /// else the message naming the first differing member (world rank
  /// `Members[g]`, or g itself when `Members` is empty) and both
  /// signatures. Throws meshrt::Error if MPI fails.
  std::optional<std::string> verify(const CollectiveSignature &S,
                                    const std::string &Label,
                                    const std::vector<int64_t> &Members) const;

  /// FNV-1a of `Label`: the CommId of a communicator.
  static uint64_t commId(const std::string &Label);

private:
  std::unique_ptr<ControlGroup> G;
};

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_COLLECTIVECHECK_H
