//===- Mesh.cpp - Meshes and their declaration across ranks ---------------===//
//
// A mesh's axes, names and aliases, and its declaration on a context: the
// positions resolved from the declared sizes and ranks, the backend of each
// axis, and the cross-rank digest check that every rank declares the same
// meshes in the same order.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Debug.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

std::string joinNames(const std::vector<std::string> &Names) {
  std::string S;
  for (size_t I = 0; I < Names.size(); ++I)
    S += (I ? ", " : "") + Names[I];
  return S;
}

/// " on backend nccl with tp=mpi": the resolved backends `B` of a mesh with
/// axes `Axes`, or "" when every one is the context's `Default`.
std::string backendsText(const MeshBackends &B,
                         const std::vector<std::string> &Axes,
                         meshrt_backend Default) {
  bool Custom = B.Mesh != Default;
  for (meshrt_backend A : B.Axes)
    Custom |= A != Default;
  if (!Custom)
    return "";
  std::string S = std::string(" on backend ") + backendKindName(B.Mesh);
  const char *Sep = " with ";
  for (size_t I = 0; I < B.Axes.size() && I < Axes.size(); ++I)
    if (B.Axes[I] != B.Mesh) {
      S += Sep + Axes[I] + "=" + backendKindName(B.Axes[I]);
      Sep = ", ";
    }
  return S;
}

/// "shape (2, 4) and axes (a, b)", then the ranks and `Backends` (see
/// backendsText) if any.
std::string describeShape(const std::vector<int64_t> &Sizes,
                          const std::vector<std::string> &Axes,
                          const std::vector<int64_t> &Ranks,
                          const std::string &Backends) {
  std::string S = "shape " + MeshLayout::formatShape(Sizes) + " and axes (" +
                  joinNames(Axes) + ")";
  if (!Ranks.empty())
    S += " over world ranks [" + joinRanks(Ranks) + "]";
  return S + Backends;
}

std::string describeDecl(const std::string &Name,
                         const std::vector<int64_t> &Sizes,
                         const std::vector<std::string> &Axes,
                         const std::vector<int64_t> &Ranks = {},
                         const std::string &Backends = {}) {
  return "'" + Name + "' with " + describeShape(Sizes, Axes, Ranks, Backends);
}

/// FNV-1a over the declaration.
uint64_t digest(const std::string &Name, const std::vector<int64_t> &Sizes,
                const std::vector<std::string> &Axes,
                const std::vector<int64_t> &Ranks, const MeshBackends &B) {
  uint64_t H = 1469598103934665603ull;
  auto Mix = [&H](const void *P, size_t N) {
    const unsigned char *B = static_cast<const unsigned char *>(P);
    for (size_t I = 0; I < N; ++I)
      H = (H ^ B[I]) * 1099511628211ull;
  };
  Mix(Name.c_str(), Name.size() + 1);
  uint64_t N = Sizes.size();
  Mix(&N, sizeof(N));
  for (int64_t S : Sizes)
    Mix(&S, sizeof(S));
  for (const std::string &A : Axes)
    Mix(A.c_str(), A.size() + 1);
  uint64_t R = Ranks.size();
  Mix(&R, sizeof(R));
  for (int64_t X : Ranks)
    Mix(&X, sizeof(X));
  Mix(&B.Mesh, sizeof(B.Mesh));
  for (meshrt_backend A : B.Axes)
    Mix(&A, sizeof(A));
  return H;
}

/// Checks an explicit rank array against the world size and the number of
/// positions of the (resolved) shape. Throws meshrt::Error.
void checkRanks(const std::vector<int64_t> &Ranks, int64_t Positions,
                const std::vector<int64_t> &Shape, int64_t WorldSize) {
  if (int64_t(Ranks.size()) != Positions)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "shape " + MeshLayout::formatShape(Shape) + " has " +
                    std::to_string(Positions) + " positions but " +
                    std::to_string(Ranks.size()) +
                    " ranks were given (one world rank per position, "
                    "row-major)");
  std::vector<int64_t> Seen(size_t(WorldSize), -1);
  for (size_t I = 0; I < Ranks.size(); ++I) {
    int64_t R = Ranks[I];
    if (R < 0 || R >= WorldSize)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "rank " + std::to_string(R) + " at position " +
                      std::to_string(I) + " is not a world rank (the world " +
                      "has " + std::to_string(WorldSize) + " process" +
                      (WorldSize == 1 ? "" : "es") + ": 0 to " +
                      std::to_string(WorldSize - 1) + ")");
    if (Seen[size_t(R)] >= 0)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "rank " + std::to_string(R) + " appears twice (positions " +
                      std::to_string(Seen[size_t(R)]) + " and " +
                      std::to_string(I) +
                      "); a mesh lists each world rank at most once");
    Seen[size_t(R)] = int64_t(I);
  }
}

/// Checks the name and axis names of a mesh declaration and resolves its
/// sizes against `WorldSize`. Throws meshrt::Error.
std::vector<int64_t> resolveDeclaration(const std::string &Name,
                                        const std::vector<int64_t> &Sizes,
                                        const std::vector<std::string> &Axes,
                                        const std::vector<int64_t> &Ranks,
                                        int64_t WorldSize) {
  if (Name.empty())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, "a mesh needs a name");
  if (Sizes.size() != Axes.size())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "shape " + MeshLayout::formatShape(Sizes) + " has " +
                    std::to_string(Sizes.size()) + " axes but " +
                    std::to_string(Axes.size()) + " axis names were given");
  for (size_t I = 0; I < Axes.size(); ++I) {
    if (Axes[I].empty())
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "axis " + std::to_string(I) + " has an empty name");
    for (size_t J = 0; J < I; ++J)
      if (Axes[I] == Axes[J])
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "axis name '" + Axes[I] + "' is used twice");
  }
  if (Ranks.empty())
    return MeshLayout::resolveShape(Sizes, WorldSize);
  // Over a rank array: sizes resolve against the number of ranks given.
  std::vector<int64_t> Resolved;
  try {
    Resolved = MeshLayout::resolveShape(Sizes, int64_t(Ranks.size()));
  } catch (const Error &) {
    int64_t Known = 1;
    for (int64_t S : Sizes)
      Known *= S > 0 ? S : 1;
    checkRanks(Ranks, Known, Sizes, WorldSize); // Says what is wrong.
    throw;
  }
  checkRanks(Ranks, int64_t(Ranks.size()), Resolved, WorldSize);
  return Resolved;
}

/// `Asked` with every AUTO replaced: the mesh's by `Default`, an axis's by
/// the mesh's, and one entry per axis of `Axes`. Throws meshrt::Error
/// (MESHRT_ERROR_INVALID_ARGUMENT) for a value that is not a backend or a
/// list of the wrong length.
MeshBackends resolveBackends(const MeshBackends &Asked,
                             const std::vector<std::string> &Axes,
                             meshrt_backend Default) {
  auto Check = [](meshrt_backend B, const std::string &Whose) {
    if (B != MESHRT_BACKEND_AUTO && B != MESHRT_BACKEND_MPI &&
        B != MESHRT_BACKEND_NCCL && B != MESHRT_BACKEND_GLOO &&
        B != MESHRT_BACKEND_HOST)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "invalid backend " + std::to_string(int(B)) + " for " +
                      Whose +
                      " (valid: MESHRT_BACKEND_AUTO, _MPI, _NCCL, _GLOO)");
  };
  if (!Asked.Axes.empty() && Asked.Axes.size() != Axes.size())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::to_string(Asked.Axes.size()) + " axis backends for " +
                    std::to_string(Axes.size()) +
                    " axes; give one per axis, or none");
  Check(Asked.Mesh, "the mesh");
  MeshBackends R;
  auto Host = [](meshrt_backend B) {
    return B == MESHRT_BACKEND_HOST ? hostBackendKind() : B;
  };
  R.Mesh = Asked.Mesh == MESHRT_BACKEND_AUTO ? Default : Host(Asked.Mesh);
  R.Axes.assign(Axes.size(), R.Mesh);
  for (size_t I = 0; I < Asked.Axes.size(); ++I) {
    Check(Asked.Axes[I], "axis '" + Axes[I] + "'");
    if (Asked.Axes[I] != MESHRT_BACKEND_AUTO)
      R.Axes[I] = Host(Asked.Axes[I]);
  }
  return R;
}

} // namespace

std::string meshrt::detail::joinRanks(const std::vector<int64_t> &Ranks,
                                      size_t Most) {
  std::string S;
  for (size_t I = 0; I < Ranks.size() && I < Most; ++I)
    S += (I ? ", " : "") + std::to_string(Ranks[I]);
  if (Ranks.size() > Most)
    S += ", ...";
  return S;
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

Mesh::Mesh(Context &Ctx, std::string Name, std::vector<int64_t> Declared,
           std::vector<int64_t> Resolved, std::vector<std::string> AxisNames,
           std::vector<int64_t> RanksIn, MeshBackends Backends, bool Local)
    : Ctx(Ctx), Name(std::move(Name)), Declared(std::move(Declared)),
      Layout(std::move(Resolved)), AxisNames(std::move(AxisNames)),
      Ranks(std::move(RanksIn)), Explicit(!Ranks.empty()), Local(Local),
      Backends(std::move(Backends)) {
  if (Ranks.empty())
    for (int64_t R = 0; R < Layout.numRanks(); ++R)
      Ranks.push_back(R);
  IndexOf.assign(size_t(Ctx.worldSize()), -1);
  for (size_t I = 0; I < Ranks.size(); ++I)
    if (Ranks[I] >= 0 && Ranks[I] < Ctx.worldSize())
      IndexOf[size_t(Ranks[I])] = int64_t(I);
  MyIndex = indexOf(Ctx.worldRank());
  if (MyIndex >= 0)
    Coords = Layout.coordinates(MyIndex);
  handles::add(this);
}

int64_t Mesh::indexOf(int64_t R) const {
  return R >= 0 && R < int64_t(IndexOf.size()) ? IndexOf[size_t(R)] : -1;
}

std::string Mesh::notMemberMessage(int64_t WorldRank) const {
  return "world rank " + std::to_string(WorldRank) + " is not in mesh '" +
         Name + "' (its world ranks: " + joinRanks(Ranks) + ")";
}

Mesh::~Mesh() { handles::remove(this); }

std::string Mesh::describe() const {
  return "mesh " +
         describeDecl(Name, Layout.shape(), AxisNames,
                      Explicit ? Ranks : std::vector<int64_t>(),
                      backendsText(Backends, AxisNames, Ctx.backendKind()));
}

meshrt_backend Mesh::backendOf(const std::vector<int64_t> &Axes) const {
  if (Axes.empty())
    return Backends.Mesh;
  meshrt_backend First = Backends.Axes[size_t(Axes[0])];
  for (int64_t A : Axes)
    if (Backends.Axes[size_t(A)] != First)
      return Backends.Mesh;
  return First;
}

meshrt_backend Mesh::backendOf(const std::vector<LayoutMode> &Modes) const {
  // The axes a layout spans: those along which some step of a mode moves.
  std::vector<int64_t> Axes;
  for (int64_t K = 0; K < Layout.ndims(); ++K) {
    bool Spans = false;
    for (const LayoutMode &L : Modes)
      for (int64_t C = 1; C < L.Size && !Spans; ++C)
        Spans = Layout.coordinate(C * L.Stride, K) != 0;
    if (Spans)
      Axes.push_back(K);
  }
  return backendOf(Axes);
}

std::string Mesh::validNames() const {
  std::string S = joinNames(AxisNames);
  for (const Alias &A : Aliases)
    S += ", " + A.Name + " (flattened)";
  return S;
}

int64_t Mesh::axisIndex(std::string_view N) const {
  for (size_t I = 0; I < AxisNames.size(); ++I)
    if (AxisNames[I] == N)
      return int64_t(I);
  throw Error(MESHRT_ERROR_UNKNOWN_AXIS, "mesh '" + Name + "' has no axis '" +
                                             std::string(N) +
                                             "'; valid axes: " + validNames());
}

bool Mesh::isAlias(std::string_view N) const {
  for (const Alias &A : Aliases)
    if (A.Name == N)
      return true;
  return false;
}

std::vector<int64_t> Mesh::resolveName(std::string_view N) const {
  for (size_t I = 0; I < AxisNames.size(); ++I)
    if (AxisNames[I] == N)
      return {int64_t(I)};
  for (const Alias &A : Aliases)
    if (A.Name == N) {
      if (!A.Whole)
        throw Error(MESHRT_ERROR_UNSUPPORTED,
                    "mesh '" + Name + "': '" + A.Name +
                        "' was flattened from dimensions made by unflatten "
                        "(parts of axes), which only the C++ DeviceMesh "
                        "can name");
      return A.Axes;
    }
  return {axisIndex(N)}; // Throws with the list of valid names.
}

const Mesh::Alias *Mesh::findAlias(std::string_view N) const {
  for (const Alias &A : Aliases)
    if (A.Name == N)
      return &A;
  return nullptr;
}

void Mesh::addAlias(const std::string &N, const std::vector<int64_t> &Axes) {
  Layout.checkAxes(Axes);
  addAlias(N, Layout.modes(Axes), Axes, /*Whole=*/true);
}

void Mesh::addAlias(const std::string &N, const std::vector<LayoutMode> &Modes,
                    const std::vector<int64_t> &Axes, bool Whole) {
  if (N.empty())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "mesh '" + Name + "': a flattened axis needs a name");
  for (const std::string &A : AxisNames)
    if (A == N)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "mesh '" + Name + "' already has an axis called '" + N +
                      "'; pick another name for the flattened axis");
  for (const Alias &A : Aliases) {
    if (A.Name != N)
      continue;
    if (A.Modes == Modes)
      return;
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "mesh '" + Name + "' already has a flattened axis '" + N +
                    "' over other axes");
  }
  Aliases.push_back({N, Modes, Whole ? Axes : std::vector<int64_t>(), Whole});
}

//===----------------------------------------------------------------------===//
// Declaration
//===----------------------------------------------------------------------===//

Mesh *Context::findMesh(std::string_view Name) {
  std::lock_guard<std::mutex> Lock(Mutex);
  for (auto &M : Meshes)
    if (M->Name == Name)
      return M.get();
  return nullptr;
}

std::string Context::freshMeshName() {
  std::lock_guard<std::mutex> Lock(Mutex);
  for (;;) {
    std::string N = "mesh" + std::to_string(NextMeshName++);
    bool Taken = false;
    for (auto &M : Meshes)
      Taken |= M->Name == N;
    if (!Taken)
      return N;
  }
}

Mesh &Context::declareMesh(const std::string &Name,
                           const std::vector<int64_t> &Sizes,
                           const std::vector<std::string> &AxisNames,
                           const std::vector<int64_t> *RanksIn,
                           const std::optional<Error> &LocalCheck,
                           const MeshBackends &Asked) {
  checkAlive("declare a mesh");
  std::lock_guard<std::mutex> Lock(Mutex);
  std::vector<int64_t> Ranks = RanksIn ? *RanksIn : std::vector<int64_t>();
  if (RanksIn && Ranks.empty())
    Ranks.push_back(-1); // No ranks at all: reported by the checks below.
  // A local error is only thrown after the agreement step, so that the other
  // ranks do not wait for this one.
  std::optional<Error> LocalFailure;
  MeshBackends Backends;
  try {
    Backends = resolveBackends(Asked, AxisNames, Default);
  } catch (const Error &E) {
    LocalFailure = Error(E.status(), "mesh '" + Name + "': " + E.what());
  }
  if (!LocalCheck && !LocalFailure)
    if (Mesh *Existing =
            findRedeclaration(Name, Sizes, AxisNames, Ranks, Backends))
      return *Existing;
  std::vector<int64_t> Resolved;
  try {
    if (RanksIn && RanksIn->empty())
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "a mesh over a rank array needs at least one rank");
    if (LocalCheck)
      throw *LocalCheck;
    Resolved = resolveDeclaration(Name, Sizes, AxisNames, Ranks, WorldSize);
  } catch (const Error &E) {
    if (!LocalFailure)
      LocalFailure = Error(E.status(), "mesh '" + Name + "': " + E.what());
  }
  agreeOnDeclaration(Name, Sizes, Resolved, AxisNames, Ranks, Backends,
                     LocalFailure);
  Meshes.push_back(std::make_unique<Mesh>(*this, Name, Sizes, Resolved,
                                          AxisNames, Ranks, Backends,
                                          /*Local=*/false));
  ++Stats.meshes;
  return *Meshes.back();
}

Mesh &Context::localMesh(const std::string &Name,
                         const std::vector<int64_t> &Sizes,
                         const std::vector<std::string> &AxisNames,
                         const std::vector<int64_t> &Ranks,
                         meshrt_backend Kind) {
  checkAlive("make a mesh");
  std::lock_guard<std::mutex> Lock(Mutex);
  std::vector<int64_t> Resolved =
      resolveDeclaration(Name, Sizes, AxisNames, Ranks, WorldSize);
  MeshBackends Backends = resolveBackends({Kind, {}}, AxisNames, Default);
  Meshes.push_back(std::make_unique<Mesh>(*this, Name, Sizes, Resolved,
                                          AxisNames, Ranks, Backends,
                                          /*Local=*/true));
  ++Stats.meshes;
  return *Meshes.back();
}

Mesh *Context::findRedeclaration(const std::string &Name,
                                 const std::vector<int64_t> &Sizes,
                                 const std::vector<std::string> &AxisNames,
                                 const std::vector<int64_t> &Ranks,
                                 const MeshBackends &Backends) {
  for (auto &M : Meshes) {
    if (M->Name != Name)
      continue;
    if (M->Declared == Sizes && M->AxisNames == AxisNames && !M->Local &&
        (M->Explicit ? M->Ranks : std::vector<int64_t>()) == Ranks &&
        M->Backends.Mesh == Backends.Mesh && M->Backends.Axes == Backends.Axes)
      return M.get();
    throw Error(
        MESHRT_ERROR_MESH_MISMATCH,
        "mesh '" + Name + "' is already declared with " +
            describeShape(M->Declared, M->AxisNames,
                          M->Explicit ? M->Ranks : std::vector<int64_t>(),
                          backendsText(M->Backends, M->AxisNames, Default)) +
            "; it cannot be declared again with " +
            describeShape(Sizes, AxisNames, Ranks,
                          backendsText(Backends, AxisNames, Default)));
  }
  return nullptr;
}

void Context::agreeOnDeclaration(const std::string &Name,
                                 const std::vector<int64_t> &Sizes,
                                 const std::vector<int64_t> &Resolved,
                                 const std::vector<std::string> &AxisNames,
                                 const std::vector<int64_t> &Ranks,
                                 const MeshBackends &Backends,
                                 const std::optional<Error> &LocalFailure) {
  // Every rank contributes its digest (and whether it failed locally); the
  // max of h and of ~h give max and ~min, equal iff all digests are equal.
  uint64_t H =
      LocalFailure ? 0 : digest(Name, Resolved, AxisNames, Ranks, Backends);
  int64_t Mine[3] = {LocalFailure ? 1 : 0, int64_t(H), int64_t(~H)};
  int64_t All[3] = {Mine[0], Mine[1], Mine[2]};
  std::string Text = backendsText(Backends, AxisNames, Default);
  TextDescribable Where("mesh " +
                        describeDecl(Name, Sizes, AxisNames, Ranks, Text));
  {
    WatchScope W(*Dog, "mesh declaration", &Where);
    Control->allReduce(All, 3, /*Max=*/true, "mesh declaration");
  }
  if (LocalFailure)
    throw *LocalFailure;
  if (All[0])
    throw Error(MESHRT_ERROR_MESH_MISMATCH,
                "mesh '" + Name +
                    "' could not be declared on another rank (see its "
                    "message)");
  if (All[1] != ~All[2])
    reportDeclarationMismatch(Name, Sizes, AxisNames, Ranks, Text, H, Where);
}

void Context::reportDeclarationMismatch(
    const std::string &Name, const std::vector<int64_t> &Sizes,
    const std::vector<std::string> &AxisNames,
    const std::vector<int64_t> &Ranks, const std::string &BackendsText,
    uint64_t Digest, const Describable &Where) {
  WatchScope W(*Dog, "mesh declaration", &Where);
  std::vector<uint64_t> Digests(static_cast<size_t>(WorldSize));
  Control->allGather(&Digest, Digests.data(), sizeof(Digest),
                     "mesh declaration");
  int Other = 1;
  while (Other < WorldSize && Digests[size_t(Other)] == Digests[0])
    ++Other;
  std::string Mine = describeDecl(Name, Sizes, AxisNames, Ranks, BackendsText);
  std::string First = Control->broadcastString(Mine, 0, "mesh declaration");
  std::string Second =
      Control->broadcastString(Mine, Other, "mesh declaration");
  throw Error(MESHRT_ERROR_MESH_MISMATCH,
              "mesh declared differently on different ranks: rank 0 "
              "declared " +
                  First + " but rank " + std::to_string(Other) + " declared " +
                  Second +
                  " (every rank must declare the same meshes in the same "
                  "order)");
}
