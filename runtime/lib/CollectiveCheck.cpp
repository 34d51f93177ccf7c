//===- CollectiveCheck.cpp - Cross-rank check of collective calls ---------===//
//
// See CollectiveCheck.h.
//
//===----------------------------------------------------------------------===//

#include "CollectiveCheck.h"

#include "Backend.h"
#include "Context.h"

#include <cstring>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

/// FNV-1a over `N` bytes, continuing from `H`.
uint64_t fnv(uint64_t H, const void *P, size_t N) {
  const unsigned char *B = static_cast<const unsigned char *>(P);
  for (size_t I = 0; I < N; ++I)
    H = (H ^ B[I]) * 1099511628211ull;
  return H;
}

constexpr uint64_t FnvBasis = 1469598103934665603ull;

uint64_t digest(const CollectiveSignature &S) {
  int64_t Fields[] = {int64_t(S.Kind), S.DType, S.RedOp,  S.Flags,
                      S.Count,         S.Root,  S.Offset, 0};
  std::memcpy(&Fields[7], &S.CommId, sizeof(S.CommId));
  return fnv(FnvBasis, Fields, sizeof(Fields));
}

/// One member's call as gathered after a mismatch.
struct Record {
  CollectiveSignature Sig;
  char Label[120];
};

const char *kindName(CollectiveKind K) {
  switch (K) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGatherPadded:
    return "all_gather_padded";
  case CollectiveKind::ReduceScatterPadded:
    return "reduce_scatter_padded";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::AllToAllPadded:
    return "all_to_all_padded";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Permute:
    return "permute";
  case CollectiveKind::Barrier:
    return "barrier";
  case CollectiveKind::Split:
    return "communicator creation";
  }
  return "?";
}

/// "broadcast count=4 dtype=f32 root=0 on mesh 'm' axes [shard]".
std::string describe(const Record &R) {
  const CollectiveSignature &S = R.Sig;
  std::string D = kindName(S.Kind);
  if (S.Count >= 0)
    D += " count=" + std::to_string(S.Count);
  if (S.DType >= 0)
    D += std::string(" dtype=") + dtypeName(meshrt_dtype(S.DType));
  if (S.RedOp >= 0)
    D += std::string(" op=") + reduceOpName(meshrt_reduce_op(S.RedOp));
  if (S.Kind == CollectiveKind::Broadcast)
    D += " root=" + std::to_string(S.Root);
  if (S.Kind == CollectiveKind::AllGatherPadded ||
      S.Kind == CollectiveKind::ReduceScatterPadded)
    D += " valid=" + std::to_string(S.Offset);
  if (S.Kind == CollectiveKind::AllToAllPadded)
    D += " valid=" + std::to_string(S.Offset) +
         " side=" + std::to_string(S.Flags);
  if (S.Kind == CollectiveKind::Permute)
    D += " offset=" + std::to_string(S.Offset) +
         " flags=" + std::to_string(S.Flags);
  D += S.Kind == CollectiveKind::Split ? " for " : " on ";
  return D + R.Label;
}

/// "the root", "the count and the dtype", ...
std::string differences(const Record &A, const Record &B) {
  std::vector<const char *> D;
  // The padded forms keep `valid` in Offset and all_to_all_padded its side
  // in Flags.
  bool Padded = A.Sig.Kind == B.Sig.Kind &&
                (A.Sig.Kind == CollectiveKind::AllGatherPadded ||
                 A.Sig.Kind == CollectiveKind::ReduceScatterPadded ||
                 A.Sig.Kind == CollectiveKind::AllToAllPadded);
  if (A.Sig.Kind != B.Sig.Kind)
    D.push_back("the collective");
  if (A.Sig.Count != B.Sig.Count)
    D.push_back("the count");
  if (A.Sig.DType != B.Sig.DType)
    D.push_back("the dtype");
  if (A.Sig.RedOp != B.Sig.RedOp)
    D.push_back("the reduction");
  if (A.Sig.Root != B.Sig.Root)
    D.push_back("the root");
  if (A.Sig.Offset != B.Sig.Offset)
    D.push_back(Padded ? "valid" : "the offset");
  if (A.Sig.Flags != B.Sig.Flags)
    D.push_back(Padded ? "the side" : "the flags");
  if (A.Sig.CommId != B.Sig.CommId || std::strcmp(A.Label, B.Label))
    D.push_back("the communicator");
  std::string S;
  for (size_t I = 0; I < D.size(); ++I)
    S += std::string(I == 0 ? "" : I + 1 == D.size() ? " and " : ", ") + D[I];
  return S.empty() ? "a field" : S;
}

bool sameCall(const Record &A, const Record &B) {
  return digest(A.Sig) == digest(B.Sig) && !std::strcmp(A.Label, B.Label);
}

} // namespace

CollectiveCheck::CollectiveCheck(std::unique_ptr<ControlGroup> G)
    : G(std::move(G)) {}

CollectiveCheck::~CollectiveCheck() = default;

uint64_t CollectiveCheck::commId(const std::string &Label) {
  return fnv(FnvBasis, Label.data(), Label.size());
}

std::optional<std::string>
CollectiveCheck::verify(const CollectiveSignature &S, const std::string &Label,
                        const std::vector<int64_t> &Members) const {
  // The max of h and of ~h give max and ~min: equal iff all digests agree.
  uint64_t H = digest(S);
  // (Compared as signed integers: the max of x and of ~x still give the
  // max and ~min, in that order.)
  int64_t All[2] = {int64_t(H), int64_t(~H)};
  G->allReduce(All, 2, /*Max=*/true, "MESHRT_CHECK_COLLECTIVES");
  if (All[0] == ~All[1])
    return std::nullopt;

  Record R{};
  R.Sig = S;
  std::strncpy(R.Label, Label.c_str(), sizeof(R.Label) - 1);
  std::vector<Record> Rs(static_cast<size_t>(G->size()));
  G->allGather(&R, Rs.data(), sizeof(Record), "MESHRT_CHECK_COLLECTIVES");
  size_t G = 1;
  while (G < Rs.size() && sameCall(Rs[G], Rs[0]))
    ++G;
  if (G == Rs.size())
    return std::nullopt; // Digests differed, calls did not: cannot happen.
  auto World = [&](size_t I) {
    return std::to_string(Members.empty() ? int64_t(I) : Members[I]);
  };
  return "ranks disagree on the collective (MESHRT_CHECK_COLLECTIVES=1): "
         "rank " +
         World(0) + " (group rank 0) calls " + describe(Rs[0]) + " but rank " +
         World(G) + " (group rank " + std::to_string(G) + ") calls " +
         describe(Rs[G]) + " (they differ in " + differences(Rs[0], Rs[G]) +
         ")";
}
