//===- Abort.cpp - How the runtime ends a job -----------------------------===//
//
// See Abort.h.
//
//===----------------------------------------------------------------------===//

#include "Abort.h"

#include "MpiApi.h"

#include <atomic>
#include <chrono>
#include <system_error>
#include <thread>
#include <unistd.h>

void meshrt::detail::writeStderr(const std::string &Msg) {
  size_t Done = 0;
  while (Done < Msg.size()) {
    ssize_t N = ::write(2, Msg.data() + Done, Msg.size() - Done);
    if (N <= 0)
      return;
    Done += size_t(N);
  }
}

namespace {
std::atomic<int64_t> Rank{-1};
std::atomic<void (*)(int)> Publisher{nullptr};
std::atomic<bool> Published{false};
} // namespace

int64_t meshrt::detail::processRank() { return Rank.load(); }
void meshrt::detail::setProcessRank(int64_t R) { Rank.store(R); }
void meshrt::detail::setAbortPublisher(void (*Fn)(int)) { Publisher.store(Fn); }

void meshrt::detail::publishAbort(int Code) {
  void (*Fn)(int) = Publisher.load();
  if (Fn && !Published.exchange(true))
    Fn(Code);
}

void meshrt::detail::abortJob(int Code) {
  int Init = 0, Fin = 0;
  if (mpiLoaded()) { // A job that never used MPI has not loaded it.
    MPI_Initialized(&Init);
    MPI_Finalized(&Fin);
  }
  if (Init && !Fin) {
    // MPI_Abort waits for the launcher to acknowledge; should it never
    // answer, this process still ends, and with it the job under mpirun.
    try {
      std::thread([Code] {
        std::this_thread::sleep_for(std::chrono::seconds(10));
        _exit(Code);
      }).detach();
    } catch (const std::system_error &) {
    }
    MPI_Abort(MPI_COMM_WORLD, Code);
  }
  publishAbort(Code);
  _exit(Code);
}
