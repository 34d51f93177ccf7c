//===- Store.cpp - A TCP key-value store for start-up without MPI ---------===//
//
// The server and the client of Store.h.
//
// Server: one thread, one poll() over the listening sockets, a self-pipe (the
// destructor writes to it to stop the thread) and every connection, all
// non-blocking. Each connection has an input buffer (bytes read, frames not
// yet handled) and an output buffer (responses not yet sent). A get or wait
// whose keys are missing is parked on its connection: the connection's id is
// indexed under each missing key and its deadline in an ordered set; a set or
// add of a key re-examines the connections indexed under it, and poll()'s
// timeout is the nearest deadline, at which the request is answered
// "timeout". A connection whose peer closes it, resets it, or breaks the
// protocol is closed (its parked request dropped); nothing a client sends can
// stop the thread.
//
// Client: blocking calls over a non-blocking socket, every read and write
// under poll() with the call's deadline, so that a store that dies (the
// connection closes or resets) or hangs (no answer) is an error, not a hang.
//
//===----------------------------------------------------------------------===//

#include "Store.h"

#include "meshrt/Error.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 // Where there is none, SO_NOSIGPIPE is set instead.
#endif

using namespace meshrt;
using namespace meshrt::detail;

namespace {

using Clock = std::chrono::steady_clock;

/// Request codes.
enum : uint8_t {
  OpSet = 1,
  OpGet = 2,
  OpAdd = 3,
  OpCheck = 4,
  OpRemove = 5,
  OpWait = 6,
};

/// Response codes.
enum : uint8_t {
  StatusOk = 0,
  StatusTimeout = 1,
  /// add() of a value that is not an integer, or that overflows; one item,
  /// the message. The connection stays usable.
  StatusBadValue = 2,
  /// A request the server does not accept; one item, the message. The
  /// server closes the connection after it.
  StatusBadRequest = 3,
};

constexpr char Magic[6] = {'m', 'e', 's', 'h', 'k', 'v'};
constexpr size_t GreetingBytes = 8;
constexpr size_t HeaderBytes = 24;
/// The longest timeout a call may ask for (about three years), so that
/// deadlines do not overflow the clock.
constexpr double MaxTimeoutSeconds = 1e8;

struct Header {
  uint8_t Code = 0;
  uint32_t NumItems = 0;
  uint64_t PayloadBytes = 0;
  int64_t Arg = 0;
};

void putU32(std::string &S, uint32_t V) {
  for (int I = 0; I < 4; ++I)
    S.push_back(char((V >> (8 * I)) & 0xff));
}

void putU64(std::string &S, uint64_t V) {
  for (int I = 0; I < 8; ++I)
    S.push_back(char((V >> (8 * I)) & 0xff));
}

uint32_t getU32(const char *P) {
  uint32_t V = 0;
  for (int I = 0; I < 4; ++I)
    V |= uint32_t(uint8_t(P[I])) << (8 * I);
  return V;
}

uint64_t getU64(const char *P) {
  uint64_t V = 0;
  for (int I = 0; I < 8; ++I)
    V |= uint64_t(uint8_t(P[I])) << (8 * I);
  return V;
}

/// A frame: the header, then each item as its length and bytes.
std::string encodeFrame(uint8_t Code,
                        const std::vector<const std::string *> &Items,
                        int64_t Arg) {
  uint64_t Payload = 0;
  for (const std::string *S : Items)
    Payload += 4 + S->size();
  std::string F;
  F.reserve(HeaderBytes + Payload);
  F.push_back(char(Code));
  F.append(3, '\0');
  putU32(F, uint32_t(Items.size()));
  putU64(F, Payload);
  putU64(F, uint64_t(Arg));
  for (const std::string *S : Items) {
    putU32(F, uint32_t(S->size()));
    F.append(*S);
  }
  return F;
}

/// Reads a header; false if its reserved bytes are not zero.
bool decodeHeader(const char *P, Header &H) {
  if (P[1] || P[2] || P[3])
    return false;
  H.Code = uint8_t(P[0]);
  H.NumItems = getU32(P + 4);
  H.PayloadBytes = getU64(P + 8);
  H.Arg = int64_t(getU64(P + 16));
  return true;
}

/// Splits a payload into its `N` items; false unless they fill it exactly.
bool decodeItems(const char *P, uint64_t Bytes, uint32_t N,
                 std::vector<std::string> &Items) {
  Items.clear();
  Items.reserve(N);
  uint64_t At = 0;
  for (uint32_t I = 0; I < N; ++I) {
    if (Bytes - At < 4)
      return false;
    uint32_t Len = getU32(P + At);
    At += 4;
    if (Bytes - At < Len)
      return false;
    Items.emplace_back(P + At, Len);
    At += Len;
  }
  return At == Bytes;
}

std::string osError(int E) {
  return std::error_code(E, std::generic_category()).message();
}

/// Seconds for messages: "300", "0.3", "1.25".
std::string formatSeconds(double S) {
  char Buf[64];
  if (S == std::floor(S) && S < 1e9)
    std::snprintf(Buf, sizeof(Buf), "%.0f", S);
  else
    std::snprintf(Buf, sizeof(Buf), "%.3g", S);
  return Buf;
}

/// A key for messages: quoted, bytes that are not printable escaped, long
/// keys cut.
std::string quote(const std::string &Key) {
  std::string Q = "'";
  size_t N = std::min<size_t>(Key.size(), 200);
  for (size_t I = 0; I < N; ++I) {
    unsigned char C = Key[I];
    if (C >= 0x20 && C < 0x7f && C != '\\' && C != '\'') {
      Q.push_back(char(C));
    } else {
      char Buf[8];
      std::snprintf(Buf, sizeof(Buf), "\\x%02x", C);
      Q += Buf;
    }
  }
  if (N < Key.size())
    Q += "...";
  return Q + "'";
}

/// Keys for messages: "'a', 'b'", at most ten, then how many more.
std::string quoteKeys(const std::vector<std::string> &Keys) {
  std::string S;
  size_t N = std::min<size_t>(Keys.size(), 10);
  for (size_t I = 0; I < N; ++I)
    S += (I ? ", " : "") + quote(Keys[I]);
  if (N < Keys.size())
    S += ", and " + std::to_string(Keys.size() - N) + " more";
  return S;
}

/// Milliseconds for the protocol, rounded up.
int64_t toMillis(double Seconds) { return int64_t(std::ceil(Seconds * 1e3)); }

/// Checks a timeout argument: finite and >= 0; capped at MaxTimeoutSeconds.
double checkTimeout(double Seconds, const std::string &What) {
  if (!(Seconds >= 0) || std::isinf(Seconds))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What +
                    ": the timeout must be a number of seconds "
                    ">= 0, not " +
                    formatSeconds(Seconds));
  return std::min(Seconds, MaxTimeoutSeconds);
}

Clock::time_point after(double Seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(Seconds));
}

double secondsUntil(Clock::time_point Deadline) {
  return std::chrono::duration<double>(Deadline - Clock::now()).count();
}

/// poll()'s timeout for `Deadline`, rounded up to a millisecond.
int pollMillis(Clock::time_point Deadline) {
  auto Left = Deadline - Clock::now();
  if (Left <= Clock::duration::zero())
    return 0;
  auto Ms = std::chrono::ceil<std::chrono::milliseconds>(Left).count();
  return int(std::min<int64_t>(Ms, std::numeric_limits<int>::max()));
}

bool setNonBlocking(int Fd) {
  int Flags = fcntl(Fd, F_GETFL, 0);
  return Flags >= 0 && fcntl(Fd, F_SETFL, Flags | O_NONBLOCK) == 0;
}

void setCloseOnExec(int Fd) {
  int Flags = fcntl(Fd, F_GETFD, 0);
  if (Flags >= 0)
    fcntl(Fd, F_SETFD, Flags | FD_CLOEXEC);
}

/// A socket of the family, close-on-exec.
int openSocket(int Family) {
  int Fd = socket(Family, SOCK_STREAM, 0);
  if (Fd >= 0)
    setCloseOnExec(Fd);
  return Fd;
}

void setSocketOptions(int Fd) {
  int One = 1;
  setsockopt(Fd, IPPROTO_TCP, TCP_NODELAY, &One, sizeof(One));
  setsockopt(Fd, SOL_SOCKET, SO_KEEPALIVE, &One, sizeof(One));
#ifdef TCP_KEEPIDLE
  // A peer whose machine vanished is noticed after about two minutes of
  // silence, not the system's default two hours.
  int Idle = 60, Interval = 10, Count = 6;
  setsockopt(Fd, IPPROTO_TCP, TCP_KEEPIDLE, &Idle, sizeof(Idle));
  setsockopt(Fd, IPPROTO_TCP, TCP_KEEPINTVL, &Interval, sizeof(Interval));
  setsockopt(Fd, IPPROTO_TCP, TCP_KEEPCNT, &Count, sizeof(Count));
#endif
#ifdef SO_NOSIGPIPE
  setsockopt(Fd, SOL_SOCKET, SO_NOSIGPIPE, &One, sizeof(One));
#endif
}

/// The numeric host of a socket address ("127.0.0.1", "::1").
std::string numericHost(const sockaddr *Addr, socklen_t Len) {
  char Host[NI_MAXHOST];
  if (getnameinfo(Addr, Len, Host, sizeof(Host), nullptr, 0, NI_NUMERICHOST))
    return "?";
  return Host;
}

enum class Io { Ok, Closed, Timeout, Failed };

/// Sends all `N` bytes before `Deadline`; `Err` is errno on Failed.
Io sendAll(int Fd, const char *P, size_t N, Clock::time_point Deadline,
           int &Err) {
  while (N) {
    ssize_t K = ::send(Fd, P, N, MSG_NOSIGNAL);
    if (K > 0) {
      P += K;
      N -= size_t(K);
      continue;
    }
    if (K < 0 && errno == EINTR)
      continue;
    if (K < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      Err = errno;
      return (Err == EPIPE || Err == ECONNRESET) ? Io::Closed : Io::Failed;
    }
    pollfd Pfd{Fd, POLLOUT, 0};
    int Ms = pollMillis(Deadline);
    if (Ms == 0 && Clock::now() >= Deadline)
      return Io::Timeout;
    int R = ::poll(&Pfd, 1, Ms);
    if (R < 0 && errno != EINTR) {
      Err = errno;
      return Io::Failed;
    }
  }
  return Io::Ok;
}

/// Receives exactly `N` bytes before `Deadline`; `Err` is errno on Failed or
/// on a reset (Closed with Err != 0); Closed with Err == 0 is an orderly
/// close.
Io recvAll(int Fd, char *P, size_t N, Clock::time_point Deadline, int &Err) {
  Err = 0;
  while (N) {
    ssize_t K = ::recv(Fd, P, N, 0);
    if (K > 0) {
      P += K;
      N -= size_t(K);
      continue;
    }
    if (K == 0)
      return Io::Closed;
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      Err = errno;
      return Err == ECONNRESET ? Io::Closed : Io::Failed;
    }
    pollfd Pfd{Fd, POLLIN, 0};
    int Ms = pollMillis(Deadline);
    if (Ms == 0 && Clock::now() >= Deadline)
      return Io::Timeout;
    int R = ::poll(&Pfd, 1, Ms);
    if (R < 0 && errno != EINTR) {
      Err = errno;
      return Io::Failed;
    }
  }
  return Io::Ok;
}

/// Parses a decimal int64 (an optional '-', then digits, nothing else).
bool parseInt64(const std::string &S, int64_t &V) {
  if (S.empty() || S.size() > 20)
    return false;
  size_t I = S[0] == '-' ? 1 : 0;
  if (I == S.size())
    return false;
  // Accumulate negatively: the range of the negatives is the larger one.
  int64_t Acc = 0;
  for (; I < S.size(); ++I) {
    if (S[I] < '0' || S[I] > '9')
      return false;
    if (__builtin_mul_overflow(Acc, 10, &Acc) ||
        __builtin_sub_overflow(Acc, S[I] - '0', &Acc))
      return false;
  }
  if (S[0] == '-') {
    V = Acc;
    return true;
  }
  if (Acc == std::numeric_limits<int64_t>::min())
    return false;
  V = -Acc;
  return true;
}

} // namespace

std::string meshrt::detail::formatStoreAddress(const std::string &Host,
                                               int Port) {
  std::string H = Host.empty() ? "*" : Host;
  if (H.find(':') != std::string::npos)
    H = "[" + H + "]";
  return "tcp://" + H + ":" + std::to_string(Port);
}

std::string meshrt::detail::formatRankRanges(std::vector<int64_t> Ranks) {
  std::sort(Ranks.begin(), Ranks.end());
  Ranks.erase(std::unique(Ranks.begin(), Ranks.end()), Ranks.end());
  std::vector<std::string> Pieces;
  for (size_t I = 0; I < Ranks.size();) {
    size_t J = I;
    while (J + 1 < Ranks.size() && Ranks[J + 1] == Ranks[J] + 1)
      ++J;
    if (J - I >= 2) {
      Pieces.push_back(std::to_string(Ranks[I]) + "-" +
                       std::to_string(Ranks[J]));
    } else {
      for (size_t K = I; K <= J; ++K)
        Pieces.push_back(std::to_string(Ranks[K]));
    }
    I = J + 1;
  }
  constexpr size_t MaxPieces = 16;
  std::string S;
  if (Pieces.size() <= MaxPieces) {
    for (size_t I = 0; I < Pieces.size(); ++I)
      S += (I ? ", " : "") + Pieces[I];
    return S;
  }
  for (size_t I = 0; I + 1 < MaxPieces; ++I)
    S += Pieces[I] + ", ";
  return S + "..., " + Pieces.back() + " (" + std::to_string(Ranks.size()) +
         " ranks)";
}

//===----------------------------------------------------------------------===//
// Server
//===----------------------------------------------------------------------===//

struct StoreServer::Impl {
  /// One client connection.
  struct Conn {
    uint64_t Id = 0;
    int Fd = -1;
    bool Greeted = false;
    /// To be closed at the end of this turn of the loop.
    bool Dead = false;
    /// To be closed once the output is sent (after a refusal).
    bool CloseAfterFlush = false;
    std::string In;
    std::string Out;
    size_t OutPos = 0;
    /// The parked request, if any.
    bool IsParked = false;
    uint8_t ParkedOp = 0;
    std::vector<std::string> ParkedKeys;
    Clock::time_point Deadline;
  };

  std::string Address;
  int Port = 0;
  std::vector<int> Listeners;
  int WakeRead = -1;
  int WakeWrite = -1;
  std::thread Thread;
  std::atomic<bool> Stopping{false};
  std::atomic<uint64_t> Requests{0};
  std::atomic<size_t> Parked{0};
  std::atomic<size_t> Connections{0};

  // The rest belongs to the server thread.
  std::unordered_map<uint64_t, Conn> Conns;
  uint64_t NextId = 1;
  std::unordered_map<std::string, std::string> Data;
  /// Parked connections by the keys they miss.
  std::unordered_map<std::string, std::unordered_set<uint64_t>> Waiters;
  /// Parked connections by deadline.
  std::set<std::pair<Clock::time_point, uint64_t>> Deadlines;
  /// While accept() lacks file descriptors, listening pauses until then.
  Clock::time_point AcceptPausedUntil;
  bool WarnedAccept = false;
  std::vector<char> ReadBuf = std::vector<char>(256 << 10);

  ~Impl() {
    for (int Fd : Listeners)
      ::close(Fd);
    if (WakeRead >= 0)
      ::close(WakeRead);
    if (WakeWrite >= 0)
      ::close(WakeWrite);
  }

  void run();
  void loop();
  void acceptAll(int Listener);
  void readFrom(Conn &C);
  void handleInput(Conn &C);
  void handle(Conn &C, const Header &H, std::vector<std::string> &Items);
  void respond(Conn &C, uint8_t Status,
               const std::vector<const std::string *> &Items, int64_t Int);
  void refuse(Conn &C, const std::string &Why);
  void flush(Conn &C);
  void markDead(Conn &C);
  void park(Conn &C, uint8_t Op, std::vector<std::string> Keys, int64_t Millis);
  void unpark(Conn &C);
  void notify(const std::string &Key);
  void expire();
  std::vector<std::string> missingOf(const std::vector<std::string> &Keys);
  void sweep();
};

void StoreServer::Impl::run() {
  try {
    loop();
  } catch (const std::exception &E) {
    std::fprintf(stderr, "meshrt: store: the server at %s stopped: %s\n",
                 Address.c_str(), E.what());
  }
  for (auto &KV : Conns)
    ::close(KV.second.Fd);
  Conns.clear();
  Connections.store(0);
  Parked.store(0);
}

void StoreServer::Impl::loop() {
  std::vector<pollfd> Pfds;
  std::vector<uint64_t> Ids; // Connection of each pollfd past the fixed ones.
  while (!Stopping.load()) {
    Pfds.clear();
    Ids.clear();
    Pfds.push_back({WakeRead, POLLIN, 0});
    Clock::time_point Now = Clock::now();
    bool Accepting = Now >= AcceptPausedUntil;
    if (Accepting)
      for (int L : Listeners)
        Pfds.push_back({L, POLLIN, 0});
    size_t FirstConn = Pfds.size();
    for (auto &KV : Conns) {
      Conn &C = KV.second;
      // Back-pressure: a connection with output pending is not read from
      // until it takes its output (our clients never pipeline).
      short Events = C.OutPos < C.Out.size() ? POLLOUT : POLLIN;
      Pfds.push_back({C.Fd, Events, 0});
      Ids.push_back(C.Id);
    }
    int Timeout = -1;
    if (!Deadlines.empty())
      Timeout = pollMillis(Deadlines.begin()->first);
    if (!Accepting) {
      int Ms = pollMillis(AcceptPausedUntil);
      Timeout = Timeout < 0 ? Ms : std::min(Timeout, Ms);
    }
    int R = ::poll(Pfds.data(), Pfds.size(), Timeout);
    if (R < 0) {
      if (errno == EINTR)
        continue;
      throw std::runtime_error("poll failed: " + osError(errno));
    }
    if (Pfds[0].revents) {
      char Buf[64];
      while (::read(WakeRead, Buf, sizeof(Buf)) > 0) {
      }
      if (Stopping.load())
        return;
    }
    for (size_t I = FirstConn; I < Pfds.size(); ++I) {
      short Ev = Pfds[I].revents;
      if (!Ev)
        continue;
      auto It = Conns.find(Ids[I - FirstConn]);
      if (It == Conns.end() || It->second.Dead)
        continue;
      Conn &C = It->second;
      if (Ev & POLLNVAL) {
        markDead(C);
        continue;
      }
      if (Ev & POLLOUT)
        flush(C);
      if (!C.Dead && (Ev & (POLLIN | POLLHUP | POLLERR)))
        readFrom(C);
    }
    for (size_t I = 1; I < FirstConn; ++I)
      if (Pfds[I].revents)
        acceptAll(Pfds[I].fd);
    expire();
    sweep();
  }
}

void StoreServer::Impl::acceptAll(int Listener) {
  while (true) {
    int Fd = ::accept(Listener, nullptr, nullptr);
    if (Fd < 0) {
      int E = errno;
      if (E == EINTR || E == ECONNABORTED || E == EPROTO)
        continue;
      if (E == EMFILE || E == ENFILE || E == ENOBUFS || E == ENOMEM) {
        // Out of descriptors: pause listening rather than spin on a
        // listener that stays readable.
        if (!WarnedAccept)
          std::fprintf(stderr,
                       "meshrt: store: %s: cannot accept a connection: %s "
                       "(raise the limit of open files, ulimit -n); "
                       "retrying\n",
                       Address.c_str(), osError(E).c_str());
        WarnedAccept = true;
        AcceptPausedUntil = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    setCloseOnExec(Fd);
    if (!setNonBlocking(Fd)) {
      ::close(Fd);
      continue;
    }
    setSocketOptions(Fd);
    uint64_t Id = NextId++;
    Conn &C = Conns[Id];
    C.Id = Id;
    C.Fd = Fd;
    Connections.store(Conns.size());
  }
}

void StoreServer::Impl::readFrom(Conn &C) {
  bool Eof = false;
  size_t Total = 0;
  // At most 8 MiB per turn, so that one large value does not hold up the
  // other connections.
  while (Total < (size_t(8) << 20)) {
    ssize_t K = ::recv(C.Fd, ReadBuf.data(), ReadBuf.size(), 0);
    if (K > 0) {
      C.In.append(ReadBuf.data(), size_t(K));
      Total += size_t(K);
      continue;
    }
    if (K == 0) {
      Eof = true;
      break;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      Eof = true; // Reset or error: the connection is gone.
    break;
  }
  // Requests that arrived before a close are still served (a set is a set).
  handleInput(C);
  if (Eof)
    markDead(C);
}

void StoreServer::Impl::handleInput(Conn &C) {
  size_t Pos = 0;
  std::vector<std::string> Items;
  while (!C.Dead && !C.CloseAfterFlush) {
    size_t Avail = C.In.size() - Pos;
    const char *P = C.In.data() + Pos;
    if (!C.Greeted) {
      // Check the magic byte by byte: a stray client is dropped at its first
      // wrong byte, without waiting for eight.
      size_t N = std::min(Avail, sizeof(Magic));
      if (std::memcmp(P, Magic, N) != 0) {
        markDead(C);
        break;
      }
      if (Avail < GreetingBytes)
        break;
      uint8_t Version = uint8_t(P[6]);
      std::string Reply(Magic, sizeof(Magic));
      Reply.push_back(char(StoreProtocolVersion));
      Reply.push_back(Version == StoreProtocolVersion ? 0 : 1);
      Pos += GreetingBytes;
      C.Out += Reply;
      if (Version != StoreProtocolVersion)
        C.CloseAfterFlush = true;
      else
        C.Greeted = true;
      flush(C);
      continue;
    }
    if (!Avail)
      break;
    if (C.IsParked) {
      // Our client sends nothing while it waits for an answer.
      markDead(C);
      break;
    }
    if (Avail < HeaderBytes)
      break;
    Header H;
    if (!decodeHeader(P, H) || H.Code < OpSet || H.Code > OpWait) {
      refuse(C, "malformed request header");
      break;
    }
    if (H.NumItems > StoreMaxKeysPerCall + 1 ||
        H.PayloadBytes > StoreMaxPayloadBytes) {
      refuse(C, "request of " + std::to_string(H.PayloadBytes) + " bytes in " +
                    std::to_string(H.NumItems) +
                    " items is over the store's limits");
      break;
    }
    if (Avail - HeaderBytes < H.PayloadBytes) {
      C.In.reserve(Pos + HeaderBytes + H.PayloadBytes);
      break;
    }
    if (!decodeItems(P + HeaderBytes, H.PayloadBytes, H.NumItems, Items)) {
      refuse(C, "malformed request items");
      break;
    }
    Pos += HeaderBytes + H.PayloadBytes;
    Requests.fetch_add(1);
    handle(C, H, Items);
  }
  if (!C.Dead)
    C.In.erase(0, Pos);
}

void StoreServer::Impl::handle(Conn &C, const Header &H,
                               std::vector<std::string> &Items) {
  for (size_t I = 0; I < Items.size(); ++I)
    if (Items[I].size() > StoreMaxKeyBytes && !(H.Code == OpSet && I == 1))
      return refuse(C, "a key of " + std::to_string(Items[I].size()) +
                           " bytes is over the limit of " +
                           std::to_string(StoreMaxKeyBytes));
  size_t Want = H.Code == OpSet                         ? 2
                : H.Code == OpCheck || H.Code == OpWait ? Items.size()
                                                        : 1;
  if (Items.size() != Want || Items.size() > StoreMaxKeysPerCall)
    return refuse(C, "wrong number of items (" + std::to_string(Items.size()) +
                         ") for request " + std::to_string(H.Code));
  switch (H.Code) {
  case OpSet: {
    if (Items[1].size() > StoreMaxValueBytes)
      return refuse(C, "a value of " + std::to_string(Items[1].size()) +
                           " bytes is over the limit of " +
                           std::to_string(StoreMaxValueBytes));
    Data[Items[0]] = std::move(Items[1]);
    respond(C, StatusOk, {}, 0);
    notify(Items[0]);
    return;
  }
  case OpGet: {
    if (H.Arg < 0)
      return refuse(C, "negative timeout");
    auto It = Data.find(Items[0]);
    if (It != Data.end())
      return respond(C, StatusOk, {&It->second}, 0);
    if (H.Arg == 0)
      return respond(C, StatusTimeout, {}, 0);
    return park(C, OpGet, std::move(Items), H.Arg);
  }
  case OpAdd: {
    int64_t Old = 0;
    auto It = Data.find(Items[0]);
    if (It != Data.end() && !parseInt64(It->second, Old)) {
      std::string Msg = "the value of " + quote(Items[0]) +
                        " is not an integer: " + quote(It->second);
      return respond(C, StatusBadValue, {&Msg}, 0);
    }
    int64_t New;
    if (__builtin_add_overflow(Old, H.Arg, &New)) {
      std::string Msg = quote(Items[0]) + " holds " + std::to_string(Old) +
                        "; adding " + std::to_string(H.Arg) +
                        " overflows int64";
      return respond(C, StatusBadValue, {&Msg}, 0);
    }
    Data[Items[0]] = std::to_string(New);
    respond(C, StatusOk, {}, New);
    notify(Items[0]);
    return;
  }
  case OpCheck:
    return respond(C, StatusOk, {}, missingOf(Items).empty() ? 1 : 0);
  case OpRemove:
    return respond(C, StatusOk, {}, Data.erase(Items[0]) ? 1 : 0);
  case OpWait: {
    if (H.Arg < 0)
      return refuse(C, "negative timeout");
    std::vector<std::string> Missing = missingOf(Items);
    if (Missing.empty())
      return respond(C, StatusOk, {}, 0);
    if (H.Arg > 0)
      return park(C, OpWait, std::move(Items), H.Arg);
    std::vector<const std::string *> Ptrs;
    for (const std::string &K : Missing)
      Ptrs.push_back(&K);
    return respond(C, StatusTimeout, Ptrs, 0);
  }
  }
}

std::vector<std::string>
StoreServer::Impl::missingOf(const std::vector<std::string> &Keys) {
  std::vector<std::string> Missing;
  for (const std::string &K : Keys)
    if (!Data.count(K))
      Missing.push_back(K);
  return Missing;
}

void StoreServer::Impl::respond(Conn &C, uint8_t Status,
                                const std::vector<const std::string *> &Items,
                                int64_t Int) {
  if (C.Dead)
    return;
  C.Out += encodeFrame(Status, Items, Int);
  flush(C);
}

void StoreServer::Impl::refuse(Conn &C, const std::string &Why) {
  respond(C, StatusBadRequest, {&Why}, 0);
  C.CloseAfterFlush = true;
  if (!C.Dead && C.OutPos >= C.Out.size())
    markDead(C);
}

void StoreServer::Impl::flush(Conn &C) {
  while (!C.Dead && C.OutPos < C.Out.size()) {
    ssize_t K = ::send(C.Fd, C.Out.data() + C.OutPos, C.Out.size() - C.OutPos,
                       MSG_NOSIGNAL);
    if (K > 0) {
      C.OutPos += size_t(K);
      continue;
    }
    if (K < 0 && errno == EINTR)
      continue;
    if (K < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    markDead(C);
    return;
  }
  if (C.Dead)
    return;
  C.Out.clear();
  C.OutPos = 0;
  if (C.CloseAfterFlush)
    markDead(C);
}

void StoreServer::Impl::markDead(Conn &C) {
  if (C.IsParked)
    unpark(C);
  C.Dead = true;
}

void StoreServer::Impl::park(Conn &C, uint8_t Op, std::vector<std::string> Keys,
                             int64_t Millis) {
  C.IsParked = true;
  C.ParkedOp = Op;
  C.ParkedKeys = std::move(Keys);
  // Millis is at most about 1e11 (MaxTimeoutSeconds); the sum cannot
  // overflow the clock, but a stray client's could: cap it.
  Millis = std::min<int64_t>(Millis, int64_t(MaxTimeoutSeconds * 1e3));
  C.Deadline = Clock::now() + std::chrono::milliseconds(Millis);
  Deadlines.insert({C.Deadline, C.Id});
  for (const std::string &K : C.ParkedKeys)
    if (!Data.count(K))
      Waiters[K].insert(C.Id);
  Parked.fetch_add(1);
}

void StoreServer::Impl::unpark(Conn &C) {
  Deadlines.erase({C.Deadline, C.Id});
  for (const std::string &K : C.ParkedKeys) {
    auto It = Waiters.find(K);
    if (It == Waiters.end())
      continue;
    It->second.erase(C.Id);
    if (It->second.empty())
      Waiters.erase(It);
  }
  C.ParkedKeys.clear();
  C.IsParked = false;
  Parked.fetch_sub(1);
}

void StoreServer::Impl::notify(const std::string &Key) {
  auto It = Waiters.find(Key);
  if (It == Waiters.end())
    return;
  std::unordered_set<uint64_t> Ids = std::move(It->second);
  Waiters.erase(It);
  for (uint64_t Id : Ids) {
    auto CI = Conns.find(Id);
    if (CI == Conns.end() || CI->second.Dead || !CI->second.IsParked)
      continue;
    Conn &C = CI->second;
    if (C.ParkedOp == OpGet) {
      unpark(C);
      auto DI = Data.find(Key);
      if (DI != Data.end())
        respond(C, StatusOk, {&DI->second}, 0);
      continue;
    }
    // A wait: answered when none of its keys is missing; otherwise indexed
    // again under those still missing (a key can be removed meanwhile).
    std::vector<std::string> Missing = missingOf(C.ParkedKeys);
    if (Missing.empty()) {
      unpark(C);
      respond(C, StatusOk, {}, 0);
    } else {
      for (const std::string &K : Missing)
        Waiters[K].insert(Id);
    }
  }
}

void StoreServer::Impl::expire() {
  Clock::time_point Now = Clock::now();
  while (!Deadlines.empty() && Deadlines.begin()->first <= Now) {
    uint64_t Id = Deadlines.begin()->second;
    auto CI = Conns.find(Id);
    if (CI == Conns.end()) {
      Deadlines.erase(Deadlines.begin());
      continue;
    }
    Conn &C = CI->second;
    std::vector<std::string> Missing = missingOf(C.ParkedKeys);
    uint8_t Op = C.ParkedOp;
    unpark(C);
    if (Op == OpGet || !Missing.empty()) {
      std::vector<const std::string *> Ptrs;
      if (Op == OpWait)
        for (const std::string &K : Missing)
          Ptrs.push_back(&K);
      respond(C, StatusTimeout, Ptrs, 0);
    } else {
      respond(C, StatusOk, {}, 0);
    }
  }
}

void StoreServer::Impl::sweep() {
  for (auto It = Conns.begin(); It != Conns.end();) {
    if (It->second.Dead) {
      ::close(It->second.Fd);
      It = Conns.erase(It);
    } else {
      ++It;
    }
  }
  Connections.store(Conns.size());
}

StoreServer::StoreServer(std::unique_ptr<Impl> I) : I(std::move(I)) {}

StoreServer::~StoreServer() {
  I->Stopping.store(true);
  char B = 1;
  while (::write(I->WakeWrite, &B, 1) < 0 && errno == EINTR) {
  }
  if (I->Thread.joinable())
    I->Thread.join();
}

int StoreServer::port() const { return I->Port; }
const std::string &StoreServer::address() const { return I->Address; }
uint64_t StoreServer::requestCount() const { return I->Requests.load(); }
size_t StoreServer::parkedCount() const { return I->Parked.load(); }
size_t StoreServer::connectionCount() const { return I->Connections.load(); }

namespace {

/// Why binding failed at one address.
struct BindFailure {
  std::string Where; // "tcp://127.0.0.1:29500"
  int Errno = 0;
};

[[noreturn]] void throwListenError(const std::string &Where, int E) {
  std::string Msg = "store: cannot listen on " + Where + ": " + osError(E);
  if (E == EADDRINUSE)
    Msg += " (is another job or store using this port? set "
           "MESHRT_STORE_PORT)";
  else if (E == EADDRNOTAVAIL)
    Msg += " (it is not an address of this machine)";
  else if (E == EACCES)
    Msg += " (ports below 1024 need privileges)";
  throw Error(MESHRT_ERROR_BACKEND, Msg);
}

/// Binds and listens on every address of `Host`:`Port`. Returns false (and
/// closes what it opened) if `Port` is 0 and the ephemeral port chosen for
/// the first address is taken on another: the caller tries again.
bool listenAll(const std::string &Host, int Port, std::vector<int> &Fds,
               int &BoundPort) {
  addrinfo Hints{};
  Hints.ai_family = AF_UNSPEC;
  Hints.ai_socktype = SOCK_STREAM;
  Hints.ai_flags = AI_PASSIVE;
  addrinfo *Res = nullptr;
  std::string PortStr = std::to_string(Port);
  int Rc = getaddrinfo(Host.empty() ? nullptr : Host.c_str(), PortStr.c_str(),
                       &Hints, &Res);
  if (Rc != 0)
    throw Error(MESHRT_ERROR_BACKEND,
                "store: cannot listen on " + formatStoreAddress(Host, Port) +
                    ": cannot resolve '" + Host + "': " + gai_strerror(Rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo *)> Free(Res, freeaddrinfo);
  auto CloseAll = [&] {
    for (int Fd : Fds)
      ::close(Fd);
    Fds.clear();
  };
  BoundPort = Port;
  std::vector<std::string> Seen;
  BindFailure First;
  for (addrinfo *A = Res; A; A = A->ai_next) {
    if (A->ai_family != AF_INET && A->ai_family != AF_INET6)
      continue;
    sockaddr_storage Addr{};
    std::memcpy(&Addr, A->ai_addr, A->ai_addrlen);
    if (A->ai_family == AF_INET)
      reinterpret_cast<sockaddr_in &>(Addr).sin_port = htons(BoundPort);
    else
      reinterpret_cast<sockaddr_in6 &>(Addr).sin6_port = htons(BoundPort);
    std::string Numeric = numericHost(A->ai_addr, A->ai_addrlen);
    // /etc/hosts may list one address twice under a name.
    if (std::find(Seen.begin(), Seen.end(), Numeric) != Seen.end())
      continue;
    Seen.push_back(Numeric);
    std::string Where = formatStoreAddress(Numeric, BoundPort);
    if (!Host.empty() && Host != Numeric)
      Where += " (" + Host + ")";
    int Fd = openSocket(A->ai_family);
    if (Fd < 0) {
      if (First.Where.empty())
        First = {Where, errno};
      continue;
    }
    int One = 1;
    setsockopt(Fd, SOL_SOCKET, SO_REUSEADDR, &One, sizeof(One));
    // Each family on its own socket: with an empty host, 0.0.0.0 and ::
    // are both bound, which a dual-stack :: would collide with.
    if (A->ai_family == AF_INET6)
      setsockopt(Fd, IPPROTO_IPV6, IPV6_V6ONLY, &One, sizeof(One));
    if (::bind(Fd, reinterpret_cast<sockaddr *>(&Addr), A->ai_addrlen) != 0 ||
        ::listen(Fd, SOMAXCONN) != 0) {
      int E = errno;
      ::close(Fd);
      if (E == EADDRINUSE) {
        if (Port == 0 && !Fds.empty()) {
          CloseAll();
          return false;
        }
        CloseAll();
        throwListenError(Where, E);
      }
      // An address this machine cannot bind (::1 without IPv6): the others
      // may do.
      if (First.Where.empty())
        First = {Where, E};
      continue;
    }
    if (!setNonBlocking(Fd)) {
      int E = errno;
      ::close(Fd);
      CloseAll();
      throwListenError(Where, E);
    }
    if (BoundPort == 0) {
      sockaddr_storage Got{};
      socklen_t Len = sizeof(Got);
      getsockname(Fd, reinterpret_cast<sockaddr *>(&Got), &Len);
      BoundPort = Got.ss_family == AF_INET
                      ? ntohs(reinterpret_cast<sockaddr_in &>(Got).sin_port)
                      : ntohs(reinterpret_cast<sockaddr_in6 &>(Got).sin6_port);
    }
    Fds.push_back(Fd);
  }
  if (Fds.empty()) {
    if (First.Where.empty())
      throw Error(MESHRT_ERROR_BACKEND,
                  "store: cannot listen on " + formatStoreAddress(Host, Port) +
                      ": the name has no IPv4 or IPv6 address");
    throwListenError(First.Where, First.Errno);
  }
  return true;
}

} // namespace

std::unique_ptr<StoreServer> StoreServer::start(const std::string &Host,
                                                int Port) {
  if (Port < 0 || Port > 65535)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: port " + std::to_string(Port) +
                    " is out of range (0 to 65535)");
  auto I = std::make_unique<Impl>();
  bool Done = false;
  for (int Try = 0; Try < 16 && !Done; ++Try)
    Done = listenAll(Host, Port, I->Listeners, I->Port);
  if (!Done)
    throw Error(MESHRT_ERROR_BACKEND,
                "store: cannot listen on " + formatStoreAddress(Host, 0) +
                    ": found no ephemeral port free on every address");
  I->Address = formatStoreAddress(Host, I->Port);
  int Pipe[2];
  if (::pipe(Pipe) != 0)
    throw Error(MESHRT_ERROR_BACKEND,
                "store: " + I->Address +
                    ": cannot create a pipe: " + osError(errno));
  I->WakeRead = Pipe[0];
  I->WakeWrite = Pipe[1];
  for (int Fd : Pipe) {
    setCloseOnExec(Fd);
    setNonBlocking(Fd);
  }
  Impl *Raw = I.get();
  I->Thread = std::thread([Raw] { Raw->run(); });
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(I)));
}

//===----------------------------------------------------------------------===//
// Client
//===----------------------------------------------------------------------===//

struct StoreClient::Reply {
  uint8_t Status = 0;
  int64_t Int = 0;
  std::vector<std::string> Items;
};

namespace {

/// The outcome of one connection attempt.
enum class Attempt { Connected, Retry, Fatal };

/// Greets the peer on `Fd`; on Retry or Fatal, `Why` says what went wrong.
Attempt greet(int Fd, Clock::time_point Deadline, std::string &Why) {
  std::string Hello(Magic, sizeof(Magic));
  Hello.push_back(char(StoreProtocolVersion));
  Hello.push_back(0);
  int Err = 0;
  Io R = sendAll(Fd, Hello.data(), Hello.size(), Deadline, Err);
  if (R == Io::Timeout) {
    Why = "the peer did not take the greeting";
    return Attempt::Retry;
  }
  if (R != Io::Ok) {
    Why =
        "the peer closed the connection at the greeting (" + osError(Err) + ")";
    return Attempt::Retry;
  }
  char Answer[GreetingBytes];
  R = recvAll(Fd, Answer, sizeof(Answer), Deadline, Err);
  if (R == Io::Timeout) {
    Why = "the peer did not answer the greeting (is something other than a "
          "meshrt store listening on this port?)";
    return Attempt::Retry;
  }
  if (R != Io::Ok) {
    Why = std::string("the peer closed the connection at the greeting") +
          (Err ? " (" + osError(Err) + ")" : "") +
          " (is something other than a meshrt store listening on this "
          "port?)";
    return Attempt::Retry;
  }
  if (std::memcmp(Answer, Magic, sizeof(Magic)) != 0) {
    Why = "answered the greeting with bytes that are not a meshrt store's; "
          "another program (e.g. a PyTorch TCPStore) listens on this port";
    return Attempt::Fatal;
  }
  uint8_t Version = uint8_t(Answer[6]);
  if (Version != StoreProtocolVersion || Answer[7] != 0) {
    Why = "is a meshrt store of protocol version " + std::to_string(Version) +
          ", and this one speaks version " +
          std::to_string(StoreProtocolVersion) +
          " (are different meshrt builds in one job?)";
    return Attempt::Fatal;
  }
  return Attempt::Connected;
}

/// One try at connecting to every address of `Host`:`Port`: the connected
/// socket, or -1 with `Why` set.
int tryConnect(const std::string &Host, int Port, Clock::time_point Deadline,
               Attempt &Outcome, std::string &Why) {
  addrinfo Hints{};
  Hints.ai_family = AF_UNSPEC;
  Hints.ai_socktype = SOCK_STREAM;
  addrinfo *Res = nullptr;
  std::string PortStr = std::to_string(Port);
  int Rc = getaddrinfo(Host.empty() ? nullptr : Host.c_str(), PortStr.c_str(),
                       &Hints, &Res);
  Outcome = Attempt::Retry;
  if (Rc != 0) {
    // Kubernetes publishes a pod's name some time after it starts: retry.
    Why = "cannot resolve '" + Host + "': " + gai_strerror(Rc);
    return -1;
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo *)> Free(Res, freeaddrinfo);
  for (addrinfo *A = Res; A; A = A->ai_next) {
    if (A->ai_family != AF_INET && A->ai_family != AF_INET6)
      continue;
    int Fd = openSocket(A->ai_family);
    if (Fd < 0) {
      Why = osError(errno);
      continue;
    }
    setSocketOptions(Fd);
    setNonBlocking(Fd);
    int E = 0;
    if (::connect(Fd, A->ai_addr, A->ai_addrlen) != 0) {
      E = errno;
      if (E == EINPROGRESS || E == EINTR) {
        // At least 10 ms per try, even at the deadline, so that a timeout
        // of 0 still makes one real try.
        Clock::time_point TryDeadline =
            std::max(Deadline, Clock::now() + std::chrono::milliseconds(10));
        pollfd Pfd{Fd, POLLOUT, 0};
        int R;
        do
          R = ::poll(&Pfd, 1, pollMillis(TryDeadline));
        while (R < 0 && errno == EINTR);
        if (R == 0) {
          E = ETIMEDOUT;
        } else {
          socklen_t Len = sizeof(E);
          if (getsockopt(Fd, SOL_SOCKET, SO_ERROR, &E, &Len) != 0)
            E = errno;
        }
      }
    }
    if (E != 0) {
      Why = osError(E);
      ::close(Fd);
      continue;
    }
    // A store answers the greeting at once; give it between 1 and 10 s.
    double GreetS = std::min(10.0, std::max(1.0, secondsUntil(Deadline)));
    Outcome = greet(Fd, after(GreetS), Why);
    if (Outcome == Attempt::Connected)
      return Fd;
    ::close(Fd);
    if (Outcome == Attempt::Fatal)
      return -1;
  }
  return -1;
}

} // namespace

StoreClient::StoreClient(const std::string &Host, int Port,
                         double TimeoutSeconds)
    : Address(formatStoreAddress(Host, Port)) {
  if (Port <= 0 || Port > 65535)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: cannot connect to " + Address + ": port " +
                    std::to_string(Port) + " is out of range (1 to 65535)");
  OpTimeout = checkTimeout(TimeoutSeconds, "connect to " + Address);
  Clock::time_point Deadline = after(OpTimeout);
  auto Backoff = std::chrono::milliseconds(10);
  std::string LastWhy = "no address";
  while (true) {
    Attempt Outcome;
    Fd = tryConnect(Host, Port, Deadline, Outcome, LastWhy);
    if (Fd >= 0)
      return;
    if (Outcome == Attempt::Fatal)
      throw Error(MESHRT_ERROR_BACKEND,
                  "store: the peer at " + Address + " " + LastWhy);
    auto Left = Deadline - Clock::now();
    if (Left <= Clock::duration::zero())
      break;
    std::this_thread::sleep_for(std::min<Clock::duration>(Backoff, Left));
    Backoff = std::min(Backoff * 2, std::chrono::milliseconds(1000));
  }
  throw Error(MESHRT_ERROR_TIMEOUT,
              "store: no store at " + Address + " after " +
                  formatSeconds(OpTimeout) + " s (" + LastWhy +
                  "); is rank 0 running? MESHRT_STORE_TIMEOUT_S sets the "
                  "wait");
}

StoreClient::~StoreClient() {
  if (Fd >= 0)
    ::close(Fd);
}

void StoreClient::fail(const std::string &What, const std::string &Why) {
  Broken = Why;
  ::close(Fd);
  Fd = -1;
  throw Error(MESHRT_ERROR_BACKEND, "store: " + What + ": " + Why);
}

StoreClient::Reply
StoreClient::call(uint8_t Op, const std::vector<const std::string *> &Items,
                  int64_t Arg, double Wait, const std::string &What) {
  // Limits, checked here so that the error names the call; the server
  // checks them again.
  if (Items.size() > StoreMaxKeysPerCall)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What + ": " + std::to_string(Items.size()) +
                    " keys, more than the store's limit of " +
                    std::to_string(StoreMaxKeysPerCall) + " per call");
  uint64_t Payload = 0;
  for (size_t I = 0; I < Items.size(); ++I) {
    size_t N = Items[I]->size();
    Payload += 4 + N;
    if (Op == OpSet && I == 1) {
      if (N > StoreMaxValueBytes)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "store: " + What + ": the value has " + std::to_string(N) +
                        " bytes, more than the store's limit of " +
                        std::to_string(StoreMaxValueBytes) + " (64 MiB)");
    } else if (N > StoreMaxKeyBytes) {
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "store: " + What + ": a key has " + std::to_string(N) +
                      " bytes, more than the store's limit of " +
                      std::to_string(StoreMaxKeyBytes) + " (64 KiB)");
    }
  }
  if (Payload > StoreMaxPayloadBytes)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What + ": the request has " +
                    std::to_string(Payload) +
                    " bytes, more than the store's limit of " +
                    std::to_string(StoreMaxPayloadBytes) + " (128 MiB)");
  std::string Frame = encodeFrame(Op, Items, Arg);

  std::lock_guard<std::mutex> Lock(Mutex);
  if (!Broken.empty())
    throw Error(MESHRT_ERROR_BACKEND,
                "store: " + What +
                    ": no connection since an earlier call: " + Broken);
  // The server answers a waiting call when its wait ends; the connection's
  // own timeout on top of that is the grace for the answer to arrive.
  double Limit = std::min(Wait + OpTimeout, 2 * MaxTimeoutSeconds);
  Clock::time_point Deadline = after(Limit);
  auto Lost = [&](Io R, int Err) {
    if (R == Io::Timeout)
      return "no answer from the store at " + Address + " within " +
             formatSeconds(Limit) + " s; is rank 0 alive?";
    if (R == Io::Closed)
      return "lost the connection to the store at " + Address + " (" +
             (Err ? osError(Err) : std::string("the store closed it")) +
             "); has the store (rank 0) exited?";
    return "lost the connection to the store at " + Address + " (" +
           osError(Err) + ")";
  };
  int Err = 0;
  Io R = sendAll(Fd, Frame.data(), Frame.size(), Deadline, Err);
  if (R != Io::Ok) {
    std::string Why = Lost(R, Err);
    if (R == Io::Timeout) {
      Broken = Why;
      ::close(Fd);
      Fd = -1;
      throw Error(MESHRT_ERROR_TIMEOUT, "store: " + What + ": " + Why);
    }
    fail(What, Why);
  }
  char HeaderBuf[HeaderBytes];
  R = recvAll(Fd, HeaderBuf, HeaderBytes, Deadline, Err);
  Header H;
  std::string Payload2;
  if (R == Io::Ok) {
    if (!decodeHeader(HeaderBuf, H) || H.Code > StatusBadRequest ||
        H.NumItems > StoreMaxKeysPerCall ||
        H.PayloadBytes > StoreMaxPayloadBytes)
      fail(What, "the store at " + Address + " sent a malformed answer");
    Payload2.resize(H.PayloadBytes);
    R = recvAll(Fd, &Payload2[0], Payload2.size(), Deadline, Err);
  }
  if (R != Io::Ok) {
    std::string Why = Lost(R, Err);
    if (R == Io::Timeout) {
      Broken = Why;
      ::close(Fd);
      Fd = -1;
      throw Error(MESHRT_ERROR_TIMEOUT, "store: " + What + ": " + Why);
    }
    fail(What, Why);
  }
  Reply Rep;
  Rep.Status = H.Code;
  Rep.Int = H.Arg;
  if (!decodeItems(Payload2.data(), H.PayloadBytes, H.NumItems, Rep.Items))
    fail(What, "the store at " + Address + " sent a malformed answer");
  if (Rep.Status == StatusBadRequest)
    fail(What, "the store at " + Address + " refused the request: " +
                   (Rep.Items.empty() ? std::string("?") : Rep.Items[0]));
  return Rep;
}

void StoreClient::set(const std::string &Key, const std::string &Value) {
  call(OpSet, {&Key, &Value}, 0, 0, "set(" + quote(Key) + ")");
}

std::string StoreClient::get(const std::string &Key, double TimeoutSeconds) {
  std::string What = "get(" + quote(Key) + ")";
  double T = checkTimeout(TimeoutSeconds, What);
  Reply Rep = call(OpGet, {&Key}, toMillis(T), T, What);
  if (Rep.Status == StatusTimeout)
    throw Error(MESHRT_ERROR_TIMEOUT, "store: key " + quote(Key) +
                                          " did not appear in the store at " +
                                          Address + " within " +
                                          formatSeconds(T) + " s");
  if (Rep.Status != StatusOk || Rep.Items.size() != 1)
    fail(What, "the store at " + Address + " sent a malformed answer");
  return std::move(Rep.Items[0]);
}

int64_t StoreClient::add(const std::string &Key, int64_t Delta) {
  std::string What = "add(" + quote(Key) + ", " + std::to_string(Delta) + ")";
  Reply Rep = call(OpAdd, {&Key}, Delta, 0, What);
  if (Rep.Status == StatusBadValue)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What + ": " +
                    (Rep.Items.empty() ? std::string("?") : Rep.Items[0]));
  if (Rep.Status != StatusOk)
    fail(What, "the store at " + Address + " sent a malformed answer");
  return Rep.Int;
}

bool StoreClient::check(const std::vector<std::string> &Keys) {
  std::vector<const std::string *> Ptrs;
  for (const std::string &K : Keys)
    Ptrs.push_back(&K);
  Reply Rep = call(OpCheck, Ptrs, 0, 0, "check(" + quoteKeys(Keys) + ")");
  return Rep.Int != 0;
}

std::vector<std::string>
StoreClient::missing(const std::vector<std::string> &Keys) {
  std::vector<const std::string *> Ptrs;
  for (const std::string &K : Keys)
    Ptrs.push_back(&K);
  Reply Rep = call(OpWait, Ptrs, 0, 0, "missing(" + quoteKeys(Keys) + ")");
  if (Rep.Status == StatusOk)
    return {};
  return std::move(Rep.Items);
}

bool StoreClient::remove(const std::string &Key) {
  return call(OpRemove, {&Key}, 0, 0, "remove(" + quote(Key) + ")").Int != 0;
}

void StoreClient::wait(const std::vector<std::string> &Keys,
                       double TimeoutSeconds) {
  std::string What = "wait(" + quoteKeys(Keys) + ")";
  double T = checkTimeout(TimeoutSeconds, What);
  std::vector<const std::string *> Ptrs;
  for (const std::string &K : Keys)
    Ptrs.push_back(&K);
  Reply Rep = call(OpWait, Ptrs, toMillis(T), T, What);
  if (Rep.Status == StatusOk)
    return;
  const std::vector<std::string> &Missing = Rep.Items;
  throw Error(
      MESHRT_ERROR_TIMEOUT,
      std::string("store: ") + (Missing.size() == 1 ? "key " : "keys ") +
          quoteKeys(Missing) + " (" + std::to_string(Missing.size()) + " of " +
          std::to_string(Keys.size()) + ") did not appear in the store at " +
          Address + " within " + formatSeconds(T) + " s");
}

//===----------------------------------------------------------------------===//
// Rendezvous
//===----------------------------------------------------------------------===//

void meshrt::detail::rendezvous(StoreClient &C, int64_t Rank, int64_t Size,
                                const std::string &Prefix,
                                double TimeoutSeconds) {
  std::string What = "rendezvous '" + Prefix + "'";
  if (Size < 1 || Rank < 0 || Rank >= Size)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What + ": rank " + std::to_string(Rank) +
                    " is not a rank of a world of " + std::to_string(Size));
  double T = checkTimeout(TimeoutSeconds, What);
  Clock::time_point Deadline = after(T);
  auto RankKey = [&](int64_t R) {
    return Prefix + "/rank/" + std::to_string(R);
  };
  std::string CountKey = Prefix + "/count";
  std::string DoneKey = Prefix + "/done";

  char Host[256] = "?";
  gethostname(Host, sizeof(Host) - 1);
  C.set(RankKey(Rank), std::string(Host) + " " + std::to_string(getpid()));
  int64_t Arrived = C.add(CountKey, 1);
  if (Arrived > Size)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What + ": rank " + std::to_string(Rank) +
                    " is arrival " + std::to_string(Arrived) +
                    " for a world of " + std::to_string(Size) + " at " +
                    C.address() +
                    ": the prefix was used before (give each rendezvous its "
                    "own prefix, e.g. with a generation counter) or a rank "
                    "was started twice");
  std::vector<std::string> Keys;
  auto AllKeys = [&] {
    if (Keys.empty())
      for (int64_t R = 0; R < Size; ++R)
        Keys.push_back(RankKey(R));
    return Keys;
  };
  auto RanksOf = [&](const std::vector<std::string> &Missing) {
    std::vector<int64_t> Ranks;
    size_t Skip = Prefix.size() + 6; // "/rank/"
    for (const std::string &K : Missing)
      Ranks.push_back(std::stoll(K.substr(Skip)));
    return Ranks;
  };
  if (Arrived == Size) {
    // The last to arrive: every rank should have registered, unless one
    // was started twice (and another never).
    std::vector<std::string> Missing = C.missing(AllKeys());
    std::string Done = "ok";
    if (!Missing.empty())
      Done = std::string(Missing.size() == 1 ? "rank " : "ranks ") +
             formatRankRanges(RanksOf(Missing)) + " of " +
             std::to_string(Size) + " did not register, yet " +
             std::to_string(Size) +
             " arrivals were counted (was a rank started twice?)";
    C.set(DoneKey, Done);
  }
  std::string Done;
  try {
    Done = C.get(DoneKey, std::max(0.0, secondsUntil(Deadline)));
  } catch (const Error &E) {
    if (E.status() != MESHRT_ERROR_TIMEOUT)
      throw;
    std::vector<std::string> Missing = C.missing(AllKeys());
    if (!Missing.empty()) {
      std::vector<int64_t> Ranks = RanksOf(Missing);
      throw Error(MESHRT_ERROR_TIMEOUT,
                  "store: " + What + ": " +
                      (Ranks.size() == 1 ? "rank " : "ranks ") +
                      formatRankRanges(Ranks) + " of " + std::to_string(Size) +
                      " did not arrive at the store " + C.address() +
                      " within " + formatSeconds(T) + " s (this is rank " +
                      std::to_string(Rank) + ")");
    }
    // Every rank registered just now; the last one is about to say so.
    Done = C.get(DoneKey, C.timeout());
  }
  if (Done != "ok")
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What + " at " + C.address() + ": " + Done);
}
