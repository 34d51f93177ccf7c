//===- CollectivesTest.cpp - Every collective over every axis list --------===//
//
// Runs under mpirun with 1, 2, 4 or 8 ranks (and on the NCCL backend with
// device buffers). For each mesh that fits the world - (8), (2,4), (2,2,2)
// and (4,?) at 8 ranks - and each ordered axis list, gets the communicator
// through the C ABI and runs all_reduce, all_gather, reduce_scatter,
// all_to_all, broadcast, permute and barrier over all dtypes and reductions.
// Expected values are computed on every rank from BruteMesh (its own group
// membership and order) and compared bit for bit.
//
//===----------------------------------------------------------------------===//

#include "BruteForce.h"
#include "TestBuffers.h"

#include "meshrt/Half.h"
#include "meshrt/MeshLayout.h"
#include "meshrt/meshrt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace meshrt;
using meshrt::test::BruteMesh;
using meshrt::test::Buffer;
using meshrt::test::orderedAxisLists;

namespace {

constexpr meshrt_dtype AllDTypes[] = {MESHRT_F16, MESHRT_BF16, MESHRT_F32,
                                      MESHRT_F64, MESHRT_I8,   MESHRT_I32,
                                      MESHRT_I64, MESHRT_U8};
constexpr meshrt_reduce_op AllOps[] = {MESHRT_SUM, MESHRT_PROD, MESHRT_MIN,
                                       MESHRT_MAX, MESHRT_AVG,  MESHRT_BAND,
                                       MESHRT_BOR, MESHRT_BXOR};
const char *const OpNames[] = {"sum", "prod", "min", "max",
                               "avg", "band", "bor", "bxor"};

bool isInt(meshrt_dtype T) {
  return T == MESHRT_I8 || T == MESHRT_I32 || T == MESHRT_I64 || T == MESHRT_U8;
}
bool isBitwise(meshrt_reduce_op Op) {
  return Op == MESHRT_BAND || Op == MESHRT_BOR || Op == MESHRT_BXOR;
}
bool onNccl() {
  meshrt_backend B;
  meshrt_get_backend(&B);
  return B == MESHRT_BACKEND_NCCL;
}

using meshrt::test::worldRank;
using meshrt::test::worldSize;

//===----------------------------------------------------------------------===//
// Element encoding
//===----------------------------------------------------------------------===//

void putValue(meshrt_dtype T, unsigned char *P, int64_t I, double V) {
  switch (T) {
  case MESHRT_F16: {
    uint16_t B = floatToHalf(float(V));
    std::memcpy(P + 2 * I, &B, 2);
    return;
  }
  case MESHRT_BF16: {
    uint16_t B = floatToBFloat16(float(V));
    std::memcpy(P + 2 * I, &B, 2);
    return;
  }
  case MESHRT_F32: {
    float F = float(V);
    std::memcpy(P + 4 * I, &F, 4);
    return;
  }
  case MESHRT_F64:
    std::memcpy(P + 8 * I, &V, 8);
    return;
  case MESHRT_I8: {
    int8_t X = int8_t(int64_t(V));
    std::memcpy(P + I, &X, 1);
    return;
  }
  case MESHRT_I32: {
    int32_t X = int32_t(int64_t(V));
    std::memcpy(P + 4 * I, &X, 4);
    return;
  }
  case MESHRT_I64: {
    int64_t X = int64_t(V);
    std::memcpy(P + 8 * I, &X, 8);
    return;
  }
  case MESHRT_U8: {
    uint8_t X = uint8_t(int64_t(V));
    std::memcpy(P + I, &X, 1);
    return;
  }
  }
}

double getValue(meshrt_dtype T, const unsigned char *P, int64_t I) {
  switch (T) {
  case MESHRT_F16: {
    uint16_t B;
    std::memcpy(&B, P + 2 * I, 2);
    return halfToFloat(B);
  }
  case MESHRT_BF16: {
    uint16_t B;
    std::memcpy(&B, P + 2 * I, 2);
    return bfloat16ToFloat(B);
  }
  case MESHRT_F32: {
    float F;
    std::memcpy(&F, P + 4 * I, 4);
    return F;
  }
  case MESHRT_F64: {
    double D;
    std::memcpy(&D, P + 8 * I, 8);
    return D;
  }
  case MESHRT_I8: {
    int8_t X;
    std::memcpy(&X, P + I, 1);
    return X;
  }
  case MESHRT_I32: {
    int32_t X;
    std::memcpy(&X, P + 4 * I, 4);
    return X;
  }
  case MESHRT_I64: {
    int64_t X;
    std::memcpy(&X, P + 8 * I, 8);
    return double(X);
  }
  case MESHRT_U8: {
    uint8_t X;
    std::memcpy(&X, P + I, 1);
    return X;
  }
  }
  return 0;
}

std::vector<unsigned char> encode(meshrt_dtype T,
                                  const std::vector<double> &Values) {
  std::vector<unsigned char> Out(Values.size() * size_t(meshrt_dtype_size(T)));
  for (size_t I = 0; I < Values.size(); ++I)
    putValue(T, Out.data(), int64_t(I), Values[I]);
  return Out;
}

/// Compares bit for bit; reports the first difference and how many.
void expectSame(const std::vector<unsigned char> &Got,
                const std::vector<double> &Want, meshrt_dtype T,
                const std::string &What) {
  std::vector<unsigned char> W = encode(T, Want);
  ASSERT_EQ(Got.size(), W.size()) << What;
  int64_t Elem = meshrt_dtype_size(T);
  int64_t Bad = 0, First = -1;
  for (size_t I = 0; I < Want.size(); ++I)
    if (std::memcmp(Got.data() + I * size_t(Elem), W.data() + I * size_t(Elem),
                    size_t(Elem))) {
      if (First < 0)
        First = int64_t(I);
      ++Bad;
    }
  if (Bad)
    ADD_FAILURE() << What << " (" << meshrt_dtype_name(T) << "): " << Bad
                  << " of " << Want.size() << " elements wrong; first at "
                  << First << ": got " << getValue(T, Got.data(), First)
                  << ", want " << Want[size_t(First)];
}

//===----------------------------------------------------------------------===//
// Inputs and independent expectations
//===----------------------------------------------------------------------===//

/// Input element I of world rank R for reduction Op; small integers that
/// every dtype holds exactly, with sums and products that do not overflow.
int64_t inputValue(meshrt_reduce_op Op, meshrt_dtype T, int64_t R, int64_t I) {
  bool Unsigned = T == MESHRT_U8;
  switch (Op) {
  case MESHRT_PROD: {
    int64_t V = ((R + I) % 3 == 0 && !Unsigned) ? -1 : 1;
    return (R + 2 * I) % 5 == 0 ? 2 * V : V;
  }
  case MESHRT_BAND:
  case MESHRT_BOR:
  case MESHRT_BXOR:
    return (R * 37 + I * 11 + 5) & 0x7f;
  default: {
    int64_t V = (R * 7 + I * 3) % 11;
    return Unsigned ? V : V - 5;
  }
  }
}

/// The reduction over `Members` of element I, computed here.
double expectedReduction(meshrt_reduce_op Op, meshrt_dtype T,
                         const std::vector<int64_t> &Members, int64_t I) {
  int64_t Acc = inputValue(Op, T, Members[0], I);
  for (size_t J = 1; J < Members.size(); ++J) {
    int64_t V = inputValue(Op, T, Members[J], I);
    switch (Op) {
    case MESHRT_SUM:
    case MESHRT_AVG:
      Acc += V;
      break;
    case MESHRT_PROD:
      Acc *= V;
      break;
    case MESHRT_MIN:
      Acc = std::min(Acc, V);
      break;
    case MESHRT_MAX:
      Acc = std::max(Acc, V);
      break;
    case MESHRT_BAND:
      Acc &= V;
      break;
    case MESHRT_BOR:
      Acc |= V;
      break;
    case MESHRT_BXOR:
      Acc ^= V;
      break;
    }
  }
  if (Op != MESHRT_AVG)
    return double(Acc);
  int64_t N = int64_t(Members.size());
  return isInt(T) ? double(Acc / N) : double(Acc) / double(N);
}

/// Modulus that keeps data-movement values exact and distinct in `T`.
int64_t valueRange(meshrt_dtype T) {
  switch (T) {
  case MESHRT_I8:
  case MESHRT_U8:
  case MESHRT_BF16:
    return 128;
  case MESHRT_F16:
    return 2048;
  default:
    return int64_t(1) << 30;
  }
}

//===----------------------------------------------------------------------===//
// Meshes and groups under test
//===----------------------------------------------------------------------===//

struct DeclaredMesh {
  std::string Name;
  std::vector<int64_t> Declared, Resolved;
  meshrt_mesh_t Handle = nullptr;
};

/// The meshes that fit this world, declared once (collectively) for all
/// tests of this file.
const std::vector<DeclaredMesh> &meshes() {
  static std::vector<DeclaredMesh> Ms = [] {
    int64_t W = worldSize();
    std::vector<std::vector<int64_t>> Shapes;
    switch (W) {
    case 1:
      Shapes = {{1}, {1, 1}};
      break;
    case 2:
      Shapes = {{2}, {1, 2}, {2, 1}};
      break;
    case 4:
      Shapes = {{4}, {2, 2}, {1, 4}, {-1, 2}};
      break;
    case 8:
      Shapes = {{8}, {2, 4}, {2, 2, 2}, {4, -1}};
      break;
    default:
      Shapes = {{W}, {-1, 1}};
    }
    std::vector<DeclaredMesh> Out;
    for (size_t K = 0; K < Shapes.size(); ++K) {
      DeclaredMesh M;
      M.Name = "coll" + std::to_string(K);
      M.Declared = Shapes[K];
      M.Resolved = MeshLayout::resolveShape(Shapes[K], W);
      std::vector<std::string> Names;
      std::vector<const char *> Ptrs;
      for (size_t A = 0; A < Shapes[K].size(); ++A)
        Names.push_back("a" + std::to_string(A));
      for (auto &N : Names)
        Ptrs.push_back(N.c_str());
      int S = meshrt_mesh_declare(M.Name.c_str(), int64_t(Shapes[K].size()),
                                  Shapes[K].data(), Ptrs.data(), &M.Handle);
      if (S != MESHRT_SUCCESS)
        ADD_FAILURE() << "declare " << M.Name << ": " << meshrt_last_error();
      Out.push_back(M);
    }
    return Out;
  }();
  return Ms;
}

/// One (mesh, ordered axes) with this rank's expected group.
struct GroupCase {
  const DeclaredMesh *M;
  std::vector<int64_t> Axes;
  meshrt_comm_t Comm = nullptr;
  std::vector<int64_t> Members; // From BruteMesh.
  int64_t G = 0, N = 1;         // Expected group rank and size.

  std::string describe() const {
    std::string S = "mesh " + M->Name + " " +
                    MeshLayout::formatShape(M->Resolved) + " axes [";
    for (size_t I = 0; I < Axes.size(); ++I)
      S += (I ? "," : "") + std::to_string(Axes[I]);
    return S + "] on world rank " + std::to_string(worldRank());
  }
};

/// Calls Body for every mesh and ordered axis list.
template <typename F> void forEachGroup(F &&Body) {
  int64_t Me = worldRank();
  for (const DeclaredMesh &M : meshes()) {
    BruteMesh B(M.Resolved);
    for (const auto &Axes : orderedAxisLists(int64_t(M.Resolved.size()))) {
      GroupCase C;
      C.M = &M;
      C.Axes = Axes;
      C.Members = B.members(Me, Axes);
      C.N = int64_t(C.Members.size());
      C.G = B.rankInGroup(Me, Axes);
      SCOPED_TRACE(C.describe());
      int S =
          meshrt_comm_get(M.Handle, int64_t(Axes.size()), Axes.data(), &C.Comm);
      ASSERT_EQ(S, MESHRT_SUCCESS) << meshrt_last_error();
      Body(C);
    }
  }
}

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST(Collectives, CommunicatorsMatchBruteForce) {
  forEachGroup([](const GroupCase &C) {
    int64_t Rank = -1, Size = -1;
    ASSERT_EQ(meshrt_comm_rank(C.Comm, &Rank), MESHRT_SUCCESS);
    ASSERT_EQ(meshrt_comm_size(C.Comm, &Size), MESHRT_SUCCESS);
    EXPECT_EQ(Rank, C.G);
    EXPECT_EQ(Size, C.N);
    for (int64_t J = 0; J < C.N; ++J) {
      int64_t W = -1;
      ASSERT_EQ(meshrt_comm_world_rank(C.Comm, J, &W), MESHRT_SUCCESS);
      EXPECT_EQ(W, C.Members[size_t(J)]) << "member " << J;
    }
    // Asking again returns the same handle.
    meshrt_comm_t Again = nullptr;
    ASSERT_EQ(meshrt_comm_get(C.M->Handle, int64_t(C.Axes.size()),
                              C.Axes.data(), &Again),
              MESHRT_SUCCESS);
    EXPECT_EQ(Again, C.Comm);
    // The rank inside the group is what an all_gather of world ranks says.
    Buffer Send(8), Recv(size_t(8 * C.N));
    int64_t Me = worldRank();
    Send.upload(&Me);
    ASSERT_EQ(meshrt_all_gather(C.Comm, Send.get(), Recv.get(), 1, MESHRT_I64),
              MESHRT_SUCCESS)
        << meshrt_last_error();
    std::vector<double> Want(C.Members.begin(), C.Members.end());
    expectSame(Recv.download(), Want, MESHRT_I64, "world ranks in order");
  });
}

TEST(Collectives, AllReduceEveryDTypeAndOp) {
  bool Nccl = onNccl();
  forEachGroup([&](const GroupCase &C) {
    for (meshrt_dtype T : AllDTypes)
      for (meshrt_reduce_op Op : AllOps) {
        if (isBitwise(Op) && !isInt(T))
          continue; // Covered by UnsupportedPairsFailEverywhere.
        for (int64_t Count : {int64_t(1), int64_t(37)}) {
          std::string What = std::string("all_reduce ") + OpNames[Op] +
                             " count " + std::to_string(Count);
          int64_t E = meshrt_dtype_size(T);
          std::vector<double> In(static_cast<size_t>(Count)),
              Want(static_cast<size_t>(Count));
          for (int64_t I = 0; I < Count; ++I) {
            In[size_t(I)] = double(inputValue(Op, T, worldRank(), I));
            Want[size_t(I)] = expectedReduction(Op, T, C.Members, I);
          }
          Buffer Send(size_t(Count * E)), Recv(size_t(Count * E));
          Send.upload(encode(T, In).data());
          int S =
              meshrt_all_reduce(C.Comm, Send.get(), Recv.get(), Count, T, Op);
          if (Nccl && isBitwise(Op)) {
            EXPECT_EQ(S, MESHRT_ERROR_UNSUPPORTED) << What;
            continue;
          }
          ASSERT_EQ(S, MESHRT_SUCCESS) << What << ": " << meshrt_last_error();
          expectSame(Recv.download(), Want, T, What);
          // In place gives the same answer.
          if (Count == 37) {
            ASSERT_EQ(
                meshrt_all_reduce(C.Comm, Send.get(), Send.get(), Count, T, Op),
                MESHRT_SUCCESS)
                << meshrt_last_error();
            expectSame(Send.download(), Want, T, What + " in place");
          }
        }
      }
  });
}

TEST(Collectives, AllGatherConcatenatesInGroupOrder) {
  forEachGroup([](const GroupCase &C) {
    for (meshrt_dtype T : AllDTypes)
      for (int64_t Count : {int64_t(1), int64_t(5)}) {
        int64_t E = meshrt_dtype_size(T), M = valueRange(T);
        std::vector<double> In(static_cast<size_t>(Count)), Want;
        for (int64_t I = 0; I < Count; ++I)
          In[size_t(I)] = double((worldRank() * 8 + I) % M);
        for (int64_t J = 0; J < C.N; ++J)
          for (int64_t I = 0; I < Count; ++I)
            Want.push_back(double((C.Members[size_t(J)] * 8 + I) % M));
        Buffer Send(size_t(Count * E)), Recv(size_t(Count * E * C.N));
        Send.upload(encode(T, In).data());
        ASSERT_EQ(meshrt_all_gather(C.Comm, Send.get(), Recv.get(), Count, T),
                  MESHRT_SUCCESS)
            << meshrt_last_error();
        expectSame(Recv.download(), Want, T,
                   "all_gather count " + std::to_string(Count));
      }
  });
}

TEST(Collectives, ReduceScatterGivesMyBlock) {
  bool Nccl = onNccl();
  forEachGroup([&](const GroupCase &C) {
    for (meshrt_dtype T : AllDTypes)
      for (meshrt_reduce_op Op : AllOps) {
        if (isBitwise(Op) && (!isInt(T) || Nccl))
          continue;
        for (int64_t Count : {int64_t(1), int64_t(3)}) {
          std::string What = std::string("reduce_scatter ") + OpNames[Op] +
                             " count " + std::to_string(Count);
          int64_t E = meshrt_dtype_size(T);
          std::vector<double> In(static_cast<size_t>(Count * C.N)),
              Want(static_cast<size_t>(Count));
          for (int64_t J = 0; J < Count * C.N; ++J)
            In[size_t(J)] = double(inputValue(Op, T, worldRank(), J));
          for (int64_t I = 0; I < Count; ++I)
            Want[size_t(I)] =
                expectedReduction(Op, T, C.Members, C.G * Count + I);
          Buffer Send(size_t(Count * C.N * E)), Recv(size_t(Count * E));
          Send.upload(encode(T, In).data());
          ASSERT_EQ(meshrt_reduce_scatter(C.Comm, Send.get(), Recv.get(), Count,
                                          T, Op),
                    MESHRT_SUCCESS)
              << What << ": " << meshrt_last_error();
          expectSame(Recv.download(), Want, T, What);
        }
      }
  });
}

// The padded forms: data in the first `Valid` elements of the blocks (a dim
// of 10 rows over 4 members in blocks of 3); recv's padding is zeroed even
// where it held something before.
TEST(Collectives, AllGatherPaddedMovesTheData) {
  forEachGroup([](const GroupCase &C) {
    for (meshrt_dtype T : {MESHRT_F32, MESHRT_I64, MESHRT_BF16})
      for (int64_t Count : {int64_t(1), int64_t(3)})
        for (int64_t Valid : {int64_t(0), Count * C.N - Count / 2 - 1,
                              Count * C.N - 1, Count * C.N}) {
          if (Valid < 0)
            continue;
          std::string What = "all_gather_padded count " +
                             std::to_string(Count) + " valid " +
                             std::to_string(Valid);
          int64_t E = meshrt_dtype_size(T), M = valueRange(T);
          std::vector<double> In(static_cast<size_t>(Count)), Want, Junk;
          for (int64_t I = 0; I < Count; ++I)
            In[size_t(I)] = double((worldRank() * 8 + I + 1) % M);
          for (int64_t J = 0; J < C.N; ++J)
            for (int64_t I = 0; I < Count; ++I) {
              bool Data = J * Count + I < Valid;
              Want.push_back(
                  Data ? double((C.Members[size_t(J)] * 8 + I + 1) % M) : 0.0);
              Junk.push_back(7.0);
            }
          Buffer Send(size_t(Count * E)), Recv(size_t(Count * E * C.N));
          Send.upload(encode(T, In).data());
          Recv.upload(encode(T, Junk).data());
          ASSERT_EQ(meshrt_all_gather_padded(C.Comm, Send.get(), Recv.get(),
                                             Count, Valid, T),
                    MESHRT_SUCCESS)
              << What << ": " << meshrt_last_error();
          expectSame(Recv.download(), Want, T, What);
        }
  });
}

TEST(Collectives, ReduceScatterPaddedReducesTheData) {
  forEachGroup([](const GroupCase &C) {
    for (meshrt_dtype T : {MESHRT_F32, MESHRT_I32})
      for (meshrt_reduce_op Op : {MESHRT_SUM, MESHRT_MAX})
        for (int64_t Count : {int64_t(1), int64_t(3)})
          for (int64_t Valid :
               {int64_t(0), Count * C.N - Count - 1, Count * C.N - 1}) {
            if (Valid < 0)
              continue;
            std::string What = std::string("reduce_scatter_padded ") +
                               OpNames[Op] + " count " + std::to_string(Count) +
                               " valid " + std::to_string(Valid);
            int64_t E = meshrt_dtype_size(T);
            std::vector<double> In(static_cast<size_t>(Count * C.N)),
                Want(static_cast<size_t>(Count)), Junk(size_t(Count), 7.0);
            for (int64_t J = 0; J < Count * C.N; ++J)
              In[size_t(J)] = double(inputValue(Op, T, worldRank(), J));
            for (int64_t I = 0; I < Count; ++I)
              Want[size_t(I)] =
                  C.G * Count + I < Valid
                      ? expectedReduction(Op, T, C.Members, C.G * Count + I)
                      : 0.0;
            Buffer Send(size_t(Count * C.N * E)), Recv(size_t(Count * E));
            Send.upload(encode(T, In).data());
            Recv.upload(encode(T, Junk).data());
            ASSERT_EQ(meshrt_reduce_scatter_padded(
                          C.Comm, Send.get(), Recv.get(), Count, Valid, T, Op),
                      MESHRT_SUCCESS)
                << What << ": " << meshrt_last_error();
            expectSame(Recv.download(), Want, T, What);
          }
  });
}

// Block j of rank r's send holds Value(r, j, i) at element i, padding
// included (it must not arrive). Split: block j carries validIn(j) elements
// to member j, so recv block i holds validIn(g) of member i's block g.
// Concat: every block of member i holds validIn(i) elements of data, so recv
// block i holds validIn(i) of member i's block g.
TEST(Collectives, AllToAllPaddedMovesTheData) {
  forEachGroup([](const GroupCase &C) {
    for (int32_t Side :
         {int32_t(MESHRT_PADDED_SPLIT), int32_t(MESHRT_PADDED_CONCAT)})
      for (meshrt_dtype T : {MESHRT_F32, MESHRT_I64, MESHRT_BF16})
        for (int64_t Count : {int64_t(1), int64_t(3)})
          for (int64_t Valid : {int64_t(0), Count * C.N - Count / 2 - 1,
                                Count * C.N - 1, Count * C.N}) {
            if (Valid < 0)
              continue;
            std::string What =
                std::string("all_to_all_padded ") +
                (Side == MESHRT_PADDED_SPLIT ? "split" : "concat") + " count " +
                std::to_string(Count) + " valid " + std::to_string(Valid);
            int64_t E = meshrt_dtype_size(T), M = valueRange(T);
            // Never 0, so that data is told from zeroed padding.
            auto Value = [&](int64_t From, int64_t Block, int64_t I) {
              return double(1 + (From * 64 + Block * 8 + I) % (M - 1));
            };
            // The data elements of block J, counted here from Valid.
            auto DataIn = [&](int64_t J) {
              return std::min(Count, std::max<int64_t>(0, Valid - J * Count));
            };
            std::vector<double> In, Want, Junk;
            for (int64_t J = 0; J < C.N; ++J)
              for (int64_t I = 0; I < Count; ++I) {
                In.push_back(Value(worldRank(), J, I));
                int64_t Data =
                    Side == MESHRT_PADDED_SPLIT ? DataIn(C.G) : DataIn(J);
                Want.push_back(I < Data ? Value(C.Members[size_t(J)], C.G, I)
                                        : 0.0);
                Junk.push_back(7.0);
              }
            Buffer Send(size_t(Count * C.N * E)), Recv(size_t(Count * C.N * E));
            Send.upload(encode(T, In).data());
            Recv.upload(encode(T, Junk).data());
            ASSERT_EQ(meshrt_all_to_all_padded(C.Comm, Send.get(), Recv.get(),
                                               Count, Valid, T, Side),
                      MESHRT_SUCCESS)
                << What << ": " << meshrt_last_error();
            expectSame(Recv.download(), Want, T, What);
          }
  });
}

TEST(Collectives, PaddedValidOutOfRangeIsAnError) {
  forEachGroup([](const GroupCase &C) {
    float X[4] = {0, 0, 0, 0};
    float Y[64] = {};
    EXPECT_EQ(meshrt_all_gather_padded(C.Comm, X, Y, 1, C.N + 1, MESHRT_F32),
              MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(meshrt_last_error()).find("valid"), std::string::npos)
        << meshrt_last_error();
    EXPECT_EQ(meshrt_reduce_scatter_padded(C.Comm, Y, X, 1, -1, MESHRT_F32,
                                           MESHRT_SUM),
              MESHRT_ERROR_INVALID_ARGUMENT);
    float Z[64] = {};
    for (int64_t Valid : {int64_t(-1), C.N + 1}) {
      EXPECT_EQ(meshrt_all_to_all_padded(C.Comm, Y, Z, 1, Valid, MESHRT_F32,
                                         MESHRT_PADDED_SPLIT),
                MESHRT_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(meshrt_last_error())
                    .find("valid " + std::to_string(Valid)),
                std::string::npos)
          << meshrt_last_error();
    }
    for (int32_t Side : {-1, 2}) {
      EXPECT_EQ(
          meshrt_all_to_all_padded(C.Comm, Y, Z, 1, C.N, MESHRT_F32, Side),
          MESHRT_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(
          std::string(meshrt_last_error()).find("side " + std::to_string(Side)),
          std::string::npos)
          << meshrt_last_error();
    }
  });
}

TEST(Collectives, AllToAllTransposesBlocks) {
  forEachGroup([](const GroupCase &C) {
    for (meshrt_dtype T : AllDTypes)
      for (int64_t Count : {int64_t(1), int64_t(3)}) {
        int64_t E = meshrt_dtype_size(T), M = valueRange(T);
        auto Value = [&](int64_t From, int64_t Block, int64_t I) {
          return double((From * 64 + Block * 8 + I) % M);
        };
        std::vector<double> In, Want;
        for (int64_t J = 0; J < C.N; ++J)
          for (int64_t I = 0; I < Count; ++I) {
            In.push_back(Value(worldRank(), J, I));
            Want.push_back(Value(C.Members[size_t(J)], C.G, I));
          }
        Buffer Send(size_t(Count * C.N * E)), Recv(size_t(Count * C.N * E));
        Send.upload(encode(T, In).data());
        ASSERT_EQ(meshrt_all_to_all(C.Comm, Send.get(), Recv.get(), Count, T),
                  MESHRT_SUCCESS)
            << meshrt_last_error();
        expectSame(Recv.download(), Want, T,
                   "all_to_all count " + std::to_string(Count));
      }
  });
}

TEST(Collectives, BroadcastFromEveryRoot) {
  forEachGroup([](const GroupCase &C) {
    for (meshrt_dtype T : AllDTypes)
      for (int64_t Root = 0; Root < C.N; ++Root) {
        const int64_t Count = 5;
        int64_t E = meshrt_dtype_size(T), M = valueRange(T);
        std::vector<double> In(Count), Want(Count);
        for (int64_t I = 0; I < Count; ++I) {
          In[size_t(I)] = double((worldRank() * 8 + I) % M);
          Want[size_t(I)] = double((C.Members[size_t(Root)] * 8 + I) % M);
        }
        Buffer Buf(size_t(Count * E));
        Buf.upload(encode(T, In).data());
        ASSERT_EQ(meshrt_broadcast(C.Comm, Buf.get(), Count, T, Root),
                  MESHRT_SUCCESS)
            << meshrt_last_error();
        expectSame(Buf.download(), Want, T,
                   "broadcast from root " + std::to_string(Root));
      }
  });
}

TEST(Collectives, PermuteShiftsWithAndWithoutWrap) {
  forEachGroup([](const GroupCase &C) {
    std::vector<int64_t> Offsets = {0, 1, -1, 2, C.N - 1, C.N, -(C.N + 1)};
    std::sort(Offsets.begin(), Offsets.end());
    Offsets.erase(std::unique(Offsets.begin(), Offsets.end()), Offsets.end());
    for (meshrt_dtype T : {MESHRT_F32, MESHRT_BF16, MESHRT_I64})
      for (int64_t Off : Offsets)
        for (int32_t Flags : {0, 1, 2, 3}) {
          const int64_t Count = 3;
          const double Sentinel = 99;
          bool Wrap = Flags & MESHRT_PERMUTE_WRAP;
          bool Zero = Flags & MESHRT_PERMUTE_ZERO_FILL;
          // Find who sends to me by asking every member where it sends.
          int64_t From = -1;
          for (int64_t J = 0; J < C.N; ++J) {
            int64_t D = J + Off;
            if (Wrap)
              D = ((D % C.N) + C.N) % C.N;
            if (D == C.G && D >= 0 && D < C.N)
              From = J;
          }
          int64_t E = meshrt_dtype_size(T), M = valueRange(T);
          std::vector<double> In(Count), Want(Count), Init(Count, Sentinel);
          for (int64_t I = 0; I < Count; ++I) {
            In[size_t(I)] = double((worldRank() * 8 + I) % M);
            Want[size_t(I)] =
                From >= 0 ? double((C.Members[size_t(From)] * 8 + I) % M)
                          : (Zero ? 0.0 : Sentinel);
          }
          Buffer Send(size_t(Count * E)), Recv(size_t(Count * E));
          Send.upload(encode(T, In).data());
          Recv.upload(encode(T, Init).data());
          std::string What = "permute offset " + std::to_string(Off) +
                             " flags " + std::to_string(Flags);
          ASSERT_EQ(meshrt_permute(C.Comm, Send.get(), Recv.get(), Count, T,
                                   Off, Flags),
                    MESHRT_SUCCESS)
              << What << ": " << meshrt_last_error();
          expectSame(Recv.download(), Want, T, What);
        }
  });
}

TEST(Collectives, BarrierAndZeroCounts) {
  forEachGroup([](const GroupCase &C) {
    EXPECT_EQ(meshrt_barrier(C.Comm), MESHRT_SUCCESS) << meshrt_last_error();
    meshrt_stats Before, After;
    meshrt_get_stats(&Before);
    EXPECT_EQ(
        meshrt_all_reduce(C.Comm, nullptr, nullptr, 0, MESHRT_F32, MESHRT_SUM),
        MESHRT_SUCCESS);
    EXPECT_EQ(meshrt_all_gather(C.Comm, nullptr, nullptr, 0, MESHRT_F32),
              MESHRT_SUCCESS);
    meshrt_get_stats(&After);
    EXPECT_EQ(After.collectives, Before.collectives) << "count 0 is a no-op";
  });
}

TEST(Collectives, LargeBuffersUseEveryElement) {
  // Large enough for the pipelined/segmented algorithms of both backends.
  const int64_t Count = 1 << 18;
  for (const DeclaredMesh &M : meshes()) {
    BruteMesh B(M.Resolved);
    std::vector<int64_t> Axes = {int64_t(M.Resolved.size()) - 1};
    meshrt_comm_t Comm;
    ASSERT_EQ(meshrt_comm_get(M.Handle, 1, Axes.data(), &Comm), MESHRT_SUCCESS);
    std::vector<int64_t> Members = B.members(worldRank(), Axes);
    std::vector<double> In(Count), Want(Count);
    for (int64_t I = 0; I < Count; ++I) {
      In[size_t(I)] = double((worldRank() + 1) * (I % 1000));
      double S = 0;
      for (int64_t R : Members)
        S += double((R + 1) * (I % 1000));
      Want[size_t(I)] = S;
    }
    Buffer Send(size_t(Count * 4)), Recv(size_t(Count * 4));
    Send.upload(encode(MESHRT_F32, In).data());
    ASSERT_EQ(meshrt_all_reduce(Comm, Send.get(), Recv.get(), Count, MESHRT_F32,
                                MESHRT_SUM),
              MESHRT_SUCCESS)
        << meshrt_last_error();
    expectSame(Recv.download(), Want, MESHRT_F32, "large all_reduce");
  }
}

TEST(Collectives, InvalidAndUnsupportedCallsFailEverywhere) {
  // These fail before any communication, on every rank alike.
  forEachGroup([](const GroupCase &C) {
    float X[4] = {0, 0, 0, 0}, Y[4];
    int S = meshrt_all_reduce(C.Comm, X, Y, 1, MESHRT_F32, MESHRT_BXOR);
    EXPECT_EQ(S, MESHRT_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(meshrt_last_error())
                  .find("reduction 'bxor' is not defined for dtype f32"),
              std::string::npos)
        << meshrt_last_error();
    EXPECT_EQ(meshrt_reduce_scatter(C.Comm, X, Y, 1, MESHRT_BF16, MESHRT_BAND),
              MESHRT_ERROR_UNSUPPORTED);
    EXPECT_EQ(meshrt_all_reduce(C.Comm, X, Y, 1, MESHRT_F64, MESHRT_BOR),
              MESHRT_ERROR_UNSUPPORTED);
    EXPECT_EQ(meshrt_all_reduce(C.Comm, X, Y, -1, MESHRT_F32, MESHRT_SUM),
              MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(meshrt_all_reduce(C.Comm, X, Y, 1, meshrt_dtype(42), MESHRT_SUM),
              MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(
        meshrt_all_reduce(C.Comm, X, Y, 1, MESHRT_F32, meshrt_reduce_op(9)),
        MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(meshrt_broadcast(C.Comm, X, 1, MESHRT_F32, C.N),
              MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(meshrt_all_gather(C.Comm, X, X, 1, MESHRT_F32),
              MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(meshrt_permute(C.Comm, X, Y, 1, MESHRT_F32, 1, 8),
              MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(meshrt_all_reduce(C.Comm, nullptr, Y, 1, MESHRT_F32, MESHRT_SUM),
              MESHRT_ERROR_INVALID_ARGUMENT);
    // The message names the operation and the group.
    EXPECT_NE(std::string(meshrt_last_error()).find("all_reduce on mesh '"),
              std::string::npos)
        << meshrt_last_error();
  });
}

} // namespace

namespace {

TEST(Collectives, NcclRejectsHostBuffers) {
  if (!onNccl())
    GTEST_SKIP() << "host buffers are what the MPI backend uses";
  forEachGroup([](const GroupCase &C) {
    std::vector<float> Host(4, 1.0f);
    Buffer Device(16);
    int S = meshrt_all_reduce(C.Comm, Host.data(), Device.get(), 4, MESHRT_F32,
                              MESHRT_SUM);
    EXPECT_EQ(S, MESHRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(meshrt_last_error()).find("host memory"),
              std::string::npos)
        << meshrt_last_error();
  });
}

} // namespace
