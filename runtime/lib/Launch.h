//===- Launch.h - Which launcher started this process, and how to meet ----===//
//
// The runtime starts under several launchers, each of which says who the
// process is in its own environment variables:
//
//   * mpirun / mpiexec (Open MPI, MPICH, Intel MPI) and srun with PMI/PMIx:
//     an MPI world; MPI_Init makes it.
//   * torchrun (and torch.distributed.run, DeepSpeed's launcher, Kubernetes'
//     PyTorchJob): RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and under
//     torchrun LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK.
//   * srun without PMI: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, and the
//     first host of SLURM_STEP_NODELIST for the store.
//
// detectLaunch reads them, in that order of preference (an MPI launcher's
// variables, then RANK/WORLD_SIZE, then Slurm's), unless
// MESHRT_INIT_METHOD forces the method with torch's spellings of
// init_method: auto, mpi, env, tcp://host:port or file:///path. Without MPI
// the ranks meet at a store (Store.h) that world rank 0 serves: at
// MESHRT_STORE_PORT, else MASTER_PORT + 1 (torchrun's agent holds
// MASTER_PORT itself), on MASTER_ADDR; with file://, rank 0 writes the
// store's address into the file and the others read it there.
//
// Pure: the environment is read through a lookup function, so that every
// launcher's spelling is tested without starting one.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_LAUNCH_H
#define MESHRT_LIB_LAUNCH_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace meshrt {
namespace detail {

/// How the ranks of this job meet.
enum class InitMethod {
  /// MPI_Init makes the world (an MPI launcher).
  Mpi,
  /// RANK and WORLD_SIZE (or Slurm's) from the environment, and a store at
  /// MASTER_ADDR (MESHRT_STORE_PORT, else MASTER_PORT + 1).
  Env,
  /// As Env, with the store's address given as tcp://host:port.
  Tcp,
  /// As Env, the store's address published in a file on a shared file
  /// system.
  File,
  /// One process, no launcher.
  Single,
};

/// What the launcher said, and how to meet.
struct LaunchInfo {
  InitMethod Method = InitMethod::Single;
  /// "mpirun", "torchrun", "slurm", "env" (RANK/WORLD_SIZE without
  /// torchrun's variables: Kubernetes, a script), or "none".
  std::string Launcher = "none";
  /// How the method was chosen: "MESHRT_INIT_METHOD=env", "detected: ...".
  std::string Why;
  /// This process's world rank and the world size (-1: MPI tells later).
  int64_t Rank = 0, Size = 1;
  /// The node-local rank and size (-1: unknown; MPI or the store tells).
  int64_t LocalRank = -1, LocalSize = -1;
  /// The store (Env, Tcp): its host and port; File: the file.
  std::string StoreHost;
  int StorePort = 0;
  std::string File;

  /// "torchrun (RANK/WORLD_SIZE), rank 3 of 8, local rank 3, store
  /// tcp://node0:29501".
  std::string describe() const;
};

/// Reads `Name` from the environment: the value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char *)>;

/// The process environment.
EnvLookup processEnvironment();

/// What the launcher said (see the file comment). Throws meshrt::Error
/// (MESHRT_ERROR_INVALID_ARGUMENT) naming the variable when a value is not
/// a number, a rank is outside [0, size), a method needs a variable that is
/// unset (RANK without WORLD_SIZE, env without MASTER_ADDR...), or
/// MESHRT_INIT_METHOD is not one of its spellings.
LaunchInfo detectLaunch(const EnvLookup &Env);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_LAUNCH_H
