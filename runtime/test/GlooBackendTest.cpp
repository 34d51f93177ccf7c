//===- GlooBackendTest.cpp - The gloo backend, threads playing the ranks --===//
//
// One process: a StoreServer on an ephemeral port and 2, 3 or 4 threads,
// each a rank with its own StoreClient, createGlooBackend(...) and world,
// all over gloo's TCP transport on this machine. Every collective is checked
// with every dtype (and reduction) against values computed here, chosen so
// that the results are exact in every dtype (small integers), so the
// comparison is bit for bit; the padded variants with several valid counts
// and their padding (the recv buffers start as garbage). Then splits,
// permute, send/recv with tags, and the errors: a plugin that does not load,
// a peer that never arrives, a peer that stalls and one that exits.
//
// GlooBackend.cpp and Store.cpp are compiled into the test (their classes
// are hidden in libmeshrt); the plugin is the one built next to libmeshrt
// (MESHRT_TEST_GLOO_PLUGIN). Skipped when libmeshrt was built without gloo.
//
//===----------------------------------------------------------------------===//

#include "GlooBackend.h"
#include "Store.h"

#include "meshrt/Error.h"
#include "meshrt/Half.h"

#include <gtest/gtest.h>

#if MESHRT_HAVE_GLOO
#include <gloo/context.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace meshrt;
using namespace meshrt::detail;

// Backend.h's out-of-line members live in Context.cpp, which this test does
// not compile (it would bring the whole runtime and MPI start-up along).
BackendComm::~BackendComm() = default;
Backend::~Backend() = default;
void Backend::checkReduction(meshrt_dtype, meshrt_reduce_op) const {}
void Backend::synchronizeStream(void *, const char *Op) {
  throw Error(MESHRT_ERROR_UNSUPPORTED, std::string(Op) + ": no streams");
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point T) {
  return std::chrono::duration<double>(Clock::now() - T).count();
}

/// Shows an error message the test expects, for whoever reads the log.
void show(const std::string &Message) {
  std::printf("  message: %s\n", Message.c_str());
}

/// Sets (or unsets, with null) an environment variable for a scope.
class EnvGuard {
public:
  EnvGuard(const char *Name, const char *Value) : Name(Name) {
    if (const char *Old = std::getenv(Name))
      Saved = Old, Had = true;
    if (Value)
      setenv(Name, Value, 1);
    else
      unsetenv(Name);
  }
  ~EnvGuard() {
    if (Had)
      setenv(Name, Saved.c_str(), 1);
    else
      unsetenv(Name);
  }

private:
  const char *Name;
  std::string Saved;
  bool Had = false;
};

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

const meshrt_dtype AllTypes[] = {MESHRT_F16, MESHRT_BF16, MESHRT_F32,
                                 MESHRT_F64, MESHRT_I8,   MESHRT_I32,
                                 MESHRT_I64, MESHRT_U8};
const meshrt_reduce_op AllOps[] = {MESHRT_SUM, MESHRT_PROD, MESHRT_MIN,
                                   MESHRT_MAX, MESHRT_AVG,  MESHRT_BAND,
                                   MESHRT_BOR, MESHRT_BXOR};
const char *TypeNames[] = {"f16", "bf16", "f32", "f64",
                           "i8",  "i32",  "i64", "u8"};
const char *OpNames[] = {"sum", "prod", "min", "max",
                         "avg", "band", "bor", "bxor"};

size_t bytesOf(meshrt_dtype T) {
  static constexpr size_t Sizes[] = {2, 2, 4, 8, 1, 4, 8, 1};
  return Sizes[T];
}
bool isInteger(meshrt_dtype T) { return T >= MESHRT_I8; }
bool isBitwise(meshrt_reduce_op Op) { return Op >= MESHRT_BAND; }

/// Stores `V` (exact in `T`) as element `I` of `Buf`.
void storeAs(meshrt_dtype T, void *Buf, int64_t I, double V) {
  switch (T) {
  case MESHRT_F16:
    static_cast<uint16_t *>(Buf)[I] = floatToHalf(float(V));
    return;
  case MESHRT_BF16:
    static_cast<uint16_t *>(Buf)[I] = floatToBFloat16(float(V));
    return;
  case MESHRT_F32:
    static_cast<float *>(Buf)[I] = float(V);
    return;
  case MESHRT_F64:
    static_cast<double *>(Buf)[I] = V;
    return;
  case MESHRT_I8:
    static_cast<int8_t *>(Buf)[I] = int8_t(int64_t(V));
    return;
  case MESHRT_I32:
    static_cast<int32_t *>(Buf)[I] = int32_t(int64_t(V));
    return;
  case MESHRT_I64:
    static_cast<int64_t *>(Buf)[I] = int64_t(V);
    return;
  case MESHRT_U8:
    static_cast<uint8_t *>(Buf)[I] = uint8_t(int64_t(V));
    return;
  }
}

/// Element `I` of `Buf` as a double.
double loadAs(meshrt_dtype T, const void *Buf, int64_t I) {
  switch (T) {
  case MESHRT_F16:
    return halfToFloat(static_cast<const uint16_t *>(Buf)[I]);
  case MESHRT_BF16:
    return bfloat16ToFloat(static_cast<const uint16_t *>(Buf)[I]);
  case MESHRT_F32:
    return static_cast<const float *>(Buf)[I];
  case MESHRT_F64:
    return static_cast<const double *>(Buf)[I];
  case MESHRT_I8:
    return static_cast<const int8_t *>(Buf)[I];
  case MESHRT_I32:
    return static_cast<const int32_t *>(Buf)[I];
  case MESHRT_I64:
    return double(static_cast<const int64_t *>(Buf)[I]);
  case MESHRT_U8:
    return static_cast<const uint8_t *>(Buf)[I];
  }
  return 0;
}

/// The input of rank `R` at element `I` for `Op` on `T`: small integers, so
/// that every result is exact in every dtype.
double input(meshrt_reduce_op Op, meshrt_dtype T, int64_t R, int64_t I) {
  const bool Unsigned = T == MESHRT_U8;
  switch (Op) {
  case MESHRT_SUM:
  case MESHRT_AVG:
    return double((R * 3 + I) % 7 - (Unsigned ? 0 : 3));
  case MESHRT_PROD: {
    static const double Signed[] = {1, 2, -1}, NonNeg[] = {1, 2, 1};
    return (Unsigned ? NonNeg : Signed)[(R + I) % 3];
  }
  case MESHRT_MIN:
  case MESHRT_MAX:
    return double((R * 5 + I * 3) % 11 - (Unsigned ? 0 : 5));
  default: // Bitwise, integers only.
    return double((R * 37 + I * 11 + (R == I % 4 ? 64 : 0)) % 128);
  }
}

/// Reduces `N` ranks' inputs at element `I` as the backend must.
double expected(meshrt_reduce_op Op, meshrt_dtype T, int64_t N,
                const std::function<double(int64_t R)> &In) {
  if (isBitwise(Op)) {
    int64_t Acc = int64_t(In(0));
    for (int64_t R = 1; R < N; ++R) {
      int64_t V = int64_t(In(R));
      Acc = Op == MESHRT_BAND  ? (Acc & V)
            : Op == MESHRT_BOR ? (Acc | V)
                               : (Acc ^ V);
    }
    return double(Acc);
  }
  double Acc = In(0);
  for (int64_t R = 1; R < N; ++R) {
    double V = In(R);
    switch (Op) {
    case MESHRT_PROD:
      Acc *= V;
      break;
    case MESHRT_MIN:
      Acc = std::min(Acc, V);
      break;
    case MESHRT_MAX:
      Acc = std::max(Acc, V);
      break;
    default:
      Acc += V;
    }
  }
  if (Op != MESHRT_AVG)
    return Acc;
  // The division, as the backend does it on a sum that is exact.
  switch (T) {
  case MESHRT_F16:
    return halfToFloat(floatToHalf(float(Acc) / float(N)));
  case MESHRT_BF16:
    return bfloat16ToFloat(floatToBFloat16(float(Acc) / float(N)));
  case MESHRT_F32:
    return double(float(Acc) / float(N));
  case MESHRT_F64:
    return Acc / double(N);
  default:
    return double(int64_t(Acc) / N); // Truncating toward zero.
  }
}

/// A buffer of `Count` elements of `T`, filled with garbage bytes.
std::vector<unsigned char> buffer(meshrt_dtype T, int64_t Count,
                                  unsigned char Fill = 0xA5) {
  return std::vector<unsigned char>(size_t(Count) * bytesOf(T), Fill);
}

/// Checks `Got` against `Want` byte for byte, naming the first mismatch.
void expectSame(const std::vector<unsigned char> &Got,
                const std::vector<unsigned char> &Want, meshrt_dtype T,
                const std::string &What) {
  ASSERT_EQ(Got.size(), Want.size()) << What;
  if (Got == Want)
    return;
  size_t E = bytesOf(T);
  for (size_t I = 0; I * E < Got.size(); ++I)
    if (std::memcmp(&Got[I * E], &Want[I * E], E) != 0) {
      ADD_FAILURE() << What << ": element " << I << " is "
                    << loadAs(T, Got.data(), int64_t(I)) << ", expected "
                    << loadAs(T, Want.data(), int64_t(I));
      return;
    }
}

std::string what(const char *Op, meshrt_dtype T, int64_t R, int64_t N,
                 const std::string &More = "") {
  return std::string(Op) + " " + TypeNames[T] + " rank " + std::to_string(R) +
         " of " + std::to_string(N) + (More.empty() ? "" : " " + More);
}

/// The data elements of member `J`'s block of `Count` when the first `Valid`
/// elements of the blocks hold data.
int64_t validIn(int64_t J, int64_t Count, int64_t Valid) {
  return BackendComm::validIn(J, Count, Valid);
}

/// Valid counts worth trying for blocks of `Count` on `N` members, in
/// [Low, N * Count).
std::vector<int64_t> validCounts(int64_t N, int64_t Count, int64_t Low) {
  std::vector<int64_t> V;
  for (int64_t X : {Low, int64_t(1), Count - 1, Count, Count + 1,
                    (N - 1) * Count, N * Count - 1, (N * Count) / 2})
    if (X >= Low && X < N * Count &&
        std::find(V.begin(), V.end(), X) == V.end())
      V.push_back(X);
  return V;
}

//===----------------------------------------------------------------------===//
// Ranks as threads
//===----------------------------------------------------------------------===//

/// What each rank's thread works with.
struct RankEnv {
  int64_t R = 0, N = 1;
  StoreClient *Client = nullptr;
  Backend *B = nullptr;
  BackendComm *World = nullptr;
};

class GlooTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!glooBackendBuilt())
      GTEST_SKIP() << "libmeshrt was built without the gloo plugin";
    Server = StoreServer::start("127.0.0.1", 0);
  }

  /// A key prefix no other run of this process used.
  static std::string freshPrefix() {
    static std::atomic<int> Next{0};
    return "gloo-test/" + std::to_string(Next++);
  }

  /// Runs `Body` on `N` threads, rank R on thread R, each with its own
  /// client, backend and world (timeout `Timeout`). A barrier ends each
  /// rank's part, so that no one closes its connections under a peer that
  /// is still at work. Exceptions fail the test.
  void runRanks(int64_t N, const std::function<void(RankEnv &)> &Body,
                double Timeout = 20) {
    std::string Prefix = freshPrefix();
    std::vector<std::thread> Threads;
    for (int64_t R = 0; R < N; ++R)
      Threads.emplace_back([&, R] {
        try {
          StoreClient Client("127.0.0.1", Server->port(), 20);
          std::unique_ptr<Backend> B =
              createGlooBackend(Client, Prefix, R, N, Timeout);
          EXPECT_STREQ(B->name(), "gloo");
          EXPECT_EQ(int(B->kind()), 3); // MESHRT_BACKEND_GLOO
          std::unique_ptr<BackendComm> World = B->createWorld();
          EXPECT_EQ(World->rank(), R);
          EXPECT_EQ(World->size(), N);
          RankEnv E{R, N, &Client, B.get(), World.get()};
          Body(E);
          World->barrier();
        } catch (const Error &E) {
          ADD_FAILURE() << "rank " << R << " of " << N << ": " << E.what();
        }
      });
    for (std::thread &T : Threads)
      T.join();
  }

  std::unique_ptr<StoreServer> Server;
};

/// The tests that run on 2, 3 and 4 ranks.
class GlooRanks : public GlooTest,
                  public ::testing::WithParamInterface<int64_t> {};

INSTANTIATE_TEST_SUITE_P(Sizes, GlooRanks, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int64_t> &I) {
                           return "n" + std::to_string(I.param);
                         });

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

TEST_P(GlooRanks, AllReduceEveryDtypeAndReduction) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (meshrt_reduce_op Op : AllOps) {
        if (isBitwise(Op) && !isInteger(T))
          continue;
        for (int64_t Count : {1, 3, 1000})
          for (bool InPlace : {false, true}) {
            auto Send = buffer(T, Count), Recv = buffer(T, Count, 0x5A);
            auto Want = buffer(T, Count);
            for (int64_t I = 0; I < Count; ++I) {
              storeAs(T, Send.data(), I, input(Op, T, E.R, I));
              storeAs(T, Want.data(), I, expected(Op, T, E.N, [&](int64_t R) {
                        return input(Op, T, R, I);
                      }));
            }
            if (InPlace) {
              E.World->allReduce(Send.data(), Send.data(), Count, T, Op);
              Recv = Send;
            } else {
              E.World->allReduce(Send.data(), Recv.data(), Count, T, Op);
            }
            expectSame(Recv, Want, T,
                       what("all_reduce", T, E.R, E.N,
                            std::string(OpNames[Op]) + " count " +
                                std::to_string(Count) +
                                (InPlace ? " in place" : "")));
          }
      }
  });
}

TEST_P(GlooRanks, AllReduceLongerThanGlooSegments) {
  // 1.5 MiB of f32 per rank: more than gloo's ring segment (1 MiB).
  runRanks(GetParam(), [](RankEnv &E) {
    const int64_t Count = (int64_t(3) << 17) + 5;
    std::vector<float> Send(static_cast<size_t>(Count)),
        Recv(static_cast<size_t>(Count));
    for (int64_t I = 0; I < Count; ++I)
      Send[size_t(I)] = float((E.R + 1) * (I % 1000));
    E.World->allReduce(Send.data(), Recv.data(), Count, MESHRT_F32, MESHRT_SUM);
    const float Ranks = float(E.N * (E.N + 1) / 2);
    for (int64_t I = 0; I < Count; ++I)
      if (Recv[size_t(I)] != Ranks * float(I % 1000)) {
        ADD_FAILURE() << "element " << I << " is " << Recv[size_t(I)];
        break;
      }
  });
}

TEST_P(GlooRanks, AllGatherEveryDtype) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (int64_t Count : {1, 7, 1000}) {
        auto Send = buffer(T, Count), Recv = buffer(T, Count * E.N);
        auto Want = buffer(T, Count * E.N);
        for (int64_t I = 0; I < Count; ++I)
          storeAs(T, Send.data(), I, input(MESHRT_MIN, T, E.R, I));
        for (int64_t J = 0; J < E.N; ++J)
          for (int64_t I = 0; I < Count; ++I)
            storeAs(T, Want.data(), J * Count + I, input(MESHRT_MIN, T, J, I));
        E.World->allGather(Send.data(), Recv.data(), Count, T);
        expectSame(
            Recv, Want, T,
            what("all_gather", T, E.R, E.N, "count " + std::to_string(Count)));
      }
  });
}

/// Checks reduce_scatter (Valid < 0) or reduce_scatter_padded of `T` and
/// `Op` with blocks of `Count`.
void checkReduceScatter(RankEnv &E, meshrt_dtype T, meshrt_reduce_op Op,
                        int64_t Count, int64_t Valid) {
  auto Send = buffer(T, Count * E.N), Recv = buffer(T, Count, 0x5A);
  auto Want = buffer(T, Count, 0);
  for (int64_t I = 0; I < Count * E.N; ++I)
    storeAs(T, Send.data(), I, input(Op, T, E.R, I));
  int64_t Mine = Valid < 0 ? Count : validIn(E.R, Count, Valid);
  for (int64_t I = 0; I < Mine; ++I) {
    int64_t At = E.R * Count + I;
    storeAs(T, Want.data(), I, expected(Op, T, E.N, [&](int64_t R) {
              return input(Op, T, R, At);
            }));
  }
  if (Valid < 0)
    E.World->reduceScatter(Send.data(), Recv.data(), Count, T, Op);
  else
    E.World->reduceScatterPadded(Send.data(), Recv.data(), Count, Valid, T, Op);
  expectSame(Recv, Want, T,
             what(Valid < 0 ? "reduce_scatter" : "reduce_scatter_padded", T,
                  E.R, E.N,
                  std::string(OpNames[Op]) + " count " + std::to_string(Count) +
                      " valid " + std::to_string(Valid)));
}

TEST_P(GlooRanks, ReduceScatterEveryDtypeAndReduction) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (meshrt_reduce_op Op : AllOps) {
        if (isBitwise(Op) && !isInteger(T))
          continue;
        for (int64_t Count : {1, 5, 300})
          checkReduceScatter(E, T, Op, Count, -1);
      }
  });
}

TEST_P(GlooRanks, ReduceScatterPadded) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (meshrt_reduce_op Op : AllOps) {
        if (isBitwise(Op) && !isInteger(T))
          continue;
        for (int64_t Count : {1, 5})
          for (int64_t Valid : validCounts(E.N, Count, 1))
            checkReduceScatter(E, T, Op, Count, Valid);
      }
  });
}

TEST_P(GlooRanks, ReduceScatterInRounds) {
  // A scratch of 64 bytes: blocks of 100 f64 take many rounds of the
  // alltoallv (the same path as blocks of more than 64 MiB by default).
  EnvGuard Small("MESHRT_GLOO_SCRATCH_BYTES", "64");
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_reduce_op Op : {MESHRT_SUM, MESHRT_MAX, MESHRT_AVG})
      for (meshrt_dtype T : {MESHRT_F64, MESHRT_F16, MESHRT_U8}) {
        checkReduceScatter(E, T, Op, 100, -1);
        checkReduceScatter(E, T, Op, 100, 100 * E.N - 33);
        checkReduceScatter(E, T, Op, 100, 57);
      }
  });
}

TEST_P(GlooRanks, AllGatherPadded) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (int64_t Count : {1, 5, 64})
        for (int64_t Valid : validCounts(E.N, Count, 1)) {
          auto Send = buffer(T, Count), Recv = buffer(T, Count * E.N);
          auto Want = buffer(T, Count * E.N, 0);
          for (int64_t I = 0; I < validIn(E.R, Count, Valid); ++I)
            storeAs(T, Send.data(), I, input(MESHRT_MAX, T, E.R, I));
          for (int64_t J = 0; J < E.N; ++J)
            for (int64_t I = 0; I < validIn(J, Count, Valid); ++I)
              storeAs(T, Want.data(), J * Count + I,
                      input(MESHRT_MAX, T, J, I));
          E.World->allGatherPadded(Send.data(), Recv.data(), Count, Valid, T);
          expectSame(Recv, Want, T,
                     what("all_gather_padded", T, E.R, E.N,
                          "count " + std::to_string(Count) + " valid " +
                              std::to_string(Valid)));
        }
  });
}

/// The element rank `From` sends to rank `To` at `I` of its block.
double exchanged(meshrt_dtype T, int64_t From, int64_t To, int64_t I) {
  return input(MESHRT_MIN, T, From * 7 + To, I);
}

TEST_P(GlooRanks, AllToAllEveryDtype) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (int64_t Count : {1, 3, 500}) {
        auto Send = buffer(T, Count * E.N), Recv = buffer(T, Count * E.N);
        auto Want = buffer(T, Count * E.N);
        for (int64_t J = 0; J < E.N; ++J)
          for (int64_t I = 0; I < Count; ++I) {
            storeAs(T, Send.data(), J * Count + I, exchanged(T, E.R, J, I));
            storeAs(T, Want.data(), J * Count + I, exchanged(T, J, E.R, I));
          }
        E.World->allToAll(Send.data(), Recv.data(), Count, T);
        expectSame(
            Recv, Want, T,
            what("all_to_all", T, E.R, E.N, "count " + std::to_string(Count)));
      }
  });
}

TEST_P(GlooRanks, AllToAllPaddedBothSides) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (meshrt_dtype T : AllTypes)
      for (int32_t Side : {MESHRT_PADDED_SPLIT, MESHRT_PADDED_CONCAT})
        for (int64_t Count : {1, 4, 9})
          for (int64_t Valid : validCounts(E.N, Count, 0)) {
            // SPLIT: block j of the send holds member j's share
            // (validIn(j) elements); CONCAT: every block holds this
            // member's own share (validIn(rank) elements).
            const bool Split = Side == MESHRT_PADDED_SPLIT;
            auto Send = buffer(T, Count * E.N), Recv = buffer(T, Count * E.N);
            auto Want = buffer(T, Count * E.N, 0);
            int64_t Mine = validIn(E.R, Count, Valid);
            for (int64_t J = 0; J < E.N; ++J) {
              int64_t Out = Split ? validIn(J, Count, Valid) : Mine;
              for (int64_t I = 0; I < Out; ++I)
                storeAs(T, Send.data(), J * Count + I, exchanged(T, E.R, J, I));
              int64_t In = Split ? Mine : validIn(J, Count, Valid);
              for (int64_t I = 0; I < In; ++I)
                storeAs(T, Want.data(), J * Count + I, exchanged(T, J, E.R, I));
            }
            E.World->allToAllPadded(Send.data(), Recv.data(), Count, Valid, T,
                                    Side);
            expectSame(Recv, Want, T,
                       what("all_to_all_padded", T, E.R, E.N,
                            std::string(Split ? "split" : "concat") +
                                " count " + std::to_string(Count) + " valid " +
                                std::to_string(Valid)));
          }
  });
}

TEST_P(GlooRanks, BroadcastFromNonZeroRoots) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (int64_t Root : {E.N - 1, int64_t(1), int64_t(0)})
      for (meshrt_dtype T : AllTypes)
        for (int64_t Count : {1, 3000}) {
          auto Buf = buffer(T, Count), Want = buffer(T, Count);
          for (int64_t I = 0; I < Count; ++I) {
            storeAs(T, Want.data(), I, input(MESHRT_MAX, T, Root + 11, I));
            if (E.R == Root)
              storeAs(T, Buf.data(), I, input(MESHRT_MAX, T, Root + 11, I));
          }
          E.World->broadcast(Buf.data(), Count, T, Root);
          expectSame(Buf, Want, T,
                     what("broadcast", T, E.R, E.N,
                          "root " + std::to_string(Root) + " count " +
                              std::to_string(Count)));
        }
  });
}

TEST_P(GlooRanks, PermuteWrapShiftZeroFillAndSelf) {
  runRanks(GetParam(), [](RankEnv &E) {
    const meshrt_dtype T = MESHRT_I32;
    const int64_t Count = 257;
    auto Fill = [&](std::vector<unsigned char> &B, int64_t From) {
      for (int64_t I = 0; I < Count; ++I)
        storeAs(T, B.data(), I, double(From * 1000 + I));
    };
    auto Send = buffer(T, Count);
    Fill(Send, E.R);
    // Wrapping shifts by 1 and by N - 1.
    for (int64_t K : {int64_t(1), E.N - 1}) {
      int64_t Dest = (E.R + K) % E.N, Source = (E.R - K + E.N) % E.N;
      auto Recv = buffer(T, Count), Want = buffer(T, Count);
      Fill(Want, Source);
      E.World->sendRecv(Send.data(), Dest, Recv.data(), Source, Count, T,
                        false);
      expectSame(Recv, Want, T, what("permute", T, E.R, E.N, "wrap"));
    }
    // A shift by 1 without wrapping: rank 0 receives nothing and the last
    // rank sends nothing; rank 0's recv is zeroed with ZeroFill and left
    // as it was without.
    for (bool ZeroFill : {true, false}) {
      int64_t Dest = E.R + 1 < E.N ? E.R + 1 : -1;
      int64_t Source = E.R > 0 ? E.R - 1 : -1;
      auto Recv = buffer(T, Count, 0x77);
      auto Want =
          Source < 0 ? buffer(T, Count, ZeroFill ? 0 : 0x77) : buffer(T, Count);
      if (Source >= 0)
        Fill(Want, Source);
      E.World->sendRecv(Send.data(), Dest, Recv.data(), Source, Count, T,
                        ZeroFill);
      expectSame(
          Recv, Want, T,
          what("permute", T, E.R, E.N, ZeroFill ? "shift zero-fill" : "shift"));
    }
    // To and from itself: a copy.
    auto Recv = buffer(T, Count);
    E.World->sendRecv(Send.data(), E.R, Recv.data(), E.R, Count, T, false);
    expectSame(Recv, Send, T, what("permute", T, E.R, E.N, "self"));
  });
}

TEST_P(GlooRanks, SendRecvWithTags) {
  runRanks(GetParam(), [](RankEnv &E) {
    // Pairs (0, 1), (2, 3): the even rank sends two messages (tags 3 and
    // 9, two sizes) and a third with tag 3 again, then receives one back;
    // messages of one tag arrive in order. A lone last rank sits out.
    int64_t Peer = E.R % 2 == 0 ? E.R + 1 : E.R - 1;
    if (Peer >= E.N)
      return;
    std::vector<int32_t> A(10), B(3), C(10), Back(5);
    for (int I = 0; I < 10; ++I)
      A[size_t(I)] = int32_t(E.R * 100 + I), C[size_t(I)] = -A[size_t(I)];
    for (int I = 0; I < 3; ++I)
      B[size_t(I)] = int32_t(7000 + I);
    if (E.R % 2 == 0) {
      E.World->send(A.data(), 10, MESHRT_I32, Peer, 3);
      E.World->send(B.data(), 3, MESHRT_I32, Peer, 9);
      E.World->send(C.data(), 10, MESHRT_I32, Peer, 3);
      E.World->recv(Back.data(), 5, MESHRT_I32, Peer, 32767);
      for (int I = 0; I < 5; ++I)
        EXPECT_EQ(Back[size_t(I)], Peer * 10 + I);
    } else {
      std::vector<int32_t> GotA(10), GotB(3), GotC(10);
      E.World->recv(GotA.data(), 10, MESHRT_I32, Peer, 3);
      E.World->recv(GotB.data(), 3, MESHRT_I32, Peer, 9);
      E.World->recv(GotC.data(), 10, MESHRT_I32, Peer, 3);
      for (int I = 0; I < 10; ++I) {
        EXPECT_EQ(GotA[size_t(I)], Peer * 100 + I);
        EXPECT_EQ(GotC[size_t(I)], -(Peer * 100 + I));
      }
      for (int I = 0; I < 3; ++I)
        EXPECT_EQ(GotB[size_t(I)], 7000 + I);
      for (int I = 0; I < 5; ++I)
        Back[size_t(I)] = int32_t(E.R * 10 + I);
      E.World->send(Back.data(), 5, MESHRT_I32, Peer, 32767);
    }
  });
}

TEST_P(GlooRanks, BarrierAndNativeHandle) {
  runRanks(GetParam(), [](RankEnv &E) {
    for (int I = 0; I < 5; ++I)
      E.World->barrier();
    void *Handle = E.World->nativeHandle();
    ASSERT_NE(Handle, nullptr);
#if MESHRT_HAVE_GLOO
    // A gloo::Context* (reading its fields needs no libgloo).
    auto *G = static_cast<gloo::Context *>(Handle);
    EXPECT_EQ(G->rank, E.R);
    EXPECT_EQ(G->size, E.N);
#endif
  });
}

TEST_F(GlooTest, NoTimeout) {
  // A timeout of 0 means none (gloo gets a very long one).
  runRanks(
      2,
      [](RankEnv &E) {
        int32_t X = int32_t(E.R + 1), Y = 0;
        E.World->allReduce(&X, &Y, 1, MESHRT_I32, MESHRT_SUM);
        EXPECT_EQ(Y, 3);
      },
      0);
}

//===----------------------------------------------------------------------===//
// Splits
//===----------------------------------------------------------------------===//

/// Sum over a group of (world rank + 1), by all_reduce, checked.
void checkGroupSum(BackendComm &G, const std::vector<int64_t> &Members,
                   int64_t WorldRank) {
  int64_t Mine = WorldRank + 1, Sum = 0, Want = 0;
  for (int64_t M : Members)
    Want += M + 1;
  G.allReduce(&Mine, &Sum, 1, MESHRT_I64, MESHRT_SUM);
  EXPECT_EQ(Sum, Want) << "group of world rank " << WorldRank;
}

TEST_P(GlooRanks, SplitsIntoGroupsWithKeysAndNegativeColor) {
  runRanks(GetParam(), [](RankEnv &E) {
    // Two groups by parity, ordered by descending world rank (key -rank).
    std::unique_ptr<BackendComm> Parity =
        E.B->split(*E.World, E.R % 2, -E.R, "parity");
    ASSERT_NE(Parity, nullptr);
    std::vector<int64_t> Members; // In group order.
    for (int64_t W = E.N - 1; W >= 0; --W)
      if (W % 2 == E.R % 2)
        Members.push_back(W);
    EXPECT_EQ(Parity->size(), int64_t(Members.size()));
    EXPECT_EQ(Parity->rank(),
              std::find(Members.begin(), Members.end(), E.R) - Members.begin());
    checkGroupSum(*Parity, Members, E.R);
    // Broadcast from group rank 0 (the highest world rank of the group).
    int64_t V = E.R * 10;
    Parity->broadcast(&V, 1, MESHRT_I64, 0);
    EXPECT_EQ(V, Members[0] * 10);

    // The last rank takes part with a negative color and gets no group.
    int64_t Color = E.R == E.N - 1 ? -1 : 5;
    std::unique_ptr<BackendComm> AllButLast =
        E.B->split(*E.World, Color, E.R, "all but the last");
    if (Color < 0) {
      EXPECT_EQ(AllButLast, nullptr);
    } else {
      ASSERT_NE(AllButLast, nullptr);
      EXPECT_EQ(AllButLast->size(), E.N - 1);
      EXPECT_EQ(AllButLast->rank(), E.R);
      std::vector<int64_t> Rest;
      for (int64_t W = 0; W + 1 < E.N; ++W)
        Rest.push_back(W);
      checkGroupSum(*AllButLast, Rest, E.R);
    }

    // Everyone alone: groups of one.
    std::unique_ptr<BackendComm> Alone = E.B->split(*E.World, E.R, 0, "alone");
    ASSERT_NE(Alone, nullptr);
    EXPECT_EQ(Alone->size(), 1);
    checkGroupSum(*Alone, {E.R}, E.R);

    // The world still works, and the groups keep working after it.
    std::vector<int64_t> Everyone;
    for (int64_t W = 0; W < E.N; ++W)
      Everyone.push_back(W);
    checkGroupSum(*E.World, Everyone, E.R);
    checkGroupSum(*Parity, Members, E.R);
    Parity->barrier();
    if (AllButLast)
      AllButLast->barrier();
  });
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(GlooTest, MissingPluginIsAClearError) {
  EnvGuard Env("MESHRT_GLOO_PLUGIN", "/nonexistent/libmeshrt_gloo.so");
  std::string Why;
  EXPECT_FALSE(glooAvailable(Why));
  show(Why);
  EXPECT_NE(Why.find("/nonexistent/libmeshrt_gloo.so"), std::string::npos)
      << Why;
  EXPECT_NE(Why.find("No such file"), std::string::npos) << Why;
  EXPECT_NE(Why.find("libgloo0"), std::string::npos) << Why;
  StoreClient Client("127.0.0.1", Server->port(), 5);
  try {
    createGlooBackend(Client, freshPrefix(), 0, 1, 5);
    ADD_FAILURE() << "no error without the plugin";
  } catch (const Error &E) {
    EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND);
    EXPECT_EQ(std::string(E.what()), Why);
  }
}

TEST_F(GlooTest, LibraryWithoutTheEntryIsNotAPlugin) {
  EnvGuard Env("MESHRT_GLOO_PLUGIN", "libm.so.6");
  std::string Why;
  EXPECT_FALSE(glooAvailable(Why));
  show(Why);
  EXPECT_NE(Why.find("libm.so.6"), std::string::npos) << Why;
  EXPECT_NE(Why.find("no symbol meshrt_gloo_plugin_v1"), std::string::npos)
      << Why;
}

TEST_F(GlooTest, FindsThePluginByItsNameOnTheLibraryPath) {
  // Without MESHRT_GLOO_PLUGIN, and not next to this executable: the loader
  // finds it where LD_LIBRARY_PATH says (ctest sets it to the library dir).
#ifndef MESHRT_TEST_GLOO_PLUGIN
  GTEST_SKIP() << "no plugin was built";
#else
  const char *Path = std::getenv("LD_LIBRARY_PATH");
  std::string Plugin = MESHRT_TEST_GLOO_PLUGIN;
  std::string Dir = Plugin.substr(0, Plugin.rfind('/'));
  if (!Path || std::string(Path).find(Dir) == std::string::npos)
    GTEST_SKIP() << "LD_LIBRARY_PATH does not name " << Dir;
  EnvGuard Env("MESHRT_GLOO_PLUGIN", nullptr);
  std::string Why;
  EXPECT_TRUE(glooAvailable(Why)) << Why;
#endif
}

TEST_F(GlooTest, PeerThatNeverArrivesIsAnErrorNamingIt) {
  // A world of 3 where rank 2 never comes: ranks 0 and 1 fail within
  // their timeout, naming the missing rank and the key prefix.
  std::string Prefix = freshPrefix();
  std::vector<std::thread> Threads;
  Clock::time_point Start = Clock::now();
  for (int64_t R = 0; R < 2; ++R)
    Threads.emplace_back([&, R] {
      StoreClient Client("127.0.0.1", Server->port(), 10);
      std::unique_ptr<Backend> B = createGlooBackend(Client, Prefix, R, 3, 1);
      try {
        B->createWorld();
        ADD_FAILURE() << "rank " << R << ": no error without rank 2";
      } catch (const Error &E) {
        std::string M = E.what();
        show(M);
        EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND) << M;
        EXPECT_NE(
            M.find("rendezvous of world (rank " + std::to_string(R) + " of 3"),
            std::string::npos)
            << M;
        EXPECT_NE(M.find("rank 2 of 3 did not arrive"), std::string::npos) << M;
        EXPECT_NE(M.find(Prefix + "/w/rank_2"), std::string::npos) << M;
      }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_LT(secondsSince(Start), 15);
}

TEST_F(GlooTest, StalledPeerIsAnErrorNotAHang) {
  // Rank 1 never calls the all_reduce: rank 0 fails after its 1 s timeout
  // with the communicator and gloo's reason; the world is unusable after.
  std::atomic<bool> Done{false};
  std::string Prefix = freshPrefix();
  std::vector<std::thread> Threads;
  for (int64_t R = 0; R < 2; ++R)
    Threads.emplace_back([&, R] {
      StoreClient Client("127.0.0.1", Server->port(), 10);
      std::unique_ptr<Backend> B = createGlooBackend(Client, Prefix, R, 2, 1);
      std::unique_ptr<BackendComm> World = B->createWorld();
      if (R == 1) {
        while (!Done)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return;
      }
      float X = 1, Y = 0;
      Clock::time_point Start = Clock::now();
      try {
        World->allReduce(&X, &Y, 1, MESHRT_F32, MESHRT_SUM);
        ADD_FAILURE() << "no error while rank 1 stalls";
      } catch (const Error &E) {
        std::string M = E.what();
        show(M);
        EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND) << M;
        EXPECT_NE(M.find("gloo all_reduce on world (rank 0 of 2) failed"),
                  std::string::npos)
            << M;
        EXPECT_NE(M.find("Timed out"), std::string::npos) << M;
      }
      EXPECT_LT(secondsSince(Start), 10);
      try {
        World->barrier();
        ADD_FAILURE() << "the world still works after a timeout";
      } catch (const Error &E) {
        show(E.what());
        EXPECT_NE(std::string(E.what()).find("unusable after an earlier"),
                  std::string::npos)
            << E.what();
      }
      Done = true;
    });
  for (std::thread &T : Threads)
    T.join();
}

TEST_F(GlooTest, PeerThatExitsIsAnErrorNotAHang) {
  // Rank 1 closes its world (as a process that exits would) while rank 0
  // goes on: rank 0's next collective fails at once, naming the group.
  std::atomic<bool> Gone{false};
  std::string Prefix = freshPrefix();
  std::vector<std::thread> Threads;
  for (int64_t R = 0; R < 2; ++R)
    Threads.emplace_back([&, R] {
      StoreClient Client("127.0.0.1", Server->port(), 10);
      std::unique_ptr<Backend> B = createGlooBackend(Client, Prefix, R, 2, 30);
      std::unique_ptr<BackendComm> World = B->createWorld();
      std::unique_ptr<BackendComm> Group =
          B->split(*World, 0, R, "mesh 'm' axes [x]");
      World->barrier();
      if (R == 1) {
        Group.reset();
        World.reset();
        Gone = true;
        return;
      }
      while (!Gone)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::vector<double> X(1000, 1.0), Y(1000);
      Clock::time_point Start = Clock::now();
      try {
        Group->allReduce(X.data(), Y.data(), 1000, MESHRT_F64, MESHRT_SUM);
        ADD_FAILURE() << "no error after rank 1 left";
      } catch (const Error &E) {
        std::string M = E.what();
        show(M);
        EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND) << M;
        EXPECT_NE(M.find("gloo all_reduce on mesh 'm' axes [x] (rank 0 of 2)"),
                  std::string::npos)
            << M;
      }
      EXPECT_LT(secondsSince(Start), 10);
    });
  for (std::thread &T : Threads)
    T.join();
}

TEST_F(GlooTest, MismatchedCountsAreAnErrorNotACrash) {
  // gloo's transport would end the process on a message longer than the
  // receive (on its event-loop thread): the backend's tags and slots keep
  // calls of different shapes apart, so both ranks time out instead.
  std::string Prefix = freshPrefix();
  std::vector<std::thread> Threads;
  for (int64_t R = 0; R < 2; ++R)
    Threads.emplace_back([&, R] {
      StoreClient Client("127.0.0.1", Server->port(), 10);
      std::unique_ptr<Backend> B = createGlooBackend(Client, Prefix, R, 2, 1);
      std::unique_ptr<BackendComm> World = B->createWorld();
      std::unique_ptr<BackendComm> Group = B->split(*World, 0, R, "pair");
      std::vector<int32_t> X(20, 1), Y(20);
      try {
        // 10 elements against 20.
        Group->allReduce(X.data(), Y.data(), 10 * (R + 1), MESHRT_I32,
                         MESHRT_SUM);
        ADD_FAILURE() << "rank " << R << ": mismatched all_reduce ran";
      } catch (const Error &E) {
        EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND) << E.what();
      }
      try {
        if (R == 0)
          World->send(X.data(), 10, MESHRT_I32, 1, 4);
        else
          World->recv(Y.data(), 20, MESHRT_I32, 0, 4);
        ADD_FAILURE() << "rank " << R << ": mismatched send/recv ran";
      } catch (const Error &E) {
        show(E.what());
        EXPECT_EQ(E.status(), MESHRT_ERROR_BACKEND) << E.what();
      }
    });
  for (std::thread &T : Threads)
    T.join();
}

TEST_F(GlooTest, StreamOrderedCallsAreUnsupported) {
  runRanks(1, [](RankEnv &E) {
    float X = 1, Y = 0;
    E.World->beginStreamCalls(nullptr);
    try {
      E.World->allReduce(&X, &Y, 1, MESHRT_F32, MESHRT_SUM);
      ADD_FAILURE() << "a stream-ordered call ran on gloo";
    } catch (const Error &Err) {
      show(Err.what());
      EXPECT_EQ(Err.status(), MESHRT_ERROR_UNSUPPORTED) << Err.what();
    }
    E.World->endStreamCalls();
    E.World->allReduce(&X, &Y, 1, MESHRT_F32, MESHRT_SUM);
    EXPECT_EQ(Y, 1);
  });
}

TEST_F(GlooTest, ArgumentsOutOfRange) {
  StoreClient Client("127.0.0.1", Server->port(), 5);
  for (auto [R, N] : {std::pair<int64_t, int64_t>{2, 2}, {-1, 2}, {0, 0}}) {
    try {
      createGlooBackend(Client, freshPrefix(), R, N, 5);
      ADD_FAILURE() << "rank " << R << " of " << N << " accepted";
    } catch (const Error &E) {
      EXPECT_EQ(E.status(), MESHRT_ERROR_INVALID_ARGUMENT) << E.what();
    }
  }
}

} // namespace

int main(int Argc, char **Argv) {
  ::testing::InitGoogleTest(&Argc, Argv);
#ifdef MESHRT_TEST_GLOO_PLUGIN
  // The plugin built with this tree, unless the caller names another.
  setenv("MESHRT_GLOO_PLUGIN", MESHRT_TEST_GLOO_PLUGIN, 0);
#endif
  return RUN_ALL_TESTS();
}
