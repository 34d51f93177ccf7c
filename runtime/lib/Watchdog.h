//===- Watchdog.h - Aborts the job when a collective hangs ------*- C++ -*-===//
//
// The thread that calls collectives publishes "operation N is in flight" in a
// few relaxed atomic stores (a sequence number, odd while in flight, and the
// operation's description); there is no clock read and no lock on that path.
// A watchdog thread wakes a few times per timeout, and when it sees the same
// odd sequence number for longer than MESHRT_TIMEOUT_S it prints which rank,
// operation, mesh and axes are stuck, and ends the process with exit code
// 124, which ends the job (see Abort.h for why not MPI_Abort).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_WATCHDOG_H
#define MESHRT_LIB_WATCHDOG_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace meshrt {
namespace detail {

/// Something that can describe itself in a timeout message (a communicator).
class Describable {
public:
  virtual ~Describable();
  /// e.g. "mesh 'm' axes [shard] (group rank 1 of 4, world ranks 4,5,6,7)".
  virtual std::string describe() const = 0;
};

/// Watches the operation in flight on one context.
class Watchdog {
public:
  /// Starts the thread unless `TimeoutSeconds` <= 0. `WorldRank` names this
  /// process in the message.
  Watchdog(double TimeoutSeconds, int64_t WorldRank);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  /// Marks `Op` (a static string) on `Where` as in flight. `Count`, `Type`
  /// and `RedOp` are printed when >= 0.
  void begin(const char *Op, const Describable *Where, int64_t Count = -1,
             int32_t Type = -1, int32_t RedOp = -1) {
    OpName.store(Op, std::memory_order_relaxed);
    OpWhere.store(Where, std::memory_order_relaxed);
    OpCount.store(Count, std::memory_order_relaxed);
    OpType.store(Type, std::memory_order_relaxed);
    OpRedOp.store(RedOp, std::memory_order_relaxed);
    Seq.store(LocalSeq += 1, std::memory_order_release);
  }
  /// Marks the operation started by the last begin() as finished.
  void end() { Seq.store(LocalSeq += 1, std::memory_order_release); }

  /// The timeout in seconds (<= 0: disabled).
  double timeout() const { return Timeout; }
  /// Stops the thread (idempotent).
  void stop();

private:
  void run();
  /// Reports the operation in flight as stuck for `Waited` seconds and ends
  /// the process with exit code 124 (never calls MPI).
  [[noreturn]] void fire(double Waited);

  // The fields begin() and end() write share one cache line.
  alignas(64) uint64_t LocalSeq = 0; // Written by the calling thread only.
  std::atomic<uint64_t> Seq{0};
  std::atomic<const char *> OpName{nullptr};
  std::atomic<const Describable *> OpWhere{nullptr};
  std::atomic<int64_t> OpCount{-1};
  std::atomic<int32_t> OpType{-1};
  std::atomic<int32_t> OpRedOp{-1};
  double Timeout;
  int64_t WorldRank;
  std::mutex Mutex;
  std::condition_variable Wake;
  bool Stopping = false;
  std::thread Thread;
};

/// Marks an operation in flight for the lifetime of the object.
class WatchScope {
public:
  /// See Watchdog::begin.
  WatchScope(Watchdog &W, const char *Op, const Describable *Where,
             int64_t Count = -1, int32_t Type = -1, int32_t RedOp = -1)
      : W(W) {
    W.begin(Op, Where, Count, Type, RedOp);
  }
  ~WatchScope() { W.end(); }
  WatchScope(const WatchScope &) = delete;
  WatchScope &operator=(const WatchScope &) = delete;

private:
  Watchdog &W;
};

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_WATCHDOG_H
