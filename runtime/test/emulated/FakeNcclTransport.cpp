//===- FakeNcclTransport.cpp - MPI and gloo transports of the emulated NCCL
//===//
//
// Test-only; see FakeNcclTransport.h.
//
//===----------------------------------------------------------------------===//

#include "FakeNcclTransport.h"

#include <mpi.h>

#if FAKE_NCCL_HAVE_GLOO
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace fakenccl {
namespace {

/// 64-bit FNV-1a.
uint64_t hashBytes(const char *P, size_t N) {
  uint64_t H = 1469598103934665603ull;
  for (size_t I = 0; I < N; ++I)
    H = (H ^ uint8_t(P[I])) * 1099511628211ull;
  return H;
}

[[noreturn]] void fail(const std::string &What) {
  throw std::runtime_error("emulated NCCL: " + What);
}

//===----------------------------------------------------------------------===//
// MPI
//===----------------------------------------------------------------------===//

class MpiTransfer final : public PendingTransfer {
public:
  explicit MpiTransfer(MPI_Request R) : R(R) {}
  void wait() override {
    if (MPI_Wait(&R, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      fail("MPI_Wait failed");
  }

private:
  MPI_Request R;
};

class MpiTransport final : public Transport {
public:
  explicit MpiTransport(MPI_Comm C) : C(C) {
    int Size = 0;
    MPI_Comm_rank(C, &Rank);
    MPI_Comm_size(C, &Size);
    MPI_Group Mine, World;
    MPI_Comm_group(C, &Mine);
    MPI_Comm_group(MPI_COMM_WORLD, &World);
    std::vector<int> Ranks(static_cast<size_t>(Size));
    for (int I = 0; I < Size; ++I)
      Ranks[size_t(I)] = I;
    WorldRanks.resize(size_t(Size));
    MPI_Group_translate_ranks(Mine, Size, Ranks.data(), World,
                              WorldRanks.data());
    MPI_Group_free(&Mine);
    MPI_Group_free(&World);
  }
  ~MpiTransport() override {
    int Finalized = 0;
    MPI_Finalized(&Finalized);
    if (!Finalized)
      MPI_Comm_free(&C);
  }
  const char *name() const override { return "mpi"; }

  void allGather(const void *Send, void *Recv, size_t Bytes) override {
    check(MPI_Allgather(Send, count(Bytes), MPI_BYTE, Recv, count(Bytes),
                        MPI_BYTE, C),
          "MPI_Allgather");
  }
  void gather(const void *Send, void *Recv, size_t Bytes, int Root) override {
    check(MPI_Gather(Send, count(Bytes), MPI_BYTE, Recv, count(Bytes), MPI_BYTE,
                     Root, C),
          "MPI_Gather");
  }
  void broadcast(void *Buf, size_t Bytes, int Root) override {
    check(MPI_Bcast(Buf, count(Bytes), MPI_BYTE, Root, C), "MPI_Bcast");
  }
  std::unique_ptr<PendingTransfer> start(bool IsSend, void *Buf, size_t Bytes,
                                         int Peer) override {
    MPI_Request R;
    if (IsSend)
      check(MPI_Isend(Buf, count(Bytes), MPI_BYTE, Peer, 7, C, &R),
            "MPI_Isend");
    else
      check(MPI_Irecv(Buf, count(Bytes), MPI_BYTE, Peer, 7, C, &R),
            "MPI_Irecv");
    return std::make_unique<MpiTransfer>(R);
  }
  std::unique_ptr<Transport> split(int Color, int Key) override {
    MPI_Comm New;
    check(MPI_Comm_split(C, Color < 0 ? MPI_UNDEFINED : Color, Key, &New),
          "MPI_Comm_split");
    if (New == MPI_COMM_NULL)
      return nullptr;
    return std::make_unique<MpiTransport>(New);
  }

private:
  static int count(size_t Bytes) {
    if (Bytes > size_t(INT32_MAX))
      fail("a message of " + std::to_string(Bytes) +
           " bytes is more than one MPI call moves here");
    return int(Bytes);
  }
  static void check(int Status, const char *Call) {
    if (Status != MPI_SUCCESS)
      fail(std::string(Call) + " failed");
  }
  MPI_Comm C;
};

#if FAKE_NCCL_HAVE_GLOO
//===----------------------------------------------------------------------===//
// gloo
//===----------------------------------------------------------------------===//

std::chrono::milliseconds glooTimeout() {
  const char *E = std::getenv("FAKE_NCCL_TIMEOUT_S");
  long Seconds = E && *E ? std::atol(E) : 120;
  return std::chrono::milliseconds(std::max(1L, Seconds) * 1000);
}

std::string storeDir() {
  const char *E = std::getenv("FAKE_NCCL_STORE_DIR");
  std::string Dir = E && *E ? E : "/tmp/meshrt-fake-nccl-store";
  if (::mkdir(Dir.c_str(), 0700) != 0 && errno != EEXIST)
    fail("cannot make the rendezvous directory '" + Dir +
         "': " + std::strerror(errno));
  return Dir;
}

/// This process's TCP device on the loopback: every emulated rank is on
/// this node.
std::shared_ptr<gloo::transport::Device> device() {
  static std::shared_ptr<gloo::transport::Device> D = [] {
    gloo::transport::tcp::attr A;
    A.hostname = "127.0.0.1";
    return gloo::transport::tcp::CreateDevice(A);
  }();
  return D;
}

class GlooTransfer final : public PendingTransfer {
public:
  GlooTransfer(std::unique_ptr<gloo::transport::UnboundBuffer> Buf, bool IsSend,
               std::chrono::milliseconds Timeout)
      : Buf(std::move(Buf)), IsSend(IsSend), Timeout(Timeout) {}
  void wait() override {
    if (!Buf)
      return;
    bool Done = IsSend ? Buf->waitSend(Timeout) : Buf->waitRecv(Timeout);
    if (!Done)
      fail(std::string("a ") + (IsSend ? "send" : "receive") +
           " over gloo was aborted");
  }

private:
  std::unique_ptr<gloo::transport::UnboundBuffer> Buf;
  bool IsSend;
  std::chrono::milliseconds Timeout;
};

class GlooTransport final : public Transport {
public:
  /// Rank `R` of `Size` under `Prefix` of the file store; `World` gives
  /// the members' job ranks.
  GlooTransport(std::string Prefix, int R, int Size, std::vector<int> World)
      : Prefix(std::move(Prefix)), Timeout(glooTimeout()) {
    Rank = R;
    WorldRanks = std::move(World);
    gloo::rendezvous::FileStore Files(storeDir());
    gloo::rendezvous::PrefixStore Store(this->Prefix, Files);
    Ctx = std::make_shared<gloo::rendezvous::Context>(Rank, Size);
    Ctx->setTimeout(Timeout);
    try {
      std::shared_ptr<gloo::transport::Device> Device = device();
      Ctx->connectFullMesh(Store, Device);
      // Every member connected before any leaves (a member that destroys
      // the communicator at once would close sockets under a peer still
      // connecting).
      gloo::BarrierOptions Done(Ctx);
      Done.setTimeout(Timeout);
      gloo::barrier(Done);
    } catch (const std::exception &E) {
      fail("rank " + std::to_string(Rank) + " of " + std::to_string(Size) +
           " could not meet its peers over gloo under '" + this->Prefix +
           "' in " + storeDir() + ": " + E.what());
    }
    // The addresses are no longer needed: leave no files behind.
    for (const std::string &Path : Files.getAllKeyFilePaths())
      std::remove(Path.c_str());
  }
  const char *name() const override { return "gloo"; }
  void setWorldRanks(std::vector<int> World) { WorldRanks = std::move(World); }

  // The collectives post every transfer at once and then wait, one round
  // instead of gloo's rings of size - 1 steps: with eight processes on two
  // cores each step costs wake-ups, and the test suites make thousands of
  // small calls.
  void allGather(const void *Send, void *Recv, size_t Bytes) override {
    if (Bytes == 0)
      return;
    guarded("all_gather", [&] {
      auto *Out = static_cast<char *>(Recv);
      std::memmove(Out + size_t(Rank) * Bytes, Send, Bytes);
      std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> Ins, Outs;
      for (int R = 0; R < size(); ++R) {
        if (R == Rank)
          continue;
        Ins.push_back(post(false, Out + size_t(R) * Bytes, Bytes, R));
        Outs.push_back(post(true, const_cast<void *>(Send), Bytes, R));
      }
      waitAll(Outs, Ins);
    });
  }
  void gather(const void *Send, void *Recv, size_t Bytes, int Root) override {
    if (Bytes == 0)
      return;
    guarded("gather", [&] {
      std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> Ins, Outs;
      if (Rank != Root) {
        Outs.push_back(post(true, const_cast<void *>(Send), Bytes, Root));
      } else {
        auto *Out = static_cast<char *>(Recv);
        std::memmove(Out + size_t(Rank) * Bytes, Send, Bytes);
        for (int R = 0; R < size(); ++R)
          if (R != Rank)
            Ins.push_back(post(false, Out + size_t(R) * Bytes, Bytes, R));
      }
      waitAll(Outs, Ins);
    });
  }
  void broadcast(void *Buf, size_t Bytes, int Root) override {
    if (Bytes == 0)
      return;
    guarded("broadcast", [&] {
      std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> Ins, Outs;
      if (Rank != Root) {
        Ins.push_back(post(false, Buf, Bytes, Root));
      } else {
        for (int R = 0; R < size(); ++R)
          if (R != Rank)
            Outs.push_back(post(true, Buf, Bytes, R));
      }
      waitAll(Outs, Ins);
    });
  }
  std::unique_ptr<PendingTransfer> start(bool IsSend, void *Buf, size_t Bytes,
                                         int Peer) override {
    if (Bytes == 0)
      return std::make_unique<GlooTransfer>(nullptr, IsSend, Timeout);
    if (Peer == Rank)
      return startToSelf(IsSend, Buf, Bytes);
    std::unique_ptr<gloo::transport::UnboundBuffer> B;
    guarded(IsSend ? "send" : "receive", [&] {
      B = Ctx->createUnboundBuffer(Buf, Bytes);
      if (IsSend)
        B->send(Peer, /*slot=*/7);
      else
        B->recv(Peer, /*slot=*/7);
    });
    return std::make_unique<GlooTransfer>(std::move(B), IsSend, Timeout);
  }
  std::unique_ptr<Transport> split(int Color, int Key) override {
    int Mine[2] = {Color, Key};
    std::vector<int> All(2 * size_t(size()));
    allGather(Mine, All.data(), sizeof(Mine));
    unsigned Seq = Splits++;
    if (Color < 0)
      return nullptr;
    std::vector<std::tuple<int, int>> Members; // (key, parent rank)
    for (int R = 0; R < size(); ++R)
      if (All[2 * size_t(R)] == Color)
        Members.emplace_back(All[2 * size_t(R) + 1], R);
    std::sort(Members.begin(), Members.end());
    int NewRank = 0;
    std::vector<int> World;
    for (size_t I = 0; I < Members.size(); ++I) {
      int R = std::get<1>(Members[I]);
      if (R == Rank)
        NewRank = int(I);
      World.push_back(WorldRanks[size_t(R)]);
    }
    return std::make_unique<GlooTransport>(
        Prefix + "/split" + std::to_string(Seq) + "/color" +
            std::to_string(Color),
        NewRank, int(Members.size()), std::move(World));
  }

private:
  /// The collectives' slot: apart from the grouped transfers' (7).
  static constexpr uint64_t CollectiveSlot = 8;
  std::unique_ptr<gloo::transport::UnboundBuffer> post(bool IsSend, void *Buf,
                                                       size_t Bytes, int Peer) {
    auto B = Ctx->createUnboundBuffer(Buf, Bytes);
    if (IsSend)
      B->send(Peer, CollectiveSlot);
    else
      B->recv(Peer, CollectiveSlot);
    return B;
  }
  void
  waitAll(std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> &Outs,
          std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> &Ins) {
    for (auto &B : Outs)
      if (!B->waitSend(Timeout))
        fail("a send over gloo was aborted");
    for (auto &B : Ins)
      if (!B->waitRecv(Timeout))
        fail("a receive over gloo was aborted");
  }
  /// gloo has no pair from a rank to itself: a transfer to self is a copy,
  /// the n-th send to self paired with the n-th receive from self.
  struct SelfTransfer final : PendingTransfer {
    bool IsSend = false;
    void *Buf = nullptr;
    size_t Bytes = 0;
    bool Matched = false;
    void wait() override {
      if (!Matched)
        fail(std::string("a ") + (IsSend ? "send to" : "receive from") +
             " this rank itself has no matching " +
             (IsSend ? "receive" : "send") + " in its group");
    }
  };
  std::unique_ptr<PendingTransfer> startToSelf(bool IsSend, void *Buf,
                                               size_t Bytes) {
    auto T = std::make_unique<SelfTransfer>();
    T->IsSend = IsSend;
    T->Buf = Buf;
    T->Bytes = Bytes;
    std::vector<SelfTransfer *> &Other = IsSend ? SelfRecvs : SelfSends;
    if (Other.empty()) {
      (IsSend ? SelfSends : SelfRecvs).push_back(T.get());
      return T;
    }
    SelfTransfer *Peer = Other.front();
    Other.erase(Other.begin());
    if (Peer->Bytes != Bytes)
      fail("a send to this rank itself of " +
           std::to_string(IsSend ? Bytes : Peer->Bytes) +
           " bytes meets a receive of " +
           std::to_string(IsSend ? Peer->Bytes : Bytes));
    std::memcpy(IsSend ? Peer->Buf : Buf, IsSend ? Buf : Peer->Buf, Bytes);
    Peer->Matched = T->Matched = true;
    return T;
  }
  template <typename F> void guarded(const char *What, F &&Body) {
    try {
      Body();
    } catch (const std::runtime_error &E) {
      fail(std::string(What) + " over gloo failed on rank " +
           std::to_string(Rank) + " of " + std::to_string(size()) + ": " +
           E.what());
    }
  }
  std::string Prefix;
  std::chrono::milliseconds Timeout;
  std::shared_ptr<gloo::rendezvous::Context> Ctx;
  unsigned Splits = 0;
  /// Transfers to self started and not yet paired (they live until the
  /// group waits for them, which is after every one is started).
  std::vector<SelfTransfer *> SelfSends, SelfRecvs;
};

/// This process's rank in the job, as a launcher without MPI gives it.
int jobRank() {
  const char *E = std::getenv("RANK");
  return E && *E ? std::atoi(E) : 0;
}
#endif // FAKE_NCCL_HAVE_GLOO

} // namespace

std::unique_ptr<Transport> joinGroup(const char *Id, size_t IdBytes, int NRanks,
                                     int Rank) {
  char Key[32];
  std::snprintf(Key, sizeof(Key), "%016llx",
                (unsigned long long)hashBytes(Id, IdBytes));
  int Initialized = 0;
  MPI_Initialized(&Initialized);
  if (Initialized) {
    // Everybody with the same id forms one communicator, ordered by rank.
    MPI_Comm C;
    if (MPI_Comm_split(MPI_COMM_WORLD, int(hashBytes(Id, IdBytes) >> 33), Rank,
                       &C) != MPI_SUCCESS)
      fail("MPI_Comm_split failed");
    return std::make_unique<MpiTransport>(C);
  }
#if FAKE_NCCL_HAVE_GLOO
  auto T = std::make_unique<GlooTransport>(
      std::string("comm-") + Key, Rank, NRanks,
      std::vector<int>(static_cast<size_t>(NRanks)));
  // The members' job ranks, for the trace.
  std::vector<int> World(static_cast<size_t>(NRanks));
  int Mine = jobRank();
  T->allGather(&Mine, World.data(), sizeof(int));
  T->setWorldRanks(std::move(World));
  return T;
#else
  (void)NRanks;
  (void)Rank;
  fail("MPI is not initialized (the job was not started by an MPI launcher) "
       "and this build of the emulated NCCL has no gloo to use instead");
#endif
}

void makeUniqueId(char *Id, size_t IdBytes) {
  std::memset(Id, 0, IdBytes);
  uint64_t Parts[3] = {
      uint64_t(std::chrono::system_clock::now().time_since_epoch().count()),
      uint64_t(::getpid()), uint64_t(std::random_device{}())};
  std::memcpy(Id, Parts, std::min(IdBytes, sizeof(Parts)));
}

} // namespace fakenccl
