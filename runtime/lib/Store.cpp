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
#include "StoreWire.h"

using namespace meshrt;
using namespace meshrt::detail;
using namespace meshrt::detail::storewire;

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
