//===- StoreControl.cpp - The control plane over the TCP store ------------===//
//
// See StoreControl.h.
//
//===----------------------------------------------------------------------===//

#include "StoreControl.h"

#include "meshrt/Error.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

class StoreControl final : public ControlGroup {
public:
  StoreControl(std::shared_ptr<StoreClient> Client, std::string Prefix,
               std::vector<int64_t> Members, int64_t MyRank, double Timeout)
      : Client(std::move(Client)), Prefix(std::move(Prefix)),
        Members(std::move(Members)), Timeout(Timeout > 0 ? Timeout : 1e9) {
    Rank = MyRank;
    Size = int64_t(this->Members.size());
  }
  ~StoreControl() override {
    // The keys of the last call stay until every rank is done with it;
    // nobody can tell when that is without another call, so they stay.
  }
  const char *kind() const override { return "store"; }

  void allReduce(int64_t *Data, size_t N, bool Max, const char *What) override {
    std::string Mine(reinterpret_cast<const char *>(Data), N * 8);
    std::vector<std::string> All = exchange(Mine, What);
    for (const std::string &V : All) {
      checkLength(V, N * 8, What);
      for (size_t I = 0; I < N; ++I) {
        int64_t X;
        std::memcpy(&X, V.data() + I * 8, 8);
        Data[I] = Max ? std::max(Data[I], X) : std::min(Data[I], X);
      }
    }
  }
  void broadcast(void *Buf, size_t Bytes, int64_t Root,
                 const char *What) override {
    std::string Key = Prefix + "/" + std::to_string(Seq++) + "/b";
    if (Rank == Root) {
      Client->set(Key, std::string(static_cast<const char *>(Buf), Bytes));
      Written.push_back(Key);
      return;
    }
    std::string V;
    try {
      V = Client->get(Key, Timeout);
    } catch (const Error &E) {
      if (E.status() != MESHRT_ERROR_TIMEOUT)
        throw;
      throw Error(MESHRT_ERROR_TIMEOUT,
                  std::string("control plane (") + What + "): world rank " +
                      std::to_string(Members[size_t(Root)]) +
                      " did not broadcast within " + seconds() + " (store " +
                      Client->address() + ")");
    }
    checkLength(V, Bytes, What);
    std::memcpy(Buf, V.data(), Bytes);
  }
  void allGather(const void *Mine, void *All, size_t Bytes,
                 const char *What) override {
    std::vector<std::string> Vs =
        exchange(std::string(static_cast<const char *>(Mine), Bytes), What);
    for (size_t I = 0; I < Vs.size(); ++I) {
      checkLength(Vs[I], Bytes, What);
      std::memcpy(static_cast<char *>(All) + I * Bytes, Vs[I].data(), Bytes);
    }
  }
  std::unique_ptr<ControlGroup> split(int64_t Color, int64_t Key,
                                      const char *What) override {
    int64_t Mine[2] = {Color, Key};
    std::vector<int64_t> All(size_t(2 * Size));
    std::string Name = Prefix + "/" + std::to_string(Seq) + "s";
    allGather(Mine, All.data(), sizeof(Mine), What);
    if (Color < 0)
      return nullptr;
    // Members with this color, by (key, rank).
    std::vector<std::pair<int64_t, int64_t>> Order;
    for (int64_t R = 0; R < Size; ++R)
      if (All[size_t(2 * R)] == Color)
        Order.push_back({All[size_t(2 * R + 1)], R});
    std::sort(Order.begin(), Order.end());
    std::vector<int64_t> World;
    int64_t Me = -1;
    for (auto &[K, R] : Order) {
      if (R == Rank)
        Me = int64_t(World.size());
      World.push_back(Members[size_t(R)]);
    }
    return std::make_unique<StoreControl>(Client, Name + std::to_string(Color),
                                          std::move(World), Me, Timeout);
  }
  std::unique_ptr<ControlGroup> duplicate(const char *) override {
    return std::make_unique<StoreControl>(
        Client, Prefix + "/" + std::to_string(Seq++) + "d", Members, Rank,
        Timeout);
  }
  int64_t nodeLocalRank(const char *What) override {
    char Host[256] = {};
    gethostname(Host, sizeof(Host) - 1);
    std::vector<std::string> All = exchange(Host, What);
    int64_t Local = 0;
    for (int64_t R = 0; R < Rank; ++R)
      Local += All[size_t(R)] == All[size_t(Rank)];
    return Local;
  }
  bool fence(double Bound) noexcept override {
    try {
      std::string Key = Prefix + "/" + std::to_string(Seq++) + "/fence";
      if (Client->add(Key, 1) == Size) {
        Client->set(Key + "/done", "");
        return true;
      }
      Client->wait({Key + "/done"}, Bound > 0 ? Bound : 1e9);
      return true;
    } catch (...) {
      return false;
    }
  }

private:
  /// Every rank's `Mine`, in group order: call Seq's keys.
  std::vector<std::string> exchange(const std::string &Mine, const char *What) {
    std::string Base = Prefix + "/" + std::to_string(Seq++) + "/";
    Client->set(Base + std::to_string(Rank), Mine);
    std::vector<std::string> Keys;
    for (int64_t R = 0; R < Size; ++R)
      Keys.push_back(Base + std::to_string(R));
    try {
      Client->wait(Keys, Timeout);
    } catch (const Error &E) {
      if (E.status() != MESHRT_ERROR_TIMEOUT)
        throw;
      std::vector<int64_t> Missing;
      try {
        std::vector<std::string> Left = Client->missing(Keys);
        for (const std::string &K : Left)
          Missing.push_back(Members[size_t(std::stoll(K.substr(Base.size())))]);
      } catch (...) {
      }
      throw Error(MESHRT_ERROR_TIMEOUT,
                  std::string("control plane (") + What + "): world rank" +
                      (Missing.size() == 1 ? " " : "s ") +
                      formatRankRanges(Missing) + " did not arrive within " +
                      seconds() + " (store " + Client->address() + ")");
    }
    std::vector<std::string> Out;
    Out.reserve(Keys.size());
    for (const std::string &K : Keys)
      Out.push_back(Client->get(K, 0));
    // Every rank wrote this call's key, so every rank is done with the
    // earlier calls: their keys can go.
    for (const std::string &K : Written)
      Client->remove(K);
    Written.assign(1, Base + std::to_string(Rank));
    return Out;
  }
  void checkLength(const std::string &V, size_t Bytes, const char *What) {
    if (V.size() != Bytes)
      throw Error(MESHRT_ERROR_BACKEND,
                  std::string("control plane (") + What + "): a peer sent " +
                      std::to_string(V.size()) + " bytes where " +
                      std::to_string(Bytes) +
                      " were expected (ranks are making different calls)");
  }
  std::string seconds() const {
    return std::to_string(int64_t(Timeout)) + " s (MESHRT_TIMEOUT_S)";
  }

  std::shared_ptr<StoreClient> Client;
  std::string Prefix;
  std::vector<int64_t> Members; // World ranks, in group order.
  double Timeout;
  int64_t Seq = 0;
  std::vector<std::string> Written; // This rank's keys not yet removed.
};

} // namespace

std::unique_ptr<ControlGroup>
meshrt::detail::makeStoreControl(std::shared_ptr<StoreClient> Client,
                                 std::string Prefix, int64_t Rank, int64_t Size,
                                 double Timeout) {
  std::vector<int64_t> World(static_cast<size_t>(Size));
  for (int64_t R = 0; R < Size; ++R)
    World[size_t(R)] = R;
  return std::make_unique<StoreControl>(std::move(Client), std::move(Prefix),
                                        std::move(World), Rank, Timeout);
}
