//===- Bootstrap.cpp - How a process joins the job ------------------------===//
//
// See Bootstrap.h.
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"
#include "Abort.h"
#include "Backend.h"
#include "MpiControl.h"
#include "Store.h"
#include "StoreControl.h"

#include "meshrt/Error.h"

#include "MpiApi.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <unistd.h>

using namespace meshrt;
using namespace meshrt::detail;

ControlGroup::~ControlGroup() = default;

std::string ControlGroup::broadcastString(const std::string &S, int64_t Root,
                                          const char *What) {
  int64_t Len = int64_t(S.size());
  broadcast(&Len, sizeof(Len), Root, What);
  std::string Out = Rank == Root ? S : std::string(size_t(Len), '\0');
  if (Len > 0)
    broadcast(&Out[0], size_t(Len), Root, What);
  return Out;
}

namespace {

struct ProcessState {
  std::mutex Mutex;
  bool Joined = false;
  JobInfo Job;
  bool WeInitializedMpi = false;
  bool ExitHandlerRegistered = false;
  // The process that registered the handler: a forked child inherits the
  // handler but not the job, and must leave it alone.
  pid_t ExitHandlerPid = 0;
  // The group the exit fence runs on (a duplicate of the world).
  std::unique_ptr<ControlGroup> ExitGroup;
  // How long the barrier before the runtime's own MPI_Finalize, and rank
  // 0's wait for the others to leave the store, may take: MESHRT_TIMEOUT_S
  // of the last context.
  double ExitTimeout = 600;
  // Contexts started and not finalized. A process that exits while one is
  // live meets the others at the exit fence (see onProcessExit).
  int LiveContexts = 0;
  // Contexts made so far: each gets its own key prefix in the store.
  int64_t Contexts = 0;
  // Prefixes handed out by freshStorePrefix.
  int64_t Prefixes = 0;
  // Without MPI: the server (rank 0) and this rank's client.
  std::unique_ptr<StoreServer> Server;
  std::shared_ptr<StoreClient> Client;
  double StoreTimeout = 300;
  // The process is leaving the job: the abort watcher must not take the
  // store's going away for a failure.
  std::atomic<bool> Leaving{false};
};

ProcessState &processState() {
  // Leaked on purpose: it must outlive every static destructor and atexit.
  static ProcessState *S = new ProcessState;
  return *S;
}

/// How long a rank that exits with the runtime initialised waits for the
/// others at the exit fence: MESHRT_EXIT_TIMEOUT_S, default 5 s.
double exitBound() {
  const char *E = std::getenv("MESHRT_EXIT_TIMEOUT_S");
  if (E && *E) {
    char *End = nullptr;
    double V = std::strtod(E, &End);
    if (End && *End == '\0' && V >= 0)
      return V;
    writeStderr("meshrt: warning: MESHRT_EXIT_TIMEOUT_S='" + std::string(E) +
                "' is not a number of seconds; using 5\n");
  }
  return 5;
}

/// Seconds from `Name` (>= 0), else `Default`; throws naming the variable.
double secondsFromEnv(const char *Name, double Default) {
  const char *E = std::getenv(Name);
  if (!E || !*E)
    return Default;
  char *End = nullptr;
  double V = std::strtod(E, &End);
  if (End == E || *End != '\0' || V < 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Name) + "='" + E +
                    "' is not a number of seconds >= 0");
  return V;
}

/// How the process exits, for messages.
std::string exitHow(int Status) {
  return Status < 0 ? std::string("exit() or a return from main")
         : Status == 0
             ? std::string("exit(0) or a return from main")
             : "exit(" + std::to_string(Status) + ") or a return of " +
                   std::to_string(Status) + " from main";
}

/// A process that leaves with the runtime initialised while some rank did
/// not reach exit within `Bound` seconds: the others wait for it in their
/// next collective. Says so and aborts the job.
[[noreturn]] void abortOnEarlyExit(int Status, double Bound) {
  char Secs[64];
  std::snprintf(Secs, sizeof(Secs), "%g s", Bound);
  writeStderr("meshrt: rank " + std::to_string(processRank()) +
              ": error: the process is exiting (" + exitHow(Status) +
              ") while the runtime is initialized (meshrt_finalize or "
              "meshrt::finalize was not called); the other ranks would wait "
              "for it in their next collective, and not every rank reached "
              "exit within " +
              Secs + " (MESHRT_EXIT_TIMEOUT_S). Aborting the job.\n");
  abortJob(Status > 0 ? Status : 1);
}

/// The store's last duty at exit: the non-zero ranks say they leave; rank 0
/// (whose process serves the store) waits for them, at most ExitTimeout, so
/// that no rank loses the store while it still needs it.
void leaveStore(ProcessState &P) {
  P.Leaving = true;
  if (!P.Client)
    return;
  try {
    int64_t Others = P.Job.Size - 1;
    if (P.Job.Rank != 0) {
      if (P.Client->add("meshrt/left", 1) == Others)
        P.Client->set("meshrt/left/all", "");
      return;
    }
    if (Others > 0)
      P.Client->wait({"meshrt/left/all"}, P.ExitTimeout);
  } catch (const Error &E) {
    writeStderr("meshrt: rank " + std::to_string(P.Job.Rank) +
                ": warning: at exit, not every rank left the store: " +
                E.what() + "\n");
  }
  if (P.Job.Launch.Method == InitMethod::File && P.Job.Rank == 0)
    ::unlink(P.Job.Launch.File.c_str());
}

/// Runs when the process exits (exit() or a return from main; not _exit,
/// signals or crashes, which the launcher reports). `Status` is the exit
/// status. With the runtime still initialised, the ranks meet at a bounded
/// fence: if every rank got there (the program simply did not finalize, as
/// torch programs that skip destroy_process_group), the runtime finalizes
/// with a warning and the process exits with its own status; if a rank
/// does not arrive in time, the job is aborted, since the others would wait
/// for the exiting one.
void onProcessExit(int Status, void *) {
  ProcessState &P = processState();
  if (getpid() != P.ExitHandlerPid)
    return;
  int Live;
  {
    std::lock_guard<std::mutex> Lock(P.Mutex);
    Live = P.LiveContexts;
  }
  // MPI finalized by the program: every rank got there, nobody waits.
  if (P.Job.Mpi && !mpiUsable())
    return;
  if (Live > 0) {
    double Bound = exitBound();
    if (!P.ExitGroup->fence(Bound))
      abortOnEarlyExit(Status, Bound);
    if (processRank() == 0)
      writeStderr("meshrt: rank 0: warning: the process is exiting (" +
                  exitHow(Status) +
                  ") with the runtime initialized (meshrt_finalize or "
                  "meshrt::finalize was not called); every rank reached "
                  "exit, so the runtime finalizes here.\n");
  } else if (P.WeInitializedMpi) {
    // MPI_Finalize waits for every rank, and a job torn down while some
    // ranks wait inside it can crash or hang mpirun (Open MPI 4.1 with
    // PMIx): the ranks wait at the fence first, for at most
    // MESHRT_TIMEOUT_S.
    if (!P.ExitGroup->fence(P.ExitTimeout)) {
      char Secs[96];
      std::snprintf(Secs, sizeof(Secs), "%.1f s (MESHRT_TIMEOUT_S=%g)",
                    P.ExitTimeout, P.ExitTimeout);
      writeStderr("meshrt: rank " + std::to_string(processRank()) +
                  ": error: at exit, the other ranks did not reach "
                  "MPI_Finalize within " +
                  Secs +
                  "; a peer is stuck, dead, or still running. Aborting the "
                  "job.\n");
      abortJob(124);
    }
  }
  if (P.Job.Mpi) {
    P.ExitGroup.reset();
    if (P.WeInitializedMpi)
      MPI_Finalize();
    return;
  }
  leaveStore(P);
}

void registerExitHandler(ProcessState &P) {
  if (P.ExitHandlerRegistered)
    return;
#if defined(__GLIBC__)
  on_exit(onProcessExit, nullptr);
#else
  std::atexit([] { onProcessExit(-1, nullptr); });
#endif
  P.ExitHandlerRegistered = true;
  P.ExitHandlerPid = getpid();
}

/// Tells every rank, through the store, to end with `Code` (runs on the
/// aborting thread, which may be the watchdog's: a connection of its own).
void publishThroughStore(int Code) {
  ProcessState &P = processState();
  try {
    StoreClient C(P.Job.Launch.StoreHost, P.Job.Launch.StorePort, 2.0);
    C.set("meshrt/abort",
          std::to_string(Code) + " " + std::to_string(P.Job.Rank));
    if (P.Server) // Give the server a moment to tell the waiting ranks.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
  } catch (...) {
  }
}

/// The watcher: one request parked on the server until some rank aborts.
void watchForAbort(std::string Host, int Port, double Timeout, int64_t Rank) {
  try {
    StoreClient C(Host, Port, Timeout);
    for (;;) {
      std::string V;
      try {
        V = C.get("meshrt/abort", 3600);
      } catch (const Error &E) {
        if (E.status() == MESHRT_ERROR_TIMEOUT)
          continue;
        throw;
      }
      std::istringstream In(V);
      int Code = 1;
      int64_t Who = -1;
      In >> Code >> Who;
      if (Who == Rank)
        return; // This rank aborts already.
      writeStderr("meshrt: rank " + std::to_string(Rank) + ": error: rank " +
                  std::to_string(Who) + " aborted the job (exit code " +
                  std::to_string(Code) +
                  "; see its message); ending this "
                  "rank too\n");
      _exit(Code);
    }
  } catch (const std::exception &E) {
    if (processState().Leaving)
      return;
    writeStderr("meshrt: rank " + std::to_string(Rank) +
                ": error: lost the job's store (" + E.what() +
                "); world rank 0, which serves it, is gone. Ending this "
                "rank\n");
    _exit(1);
  }
}

/// Joins through the store: rank 0 serves it, every rank connects and
/// meets the others there.
void joinThroughStore(ProcessState &P) {
  LaunchInfo &L = P.Job.Launch;
  P.StoreTimeout = secondsFromEnv("MESHRT_STORE_TIMEOUT_S", 300);
  if (L.Method == InitMethod::File) {
    if (L.Rank == 0) {
      P.Server = StoreServer::start("", 0);
      char Host[256] = {};
      gethostname(Host, sizeof(Host) - 1);
      std::string Tmp = L.File + ".tmp" + std::to_string(getpid());
      {
        std::ofstream Out(Tmp);
        Out << Host << " " << P.Server->port() << "\n";
        if (!Out)
          throw Error(MESHRT_ERROR_BACKEND,
                      "cannot write the store's address to " + Tmp);
      }
      if (std::rename(Tmp.c_str(), L.File.c_str()) != 0)
        throw Error(MESHRT_ERROR_BACKEND,
                    "cannot publish the store's address at " + L.File);
      L.StoreHost = "127.0.0.1";
      L.StorePort = P.Server->port();
    } else {
      auto Deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration<double>(P.StoreTimeout);
      for (;;) {
        std::ifstream In(L.File);
        if (In >> L.StoreHost >> L.StorePort)
          break;
        if (std::chrono::steady_clock::now() > Deadline)
          throw Error(MESHRT_ERROR_TIMEOUT,
                      "MESHRT_INIT_METHOD=file://" + L.File +
                          ": world rank 0 did not publish the store's "
                          "address there within MESHRT_STORE_TIMEOUT_S");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } else if (L.Rank == 0) {
    try {
      P.Server = StoreServer::start("", L.StorePort);
    } catch (const Error &E) {
      throw Error(E.status(), std::string(E.what()) +
                                  " (world rank 0 serves the job's "
                                  "store there: MESHRT_STORE_PORT, "
                                  "else MASTER_PORT + 1)");
    }
  }
  P.Job.StoreAddress = formatStoreAddress(L.StoreHost, L.StorePort);
  P.Client =
      std::make_shared<StoreClient>(L.StoreHost, L.StorePort, P.StoreTimeout);
  rendezvous(*P.Client, L.Rank, L.Size, "meshrt/start", P.StoreTimeout);
  setAbortPublisher(publishThroughStore);
  try {
    std::thread(watchForAbort, L.StoreHost, L.StorePort, P.StoreTimeout, L.Rank)
        .detach();
  } catch (const std::system_error &) {
  }
}

void joinThroughMpi(ProcessState &P) {
  std::string Why;
  if (!mpiTryLoad(Why))
    throw Error(MESHRT_ERROR_BACKEND,
                P.Job.Launch.Method == InitMethod::Single
                    ? "no launcher started this process, and a process "
                      "started alone joins a world of one through MPI: " +
                          Why +
                          " (to run without MPI, set RANK=0, WORLD_SIZE=1, "
                          "MASTER_ADDR=127.0.0.1 and a free MASTER_PORT)"
                    : "an MPI launcher started this process: " + Why);
  int Init = 0, Fin = 0;
  MPI_Initialized(&Init);
  MPI_Finalized(&Fin);
  if (Fin)
    throw Error(MESHRT_ERROR_NOT_INITIALIZED,
                "MPI is already finalized in this process; the runtime "
                "cannot start");
  if (!Init) {
    int Provided = 0;
    checkMpi(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &Provided),
        "MPI_Init_thread");
    P.WeInitializedMpi = true;
  }
  int R = 0, S = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &S);
  P.Job.Rank = R;
  P.Job.Size = S;
}

} // namespace

bool meshrt::detail::mpiUsable() {
  if (!mpiLoaded()) // A job that never used MPI has not loaded it.
    return false;
  int Init = 0, Fin = 0;
  MPI_Initialized(&Init);
  MPI_Finalized(&Fin);
  return Init && !Fin;
}

std::unique_ptr<ControlGroup> meshrt::detail::joinJob(double Timeout) {
  ProcessState &P = processState();
  std::lock_guard<std::mutex> Lock(P.Mutex);
  P.ExitTimeout = Timeout;
  if (!P.Joined) {
    LaunchInfo L = detectLaunch(processEnvironment());
    P.Job.Launch = L;
    P.Job.Mpi = L.Method == InitMethod::Mpi || L.Method == InitMethod::Single;
    if (P.Job.Mpi) {
      // The MPI launcher's rank, for the message of a failed start.
      for (const char *V : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                            "MV2_COMM_WORLD_RANK"})
        if (const char *E = std::getenv(V); E && *E) {
          setProcessRank(std::atoll(E));
          break;
        }
      joinThroughMpi(P);
    } else {
      P.Job.Rank = L.Rank;
      P.Job.Size = L.Size;
      setProcessRank(L.Rank); // For the messages of a failed start.
      joinThroughStore(P);
    }
    setProcessRank(P.Job.Rank);
    P.Joined = true;
  } else if (P.Job.Mpi) {
    joinThroughMpi(P); // Throws if the program finalized MPI meanwhile.
  }
  std::unique_ptr<ControlGroup> World;
  if (P.Job.Mpi) {
    // The exit fence's group, whoever started MPI (an exit with the
    // runtime initialised meets there too).
    if (!P.ExitGroup)
      P.ExitGroup = makeMpiControl(MPI_COMM_WORLD, "exit fence");
    World = makeMpiControl(MPI_COMM_WORLD, "start-up");
  } else {
    if (!P.ExitGroup)
      P.ExitGroup = makeStoreControl(P.Client, "meshrt/exit", P.Job.Rank,
                                     P.Job.Size, Timeout);
    World =
        makeStoreControl(P.Client, "meshrt/ctx" + std::to_string(P.Contexts),
                         P.Job.Rank, P.Job.Size, Timeout);
  }
  ++P.Contexts;
  registerExitHandler(P);
  ++P.LiveContexts;
  return World;
}

const JobInfo &meshrt::detail::jobInfo() { return processState().Job; }

std::shared_ptr<StoreClient> meshrt::detail::jobStore() {
  return processState().Client;
}

void meshrt::detail::contextEnded() {
  ProcessState &P = processState();
  std::lock_guard<std::mutex> Lock(P.Mutex);
  --P.LiveContexts;
}

meshrt_backend meshrt::detail::hostBackendKind() {
  ProcessState &P = processState();
  {
    std::lock_guard<std::mutex> Lock(P.Mutex);
    if (P.Joined)
      return P.Job.Mpi ? MESHRT_BACKEND_MPI : MESHRT_BACKEND_GLOO;
  }
  try {
    InitMethod M = detectLaunch(processEnvironment()).Method;
    return M == InitMethod::Mpi || M == InitMethod::Single
               ? MESHRT_BACKEND_MPI
               : MESHRT_BACKEND_GLOO;
  } catch (const Error &) {
    return MESHRT_BACKEND_MPI; // Joining the job reports it.
  }
}

std::shared_ptr<StoreClient> meshrt::detail::jobStoreOver(ControlGroup &World) {
  ProcessState &P = processState();
  {
    std::lock_guard<std::mutex> Lock(P.Mutex);
    if (P.Client)
      return P.Client;
  }
  // An MPI job: world rank 0 serves a store for the backends that meet
  // there (gloo), and tells the others where.
  std::string Address;
  std::optional<Error> Failed;
  if (World.rank() == 0) {
    try {
      std::unique_ptr<StoreServer> S = StoreServer::start("", 0);
      char Host[256] = {};
      gethostname(Host, sizeof(Host) - 1);
      Address = std::string(Host) + " " + std::to_string(S->port());
      std::lock_guard<std::mutex> Lock(P.Mutex);
      P.Server = std::move(S);
    } catch (const Error &E) {
      Address = std::string("! ") + E.what();
    }
  }
  Address = World.broadcastString(Address, 0, "store start-up");
  if (Address.rfind("! ", 0) == 0)
    throw Error(MESHRT_ERROR_BACKEND,
                "world rank 0 could not start the store: " + Address.substr(2));
  std::istringstream In(Address);
  std::string Host;
  int Port = 0;
  In >> Host >> Port;
  if (World.rank() == 0)
    Host = "127.0.0.1";
  double Timeout = secondsFromEnv("MESHRT_STORE_TIMEOUT_S", 300);
  auto C = std::make_shared<StoreClient>(Host, Port, Timeout);
  std::lock_guard<std::mutex> Lock(P.Mutex);
  P.Client = C;
  return C;
}

std::string meshrt::detail::freshStorePrefix(const char *Use) {
  ProcessState &P = processState();
  std::lock_guard<std::mutex> Lock(P.Mutex);
  return std::string("meshrt/") + Use + std::to_string(P.Prefixes++);
}
