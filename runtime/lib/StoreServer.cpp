//===- StoreServer.cpp - The store's server
//---------------------------------===//
//
// The server of Store.h: one thread serves every client with poll(), parks
// blocking gets and waits until their keys are set or their deadline passes.
//
//===----------------------------------------------------------------------===//

#include "Store.h"
#include "StoreWire.h"

using namespace meshrt;
using namespace meshrt::detail;
using namespace meshrt::detail::storewire;

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
  int Rc = 0;
  AddressList Addresses = resolveStream(Host, Port, /*Passive=*/true, Rc);
  if (!Addresses)
    throw Error(MESHRT_ERROR_BACKEND,
                "store: cannot listen on " + formatStoreAddress(Host, Port) +
                    ": cannot resolve '" + Host + "': " + gai_strerror(Rc));
  auto CloseAll = [&] {
    for (int Fd : Fds)
      ::close(Fd);
    Fds.clear();
  };
  BoundPort = Port;
  std::vector<std::string> Seen;
  BindFailure First;
  for (addrinfo *A = Addresses.get(); A; A = A->ai_next) {
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
