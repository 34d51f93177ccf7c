//===- GlooPlugin.cpp - libmeshrt_gloo: collectives on gloo ---------------===//
//
// The plugin behind the gloo backend: a shared library that links libgloo
// and exports one C symbol, meshrt_gloo_plugin_v1, which fills the table of
// GlooPluginApi.h. libmeshrt dlopens it (lib/GlooBackend.cpp), so libmeshrt
// itself neither links gloo nor needs it installed. No C++ exception leaves
// this file: every entry point catches gloo's (IoException, EnforceNotMet,
// gloo::Exception), the standard library's and its own, and returns a
// meshrt_status with the message kept for LastError().
//
// Rendezvous: each communicator is a gloo::rendezvous::Context that connects
// a full mesh of TCP pairs, its members exchanging addresses through the
// host's key-value store (callbacks wrapped as a gloo::rendezvous::Store)
// under a key prefix of its own: the host gives "<prefix>/w" for the world
// and "<prefix>/s<n>" for its n-th split, and a split's groups add their
// color. A rendezvous that times out names the ranks whose keys never
// appeared. All communicators of a process share one gloo TCP device (one
// event-loop thread) per address; the address to bind comes from
// MESHRT_GLOO_HOSTNAME, else MESHRT_GLOO_IFNAME (an interface), else
// GLOO_SOCKET_IFNAME (PyTorch's variable), else this machine's hostname, or
// 127.0.0.1 where that does not resolve.
//
// How the operations map onto gloo (new-style collectives, which take a tag
// and a timeout per call):
//   all_reduce             gloo::allreduce (ring), with gloo's sum, product,
//                          min, max for f32, f64 and the integer types, and
//                          reduce functions of our own for band, bor, bxor
//                          and for f16 and bf16 (widened to float, combined,
//                          rounded back, as the MPI backend does); avg is a
//                          sum and a local division (truncating for
//                          integers). Send == Recv runs in place.
//   all_gather             gloo::allgather (ring).
//   all_gather_padded      gloo::allgatherv of each member's data elements
//                          only (their offsets are j * count, as the padded
//                          layout wants); the padding zeroed here.
//   reduce_scatter(_padded) gloo::alltoallv + a local reduction: see
//                          reduceScatterBlocks for why not gloo's old-style
//                          ReduceScatterHalvingDoubling, and for the bytes.
//   all_to_all             gloo::alltoall.
//   all_to_all_padded      gloo::alltoallv of the data elements only, each
//                          block at j * count (StridedAlltoallv); the padding
//                          zeroed here.
//   broadcast              gloo::broadcast (binomial tree), any root.
//   permute (sendRecv)     unbound buffers: a recv posted, a send, both
//                          waited for.
//   send / recv            unbound buffers, one message each (see p2pSlot).
//   barrier                gloo::barrier (dissemination).
//   split                  gloo::allgather of (color, key) over the parent,
//                          then a new full mesh for each group.
//   native handle          the communicator's gloo::Context*.
//
// The tag of every collective is a digest of its kind and shape (bytes,
// dtype, reduction, root). gloo's TCP transport checks message sizes on its
// event-loop thread, where a mismatch (a rank calling with another count)
// ends the process; different tags never match, so such a call waits and
// times out with a message instead. Operations on one communicator must not
// run concurrently (as with MPI); different communicators may.
//
// A send completes when the receiver has posted the matching recv (gloo
// moves data only then), like MPI_Ssend or NCCL, not when MPI would have
// buffered it: two ranks that both send before they receive wait for each
// other until the timeout. SIGPIPE is blocked around every call into gloo
// (see SigpipeBlock), so a peer that closed its connections is an error,
// not the end of the process.
//
//===----------------------------------------------------------------------===//

#include "GlooPluginApi.h"

#include "HostReduce.h"
#include "meshrt/Half.h"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/config.h>
#include <gloo/context.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

/// One communicator: a connected gloo context and what messages need.
struct MeshrtGlooComm {
  /// The gloo context (a rendezvous::Context with its full mesh of pairs).
  std::shared_ptr<gloo::rendezvous::Context> Ctx;
  /// The TCP device its pairs run on (shared with other communicators).
  std::shared_ptr<gloo::transport::Device> Device;
  /// "world", "mesh 'm' axes [x]": names it in messages.
  std::string Label;
  /// The key prefix of its rendezvous.
  std::string Prefix;
  int64_t Rank = 0;
  int64_t Size = 1;
  /// The timeout as given (0: none), for messages and splits.
  double TimeoutSeconds = 0;
  /// The timeout of every gloo operation.
  std::chrono::milliseconds Timeout{0};
  /// Why the communicator is unusable ("" while it is fine): gloo closes
  /// every pair of a context after a transport error or a timeout.
  std::string Broken;
  /// Receive area of reduce_scatter (grows, never shrinks).
  std::vector<unsigned char> Scratch;
  /// The most bytes one round of reduce_scatter receives into Scratch.
  int64_t ScratchBytes = 0;
};

using namespace meshrt::detail;

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The message of the last failed call, per thread (see LastError).
thread_local std::string LastErrorText;

/// An error of the plugin's own, with the status it returns.
struct Failure : std::runtime_error {
  Failure(meshrt_status S, const std::string &Message)
      : std::runtime_error(Message), Status(S) {}
  meshrt_status Status;
};

/// gloo's message without the "[./gloo/...cc:123] " that GLOO_ERROR_MSG puts
/// in front.
std::string glooReason(const char *What) {
  std::string S = What ? What : "";
  if (S.size() > 1 && S[0] == '[') {
    size_t End = S.find("] ");
    if (End != std::string::npos && S.find(':') < End)
      S.erase(0, End + 2);
  }
  return S;
}

/// "3 s", "0.5 s", "no timeout".
std::string formatTimeout(double Seconds) {
  if (!(Seconds > 0))
    return "no timeout";
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%g s", Seconds);
  return Buf;
}

/// "gloo all_reduce on world (rank 1 of 4)".
std::string where(const MeshrtGlooComm *C, const char *Op) {
  std::string S = std::string("gloo ") + Op;
  if (C)
    S += " on " + C->Label + " (rank " + std::to_string(C->Rank) + " of " +
         std::to_string(C->Size) + ")";
  return S;
}

meshrt_status setError(meshrt_status S, std::string Message) {
  LastErrorText = std::move(Message);
  return S;
}

/// Blocks SIGPIPE on the calling thread while it lives, and discards one
/// that a write raised meanwhile. gloo writes to its sockets with writev,
/// which raises SIGPIPE on a connection the peer closed, and the default
/// action ends the process; blocked, the write fails with EPIPE and gloo
/// reports the peer as gone. gloo's event-loop thread, started while
/// blocked, inherits the mask. A SIGPIPE already blocked stays the caller's.
class SigpipeBlock {
public:
  SigpipeBlock() {
    sigemptyset(&Pipe);
    sigaddset(&Pipe, SIGPIPE);
    Active = pthread_sigmask(SIG_BLOCK, &Pipe, &Old) == 0 &&
             !sigismember(&Old, SIGPIPE);
  }
  ~SigpipeBlock() {
    if (!Active)
      return;
    sigset_t Pending;
    if (sigpending(&Pending) == 0 && sigismember(&Pending, SIGPIPE)) {
      timespec Zero = {0, 0};
      while (sigtimedwait(&Pipe, nullptr, &Zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &Old, nullptr);
  }
  SigpipeBlock(const SigpipeBlock &) = delete;
  SigpipeBlock &operator=(const SigpipeBlock &) = delete;

private:
  sigset_t Pipe, Old;
  bool Active = false;
};

/// Runs `Body`, the work of entry point `Op` on `C` (null for none), and
/// turns whatever it throws into a status and LastError().
template <typename F>
meshrt_status guarded(MeshrtGlooComm *C, const char *Op, F &&Body) noexcept {
  SigpipeBlock NoSigpipe;
  try {
    if (C && !C->Broken.empty())
      throw Failure(MESHRT_ERROR_BACKEND,
                    where(C, Op) +
                        ": the communicator is unusable after an earlier "
                        "error: " +
                        C->Broken);
    Body();
    return MESHRT_SUCCESS;
  } catch (const Failure &E) {
    return setError(E.Status, E.what());
  } catch (const gloo::IoException &E) {
    // A peer died, closed its connections or did not take part within the
    // timeout; gloo has closed every pair of the context.
    std::string Message =
        where(C, Op) + " failed: " + glooReason(E.what()) +
        " (a peer exited, closed its connections, or did not reach this "
        "operation within the timeout: " +
        formatTimeout(C ? C->TimeoutSeconds : 0) + ")";
    if (C)
      C->Broken = Message;
    return setError(MESHRT_ERROR_BACKEND, Message);
  } catch (const gloo::EnforceNotMet &E) {
    return setError(MESHRT_ERROR_BACKEND,
                    where(C, Op) + " failed: gloo: " + E.what());
  } catch (const gloo::Exception &E) {
    if (C)
      C->Broken = glooReason(E.what());
    return setError(MESHRT_ERROR_BACKEND,
                    where(C, Op) + " failed: " + glooReason(E.what()));
  } catch (const std::bad_alloc &) {
    return setError(MESHRT_ERROR_BACKEND, where(C, Op) + ": out of memory");
  } catch (const std::exception &E) {
    return setError(MESHRT_ERROR_BACKEND,
                    where(C, Op) + " failed: " + E.what());
  } catch (...) {
    return setError(MESHRT_ERROR_BACKEND,
                    where(C, Op) + " failed: an unknown exception");
  }
}

/// Sorted ranks with runs compressed: {3, 5, 6, 7} -> "3, 5-7".
std::string formatRanks(std::vector<int64_t> Ranks) {
  std::sort(Ranks.begin(), Ranks.end());
  std::string S;
  for (size_t I = 0; I < Ranks.size();) {
    size_t J = I;
    while (J + 1 < Ranks.size() && Ranks[J + 1] == Ranks[J] + 1)
      ++J;
    S += (S.empty() ? "" : ", ") + std::to_string(Ranks[I]);
    if (J > I)
      S += (J == I + 1 ? ", " : "-") + std::to_string(Ranks[J]);
    I = J + 1;
  }
  return S;
}

//===----------------------------------------------------------------------===//
// Timeouts
//===----------------------------------------------------------------------===//

/// What "no timeout" becomes: gloo needs a finite one (its waits use
/// condition_variable::wait_for, and 0 means "do not wait").
constexpr double NoTimeoutSeconds = 365.0 * 24 * 3600;

/// The gloo timeout for `Seconds` (0: none); at least 1 ms.
std::chrono::milliseconds glooTimeout(double Seconds) {
  if (!(Seconds > 0) || Seconds > NoTimeoutSeconds)
    Seconds = NoTimeoutSeconds;
  return std::chrono::milliseconds(
      std::max<int64_t>(1, int64_t(std::ceil(Seconds * 1e3))));
}

/// The bytes of scratch one round of reduceScatterBlocks receives at most,
/// unless MESHRT_GLOO_SCRATCH_BYTES says otherwise (for tests of the
/// rounds).
constexpr int64_t DefaultScratchBytes = int64_t(64) << 20;

//===----------------------------------------------------------------------===//
// The host's store as a gloo::rendezvous::Store
//===----------------------------------------------------------------------===//

/// A MeshrtGlooSink that keeps the bytes in a string.
class StringSink {
public:
  StringSink() : Sink{this, &put} {}
  StringSink(const StringSink &) = delete;
  StringSink &operator=(const StringSink &) = delete;
  MeshrtGlooSink *sink() { return &Sink; }
  std::string Text;

private:
  static void put(void *Ctx, const void *Data, size_t Size) {
    static_cast<StringSink *>(Ctx)->Text.assign(static_cast<const char *>(Data),
                                                Size);
  }
  MeshrtGlooSink Sink;
};

/// gloo's rendezvous store on the host's callbacks, every key under
/// `Prefix` + "/". Throws Failure with the host's status and message.
class HostStore final : public gloo::rendezvous::Store {
public:
  HostStore(const MeshrtGlooStore &S, std::string Prefix, double Seconds)
      : S(S), Prefix(std::move(Prefix)), Seconds(Seconds) {}

  void set(const std::string &Key, const std::vector<char> &Data) override {
    StringSink Err;
    meshrt_status St =
        S.Set(S.Ctx, key(Key).c_str(), Data.data(), Data.size(), Err.sink());
    if (St != MESHRT_SUCCESS)
      throw Failure(St, Err.Text);
  }

  std::vector<char> get(const std::string &Key) override {
    StringSink Value, Err;
    meshrt_status St =
        S.Get(S.Ctx, key(Key).c_str(), Seconds, Value.sink(), Err.sink());
    if (St != MESHRT_SUCCESS)
      throw Failure(St, Err.Text);
    return std::vector<char>(Value.Text.begin(), Value.Text.end());
  }

  void wait(const std::vector<std::string> &Keys) override {
    waitFor(Keys, Seconds);
  }

  void wait(const std::vector<std::string> &Keys,
            const std::chrono::milliseconds &Timeout) override {
    waitFor(Keys,
            Timeout.count() > 0 ? double(Timeout.count()) / 1e3 : Seconds);
  }

  /// Which of `Keys` (without the prefix) are set; throws Failure.
  std::vector<bool> exist(const std::vector<std::string> &Keys) {
    std::vector<std::string> Full;
    std::vector<const char *> Ptrs;
    for (const std::string &K : Keys)
      Full.push_back(key(K));
    for (const std::string &K : Full)
      Ptrs.push_back(K.c_str());
    std::vector<uint8_t> Flags(Keys.size());
    StringSink Err;
    meshrt_status St =
        S.Check(S.Ctx, Ptrs.data(), Ptrs.size(), Flags.data(), Err.sink());
    if (St != MESHRT_SUCCESS)
      throw Failure(St, Err.Text);
    return std::vector<bool>(Flags.begin(), Flags.end());
  }

  /// The key of `Key` in the host's store.
  std::string key(const std::string &Key) const { return Prefix + "/" + Key; }

private:
  void waitFor(const std::vector<std::string> &Keys, double T) {
    std::vector<std::string> Full;
    std::vector<const char *> Ptrs;
    for (const std::string &K : Keys)
      Full.push_back(key(K));
    for (const std::string &K : Full)
      Ptrs.push_back(K.c_str());
    StringSink Err;
    meshrt_status St = S.Wait(S.Ctx, Ptrs.data(), Ptrs.size(), T, Err.sink());
    if (St != MESHRT_SUCCESS)
      throw Failure(St, Err.Text);
  }

  const MeshrtGlooStore &S;
  std::string Prefix;
  double Seconds;
};

//===----------------------------------------------------------------------===//
// The TCP device
//===----------------------------------------------------------------------===//

/// The value of environment variable `Name`, or "" if unset.
std::string env(const char *Name) {
  const char *V = std::getenv(Name);
  return V ? V : "";
}

/// This machine's hostname if it resolves, else "127.0.0.1"; `How` says
/// which, for messages.
std::string defaultHostname(std::string &How) {
  char Name[HOST_NAME_MAX + 1] = {};
  if (gethostname(Name, sizeof(Name) - 1) != 0 || !*Name) {
    How = "127.0.0.1 (this machine has no hostname)";
    return "127.0.0.1";
  }
  addrinfo Hints{};
  Hints.ai_family = AF_UNSPEC;
  Hints.ai_socktype = SOCK_STREAM;
  addrinfo *Res = nullptr;
  if (getaddrinfo(Name, nullptr, &Hints, &Res) != 0 || !Res) {
    How =
        std::string("127.0.0.1 (the hostname '") + Name + "' does not resolve)";
    return "127.0.0.1";
  }
  freeaddrinfo(Res);
  How = std::string("this machine's hostname '") + Name + "'";
  return Name;
}

/// The TCP device of this process for the configured address, shared by
/// every communicator that uses it. Throws Failure naming the variable that
/// chose the address.
std::shared_ptr<gloo::transport::Device> sharedDevice() {
  gloo::transport::tcp::attr A;
  std::string How, Key;
  bool Default = false;
  if (std::string H = env("MESHRT_GLOO_HOSTNAME"); !H.empty()) {
    A.hostname = H;
    How = "MESHRT_GLOO_HOSTNAME=" + H;
  } else if (std::string I = env("MESHRT_GLOO_IFNAME"); !I.empty()) {
    A.iface = I;
    How = "MESHRT_GLOO_IFNAME=" + I;
  } else if (std::string T = env("GLOO_SOCKET_IFNAME"); !T.empty()) {
    A.iface = T.substr(0, T.find(',')); // PyTorch allows a list.
    How = "GLOO_SOCKET_IFNAME=" + T;
  } else {
    A.hostname = defaultHostname(How);
    Default = true;
  }
  Key = A.iface.empty() ? "host " + A.hostname : "iface " + A.iface;

  static std::mutex Mutex;
  static std::map<std::string, std::weak_ptr<gloo::transport::Device>> Devices;
  std::lock_guard<std::mutex> Lock(Mutex);
  if (auto D = Devices[Key].lock())
    return D;
  std::shared_ptr<gloo::transport::Device> D;
  try {
    D = gloo::transport::tcp::CreateDevice(A);
  } catch (const std::exception &E) {
    std::string Why = glooReason(E.what());
    if (!Default || A.hostname == "127.0.0.1")
      throw Failure(MESHRT_ERROR_BACKEND,
                    "gloo cannot use the address of " + How + ": " + Why +
                        " (set MESHRT_GLOO_HOSTNAME to an address of this "
                        "machine or MESHRT_GLOO_IFNAME to a network "
                        "interface)");
    // The hostname resolves to nothing this machine can bind: loopback.
    A.hostname = "127.0.0.1";
    Key = "host 127.0.0.1";
    if (auto L = Devices[Key].lock())
      return L;
    D = gloo::transport::tcp::CreateDevice(A);
  }
  Devices[Key] = D;
  return D;
}

//===----------------------------------------------------------------------===//
// Rendezvous
//===----------------------------------------------------------------------===//

/// Connects rank `Rank` of `Size` under `Prefix` of the host's store. For a
/// group of a split, `WorldRanks` gives the members' ranks in the parent
/// (for messages). Throws Failure.
std::unique_ptr<MeshrtGlooComm>
connect(const MeshrtGlooStore &S, const std::string &Prefix, int64_t Rank,
        int64_t Size, double TimeoutSeconds, const std::string &Label,
        const std::vector<int64_t> *WorldRanks) {
  auto C = std::make_unique<MeshrtGlooComm>();
  C->Label = Label;
  C->Prefix = Prefix;
  C->Rank = Rank;
  C->Size = Size;
  C->TimeoutSeconds = TimeoutSeconds;
  C->Timeout = glooTimeout(TimeoutSeconds);
  C->ScratchBytes = DefaultScratchBytes;
  if (std::string B = env("MESHRT_GLOO_SCRATCH_BYTES"); !B.empty())
    C->ScratchBytes = std::max<int64_t>(1, std::atoll(B.c_str()));
  C->Device = sharedDevice();
  C->Ctx = std::make_shared<gloo::rendezvous::Context>(int(Rank), int(Size));
  C->Ctx->setTimeout(C->Timeout);
  double StoreSeconds = TimeoutSeconds > 0 ? TimeoutSeconds : NoTimeoutSeconds;
  HostStore Store(S, Prefix, StoreSeconds);
  std::string Head = "gloo rendezvous of " + Label + " (rank " +
                     std::to_string(Rank) + " of " + std::to_string(Size) +
                     ", store keys '" + Prefix + "/...') failed: ";
  try {
    C->Ctx->connectFullMesh(Store, C->Device);
    // connectFullMesh returns on a rank once its own side of every pair is
    // set up, which can be before its peers' sides are: a rank that then
    // destroys the communicator at once (a mesh declared and the runtime
    // finalized) closed the sockets under a peer still connecting
    // ("Connection closed by peer" there, seen on 8 ranks on 2 cores). A
    // barrier on the new context makes the creation complete on every
    // member before any returns.
    gloo::BarrierOptions Done(C->Ctx);
    Done.setTimeout(C->Timeout);
    gloo::barrier(Done);
  } catch (const Failure &E) {
    if (E.Status == MESHRT_ERROR_INVALID_ARGUMENT)
      throw Failure(E.Status, Head + E.what());
    // gloo's first step is every rank setting "rank_<r>": ranks without
    // it never arrived.
    std::string Missing;
    try {
      std::vector<std::string> Keys;
      for (int64_t R = 0; R < Size; ++R)
        Keys.push_back("rank_" + std::to_string(R));
      std::vector<bool> There = Store.exist(Keys);
      std::vector<int64_t> Absent, AbsentWorld;
      for (int64_t R = 0; R < Size; ++R)
        if (!There[size_t(R)]) {
          Absent.push_back(R);
          if (WorldRanks)
            AbsentWorld.push_back((*WorldRanks)[size_t(R)]);
        }
      if (!Absent.empty()) {
        Missing = (Absent.size() == 1 ? "rank " : "ranks ") +
                  formatRanks(Absent) + " of " + std::to_string(Size);
        if (WorldRanks)
          Missing += std::string(" (") +
                     (AbsentWorld.size() == 1 ? "rank " : "ranks ") +
                     formatRanks(AbsentWorld) + " of the parent)";
        Missing += " did not arrive within " + formatTimeout(TimeoutSeconds) +
                   " (no key '" +
                   Store.key("rank_" + std::to_string(Absent[0])) + "'); ";
      }
    } catch (const Failure &) {
      // The store itself failed: its own message below says how.
    }
    throw Failure(MESHRT_ERROR_BACKEND, Head + Missing + E.what());
  } catch (const gloo::EnforceNotMet &E) {
    throw Failure(MESHRT_ERROR_BACKEND, Head + "gloo: " + E.what());
  } catch (const std::exception &E) {
    throw Failure(MESHRT_ERROR_BACKEND,
                  Head + glooReason(E.what()) +
                      " (a peer exited or cannot be reached at the address "
                      "it published; see MESHRT_GLOO_HOSTNAME and "
                      "MESHRT_GLOO_IFNAME)");
  }
  return C;
}

//===----------------------------------------------------------------------===//
// Element types and reductions
//===----------------------------------------------------------------------===//

/// Bytes per element of `T` (valid).
size_t elementBytes(meshrt_dtype T) {
  static constexpr size_t Sizes[] = {2, 2, 4, 8, 1, 4, 8, 1};
  return unsigned(T) < 8 ? Sizes[T] : 0;
}

/// Calls `Fn(E())` with E the unsigned integer of `Bytes` bytes: gloo's
/// typed setters only take the element size from the type.
template <typename F> void withElementType(size_t Bytes, F &&Fn) {
  switch (Bytes) {
  case 1:
    return Fn(uint8_t());
  case 2:
    return Fn(uint16_t());
  case 4:
    return Fn(uint32_t());
  default:
    return Fn(uint64_t());
  }
}

/// A reduction: Out[i] = A[i] op B[i] for i < N (Out may be A or B); the
/// signature of gloo::AllreduceOptions::Func and of gloo::sum<T>.
using ReduceFn = void (*)(void *Out, const void *A, const void *B, size_t N);

struct AndOp {
  template <typename T> static T apply(T A, T B) { return T(A & B); }
};
struct OrOp {
  template <typename T> static T apply(T A, T B) { return T(A | B); }
};
struct XorOp {
  template <typename T> static T apply(T A, T B) { return T(A ^ B); }
};

template <typename T, typename Op>
void bitwise(void *Out, const void *A, const void *B, size_t N) {
  T *O = static_cast<T *>(Out);
  const T *X = static_cast<const T *>(A);
  const T *Y = static_cast<const T *>(B);
  for (size_t I = 0; I < N; ++I)
    O[I] = Op::apply(X[I], Y[I]);
}

/// A 16-bit float reduction: widen to float, combine, round back (ties to
/// even), as the MPI backend's user-defined MPI_Ops do.
template <typename Format, typename Fn>
void reduce16(void *Out, const void *A, const void *B, size_t N) {
  uint16_t *O = static_cast<uint16_t *>(Out);
  const uint16_t *X = static_cast<const uint16_t *>(A);
  const uint16_t *Y = static_cast<const uint16_t *>(B);
  for (size_t I = 0; I < N; ++I)
    O[I] = Format::store(Fn::apply(Format::load(X[I]), Format::load(Y[I])));
}

template <typename Format> ReduceFn reduce16For(meshrt_reduce_op Op) {
  switch (Op) {
  case MESHRT_SUM:
  case MESHRT_AVG:
    return &reduce16<Format, SumFn>;
  case MESHRT_PROD:
    return &reduce16<Format, ProdFn>;
  case MESHRT_MIN:
    return &reduce16<Format, MinFn>;
  case MESHRT_MAX:
    return &reduce16<Format, MaxFn>;
  default:
    return nullptr; // Bitwise: rejected by the runtime's checks.
  }
}

/// gloo's own sum, product, min and max for a native type; ours for the
/// bitwise reductions (gloo has none).
template <typename T> ReduceFn nativeFor(meshrt_reduce_op Op) {
  switch (Op) {
  case MESHRT_SUM:
  case MESHRT_AVG:
    return &gloo::sum<T>;
  case MESHRT_PROD:
    return &gloo::product<T>;
  case MESHRT_MIN:
    return &gloo::min<T>;
  case MESHRT_MAX:
    return &gloo::max<T>;
  case MESHRT_BAND:
  case MESHRT_BOR:
  case MESHRT_BXOR:
    if constexpr (std::is_integral_v<T>) {
      if (Op == MESHRT_BAND)
        return &bitwise<T, AndOp>;
      return Op == MESHRT_BOR ? &bitwise<T, OrOp> : &bitwise<T, XorOp>;
    }
    break;
  }
  return nullptr;
}

/// The reduction `Op` on `T` (avg: its sum); throws Failure for a pair the
/// runtime should have rejected.
ReduceFn reduceFor(meshrt_dtype T, meshrt_reduce_op Op) {
  ReduceFn F = nullptr;
  switch (T) {
  case MESHRT_F16:
    F = reduce16For<HalfFormat>(Op);
    break;
  case MESHRT_BF16:
    F = reduce16For<BFloat16Format>(Op);
    break;
  case MESHRT_F32:
    F = nativeFor<float>(Op);
    break;
  case MESHRT_F64:
    F = nativeFor<double>(Op);
    break;
  case MESHRT_I8:
    F = nativeFor<int8_t>(Op);
    break;
  case MESHRT_I32:
    F = nativeFor<int32_t>(Op);
    break;
  case MESHRT_I64:
    F = nativeFor<int64_t>(Op);
    break;
  case MESHRT_U8:
    F = nativeFor<uint8_t>(Op);
    break;
  }
  if (!F)
    throw Failure(MESHRT_ERROR_UNSUPPORTED,
                  "reduction " + std::to_string(int(Op)) + " on dtype " +
                      std::to_string(int(T)) +
                      " is not supported by the gloo backend");
  return F;
}

//===----------------------------------------------------------------------===//
// Tags and slots
//===----------------------------------------------------------------------===//

/// Kinds of operation, for tags.
enum class Kind : uint64_t {
  AllReduce = 1,
  AllGather,
  AllGatherPadded,
  ReduceScatter,
  AllToAll,
  AllToAllPadded,
  Broadcast,
  Barrier,
  Split,
};

/// The 32-bit tag of a collective: a digest (FNV-1a) of its kind and shape,
/// equal on every member that makes the same call.
uint32_t shapeTag(Kind K, std::initializer_list<uint64_t> Shape) {
  uint64_t H = 1469598103934665603ull;
  auto Mix = [&H](uint64_t V) {
    for (int I = 0; I < 8; ++I, V >>= 8) {
      H ^= V & 0xff;
      H *= 1099511628211ull;
    }
  };
  Mix(uint64_t(K));
  for (uint64_t V : Shape)
    Mix(V);
  return uint32_t(H ^ (H >> 32));
}

/// The most bytes one send or recv may move: the slot keeps 40 bits of it.
constexpr uint64_t MaxMessageBytes = uint64_t(1) << 40;

/// The slot of a send/recv: the tag in the low 16 bits and the byte count
/// above it. gloo pairs messages by slot, and its TCP transport checks a
/// message's size against the receive only on its event-loop thread, where
/// a mismatch ends the process; with the size in the slot, a recv whose
/// count or dtype differs from the send's never matches it and times out
/// with a message instead. The top byte stays 0, so that no slot of gloo's
/// collectives (prefix << 56, prefix >= 1) can equal it.
uint64_t p2pSlot(uint64_t Bytes, int64_t Tag) {
  return (Bytes << 16) | (uint64_t(Tag) & 0xffff);
}

/// The slots of permute (sendRecv): a prefix byte of their own (gloo's
/// collectives use 1-8), and the size, for the same reason as p2pSlot.
uint64_t permuteSlot(uint64_t Bytes) { return (uint64_t(0x70) << 56) | Bytes; }

void requireMessageBytes(uint64_t Bytes, const char *Op) {
  if (Bytes >= MaxMessageBytes)
    throw Failure(MESHRT_ERROR_UNSUPPORTED,
                  std::string(Op) +
                      " of 2^40 bytes or more in one message is not supported "
                      "on the gloo backend");
}

/// Waits for `Buf`'s send or recv; an abort (which nothing here requests)
/// is an error.
void waitSend(MeshrtGlooComm &C, gloo::transport::UnboundBuffer &Buf) {
  if (!Buf.waitSend(C.Timeout))
    throw Failure(MESHRT_ERROR_BACKEND, "the send was aborted");
}
void waitRecv(MeshrtGlooComm &C, gloo::transport::UnboundBuffer &Buf) {
  if (!Buf.waitRecv(C.Timeout))
    throw Failure(MESHRT_ERROR_BACKEND, "the recv was aborted");
}

//===----------------------------------------------------------------------===//
// Strided all-to-all
//===----------------------------------------------------------------------===//

/// gloo::alltoallv with each member's block at a byte offset of our choice.
/// gloo's own setters put block j right after block j - 1 (the offsets are
/// the sums of the lengths before), while the padded collectives keep block
/// j at j * count whatever its length; this fills in the same protected
/// fields that those setters compute.
class StridedAlltoallv : public gloo::AlltoallvOptions {
public:
  StridedAlltoallv(MeshrtGlooComm &C, const void *In, size_t InBytes,
                   std::vector<size_t> InOffsets, std::vector<size_t> InLengths,
                   void *Out, size_t OutBytes, std::vector<size_t> OutOffsets,
                   std::vector<size_t> OutLengths, uint32_t Tag)
      : gloo::AlltoallvOptions(C.Ctx) {
    elementSize = 1;
    in = context->createUnboundBuffer(const_cast<void *>(In), InBytes);
    out = context->createUnboundBuffer(Out, OutBytes);
    inOffsetPerRank = std::move(InOffsets);
    inLengthPerRank = std::move(InLengths);
    outOffsetPerRank = std::move(OutOffsets);
    outLengthPerRank = std::move(OutLengths);
    setTag(Tag);
    setTimeout(C.Timeout);
  }
};

/// The data elements of member `J`'s block of `Count` when the first
/// `Valid` elements of the blocks hold data (BackendComm::validIn).
int64_t validIn(int64_t J, int64_t Count, int64_t Valid) {
  int64_t Left = Valid - J * Count;
  return Left <= 0 ? 0 : (Left < Count ? Left : Count);
}

/// Reduce-scatter of `Size` blocks of `Count` elements at Send: member j
/// gets the reduction of the first Valid[j] elements of everyone's block j
/// in Recv, the rest of its Recv zeroed (Valid[j] = Count everywhere for
/// the unpadded collective).
///
/// Composed of gloo collectives: an alltoallv moves every member's block j
/// to member j (packed in a scratch area), which reduces the Size pieces
/// locally, in rank order. Bytes: each member sends the (Size - 1) blocks
/// that are not its own and receives (Size - 1) pieces of its own, i.e.
/// (Size - 1) / Size of the buffer each way, which is what a ring or
/// halving-doubling reduce-scatter moves (the bandwidth optimum); it costs a
/// scratch of Size blocks (bounded: long blocks go in rounds of at most
/// 64 MiB received) and
/// sends Size - 1 messages at once where a ring sends one per step.
///
/// Not gloo's ReduceScatterHalvingDoubling<T>, which could serve every
/// dtype and reduction through a custom ReductionFunction<T> (and computes
/// correctly, including uneven and zero receive counts): it is an old-style
/// algorithm whose byte count is an int (nothing above 2 GiB), that takes
/// 4 * Size * (Size - 1) fresh context slots at each construction (an int
/// counter that never rewinds), and whose buffers are bound to slots when
/// it is constructed: constructed per call, a peer's data that arrives
/// before this member has constructed its instance makes gloo's event-loop
/// thread spin until it does, i.e. a busy core for as long as the members
/// are out of step.
void reduceScatterBlocks(MeshrtGlooComm &C, const void *Send, void *Recv,
                         int64_t Count, const std::vector<int64_t> &Valid,
                         meshrt_dtype T, meshrt_reduce_op Op, uint32_t Tag) {
  const size_t P = size_t(C.Size), Me = size_t(C.Rank);
  const int64_t Elem = int64_t(elementBytes(T));
  const int64_t Mine = Valid[Me];
  const ReduceFn Fn = reduceFor(T, Op);
  const char *In = static_cast<const char *>(Send);
  char *Res = static_cast<char *>(Recv);
  if (P == 1) {
    std::memcpy(Res, In, size_t(Mine * Elem));
  } else {
    const int64_t Longest = *std::max_element(Valid.begin(), Valid.end());
    const int64_t Chunk =
        std::max<int64_t>(1, C.ScratchBytes / (int64_t(P) * Elem));
    for (int64_t A = 0; A < Longest; A += Chunk) {
      const int64_t Len = std::min(Chunk, Longest - A);
      auto Part = [&](int64_t V) {
        return std::max<int64_t>(0, std::min(V - A, Len));
      };
      const int64_t Got = Part(Mine);
      std::vector<size_t> SendOff(P), SendLen(P), RecvOff(P), RecvLen(P);
      for (size_t J = 0; J < P; ++J) {
        SendOff[J] = size_t((int64_t(J) * Count + A) * Elem);
        SendLen[J] = size_t(Part(Valid[J]) * Elem);
        RecvOff[J] = size_t(int64_t(J) * Got * Elem);
        RecvLen[J] = size_t(Got * Elem);
      }
      const size_t Need = std::max<size_t>(1, P * size_t(Got * Elem));
      if (C.Scratch.size() < Need)
        C.Scratch.resize(Need);
      unsigned char *S = C.Scratch.data();
      StridedAlltoallv O(C, In, P * size_t(Count * Elem), std::move(SendOff),
                         std::move(SendLen), S, P * size_t(Got * Elem),
                         std::move(RecvOff), std::move(RecvLen), Tag);
      gloo::alltoallv(O);
      if (Got == 0)
        continue;
      char *Dst = Res + A * Elem;
      const size_t Piece = size_t(Got * Elem);
      Fn(Dst, S, S + Piece, size_t(Got));
      for (size_t J = 2; J < P; ++J)
        Fn(Dst, Dst, S + J * Piece, size_t(Got));
    }
  }
  if (Op == MESHRT_AVG)
    divideBy(Res, Mine, T, int64_t(P));
  std::memset(Res + Mine * Elem, 0, size_t((Count - Mine) * Elem));
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

const char *lastError() { return LastErrorText.c_str(); }

meshrt_status createWorld(const MeshrtGlooStore *Store, const char *Prefix,
                          int64_t Rank, int64_t Size, double TimeoutSeconds,
                          const char *Label, MeshrtGlooComm **Out) {
  if (Out)
    *Out = nullptr;
  return guarded(nullptr, "create world", [&] {
    if (!Store || !Prefix || !Label || !Out)
      throw Failure(MESHRT_ERROR_INVALID_ARGUMENT,
                    "gloo CreateWorld: null argument");
    if (Size < 1 || Size > INT_MAX || Rank < 0 || Rank >= Size)
      throw Failure(MESHRT_ERROR_INVALID_ARGUMENT,
                    "gloo CreateWorld: rank " + std::to_string(Rank) + " of " +
                        std::to_string(Size) + " is out of range");
    *Out = connect(*Store, Prefix, Rank, Size, TimeoutSeconds, Label, nullptr)
               .release();
  });
}

meshrt_status split(MeshrtGlooComm *World, const MeshrtGlooStore *Store,
                    const char *Prefix, int64_t Color, int64_t Key,
                    const char *Label, MeshrtGlooComm **Out) {
  if (Out)
    *Out = nullptr;
  std::string Op = std::string("split for ") + (Label ? Label : "?");
  return guarded(World, Op.c_str(), [&] {
    if (!World || !Store || !Prefix || !Label || !Out)
      throw Failure(MESHRT_ERROR_INVALID_ARGUMENT, "gloo Split: null argument");
    // Everyone's (color, key), in world rank order.
    const size_t N = size_t(World->Size);
    int64_t Mine[2] = {Color, Key};
    std::vector<int64_t> All(2 * N);
    gloo::AllgatherOptions O(World->Ctx);
    O.setInput(Mine, 2);
    O.setOutput(All.data(), All.size());
    O.setTag(shapeTag(Kind::Split, {N}));
    O.setTimeout(World->Timeout);
    gloo::allgather(O);
    if (Color < 0)
      return;
    std::vector<std::pair<int64_t, int64_t>> Members; // (key, world rank)
    for (size_t W = 0; W < N; ++W)
      if (All[2 * W] == Color)
        Members.push_back({All[2 * W + 1], int64_t(W)});
    std::sort(Members.begin(), Members.end());
    std::vector<int64_t> WorldRanks;
    int64_t GroupRank = 0;
    for (const auto &M : Members) {
      if (M.second == World->Rank)
        GroupRank = int64_t(WorldRanks.size());
      WorldRanks.push_back(M.second);
    }
    *Out = connect(*Store, std::string(Prefix) + "/" + std::to_string(Color),
                   GroupRank, int64_t(WorldRanks.size()), World->TimeoutSeconds,
                   Label, &WorldRanks)
               .release();
  });
}

void destroy(MeshrtGlooComm *C) {
  SigpipeBlock NoSigpipe;
  try {
    delete C;
  } catch (...) {
    // Closing connections does not throw; nothing to report if it did.
  }
}

int64_t commRank(const MeshrtGlooComm *C) { return C ? C->Rank : -1; }
int64_t commSize(const MeshrtGlooComm *C) { return C ? C->Size : 0; }

meshrt_status allReduce(MeshrtGlooComm *C, const void *Send, void *Recv,
                        int64_t Count, meshrt_dtype T, meshrt_reduce_op Op) {
  return guarded(C, "all_reduce", [&] {
    if (Count <= 0)
      return;
    ReduceFn Fn = reduceFor(T, Op);
    withElementType(elementBytes(T), [&](auto Zero) {
      using E = decltype(Zero);
      gloo::AllreduceOptions O(C->Ctx);
      if (Send != Recv) // Without an input, gloo reduces the output in place.
        O.setInput(static_cast<E *>(const_cast<void *>(Send)), size_t(Count));
      O.setOutput(static_cast<E *>(Recv), size_t(Count));
      O.setReduceFunction(Fn);
      O.setTag(shapeTag(Kind::AllReduce,
                        {uint64_t(Count), uint64_t(T), uint64_t(Op)}));
      O.setTimeout(C->Timeout);
      gloo::allreduce(O);
    });
    if (Op == MESHRT_AVG)
      divideBy(Recv, Count, T, C->Size);
  });
}

meshrt_status allGather(MeshrtGlooComm *C, const void *Send, void *Recv,
                        int64_t Count, meshrt_dtype T) {
  return guarded(C, "all_gather", [&] {
    if (Count <= 0)
      return;
    size_t Bytes = size_t(Count) * elementBytes(T);
    gloo::AllgatherOptions O(C->Ctx);
    O.setInput(static_cast<char *>(const_cast<void *>(Send)), Bytes);
    O.setOutput(static_cast<char *>(Recv), Bytes * size_t(C->Size));
    O.setTag(shapeTag(Kind::AllGather, {Bytes, uint64_t(T)}));
    O.setTimeout(C->Timeout);
    gloo::allgather(O);
  });
}

meshrt_status reduceScatter(MeshrtGlooComm *C, const void *Send, void *Recv,
                            int64_t Count, meshrt_dtype T,
                            meshrt_reduce_op Op) {
  return guarded(C, "reduce_scatter", [&] {
    if (Count <= 0)
      return;
    std::vector<int64_t> Valid(size_t(C->Size), Count);
    reduceScatterBlocks(*C, Send, Recv, Count, Valid, T, Op,
                        shapeTag(Kind::ReduceScatter,
                                 {uint64_t(Count), uint64_t(T), uint64_t(Op)}));
  });
}

meshrt_status allGatherPadded(MeshrtGlooComm *C, const void *Send, void *Recv,
                              int64_t Count, int64_t Valid, meshrt_dtype T) {
  return guarded(C, "all_gather_padded", [&] {
    if (Count <= 0)
      return;
    // Member j's data elements, validIn(j), land at the sum of those before
    // it, which is j * Count: every block before the last one with data is
    // full. Only data moves.
    const size_t Elem = elementBytes(T);
    std::vector<size_t> Bytes(size_t(C->Size));
    for (int64_t J = 0; J < C->Size; ++J)
      Bytes[size_t(J)] = size_t(validIn(J, Count, Valid)) * Elem;
    gloo::AllgathervOptions O(C->Ctx);
    O.setInput(static_cast<char *>(const_cast<void *>(Send)),
               Bytes[size_t(C->Rank)]);
    O.setOutput(static_cast<char *>(Recv), Bytes);
    O.setTag(shapeTag(Kind::AllGatherPadded,
                      {uint64_t(Count), uint64_t(Valid), uint64_t(T)}));
    O.setTimeout(C->Timeout);
    gloo::allgatherv(O);
    std::memset(static_cast<char *>(Recv) + size_t(Valid) * Elem, 0,
                size_t(C->Size * Count - Valid) * Elem);
  });
}

meshrt_status reduceScatterPadded(MeshrtGlooComm *C, const void *Send,
                                  void *Recv, int64_t Count, int64_t Valid,
                                  meshrt_dtype T, meshrt_reduce_op Op) {
  return guarded(C, "reduce_scatter_padded", [&] {
    if (Count <= 0)
      return;
    std::vector<int64_t> PerBlock(size_t(C->Size));
    for (int64_t J = 0; J < C->Size; ++J)
      PerBlock[size_t(J)] = validIn(J, Count, Valid);
    reduceScatterBlocks(
        *C, Send, Recv, Count, PerBlock, T, Op,
        shapeTag(Kind::ReduceScatter, {uint64_t(Count), uint64_t(T),
                                       uint64_t(Op), uint64_t(Valid)}));
  });
}

meshrt_status allToAll(MeshrtGlooComm *C, const void *Send, void *Recv,
                       int64_t Count, meshrt_dtype T) {
  return guarded(C, "all_to_all", [&] {
    if (Count <= 0)
      return;
    size_t Bytes = size_t(Count) * elementBytes(T) * size_t(C->Size);
    gloo::AlltoallOptions O(C->Ctx);
    O.setInput(static_cast<char *>(const_cast<void *>(Send)), Bytes);
    O.setOutput(static_cast<char *>(Recv), Bytes);
    O.setTag(shapeTag(Kind::AllToAll, {Bytes, uint64_t(T)}));
    O.setTimeout(C->Timeout);
    gloo::alltoall(O);
  });
}

meshrt_status allToAllPadded(MeshrtGlooComm *C, const void *Send, void *Recv,
                             int64_t Count, int64_t Valid, meshrt_dtype T,
                             int32_t Side) {
  return guarded(C, "all_to_all_padded", [&] {
    if (Count <= 0)
      return;
    // The data elements of each block, at its block (see
    // MESHRT_PADDED_SPLIT / MESHRT_PADDED_CONCAT for whose share a block
    // holds), as the MPI backend's MPI_Alltoallv.
    const size_t N = size_t(C->Size), Elem = elementBytes(T);
    const size_t Block = size_t(Count) * Elem;
    const size_t Mine = size_t(validIn(C->Rank, Count, Valid)) * Elem;
    const bool Split = Side == MESHRT_PADDED_SPLIT;
    std::vector<size_t> Offsets(N), SendLen(N), RecvLen(N);
    for (size_t J = 0; J < N; ++J) {
      size_t Theirs = size_t(validIn(int64_t(J), Count, Valid)) * Elem;
      SendLen[J] = Split ? Theirs : Mine;
      RecvLen[J] = Split ? Mine : Theirs;
      Offsets[J] = J * Block;
    }
    std::vector<size_t> Got = RecvLen;
    StridedAlltoallv O(*C, Send, N * Block, Offsets, std::move(SendLen), Recv,
                       N * Block, Offsets, std::move(RecvLen),
                       shapeTag(Kind::AllToAllPadded,
                                {uint64_t(Count), uint64_t(Valid), uint64_t(T),
                                 uint64_t(uint32_t(Side))}));
    gloo::alltoallv(O);
    char *Out = static_cast<char *>(Recv);
    for (size_t J = 0; J < N; ++J)
      std::memset(Out + J * Block + Got[J], 0, Block - Got[J]);
  });
}

meshrt_status broadcast(MeshrtGlooComm *C, void *Buf, int64_t Count,
                        meshrt_dtype T, int64_t Root) {
  return guarded(C, "broadcast", [&] {
    if (Count <= 0)
      return;
    size_t Bytes = size_t(Count) * elementBytes(T);
    gloo::BroadcastOptions O(C->Ctx);
    O.setOutput(static_cast<char *>(Buf), Bytes);
    O.setRoot(int(Root));
    O.setTag(shapeTag(Kind::Broadcast, {Bytes, uint64_t(T), uint64_t(Root)}));
    O.setTimeout(C->Timeout);
    gloo::broadcast(O);
  });
}

meshrt_status sendRecv(MeshrtGlooComm *C, const void *Send, int64_t Dest,
                       void *Recv, int64_t Source, int64_t Count,
                       meshrt_dtype T, int32_t ZeroFill) {
  return guarded(C, "permute", [&] {
    const size_t Bytes = size_t(Count) * elementBytes(T);
    if (Source < 0 && ZeroFill)
      std::memset(Recv, 0, Bytes);
    if (Count <= 0)
      return;
    if (Dest == C->Rank || Source == C->Rank) {
      if (Dest != Source)
        throw Failure(MESHRT_ERROR_INVALID_ARGUMENT,
                      where(C, "permute") + ": sends to rank " +
                          std::to_string(Dest) + " and receives from rank " +
                          std::to_string(Source) +
                          "; a rank that sends to itself must receive from "
                          "itself");
      std::memcpy(Recv, Send, Bytes);
      return;
    }
    requireMessageBytes(Bytes, "permute");
    const uint64_t Slot = permuteSlot(Bytes);
    std::unique_ptr<gloo::transport::UnboundBuffer> In, Out;
    if (Source >= 0) {
      In = C->Ctx->createUnboundBuffer(Recv, Bytes);
      In->recv(int(Source), Slot);
    }
    if (Dest >= 0) {
      Out = C->Ctx->createUnboundBuffer(const_cast<void *>(Send), Bytes);
      Out->send(int(Dest), Slot);
    }
    if (Out)
      waitSend(*C, *Out);
    if (In)
      waitRecv(*C, *In);
  });
}

meshrt_status sendTo(MeshrtGlooComm *C, const void *Buf, int64_t Count,
                     meshrt_dtype T, int64_t Peer, int64_t Tag) {
  return guarded(C, "send", [&] {
    if (Count <= 0)
      return;
    const size_t Bytes = size_t(Count) * elementBytes(T);
    requireMessageBytes(Bytes, "send");
    auto B = C->Ctx->createUnboundBuffer(const_cast<void *>(Buf), Bytes);
    B->send(int(Peer), p2pSlot(Bytes, Tag));
    waitSend(*C, *B);
  });
}

meshrt_status recvFrom(MeshrtGlooComm *C, void *Buf, int64_t Count,
                       meshrt_dtype T, int64_t Peer, int64_t Tag) {
  return guarded(C, "recv", [&] {
    if (Count <= 0)
      return;
    const size_t Bytes = size_t(Count) * elementBytes(T);
    requireMessageBytes(Bytes, "recv");
    auto B = C->Ctx->createUnboundBuffer(Buf, Bytes);
    B->recv(int(Peer), p2pSlot(Bytes, Tag));
    try {
      waitRecv(*C, *B);
    } catch (const gloo::IoException &E) {
      // Messages pair by size too (p2pSlot): name what this recv waited for.
      C->Broken = where(C, "recv") + " failed: " + glooReason(E.what()) +
                  " (no message of " + std::to_string(Bytes) +
                  " bytes with tag " + std::to_string(Tag) + " from rank " +
                  std::to_string(Peer) +
                  " within the timeout: " + formatTimeout(C->TimeoutSeconds) +
                  "; the sender exited, stalled, or sends another count or "
                  "dtype)";
      throw Failure(MESHRT_ERROR_BACKEND, C->Broken);
    }
  });
}

meshrt_status barrier(MeshrtGlooComm *C) {
  return guarded(C, "barrier", [&] {
    gloo::BarrierOptions O(C->Ctx);
    O.setTag(shapeTag(Kind::Barrier, {}));
    O.setTimeout(C->Timeout);
    gloo::barrier(O);
  });
}

void *nativeHandle(MeshrtGlooComm *C) {
  return C ? static_cast<gloo::Context *>(C->Ctx.get()) : nullptr;
}

#define MESHRT_GLOO_STR2(X) #X
#define MESHRT_GLOO_STR(X) MESHRT_GLOO_STR2(X)

MeshrtGlooPluginApi makeTable() {
  MeshrtGlooPluginApi A;
  std::memset(&A, 0, sizeof(A));
  A.StructSize = uint32_t(sizeof(A));
  A.Version = MESHRT_GLOO_PLUGIN_API_VERSION;
  A.GlooVersion = MESHRT_GLOO_STR(GLOO_VERSION_MAJOR) "." MESHRT_GLOO_STR(
      GLOO_VERSION_MINOR) "." MESHRT_GLOO_STR(GLOO_VERSION_PATCH);
  A.LastError = &lastError;
  A.CreateWorld = &createWorld;
  A.Split = &split;
  A.Destroy = &destroy;
  A.Rank = &commRank;
  A.Size = &commSize;
  A.AllReduce = &allReduce;
  A.AllGather = &allGather;
  A.ReduceScatter = &reduceScatter;
  A.AllGatherPadded = &allGatherPadded;
  A.ReduceScatterPadded = &reduceScatterPadded;
  A.AllToAll = &allToAll;
  A.AllToAllPadded = &allToAllPadded;
  A.Broadcast = &broadcast;
  A.SendRecv = &sendRecv;
  A.Send = &sendTo;
  A.Recv = &recvFrom;
  A.Barrier = &barrier;
  A.NativeHandle = &nativeHandle;
  return A;
}

} // namespace

/// The plugin's one export (MESHRT_GLOO_PLUGIN_ENTRY).
extern "C" __attribute__((visibility("default"))) meshrt_status
meshrt_gloo_plugin_v1(MeshrtGlooPluginApi *Out, size_t OutSize) {
  if (!Out)
    return MESHRT_ERROR_INVALID_ARGUMENT;
  static const MeshrtGlooPluginApi Table = makeTable();
  std::memcpy(Out, &Table, std::min(OutSize, sizeof(Table)));
  return MESHRT_SUCCESS;
}

// The entry has the type the host casts its address to.
[[maybe_unused]] static constexpr MeshrtGlooPluginEntry EntryTypeCheck =
    &meshrt_gloo_plugin_v1;
