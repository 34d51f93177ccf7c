//===- StoreClient.cpp - A connection to the store
//--------------------------===//
//
// The client of Store.h: connects with backoff, one request and response at
// a time under a mutex, every call with a deadline.
//
//===----------------------------------------------------------------------===//

#include "Store.h"
#include "StoreWire.h"

using namespace meshrt;
using namespace meshrt::detail;
using namespace meshrt::detail::storewire;

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
  int Rc = 0;
  AddressList Addresses = resolveStream(Host, Port, /*Passive=*/false, Rc);
  Outcome = Attempt::Retry;
  if (!Addresses) {
    // Kubernetes publishes a pod's name some time after it starts: retry.
    Why = "cannot resolve '" + Host + "': " + gai_strerror(Rc);
    return -1;
  }
  for (addrinfo *A = Addresses.get(); A; A = A->ai_next) {
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
  // A failed exchange ends the call; after a timeout the connection is out
  // of step with the store, so later calls fail at once.
  auto lose = [&](Io R, int Err) {
    if (R == Io::Timeout) {
      Broken = "no answer from the store at " + Address + " within " +
               formatSeconds(Limit) + " s; is rank 0 alive?";
      ::close(Fd);
      Fd = -1;
      throw Error(MESHRT_ERROR_TIMEOUT, "store: " + What + ": " + Broken);
    }
    if (R == Io::Closed)
      fail(What, "lost the connection to the store at " + Address + " (" +
                     (Err ? osError(Err) : std::string("the store closed it")) +
                     "); has the store (rank 0) exited?");
    fail(What, "lost the connection to the store at " + Address + " (" +
                   osError(Err) + ")");
  };
  int Err = 0;
  Io R = sendAll(Fd, Frame.data(), Frame.size(), Deadline, Err);
  if (R != Io::Ok)
    lose(R, Err);
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
  if (R != Io::Ok)
    lose(R, Err);
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
