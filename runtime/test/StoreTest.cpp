//===- StoreTest.cpp - The key-value store of start-up without MPI --------===//
//
// One process; threads play the ranks, each with its own client (or sharing
// one). Raw sockets play stray clients and foreign servers. Every wait here
// is bounded; the whole suite takes a few seconds.
//
//===----------------------------------------------------------------------===//

#include "Store.h"

#include "meshrt/Error.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point T) {
  return std::chrono::duration<double>(Clock::now() - T).count();
}

/// The error `F` throws: fails the test if it throws none.
Error errorOf(const std::function<void()> &F) {
  try {
    F();
  } catch (const Error &E) {
    return E;
  }
  ADD_FAILURE() << "no meshrt::Error was thrown";
  return Error(MESHRT_SUCCESS, "");
}

/// Waits (at most 5 s) until `Pred` holds.
bool eventually(const std::function<bool()> &Pred) {
  Clock::time_point Start = Clock::now();
  while (!Pred()) {
    if (secondsSince(Start) > 5)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::unique_ptr<StoreServer> startLocal() {
  return StoreServer::start("127.0.0.1", 0);
}

std::string addr(int Port) { return "tcp://127.0.0.1:" + std::to_string(Port); }

/// A port that nothing listens on (was ephemeral a moment ago).
int freePort() { return startLocal()->port(); }

/// A plain blocking TCP connection to 127.0.0.1:`Port`.
int rawConnect(int Port) {
  int Fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in A{};
  A.sin_family = AF_INET;
  A.sin_port = htons(Port);
  A.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(Fd, reinterpret_cast<sockaddr *>(&A), sizeof(A)), 0);
  return Fd;
}

/// A plain listening socket on 127.0.0.1 (ephemeral port in `Port`).
int rawListen(int &Port) {
  int Fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in A{};
  A.sin_family = AF_INET;
  A.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(Fd, reinterpret_cast<sockaddr *>(&A), sizeof(A)), 0);
  EXPECT_EQ(listen(Fd, 16), 0);
  socklen_t Len = sizeof(A);
  getsockname(Fd, reinterpret_cast<sockaddr *>(&A), &Len);
  Port = ntohs(A.sin_port);
  return Fd;
}

void sendRaw(int Fd, const std::string &Bytes) {
  ASSERT_EQ(send(Fd, Bytes.data(), Bytes.size(), MSG_NOSIGNAL),
            ssize_t(Bytes.size()));
}

/// Reads until the peer closes (at most 5 s); what it sent.
std::string readToEnd(int Fd) {
  timeval Tv{5, 0};
  setsockopt(Fd, SOL_SOCKET, SO_RCVTIMEO, &Tv, sizeof(Tv));
  std::string S;
  char Buf[4096];
  ssize_t K;
  while ((K = recv(Fd, Buf, sizeof(Buf), 0)) > 0)
    S.append(Buf, size_t(K));
  return S;
}

std::string greeting(uint8_t Version) {
  return std::string("meshkv") + char(Version) + '\0';
}

/// A request header of the protocol (see Store.h).
std::string header(uint8_t Op, uint32_t Items, uint64_t Payload, int64_t Arg) {
  std::string H(1, char(Op));
  H.append(3, '\0');
  for (int I = 0; I < 4; ++I)
    H.push_back(char((Items >> (8 * I)) & 0xff));
  for (int I = 0; I < 8; ++I)
    H.push_back(char((Payload >> (8 * I)) & 0xff));
  for (int I = 0; I < 8; ++I)
    H.push_back(char((uint64_t(Arg) >> (8 * I)) & 0xff));
  return H;
}

} // namespace

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

TEST(StoreFormat, RankRanges) {
  EXPECT_EQ(formatRankRanges({}), "");
  EXPECT_EQ(formatRankRanges({4}), "4");
  EXPECT_EQ(formatRankRanges({3, 5}), "3, 5");
  EXPECT_EQ(formatRankRanges({7, 3, 6, 5}), "3, 5-7");
  EXPECT_EQ(formatRankRanges({0, 1, 3, 4, 5, 9}), "0, 1, 3-5, 9");
  std::vector<int64_t> Even;
  for (int64_t R = 0; R < 100; R += 2)
    Even.push_back(R);
  EXPECT_EQ(formatRankRanges(Even), "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, "
                                    "22, 24, 26, 28, ..., 98 (50 ranks)");
}

TEST(StoreFormat, Address) {
  EXPECT_EQ(formatStoreAddress("node0", 29500), "tcp://node0:29500");
  EXPECT_EQ(formatStoreAddress("::1", 29500), "tcp://[::1]:29500");
  EXPECT_EQ(formatStoreAddress("", 29500), "tcp://*:29500");
}

//===----------------------------------------------------------------------===//
// Semantics of the operations
//===----------------------------------------------------------------------===//

TEST(Store, SetGetAddCheckRemove) {
  auto S = startLocal();
  EXPECT_GT(S->port(), 0);
  EXPECT_EQ(S->address(), addr(S->port()));
  StoreClient C("127.0.0.1", S->port(), 5);
  EXPECT_EQ(C.address(), addr(S->port()));

  C.set("a", "1");
  EXPECT_EQ(C.get("a", 0), "1");
  C.set("a", "one");
  EXPECT_EQ(C.get("a", 1), "one");
  C.set("empty", "");
  EXPECT_EQ(C.get("empty", 0), "");

  EXPECT_EQ(C.add("n", 5), 5);
  EXPECT_EQ(C.add("n", -2), 3);
  EXPECT_EQ(C.get("n", 0), "3");
  EXPECT_EQ(C.add("n", 0), 3);
  C.set("m", "-40");
  EXPECT_EQ(C.add("m", 2), -38);
  C.set("big", "9223372036854775807");
  Error Over = errorOf([&] { C.add("big", 1); });
  EXPECT_EQ(Over.status(), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(Over.what()).find("overflows int64"),
            std::string::npos);
  Error NotInt = errorOf([&] { C.add("a", 1); });
  EXPECT_EQ(NotInt.status(), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(NotInt.what(),
               "store: add('a', 1): the value of 'a' is not an integer: 'one'");
  // An empty value is not an integer either, and a failed add changes
  // nothing; the connection stays usable.
  EXPECT_THROW(C.add("empty", 1), Error);
  EXPECT_EQ(C.get("a", 0), "one");

  EXPECT_TRUE(C.check({}));
  EXPECT_TRUE(C.check({"a", "n", "empty"}));
  EXPECT_FALSE(C.check({"a", "nope"}));
  EXPECT_EQ(C.missing({"a", "x", "n", "y"}),
            (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(C.missing({"a"}).empty());

  EXPECT_TRUE(C.remove("a"));
  EXPECT_FALSE(C.remove("a"));
  EXPECT_FALSE(C.check({"a"}));
  Error Gone = errorOf([&] { C.get("a", 0); });
  EXPECT_EQ(Gone.status(), MESHRT_ERROR_TIMEOUT);
  // Removed, then added again: counts from 0.
  EXPECT_TRUE(C.remove("n"));
  EXPECT_EQ(C.add("n", 1), 1);

  // A second client sees the same store.
  StoreClient D("127.0.0.1", S->port(), 5);
  EXPECT_EQ(D.get("n", 0), "1");
}

TEST(Store, WaitForKeys) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 5);
  StoreClient D("127.0.0.1", S->port(), 5);
  C.set("x", "");
  C.wait({}, 0);
  C.wait({"x"}, 0);

  // Released once both keys exist, by two sets from another client.
  std::thread T([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    D.set("p", "1");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    D.add("q", 1);
  });
  Clock::time_point Start = Clock::now();
  C.wait({"x", "p", "q"}, 5);
  double Took = secondsSince(Start);
  T.join();
  EXPECT_GE(Took, 0.09);
  EXPECT_LT(Took, 2);

  // A timeout names exactly the keys still missing.
  Start = Clock::now();
  Error E = errorOf([&] { C.wait({"x", "b", "p", "c"}, 0.2); });
  Took = secondsSince(Start);
  EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
  EXPECT_EQ(std::string(E.what()),
            "store: keys 'b', 'c' (2 of 4) did not appear in the store at " +
                addr(S->port()) + " within 0.2 s");
  EXPECT_GE(Took, 0.2);
  EXPECT_LT(Took, 1.5);
  Error One = errorOf([&] { C.wait({"x", "b"}, 0); });
  EXPECT_NE(std::string(One.what()).find("key 'b' (1 of 2)"),
            std::string::npos);
}

TEST(Store, BinaryKeysAndValues) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 5);
  std::string Value;
  for (int I = 0; I < 1024; ++I)
    Value.push_back(char(I % 256));
  std::string Key("k\0ey\xff", 5);
  C.set(Key, Value);
  std::string Got = C.get(Key, 0);
  EXPECT_EQ(Got.size(), 1024u);
  EXPECT_EQ(Got, Value);
  EXPECT_FALSE(C.check({std::string("k")}));
  C.set("zeros", std::string(100, '\0'));
  EXPECT_EQ(C.get("zeros", 0), std::string(100, '\0'));
  // Unprintable bytes of a key are escaped in messages.
  Error E = errorOf([&] { C.get(std::string("no\0pe", 5), 0); });
  EXPECT_NE(std::string(E.what()).find("key 'no\\x00pe'"), std::string::npos);
}

TEST(Store, LargeValuesAndLimits) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 10);
  std::string Big(10 << 20, '\0');
  for (size_t I = 0; I < Big.size(); I += 4093)
    Big[I] = char(I * 7);
  C.set("big", Big);
  StoreClient D("127.0.0.1", S->port(), 10);
  EXPECT_EQ(D.get("big", 1), Big);

  std::string TooBig(StoreMaxValueBytes + 1, 'x');
  Error E = errorOf([&] { C.set("huge", TooBig); });
  EXPECT_EQ(E.status(), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(E.what()),
            "store: set('huge'): the value has 67108865 bytes, more than the "
            "store's limit of 67108864 (64 MiB)");
  std::string LongKey(StoreMaxKeyBytes + 1, 'k');
  EXPECT_EQ(errorOf([&] { C.get(LongKey, 0); }).status(),
            MESHRT_ERROR_INVALID_ARGUMENT);
  // Refused before sending: the connection is still fine.
  C.set("after", "ok");
  EXPECT_EQ(C.get("after", 0), "ok");
}

TEST(Store, BadArguments) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 5);
  EXPECT_EQ(errorOf([&] { C.get("k", -1); }).status(),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([&] { C.wait({"k"}, 1.0 / 0.0); }).status(),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([] { StoreServer::start("127.0.0.1", 70000); }).status(),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([] { StoreClient("127.0.0.1", 0, 1); }).status(),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([&] { rendezvous(C, 3, 3, "r", 1); }).status(),
            MESHRT_ERROR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Waiting on the server
//===----------------------------------------------------------------------===//

TEST(Store, BlockingGetIsReleasedBySetWithoutPolling) {
  auto S = startLocal();
  StoreClient Waiter("127.0.0.1", S->port(), 5);
  StoreClient Setter("127.0.0.1", S->port(), 5);
  uint64_t Before = S->requestCount();
  std::string Got;
  double Took = 0;
  std::thread T([&] {
    Clock::time_point Start = Clock::now();
    Got = Waiter.get("late", 5);
    Took = secondsSince(Start);
  });
  ASSERT_TRUE(eventually([&] { return S->parkedCount() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Setter.set("late", "value");
  T.join();
  EXPECT_EQ(Got, "value");
  EXPECT_GE(Took, 0.3);
  EXPECT_LT(Took, 2);
  EXPECT_EQ(S->parkedCount(), 0u);
  // One get and one set crossed the wire: the wait was on the server.
  EXPECT_EQ(S->requestCount() - Before, 2u);
}

TEST(Store, GetTimesOutNamingTheKey) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 5);
  Clock::time_point Start = Clock::now();
  Error E = errorOf([&] { C.get("never", 0.3); });
  double Took = secondsSince(Start);
  EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
  EXPECT_EQ(std::string(E.what()),
            "store: key 'never' did not appear in the store at " +
                addr(S->port()) + " within 0.3 s");
  EXPECT_GE(Took, 0.3);
  EXPECT_LT(Took, 1.3);
  EXPECT_EQ(S->parkedCount(), 0u);
  // The client is still usable after a timeout.
  C.set("never", "now");
  EXPECT_EQ(C.get("never", 0.3), "now");
}

TEST(Store, ManyParkedGetsReleasedByOneSet) {
  auto S = startLocal();
  constexpr int N = 64;
  std::vector<std::unique_ptr<StoreClient>> Clients;
  for (int I = 0; I < N; ++I)
    Clients.push_back(std::make_unique<StoreClient>("127.0.0.1", S->port(), 5));
  std::atomic<int> Released{0};
  std::vector<std::thread> Threads;
  for (int I = 0; I < N; ++I)
    Threads.emplace_back([&, I] {
      if (I % 2)
        EXPECT_EQ(Clients[I]->get("go", 10), "now");
      else
        Clients[I]->wait({"go"}, 10);
      Released.fetch_add(1);
    });
  ASSERT_TRUE(eventually([&] { return S->parkedCount() == size_t(N); }));
  EXPECT_EQ(Released.load(), 0);
  StoreClient Setter("127.0.0.1", S->port(), 5);
  Setter.set("go", "now");
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Released.load(), N);
  EXPECT_EQ(S->parkedCount(), 0u);
}

TEST(Store, ParkedClientThatLeavesIsForgotten) {
  auto S = startLocal();
  int Fd = rawConnect(S->port());
  sendRaw(Fd, greeting(StoreProtocolVersion));
  // get('k') with a 60 s timeout, then the client goes away.
  sendRaw(Fd, header(2, 1, 5, 60000) + std::string("\1\0\0\0k", 5));
  ASSERT_TRUE(eventually([&] { return S->parkedCount() == 1; }));
  close(Fd);
  ASSERT_TRUE(eventually([&] { return S->parkedCount() == 0; }));
  ASSERT_TRUE(eventually([&] { return S->connectionCount() == 0; }));
  StoreClient C("127.0.0.1", S->port(), 5);
  C.set("k", "v");
  EXPECT_EQ(C.get("k", 0), "v");
}

//===----------------------------------------------------------------------===//
// Concurrency
//===----------------------------------------------------------------------===//

TEST(Store, ConcurrentAddsAreAtomic) {
  auto S = startLocal();
  constexpr int Threads = 32, Adds = 200;
  std::vector<std::vector<int64_t>> Seen(Threads);
  std::vector<std::thread> Ts;
  for (int T = 0; T < Threads; ++T)
    Ts.emplace_back([&, T] {
      StoreClient C("127.0.0.1", S->port(), 10);
      for (int I = 0; I < Adds; ++I)
        Seen[T].push_back(C.add("counter", 1));
    });
  for (std::thread &T : Ts)
    T.join();
  StoreClient C("127.0.0.1", S->port(), 5);
  EXPECT_EQ(C.get("counter", 0), std::to_string(Threads * Adds));
  // Every intermediate sum was handed out exactly once.
  std::set<int64_t> All;
  for (auto &V : Seen)
    All.insert(V.begin(), V.end());
  EXPECT_EQ(All.size(), size_t(Threads * Adds));
  EXPECT_EQ(*All.begin(), 1);
  EXPECT_EQ(*All.rbegin(), Threads * Adds);
}

TEST(Store, OneClientSharedByThreads) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 10);
  std::vector<std::thread> Ts;
  for (int T = 0; T < 8; ++T)
    Ts.emplace_back([&, T] {
      for (int I = 0; I < 100; ++I) {
        C.add("shared", 2);
        std::string K = "t" + std::to_string(T) + "/" + std::to_string(I);
        C.set(K, K);
        EXPECT_EQ(C.get(K, 1), K);
      }
    });
  for (std::thread &T : Ts)
    T.join();
  EXPECT_EQ(C.add("shared", 0), 1600);
}

//===----------------------------------------------------------------------===//
// Connecting, listening, and losing the store
//===----------------------------------------------------------------------===//

TEST(Store, PortInUse) {
  auto S = startLocal();
  Error E = errorOf([&] { StoreServer::start("127.0.0.1", S->port()); });
  EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND);
  EXPECT_EQ(std::string(E.what()),
            "store: cannot listen on " + addr(S->port()) +
                ": Address already in use (is another job or store using "
                "this port? set MESHRT_STORE_PORT)");
  // The first server is unharmed.
  StoreClient C("127.0.0.1", S->port(), 5);
  C.set("k", "v");
}

TEST(Store, AddressThatCannotBeBound) {
  // 192.0.2.1 (TEST-NET-1) is no address of this machine.
  Error E = errorOf([] { StoreServer::start("192.0.2.1", 0); });
  EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND);
  EXPECT_NE(
      std::string(E.what()).find("store: cannot listen on tcp://192.0.2.1:0: "),
      std::string::npos)
      << E.what();
  Error Name = errorOf([] { StoreServer::start("no-such-host.invalid", 0); });
  EXPECT_NE(std::string(Name.what())
                .find("cannot resolve "
                      "'no-such-host.invalid'"),
            std::string::npos)
      << Name.what();
}

TEST(Store, ClientRetriesUntilTheServerStarts) {
  int Port = freePort();
  std::unique_ptr<StoreServer> S;
  std::thread Starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    S = StoreServer::start("127.0.0.1", Port);
  });
  Clock::time_point Start = Clock::now();
  StoreClient C("127.0.0.1", Port, 5);
  double Took = secondsSince(Start);
  Starter.join();
  EXPECT_GE(Took, 0.3);
  EXPECT_LT(Took, 2.5);
  C.set("k", "v");
  EXPECT_EQ(C.get("k", 0), "v");
}

TEST(Store, ClientGivesUpWhenNoStore) {
  int Port = freePort();
  Clock::time_point Start = Clock::now();
  Error E = errorOf([&] { StoreClient C("127.0.0.1", Port, 0.5); });
  double Took = secondsSince(Start);
  EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
  EXPECT_EQ(std::string(E.what()),
            "store: no store at " + addr(Port) +
                " after 0.5 s (Connection refused); is rank 0 running? "
                "MESHRT_STORE_TIMEOUT_S sets the wait");
  EXPECT_GE(Took, 0.5);
  EXPECT_LT(Took, 1.5);
}

TEST(Store, ClientOfANameThatDoesNotResolve) {
  Error E = errorOf([] { StoreClient C("no-such-host.invalid", 29500, 0.2); });
  EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
  EXPECT_NE(std::string(E.what()).find(
                "no store at tcp://no-such-host.invalid:29500 after 0.2 s "
                "(cannot resolve 'no-such-host.invalid': "),
            std::string::npos)
      << E.what();
}

TEST(Store, ServerStoppedWhileClientBlocks) {
  auto S = startLocal();
  int Port = S->port();
  StoreClient C("127.0.0.1", Port, 30);
  std::string Message;
  double Took = 0;
  std::thread T([&] {
    Clock::time_point Start = Clock::now();
    Error E = errorOf([&] { C.get("never", 30); });
    Took = secondsSince(Start);
    Message = E.what();
  });
  ASSERT_TRUE(eventually([&] { return S->parkedCount() == 1; }));
  Clock::time_point Stop = Clock::now();
  S.reset();
  T.join();
  EXPECT_LT(secondsSince(Stop), 1);
  EXPECT_LT(Took, 5);
  EXPECT_NE(Message.find("store: get('never'): lost the connection to the "
                         "store at " +
                         addr(Port)),
            std::string::npos)
      << Message;
  // Every later call says so at once.
  Error Later = errorOf([&] { C.set("k", "v"); });
  EXPECT_EQ(Later.status(), MESHRT_ERROR_BACKEND);
  EXPECT_NE(std::string(Later.what())
                .find("no connection since an earlier call: lost the "
                      "connection to the store at " +
                      addr(Port)),
            std::string::npos)
      << Later.what();
}

TEST(Store, StoreThatStopsAnsweringIsATimeout) {
  // A peer that greets like a store, then never answers.
  int Port;
  int L = rawListen(Port);
  std::thread Peer([&] {
    int Fd = accept(L, nullptr, nullptr);
    char Buf[8];
    EXPECT_EQ(recv(Fd, Buf, 8, MSG_WAITALL), 8);
    sendRaw(Fd, greeting(StoreProtocolVersion));
    readToEnd(Fd); // Until the client gives up and closes.
    close(Fd);
  });
  StoreClient C("127.0.0.1", Port, 0.4);
  Clock::time_point Start = Clock::now();
  Error E = errorOf([&] { C.set("k", "v"); });
  double Took = secondsSince(Start);
  Peer.join();
  close(L);
  EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
  EXPECT_EQ(std::string(E.what()),
            "store: set('k'): no answer from the store at " + addr(Port) +
                " within 0.4 s; is rank 0 alive?");
  EXPECT_GE(Took, 0.4);
  EXPECT_LT(Took, 1.5);
}

TEST(Store, ForeignServerIsAClearError) {
  int Port;
  int L = rawListen(Port);
  std::thread Peer([&] {
    int Fd = accept(L, nullptr, nullptr);
    char Buf[8];
    recv(Fd, Buf, 8, MSG_WAITALL);
    sendRaw(Fd, "HTTP/1.1 400 Bad Request\r\n\r\n");
    close(Fd);
  });
  Clock::time_point Start = Clock::now();
  Error E = errorOf([&] { StoreClient C("127.0.0.1", Port, 5); });
  Peer.join();
  close(L);
  EXPECT_LT(secondsSince(Start), 1);
  EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND);
  EXPECT_EQ(std::string(E.what()),
            "store: the peer at " + addr(Port) +
                " answered the greeting with bytes that are not a meshrt "
                "store's; another program (e.g. a PyTorch TCPStore) listens "
                "on this port");
}

TEST(Store, PeerThatHangsUpAtTheGreeting) {
  int Port;
  int L = rawListen(Port);
  std::atomic<bool> Done{false};
  std::thread Peer([&] {
    while (!Done.load()) {
      pollfd P{L, POLLIN, 0};
      if (poll(&P, 1, 20) == 1)
        close(accept(L, nullptr, nullptr));
    }
  });
  Error E = errorOf([&] { StoreClient C("127.0.0.1", Port, 0.3); });
  Done = true;
  Peer.join();
  close(L);
  EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
  EXPECT_NE(std::string(E.what()).find("the peer closed the connection at "
                                       "the greeting"),
            std::string::npos)
      << E.what();
}

TEST(Store, GarbageClientsDoNotHurtTheServer) {
  auto S = startLocal();
  int Port = S->port();
  StoreClient Good("127.0.0.1", Port, 5);
  Good.set("before", "1");

  // Junk instead of a greeting: dropped at the first wrong byte.
  int Junk = rawConnect(Port);
  sendRaw(Junk, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(readToEnd(Junk), "");
  close(Junk);

  // PyTorch's TCPStore validation (a 0 byte, then a 4-byte magic).
  int Torch = rawConnect(Port);
  sendRaw(Torch, std::string("\0\xce\xf7\x85\x3c", 5));
  EXPECT_EQ(readToEnd(Torch), "");
  close(Torch);

  // Another protocol version: answered with ours and status 1, then closed.
  int Old = rawConnect(Port);
  sendRaw(Old, greeting(99));
  EXPECT_EQ(readToEnd(Old),
            std::string("meshkv") + char(StoreProtocolVersion) + '\1');
  close(Old);

  // A greeting, then a header with an unknown operation: a refusal, closed.
  int BadOp = rawConnect(Port);
  sendRaw(BadOp, greeting(StoreProtocolVersion) + header(77, 0, 0, 0));
  std::string Answer = readToEnd(BadOp);
  EXPECT_GE(Answer.size(), 8u + 24u);
  EXPECT_EQ(Answer.size() > 8 ? Answer[8] : 0, 3); // StatusBadRequest
  close(BadOp);

  // A header that claims a huge payload: refused without reading it.
  int Huge = rawConnect(Port);
  sendRaw(Huge,
          greeting(StoreProtocolVersion) + header(1, 2, uint64_t(1) << 40, 0));
  EXPECT_GE(readToEnd(Huge).size(), 8u + 24u);
  close(Huge);

  // Items that do not fill the payload.
  int Short = rawConnect(Port);
  sendRaw(Short, greeting(StoreProtocolVersion) + header(1, 2, 8, 0) +
                     std::string("\x09\0\0\0abcd", 8));
  EXPECT_GE(readToEnd(Short).size(), 8u + 24u);
  close(Short);

  // Half a request, then gone; a client that sends nothing, and stays.
  int Half = rawConnect(Port);
  sendRaw(Half, greeting(StoreProtocolVersion) + header(1, 2, 100, 0) + "abc");
  close(Half);
  int Silent = rawConnect(Port);

  // Random bytes after a valid greeting.
  int Random = rawConnect(Port);
  std::string Noise = greeting(StoreProtocolVersion);
  uint32_t X = 12345;
  for (int I = 0; I < 4096; ++I) {
    X = X * 1103515245 + 12345;
    Noise.push_back(char(X >> 16));
  }
  send(Random, Noise.data(), Noise.size(), MSG_NOSIGNAL);
  readToEnd(Random);
  close(Random);

  // The store still serves its clients, old and new.
  EXPECT_EQ(Good.get("before", 0), "1");
  Good.set("after", "2");
  StoreClient New("127.0.0.1", Port, 5);
  EXPECT_EQ(New.get("after", 0), "2");
  EXPECT_EQ(New.add("n", 1), 1);
  // Only the good clients and the silent one are left.
  EXPECT_TRUE(eventually([&] { return S->connectionCount() == 3; }))
      << S->connectionCount();
  close(Silent);
  EXPECT_TRUE(eventually([&] { return S->connectionCount() == 2; }));
}

TEST(Store, PartialReadsAndWrites) {
  auto S = startLocal();
  int Port = S->port();
  StoreClient Good("127.0.0.1", Port, 5);
  Good.set("big", std::string(8 << 20, 'b'));

  // A request that arrives a byte at a time.
  int Slow = rawConnect(Port);
  std::string Req = greeting(StoreProtocolVersion) + header(1, 2, 10, 0) +
                    std::string("\1\0\0\0k\1\0\0\0v", 10);
  for (char B : Req) {
    sendRaw(Slow, std::string(1, B));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_EQ(Good.get("k", 2), "v");

  // A client that asks for 8 MiB and does not read the answer holds up
  // nobody else.
  int Lazy = rawConnect(Port);
  sendRaw(Lazy, greeting(StoreProtocolVersion) + header(2, 1, 7, 0) +
                    std::string("\3\0\0\0big", 7));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Good.add("n", 1), 1);
  EXPECT_EQ(Good.get("big", 0).size(), size_t(8 << 20));
  // Read it now: all of it arrives, after the greeting's answer.
  std::string Answer;
  char Buf[65536];
  while (Answer.size() < 8 + 24 + 4 + (8 << 20)) {
    ssize_t K = recv(Lazy, Buf, sizeof(Buf), 0);
    ASSERT_GT(K, 0);
    Answer.append(Buf, size_t(K));
  }
  EXPECT_EQ(Answer.size(), size_t(8 + 24 + 4 + (8 << 20)));
  EXPECT_EQ(Answer.substr(Answer.size() - 3), "bbb");
  close(Lazy);
  close(Slow);
}

TEST(Store, ListensOnEveryInterface) {
  auto S = StoreServer::start("", 0);
  EXPECT_EQ(S->address(), "tcp://*:" + std::to_string(S->port()));
  StoreClient C("127.0.0.1", S->port(), 5);
  C.set("k", "v");
  StoreClient D("localhost", S->port(), 5);
  EXPECT_EQ(D.get("k", 0), "v");
}

TEST(Store, IPv6Loopback) {
  std::unique_ptr<StoreServer> S;
  try {
    S = StoreServer::start("::1", 0);
  } catch (const Error &E) {
    GTEST_SKIP() << "no IPv6 loopback here: " << E.what();
  }
  EXPECT_EQ(S->address(), "tcp://[::1]:" + std::to_string(S->port()));
  StoreClient C("::1", S->port(), 5);
  EXPECT_EQ(C.address(), "tcp://[::1]:" + std::to_string(S->port()));
  C.set("k", "v6");
  EXPECT_EQ(C.get("k", 0), "v6");
  Error E = errorOf([&] { C.get("missing", 0.05); });
  EXPECT_NE(std::string(E.what()).find("tcp://[::1]:"), std::string::npos);
  // Bound to ::1 only: a second server on the same port collides.
  Error InUse = errorOf([&] { StoreServer::start("::1", S->port()); });
  EXPECT_NE(std::string(InUse.what())
                .find("cannot listen on tcp://[::1]:" +
                      std::to_string(S->port()) + ": Address already in use"),
            std::string::npos)
      << InUse.what();
}

//===----------------------------------------------------------------------===//
// Rendezvous
//===----------------------------------------------------------------------===//

TEST(StoreRendezvous, EightRanksMeetTwice) {
  auto S = startLocal();
  constexpr int Size = 8;
  std::vector<std::unique_ptr<StoreClient>> Clients;
  for (int R = 0; R < Size; ++R)
    Clients.push_back(std::make_unique<StoreClient>("127.0.0.1", S->port(), 5));
  for (const char *Prefix : {"job/start/0", "job/start/1"}) {
    std::vector<std::thread> Ts;
    std::atomic<int> Ok{0};
    for (int R = 0; R < Size; ++R)
      Ts.emplace_back([&, R] {
        // Arrive in a scrambled order.
        std::this_thread::sleep_for(std::chrono::milliseconds((R * 37) % 50));
        rendezvous(*Clients[R], R, Size, Prefix, 5);
        Ok.fetch_add(1);
      });
    for (std::thread &T : Ts)
      T.join();
    EXPECT_EQ(Ok.load(), Size) << Prefix;
  }
  // Each rank registered its host and process.
  std::string Me = Clients[0]->get("job/start/0/rank/3", 0);
  EXPECT_NE(Me.find(" " + std::to_string(getpid())), std::string::npos);
  EXPECT_EQ(Clients[0]->get("job/start/1/count", 0), "8");

  // Reusing a prefix is refused on every rank.
  std::vector<std::thread> Ts;
  std::atomic<int> Refused{0};
  for (int R = 0; R < Size; ++R)
    Ts.emplace_back([&, R] {
      Error E =
          errorOf([&] { rendezvous(*Clients[R], R, Size, "job/start/0", 2); });
      if (E.status() == MESHRT_ERROR_INVALID_ARGUMENT &&
          std::string(E.what()).find("the prefix was used before") !=
              std::string::npos)
        Refused.fetch_add(1);
    });
  for (std::thread &T : Ts)
    T.join();
  EXPECT_EQ(Refused.load(), Size);
}

TEST(StoreRendezvous, MissingRanksAreNamed) {
  auto S = startLocal();
  constexpr int Size = 8;
  std::vector<std::thread> Ts;
  std::vector<std::string> Messages(Size);
  std::vector<double> Took(Size);
  for (int R = 0; R < Size; ++R) {
    if (R == 3 || R == 5)
      continue; // Never arrive.
    Ts.emplace_back([&, R] {
      StoreClient C("127.0.0.1", S->port(), 5);
      Clock::time_point Start = Clock::now();
      Error E = errorOf([&] { rendezvous(C, R, Size, "late", 1); });
      Took[R] = secondsSince(Start);
      EXPECT_EQ(E.status(), MESHRT_ERROR_TIMEOUT);
      Messages[R] = E.what();
    });
  }
  for (std::thread &T : Ts)
    T.join();
  for (int R = 0; R < Size; ++R) {
    if (R == 3 || R == 5)
      continue;
    EXPECT_EQ(Messages[R], "store: rendezvous 'late': ranks 3, 5 of 8 did not "
                           "arrive at the store " +
                               addr(S->port()) + " within 1 s (this is rank " +
                               std::to_string(R) + ")");
    EXPECT_GE(Took[R], 0.9);
    EXPECT_LT(Took[R], 2.5);
  }
  // One missing rank, and a run: singular and ranges.
  StoreClient C("127.0.0.1", S->port(), 5);
  for (int R = 0; R < 4; ++R)
    C.set("few/rank/" + std::to_string(R), "x");
  C.add("few/count", 4);
  Error E = errorOf([&] { rendezvous(C, 4, 8, "few", 0.1); });
  EXPECT_NE(std::string(E.what()).find(": ranks 5-7 of 8 did not arrive"),
            std::string::npos)
      << E.what();
  Error One = errorOf([&] { rendezvous(C, 0, 2, "pair", 0.1); });
  EXPECT_NE(std::string(One.what()).find(": rank 1 of 2 did not arrive"),
            std::string::npos)
      << One.what();
}

TEST(StoreRendezvous, WorldOfOne) {
  auto S = startLocal();
  StoreClient C("127.0.0.1", S->port(), 5);
  rendezvous(C, 0, 1, "solo/0", 0);
  EXPECT_EQ(C.get("solo/0/done", 0), "ok");
}
