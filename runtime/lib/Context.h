//===- Context.h - Meshes, communicator cache and collectives ---*- C++ -*-===//
//
// A Context is one instance of the runtime: a private duplicate of
// MPI_COMM_WORLD for control traffic, its default backend (MPI or NCCL) with
// its world communicator, the other backend and its world once a mesh asks
// for it, the declared meshes, the communicator cache and the watchdog.
// Nothing here is process-global: two contexts (or two meshes in one) do not
// see each other. The C ABI uses one default context; the C++ API uses the
// same default context unless given another.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_CONTEXT_H
#define MESHRT_LIB_CONTEXT_H

#include "Backend.h"
#include "CollectiveCheck.h"
#include "ControlPlane.h"
#include "Debug.h"
#include "Trace.h"
#include "Watchdog.h"

#include "meshrt/Error.h"
#include "meshrt/MeshLayout.h"
#include "meshrt/meshrt.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshrt {
namespace detail {

class Context;
class Mesh;

/// Number of dtypes / reductions in the C enums.
constexpr int kNumDTypes = 8;
constexpr int kNumReduceOps = 8;

/// Bytes per element of `T` (0 if invalid).
inline int64_t dtypeSize(meshrt_dtype T) {
  constexpr int64_t Sizes[kNumDTypes] = {2, 2, 4, 8, 1, 4, 8, 1};
  return unsigned(T) < unsigned(kNumDTypes) ? Sizes[T] : 0;
}
/// "f16", ... ("?" if invalid).
const char *dtypeName(meshrt_dtype T);
/// "mpi" or "nccl" ("auto" for MESHRT_BACKEND_AUTO, "?" if invalid).
const char *backendKindName(meshrt_backend B);
/// "sum", ... ("?" if invalid).
const char *reduceOpName(meshrt_reduce_op Op);
/// True for i8, i32, i64, u8.
bool isIntegerDType(meshrt_dtype T);

/// A communicator handle: the group of this process along an ordered axis
/// list of a mesh. Several handles may share one backend communicator.
/// The meshes and communicators alive in this process, by address. The C
/// ABI looks a handle up here before it uses it, so a stale or garbage
/// handle is an error with a message, never a dereference.
namespace handles {
void add(const void *P);
void remove(const void *P);
bool isLive(const void *P);
} // namespace handles

class Comm final : public Describable {
public:
  /// Used by Context::getComm only. `Member` is false on a process outside
  /// the mesh: then the handle has rank -1, size 0 and no communicator.
  /// `Kind` is the backend its communicator runs on.
  Comm(Context &Ctx, Mesh &M, std::string Label, GroupPosition Pos,
       std::vector<int64_t> Members, bool Member, meshrt_backend Kind);
  ~Comm() override;

  /// "mesh 'm' axes [shard] (group rank 1 of 4: world ranks 4, 5, 6, 7)".
  std::string describe() const override;
  /// "mesh 'm' axes [shard]".
  const std::string &label() const { return Label; }

  /// This process's rank in the group (-1 outside the mesh).
  int64_t rank() const { return Member ? Pos.RankInGroup : -1; }
  /// Number of members (0 outside the mesh).
  int64_t size() const { return Member ? Pos.Size : 0; }
  /// False on a process outside the mesh.
  bool isMember() const { return Member; }
  /// Throws MESHRT_ERROR_NOT_MEMBER, naming `Op`, on a process outside the
  /// mesh; MESHRT_ERROR_NOT_INITIALIZED once finalized.
  void requireUsable(const char *Op) const;
  /// The group id along these axes (the split color).
  int64_t color() const { return Pos.Color; }
  /// World ranks of the members in group order.
  const std::vector<int64_t> &members() const { return Members; }
  /// The mesh.
  Mesh &mesh() const { return TheMesh; }
  /// The backend the communicator runs on (also outside the mesh, where
  /// there is no communicator).
  meshrt_backend backend() const { return Kind; }
  /// The backend communicator (shared); call requireUsable first.
  BackendComm &impl() const { return *Fast; }
  /// Collectives run on this handle.
  int64_t collectives() const { return Collectives; }

  // Collectives: validate, count, watch, run; they throw meshrt::Error.
  // Semantics as documented for the meshrt_* functions of the same name.

  /// meshrt_all_reduce.
  void allReduce(const void *Send, void *Recv, int64_t Count, meshrt_dtype T,
                 meshrt_reduce_op Op);
  /// meshrt_all_gather.
  void allGather(const void *Send, void *Recv, int64_t Count, meshrt_dtype T);
  /// meshrt_reduce_scatter.
  void reduceScatter(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T, meshrt_reduce_op Op);
  /// See meshrt_all_gather_padded.
  void allGatherPadded(const void *Send, void *Recv, int64_t Count,
                       int64_t Valid, meshrt_dtype T);
  /// See meshrt_reduce_scatter_padded.
  void reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                           int64_t Valid, meshrt_dtype T, meshrt_reduce_op Op);
  /// meshrt_all_to_all.
  void allToAll(const void *Send, void *Recv, int64_t Count, meshrt_dtype T);
  /// See meshrt_all_to_all_padded.
  void allToAllPadded(const void *Send, void *Recv, int64_t Count,
                      int64_t Valid, meshrt_dtype T, int32_t Side);
  /// meshrt_broadcast.
  void broadcast(void *Buf, int64_t Count, meshrt_dtype T, int64_t Root);
  /// meshrt_permute.
  void permute(const void *Send, void *Recv, int64_t Count, meshrt_dtype T,
               int64_t Offset, int32_t Flags);
  /// meshrt_barrier.
  void barrier();

  /// Runs `Body` (one of the collectives above) as a stream-ordered call on
  /// `Stream` (null: the shared stream): the NCCL backend enqueues it and
  /// returns without waiting; the MPI backend synchronises the stream, stages
  /// device buffers through host memory and returns with the work done.
  template <typename F> void onStream(const char *Op, void *Stream, F &&Body) {
    requireLive(Op);
    struct Reset {
      BackendComm *B;
      ~Reset() { B->endStreamCalls(); }
    } R{Fast};
    Fast->beginStreamCalls(Stream);
    Body();
  }

private:
  friend class Context;
  /// Throws MESHRT_ERROR_NOT_INITIALIZED once the runtime was finalized.
  void requireLive(const char *Op) const;
  /// Argument checks of the hot path: a few compares inline; the messages
  /// are built out of line, only when something is wrong.
  void checkBuffers(const char *Op, const void *Send, const void *Recv,
                    int64_t Count, meshrt_dtype T, int64_t Blocks,
                    bool AllowInPlace) const {
    int64_t Elem = dtypeSize(T), Bytes;
    if (__builtin_expect(
            !Fast || Elem == 0 || Count <= 0 || !Send || !Recv ||
                __builtin_mul_overflow(Count, Blocks * Elem, &Bytes) ||
                (!AllowInPlace && Send == Recv),
            0))
      checkBuffersSlow(Op, Send, Recv, Count, T, Blocks, AllowInPlace);
  }
  void checkReduction(const char *Op, meshrt_dtype T, meshrt_reduce_op R) const;
  void checkBuffersSlow(const char *Op, const void *Send, const void *Recv,
                        int64_t Count, meshrt_dtype T, int64_t Blocks,
                        bool AllowInPlace) const;
  void checkReductionSlow(const char *Op, meshrt_dtype T,
                          meshrt_reduce_op R) const;
  [[noreturn]] void fail(meshrt_status S, const char *Op,
                         const std::string &Msg) const;
  /// Appends one line to the collective trace: the printf-formatted call
  /// and the group's members. Only called when tracing.
  __attribute__((cold, noinline, format(printf, 2, 3))) void
  traceCall(const char *Fmt, ...) const;

  /// Compares the call (`Op`, `S`) across the group before it runs
  /// (MESHRT_CHECK_COLLECTIVES); throws MESHRT_ERROR_COLLECTIVE_MISMATCH
  /// with both calls. Only called when Check is set.
  __attribute__((cold, noinline)) void verify(const char *Op,
                                              CollectiveSignature S) const;

  /// Makes the handle usable: `Impl` is the (shared) backend communicator,
  /// `Checker` the grouping's check communicator (null unless
  /// MESHRT_CHECK_COLLECTIVES is on), `Ops` the table of reductions its
  /// backend runs (see Context::supportedOps).
  void attach(std::shared_ptr<BackendComm> Impl, CollectiveCheck *Checker,
              const uint8_t *Ops);
  /// Makes every later use report "finalized".
  void detach();

  // What a collective touches sits in the first cache line of the object:
  // between two calls on an oversubscribed node the line is usually cold.
  alignas(64) BackendComm *Fast = nullptr; // Impl.get(); null once detached.
  Watchdog *Dog = nullptr;
  CollectiveTrace *Trace = nullptr; // Null unless MESHRT_TRACE is set.
  CollectiveCheck *Check = nullptr; // Null unless MESHRT_CHECK_COLLECTIVES.
  int64_t Collectives = 0;
  uint8_t SupportedOps[kNumDTypes] = {}; // Copy of the context's table.
  // Cold fields.
  Context &Ctx;
  Mesh &TheMesh;
  GroupPosition Pos;
  bool Member = true;
  meshrt_backend Kind;
  std::vector<int64_t> Members;
  std::string Label;
  std::string TraceGroup; // " group=0,1,2,3" when tracing.
  uint64_t CheckId = 0;   // CollectiveCheck::commId(Label) when checking.
  std::shared_ptr<BackendComm> Impl;
};

/// The backends a mesh declaration asks for. MESHRT_BACKEND_AUTO means the
/// default: the context's for `Mesh`, the mesh's for an entry of `Axes`.
struct MeshBackends {
  /// The mesh's backend: what a group gets whose axes were given different
  /// backends, or none.
  meshrt_backend Mesh = MESHRT_BACKEND_AUTO;
  /// One per axis, or empty (every axis on the mesh's backend).
  std::vector<meshrt_backend> Axes;
};

/// A declared mesh: its name, resolved layout, axis names, backends, the
/// aliases that flatten() added, and the handles requested on it.
class Mesh final : public Describable {
public:
  /// Used by Context::declareMesh only. `Ranks` are the world ranks at the
  /// row-major positions (empty: 0, 1, ..., the world). `Backends` are
  /// resolved (no AUTO, one per axis). A `Local` mesh was made on this rank
  /// alone (DeviceMesh::from_group of one group): it was not compared across
  /// ranks, and no new communicator can be made on it.
  Mesh(Context &Ctx, std::string Name, std::vector<int64_t> Declared,
       std::vector<int64_t> Resolved, std::vector<std::string> AxisNames,
       std::vector<int64_t> Ranks, MeshBackends Backends, bool Local);
  ~Mesh() override;

  /// "mesh 'm' of shape (2, 4) axes (replicate, shard)".
  std::string describe() const override;

  /// The context that owns the mesh.
  Context &context() const { return Ctx; }
  /// The mesh name.
  const std::string &name() const { return Name; }
  /// Sizes as declared (-1 for dynamic).
  const std::vector<int64_t> &declaredShape() const { return Declared; }
  /// The resolved layout.
  const MeshLayout &layout() const { return Layout; }
  /// Axis names.
  const std::vector<std::string> &axisNames() const { return AxisNames; }
  /// This process's coordinates (empty if it is not in the mesh).
  const std::vector<int64_t> &coordinates() const { return Coords; }
  /// True if this process is in the mesh.
  bool isMember() const { return MyIndex >= 0; }
  /// This process's row-major position in the mesh, -1 if not in it.
  int64_t myIndex() const { return MyIndex; }
  /// The world ranks at the row-major positions.
  const std::vector<int64_t> &ranks() const { return Ranks; }
  /// The position of world rank `R`, -1 if it is not in the mesh.
  int64_t indexOf(int64_t R) const;
  /// True if declared over an explicit rank array.
  bool hasExplicitRanks() const { return Explicit; }
  /// See the constructor.
  bool isLocal() const { return Local; }
  /// The mesh's backend and each axis's (resolved).
  const MeshBackends &backends() const { return Backends; }
  /// The backend of the group along `Axes` (or of the layout `Modes`): the
  /// one every mesh axis it spans was given, else (axes on different
  /// backends, or a group of one) the mesh's.
  meshrt_backend backendOf(const std::vector<int64_t> &Axes) const;
  meshrt_backend backendOf(const std::vector<LayoutMode> &Modes) const;
  /// "rank 5 is not in mesh 'm' (world ranks 0, 1, 2, 3)" for messages.
  std::string notMemberMessage(int64_t WorldRank) const;

  /// Index of the axis called `Name`; throws MESHRT_ERROR_UNKNOWN_AXIS with
  /// the list of valid names.
  int64_t axisIndex(std::string_view Name) const;
  /// The mesh axes `Name` stands for: one axis, or the axes an alias
  /// (flatten) covers. Throws like axisIndex, and MESHRT_ERROR_UNSUPPORTED
  /// for an alias over parts of axes (made by flatten after unflatten).
  std::vector<int64_t> resolveName(std::string_view Name) const;
  /// True if `Name` is an alias made by addAlias.
  bool isAlias(std::string_view Name) const;
  /// Names `Axes` (distinct, checked) as `Name`. Adding the same alias again
  /// is a no-op; a clash with an axis or another alias throws.
  void addAlias(const std::string &Name, const std::vector<int64_t> &Axes);
  /// Names the layout `Modes` as `Name`; `Axes` are the whole axes it is
  /// made of, if it is (else `Whole` is false). Same rules as above.
  void addAlias(const std::string &Name, const std::vector<LayoutMode> &Modes,
                const std::vector<int64_t> &Axes, bool Whole);
  /// The alias `Name` (modes, whole axes, and whether they are whole), or
  /// null.
  struct Alias {
    std::string Name;
    std::vector<LayoutMode> Modes;
    std::vector<int64_t> Axes;
    bool Whole = true;
  };
  const Alias *findAlias(std::string_view Name) const;
  /// "replicate, shard" plus the aliases.
  std::string validNames() const;

private:
  friend class Context;
  /// A handle requested on this mesh: by axes (Packed, NumAxes) or by modes.
  struct CachedComm {
    uint64_t Packed;
    size_t NumAxes;
    bool ByModes;
    std::vector<LayoutMode> Modes;
    Comm *Handle;                // Owned below, or another mesh's handle.
    std::unique_ptr<Comm> Owned; // Null for a handle seeded by from_group.
  };
  Context &Ctx;
  std::string Name;
  std::vector<int64_t> Declared;
  MeshLayout Layout;
  std::vector<std::string> AxisNames;
  std::vector<int64_t> Ranks;
  std::vector<int64_t> IndexOf; // World rank -> position, -1 if none.
  int64_t MyIndex = -1;
  bool Explicit = false;
  bool Local = false;
  MeshBackends Backends;
  std::vector<int64_t> Coords;
  std::vector<Alias> Aliases;
  std::vector<CachedComm> Comms;
};

/// Where this process sits among the groups of a layout over a mesh, and
/// the grouping of the whole world (see Context::getComm).
struct Grouping {
  /// Group id (the split color; -1 outside the mesh) and rank in group.
  GroupPosition Pos;
  bool Member = false;
  /// World ranks of this process's group, in group order.
  std::vector<int64_t> Members;
  /// For every world rank: its group id (numbered by first appearance, -1
  /// outside the mesh) and its rank in the group. Two layouts with the same
  /// key give every rank the same group and rank in it: one communicator.
  std::vector<int64_t> Key;
};

/// The grouping along `Modes` (outermost first) of a mesh with rank array
/// `Ranks` (world ranks at row-major positions; `IndexOf` is its inverse over
/// the world), for world rank `Me` of a world of `WorldSize`.
/// "0, 1, 2" (at most `Most` ranks, then "...").
std::string joinRanks(const std::vector<int64_t> &Ranks, size_t Most = 16);

/// A description for the watchdog while nothing better exists yet.
class TextDescribable final : public Describable {
public:
  explicit TextDescribable(std::string Text) : Text(std::move(Text)) {}
  std::string describe() const override { return Text; }

private:
  std::string Text;
};

Grouping computeGrouping(const std::vector<int64_t> &Ranks,
                         const std::vector<int64_t> &IndexOf,
                         const std::vector<LayoutMode> &Modes,
                         int64_t WorldSize, int64_t Me);

/// One instance of the runtime.
class Context : public std::enable_shared_from_this<Context> {
public:
  /// Starts MPI if needed and the backend chosen by `Requested`
  /// (MESHRT_BACKEND_AUTO reads MESHRT_BACKEND). Collective over
  /// MPI_COMM_WORLD. Throws meshrt::Error.
  static std::shared_ptr<Context> create(meshrt_backend Requested);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// Frees communicators and, for the last context, MPI if the runtime
  /// started it. Collective. Idempotent.
  void finalize();
  /// True once finalize() ran.
  bool finalized() const { return Finalized; }
  /// Throws MESHRT_ERROR_NOT_INITIALIZED if finalized.
  void checkAlive(const char *What) const;

  /// The default backend's kind: the one chosen at start-up.
  meshrt_backend backendKind() const { return Default; }
  /// "mpi", "nccl" or "gloo".
  const char *backendName() const { return backendKindName(Default); }
  /// True if backend `Kind` runs (the default, or another one a mesh asked
  /// for) and the context is not finalized.
  bool hasBackend(meshrt_backend Kind) const;
  /// This process's world rank.
  int64_t worldRank() const { return WorldRank; }
  /// Number of processes.
  int64_t worldSize() const { return WorldSize; }
  /// The watchdog.
  Watchdog &watchdog() { return *Dog; }
  /// The collective trace (MESHRT_TRACE), or null.
  CollectiveTrace *trace() const { return Trace; }
  /// See meshrt_stream_synchronize: the backend's wait, under the watchdog.
  void synchronizeStream(void *Stream, const char *Op);

  /// Declares a mesh (see meshrt_mesh_declare and, with `Ranks`,
  /// meshrt_mesh_declare_ranks; with `Backends`, meshrt_mesh_declare_
  /// backends). Collective unless the same declaration exists already; the
  /// backends are part of the declaration compared across ranks.
  /// `LocalCheck` is an error found by the caller on this rank: it fails the
  /// declaration on every rank.
  Mesh &declareMesh(const std::string &Name, const std::vector<int64_t> &Sizes,
                    const std::vector<std::string> &AxisNames,
                    const std::vector<int64_t> *Ranks = nullptr,
                    const std::optional<Error> &LocalCheck = std::nullopt,
                    const MeshBackends &Backends = {});
  /// A mesh made on this rank alone, not compared (see Mesh::isLocal), on
  /// backend `Kind`.
  Mesh &localMesh(const std::string &Name, const std::vector<int64_t> &Sizes,
                  const std::vector<std::string> &AxisNames,
                  const std::vector<int64_t> &Ranks, meshrt_backend Kind);
  /// The mesh called `Name`, or null.
  Mesh *findMesh(std::string_view Name);
  /// A name no mesh of this context has yet ("mesh0", "mesh1", ...): the same
  /// on every rank as long as ranks declare the same meshes.
  std::string freshMeshName();

  /// The handle for (M, Axes): cached per mesh; the backend communicator is
  /// shared by every request with the same grouping of the world on the
  /// same backend (Mesh::backendOf; the backend's world itself serves the
  /// groups that are the world in world order). Creating one is collective
  /// over the world, members of M or not; so is starting a backend other
  /// than the default, which the first group on it does.
  Comm &getComm(Mesh &M, const std::vector<int64_t> &Axes);
  /// The same for a layout `Modes` over M's rank array (dimensions made by
  /// unflatten); `Label` names it ("mesh 'm' dims [dp, tp]").
  Comm &getComm(Mesh &M, const std::vector<LayoutMode> &Modes,
                const std::string &Label);
  /// Makes `Existing` (a handle of another mesh) the handle of `Axes` on the
  /// local or freshly declared mesh M (DeviceMesh::from_group).
  void seedComm(Mesh &M, const std::vector<int64_t> &Axes, Comm &Existing);

  /// meshrt_send / meshrt_recv on the world communicator.
  void send(const void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag);
  void recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag);

  /// Counters.
  meshrt_stats stats() const;
  /// Backend `Kind` (started; see hasBackend), for its reduction check.
  const Backend &backend(meshrt_backend Kind) const;

private:
  /// A backend of the context, its world communicator, and the reductions
  /// it runs (bit R of entry T: reduction R on dtype T), filled when it
  /// starts and copied into every handle on it.
  struct BackendSlot {
    std::unique_ptr<Backend> Impl;
    std::shared_ptr<BackendComm> World;
    uint8_t SupportedOps[kNumDTypes] = {};
  };
  /// One slot per meshrt_backend value (AUTO unused).
  static constexpr int kNumBackendKinds = 4;

  Context() = default;
  /// Starts the context: MPI, the control communicator, the watchdog, the
  /// backend and its world communicator. Collective over MPI_COMM_WORLD.
  void start(meshrt_backend Requested);
  /// Records this process's world rank and size, starts the watchdog with
  /// `Timeout` and duplicates MPI_COMM_WORLD into the control communicator.
  void startControl(double Timeout, const Describable &Where);
  /// Agrees across ranks that every rank started, chose backend `Kind` and
  /// set MESHRT_CHECK_COLLECTIVES alike (`Check`); throws `LocalFailure`
  /// (this rank's own error) first, then the errors seen elsewhere.
  /// Collective over the control communicator.
  void agreeOnStart(meshrt_backend Kind, bool Check,
                    const std::optional<Error> &LocalFailure,
                    const Describable &Where);
  /// With MESHRT_CHECK_COLLECTIVES: the check communicator of the world.
  void startChecks(const std::vector<int64_t> &WorldKey,
                   const Describable &Where);
  /// Creates the backend of kind `Kind` and its world communicator, and
  /// registers that world as the communicator of the world's grouping on
  /// it. Collective over the control communicator; a failure on any rank
  /// fails it on every rank (see agreeOrThrow).
  void startBackend(meshrt_backend Kind, const Describable &Where);
  /// Backend `Kind`, started on first use: the first group of a mesh that
  /// asks for a backend other than the default starts it (collective; a
  /// backend that cannot start on some rank, e.g. NCCL without its
  /// libraries or a GPU, fails on every rank with that rank's reason).
  /// Called with Mutex held.
  BackendSlot &startedBackend(meshrt_backend Kind, const Comm &For);
  /// Throws, on every rank, the error of the lowest rank whose `Local` is
  /// set, prefixed with `What` and that rank's number (its status too).
  /// Collective over the control communicator.
  void agreeOrThrow(const std::optional<Error> &Local, const std::string &What,
                    const Describable &Where);

  /// The mesh already declared as `Name` if its shape and axis names are the
  /// same, null if there is none; throws if it was declared differently.
  /// Called with Mutex held.
  Mesh *findRedeclaration(const std::string &Name,
                          const std::vector<int64_t> &Sizes,
                          const std::vector<std::string> &AxisNames,
                          const std::vector<int64_t> &Ranks,
                          const MeshBackends &Backends);
  /// Compares the declaration (resolved to `Resolved` and `Backends`)
  /// across ranks with one digest allreduce; throws `LocalFailure` first,
  /// then a mismatch or a failure seen elsewhere. Collective. Called with
  /// Mutex held.
  void agreeOnDeclaration(const std::string &Name,
                          const std::vector<int64_t> &Sizes,
                          const std::vector<int64_t> &Resolved,
                          const std::vector<std::string> &AxisNames,
                          const std::vector<int64_t> &Ranks,
                          const MeshBackends &Backends,
                          const std::optional<Error> &LocalFailure);
  /// Finds the first rank whose declaration digest differs from rank 0's
  /// and throws an error quoting both declarations (`BackendsText`: this
  /// rank's backends, see backendsText). Collective.
  [[noreturn]] void reportDeclarationMismatch(
      const std::string &Name, const std::vector<int64_t> &Sizes,
      const std::vector<std::string> &AxisNames,
      const std::vector<int64_t> &Ranks, const std::string &BackendsText,
      uint64_t Digest, const Describable &Where);

  /// The handle for layout `Modes` of M on backend `Kind` (cached by the
  /// caller).
  std::unique_ptr<Comm> makeComm(Mesh &M, const std::vector<LayoutMode> &Modes,
                                 meshrt_backend Kind, std::string Label);
  /// The communicator of grouping `G` on `Slot` (For.backend()): a split of
  /// that backend's world the first time, null outside the mesh. When
  /// checking, the grouping's check communicator (one per grouping, whatever
  /// the backend) goes to `Checker`.
  std::shared_ptr<BackendComm> backendCommFor(const Grouping &G,
                                              const Comm &For,
                                              BackendSlot &Slot,
                                              CollectiveCheck *&Checker);
  /// Checks a point-to-point call; returns the byte count.
  void checkPointToPoint(const char *Op, const void *Buf, int64_t Count,
                         meshrt_dtype T, int64_t Peer, int64_t Tag) const;
  void printStats() const;
  /// MESHRT_DEBUG=INFO: this rank's start-up line.
  void printStartLine() const;

  /// A new backend of kind `Kind` (MPI, NCCL or gloo). Collective.
  std::unique_ptr<Backend> createBackend(meshrt_backend Kind);

  std::mutex Mutex;
  /// The world's control group (ControlPlane.h); null once finalized.
  std::unique_ptr<ControlGroup> Control;
  /// MESHRT_TIMEOUT_S.
  double Timeout = 600;
  /// MESHRT_DEBUG.
  DebugLevel Debug = DebugLevel::Warn;
  int64_t WorldRank = 0;
  int64_t WorldSize = 1;
  bool Finalized = false;
  bool Counted = false; // Counted as live by startMpi (see finalize).
  bool StatsOnFinalize = false;
  meshrt_backend Default = MESHRT_BACKEND_MPI;
  BackendSlot Backends[kNumBackendKinds];
  std::unique_ptr<Watchdog> Dog;
  CollectiveTrace *Trace = nullptr; // Process-wide, not owned.
  // Communicators by (backend, grouping key): a grouping has one
  // communicator per backend asked for it.
  std::vector<int64_t> WorldKey; // The grouping of the world in world order.
  std::map<std::pair<meshrt_backend, std::vector<int64_t>>,
           std::shared_ptr<BackendComm>>
      Shared;
  // MESHRT_CHECK_COLLECTIVES: one check communicator per grouping (null
  // outside the mesh).
  bool CheckCollectives = false;
  CollectiveCheck *WorldCheck = nullptr;
  std::map<std::vector<int64_t>, std::unique_ptr<CollectiveCheck>> Checks;
  std::vector<std::unique_ptr<Mesh>> Meshes;
  int64_t NextMeshName = 0;
  meshrt_stats Stats{};
};

inline void Comm::checkReduction(const char *Op, meshrt_dtype T,
                                 meshrt_reduce_op R) const {
  if (__builtin_expect(unsigned(R) >= unsigned(kNumReduceOps) ||
                           !((SupportedOps[T] >> R) & 1u),
                       0))
    checkReductionSlow(Op, T, R);
}

/// The default context (null if none): shared by the C ABI and the C++ API.
std::shared_ptr<Context> defaultContext();
/// Returns the default context, creating it with `Requested` if there is none
/// (then it lives until releaseDefaultContext). Increments the
/// init count if `CountInit`.
std::shared_ptr<Context> acquireDefaultContext(meshrt_backend Requested,
                                               bool CountInit);
/// Decrements the init count; finalizes the default context at zero.
void releaseDefaultContext();

/// The job's CPU backend (MESHRT_BACKEND_HOST): MPI or gloo.
meshrt_backend hostBackendKind();

/// Reads MESHRT_* environment variables.
bool envFlag(const char *Name);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_CONTEXT_H
