//===- meshrt/DeviceMesh.h - C++ API shaped like DeviceMesh -----*- C++ -*-===//
//
// The C++ interface for people: a DeviceMesh like torch's, with named
// dimensions, groups, slicing and flattening, and Groups that run the
// collectives. It sits on the same runtime (and, by default, the same default
// context) as the C ABI in meshrt.h, so a host program and the compiled code
// it calls share meshes and communicators.
//
//   auto mesh = meshrt::init_device_mesh("cpu", {2, 4},
//                                        {"replicate", "shard"});
//   meshrt::Group shard = mesh.get_group("shard");         // 4 ranks
//   auto both = mesh[{"replicate", "shard"}];              // no new comm
//   auto dp = mesh.flatten("dp", {"replicate", "shard"});  // all 8 ranks
//
//   // PyTorch's backend_override: "shard" on NCCL, "replicate" on MPI.
//   auto mixed = meshrt::init_device_mesh("cpu", {2, 4},
//                                         {"replicate", "shard"},
//                                         {{"shard", meshrt::Backend::NCCL}});
//
// Errors are thrown as meshrt::Error. Rank layout, group order and caching
// are described in MeshLayout.h and docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_DEVICEMESH_H
#define MESHRT_DEVICEMESH_H

#include "meshrt/Error.h"
#include "meshrt/Half.h"
#include "meshrt/MeshLayout.h"
#include "meshrt/meshrt.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meshrt {

namespace detail {
class Context;
class Comm;
class Mesh;
} // namespace detail

/// Element types (same values as meshrt_dtype).
enum class DType : int32_t {
  F16 = MESHRT_F16,
  BF16 = MESHRT_BF16,
  F32 = MESHRT_F32,
  F64 = MESHRT_F64,
  I8 = MESHRT_I8,
  I32 = MESHRT_I32,
  I64 = MESHRT_I64,
  U8 = MESHRT_U8
};

/// Reductions (same values as meshrt_reduce_op).
enum class ReduceOp : int32_t {
  Sum = MESHRT_SUM,
  Prod = MESHRT_PROD,
  Min = MESHRT_MIN,
  Max = MESHRT_MAX,
  Avg = MESHRT_AVG,
  BitAnd = MESHRT_BAND,
  BitOr = MESHRT_BOR,
  BitXor = MESHRT_BXOR
};

/// Backends (same values as meshrt_backend).
enum class Backend : int32_t {
  Auto = MESHRT_BACKEND_AUTO,
  MPI = MESHRT_BACKEND_MPI,
  NCCL = MESHRT_BACKEND_NCCL,
  Gloo = MESHRT_BACKEND_GLOO,
  /// The job's CPU backend: MPI under an MPI launcher, else gloo.
  Host = MESHRT_BACKEND_HOST
};

/// A dimension of a mesh, by name or by number (negative from the end), as
/// the keys of PyTorch's backend_override are.
class MeshDim {
public:
  /// The dimension called `Name`.
  MeshDim(const char *Name) : ByName(true), Name(Name ? Name : "") {}
  /// The dimension called `Name`.
  MeshDim(std::string Name) : ByName(true), Name(std::move(Name)) {}
  /// Dimension number `Index`; negative counts from the end.
  MeshDim(int Index) : Index(Index) {}
  /// True if given by name.
  bool byName() const { return ByName; }
  /// The name (byName()).
  const std::string &name() const { return Name; }
  /// The number (!byName()).
  int index() const { return Index; }

private:
  bool ByName = false;
  std::string Name;
  int Index = 0;
};

/// Backends for some dimensions of a mesh, PyTorch's backend_override (dim
/// name or number -> backend): {{"shard", Backend::NCCL}, {0, Backend::MPI}}.
/// A dimension not listed, or listed with Backend::Auto, runs on the mesh's
/// backend (that of its device type).
using BackendOverride = std::vector<std::pair<MeshDim, Backend>>;

/// The DType of a C++ element type.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<Half> {
  static constexpr DType value = DType::F16; ///< f16
};
template <> struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BF16; ///< bf16
};
template <> struct DTypeOf<float> {
  static constexpr DType value = DType::F32; ///< f32
};
template <> struct DTypeOf<double> {
  static constexpr DType value = DType::F64; ///< f64
};
template <> struct DTypeOf<int8_t> {
  static constexpr DType value = DType::I8; ///< i8
};
template <> struct DTypeOf<int32_t> {
  static constexpr DType value = DType::I32; ///< i32
};
template <> struct DTypeOf<int64_t> {
  static constexpr DType value = DType::I64; ///< i64
};
template <> struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::U8; ///< u8
};

/// Counters of a runtime context (see meshrt_stats).
using Stats = meshrt_stats;

/// The communicator of this process's group along some mesh dimensions. A
/// cheap handle: copies share the communicator, which the runtime owns.
/// Collectives are blocking; see meshrt.h for their exact semantics.
class MESHRT_API Group {
public:
  /// An empty handle.
  Group() = default;
  /// The group of a C ABI communicator handle (meshrt_comm_get); a handle
  /// that is not a live communicator is MESHRT_ERROR_INVALID_ARGUMENT.
  static Group from_handle(meshrt_comm_t Handle);

  /// This process's rank in the group.
  int64_t rank() const;
  /// Number of members.
  int64_t size() const;
  /// World ranks of the members, in group-rank order.
  std::vector<int64_t> members() const;
  /// "mesh 'mesh0' axes [replicate, shard]".
  std::string name() const;
  /// The backend the group's communicator runs on: the one its dimensions
  /// were given (see BackendOverride), else its mesh's.
  Backend backend() const;
  /// The C ABI handle, for compiled code.
  meshrt_comm_t handle() const;
  /// MPI_Comm* (MPI backend) or ncclComm_t (NCCL backend).
  void *native_handle() const;

  /// Untyped collectives (see the meshrt_* functions of the same name).
  void all_reduce(const void *Send, void *Recv, int64_t Count, DType T,
                  ReduceOp Op = ReduceOp::Sum) const;
  /// See meshrt_all_gather.
  void all_gather(const void *Send, void *Recv, int64_t Count, DType T) const;
  /// See meshrt_reduce_scatter.
  void reduce_scatter(const void *Send, void *Recv, int64_t Count, DType T,
                      ReduceOp Op = ReduceOp::Sum) const;
  /// See meshrt_all_to_all.
  void all_to_all(const void *Send, void *Recv, int64_t Count, DType T) const;
  /// See meshrt_broadcast.
  void broadcast(void *Buf, int64_t Count, DType T, int64_t Root) const;
  /// See meshrt_permute; `Wrap` and `ZeroFill` are its two flags.
  void permute(const void *Send, void *Recv, int64_t Count, DType T,
               int64_t Offset, bool Wrap, bool ZeroFill = false) const;
  /// See meshrt_barrier.
  void barrier() const;

  /// In-place all_reduce of `Count` elements at `Data`.
  template <typename T>
  void all_reduce(T *Data, int64_t Count, ReduceOp Op = ReduceOp::Sum) const {
    all_reduce(Data, Data, Count, DTypeOf<T>::value, Op);
  }
  /// In-place all_reduce of a vector.
  template <typename T>
  void all_reduce(std::vector<T> &Data, ReduceOp Op = ReduceOp::Sum) const {
    all_reduce(Data.data(), int64_t(Data.size()), Op);
  }
  /// Concatenation of every member's `Mine` in group order.
  template <typename T>
  std::vector<T> all_gather(const std::vector<T> &Mine) const {
    std::vector<T> Out(Mine.size() * size_t(size()));
    all_gather(Mine.data(), Out.data(), int64_t(Mine.size()),
               DTypeOf<T>::value);
    return Out;
  }
  /// Block rank() of the reduction of `All` (size() equal blocks).
  template <typename T>
  std::vector<T> reduce_scatter(const std::vector<T> &All,
                                ReduceOp Op = ReduceOp::Sum) const {
    std::vector<T> Out(All.size() / size_t(size()));
    checkBlocks(All.size());
    reduce_scatter(All.data(), Out.data(), int64_t(Out.size()),
                   DTypeOf<T>::value, Op);
    return Out;
  }
  /// Block j of `All` goes to member j; block i of the result came from i.
  template <typename T>
  std::vector<T> all_to_all(const std::vector<T> &All) const {
    std::vector<T> Out(All.size());
    checkBlocks(All.size());
    all_to_all(All.data(), Out.data(), int64_t(All.size()) / size(),
               DTypeOf<T>::value);
    return Out;
  }
  /// Copies member `Root`'s `Data` to everybody (sizes must match).
  template <typename T>
  void broadcast(std::vector<T> &Data, int64_t Root) const {
    broadcast(Data.data(), int64_t(Data.size()), DTypeOf<T>::value, Root);
  }
  /// `Mine` from member rank() - Offset (zeros where there is none).
  template <typename T>
  std::vector<T> permute(const std::vector<T> &Mine, int64_t Offset,
                         bool Wrap) const {
    std::vector<T> Out(Mine.size());
    permute(Mine.data(), Out.data(), int64_t(Mine.size()), DTypeOf<T>::value,
            Offset, Wrap, /*ZeroFill=*/true);
    return Out;
  }

private:
  friend class DeviceMesh;
  Group(std::shared_ptr<detail::Context> Ctx, detail::Comm *C)
      : Ctx(std::move(Ctx)), C(C) {}
  detail::Comm &comm() const;
  void checkBlocks(size_t Elements) const;
  std::shared_ptr<detail::Context> Ctx;
  detail::Comm *C = nullptr;
};

/// A (sub-)mesh of processes with named dimensions. Slicing and copying are
/// local and never create communicators; each dimension's group is made when
/// the mesh is created (init_device_mesh) or flattened.
///
/// A mesh may cover part of the world in any order (a rank array, as
/// PyTorch's DeviceMesh(device_type, mesh)). On a process outside it,
/// is_member() is false, get_coordinate() is empty (PyTorch's None), and
/// get_group, get_local_rank and the groups' collectives are
/// MESHRT_ERROR_NOT_MEMBER; such a process still takes part in creating the
/// mesh and its communicators, which is collective over the world.
class MESHRT_API DeviceMesh {
public:
  /// An empty mesh.
  DeviceMesh() = default;
  /// The mesh over world ranks `Ranks` (row-major over `MeshShape`, one -1
  /// resolved from the number of ranks) on the default runtime, like
  /// PyTorch's DeviceMesh(device_type, mesh_tensor). Collective over the
  /// world: every rank calls it, members or not; the declaration is checked
  /// across ranks and one communicator is made per dimension (none where
  /// one with the same grouping exists). Ranks out of range, repeated, or
  /// not one per position are MESHRT_ERROR_INVALID_ARGUMENT on every rank.
  DeviceMesh(std::string_view DeviceType, const std::vector<int64_t> &Ranks,
             const std::vector<int64_t> &MeshShape,
             const std::vector<std::string> &MeshDimNames = {},
             const std::string &Name = "");
  /// The same, with backends for some dimensions (see
  /// meshrt::init_device_mesh with a BackendOverride).
  DeviceMesh(std::string_view DeviceType, const std::vector<int64_t> &Ranks,
             const std::vector<int64_t> &MeshShape,
             const std::vector<std::string> &MeshDimNames,
             const BackendOverride &Override, const std::string &Name = "");

  /// "cpu" (the mesh runs on MPI) or "cuda" (on NCCL), as its device type
  /// chose ("auto": the runtime's backend). Dimensions may run elsewhere
  /// (BackendOverride); Group::backend() tells.
  const std::string &device_type() const { return Device; }
  /// Sizes of the dimensions.
  std::vector<int64_t> shape() const;
  /// Number of dimensions.
  int64_t ndim() const { return int64_t(Dims.size()); }
  /// Number of processes in this (sub-)mesh.
  int64_t size() const;
  /// Size of dimension `Dim`.
  int64_t size(std::string_view Dim) const;
  /// Size of dimension `Dim` (a null name is an error, not a crash).
  int64_t size(const char *Dim) const;
  /// Size of dimension number `Dim`; negative counts from the end, as in
  /// Python (PyTorch's mesh.size(0)).
  int64_t size(int Dim) const;
  /// Names of the dimensions.
  std::vector<std::string> mesh_dim_names() const;
  /// Name of the underlying declared mesh (as in meshrt_mesh_lookup).
  const std::string &name() const;

  /// The group along dimension `Dim` (a flattened dimension is one group).
  Group get_group(std::string_view Dim) const;
  /// The same; a null name is an error, not a crash.
  Group get_group(const char *Dim) const;
  /// The group along dimension number `Dim`; negative counts from the end
  /// (PyTorch's mesh.get_group(0)).
  Group get_group(int Dim) const;
  /// The group of a 1-D mesh.
  Group get_group() const;
  /// The group along several dimensions in the order given: the rank in it
  /// is the row-major index of the coordinates over `Dims` in that order.
  /// The first request of an order not seen before is collective.
  Group get_group(const std::vector<std::string> &Dims) const;

  /// The 1-D sub-mesh of dimension `Dim` (a dimension of this mesh, or a
  /// name that flatten() gave to dimensions of the root mesh).
  DeviceMesh operator[](std::string_view Dim) const;
  /// The sub-mesh of dimensions `Dims`, in that order (C++17 spelling of
  /// torch's mesh["a", "b"]: mesh[{"a", "b"}]).
  DeviceMesh operator[](std::initializer_list<std::string_view> Dims) const;
#if defined(__cpp_multidimensional_subscript) &&                               \
    __cpp_multidimensional_subscript >= 202110L
  /// mesh["a", "b"] in C++23.
  template <typename... Rest>
  DeviceMesh operator[](std::string_view A, std::string_view B,
                        Rest... More) const {
    return slice({std::string(A), std::string(B), std::string(More)...});
  }
#endif
  /// The sub-mesh of dimensions `Dims`, in that order.
  DeviceMesh slice(const std::vector<std::string> &Dims) const;

  /// Merges `Dims` (default: all dimensions of this mesh, in order) into one
  /// dimension called `Name` and returns that 1-D mesh. Creates exactly one
  /// communicator (none if an identical grouping exists, e.g. all axes of the
  /// mesh in mesh order, which is the world). Collective. Afterwards `Name`
  /// is also a dimension name of the parent mesh for get_group.
  DeviceMesh flatten(const std::string &Name,
                     const std::vector<std::string> &Dims = {}) const;
  /// Flattens every dimension into one named as PyTorch names it: the
  /// dimension names joined by "_" ("replicate_shard"). Flattening one
  /// dimension into its own name (a 1-D mesh, here or above) returns that
  /// dimension's mesh and creates nothing.
  DeviceMesh flatten() const;
  /// One group per dimension, in order (PyTorch's get_all_groups).
  std::vector<Group> get_all_groups() const;

  /// Splits dimension `Dim` into dimensions of sizes `Sizes` (product: the
  /// size of `Dim`, row-major) named `Names`, in its place (PyTorch's
  /// _unflatten). Collective: makes one communicator per new dimension,
  /// none where one with the same grouping exists. Sizes that do not fit
  /// the dimension, or a split that cuts across the parts of a flattened
  /// dimension, are MESHRT_ERROR_INVALID_ARGUMENT.
  DeviceMesh unflatten(std::string_view Dim, const std::vector<int64_t> &Sizes,
                       const std::vector<std::string> &Names) const;
  /// The same, by dimension number (negative from the end).
  DeviceMesh unflatten(int Dim, const std::vector<int64_t> &Sizes,
                       const std::vector<std::string> &Names) const;
  /// The dimensions of `Meshes` side by side (PyTorch's _concatenate): all
  /// sub-meshes of one mesh, with distinct names and no position in common.
  /// Local: reuses the meshes' communicators.
  static DeviceMesh concatenate(const std::vector<DeviceMesh> &Meshes);
  /// A 1-D mesh over the members of `G` (PyTorch's from_group with one
  /// group): local, no communication. `Ranks`, if given, must be the
  /// group's members. The mesh has exactly that group: flattening it into
  /// a new name is fine, unflattening (a new grouping) is
  /// MESHRT_ERROR_UNSUPPORTED, since no rank knows the other groups.
  static DeviceMesh
  from_group(const Group &G, std::string_view DeviceType,
             const std::vector<std::string> &MeshDimNames = {},
             const std::vector<int64_t> &Ranks = {});
  /// An N-D mesh over `Ranks` (row-major over `MeshShape`) whose dimension k
  /// uses group `Groups[k]` (PyTorch's from_group with a list of groups and
  /// a mesh). Collective over the world, like a declaration: every rank
  /// calls it; a rank in the mesh passes its groups (each must be its group
  /// along that dimension, else MESHRT_ERROR_INVALID_ARGUMENT on every
  /// rank), a rank outside it passes empty Groups.
  static DeviceMesh
  from_group(const std::vector<Group> &Groups, std::string_view DeviceType,
             const std::vector<int64_t> &Ranks,
             const std::vector<int64_t> &MeshShape,
             const std::vector<std::string> &MeshDimNames = {},
             const std::string &Name = "");
  /// True if this process is in the mesh.
  bool is_member() const;
  /// Meshes are equal when they live in the same runtime and have the same
  /// device type, dimension names, shape and world ranks (PyTorch's
  /// DeviceMesh.__eq__); slicing the same dimensions twice gives equal
  /// meshes. hash() agrees with ==. Empty (default-constructed) meshes are
  /// equal to each other only; comparing a mesh of a finalized runtime is
  /// MESHRT_ERROR_NOT_INITIALIZED.
  bool operator==(const DeviceMesh &Other) const;
  bool operator!=(const DeviceMesh &Other) const { return !(*this == Other); }
  size_t hash() const;

  /// This process's coordinate along `Dim` (its rank in that group).
  int64_t get_local_rank(std::string_view Dim) const;
  /// The same; a null name is an error, not a crash.
  int64_t get_local_rank(const char *Dim) const;
  /// This process's coordinate along dimension number `Dim`; negative
  /// counts from the end.
  int64_t get_local_rank(int Dim) const;
  /// This process's coordinate on a 1-D mesh.
  int64_t get_local_rank() const;
  /// This process's coordinates, one per dimension; empty if it is not in
  /// the mesh (PyTorch's None).
  std::vector<int64_t> get_coordinate() const;
  /// This process's world rank.
  int64_t get_rank() const;
  /// World ranks of this (sub-)mesh, row-major over its dimensions (on a
  /// process outside the mesh: those of the whole mesh; a sub-mesh of it is
  /// MESHRT_ERROR_NOT_MEMBER, as in PyTorch).
  std::vector<int64_t> mesh() const;
  /// PyTorch's current DeviceMesh.__repr__: the sizes by name, the device
  /// type, and each dimension's stride in the root mesh's rank array, e.g.
  /// "DeviceMesh((replicate=2, shard=4), 'cpu', stride=(4, 1))"; with
  /// TORCH_DISTRIBUTED_DEBUG=DETAIL also ", Mesh: [[0, 1, 2, 3], [4, 5,
  /// 6, 7]]" before the closing parenthesis.
  std::string to_string() const;
  /// The C ABI handle of the underlying mesh.
  meshrt_mesh_t handle() const;
  /// Counters of the runtime context this mesh lives in.
  Stats stats() const;

private:
  friend class Runtime;
  struct Dim {
    std::string Name;
    std::vector<int64_t> Axes; // Axes of the declared mesh, in order (Whole).
    int64_t Size = 1;
    // Layout over the declared mesh's rank array, outermost first.
    std::vector<LayoutMode> Modes;
    bool Whole = true; // Made of whole axes (else: parts, after unflatten).
  };
  static Dim axesDim(const detail::Mesh &M, std::string Name,
                     std::vector<int64_t> Axes);
  /// A mesh over all axes of `M`, with their communicators (collective).
  static DeviceMesh over(std::shared_ptr<detail::Context> Ctx, detail::Mesh &M,
                         const std::vector<std::string> &Names);
  Dim dim(std::string_view Name) const;
  /// Dimension number `Index` (negative: from the end), or an error.
  const Dim &dimAt(int Index, const char *Op) const;
  /// `Name` as a string_view, or an error naming `Op` when it is null.
  static std::string_view nameOrError(const char *Name, const char *Op);
  std::vector<int64_t> axesOf(const std::vector<Dim> &Ds) const;
  /// The communicator of `Ds` together (collective the first time), members
  /// or not.
  detail::Comm &commOf(const std::vector<Dim> &Ds) const;
  /// The Group of `Ds`; MESHRT_ERROR_NOT_MEMBER, naming `Op`, outside.
  Group groupOf(const std::vector<Dim> &Ds, const char *Op) const;
  /// This process's position in the root's rank array with its
  /// coordinates along this mesh's dimensions zeroed (-1 outside).
  int64_t basePosition() const;
  void checkAlive() const;
  /// unflatten's steps: the position of dimension `Name` once the sizes and
  /// names are checked against it; the new dimensions cut from its layout;
  /// whether a new dimension is made of whole axes of the declared mesh.
  size_t unflattenedDimIndex(std::string_view Name,
                             const std::vector<int64_t> &Sizes,
                             const std::vector<std::string> &Names) const;
  std::vector<Dim> splitDim(const Dim &Old, std::string_view Name,
                            const std::vector<int64_t> &Sizes,
                            const std::vector<std::string> &Names) const;
  void markWholeAxes(Dim &D) const;
  std::shared_ptr<detail::Context> Ctx;
  detail::Mesh *M = nullptr;
  std::vector<Dim> Dims;
  std::string Device;
  bool Flattened = false; // Made by flatten (PyTorch prints its stride bare).
};

/// An independent instance of the runtime (its own world communicator,
/// meshes and cache). Most programs use the default one through the free
/// functions below; a second Runtime is for libraries that must not share.
class MESHRT_API Runtime {
public:
  /// Starts a context (collective over MPI_COMM_WORLD).
  explicit Runtime(Backend B = Backend::Auto);
  /// Creates a mesh in this runtime (see meshrt::init_device_mesh).
  DeviceMesh init_device_mesh(std::string_view DeviceType,
                              const std::vector<int64_t> &MeshShape,
                              const std::vector<std::string> &MeshDimNames = {},
                              const std::string &Name = "") const;
  /// The same, with backends for some dimensions.
  DeviceMesh init_device_mesh(std::string_view DeviceType,
                              const std::vector<int64_t> &MeshShape,
                              const std::vector<std::string> &MeshDimNames,
                              const BackendOverride &Override,
                              const std::string &Name = "") const;
  /// Creates a mesh over world ranks `Ranks` in this runtime (see the
  /// DeviceMesh constructor of the same arguments).
  DeviceMesh device_mesh(std::string_view DeviceType,
                         const std::vector<int64_t> &Ranks,
                         const std::vector<int64_t> &MeshShape,
                         const std::vector<std::string> &MeshDimNames = {},
                         const std::string &Name = "") const;
  /// The same, with backends for some dimensions.
  DeviceMesh device_mesh(std::string_view DeviceType,
                         const std::vector<int64_t> &Ranks,
                         const std::vector<int64_t> &MeshShape,
                         const std::vector<std::string> &MeshDimNames,
                         const BackendOverride &Override,
                         const std::string &Name = "") const;
  /// Sends `Count` elements to world rank `Peer` (see meshrt_send).
  void send(const void *Buf, int64_t Count, DType T, int64_t Peer,
            int64_t Tag = 0) const;
  /// Receives `Count` elements from world rank `Peer` (see meshrt_recv).
  void recv(void *Buf, int64_t Count, DType T, int64_t Peer,
            int64_t Tag = 0) const;
  /// Sends a vector to world rank `Peer`.
  template <typename T>
  void send(const std::vector<T> &Data, int64_t Peer, int64_t Tag = 0) const {
    send(Data.data(), int64_t(Data.size()), DTypeOf<T>::value, Peer, Tag);
  }
  /// Receives `Data.size()` elements from world rank `Peer` into `Data`.
  template <typename T>
  void recv(std::vector<T> &Data, int64_t Peer, int64_t Tag = 0) const {
    recv(Data.data(), int64_t(Data.size()), DTypeOf<T>::value, Peer, Tag);
  }
  /// The default backend (chosen when the runtime started; meshes may ask
  /// for the other one, see BackendOverride).
  Backend backend() const;
  /// World rank.
  int64_t rank() const;
  /// World size.
  int64_t size() const;
  /// Counters.
  Stats stats() const;
  /// Frees the communicators (collective); meshes become unusable.
  void finalize() const;

private:
  friend Runtime default_runtime(Backend);
  explicit Runtime(std::shared_ptr<detail::Context> C) : Ctx(std::move(C)) {}
  /// init_device_mesh (`Ranks` null: the whole world) and device_mesh.
  DeviceMesh declareMesh(std::string_view DeviceType,
                         const std::vector<int64_t> *Ranks,
                         const std::vector<int64_t> &Shape,
                         const std::vector<std::string> &DimNames,
                         const BackendOverride &Override,
                         const std::string &Name) const;
  std::shared_ptr<detail::Context> Ctx;
};

/// The default runtime, shared with the C ABI; started on first use with
/// backend `B` (Auto: MESHRT_BACKEND, then NCCL if a GPU is visible) and
/// finalized by meshrt::finalize() (a process that exits with it still
/// initialised aborts the job: call finalize() on every rank before exit).
MESHRT_API Runtime default_runtime(Backend B = Backend::Auto);

/// Creates a mesh on the default runtime, like torch's init_device_mesh.
/// `DeviceType` is "cpu" (MPI backend), "cuda" (NCCL backend) or "auto" (the
/// runtime's backend); the first call starts the default runtime on that
/// backend, and a mesh whose device type asks for the other backend starts
/// it in the same runtime. `MeshShape` may hold one -1, resolved from the
/// world size. Dimension names default to "dim0", "dim1", ...; the mesh name
/// defaults to "mesh<N>". Collective: declares the mesh (checked across
/// ranks) and creates one communicator per dimension (none where the world
/// serves).
MESHRT_API DeviceMesh init_device_mesh(
    std::string_view DeviceType, const std::vector<int64_t> &MeshShape,
    const std::vector<std::string> &MeshDimNames = {},
    const std::string &Name = "");

/// The same with PyTorch's backend_override: the dimensions in `Override`
/// run on the backend given there, the others on the device type's. A group
/// along several dimensions (get_group of a list, flatten, unflatten) runs
/// on the backend they all have, else on the device type's. The backends
/// are part of the declaration checked across ranks (ranks that disagree
/// get MESHRT_ERROR_MESH_MISMATCH); an unknown dimension name is
/// MESHRT_ERROR_UNKNOWN_AXIS, a number out of range or a dimension given
/// twice MESHRT_ERROR_INVALID_ARGUMENT, on every rank. The first group on a
/// backend other than the runtime's starts it (collective); NCCL where it
/// cannot start is MESHRT_ERROR_BACKEND on every rank, naming what is
/// missing on which rank.
MESHRT_API DeviceMesh init_device_mesh(
    std::string_view DeviceType, const std::vector<int64_t> &MeshShape,
    const std::vector<std::string> &MeshDimNames,
    const BackendOverride &Override, const std::string &Name = "");

/// Point to point on the default runtime (see meshrt_send / meshrt_recv).
MESHRT_API void send(const void *Buf, int64_t Count, DType T, int64_t Peer,
                     int64_t Tag = 0);
/// See meshrt_recv.
MESHRT_API void recv(void *Buf, int64_t Count, DType T, int64_t Peer,
                     int64_t Tag = 0);

/// True if the NCCL backend is built and a CUDA device is visible.
MESHRT_API bool cuda_available();

/// Finalizes the default runtime (collective). Every rank calls it before it
/// exits; exiting with the runtime initialised aborts the job.
MESHRT_API void finalize();

} // namespace meshrt

/// Meshes as keys of unordered containers (PyTorch's DeviceMesh.__hash__).
template <> struct std::hash<meshrt::DeviceMesh> {
  size_t operator()(const meshrt::DeviceMesh &M) const { return M.hash(); }
};

#endif // MESHRT_DEVICEMESH_H
