//===- Store.h - A TCP key-value store for start-up without MPI -*- C++ -*-===//
//
// Where no MPI launcher starts the ranks (torchrun, Kubernetes, srun set
// RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT), the ranks meet through a
// small key-value store: world rank 0 runs a StoreServer, every rank
// (rank 0 included) connects a StoreClient to it, and they exchange what
// they need (who is there, NCCL's unique id, ...) as keys and values.
//
// Self-contained: POSIX sockets and the C++ standard library only, with its
// own protocol (not PyTorch's). One server thread serves every client with
// poll(); a client's blocking get or wait is parked on the server and
// answered when its keys are set or its deadline passes, so waiting costs no
// traffic. Every call has a deadline: a store that dies or stops answering
// is an error naming its address, never a hang.
//
// The protocol, version 1 (integers little-endian):
//   greeting, client to server: "meshkv", version (1 byte), 0;
//   greeting, server to client: "meshkv", version, status (0: accepted,
//     1: the client's version is not spoken; the server then closes);
//   then requests and responses, one at a time per connection, each a
//     24-byte header (code: u8, 3 zero bytes, item count: u32, payload
//     bytes: u64, argument: i64) followed by the payload, the items, each a
//     u32 length and its bytes. A request's code is its operation, a
//     response's its status. A server that reads anything else closes the
//     connection; a client that does reports the peer as not a store.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_STORE_H
#define MESHRT_LIB_STORE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace meshrt {
namespace detail {

/// The largest key, in bytes.
constexpr size_t StoreMaxKeyBytes = size_t(64) << 10;
/// The largest value, in bytes.
constexpr size_t StoreMaxValueBytes = size_t(64) << 20;
/// The most keys one check, wait or missing call may name.
constexpr size_t StoreMaxKeysPerCall = size_t(1) << 20;
/// The largest payload of one request or response: a key and the largest
/// value, or many keys.
constexpr size_t StoreMaxPayloadBytes = size_t(128) << 20;
/// The version of the protocol that this build speaks.
constexpr uint8_t StoreProtocolVersion = 1;

/// "tcp://host:port", with an IPv6 literal in brackets ("tcp://[::1]:29500").
std::string formatStoreAddress(const std::string &Host, int Port);

/// Ranks as a sorted list with runs compressed: {3, 5, 6, 7} -> "3, 5-7".
std::string formatRankRanges(std::vector<int64_t> Ranks);

/// The server: listens on one port (on every address its host resolves to)
/// and serves every client from one background thread.
class StoreServer {
public:
  /// Binds and listens on `Host` (a name, an IPv4 or IPv6 literal, or empty
  /// for every interface) and `Port` (0: an ephemeral port, see port()), then
  /// starts the server thread. Throws meshrt::Error naming the address, the
  /// port and the OS reason if it cannot (a port in use, an address that is
  /// not this machine's, a name that does not resolve).
  static std::unique_ptr<StoreServer> start(const std::string &Host, int Port);
  /// Stops the thread and closes every connection: a client blocked in a
  /// call sees the connection close and throws.
  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  /// The port it listens on (the ephemeral one chosen when started with 0).
  int port() const;
  /// "tcp://host:port", for messages.
  const std::string &address() const;
  /// Requests received so far (each one counted once, parked or not); for
  /// tests that a blocking get costs one request, not polling.
  uint64_t requestCount() const;
  /// Requests (get, wait) parked now, waiting for keys.
  size_t parkedCount() const;
  /// Connections open now (greeted or not).
  size_t connectionCount() const;

  struct Impl;

private:
  explicit StoreServer(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

/// A connection to a store. Each operation is one request and its response
/// on the one connection; a mutex lets several threads share a client (their
/// calls take turns). After a connection error every call throws.
class StoreClient {
public:
  /// Connects to the store at `Host`:`Port`, retrying (10 ms, doubling up
  /// to 1 s between tries) while the name does not resolve, nothing listens,
  /// or the peer closes the connection, until `TimeoutSeconds` have passed;
  /// then throws naming the address, the last OS error and the time. A peer
  /// that answers the greeting with anything but a store's is an error at
  /// once. `TimeoutSeconds` is also the deadline of the calls that do not
  /// wait for keys (set, add, check, remove), and the grace a waiting call
  /// (get, wait) gets on top of its own timeout before the store is deemed
  /// gone.
  StoreClient(const std::string &Host, int Port, double TimeoutSeconds);
  ~StoreClient();
  StoreClient(const StoreClient &) = delete;
  StoreClient &operator=(const StoreClient &) = delete;

  /// Sets `Key` to `Value` (any bytes), waking the calls waiting for it.
  void set(const std::string &Key, const std::string &Value);
  /// The value of `Key`, waiting on the server until it is set; throws
  /// (MESHRT_ERROR_TIMEOUT) naming the key if it is not within
  /// `TimeoutSeconds` (0: do not wait).
  std::string get(const std::string &Key, double TimeoutSeconds);
  /// Adds `Delta` to the integer in `Key` (a missing key counts as 0) and
  /// returns the sum, atomically. The value is stored as decimal text, so
  /// get() of it returns e.g. "3". A value that is not an integer, or a sum
  /// that overflows, is MESHRT_ERROR_INVALID_ARGUMENT.
  int64_t add(const std::string &Key, int64_t Delta);
  /// Whether every key in `Keys` exists, without waiting.
  bool check(const std::vector<std::string> &Keys);
  /// The keys of `Keys` that do not exist, in order, without waiting.
  std::vector<std::string> missing(const std::vector<std::string> &Keys);
  /// Removes `Key`; whether it existed.
  bool remove(const std::string &Key);
  /// Waits on the server until every key in `Keys` exists; throws
  /// (MESHRT_ERROR_TIMEOUT) naming the keys still missing if they do not
  /// within `TimeoutSeconds`.
  void wait(const std::vector<std::string> &Keys, double TimeoutSeconds);

  /// "tcp://host:port" of the store, for messages.
  const std::string &address() const { return Address; }
  /// The timeout given to the constructor.
  double timeout() const { return OpTimeout; }

private:
  struct Reply;
  /// Sends one request and reads its response under the lock; `What`
  /// ("get('k')") names the call in errors, `Wait` is the seconds the server
  /// may hold the request (added to the deadline).
  Reply call(uint8_t Op, const std::vector<const std::string *> &Items,
             int64_t Arg, double Wait, const std::string &What);
  /// Throws a connection error naming the store and the call, and marks the
  /// client broken.
  [[noreturn]] void fail(const std::string &What, const std::string &Why);

  std::string Address;
  double OpTimeout;
  int Fd = -1;
  std::mutex Mutex;
  /// Why the connection is unusable ("" while it is fine).
  std::string Broken;
};

/// Start-up rendezvous: registers rank `Rank` of `Size` (the key
/// Prefix + "/rank/<Rank>" = "<hostname> <pid>"), counts it in
/// Prefix + "/count", and waits on the store until all `Size` ranks have
/// (the last one sets Prefix + "/done", which the others wait for: one
/// parked request per rank, whatever the size). On timeout, throws
/// (MESHRT_ERROR_TIMEOUT) naming the store and the ranks that did not
/// arrive, as ranges ("ranks 3, 5-7 of 8 did not arrive ...").
///
/// The keys of a rendezvous stay in the store, so each rendezvous of a run
/// needs its own `Prefix`: callers put a generation counter in it (e.g.
/// "meshrt/start/0", then "meshrt/start/1" for a restart). A prefix used
/// again is detected (more than `Size` arrivals) and is an error
/// (MESHRT_ERROR_INVALID_ARGUMENT) on every rank.
void rendezvous(StoreClient &C, int64_t Rank, int64_t Size,
                const std::string &Prefix, double TimeoutSeconds);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_STORE_H
