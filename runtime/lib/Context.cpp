//===- Context.cpp - The context: start-up, backends, finalization --------===//
//
// Start-up (backend choice agreed across ranks, world communicator,
// watchdog), the backends, statistics, finalization, point-to-point
// messages, and the default context shared by the C ABI and the C++ API.
// Meshes and their declaration are in Mesh.cpp, the communicator cache in
// CommCache.cpp; joining the job is Bootstrap.cpp's.
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
      // A host program (MESHRT_BACKEND_HOST) runs on whichever CPU backend
      // the job started: a second module of one loads beside the first.
      meshrt_backend Running = P.Default->backendKind();
      bool Host =
          Requested == MESHRT_BACKEND_HOST &&
          (Running == MESHRT_BACKEND_MPI || Running == MESHRT_BACKEND_GLOO);
      if (Requested != MESHRT_BACKEND_AUTO && !Host && Running != Requested)
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
