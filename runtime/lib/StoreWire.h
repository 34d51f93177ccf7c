//===- StoreWire.h - The store's protocol and socket helpers ----*- C++ -*-===//
//
// Internal to the store (Store.cpp, StoreServer.cpp, StoreClient.cpp): the
// protocol's codes and framing (see Store.h for the protocol), deadlines,
// socket set-up and the bounded send/receive loops both sides use.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_STOREWIRE_H
#define MESHRT_LIB_STOREWIRE_H

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
#include <memory>
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

namespace meshrt {
namespace detail {
namespace storewire {

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

inline void putU32(std::string &S, uint32_t V) {
  for (int I = 0; I < 4; ++I)
    S.push_back(char((V >> (8 * I)) & 0xff));
}

inline void putU64(std::string &S, uint64_t V) {
  for (int I = 0; I < 8; ++I)
    S.push_back(char((V >> (8 * I)) & 0xff));
}

inline uint32_t getU32(const char *P) {
  uint32_t V = 0;
  for (int I = 0; I < 4; ++I)
    V |= uint32_t(uint8_t(P[I])) << (8 * I);
  return V;
}

inline uint64_t getU64(const char *P) {
  uint64_t V = 0;
  for (int I = 0; I < 8; ++I)
    V |= uint64_t(uint8_t(P[I])) << (8 * I);
  return V;
}

/// A frame: the header, then each item as its length and bytes.
inline std::string encodeFrame(uint8_t Code,
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
inline bool decodeHeader(const char *P, Header &H) {
  if (P[1] || P[2] || P[3])
    return false;
  H.Code = uint8_t(P[0]);
  H.NumItems = getU32(P + 4);
  H.PayloadBytes = getU64(P + 8);
  H.Arg = int64_t(getU64(P + 16));
  return true;
}

/// Splits a payload into its `N` items; false unless they fill it exactly.
inline bool decodeItems(const char *P, uint64_t Bytes, uint32_t N,
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

inline std::string osError(int E) {
  return std::error_code(E, std::generic_category()).message();
}

/// Seconds for messages: "300", "0.3", "1.25".
inline std::string formatSeconds(double S) {
  char Buf[64];
  if (S == std::floor(S) && S < 1e9)
    std::snprintf(Buf, sizeof(Buf), "%.0f", S);
  else
    std::snprintf(Buf, sizeof(Buf), "%.3g", S);
  return Buf;
}

/// A key for messages: quoted, bytes that are not printable escaped, long
/// keys cut.
inline std::string quote(const std::string &Key) {
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
inline std::string quoteKeys(const std::vector<std::string> &Keys) {
  std::string S;
  size_t N = std::min<size_t>(Keys.size(), 10);
  for (size_t I = 0; I < N; ++I)
    S += (I ? ", " : "") + quote(Keys[I]);
  if (N < Keys.size())
    S += ", and " + std::to_string(Keys.size() - N) + " more";
  return S;
}

/// Milliseconds for the protocol, rounded up.
inline int64_t toMillis(double Seconds) {
  return int64_t(std::ceil(Seconds * 1e3));
}

/// Checks a timeout argument: finite and >= 0; capped at MaxTimeoutSeconds.
inline double checkTimeout(double Seconds, const std::string &What) {
  if (!(Seconds >= 0) || std::isinf(Seconds))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "store: " + What +
                    ": the timeout must be a number of seconds "
                    ">= 0, not " +
                    formatSeconds(Seconds));
  return std::min(Seconds, MaxTimeoutSeconds);
}

inline Clock::time_point after(double Seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(Seconds));
}

inline double secondsUntil(Clock::time_point Deadline) {
  return std::chrono::duration<double>(Deadline - Clock::now()).count();
}

/// poll()'s timeout for `Deadline`, rounded up to a millisecond.
inline int pollMillis(Clock::time_point Deadline) {
  auto Left = Deadline - Clock::now();
  if (Left <= Clock::duration::zero())
    return 0;
  auto Ms = std::chrono::ceil<std::chrono::milliseconds>(Left).count();
  return int(std::min<int64_t>(Ms, std::numeric_limits<int>::max()));
}

inline bool setNonBlocking(int Fd) {
  int Flags = fcntl(Fd, F_GETFL, 0);
  return Flags >= 0 && fcntl(Fd, F_SETFL, Flags | O_NONBLOCK) == 0;
}

inline void setCloseOnExec(int Fd) {
  int Flags = fcntl(Fd, F_GETFD, 0);
  if (Flags >= 0)
    fcntl(Fd, F_SETFD, Flags | FD_CLOEXEC);
}

/// A socket of the family, close-on-exec.
inline int openSocket(int Family) {
  int Fd = socket(Family, SOCK_STREAM, 0);
  if (Fd >= 0)
    setCloseOnExec(Fd);
  return Fd;
}

inline void setSocketOptions(int Fd) {
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
inline std::string numericHost(const sockaddr *Addr, socklen_t Len) {
  char Host[NI_MAXHOST];
  if (getnameinfo(Addr, Len, Host, sizeof(Host), nullptr, 0, NI_NUMERICHOST))
    return "?";
  return Host;
}

enum class Io { Ok, Closed, Timeout, Failed };

/// getaddrinfo's list of stream addresses for `Host` (every interface, or
/// the loopback, when empty) and `Port`, freed with the holder; `Passive`
/// for addresses to listen on. Null with getaddrinfo's code in `Rc` when
/// the host does not resolve.
using AddressList = std::unique_ptr<addrinfo, void (*)(addrinfo *)>;
inline AddressList resolveStream(const std::string &Host, int Port,
                                 bool Passive, int &Rc) {
  addrinfo Hints{};
  Hints.ai_family = AF_UNSPEC;
  Hints.ai_socktype = SOCK_STREAM;
  Hints.ai_flags = Passive ? AI_PASSIVE : 0;
  addrinfo *Res = nullptr;
  std::string PortStr = std::to_string(Port);
  Rc = getaddrinfo(Host.empty() ? nullptr : Host.c_str(), PortStr.c_str(),
                   &Hints, &Res);
  return AddressList(Rc == 0 ? Res : nullptr, freeaddrinfo);
}

/// Waits until `Fd` is ready for `Events` (POLLIN or POLLOUT), a signal
/// arrives (Ok: the caller retries) or `Deadline` passes (Timeout); Failed
/// with `Err` set when poll fails.
inline Io waitFor(int Fd, short Events, Clock::time_point Deadline, int &Err) {
  pollfd Pfd{Fd, Events, 0};
  int Ms = pollMillis(Deadline);
  if (Ms == 0 && Clock::now() >= Deadline)
    return Io::Timeout;
  if (::poll(&Pfd, 1, Ms) < 0 && errno != EINTR) {
    Err = errno;
    return Io::Failed;
  }
  return Io::Ok;
}

/// Sends all `N` bytes before `Deadline`; `Err` is errno on Failed.
inline Io sendAll(int Fd, const char *P, size_t N, Clock::time_point Deadline,
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
    if (Io W = waitFor(Fd, POLLOUT, Deadline, Err); W != Io::Ok)
      return W;
  }
  return Io::Ok;
}

/// Receives exactly `N` bytes before `Deadline`; `Err` is errno on Failed or
/// on a reset (Closed with Err != 0); Closed with Err == 0 is an orderly
/// close.
inline Io recvAll(int Fd, char *P, size_t N, Clock::time_point Deadline,
                  int &Err) {
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
    if (Io W = waitFor(Fd, POLLIN, Deadline, Err); W != Io::Ok)
      return W;
  }
  return Io::Ok;
}

/// Parses a decimal int64 (an optional '-', then digits, nothing else).
inline bool parseInt64(const std::string &S, int64_t &V) {
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

} // namespace storewire
} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_STOREWIRE_H
