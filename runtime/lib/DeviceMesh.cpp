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

int64_t Group::rank() const { return comm().rank(); }
int64_t Group::size() const { return comm().size(); }
std::vector<int64_t> Group::members() const { return comm().members(); }
std::string Group::name() const { return comm().label(); }
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
// DeviceMesh
//===----------------------------------------------------------------------===//

void DeviceMesh::checkAlive() const {
  if (!Ctx || !M)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, "empty meshrt::DeviceMesh");
  Ctx->checkAlive("use a DeviceMesh");
}

DeviceMesh::Dim DeviceMesh::dim(std::string_view Name) const {
  checkAlive();
  for (const Dim &D : Dims)
    if (D.Name == Name)
      return D;
  // A name made by flatten() on the declared mesh is usable on every view
  // that has all of its axes.
  if (M->isAlias(Name)) {
    std::vector<int64_t> Axes = M->resolveName(Name);
    int64_t Size = 1;
    bool Covered = true;
    for (int64_t A : Axes) {
      bool Found = false;
      for (const Dim &D : Dims)
        for (int64_t X : D.Axes)
          Found |= X == A;
      Covered &= Found;
      Size *= M->layout().shape()[size_t(A)];
    }
    if (Covered)
      return Dim{std::string(Name), Axes, Size};
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

Group DeviceMesh::groupOf(const std::vector<int64_t> &Axes) const {
  checkAlive();
  return Group(Ctx, &Ctx->getComm(*M, Axes));
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
  return groupOf(dim(Name).Axes);
}

Group DeviceMesh::get_group(const char *Name) const {
  return get_group(nameOrError(Name, "DeviceMesh::get_group"));
}

Group DeviceMesh::get_group(int Index) const {
  return groupOf(dimAt(Index, "DeviceMesh::get_group").Axes);
}

Group DeviceMesh::get_group() const {
  checkAlive();
  if (Dims.size() != 1)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "get_group() without a dimension needs a 1-D mesh; this one "
                "has " +
                    std::to_string(Dims.size()) +
                    " dimensions (pass a dimension name)");
  return groupOf(Dims[0].Axes);
}

Group DeviceMesh::get_group(const std::vector<std::string> &Names) const {
  std::vector<Dim> Ds;
  for (const std::string &N : Names)
    Ds.push_back(dim(N));
  return groupOf(axesOf(Ds));
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
  for (const std::string &N : Names) {
    for (const Dim &P : Sub.Dims)
      if (P.Name == N)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "dimension '" + N + "' appears twice in a slice");
    Sub.Dims.push_back(dim(N));
  }
  // Dimensions must not share axes (e.g. a flattened one and its parts).
  try {
    M->layout().checkAxes(axesOf(Sub.Dims));
  } catch (const Error &) {
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "the dimensions of a slice must not overlap (a flattened "
                "dimension and one of its parts)");
  }
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
  std::vector<int64_t> Axes = axesOf(Ds);
  M->addAlias(Name, Axes);
  Group G = groupOf(Axes); // The one communicator (collective).
  DeviceMesh Flat = *this;
  Flat.Dims = {Dim{Name, Axes, G.size()}};
  return Flat;
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
    Groups.push_back(groupOf(D.Axes));
  return Groups;
}

bool DeviceMesh::operator==(const DeviceMesh &Other) const {
  if (!M || !Other.M)
    return !M && !Other.M; // Empty meshes equal only each other.
  return Ctx == Other.Ctx && Device == Other.Device &&
         mesh_dim_names() == Other.mesh_dim_names() &&
         shape() == Other.shape() && mesh() == Other.mesh();
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
    Mix(std::hash<int64_t>()(D.Size));
  }
  for (int64_t R : mesh())
    Mix(std::hash<int64_t>()(R));
  return H;
}

int64_t DeviceMesh::get_local_rank(std::string_view Name) const {
  return M->layout().position(Ctx->worldRank(), dim(Name).Axes).RankInGroup;
}

int64_t DeviceMesh::get_local_rank(const char *Name) const {
  return get_local_rank(nameOrError(Name, "DeviceMesh::get_local_rank"));
}

int64_t DeviceMesh::get_local_rank(int Index) const {
  const Dim &D = dimAt(Index, "DeviceMesh::get_local_rank");
  return M->layout().position(Ctx->worldRank(), D.Axes).RankInGroup;
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
  for (const Dim &D : Dims)
    C.push_back(M->layout().position(Ctx->worldRank(), D.Axes).RankInGroup);
  return C;
}

int64_t DeviceMesh::get_rank() const {
  checkAlive();
  return Ctx->worldRank();
}

std::vector<int64_t> DeviceMesh::mesh() const {
  checkAlive();
  return M->layout().groupMembers(Ctx->worldRank(), axesOf(Dims));
}

std::string DeviceMesh::to_string() const {
  std::vector<int64_t> Ranks = mesh();
  std::vector<int64_t> S = shape();
  // Nested lists, row-major, like a printed tensor.
  std::string Body;
  std::vector<int64_t> Idx(S.size(), 0);
  for (size_t I = 0; I < Ranks.size(); ++I) {
    size_t Opened = 0;
    for (size_t D = S.size(); D-- > 0 && Idx[D] == 0;)
      ++Opened;
    if (I)
      Body += ", ";
    Body += std::string(Opened, '[') + std::to_string(Ranks[I]);
    size_t Closed = 0;
    for (size_t D = S.size(); D-- > 0;) {
      if (++Idx[D] < S[D])
        break;
      Idx[D] = 0;
      ++Closed;
    }
    Body += std::string(Closed, ']');
  }
  if (S.empty())
    Body = std::to_string(Ctx->worldRank());
  std::string Names;
  for (const Dim &D : Dims)
    Names += (Names.empty() ? "'" : ", '") + D.Name + "'";
  if (Dims.size() == 1)
    Names += ",";
  return "DeviceMesh('" + Device + "', " + Body + ", mesh_dim_names=(" + Names +
         "))";
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
    return MESHRT_BACKEND_MPI;
  if (Device == "cuda")
    return MESHRT_BACKEND_NCCL;
  if (Device == "auto")
    return MESHRT_BACKEND_AUTO;
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
              "device type '" + std::string(Device) +
                  "' is not one of cpu, cuda, auto");
}

Runtime::Runtime(Backend B) : Ctx(Context::create(meshrt_backend(B))) {}

DeviceMesh Runtime::init_device_mesh(std::string_view DeviceType,
                                     const std::vector<int64_t> &Shape,
                                     const std::vector<std::string> &DimNames,
                                     const std::string &Name) const {
  Ctx->checkAlive("create a DeviceMesh");
  meshrt_backend Wanted = backendForDevice(DeviceType);
  if (Wanted != MESHRT_BACKEND_AUTO && Wanted != Ctx->backendKind())
    throw Error(
        MESHRT_ERROR_INVALID_ARGUMENT,
        "init_device_mesh('" + std::string(DeviceType) +
            "'): the runtime runs on the " + Ctx->backendName() +
            " backend (chosen when it started); use device '" +
            (Ctx->backendKind() == MESHRT_BACKEND_NCCL ? "cuda" : "cpu") +
            "' or 'auto'");
  std::vector<std::string> Names = DimNames;
  if (Names.empty())
    for (size_t I = 0; I < Shape.size(); ++I)
      Names.push_back("dim" + std::to_string(I));
  std::string MeshName = Name.empty() ? Ctx->freshMeshName() : Name;
  Mesh &Declared = Ctx->declareMesh(MeshName, Shape, Names);
  DeviceMesh DM;
  DM.Ctx = Ctx;
  DM.M = &Declared;
  DM.Device = Ctx->backendKind() == MESHRT_BACKEND_NCCL ? "cuda" : "cpu";
  for (int64_t I = 0; I < Declared.layout().ndims(); ++I) {
    DM.Dims.push_back(
        {Names[size_t(I)], {I}, Declared.layout().shape()[size_t(I)]});
    // Like torch, every dimension's group exists once the mesh does, so
    // get_group is local and cheap afterwards.
    Ctx->getComm(Declared, {I});
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
  // The device type picks the backend only if the default runtime does not
  // exist yet; otherwise Runtime::init_device_mesh checks that they agree.
  Backend Wanted =
      defaultContext() ? Backend::Auto : Backend(backendForDevice(DeviceType));
  return default_runtime(Wanted).init_device_mesh(DeviceType, Shape, DimNames,
                                                  Name);
}

bool meshrt::cuda_available() {
  std::string Why;
  return cudaDeviceVisible(Why);
}

void meshrt::finalize() { releaseDefaultContext(); }
