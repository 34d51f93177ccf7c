//===- Launch.cpp - Which launcher started this process -------------------===//
//
// See Launch.h.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "Store.h"

#include "meshrt/Error.h"

#include <cerrno>
#include <cstdlib>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

[[noreturn]] void bad(const std::string &Msg) {
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT, "launch: " + Msg);
}

/// The integer in `Name`, or nullopt when it is unset; throws when it is set
/// to something else than a decimal integer.
std::optional<int64_t> intVar(const EnvLookup &Env, const char *Name) {
  std::optional<std::string> V = Env(Name);
  if (!V)
    return std::nullopt;
  errno = 0;
  char *End = nullptr;
  long long N = std::strtoll(V->c_str(), &End, 10);
  if (V->empty() || *End != '\0' || errno == ERANGE)
    bad(std::string(Name) + "='" + *V + "' is not an integer");
  return int64_t(N);
}

/// Whether any variable of `Names` is set.
bool anySet(const EnvLookup &Env, std::initializer_list<const char *> Names) {
  for (const char *N : Names)
    if (Env(N))
      return true;
  return false;
}

/// The port in `Name`, checked to be one.
int portVar(const char *Name, int64_t Value) {
  if (Value < 1 || Value > 65535)
    bad(std::string(Name) + "=" + std::to_string(Value) +
        " is not a TCP port (1-65535)");
  return int(Value);
}

/// "host:port" (an IPv6 literal in brackets) into its parts.
void splitHostPort(const std::string &Spec, const std::string &What,
                   std::string &Host, int &Port) {
  std::string HostPart, PortPart;
  if (!Spec.empty() && Spec[0] == '[') {
    size_t Close = Spec.find(']');
    if (Close == std::string::npos || Close + 1 >= Spec.size() ||
        Spec[Close + 1] != ':')
      bad(What + ": '" + Spec + "' is not host:port ([v6]:port for IPv6)");
    HostPart = Spec.substr(1, Close - 1);
    PortPart = Spec.substr(Close + 2);
  } else {
    size_t Colon = Spec.rfind(':');
    if (Colon == std::string::npos || Spec.find(':') != Colon)
      bad(What + ": '" + Spec + "' is not host:port ([v6]:port for IPv6)");
    HostPart = Spec.substr(0, Colon);
    PortPart = Spec.substr(Colon + 1);
  }
  char *End = nullptr;
  long P = std::strtol(PortPart.c_str(), &End, 10);
  if (HostPart.empty() || PortPart.empty() || *End != '\0' || P < 1 ||
      P > 65535)
    bad(What + ": '" + Spec + "' has no host or no port in 1-65535");
  Host = HostPart;
  Port = int(P);
}

/// The first host of a Slurm node list: "node[3-5,9],gpu7" -> "node3".
std::string firstSlurmHost(const std::string &List) {
  std::string Host;
  for (size_t I = 0; I < List.size(); ++I) {
    char C = List[I];
    if (C == ',')
      break;
    if (C == '[') {
      // The first number of the range list, zero padding kept.
      size_t J = I + 1;
      while (J < List.size() && List[J] >= '0' && List[J] <= '9')
        Host += List[J++];
      break;
    }
    Host += C;
  }
  return Host;
}

/// Rank and size of a store-based method: RANK/WORLD_SIZE, else Slurm's.
void readRankAndSize(const EnvLookup &Env, LaunchInfo &L) {
  std::optional<int64_t> Rank = intVar(Env, "RANK");
  std::optional<int64_t> Size = intVar(Env, "WORLD_SIZE");
  if (Rank || Size) {
    if (!Rank || !Size)
      bad(std::string(Rank ? "RANK" : "WORLD_SIZE") + " is set but " +
          (Rank ? "WORLD_SIZE" : "RANK") +
          " is not; a launcher that sets one sets both (torchrun, "
          "Kubernetes' PyTorchJob)");
    L.Rank = *Rank;
    L.Size = *Size;
    L.LocalRank = intVar(Env, "LOCAL_RANK").value_or(-1);
    L.LocalSize = intVar(Env, "LOCAL_WORLD_SIZE").value_or(-1);
    L.Launcher = anySet(Env, {"TORCHELASTIC_RUN_ID", "LOCAL_WORLD_SIZE",
                              "TORCHELASTIC_RESTART_COUNT"})
                     ? "torchrun"
                     : "env";
  } else if (std::optional<int64_t> P = intVar(Env, "SLURM_PROCID")) {
    std::optional<int64_t> N = intVar(Env, "SLURM_NTASKS");
    if (!N)
      N = intVar(Env, "SLURM_NPROCS");
    if (!N)
      bad("SLURM_PROCID is set but SLURM_NTASKS is not");
    L.Rank = *P;
    L.Size = *N;
    L.LocalRank = intVar(Env, "SLURM_LOCALID").value_or(-1);
    L.Launcher = "slurm";
  } else {
    bad("no rank in the environment: set RANK and WORLD_SIZE (as torchrun "
        "does), or start under mpirun or srun");
  }
  if (L.Size < 1)
    bad("the world size is " + std::to_string(L.Size) + "; it must be >= 1");
  if (L.Rank < 0 || L.Rank >= L.Size)
    bad("rank " + std::to_string(L.Rank) + " is outside [0, " +
        std::to_string(L.Size) + ")");
  if (L.LocalSize >= 0 && (L.LocalRank < 0 || L.LocalRank >= L.LocalSize))
    bad("LOCAL_RANK=" + std::to_string(L.LocalRank) + " is outside [0, " +
        std::to_string(L.LocalSize) + ") (LOCAL_WORLD_SIZE)");
}

/// The store of the env method: MASTER_ADDR (Slurm: the first node of the
/// step), at MESHRT_STORE_PORT, else MASTER_PORT + 1.
void readStore(const EnvLookup &Env, LaunchInfo &L) {
  std::optional<std::string> Addr = Env("MASTER_ADDR");
  if (!Addr && L.Launcher == "slurm")
    if (std::optional<std::string> Nodes = Env("SLURM_STEP_NODELIST"))
      Addr = firstSlurmHost(*Nodes);
  if (!Addr || Addr->empty())
    bad("MASTER_ADDR is not set: the ranks meet at a store on world rank "
        "0's host (set MASTER_ADDR and MASTER_PORT, or "
        "MESHRT_INIT_METHOD=tcp://host:port)");
  L.StoreHost = *Addr;
  if (std::optional<int64_t> P = intVar(Env, "MESHRT_STORE_PORT")) {
    L.StorePort = portVar("MESHRT_STORE_PORT", *P);
  } else if (std::optional<int64_t> M = intVar(Env, "MASTER_PORT")) {
    portVar("MASTER_PORT", *M);
    L.StorePort = portVar("MASTER_PORT + 1", *M + 1);
  } else if (std::optional<int64_t> Job = intVar(Env, "SLURM_JOB_ID");
             Job && L.Launcher == "slurm") {
    // srun sets no port: one derived from the job id, the same on every
    // rank of the job and unlikely to collide with another job's.
    L.StorePort = int(20000 + (*Job % 20000));
  } else {
    bad("MASTER_PORT is not set: the store listens on MASTER_PORT + 1 (or "
        "MESHRT_STORE_PORT)");
  }
}

/// Whether an MPI launcher started this process, and which.
std::optional<std::string> mpiLauncher(const EnvLookup &Env) {
  if (anySet(Env, {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}))
    return std::string("mpirun (Open MPI)");
  if (anySet(Env, {"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"}))
    return std::string("mpiexec (PMI)");
  if (anySet(Env, {"PMIX_RANK", "PMIX_NAMESPACE"}))
    return std::string("PMIx");
  if (anySet(Env, {"MV2_COMM_WORLD_RANK"}))
    return std::string("mpirun (MVAPICH)");
  return std::nullopt;
}

} // namespace

EnvLookup meshrt::detail::processEnvironment() {
  return [](const char *Name) -> std::optional<std::string> {
    const char *V = std::getenv(Name);
    if (!V)
      return std::nullopt;
    return std::string(V);
  };
}

std::string LaunchInfo::describe() const {
  std::string S = Launcher;
  if (Method == InitMethod::Mpi) {
    S += ", MPI world";
  } else if (Method != InitMethod::Single) {
    S += ", rank " + std::to_string(Rank) + " of " + std::to_string(Size);
    if (LocalRank >= 0)
      S += ", local rank " + std::to_string(LocalRank);
    if (Method == InitMethod::File)
      S += ", store address in file://" + File;
    else
      S += ", store " + formatStoreAddress(StoreHost, StorePort);
  } else {
    S += ", one process";
  }
  return S + " (" + Why + ")";
}

LaunchInfo meshrt::detail::detectLaunch(const EnvLookup &Env) {
  LaunchInfo L;
  std::string Method = Env("MESHRT_INIT_METHOD").value_or("auto");
  if (Method.empty())
    Method = "auto";
  if (Method == "mpi") {
    L.Method = InitMethod::Mpi;
    L.Launcher = mpiLauncher(Env).value_or("mpi");
    L.Why = "MESHRT_INIT_METHOD=mpi";
    L.Rank = L.Size = -1;
    return L;
  }
  if (Method == "env") {
    L.Method = InitMethod::Env;
    L.Why = "MESHRT_INIT_METHOD=env";
    readRankAndSize(Env, L);
    readStore(Env, L);
    return L;
  }
  if (Method.rfind("tcp://", 0) == 0) {
    L.Method = InitMethod::Tcp;
    L.Why = "MESHRT_INIT_METHOD=" + Method;
    readRankAndSize(Env, L);
    splitHostPort(Method.substr(6), "MESHRT_INIT_METHOD", L.StoreHost,
                  L.StorePort);
    return L;
  }
  if (Method.rfind("file://", 0) == 0) {
    L.Method = InitMethod::File;
    L.Why = "MESHRT_INIT_METHOD=" + Method;
    L.File = Method.substr(7);
    if (L.File.empty() || L.File[0] != '/')
      bad("MESHRT_INIT_METHOD=" + Method +
          ": the file must be an absolute path (file:///shared/dir/job)");
    readRankAndSize(Env, L);
    return L;
  }
  if (Method != "auto")
    bad("MESHRT_INIT_METHOD='" + Method +
        "' is none of auto, mpi, env, tcp://host:port, file:///path");

  // auto: an MPI launcher's variables, then RANK/WORLD_SIZE, then Slurm's.
  if (std::optional<std::string> M = mpiLauncher(Env)) {
    L.Method = InitMethod::Mpi;
    L.Launcher = *M;
    L.Why = "detected: the MPI launcher's variables";
    L.Rank = L.Size = -1;
    return L;
  }
  if (anySet(Env, {"RANK", "WORLD_SIZE"}) ||
      (Env("SLURM_PROCID") && Env("SLURM_NTASKS"))) {
    L.Method = InitMethod::Env;
    readRankAndSize(Env, L);
    L.Why = L.Launcher == "slurm" ? "detected: SLURM_PROCID/SLURM_NTASKS"
                                  : "detected: RANK/WORLD_SIZE";
    if (L.Size == 1 && !Env("MASTER_ADDR")) {
      // One process needs no store.
      L.Method = InitMethod::Single;
      return L;
    }
    readStore(Env, L);
    return L;
  }
  L.Method = InitMethod::Single;
  L.Why = "no launcher's variables";
  return L;
}
