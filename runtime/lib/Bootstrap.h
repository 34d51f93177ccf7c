//===- Bootstrap.h - How a process joins the job ----------------*- C++ -*-===//
//
// Once per process, the first runtime context joins the job the way its
// launcher says (Launch.h): MPI_Init under an MPI launcher or with no
// launcher at all; otherwise the TCP store of Store.h, served by world rank
// 0, and a rendezvous of every rank there. Each context then gets a world
// ControlGroup of its own (ControlPlane.h).
//
// The process-wide state lives here too: who started MPI, the store and its
// abort watcher, the live contexts, and what happens at exit. A process
// that exits with a context still live meets the others at a bounded exit
// fence: if every rank arrives, the runtime finalizes with a warning; if
// one does not, the job is aborted (the others would wait for it).
//
// Without MPI, an abort reaches every rank through the store: the aborting
// rank sets the key "meshrt/abort", on which every rank's watcher thread
// waits (a request parked on the server: no polling traffic), and each
// ends its process with the same exit code.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_BOOTSTRAP_H
#define MESHRT_LIB_BOOTSTRAP_H

#include "ControlPlane.h"
#include "Launch.h"

#include "meshrt/meshrt.h"

#include <memory>
#include <string>

namespace meshrt {
namespace detail {

class StoreClient;

/// How this process joined the job.
struct JobInfo {
  LaunchInfo Launch;
  /// MPI makes the world (else the store does).
  bool Mpi = true;
  int64_t Rank = 0, Size = 1;
  /// "tcp://host:port" of the store ("" under MPI).
  std::string StoreAddress;
};

/// Joins the job if this process has not yet, counts a live context (see
/// contextEnded), and returns a new world control group for it. `Timeout`
/// (MESHRT_TIMEOUT_S) bounds the control plane's waits and the exit
/// barrier. Throws meshrt::Error (a launcher's variables that make no sense,
/// MPI already finalized, a store that cannot start or a rank that never
/// arrives).
std::unique_ptr<ControlGroup> joinJob(double Timeout);

/// What joinJob found (valid once it returned).
const JobInfo &jobInfo();

/// The store's client (null under MPI): the gloo backend meets there.
std::shared_ptr<StoreClient> jobStore();

/// A context that joinJob counted is finalized (or never got started).
void contextEnded();

/// True if MPI is initialized and not finalized.
bool mpiUsable();

/// The job's CPU backend (MESHRT_BACKEND_HOST): MPI when an MPI launcher
/// started it or none did, gloo when its ranks meet through the store.
meshrt_backend hostBackendKind();

/// The job's store, started over `World` (collective) in a job that MPI
/// started: world rank 0 serves it on an ephemeral port and broadcasts the
/// address. Under a store launcher, the store the ranks met at.
std::shared_ptr<StoreClient> jobStoreOver(ControlGroup &World);

/// A key prefix for one use of the store ("meshrt/gloo3"): the same on
/// every rank as long as ranks make the same collective calls.
std::string freshStorePrefix(const char *Use);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_BOOTSTRAP_H
