//===- Abort.h - How the runtime ends a job ---------------------*- C++ -*-===//
//
// Every fatal path of the runtime ends the whole job, never just this
// process, and never by waiting for peers. Two ways, by who is calling:
//
//  * abortJob: for the thread that made the failing runtime call (an error
//    under the abort policy, an mgpu* failure, a process that exits with the
//    runtime initialised). That thread is the one allowed to call MPI, so it
//    calls MPI_Abort, which asks the launcher to kill every rank.
//  * The watchdog (Watchdog.cpp) runs on a thread of its own while the
//    calling thread is inside MPI; under MPI_THREAD_SERIALIZED it must not
//    call MPI. It ends its process with _exit(124) and the launcher ends the
//    job: mpirun kills every rank when one exits non-zero without finalizing.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_ABORT_H
#define MESHRT_LIB_ABORT_H

#include <cstdint>
#include <string>

namespace meshrt {
namespace detail {

/// Writes `Msg` to stderr with one write(2): no stdio buffer, no lock, so
/// that lines of dying ranks do not interleave or get lost.
void writeStderr(const std::string &Msg);

/// Ends the whole job with exit code `Code`: MPI_Abort(MPI_COMM_WORLD) when
/// MPI is usable; else, in a job that met through the store, it tells every
/// rank through it (see publishAbort), then _exits. A detached thread _exits
/// after 10 s in case MPI_Abort does not return. Call it from the thread that
/// makes MPI calls.
[[noreturn]] void abortJob(int Code);

/// This process's world rank once it joined the job, else -1 (for
/// messages; any thread).
int64_t processRank();
void setProcessRank(int64_t Rank);

/// In a job that met through the store: `Fn(Code)` tells every rank to end
/// with `Code` (Bootstrap.cpp sets it). publishAbort calls it, from any
/// thread, at most once per process; without one it does nothing.
void setAbortPublisher(void (*Fn)(int Code));
void publishAbort(int Code);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_ABORT_H
