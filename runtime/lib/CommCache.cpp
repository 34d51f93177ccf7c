//===- CommCache.cpp - Communicators, one per distinct grouping -----------===//
//
// The groups a mesh's axes make (computeGrouping), and the context's
// communicator cache: one backend communicator per distinct grouping, made
// by one collective split over the world, shared by every mesh and axis
// list that groups the ranks alike, and the world itself reused for
// full-mesh groups in mesh order.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Debug.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace meshrt;
using namespace meshrt::detail;

Grouping meshrt::detail::computeGrouping(const std::vector<int64_t> &Ranks,
                                         const std::vector<int64_t> &IndexOf,
                                         const std::vector<LayoutMode> &Modes,
                                         int64_t WorldSize, int64_t Me) {
  // A position i of the mesh has coordinate (i / stride) % size along each
  // mode; its group is every position that differs from it only there.
  auto Base = [&](int64_t I) {
    for (const LayoutMode &L : Modes)
      I -= ((I / L.Stride) % L.Size) * L.Stride;
    return I;
  };
  auto RankIn = [&](int64_t I) {
    int64_t G = 0;
    for (const LayoutMode &L : Modes)
      G = G * L.Size + (I / L.Stride) % L.Size;
    return G;
  };
  Grouping Out;
  Out.Key.assign(size_t(2 * WorldSize), -1);
  std::map<int64_t, int64_t> Ids; // Base position -> group id.
  for (int64_t W = 0; W < WorldSize; ++W) {
    int64_t I = IndexOf[size_t(W)];
    if (I < 0)
      continue;
    auto It = Ids.emplace(Base(I), int64_t(Ids.size())).first;
    Out.Key[size_t(2 * W)] = It->second;
    Out.Key[size_t(2 * W + 1)] = RankIn(I);
  }
  Out.Pos.Size = 1;
  for (const LayoutMode &L : Modes)
    Out.Pos.Size *= L.Size;
  Out.Pos.NumGroups = int64_t(Ids.size());
  int64_t Mine = IndexOf[size_t(Me)];
  if (Mine < 0) {
    Out.Pos.Color = -1;
    Out.Pos.RankInGroup = -1;
    return Out;
  }
  Out.Member = true;
  Out.Pos.Color = Out.Key[size_t(2 * Me)];
  Out.Pos.RankInGroup = Out.Key[size_t(2 * Me + 1)];
  int64_t B = Base(Mine);
  Out.Members.assign(size_t(Out.Pos.Size), -1);
  for (int64_t G = 0; G < Out.Pos.Size; ++G) {
    int64_t Rest = G, I = B;
    for (size_t J = Modes.size(); J-- > 0;) {
      I += (Rest % Modes[J].Size) * Modes[J].Stride;
      Rest /= Modes[J].Size;
    }
    Out.Members[size_t(G)] = Ranks[size_t(I)];
  }
  return Out;
}

static uint64_t packAxes(const std::vector<int64_t> &Axes) {
  uint64_t P = 0;
  for (int64_t A : Axes)
    P = (P << 4) | uint64_t(A);
  return P;
}

/// The C ABI's label of a group: "mesh 'm' axes [replicate, shard]".
static std::string axesLabel(const Mesh &M, const std::vector<int64_t> &Axes) {
  std::string L = "mesh '" + M.name() + "' axes [";
  for (size_t I = 0; I < Axes.size(); ++I)
    L += (I ? ", " : "") + M.axisNames()[size_t(Axes[I])];
  return L + "]";
}

static Error localMeshError(const Mesh &M, const std::string &Label) {
  return Error(MESHRT_ERROR_UNSUPPORTED,
               "cannot create a communicator for " + Label + ": mesh '" +
                   M.name() +
                   "' was made by DeviceMesh::from_group from one group, on "
                   "this rank alone, so no rank knows the other groups; it "
                   "has only the group it was made from (declare the mesh "
                   "on every rank, with a rank array, for new groups)");
}

Comm &Context::getComm(Mesh &M, const std::vector<int64_t> &Axes) {
  checkAlive("get a communicator");
  std::lock_guard<std::mutex> Lock(Mutex);
  ++Stats.comm_requests;
  M.Layout.checkAxes(Axes);
  uint64_t Packed = packAxes(Axes);
  for (auto &C : M.Comms)
    if (!C.ByModes && C.NumAxes == Axes.size() && C.Packed == Packed) {
      ++Stats.comm_reuses;
      return *C.Handle;
    }
  std::string Label = axesLabel(M, Axes);
  if (M.Local)
    throw localMeshError(M, Label);
  std::unique_ptr<Comm> Handle =
      makeComm(M, M.Layout.modes(Axes), M.backendOf(Axes), Label);
  Comm *H = Handle.get();
  M.Comms.push_back({Packed, Axes.size(), false, {}, H, std::move(Handle)});
  return *H;
}

Comm &Context::getComm(Mesh &M, const std::vector<LayoutMode> &Modes,
                       const std::string &Label) {
  checkAlive("get a communicator");
  std::lock_guard<std::mutex> Lock(Mutex);
  ++Stats.comm_requests;
  for (auto &C : M.Comms)
    if (C.ByModes && C.Modes == Modes) {
      ++Stats.comm_reuses;
      return *C.Handle;
    }
  if (M.Local)
    throw localMeshError(M, Label);
  std::unique_ptr<Comm> Handle = makeComm(M, Modes, M.backendOf(Modes), Label);
  Comm *H = Handle.get();
  M.Comms.push_back({0, 0, true, Modes, H, std::move(Handle)});
  return *H;
}

void Context::seedComm(Mesh &M, const std::vector<int64_t> &Axes,
                       Comm &Existing) {
  std::lock_guard<std::mutex> Lock(Mutex);
  M.Layout.checkAxes(Axes);
  M.Comms.push_back(
      {packAxes(Axes), Axes.size(), false, {}, &Existing, nullptr});
}

std::unique_ptr<Comm> Context::makeComm(Mesh &M,
                                        const std::vector<LayoutMode> &Modes,
                                        meshrt_backend Kind,
                                        std::string Label) {
  Grouping G = computeGrouping(M.Ranks, M.IndexOf, Modes, WorldSize, WorldRank);
  auto Handle = std::make_unique<Comm>(*this, M, std::move(Label), G.Pos,
                                       G.Members, G.Member, Kind);
  BackendSlot &Slot = startedBackend(Kind, *Handle);
  CollectiveCheck *Checker = nullptr;
  std::shared_ptr<BackendComm> Impl = backendCommFor(G, *Handle, Slot, Checker);
  Handle->attach(std::move(Impl), Checker, Slot.SupportedOps);
  return Handle;
}

std::shared_ptr<BackendComm>
Context::backendCommFor(const Grouping &G, const Comm &For, BackendSlot &Slot,
                        CollectiveCheck *&Checker) {
  auto It = Shared.find({For.backend(), G.Key});
  if (It != Shared.end()) {
    ++Stats.comm_reuses;
    if (CheckCollectives && G.Member)
      Checker = Checks.at(G.Key).get();
    return It->second;
  }
  int64_t Color = G.Member ? G.Pos.Color : -1;
  int64_t Key = G.Member ? G.Pos.RankInGroup : 0;
  std::shared_ptr<BackendComm> New;
  {
    WatchScope W(*Dog, "communicator split", &For);
    if (CheckCollectives) {
      // Creating a communicator is collective over the world: every rank
      // must be creating this one.
      CollectiveSignature S{CollectiveKind::Split};
      S.CommId = CollectiveCheck::commId(For.label());
      if (std::optional<std::string> Msg =
              WorldCheck->verify(S, For.label(), {}))
        throw Error(MESHRT_ERROR_COLLECTIVE_MISMATCH,
                    "communicator creation for " + For.label() + ": " + *Msg);
    }
    New = Slot.Impl->split(*Slot.World, Color, Key, For.label());
    // One check communicator per grouping, made with its first split.
    if (CheckCollectives && Checks.count(G.Key))
      Checker = G.Member ? Checks.at(G.Key).get() : nullptr;
    else if (CheckCollectives) {
      std::unique_ptr<ControlGroup> C =
          WorldCheck->group().split(Color, Key, "MESHRT_CHECK_COLLECTIVES");
      std::unique_ptr<CollectiveCheck> Made;
      if (C)
        Made = std::make_unique<CollectiveCheck>(std::move(C));
      Checker = Made.get();
      Checks[G.Key] = std::move(Made);
    }
  }
  if (G.Member != (New != nullptr) ||
      (New && (New->size() != For.size() || New->rank() != For.rank())))
    throw Error(MESHRT_ERROR_BACKEND,
                "the split for " + For.label() + " gave rank " +
                    std::to_string(New ? New->rank() : -1) + " of " +
                    std::to_string(New ? New->size() : 0) + ", expected rank " +
                    std::to_string(For.rank()) + " of " +
                    std::to_string(For.size()));
  ++Stats.splits;
  if (New)
    ++Stats.communicators;
  if (New && Debug >= DebugLevel::Detail)
    debugWrite("meshrt: DETAIL: rank " + std::to_string(WorldRank) +
                   ": communicator for " + For.label() + " on " +
                   backendKindName(For.backend()) + ": rank " +
                   std::to_string(New->rank()) + " of " +
                   std::to_string(New->size()) + ", world ranks [" +
                   joinRanks(For.members(), 64) + "]",
               WorldRank);
  Shared[{For.backend(), G.Key}] = New;
  return New;
}
