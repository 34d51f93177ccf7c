//===- DeviceMesh.cpp - C++ API shaped like DeviceMesh --------------------===//
//
// DeviceMesh is a view: a declared mesh plus a list of named dimensions, each
// standing for an ordered list of the declared mesh's axes (one axis, or
// several after flatten). Slicing picks dimensions and never communicates;
// groups come from the context's communicator cache.
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"

#include "Context.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

using namespace meshrt;
using detail::acquireDefaultContext;
using detail::Comm;
using detail::Context;
using detail::cudaDeviceVisible;
using detail::defaultContext;
using detail::Mesh;
using detail::releaseDefaultContext;

//===----------------------------------------------------------------------===//
// Group
//===----------------------------------------------------------------------===//

Comm &Group::comm() const {
  if (!C)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, "empty meshrt::Group");
  return *C;
}

void Group::checkBlocks(size_t Elements) const {
  if (Elements % size_t(size()) != 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "a vector of " + std::to_string(Elements) +
                    " elements cannot be cut into " + std::to_string(size()) +
                    " equal blocks for " + comm().label());
}

Group Group::from_handle(meshrt_comm_t Handle) {
  if (!Handle || !detail::handles::isLive(Handle))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "the group is not a communicator of this runtime (a garbage "
                "handle, or one whose mesh or runtime is gone)");
  Comm *C = reinterpret_cast<Comm *>(Handle);
  return Group(C->mesh().context().shared_from_this(), C);
}

int64_t Group::rank() const { return comm().rank(); }
int64_t Group::size() const { return comm().size(); }
std::vector<int64_t> Group::members() const { return comm().members(); }
std::string Group::name() const { return comm().label(); }
Backend Group::backend() const { return Backend(comm().backend()); }
meshrt_comm_t Group::handle() const {
  return reinterpret_cast<meshrt_comm_t>(&comm());
}
void *Group::native_handle() const {
  Ctx->checkAlive("get a native handle");
  return comm().impl().nativeHandle();
}

void Group::all_reduce(const void *Send, void *Recv, int64_t Count, DType T,
                       ReduceOp Op) const {
  comm().allReduce(Send, Recv, Count, meshrt_dtype(T), meshrt_reduce_op(Op));
}
void Group::all_gather(const void *Send, void *Recv, int64_t Count,
                       DType T) const {
  comm().allGather(Send, Recv, Count, meshrt_dtype(T));
}
void Group::reduce_scatter(const void *Send, void *Recv, int64_t Count, DType T,
                           ReduceOp Op) const {
  comm().reduceScatter(Send, Recv, Count, meshrt_dtype(T),
                       meshrt_reduce_op(Op));
}
void Group::all_to_all(const void *Send, void *Recv, int64_t Count,
                       DType T) const {
  comm().allToAll(Send, Recv, Count, meshrt_dtype(T));
}
void Group::broadcast(void *Buf, int64_t Count, DType T, int64_t Root) const {
  comm().broadcast(Buf, Count, meshrt_dtype(T), Root);
}
void Group::permute(const void *Send, void *Recv, int64_t Count, DType T,
                    int64_t Offset, bool Wrap, bool ZeroFill) const {
  comm().permute(Send, Recv, Count, meshrt_dtype(T), Offset,
                 (Wrap ? MESHRT_PERMUTE_WRAP : 0) |
                     (ZeroFill ? MESHRT_PERMUTE_ZERO_FILL : 0));
}
void Group::barrier() const { comm().barrier(); }

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

namespace {

int64_t sizeOf(const std::vector<LayoutMode> &Modes) {
  int64_t N = 1;
  for (const LayoutMode &L : Modes)
    N *= L.Size;
  return N;
}

/// Coordinate of position `I` along `Modes` (row-major over the modes).
int64_t coordinateOf(const std::vector<LayoutMode> &Modes, int64_t I) {
  int64_t C = 0;
  for (const LayoutMode &L : Modes)
    C = C * L.Size + (I / L.Stride) % L.Size;
  return C;
}

/// PyTorch's coalesce (lexicographic): size-1 modes dropped, neighbours
/// merged where the outer stride is the inner size times the inner stride.
std::vector<LayoutMode> coalesce(const std::vector<LayoutMode> &Modes) {
  std::vector<LayoutMode> R = {{1, 0}};
  for (size_t I = Modes.size(); I-- > 0;) {
    const LayoutMode &L = Modes[I];
    if (L.Size == 1)
      continue;
    if (R.back().Size == 1)
      R.back() = L;
    else if (R.back().Size * R.back().Stride == L.Stride)
      R.back().Size *= L.Size;
    else
      R.push_back(L);
  }
  std::reverse(R.begin(), R.end());
  for (LayoutMode &L : R)
    if (L.Stride == 0)
      L.Stride = 1;
  return R;
}

/// True if no two coordinates of `Modes` give the same position.
bool nonOverlapping(const std::vector<LayoutMode> &Modes) {
  std::vector<int64_t> Positions = {0};
  for (const LayoutMode &L : Modes) {
    std::vector<int64_t> Next;
    for (int64_t P : Positions)
      for (int64_t C = 0; C < L.Size; ++C)
        Next.push_back(P + C * L.Stride);
    Positions.swap(Next);
  }
  std::sort(Positions.begin(), Positions.end());
  return std::adjacent_find(Positions.begin(), Positions.end()) ==
         Positions.end();
}

std::string joinInts(const std::vector<int64_t> &V) {
  std::string S;
  for (size_t I = 0; I < V.size(); ++I)
    S += (I ? ", " : "") + std::to_string(V[I]);
  return S;
}

/// Python's repr of a tuple of ints: "(4, 1)", "(1,)".
std::string pyTuple(const std::vector<int64_t> &V) {
  return "(" + joinInts(V) + (V.size() == 1 ? ",)" : ")");
}

/// One dimension's stride as PyTorch prints it: an int for one mode, a
/// tuple for a dimension flattened from modes that do not merge.
std::string strideEntry(const std::vector<LayoutMode> &Modes) {
  if (Modes.size() == 1)
    return std::to_string(Modes[0].Stride);
  std::vector<LayoutMode> C = coalesce(Modes);
  if (C.size() == 1)
    return std::to_string(C[0].Stride);
  std::vector<int64_t> S;
  for (const LayoutMode &L : C)
    S.push_back(L.Stride);
  return pyTuple(S);
}

/// `Ranks` as nested lists of shape `Shape`, like a printed tensor's tolist.
std::string nestedList(const std::vector<int64_t> &Ranks,
                       const std::vector<int64_t> &Shape) {
  std::string Body;
  std::vector<int64_t> Idx(Shape.size(), 0);
  for (size_t I = 0; I < Ranks.size(); ++I) {
    size_t Opened = 0;
    for (size_t D = Shape.size(); D-- > 0 && Idx[D] == 0;)
      ++Opened;
    if (I)
      Body += ", ";
    Body += std::string(Opened, '[') + std::to_string(Ranks[I]);
    size_t Closed = 0;
    for (size_t D = Shape.size(); D-- > 0;) {
      if (++Idx[D] < Shape[D])
        break;
      Idx[D] = 0;
      ++Closed;
    }
    Body += std::string(Closed, ']');
  }
  return Body;
}

} // namespace

//===----------------------------------------------------------------------===//
// DeviceMesh
//===----------------------------------------------------------------------===//

void DeviceMesh::checkAlive() const {
  if (!Ctx || !M)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, "empty meshrt::DeviceMesh");
  Ctx->checkAlive("use a DeviceMesh");
}

DeviceMesh::Dim DeviceMesh::axesDim(const Mesh &M, std::string Name,
                                    std::vector<int64_t> Axes) {
  Dim D;
  D.Name = std::move(Name);
  D.Modes = M.layout().modes(Axes);
  D.Size = sizeOf(D.Modes);
  D.Axes = std::move(Axes);
  return D;
}

DeviceMesh::Dim DeviceMesh::dim(std::string_view Name) const {
  checkAlive();
  for (const Dim &D : Dims)
    if (D.Name == Name)
      return D;
  // A name made by flatten() on the root mesh is reachable from every mesh
  // of that root, as PyTorch's get_group finds the root's flattened meshes.
  if (const Mesh::Alias *A = M->findAlias(Name)) {
    Dim D;
    D.Name = std::string(Name);
    D.Axes = A->Axes;
    D.Modes = A->Modes;
    D.Size = sizeOf(A->Modes);
    D.Whole = A->Whole;
    return D;
  }
  std::string Valid;
  for (const Dim &D : Dims)
    Valid += (Valid.empty() ? "" : ", ") + D.Name;
  throw Error(MESHRT_ERROR_UNKNOWN_AXIS,
              "DeviceMesh on mesh '" + M->name() + "' has no dimension '" +
                  std::string(Name) + "'; valid dimensions: " + Valid);
}

const DeviceMesh::Dim &DeviceMesh::dimAt(int Index, const char *Op) const {
  checkAlive();
  int64_t N = int64_t(Dims.size());
  int64_t I = Index < 0 ? Index + N : Index;
  if (I < 0 || I >= N)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Op) + ": dimension " + std::to_string(Index) +
                    " is out of range for a " + std::to_string(N) +
                    "-D mesh (valid: " + std::to_string(-N) + " to " +
                    std::to_string(N - 1) + ")");
  return Dims[size_t(I)];
}

std::string_view DeviceMesh::nameOrError(const char *Name, const char *Op) {
  if (!Name)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Op) + ": the dimension name is null");
  return Name;
}

std::vector<int64_t> DeviceMesh::axesOf(const std::vector<Dim> &Ds) const {
  std::vector<int64_t> Axes;
  for (const Dim &D : Ds)
    Axes.insert(Axes.end(), D.Axes.begin(), D.Axes.end());
  return Axes;
}

Comm &DeviceMesh::commOf(const std::vector<Dim> &Ds) const {
  checkAlive();
  bool Whole = true;
  std::vector<LayoutMode> Modes;
  std::string Names;
  for (const Dim &D : Ds) {
    Whole &= D.Whole;
    Modes.insert(Modes.end(), D.Modes.begin(), D.Modes.end());
    Names += (Names.empty() ? "" : ", ") + D.Name;
  }
  if (Whole)
    return Ctx->getComm(*M, axesOf(Ds));
  return Ctx->getComm(*M, Modes,
                      "mesh '" + M->name() + "' dims [" + Names + "]");
}

Group DeviceMesh::groupOf(const std::vector<Dim> &Ds, const char *Op) const {
  Comm &C = commOf(Ds);
  if (!C.isMember())
    throw Error(MESHRT_ERROR_NOT_MEMBER,
                std::string(Op) + ": " + M->notMemberMessage(Ctx->worldRank()) +
                    ", so it has no group there");
  return Group(Ctx, &C);
}

int64_t DeviceMesh::basePosition() const {
  int64_t I = M->myIndex();
  if (I < 0)
    return -1;
  for (const Dim &D : Dims)
    for (const LayoutMode &L : D.Modes)
      I -= ((I / L.Stride) % L.Size) * L.Stride;
  return I;
}

std::vector<int64_t> DeviceMesh::shape() const {
  std::vector<int64_t> S;
  for (const Dim &D : Dims)
    S.push_back(D.Size);
  return S;
}

int64_t DeviceMesh::size() const {
  int64_t N = 1;
  for (const Dim &D : Dims)
    N *= D.Size;
  return N;
}

int64_t DeviceMesh::size(std::string_view Name) const { return dim(Name).Size; }

int64_t DeviceMesh::size(const char *Name) const {
  return size(nameOrError(Name, "DeviceMesh::size"));
}

int64_t DeviceMesh::size(int Index) const {
  return dimAt(Index, "DeviceMesh::size").Size;
}

std::vector<std::string> DeviceMesh::mesh_dim_names() const {
  std::vector<std::string> N;
  for (const Dim &D : Dims)
    N.push_back(D.Name);
  return N;
}

const std::string &DeviceMesh::name() const {
  checkAlive();
  return M->name();
}

Group DeviceMesh::get_group(std::string_view Name) const {
  return groupOf({dim(Name)}, "DeviceMesh::get_group");
}

Group DeviceMesh::get_group(const char *Name) const {
  return get_group(nameOrError(Name, "DeviceMesh::get_group"));
}

Group DeviceMesh::get_group(int Index) const {
  return groupOf({dimAt(Index, "DeviceMesh::get_group")},
                 "DeviceMesh::get_group");
}

Group DeviceMesh::get_group() const {
  checkAlive();
  if (Dims.size() != 1)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "get_group() without a dimension needs a 1-D mesh; this one "
                "has " +
                    std::to_string(Dims.size()) +
                    " dimensions (pass a dimension name)");
  return groupOf({Dims[0]}, "DeviceMesh::get_group");
}

Group DeviceMesh::get_group(const std::vector<std::string> &Names) const {
  std::vector<Dim> Ds;
  for (const std::string &N : Names)
    Ds.push_back(dim(N));
  std::vector<LayoutMode> Modes;
  for (const Dim &D : Ds)
    Modes.insert(Modes.end(), D.Modes.begin(), D.Modes.end());
  if (!nonOverlapping(Modes))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::get_group: the dimensions overlap (a flattened "
                "dimension and one of its parts, or a name twice)");
  return groupOf(Ds, "DeviceMesh::get_group");
}

DeviceMesh DeviceMesh::operator[](std::string_view Name) const {
  return slice({std::string(Name)});
}

DeviceMesh
DeviceMesh::operator[](std::initializer_list<std::string_view> Names) const {
  std::vector<std::string> V;
  for (std::string_view N : Names)
    V.emplace_back(N);
  return slice(V);
}

DeviceMesh DeviceMesh::slice(const std::vector<std::string> &Names) const {
  checkAlive();
  DeviceMesh Sub = *this;
  Sub.Dims.clear();
  Sub.Flattened = false;
  std::vector<LayoutMode> Modes;
  for (const std::string &N : Names) {
    for (const Dim &P : Sub.Dims)
      if (P.Name == N)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "dimension '" + N + "' appears twice in a slice");
    Sub.Dims.push_back(dim(N));
    Modes.insert(Modes.end(), Sub.Dims.back().Modes.begin(),
                 Sub.Dims.back().Modes.end());
  }
  // Dimensions must not share positions (a flattened one and its parts).
  if (!nonOverlapping(Modes))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "the dimensions of a slice must not overlap (a flattened "
                "dimension and one of its parts)");
  return Sub;
}

DeviceMesh DeviceMesh::flatten(const std::string &Name,
                               const std::vector<std::string> &Names) const {
  checkAlive();
  std::vector<Dim> Ds = Names.empty() ? Dims : std::vector<Dim>();
  for (const std::string &N : Names)
    Ds.push_back(dim(N));
  // One dimension into its own name: that dimension's mesh, as it is.
  if (Ds.size() == 1 && Ds[0].Name == Name) {
    DeviceMesh Same = *this;
    Same.Dims = Ds;
    return Same;
  }
  Dim Flat;
  Flat.Name = Name;
  for (const Dim &D : Ds) {
    Flat.Whole &= D.Whole;
    Flat.Axes.insert(Flat.Axes.end(), D.Axes.begin(), D.Axes.end());
    Flat.Modes.insert(Flat.Modes.end(), D.Modes.begin(), D.Modes.end());
  }
  if (!nonOverlapping(Flat.Modes))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "flatten('" + Name +
                    "'): the dimensions overlap (a flattened dimension and "
                    "one of its parts, or a name twice)");
  Flat.Size = sizeOf(Flat.Modes);
  if (!Flat.Whole)
    Flat.Axes.clear();
  if (Flat.Whole)
    M->addAlias(Name, Flat.Axes);
  else
    M->addAlias(Name, Flat.Modes, {}, /*Whole=*/false);
  commOf({Flat}); // The one communicator (collective), members or not.
  DeviceMesh Result = *this;
  Result.Dims = {Flat};
  Result.Flattened = true;
  return Result;
}

DeviceMesh DeviceMesh::flatten() const {
  checkAlive();
  std::string Name;
  for (const Dim &D : Dims)
    Name += (Name.empty() ? "" : "_") + D.Name;
  return flatten(Name);
}

std::vector<Group> DeviceMesh::get_all_groups() const {
  checkAlive();
  std::vector<Group> Groups;
  for (const Dim &D : Dims)
    Groups.push_back(groupOf({D}, "DeviceMesh::get_all_groups"));
  return Groups;
}

DeviceMesh DeviceMesh::unflatten(int Index, const std::vector<int64_t> &Sizes,
                                 const std::vector<std::string> &Names) const {
  return unflatten(dimAt(Index, "DeviceMesh::unflatten").Name, Sizes, Names);
}

/// The error of DeviceMesh::unflatten(Name, ...) saying `Msg`.
[[noreturn]] static void unflattenError(std::string_view Name,
                                        const std::string &Msg) {
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
              "DeviceMesh::unflatten('" + std::string(Name) + "'): " + Msg);
}

size_t
DeviceMesh::unflattenedDimIndex(std::string_view Name,
                                const std::vector<int64_t> &Sizes,
                                const std::vector<std::string> &Names) const {
  size_t At = Dims.size();
  for (size_t I = 0; I < Dims.size(); ++I)
    if (Dims[I].Name == Name)
      At = I;
  if (At == Dims.size())
    dim(Name); // Throws the unknown-dimension error for a non-dimension...
  if (At == Dims.size())
    unflattenError(Name, "'" + std::string(Name) +
                             "' is a flattened name of the root mesh, not a "
                             "dimension of this mesh; slice it first (mesh[\"" +
                             std::string(Name) + "\"])");
  if (Sizes.empty() || Sizes.size() != Names.size())
    unflattenError(Name,
                   std::to_string(Sizes.size()) + " sizes and " +
                       std::to_string(Names.size()) +
                       " names were given; give one name per size, at least "
                       "one");
  int64_t Product = 1;
  for (int64_t S : Sizes) {
    if (S < 1)
      unflattenError(Name, "size " + std::to_string(S) + " is not >= 1");
    if (Product > (int64_t(1) << 40))
      unflattenError(Name, "the sizes are too large");
    Product *= S;
  }
  if (Product != Dims[At].Size)
    unflattenError(Name, "the sizes (" + joinInts(Sizes) + ") multiply to " +
                             std::to_string(Product) +
                             ", but the dimension has size " +
                             std::to_string(Dims[At].Size));
  for (size_t I = 0; I < Names.size(); ++I) {
    if (Names[I].empty())
      unflattenError(Name, "a new dimension needs a name");
    for (size_t J = 0; J < I; ++J)
      if (Names[I] == Names[J])
        unflattenError(Name, "the name '" + Names[I] + "' is given twice");
    for (size_t J = 0; J < Dims.size(); ++J)
      if (J != At && Dims[J].Name == Names[I])
        unflattenError(Name,
                       "the mesh already has a dimension '" + Names[I] + "'");
  }
  return At;
}

std::vector<DeviceMesh::Dim>
DeviceMesh::splitDim(const Dim &Old, std::string_view Name,
                     const std::vector<int64_t> &Sizes,
                     const std::vector<std::string> &Names) const {
  // Split the dimension's modes, innermost first: new dimension j takes the
  // next Sizes[j] positions' worth of modes, cutting a mode where needed.
  std::vector<LayoutMode> Rest;
  for (const LayoutMode &L : Old.Modes)
    if (L.Size > 1)
      Rest.push_back(L);
  std::vector<Dim> New(Sizes.size());
  // Where the next cut is: a dimension of size 1 gets this stride, as
  // PyTorch's layout composition gives it.
  int64_t Cut = Old.Modes.empty() ? 1 : Old.Modes.back().Stride;
  for (size_t J = Sizes.size(); J-- > 0;) {
    Dim &D = New[J];
    D.Name = Names[J];
    D.Size = Sizes[J];
    if (!Rest.empty())
      Cut = Rest.back().Stride;
    int64_t Need = Sizes[J];
    while (Need > 1) {
      LayoutMode &L = Rest.back();
      if (L.Size <= Need) {
        if (Need % L.Size)
          unflattenError(Name, "size " + std::to_string(Sizes[J]) +
                                   " does not split at the boundaries of the "
                                   "flattened dimension's parts (sizes and "
                                   "strides of '" +
                                   std::string(Name) +
                                   "' cannot be cut there)");
        D.Modes.insert(D.Modes.begin(), L);
        Need /= L.Size;
        Cut = L.Stride * L.Size;
        Rest.pop_back();
      } else {
        if (L.Size % Need)
          unflattenError(Name, "size " + std::to_string(Sizes[J]) +
                                   " does not divide " +
                                   std::to_string(L.Size) + ", a part of '" +
                                   std::string(Name) + "'");
        D.Modes.insert(D.Modes.begin(), LayoutMode{Need, L.Stride});
        L = {L.Size / Need, L.Stride * Need};
        Cut = L.Stride;
        Need = 1;
      }
    }
    if (D.Modes.empty())
      D.Modes.push_back({1, Cut});
    markWholeAxes(D);
  }
  return New;
}

void DeviceMesh::markWholeAxes(Dim &D) const {
  // Whole axes when every mode is an axis of the declared mesh.
  for (const LayoutMode &L : D.Modes) {
    int64_t Axis = -1;
    for (int64_t A = 0; A < M->layout().ndims(); ++A)
      if (M->layout().modes({A})[0] == L)
        Axis = A;
    if (Axis < 0 || L.Size == 1) {
      D.Whole = false;
      break;
    }
    D.Axes.push_back(Axis);
  }
  if (!D.Whole)
    D.Axes.clear();
}

DeviceMesh DeviceMesh::unflatten(std::string_view Name,
                                 const std::vector<int64_t> &Sizes,
                                 const std::vector<std::string> &Names) const {
  checkAlive();
  size_t At = unflattenedDimIndex(Name, Sizes, Names);
  std::vector<Dim> New = splitDim(Dims[At], Name, Sizes, Names);
  DeviceMesh Result = *this;
  Result.Flattened = false;
  Result.Dims.erase(Result.Dims.begin() + At);
  Result.Dims.insert(Result.Dims.begin() + At, New.begin(), New.end());
  // Like init_device_mesh, the new dimensions' communicators exist once the
  // mesh does (collective; reused where the grouping exists).
  for (const Dim &D : New)
    commOf({D});
  return Result;
}

DeviceMesh DeviceMesh::concatenate(const std::vector<DeviceMesh> &Meshes) {
  if (Meshes.empty())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::concatenate: no meshes were given");
  DeviceMesh Result = Meshes[0];
  Result.checkAlive();
  Result.Dims.clear();
  Result.Flattened = false;
  std::vector<LayoutMode> Modes;
  for (const DeviceMesh &D : Meshes) {
    D.checkAlive();
    if (D.M != Result.M || D.Ctx != Result.Ctx || D.Device != Result.Device)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "DeviceMesh::concatenate: the meshes come from different "
                  "meshes ('" +
                      Result.M->name() + "' and '" + D.M->name() +
                      "'); only sub-meshes of one mesh can be put side by "
                      "side");
    for (const Dim &X : D.Dims) {
      for (const Dim &P : Result.Dims)
        if (P.Name == X.Name)
          throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                      "DeviceMesh::concatenate: dimension '" + X.Name +
                          "' appears twice");
      Result.Dims.push_back(X);
      Modes.insert(Modes.end(), X.Modes.begin(), X.Modes.end());
    }
  }
  if (!nonOverlapping(Modes))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::concatenate: the meshes overlap (they share "
                "positions of the root mesh)");
  return Result;
}

bool DeviceMesh::is_member() const {
  checkAlive();
  return M->isMember();
}

bool DeviceMesh::operator==(const DeviceMesh &Other) const {
  if (!M || !Other.M)
    return !M && !Other.M; // Empty meshes equal only each other.
  if (Ctx != Other.Ctx || Device != Other.Device ||
      Dims.size() != Other.Dims.size() || M->ranks() != Other.M->ranks() ||
      basePosition() != Other.basePosition())
    return false;
  for (size_t I = 0; I < Dims.size(); ++I)
    if (Dims[I].Name != Other.Dims[I].Name ||
        coalesce(Dims[I].Modes) != coalesce(Other.Dims[I].Modes))
      return false;
  return true;
}

size_t DeviceMesh::hash() const {
  if (!M)
    return 0;
  size_t H =
      std::hash<const void *>()(Ctx.get()) ^ std::hash<std::string>()(Device);
  auto Mix = [&H](size_t V) {
    H ^= V + 0x9e3779b97f4a7c15ULL + (H << 6) + (H >> 2);
  };
  for (const Dim &D : Dims) {
    Mix(std::hash<std::string>()(D.Name));
    for (const LayoutMode &L : coalesce(D.Modes)) {
      Mix(std::hash<int64_t>()(L.Size));
      Mix(std::hash<int64_t>()(L.Stride));
    }
  }
  for (int64_t R : M->ranks())
    Mix(std::hash<int64_t>()(R));
  Mix(std::hash<int64_t>()(basePosition()));
  return H;
}

int64_t DeviceMesh::get_local_rank(std::string_view Name) const {
  Dim D = dim(Name);
  if (!M->isMember())
    throw Error(
        MESHRT_ERROR_NOT_MEMBER,
        "DeviceMesh::get_local_rank: " + M->notMemberMessage(Ctx->worldRank()) +
            ", so it has no rank along '" + D.Name + "'");
  return coordinateOf(D.Modes, M->myIndex());
}

int64_t DeviceMesh::get_local_rank(const char *Name) const {
  return get_local_rank(nameOrError(Name, "DeviceMesh::get_local_rank"));
}

int64_t DeviceMesh::get_local_rank(int Index) const {
  return get_local_rank(dimAt(Index, "DeviceMesh::get_local_rank").Name);
}

int64_t DeviceMesh::get_local_rank() const {
  checkAlive();
  if (Dims.size() != 1)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "get_local_rank() without a dimension needs a 1-D mesh");
  return get_local_rank(Dims[0].Name);
}

std::vector<int64_t> DeviceMesh::get_coordinate() const {
  checkAlive();
  std::vector<int64_t> C;
  if (!M->isMember())
    return C; // PyTorch's None.
  for (const Dim &D : Dims)
    C.push_back(coordinateOf(D.Modes, M->myIndex()));
  return C;
}

int64_t DeviceMesh::get_rank() const {
  checkAlive();
  return Ctx->worldRank();
}

std::vector<int64_t> DeviceMesh::mesh() const {
  checkAlive();
  std::vector<LayoutMode> Modes;
  for (const Dim &D : Dims)
    Modes.insert(Modes.end(), D.Modes.begin(), D.Modes.end());
  int64_t Base = basePosition();
  if (Base < 0) {
    // Outside the mesh: the whole mesh is well defined, a part is not.
    if (sizeOf(Modes) != int64_t(M->ranks().size()))
      throw Error(MESHRT_ERROR_NOT_MEMBER,
                  "DeviceMesh::mesh: " + M->notMemberMessage(Ctx->worldRank()) +
                      ", so no sub-mesh of it contains this process");
    Base = 0;
  }
  int64_t N = sizeOf(Modes);
  std::vector<int64_t> Out(size_t(N), -1);
  for (int64_t G = 0; G < N; ++G) {
    int64_t Rest = G, I = Base;
    for (size_t J = Modes.size(); J-- > 0;) {
      I += (Rest % Modes[J].Size) * Modes[J].Stride;
      Rest /= Modes[J].Size;
    }
    Out[size_t(G)] = M->ranks()[size_t(I)];
  }
  return Out;
}

std::string DeviceMesh::to_string() const {
  checkAlive();
  std::string Sizes;
  for (const Dim &D : Dims)
    Sizes +=
        (Sizes.empty() ? "" : ", ") + D.Name + "=" + std::to_string(D.Size);
  std::string Stride;
  if (Flattened) {
    // A flattened mesh's layout is the coalesced one: an int when it is one
    // mode, else nested one level.
    std::vector<LayoutMode> C = coalesce(Dims[0].Modes);
    if (C.size() == 1) {
      Stride = std::to_string(C[0].Stride);
    } else {
      std::vector<int64_t> S;
      for (const LayoutMode &L : C)
        S.push_back(L.Stride);
      Stride = "(" + pyTuple(S) + ",)";
    }
  } else {
    std::string Entries;
    for (const Dim &D : Dims)
      Entries += (Entries.empty() ? "" : ", ") + strideEntry(D.Modes);
    Stride = "(" + Entries + (Dims.size() == 1 ? ",)" : ")");
  }
  std::string S =
      "DeviceMesh((" + Sizes + "), '" + Device + "', stride=" + Stride;
  const char *Debug = std::getenv("TORCH_DISTRIBUTED_DEBUG");
  if (Debug && std::string(Debug) == "DETAIL")
    S += ", Mesh: " + (Dims.empty() ? std::to_string(mesh()[0])
                                    : nestedList(mesh(), shape()));
  return S + ")";
}

meshrt_mesh_t DeviceMesh::handle() const {
  checkAlive();
  return reinterpret_cast<meshrt_mesh_t>(M);
}

Stats DeviceMesh::stats() const {
  if (!Ctx)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, "empty meshrt::DeviceMesh");
  return Ctx->stats();
}

//===----------------------------------------------------------------------===//
// Runtime and free functions
//===----------------------------------------------------------------------===//

static meshrt_backend backendForDevice(std::string_view Device) {
  if (Device == "cpu")
    return detail::hostBackendKind(); // MPI, or gloo without an MPI launcher.
  if (Device == "cuda")
    return MESHRT_BACKEND_NCCL;
  if (Device == "auto")
    return MESHRT_BACKEND_AUTO;
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
              "device type '" + std::string(Device) +
                  "' is not one of cpu, cuda, auto");
}

Runtime::Runtime(Backend B) : Ctx(Context::create(meshrt_backend(B))) {}

/// The device type of a mesh on backend `B`.
static const char *deviceOf(meshrt_backend B) {
  return B == MESHRT_BACKEND_NCCL ? "cuda" : "cpu";
}

/// The backends of a mesh of device type `DeviceType` on `Ctx` with
/// dimensions `Names`: the device type's (the context's for "auto"), and
/// `Override`'s for the dimensions it names. What is wrong with `Override`
/// goes to `Bad`, to fail the declaration on every rank.
static detail::MeshBackends meshBackends(const Context &Ctx,
                                         std::string_view DeviceType,
                                         const std::vector<std::string> &Names,
                                         const BackendOverride &Override,
                                         std::optional<Error> &Bad) {
  detail::MeshBackends B;
  B.Mesh = backendForDevice(DeviceType);
  if (B.Mesh == MESHRT_BACKEND_AUTO)
    B.Mesh = Ctx.backendKind();
  if (Override.empty())
    return B;
  B.Axes.assign(Names.size(), MESHRT_BACKEND_AUTO);
  std::vector<bool> Given(Names.size());
  auto Fail = [&](meshrt_status S, const std::string &Msg) {
    if (!Bad)
      Bad = Error(S, "backend_override: " + Msg);
  };
  int N = int(Names.size());
  for (const auto &[Dim, Kind] : Override) {
    int I = Dim.index() < 0 ? Dim.index() + N : Dim.index();
    if (Dim.byName()) {
      auto It = std::find(Names.begin(), Names.end(), Dim.name());
      I = int(It - Names.begin());
      if (It == Names.end()) {
        std::string Valid;
        for (const std::string &Name : Names)
          Valid += (Valid.empty() ? "" : ", ") + Name;
        Fail(MESHRT_ERROR_UNKNOWN_AXIS, "the mesh has no dimension '" +
                                            Dim.name() +
                                            "'; valid dimensions: " + Valid);
        continue;
      }
    } else if (I < 0 || I >= N) {
      Fail(MESHRT_ERROR_INVALID_ARGUMENT,
           "dimension " + std::to_string(Dim.index()) +
               " is out of range for a " + std::to_string(N) +
               "-D mesh (valid: " + std::to_string(-N) + " to " +
               std::to_string(N - 1) + ")");
      continue;
    }
    if (Given[size_t(I)])
      Fail(MESHRT_ERROR_INVALID_ARGUMENT,
           "dimension '" + Names[size_t(I)] + "' is given twice");
    Given[size_t(I)] = true;
    B.Axes[size_t(I)] = meshrt_backend(Kind);
  }
  return B;
}

static std::vector<std::string>
namesOrDefault(const std::vector<std::string> &Names, size_t N) {
  std::vector<std::string> Out = Names;
  if (Out.empty())
    for (size_t I = 0; I < N; ++I)
      Out.push_back("dim" + std::to_string(I));
  return Out;
}

DeviceMesh DeviceMesh::over(std::shared_ptr<Context> Ctx, Mesh &Declared,
                            const std::vector<std::string> &Names) {
  DeviceMesh DM;
  DM.Ctx = std::move(Ctx);
  DM.M = &Declared;
  DM.Device = deviceOf(Declared.backends().Mesh);
  for (int64_t I = 0; I < Declared.layout().ndims(); ++I) {
    DM.Dims.push_back(axesDim(Declared, Names[size_t(I)], {I}));
    // Like torch, every dimension's group exists once the mesh does, so
    // get_group is local and cheap afterwards. Creating it is collective
    // over the world, so ranks outside the mesh take part too.
    DM.Ctx->getComm(Declared, {I});
  }
  return DM;
}

DeviceMesh Runtime::init_device_mesh(std::string_view DeviceType,
                                     const std::vector<int64_t> &Shape,
                                     const std::vector<std::string> &DimNames,
                                     const std::string &Name) const {
  return init_device_mesh(DeviceType, Shape, DimNames, {}, Name);
}

DeviceMesh Runtime::init_device_mesh(std::string_view DeviceType,
                                     const std::vector<int64_t> &Shape,
                                     const std::vector<std::string> &DimNames,
                                     const BackendOverride &Override,
                                     const std::string &Name) const {
  return declareMesh(DeviceType, nullptr, Shape, DimNames, Override, Name);
}

DeviceMesh Runtime::device_mesh(std::string_view DeviceType,
                                const std::vector<int64_t> &Ranks,
                                const std::vector<int64_t> &Shape,
                                const std::vector<std::string> &DimNames,
                                const std::string &Name) const {
  return device_mesh(DeviceType, Ranks, Shape, DimNames, {}, Name);
}

DeviceMesh Runtime::device_mesh(std::string_view DeviceType,
                                const std::vector<int64_t> &Ranks,
                                const std::vector<int64_t> &Shape,
                                const std::vector<std::string> &DimNames,
                                const BackendOverride &Override,
                                const std::string &Name) const {
  return declareMesh(DeviceType, &Ranks, Shape, DimNames, Override, Name);
}

DeviceMesh Runtime::declareMesh(std::string_view DeviceType,
                                const std::vector<int64_t> *Ranks,
                                const std::vector<int64_t> &Shape,
                                const std::vector<std::string> &DimNames,
                                const BackendOverride &Override,
                                const std::string &Name) const {
  Ctx->checkAlive("create a DeviceMesh");
  std::vector<std::string> Names = namesOrDefault(DimNames, Shape.size());
  std::optional<Error> Bad;
  detail::MeshBackends B = meshBackends(*Ctx, DeviceType, Names, Override, Bad);
  std::string MeshName = Name.empty() ? Ctx->freshMeshName() : Name;
  // As PyTorch's init_device_mesh: a shape smaller than the world covers
  // world ranks 0 .. size-1; the other ranks are outside it (an empty
  // coordinate) and take part in nothing.
  std::vector<int64_t> Prefix;
  if (!Ranks) {
    int64_t Positions = 1;
    bool Fixed = true;
    for (int64_t S : Shape) {
      Fixed = Fixed && S >= 1 && S <= Ctx->worldSize();
      Positions = Fixed ? Positions * S : Positions;
      Fixed = Fixed && Positions <= Ctx->worldSize();
    }
    if (Fixed && Positions < Ctx->worldSize()) {
      for (int64_t R = 0; R < Positions; ++R)
        Prefix.push_back(R);
      Ranks = &Prefix;
    }
  }
  return DeviceMesh::over(
      Ctx, Ctx->declareMesh(MeshName, Shape, Names, Ranks, Bad, B), Names);
}

DeviceMesh::DeviceMesh(std::string_view DeviceType,
                       const std::vector<int64_t> &Ranks,
                       const std::vector<int64_t> &Shape,
                       const std::vector<std::string> &Names,
                       const std::string &Name)
    : DeviceMesh(DeviceType, Ranks, Shape, Names, {}, Name) {}

DeviceMesh::DeviceMesh(std::string_view DeviceType,
                       const std::vector<int64_t> &Ranks,
                       const std::vector<int64_t> &Shape,
                       const std::vector<std::string> &Names,
                       const BackendOverride &Override,
                       const std::string &Name) {
  Backend Wanted =
      defaultContext() ? Backend::Auto : Backend(backendForDevice(DeviceType));
  *this = default_runtime(Wanted).device_mesh(DeviceType, Ranks, Shape, Names,
                                              Override, Name);
}

DeviceMesh DeviceMesh::from_group(const Group &G, std::string_view DeviceType,
                                  const std::vector<std::string> &DimNames,
                                  const std::vector<int64_t> &Ranks) {
  Comm &C = G.comm(); // Throws for an empty Group.
  G.Ctx->checkAlive("create a DeviceMesh");
  meshrt_backend Wanted = backendForDevice(DeviceType);
  if (Wanted != MESHRT_BACKEND_AUTO && Wanted != C.backend())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::from_group('" + std::string(DeviceType) +
                    "'): the group runs on the " +
                    detail::backendKindName(C.backend()) +
                    " backend; use device '" + deviceOf(C.backend()) +
                    "' or 'auto'");
  if (DimNames.size() > 1)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::from_group: one group makes a 1-D mesh, but " +
                    std::to_string(DimNames.size()) + " names were given");
  if (!Ranks.empty() && Ranks != C.members())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::from_group: the mesh [" + joinInts(Ranks) +
                    "] is not the group's ranks [" + joinInts(C.members()) +
                    "] (" + C.label() + ")");
  static std::atomic<int64_t> Made{0};
  std::string Name =
      "from_group" + std::to_string(Made++) + "(" + C.label() + ")";
  std::vector<std::string> Names = namesOrDefault(DimNames, 1);
  Mesh &L = G.Ctx->localMesh(Name, {C.size()}, Names,
                             std::vector<int64_t>(C.members()), C.backend());
  G.Ctx->seedComm(L, {0}, C);
  DeviceMesh DM;
  DM.Ctx = G.Ctx;
  DM.M = &L;
  DM.Device = deviceOf(C.backend());
  DM.Dims.push_back(axesDim(L, Names[0], {0}));
  return DM;
}

DeviceMesh DeviceMesh::from_group(const std::vector<Group> &Groups,
                                  std::string_view DeviceType,
                                  const std::vector<int64_t> &Ranks,
                                  const std::vector<int64_t> &Shape,
                                  const std::vector<std::string> &DimNames,
                                  const std::string &Name) {
  if (Groups.empty())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "DeviceMesh::from_group: no groups were given");
  std::shared_ptr<Context> Ctx;
  for (const Group &G : Groups)
    if (G.C) {
      if (Ctx && Ctx != G.Ctx)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "DeviceMesh::from_group: the groups belong to different "
                    "runtimes");
      Ctx = G.Ctx;
    }
  if (!Ctx)
    Ctx = defaultContext();
  if (!Ctx || Ctx->finalized())
    throw Error(MESHRT_ERROR_NOT_INITIALIZED,
                "DeviceMesh::from_group: the runtime is not initialized");
  std::vector<std::string> Names = namesOrDefault(DimNames, Shape.size());
  // What this rank can check alone fails the declaration on every rank.
  std::optional<Error> Bad;
  detail::MeshBackends Backends =
      meshBackends(*Ctx, DeviceType, Names, {}, Bad);
  auto Check = [&](const std::string &Msg) {
    if (!Bad)
      Bad = Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "DeviceMesh::from_group: " + Msg);
  };
  if (Groups.size() != Shape.size())
    Check(std::to_string(Groups.size()) + " groups for a " +
          std::to_string(Shape.size()) +
          "-D mesh; give one group per dimension");
  int64_t Me = Ctx->worldRank();
  int64_t Mine = -1;
  for (size_t I = 0; I < Ranks.size(); ++I)
    if (Ranks[I] == Me)
      Mine = int64_t(I);
  for (size_t K = 0; K < Groups.size() && !Bad; ++K) {
    if (Mine < 0 && Groups[K].C)
      Check("world rank " + std::to_string(Me) +
            " is not in the mesh but passed a group for dimension " +
            std::to_string(K) + " (pass empty Groups outside the mesh)");
    if (Mine >= 0 && !Groups[K].C)
      Check("world rank " + std::to_string(Me) +
            " is in the mesh but passed an empty group for dimension " +
            std::to_string(K));
  }
  int64_t Product = 1;
  bool Static = true;
  for (int64_t S : Shape) {
    Static &= S >= 1;
    Product *= S >= 1 ? S : 1;
  }
  if (!Bad && Mine >= 0 && Static && Product == int64_t(Ranks.size()) &&
      Groups.size() == Shape.size()) {
    // Each group must be this rank's group along its dimension.
    std::vector<int64_t> IndexOf(size_t(Ctx->worldSize()), -1);
    bool Valid = true;
    for (size_t I = 0; I < Ranks.size(); ++I) {
      if (Ranks[I] < 0 || Ranks[I] >= Ctx->worldSize() ||
          IndexOf[size_t(Ranks[I])] >= 0) {
        Valid = false; // The declaration says what is wrong.
        break;
      }
      IndexOf[size_t(Ranks[I])] = int64_t(I);
    }
    MeshLayout Layout(Shape);
    for (size_t K = 0; Valid && K < Groups.size() && !Bad; ++K) {
      detail::Grouping Want = detail::computeGrouping(
          Ranks, IndexOf, Layout.modes({int64_t(K)}), Ctx->worldSize(), Me);
      std::vector<int64_t> Got = Groups[K].C->members();
      if (Got != Want.Members)
        Check("group " + std::to_string(K) + " (" + Groups[K].C->label() +
              ", world ranks [" + joinInts(Got) +
              "]) is not this rank's group along dimension '" + Names[K] +
              "' of the mesh (world ranks [" + joinInts(Want.Members) + "])");
    }
  }
  std::string MeshName = Name.empty() ? Ctx->freshMeshName() : Name;
  Mesh &Declared =
      Ctx->declareMesh(MeshName, Shape, Names, &Ranks, Bad, Backends);
  DeviceMesh DM;
  DM.Ctx = Ctx;
  DM.M = &Declared;
  DM.Device = deviceOf(Backends.Mesh);
  for (int64_t K = 0; K < Declared.layout().ndims(); ++K) {
    DM.Dims.push_back(axesDim(Declared, Names[size_t(K)], {K}));
    if (Groups[size_t(K)].C)
      Ctx->seedComm(Declared, {K}, *Groups[size_t(K)].C);
  }
  return DM;
}

Backend Runtime::backend() const { return Backend(Ctx->backendKind()); }
int64_t Runtime::rank() const { return Ctx->worldRank(); }
int64_t Runtime::size() const { return Ctx->worldSize(); }
Stats Runtime::stats() const { return Ctx->stats(); }
void Runtime::finalize() const { Ctx->finalize(); }

Runtime meshrt::default_runtime(Backend B) {
  return Runtime(acquireDefaultContext(meshrt_backend(B), /*CountInit=*/false));
}

DeviceMesh meshrt::init_device_mesh(std::string_view DeviceType,
                                    const std::vector<int64_t> &Shape,
                                    const std::vector<std::string> &DimNames,
                                    const std::string &Name) {
  return init_device_mesh(DeviceType, Shape, DimNames, {}, Name);
}

DeviceMesh meshrt::init_device_mesh(std::string_view DeviceType,
                                    const std::vector<int64_t> &Shape,
                                    const std::vector<std::string> &DimNames,
                                    const BackendOverride &Override,
                                    const std::string &Name) {
  // The device type picks the default runtime's backend if it does not
  // exist yet; otherwise it picks the mesh's, started next to the default
  // if it is the other one.
  Backend Wanted =
      defaultContext() ? Backend::Auto : Backend(backendForDevice(DeviceType));
  return default_runtime(Wanted).init_device_mesh(DeviceType, Shape, DimNames,
                                                  Override, Name);
}

bool meshrt::cuda_available() {
  std::string Why;
  return cudaDeviceVisible(Why);
}

void Runtime::send(const void *Buf, int64_t Count, DType T, int64_t Peer,
                   int64_t Tag) const {
  Ctx->send(Buf, Count, meshrt_dtype(T), Peer, Tag);
}

void Runtime::recv(void *Buf, int64_t Count, DType T, int64_t Peer,
                   int64_t Tag) const {
  Ctx->recv(Buf, Count, meshrt_dtype(T), Peer, Tag);
}

void meshrt::send(const void *Buf, int64_t Count, DType T, int64_t Peer,
                  int64_t Tag) {
  default_runtime().send(Buf, Count, T, Peer, Tag);
}

void meshrt::recv(void *Buf, int64_t Count, DType T, int64_t Peer,
                  int64_t Tag) {
  default_runtime().recv(Buf, Count, T, Peer, Tag);
}

void meshrt::finalize() { releaseDefaultContext(); }
