//===- Watchdog.cpp - Aborts the job when a collective hangs --------------===//
//
// The watchdog thread of a context; see Watchdog.h. On expiry it writes one
// line to stderr and ends this process with _exit(124) (124 like timeout(1));
// the launcher then ends the job (mpirun kills every rank as soon as one
// exits non-zero without finalizing). It does not call MPI_Abort: the thread
// that the watchdog watches is inside MPI at that moment, and the runtime
// initialises MPI_THREAD_SERIALIZED, under which a second thread must not
// call MPI. _exit cannot block, so no backstop (alarm) is needed either.
//
//===----------------------------------------------------------------------===//

#include "Watchdog.h"

#include "Abort.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

using namespace meshrt::detail;

static const char *const DTypeNames[] = {"f16", "bf16", "f32", "f64",
                                         "i8",  "i32",  "i64", "u8"};
static const char *const RedOpNames[] = {"sum", "prod", "min", "max",
                                         "avg", "band", "bor", "bxor"};

Describable::~Describable() = default;

Watchdog::Watchdog(double TimeoutSeconds, int64_t WorldRank)
    : Timeout(TimeoutSeconds), WorldRank(WorldRank) {
  if (Timeout > 0)
    Thread = std::thread([this] { run(); });
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() {
  {
    std::lock_guard<std::mutex> Lock(Mutex);
    Stopping = true;
  }
  Wake.notify_all();
  if (Thread.joinable())
    Thread.join();
}

void Watchdog::run() {
  using Clock = std::chrono::steady_clock;
  // Check about 20 times per timeout, between every 10 ms and every second.
  double PeriodS = std::min(1.0, std::max(0.01, Timeout / 20));
  auto Period = std::chrono::duration<double>(PeriodS);
  uint64_t Watched = 0;
  Clock::time_point Since;
  std::unique_lock<std::mutex> Lock(Mutex);
  while (!Stopping) {
    Wake.wait_for(Lock, Period);
    if (Stopping)
      break;
    uint64_t S = Seq.load(std::memory_order_acquire);
    if (!(S & 1)) {
      Watched = 0;
      continue;
    }
    Clock::time_point Now = Clock::now();
    if (S != Watched) {
      Watched = S;
      Since = Now;
      continue;
    }
    double Waited = std::chrono::duration<double>(Now - Since).count();
    if (Waited + PeriodS / 2 >= Timeout)
      fire(Waited + PeriodS / 2);
  }
}

void Watchdog::fire(double Waited) {
  const char *Op = OpName.load(std::memory_order_relaxed);
  const Describable *Where = OpWhere.load(std::memory_order_relaxed);
  int64_t Count = OpCount.load(std::memory_order_relaxed);
  int32_t Type = OpType.load(std::memory_order_relaxed);
  int32_t RedOp = OpRedOp.load(std::memory_order_relaxed);
  std::string What = Op ? Op : "operation";
  if (Count >= 0) {
    What += " (" + std::to_string(Count) + " x ";
    What += (Type >= 0 && Type < 8) ? DTypeNames[Type] : "?";
    if (RedOp >= 0 && RedOp < 8)
      What += std::string(", ") + RedOpNames[RedOp];
    What += ")";
  }
  std::string On = Where ? Where->describe() : std::string("the world");
  char Secs[64];
  std::snprintf(Secs, sizeof(Secs), "%.1f s (MESHRT_TIMEOUT_S=%g)", Waited,
                Timeout);
  std::string Msg = "meshrt: rank " + std::to_string(WorldRank) + ": " + What +
                    " on " + On + " did not finish within " + Secs +
                    "; a peer is stuck, dead, or called a different "
                    "collective. Aborting the job.\n";
  writeStderr(Msg);
  publishAbort(124);
  _exit(124);
}
