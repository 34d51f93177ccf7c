//===- Context.cpp - Meshes, communicator cache and start-up --------------===//
//
// Start-up (MPI, backend choice agreed across ranks, world communicator,
// watchdog), mesh declaration with a cross-rank digest check, the
// communicator cache (one split per distinct grouping, the world reused for
// full-mesh groups in mesh order), statistics, finalization, and the default
// context shared by the C ABI and the C++ API.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Abort.h"
#include "Bootstrap.h"
#include "Debug.h"
#include "Gpu.h"
#include "GpuGemm.h"
#include "MpiControl.h"
#include "Store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <unordered_set>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <unistd.h>

using namespace meshrt;
using namespace meshrt::detail;

BackendComm::~BackendComm() = default;
Backend::~Backend() = default;
void Backend::checkReduction(meshrt_dtype, meshrt_reduce_op) const {}

void Backend::synchronizeStream(void *, const char *Op) {
  throw Error(MESHRT_ERROR_UNSUPPORTED,
              std::string(Op) + ": the " + name() +
                  " backend has no streams (stream-ordered work needs the "
                  "NCCL backend)");
}

void meshrt::detail::mpiFail(int Code, const char *What) {
  char Buf[MPI_MAX_ERROR_STRING];
  int Len = 0;
  MPI_Error_string(Code, Buf, &Len);
  throw Error(MESHRT_ERROR_BACKEND,
              std::string(What) + " failed: " + std::string(Buf, Len));
}

bool meshrt::detail::envFlag(const char *Name) {
  const char *V = std::getenv(Name);
  if (!V)
    return false;
  return !strcasecmp(V, "1") || !strcasecmp(V, "true") ||
         !strcasecmp(V, "yes") || !strcasecmp(V, "on");
}

//===----------------------------------------------------------------------===//
// The default context (process-wide; joining the job is Bootstrap.cpp's).
//===----------------------------------------------------------------------===//

namespace {
struct ProcessState {
  std::mutex Mutex;
  // The default context, shared by the C ABI and the C++ API.
  std::shared_ptr<Context> Default;
  int DefaultInits = 0;
  // Finalized default contexts are kept, so that stale C handles report
  // "finalized" instead of touching freed memory.
  std::vector<std::shared_ptr<Context>> Retired;
};

ProcessState &processState() {
  // Leaked on purpose: it must outlive every static destructor and atexit.
  static ProcessState *S = new ProcessState;
  return *S;
}

const char *const DTypeNames[kNumDTypes] = {"f16", "bf16", "f32", "f64",
                                            "i8",  "i32",  "i64", "u8"};
const char *const RedOpNames[kNumReduceOps] = {"sum", "prod", "min", "max",
                                               "avg", "band", "bor", "bxor"};

std::string joinNames(const std::vector<std::string> &Names) {
  std::string S;
  for (size_t I = 0; I < Names.size(); ++I)
    S += (I ? ", " : "") + Names[I];
  return S;
}

std::string joinRanks(const std::vector<int64_t> &Ranks, size_t Most = 16) {
  std::string S;
  for (size_t I = 0; I < Ranks.size() && I < Most; ++I)
    S += (I ? ", " : "") + std::to_string(Ranks[I]);
  if (Ranks.size() > Most)
    S += ", ...";
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

/// A description for the watchdog while nothing better exists yet.
class TextDescribable final : public Describable {
public:
  explicit TextDescribable(std::string Text) : Text(std::move(Text)) {}
  std::string describe() const override { return Text; }

private:
  std::string Text;
};

/// Why the NCCL backend cannot start on this rank (it was not built, its
/// libraries do not load, or no device is visible), or nothing.
std::optional<Error> ncclMissing() {
  if (!ncclBackendBuilt())
    return Error(MESHRT_ERROR_UNSUPPORTED,
                 "this meshrt was built without the NCCL backend (CUDA and "
                 "NCCL were not found when it was configured)");
  std::string Why;
  if (!cudaDeviceVisible(Why))
    return Error(MESHRT_ERROR_BACKEND, "no CUDA device is visible: " + Why);
  return std::nullopt;
}

/// Why the gloo backend cannot start on this rank, or nothing.
std::optional<Error> glooMissing() {
  std::string Why;
  if (!glooAvailable(Why))
    return Error(MESHRT_ERROR_BACKEND, Why);
  return std::nullopt;
}

meshrt_backend chooseBackend(meshrt_backend Requested) {
  std::string Source = "meshrt_init";
  if (Requested == MESHRT_BACKEND_AUTO || Requested == MESHRT_BACKEND_HOST) {
    const char *E = std::getenv("MESHRT_BACKEND");
    if (E && *E) {
      if (!strcasecmp(E, "mpi"))
        Requested = MESHRT_BACKEND_MPI;
      else if (!strcasecmp(E, "nccl"))
        Requested = MESHRT_BACKEND_NCCL;
      else if (!strcasecmp(E, "gloo"))
        Requested = MESHRT_BACKEND_GLOO;
      else if (!strcasecmp(E, "host"))
        Requested = MESHRT_BACKEND_HOST;
      else if (strcasecmp(E, "auto"))
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    std::string("MESHRT_BACKEND='") + E +
                        "' is not one of auto, host, mpi, nccl, gloo");
      Source = std::string("MESHRT_BACKEND=") + E;
    }
  } else if (Requested != MESHRT_BACKEND_MPI &&
             Requested != MESHRT_BACKEND_NCCL &&
             Requested != MESHRT_BACKEND_GLOO) {
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "invalid backend " + std::to_string(int(Requested)));
  }
  if (Requested == MESHRT_BACKEND_HOST)
    return hostBackendKind();
  if (Requested == MESHRT_BACKEND_MPI || Requested == MESHRT_BACKEND_GLOO)
    return Requested;
  if (Requested == MESHRT_BACKEND_NCCL) {
    if (std::optional<Error> E = ncclMissing())
      throw Error(E->status(),
                  Source + " asks for the NCCL backend, but " + E->what());
    return MESHRT_BACKEND_NCCL;
  }
  std::string Why;
  return cudaDeviceVisible(Why) ? MESHRT_BACKEND_NCCL : hostBackendKind();
}

double timeoutFromEnv() {
  const char *E = std::getenv("MESHRT_TIMEOUT_S");
  if (!E || !*E)
    return 600.0;
  char *End = nullptr;
  double V = std::strtod(E, &End);
  if (End == E || *End != '\0' || V < 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string("MESHRT_TIMEOUT_S='") + E +
                    "' is not a number of seconds >= 0 (0 disables the "
                    "timeout)");
  return V;
}
} // namespace

const char *meshrt::detail::dtypeName(meshrt_dtype T) {
  return unsigned(T) < unsigned(kNumDTypes) ? DTypeNames[T] : "?";
}
const char *meshrt::detail::backendKindName(meshrt_backend B) {
  switch (B) {
  case MESHRT_BACKEND_AUTO:
    return "auto";
  case MESHRT_BACKEND_MPI:
    return "mpi";
  case MESHRT_BACKEND_NCCL:
    return "nccl";
  case MESHRT_BACKEND_GLOO:
    return "gloo";
  case MESHRT_BACKEND_HOST:
    return "host";
  }
  return "?";
}
const char *meshrt::detail::reduceOpName(meshrt_reduce_op Op) {
  return unsigned(Op) < unsigned(kNumReduceOps) ? RedOpNames[Op] : "?";
}
bool meshrt::detail::isIntegerDType(meshrt_dtype T) {
  return T == MESHRT_I8 || T == MESHRT_I32 || T == MESHRT_I64 || T == MESHRT_U8;
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
// Context
//===----------------------------------------------------------------------===//

std::shared_ptr<Context> Context::create(meshrt_backend Requested) {
  std::shared_ptr<Context> C(new Context());
  C->start(Requested);
  return C;
}

void Context::start(meshrt_backend Requested) {
  // Local choices first; then one allreduce agrees on them, so that a rank
  // that fails here cannot leave the others waiting.
  std::optional<Error> LocalFailure;
  meshrt_backend Kind = MESHRT_BACKEND_MPI;
  double Timeout = 600;
  bool Check = envFlag("MESHRT_CHECK_COLLECTIVES");
  try {
    Timeout = timeoutFromEnv();
  } catch (const Error &E) {
    LocalFailure = E;
  }
  this->Timeout = Timeout;
  // Joining the job is this rank's alone (MPI_Init, or the store's
  // rendezvous, which names the ranks that do not come).
  Control = joinJob(Timeout);
  Counted = true;
  try {
    Trace = CollectiveTrace::open(Control->rank());
    Debug = debugLevel();
    Check = Check || Debug >= DebugLevel::Detail;
    Kind = chooseBackend(Requested);
  } catch (const Error &E) {
    if (!LocalFailure)
      LocalFailure = E;
  }
  TextDescribable Where("the world (runtime start-up)");
  startControl(Timeout, Where);
  agreeOnStart(Kind, Check, LocalFailure, Where);
  // A backend's world serves every grouping that is the world in world
  // order.
  for (int64_t R = 0; R < WorldSize; ++R)
    WorldKey.insert(WorldKey.end(), {0, R});
  Default = Kind;
  startBackend(Kind, Where);
  if (Check)
    startChecks(WorldKey, Where);
  if (Debug >= DebugLevel::Info)
    printStartLine();
}

void Context::printStartLine() const {
  const JobInfo &J = jobInfo();
  std::string Local = "?";
  for (const char *V : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK",
                        "SLURM_LOCALID", "MPI_LOCALRANKID"})
    if (const char *E = std::getenv(V); E && *E) {
      Local = E;
      break;
    }
  const Backend &B = *Backends[Default].Impl;
  char Secs[32];
  std::snprintf(Secs, sizeof(Secs), "%g s", Timeout);
  int32_t Major = 0, Minor = 0, Patch = 0;
  meshrt_get_version(&Major, &Minor, &Patch);
  std::string Method = J.Launch.Method == InitMethod::Mpi ? "mpi"
                       : J.Launch.Method == InitMethod::Single
                           ? "mpi (singleton)"
                       : J.Launch.Method == InitMethod::Env ? "env"
                       : J.Launch.Method == InitMethod::Tcp ? "tcp"
                                                            : "file";
  debugWrite(
      "meshrt: INFO: rank " + std::to_string(WorldRank) + " of " +
          std::to_string(WorldSize) + ", local rank " + Local + ": meshrt " +
          std::to_string(Major) + "." + std::to_string(Minor) + "." +
          std::to_string(Patch) + ", launcher " + J.Launch.Launcher +
          ", init method " + Method + " (" + J.Launch.Why + "), store " +
          (J.StoreAddress.empty() ? std::string("none") : J.StoreAddress) +
          ", backend " + B.name() + " (" + B.version() + "), device " +
          B.device() + ", timeout " + Secs +
          (CheckCollectives ? ", collective check on" : ""),
      WorldRank);
}

void Context::startChecks(const std::vector<int64_t> &WorldKey,
                          const Describable &Where) {
  std::unique_ptr<ControlGroup> C;
  {
    WatchScope W(*Dog, "start-up", &Where);
    C = Control->duplicate("MESHRT_CHECK_COLLECTIVES");
  }
  auto Checker = std::make_unique<CollectiveCheck>(std::move(C));
  WorldCheck = Checker.get();
  Checks[WorldKey] = std::move(Checker);
  CheckCollectives = true;
}

void Context::startControl(double Timeout, const Describable &Where) {
  WorldRank = Control->rank();
  WorldSize = Control->size();
  StatsOnFinalize = envFlag("MESHRT_STATS");
  // The watchdog covers start-up too: a rank that never arrives (or arrives
  // at something else) aborts the job instead of hanging it.
  Dog = std::make_unique<Watchdog>(Timeout, WorldRank);
  (void)Where;
}

void Context::agreeOnStart(meshrt_backend Kind, bool Check,
                           const std::optional<Error> &LocalFailure,
                           const Describable &Where) {
  // The max of x and of -x give max and -min: equal iff all agree.
  int64_t Mine[5] = {LocalFailure ? 1 : 0, int64_t(Kind), -int64_t(Kind),
                     int64_t(Check), -int64_t(Check)};
  int64_t All[5];
  std::copy(Mine, Mine + 5, All);
  {
    WatchScope W(*Dog, "start-up", &Where);
    Control->allReduce(All, 5, /*Max=*/true, "start-up");
  }
  if (LocalFailure)
    throw *LocalFailure;
  if (All[0])
    throw Error(MESHRT_ERROR_BACKEND,
                "another rank could not start the runtime (see its message)");
  if (All[1] != -All[2])
    throw Error(MESHRT_ERROR_BACKEND,
                "ranks chose different backends (some mpi, some nccl); with "
                "MESHRT_BACKEND=auto either every rank or no rank must see a "
                "CUDA device; set MESHRT_BACKEND explicitly");
  if (All[3] != -All[4])
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string("MESHRT_CHECK_COLLECTIVES is set on some ranks and "
                            "not on others (on this rank: ") +
                    (Check ? "on" : "off") +
                    "); the check is collective: set it the same way for "
                    "every rank");
}

void Context::synchronizeStream(void *Stream, const char *Op) {
  checkAlive("synchronize a stream");
  WatchScope W(*Dog, Op, nullptr);
  // NCCL, the default or not, is the backend with work on streams.
  meshrt_backend Kind =
      hasBackend(MESHRT_BACKEND_NCCL) ? MESHRT_BACKEND_NCCL : Default;
  Backends[Kind].Impl->synchronizeStream(Stream, Op);
}

/// "cannot start the nccl backend for mesh 'm' axes [tp]".
static std::string backendStartFailure(meshrt_backend Kind,
                                       const Describable &Where) {
  return std::string("cannot start the ") + backendKindName(Kind) +
         " backend for " + Where.describe();
}

void Context::agreeOrThrow(const std::optional<Error> &Local,
                           const std::string &What, const Describable &Where) {
  int64_t Mine = Local ? WorldRank : WorldSize, First = WorldSize;
  {
    WatchScope W(*Dog, "start-up", &Where);
    First = Mine;
    Control->allReduce(&First, 1, /*Max=*/false, "start-up");
  }
  if (First == WorldSize)
    return;
  int64_t Status = Local ? int64_t(Local->status()) : 0;
  Control->broadcast(&Status, sizeof(Status), First, "start-up");
  std::string Msg =
      Control->broadcastString(Local ? Local->what() : "", First, "start-up");
  throw Error(meshrt_status(Status),
              What + ": on rank " + std::to_string(First) + ": " + Msg);
}

std::unique_ptr<Backend> Context::createBackend(meshrt_backend Kind) {
  if (Kind == MESHRT_BACKEND_NCCL)
    return createNcclBackend(*Control);
  if (Kind == MESHRT_BACKEND_GLOO) {
    std::shared_ptr<StoreClient> Store = jobStoreOver(*Control);
    return createGlooBackend(*Store, freshStorePrefix("gloo"), WorldRank,
                             WorldSize, Timeout);
  }
  MPI_Comm C = mpiCommOf(*Control);
  if (C == MPI_COMM_NULL)
    throw Error(MESHRT_ERROR_BACKEND,
                "the mpi backend needs a job that an MPI launcher started "
                "(mpirun, mpiexec, srun with PMI), but this one was started "
                "by " +
                    jobInfo().Launch.describe() +
                    "; its CPU backend is gloo (MESHRT_BACKEND=gloo or host, "
                    "or device 'cpu')");
  return createMpiBackend(C);
}

void Context::startBackend(meshrt_backend Kind, const Describable &Where) {
  BackendSlot &S = Backends[Kind];
  std::string What = backendStartFailure(Kind, Where);
  std::optional<Error> Local;
  // Each step that can fail on one rank alone is agreed on before the next
  // collective one, so that no rank waits for a rank that gave up.
  auto Step = [&](auto &&Body) {
    try {
      WatchScope W(*Dog, "start-up", &Where);
      Body();
    } catch (const Error &E) {
      Local = E;
    }
    agreeOrThrow(Local, What, Where);
  };
  std::unique_ptr<Backend> Impl;
  std::shared_ptr<BackendComm> World;
  Step([&] { Impl = createBackend(Kind); });
  Step([&] { World = Impl->createWorld(); });
  for (int T = 0; T < kNumDTypes; ++T)
    for (int R = 0; R < kNumReduceOps; ++R) {
      bool Bitwise = R == MESHRT_BAND || R == MESHRT_BOR || R == MESHRT_BXOR;
      if (Bitwise && !isIntegerDType(meshrt_dtype(T)))
        continue;
      try {
        Impl->checkReduction(meshrt_dtype(T), meshrt_reduce_op(R));
        S.SupportedOps[T] |= uint8_t(1u << R);
      } catch (const Error &) {
      }
    }
  S.Impl = std::move(Impl);
  S.World = World;
  Shared[{Kind, WorldKey}] = std::move(World);
  ++Stats.communicators;
}

Context::BackendSlot &Context::startedBackend(meshrt_backend Kind,
                                              const Comm &For) {
  BackendSlot &S = Backends[Kind];
  if (S.Impl)
    return S;
  // What this rank lacks (NCCL's libraries, a device) is agreed on first:
  // starting the backend is collective.
  TextDescribable Where(For.label());
  agreeOrThrow(Kind == MESHRT_BACKEND_NCCL   ? ncclMissing()
               : Kind == MESHRT_BACKEND_GLOO ? glooMissing()
                                             : std::nullopt,
               backendStartFailure(Kind, Where), Where);
  startBackend(Kind, Where);
  return S;
}

bool Context::hasBackend(meshrt_backend Kind) const {
  return !Finalized && unsigned(Kind) < unsigned(kNumBackendKinds) &&
         Backends[Kind].Impl;
}

const Backend &Context::backend(meshrt_backend Kind) const {
  if (!hasBackend(Kind))
    throw Error(MESHRT_ERROR_NOT_INITIALIZED, std::string("the ") +
                                                  backendKindName(Kind) +
                                                  " backend is not running");
  return *Backends[Kind].Impl;
}

Context::~Context() {
  try {
    finalize();
  } catch (...) {
  }
}

void Context::checkAlive(const char *What) const {
  if (Finalized)
    throw Error(MESHRT_ERROR_NOT_INITIALIZED,
                std::string("cannot ") + What + ": the runtime was finalized");
}

void Context::printStats() const {
  // The default backend, then any other that a mesh started.
  std::string Names = backendName();
  for (int K = 0; K < kNumBackendKinds; ++K)
    if (K != Default && Backends[K].Impl)
      Names += std::string("+") + backendKindName(meshrt_backend(K));
  std::fprintf(stderr,
               "meshrt: stats: backend=%s world_size=%lld meshes=%lld "
               "splits=%lld communicators=%lld comm_requests=%lld "
               "comm_reuses=%lld collectives=%lld stream_syncs=%lld "
               "gpu_gemm_plans=%lld\n",
               Names.c_str(), (long long)WorldSize, (long long)Stats.meshes,
               (long long)Stats.splits, (long long)Stats.communicators,
               (long long)Stats.comm_requests, (long long)Stats.comm_reuses,
               (long long)stats().collectives,
               (long long)stats().stream_synchronizations,
               (long long)detail::gpuGemmPlansMade());
  std::fflush(stderr);
}

void Context::finalize() {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (Finalized)
    return;
  Finalized = true;
  if (Counted)
    contextEnded();
  if (StatsOnFinalize && WorldRank == 0 && Backends[Default].World)
    printStats();
  // Handles stay (C and C++ objects may point at them) but lose their
  // communicator, so any later use reports "finalized".
  for (auto &M : Meshes)
    for (auto &C : M->Comms)
      C.Handle->detach();
  // Split communicators first; a slot's World holds the last reference to
  // its world, and the backend outlives its communicators.
  Shared.clear();
  for (BackendSlot &S : Backends)
    S.World.reset();
  WorldCheck = nullptr;
  Checks.clear();
  Stats.communicators = 0;
  if (Dog)
    Dog->stop();
  for (BackendSlot &S : Backends)
    S.Impl.reset();
  try {
    // The cuBLASLt workspace goes back first (into the kept buffers, freed
    // just below) and the plans' descriptors with it.
    detail::gpuGemmRelease();
  } catch (const Error &) {
    // As below: nothing left to use it.
  }
  try {
    detail::gpuReleaseKeptBuffers();
  } catch (const Error &) {
    // The driver failed while giving memory back at the end: nothing left
    // to use it, so it does not fail the finalize.
  }
  Control.reset();
}

meshrt_stats Context::stats() const {
  meshrt_stats S = Stats;
  for (auto &M : Meshes)
    for (auto &C : M->Comms)
      S.collectives += C.Handle->collectives();
  S.stream_synchronizations = gpuStreamSynchronizations();
  return S;
}

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

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

void Context::checkPointToPoint(const char *Op, const void *Buf, int64_t Count,
                                meshrt_dtype T, int64_t Peer,
                                int64_t Tag) const {
  checkAlive(Op);
  auto Fail = [&](const std::string &Msg) {
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(Op) + ": " + Msg);
  };
  int64_t Elem = dtypeSize(T), Bytes;
  if (Elem == 0)
    Fail("invalid dtype " + std::to_string(int(T)));
  if (Count < 0)
    Fail("negative count " + std::to_string(Count));
  if (Count > 0 && !Buf)
    Fail("null buffer");
  if (__builtin_mul_overflow(Count, Elem, &Bytes))
    Fail("count " + std::to_string(Count) + " overflows the buffer size");
  if (Peer < 0 || Peer >= WorldSize)
    Fail("peer " + std::to_string(Peer) +
         " is not a world rank (the world has " + std::to_string(WorldSize) +
         " process" + (WorldSize == 1 ? "" : "es") + ")");
  if (Peer == WorldRank)
    Fail(std::string("peer ") + std::to_string(Peer) +
         " is this process; a blocking " + Op + " to itself would wait for " +
         "itself");
  if (Tag < 0 || Tag > 32767)
    Fail("tag " + std::to_string(Tag) + " is not in [0, 32767]");
}

namespace {
/// "send of 4 x f32 from world rank 0 to world rank 3 (tag 0)".
class PointToPoint final : public Describable {
public:
  PointToPoint(const char *Op, int64_t From, int64_t To, int64_t Count,
               meshrt_dtype T, int64_t Tag)
      : Op(Op), From(From), To(To), Count(Count), T(T), Tag(Tag) {}
  std::string describe() const override {
    return std::string(Op) + " of " + std::to_string(Count) + " x " +
           dtypeName(T) + " from world rank " + std::to_string(From) +
           " to world rank " + std::to_string(To) + " (tag " +
           std::to_string(Tag) + ")";
  }

private:
  const char *Op;
  int64_t From, To, Count;
  meshrt_dtype T;
  int64_t Tag;
};
} // namespace

void Context::send(const void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
                   int64_t Tag) {
  checkPointToPoint("send", Buf, Count, T, Peer, Tag);
  if (Count == 0)
    return;
  PointToPoint Where("send", WorldRank, Peer, Count, T, Tag);
  WatchScope W(*Dog, "send", &Where);
  Backends[Default].World->send(Buf, Count, T, Peer, Tag);
}

void Context::recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
                   int64_t Tag) {
  checkPointToPoint("recv", Buf, Count, T, Peer, Tag);
  if (Count == 0)
    return;
  PointToPoint Where("recv", Peer, WorldRank, Count, T, Tag);
  WatchScope W(*Dog, "recv", &Where);
  Backends[Default].World->recv(Buf, Count, T, Peer, Tag);
}

//===----------------------------------------------------------------------===//
// Default context
//===----------------------------------------------------------------------===//

std::shared_ptr<Context> meshrt::detail::defaultContext() {
  ProcessState &P = processState();
  std::lock_guard<std::mutex> Lock(P.Mutex);
  return P.Default;
}

std::shared_ptr<Context>
meshrt::detail::acquireDefaultContext(meshrt_backend Requested,
                                      bool CountInit) {
  ProcessState &P = processState();
  {
    std::lock_guard<std::mutex> Lock(P.Mutex);
    if (P.Default) {
      if (Requested != MESHRT_BACKEND_AUTO &&
          P.Default->backendKind() != Requested)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    std::string("the runtime already runs on the ") +
                        P.Default->backendName() + " backend");
      if (CountInit)
        ++P.DefaultInits;
      return P.Default;
    }
  }
  // Create outside the lock: start() takes it too.
  std::shared_ptr<Context> C = Context::create(Requested);
  std::lock_guard<std::mutex> Lock(P.Mutex);
  P.Default = C;
  P.DefaultInits = CountInit ? 1 : 0;
  return C;
}

void meshrt::detail::releaseDefaultContext() {
  ProcessState &P = processState();
  std::shared_ptr<Context> C;
  {
    std::lock_guard<std::mutex> Lock(P.Mutex);
    if (!P.Default)
      return;
    if (P.DefaultInits > 1) {
      --P.DefaultInits;
      return;
    }
    C = P.Default;
    P.Retired.push_back(std::move(P.Default));
    P.DefaultInits = 0;
  }
  C->finalize();
}

//===----------------------------------------------------------------------===//
// Live handles
//===----------------------------------------------------------------------===//

namespace {
std::mutex &handlesMutex() {
  static std::mutex M;
  return M;
}
std::unordered_set<const void *> &liveHandles() {
  static auto *Live = new std::unordered_set<const void *>();
  return *Live;
}
/// Bumped whenever a handle goes: invalidates the per-thread memo of isLive.
std::atomic<uint64_t> &handlesGeneration() {
  static std::atomic<uint64_t> Generation{1};
  return Generation;
}
} // namespace

void meshrt::detail::handles::add(const void *P) {
  std::lock_guard<std::mutex> Lock(handlesMutex());
  liveHandles().insert(P);
}

void meshrt::detail::handles::remove(const void *P) {
  std::lock_guard<std::mutex> Lock(handlesMutex());
  liveHandles().erase(P);
  handlesGeneration().fetch_add(1, std::memory_order_release);
}

bool meshrt::detail::handles::isLive(const void *P) {
  // Collectives ask for the same communicator over and over: the handle this
  // thread last found live is taken without the lock and the lookup, until
  // a handle is removed.
  thread_local const void *LastLive = nullptr;
  thread_local uint64_t LastGeneration = 0;
  uint64_t Generation = handlesGeneration().load(std::memory_order_acquire);
  if (P == LastLive && Generation == LastGeneration)
    return true;
  std::lock_guard<std::mutex> Lock(handlesMutex());
  if (!liveHandles().count(P))
    return false;
  LastLive = P;
  LastGeneration = Generation;
  return true;
}
