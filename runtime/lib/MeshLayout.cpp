//===- MeshLayout.cpp - Rank math of a device mesh ------------------------===//
//
// Row-major coordinates, groups along ordered axis lists and their canonical
// keys. See MeshLayout.h for the contract; the unit tests check every function
// here against a brute-force enumeration.
//
//===----------------------------------------------------------------------===//

#include "meshrt/MeshLayout.h"

#include "meshrt/Error.h"

#include <limits>

using namespace meshrt;

std::string MeshLayout::formatShape(const std::vector<int64_t> &Shape) {
  std::string S = "(";
  for (size_t I = 0; I < Shape.size(); ++I) {
    if (I)
      S += ", ";
    S += Shape[I] == kDynamic ? std::string("?") : std::to_string(Shape[I]);
  }
  if (Shape.size() == 1)
    S += ",";
  return S + ")";
}

std::vector<int64_t>
MeshLayout::resolveShape(const std::vector<int64_t> &Declared,
                         int64_t WorldSize) {
  if (int64_t(Declared.size()) > kMaxDims)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "mesh shape " + formatShape(Declared) + " has " +
                    std::to_string(Declared.size()) + " axes; at most " +
                    std::to_string(kMaxDims) + " are supported");
  int64_t Known = 1;
  int64_t DynamicAxis = -1;
  for (size_t I = 0; I < Declared.size(); ++I) {
    int64_t S = Declared[I];
    if (S == kDynamic) {
      if (DynamicAxis >= 0)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "mesh shape " + formatShape(Declared) +
                        " has more than one dynamic ('?') size; at most one "
                        "can be resolved from the world size");
      DynamicAxis = int64_t(I);
      continue;
    }
    if (S < 1)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "mesh shape " + formatShape(Declared) + " has size " +
                      std::to_string(S) + " on axis " + std::to_string(I) +
                      "; sizes must be >= 1 or -1 (dynamic)");
    if (Known > std::numeric_limits<int64_t>::max() / S)
      throw Error(MESHRT_ERROR_WORLD_SIZE,
                  "mesh shape " + formatShape(Declared) + " overflows int64");
    Known *= S;
  }
  std::vector<int64_t> Resolved = Declared;
  std::string World = "the world has " + std::to_string(WorldSize) +
                      " process" + (WorldSize == 1 ? "" : "es");
  if (DynamicAxis >= 0) {
    if (WorldSize % Known != 0)
      throw Error(MESHRT_ERROR_WORLD_SIZE,
                  "mesh shape " + formatShape(Declared) +
                      ": cannot resolve '?' on axis " +
                      std::to_string(DynamicAxis) + ": " + World +
                      ", which is not divisible by the product of the other "
                      "sizes (" +
                      std::to_string(Known) + ")");
    Resolved[DynamicAxis] = WorldSize / Known;
    return Resolved;
  }
  if (Known != WorldSize)
    throw Error(MESHRT_ERROR_WORLD_SIZE,
                "mesh shape " + formatShape(Declared) + " needs " +
                    std::to_string(Known) + " process" +
                    (Known == 1 ? "" : "es") + " but " + World +
                    " (launch with mpirun -n " + std::to_string(Known) +
                    " or torchrun --nproc_per_node=" + std::to_string(Known) +
                    ", or make one size -1 to fit any world)");
  return Resolved;
}

MeshLayout::MeshLayout(std::vector<int64_t> Shape) : Sizes(std::move(Shape)) {
  if (ndims() > kMaxDims)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "mesh shape " + formatShape(Sizes) + " has more than " +
                    std::to_string(kMaxDims) + " axes");
  Strides.assign(Sizes.size(), 1);
  for (int64_t I = ndims() - 1; I >= 0; --I) {
    if (Sizes[I] < 1)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "mesh shape " + formatShape(Sizes) +
                      " is not resolved: every size must be >= 1");
    Strides[I] = NumRanks;
    if (NumRanks > std::numeric_limits<int64_t>::max() / Sizes[I])
      throw Error(MESHRT_ERROR_WORLD_SIZE,
                  "mesh shape " + formatShape(Sizes) + " overflows int64");
    NumRanks *= Sizes[I];
  }
}

std::vector<int64_t> MeshLayout::coordinates(int64_t Rank) const {
  std::vector<int64_t> C(Sizes.size());
  for (int64_t I = 0; I < ndims(); ++I)
    C[I] = coordinate(Rank, I);
  return C;
}

int64_t MeshLayout::rankOf(const std::vector<int64_t> &Coords) const {
  int64_t R = 0;
  for (int64_t I = 0; I < ndims(); ++I)
    R += Coords[I] * Strides[I];
  return R;
}

void MeshLayout::checkAxes(const std::vector<int64_t> &Axes) const {
  uint64_t Seen = 0;
  for (int64_t A : Axes) {
    if (A < 0 || A >= ndims())
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "axis index " + std::to_string(A) +
                      " is out of range for a mesh of " +
                      std::to_string(ndims()) + " axes " + formatShape(Sizes));
    if (Seen & (uint64_t(1) << A))
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "axis " + std::to_string(A) +
                      " appears twice in an axis list; axes must be distinct");
    Seen |= uint64_t(1) << A;
  }
}

GroupPosition MeshLayout::position(int64_t Rank,
                                   const std::vector<int64_t> &Axes) const {
  checkAxes(Axes);
  GroupPosition P;
  uint64_t InGroup = 0;
  for (int64_t A : Axes) {
    InGroup |= uint64_t(1) << A;
    P.RankInGroup = P.RankInGroup * Sizes[A] + coordinate(Rank, A);
    P.Size *= Sizes[A];
  }
  for (int64_t I = 0; I < ndims(); ++I) {
    if (InGroup & (uint64_t(1) << I))
      continue;
    P.Color = P.Color * Sizes[I] + coordinate(Rank, I);
    P.NumGroups *= Sizes[I];
  }
  return P;
}

std::vector<int64_t>
MeshLayout::groupMembers(int64_t Rank, const std::vector<int64_t> &Axes) const {
  GroupPosition P = position(Rank, Axes);
  std::vector<int64_t> Coords = coordinates(Rank);
  std::vector<int64_t> Members(P.Size);
  for (int64_t G = 0; G < P.Size; ++G) {
    int64_t Rest = G;
    for (size_t J = Axes.size(); J-- > 0;) {
      Coords[Axes[J]] = Rest % Sizes[Axes[J]];
      Rest /= Sizes[Axes[J]];
    }
    Members[G] = rankOf(Coords);
  }
  return Members;
}

GroupKey MeshLayout::groupKey(const std::vector<int64_t> &Axes) const {
  checkAxes(Axes);
  // Drop size-1 axes and renumber.
  std::vector<int64_t> NewIndex(Sizes.size(), -1);
  GroupKey K;
  for (int64_t I = 0; I < ndims(); ++I) {
    if (Sizes[I] == 1)
      continue;
    NewIndex[I] = int64_t(K.Shape.size());
    K.Shape.push_back(Sizes[I]);
  }
  for (int64_t A : Axes)
    if (NewIndex[A] >= 0)
      K.Axes.push_back(NewIndex[A]);
  // Merge mesh neighbours I, I+1 when both are outside the list, or both are
  // inside it with I+1 written right after I: they then behave as one axis of
  // size s_I * s_{I+1} for the row-major colour and rank in group alike.
  bool Changed = true;
  while (Changed) {
    Changed = false;
    std::vector<int64_t> Pos(K.Shape.size(), -1);
    for (size_t J = 0; J < K.Axes.size(); ++J)
      Pos[K.Axes[J]] = int64_t(J);
    for (size_t I = 0; I + 1 < K.Shape.size(); ++I) {
      bool BothOut = Pos[I] < 0 && Pos[I + 1] < 0;
      bool Adjacent = Pos[I] >= 0 && Pos[I + 1] == Pos[I] + 1;
      if (!BothOut && !Adjacent)
        continue;
      K.Shape[I] *= K.Shape[I + 1];
      K.Shape.erase(K.Shape.begin() + I + 1);
      if (Adjacent)
        K.Axes.erase(K.Axes.begin() + Pos[I + 1]);
      for (int64_t &A : K.Axes)
        if (A > int64_t(I))
          --A;
      Changed = true;
      break;
    }
  }
  return K;
}

bool MeshLayout::isWorldGroup(const std::vector<int64_t> &Axes) const {
  GroupKey K = groupKey(Axes);
  if (K.Shape.empty())
    return true; // A world of one.
  return K.Shape.size() == 1 && K.Axes.size() == 1;
}

std::vector<LayoutMode>
MeshLayout::modes(const std::vector<int64_t> &Axes) const {
  checkAxes(Axes);
  std::vector<LayoutMode> M;
  for (int64_t A : Axes)
    M.push_back({Sizes[size_t(A)], Strides[size_t(A)]});
  return M;
}
