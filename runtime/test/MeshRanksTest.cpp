//===- MeshRanksTest.cpp - Rank-array meshes, p2p and the PyTorch calls ---===//
//
// Runs under mpirun (1, 2, 4 and 8 ranks) next to DeviceMeshTest. Every new
// entry point - meshes over an explicit rank array (C++ and C ABI),
// non-members, point-to-point send/recv, flatten reachable from sub-meshes,
// unflatten, concatenate, from_group and to_string - is compared with
// TorchOracle, an independent model of PyTorch's documented DeviceMesh
// semantics, and every error path is checked to fail the same way on every
// rank without leaving a peer waiting.
//
//===----------------------------------------------------------------------===//

#include "TestBuffers.h"
#include "TestErrors.h"
#include "TorchOracle.h"

#include "meshrt/DeviceMesh.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

using namespace meshrt;
using meshrt::test::Buffer;
using meshrt::test::contains;
using meshrt::test::errorOf;
using meshrt::test::TorchMesh;
using meshrt::test::worldRank;
using meshrt::test::worldSize;

namespace {

Backend testBackend() {
  meshrt_backend B;
  meshrt_get_backend(&B);
  return Backend(B);
}

int64_t allReduceSum(const Group &G, int64_t V) {
  Buffer B(8);
  B.upload(&V);
  G.all_reduce(B.get(), B.get(), 1, DType::I64, ReduceOp::Sum);
  int64_t Out;
  std::memcpy(&Out, B.download().data(), 8);
  return Out;
}

/// Rank arrays that fit a world of W: (ranks, shape), each a different
/// situation: the world reversed, a non-row-major order (a transpose), a
/// strict subset, and the two halves of a two-stage pipeline.
struct Case {
  std::string Name;
  std::vector<int64_t> Ranks, Shape;
  std::vector<std::string> Dims;
};
std::vector<Case> casesFor(int64_t W) {
  std::vector<int64_t> All(static_cast<size_t>(W));
  std::iota(All.begin(), All.end(), 0);
  std::vector<Case> C;
  std::vector<int64_t> Rev(All.rbegin(), All.rend());
  C.push_back({"reversed", Rev, {W}, {"x"}});
  if (W >= 4 && W % 2 == 0) {
    // [[0, 2, 4, ...], [1, 3, 5, ...]]: the transpose of (W/2, 2).
    std::vector<int64_t> T;
    for (int64_t Row = 0; Row < 2; ++Row)
      for (int64_t Col = 0; Col < W / 2; ++Col)
        T.push_back(Col * 2 + Row);
    C.push_back({"transposed", T, {2, W / 2}, {"a", "b"}});
  }
  if (W % 4 == 0) {
    // Pipeline stages: each a (dp, tp) mesh over half of the world.
    std::vector<int64_t> S0(All.begin(), All.begin() + W / 2),
        S1(All.begin() + W / 2, All.end());
    C.push_back({"stage0", S0, {2, W / 4}, {"dp", "tp"}});
    C.push_back({"stage1", S1, {-1, 2}, {"dp", "tp"}});
  }
  if (W >= 2) {
    // Every rank but rank 1, in a shuffled order, as one dimension.
    std::vector<int64_t> Sub;
    for (int64_t R = W - 1; R >= 0; --R)
      if (R != 1)
        Sub.push_back(R);
    std::rotate(Sub.begin(), Sub.begin() + Sub.size() / 2, Sub.end());
    C.push_back({"subset", Sub, {int64_t(Sub.size())}, {"x"}});
  }
  return C;
}

std::vector<int64_t> resolved(const Case &K) {
  std::vector<int64_t> S = K.Shape;
  int64_t Known = 1;
  for (int64_t X : S)
    Known *= X > 0 ? X : 1;
  for (int64_t &X : S)
    if (X < 0)
      X = int64_t(K.Ranks.size()) / Known;
  return S;
}

TEST(MeshRanks, GroupsCoordinatesAndSplitsMatchPyTorch) {
  int64_t W = worldSize(), R = worldRank();
  for (const Case &K : casesFor(W)) {
    SCOPED_TRACE(K.Name);
    Runtime Rt(testBackend());
    DeviceMesh M = Rt.device_mesh("auto", K.Ranks, K.Shape, K.Dims, K.Name);
    TorchMesh T = TorchMesh::fromRanks(K.Ranks, resolved(K), K.Dims);
    std::optional<std::vector<int64_t>> Want = T.coordinate(R);
    EXPECT_EQ(M.is_member(), Want.has_value());
    EXPECT_EQ(M.get_coordinate(), Want.value_or(std::vector<int64_t>()));
    EXPECT_EQ(M.shape(), T.Shape);
    EXPECT_EQ(M.mesh(), T.tolist()); // The whole mesh, on every rank.
    EXPECT_EQ(M.to_string(), torchRepr(T, M.device_type()));
    // One split per distinct grouping of the world (dimensions whose
    // grouping is the world in world order use the world).
    std::set<std::vector<std::vector<int64_t>>> Groupings;
    std::vector<std::vector<int64_t>> Identity;
    std::vector<int64_t> AllRanks(static_cast<size_t>(W));
    std::iota(AllRanks.begin(), AllRanks.end(), 0);
    Identity.assign(size_t(W), AllRanks);
    for (const std::string &D : K.Dims) {
      auto G = T.grouping({D}, W);
      if (G != Identity)
        Groupings.insert(G);
      if (Want) {
        Group Grp = M.get_group(D);
        EXPECT_EQ(Grp.members(), *T.group({D}, R)) << D;
        EXPECT_EQ(M.get_local_rank(D), (*Want)[size_t(T.dimOf(D))]);
        EXPECT_EQ(Grp.rank(), M.get_local_rank(D));
        int64_t Sum = 0;
        std::vector<int64_t> Members = *T.group({D}, R);
        for (int64_t X : Members)
          Sum += X;
        EXPECT_EQ(allReduceSum(Grp, R), Sum) << D;
      } else {
        auto [Code, Msg] = errorOf([&] { M.get_group(D); });
        EXPECT_EQ(Code, MESHRT_ERROR_NOT_MEMBER);
        EXPECT_TRUE(contains(Msg, "world rank " + std::to_string(R) +
                                      " is not in mesh '" + K.Name + "'"))
            << Msg;
        EXPECT_EQ(errorOf([&] { M.get_local_rank(D); }).first,
                  MESHRT_ERROR_NOT_MEMBER);
      }
    }
    EXPECT_EQ(Rt.stats().splits, int64_t(Groupings.size()));
    if (!Want) {
      EXPECT_EQ(errorOf([&] { M.get_all_groups(); }).first,
                MESHRT_ERROR_NOT_MEMBER);
      // A sub-mesh is defined outside the mesh only when it is all of it
      // (the other dimensions have size 1), as PyTorch's mesh property.
      if (K.Dims.size() > 1) {
        int64_t Positions = int64_t(K.Ranks.size());
        if (T.Shape[0] < Positions)
          EXPECT_EQ(errorOf([&] { M[K.Dims[0]].mesh(); }).first,
                    MESHRT_ERROR_NOT_MEMBER);
        else
          EXPECT_EQ(M[K.Dims[0]].mesh(), T.tolist());
      }
    }
    // Sub-meshes as PyTorch slices them, on members.
    if (Want && K.Dims.size() == 2) {
      for (auto Order : {std::vector<std::string>{K.Dims[1]},
                         std::vector<std::string>{K.Dims[1], K.Dims[0]}}) {
        DeviceMesh S = Order.size() == 1 ? M[Order[0]] : M.slice(Order);
        EXPECT_EQ(S.mesh(), T.sub(Order, R)->tolist());
        EXPECT_EQ(S.to_string(), torchRepr(*T.sub(Order, R), S.device_type()));
      }
    }
    Rt.finalize();
  }
}

TEST(MeshRanks, CAbiDeclaresMeshesOverRankArrays) {
  int64_t W = worldSize(), R = worldRank();
  for (const Case &K : casesFor(W)) {
    SCOPED_TRACE(K.Name);
    std::string Name = "c-" + K.Name;
    std::vector<const char *> Names;
    for (const std::string &D : K.Dims)
      Names.push_back(D.c_str());
    meshrt_mesh_t M = nullptr;
    ASSERT_EQ(meshrt_mesh_declare_ranks(
                  Name.c_str(), int64_t(K.Shape.size()), K.Shape.data(),
                  Names.data(), int64_t(K.Ranks.size()), K.Ranks.data(), &M),
              MESHRT_SUCCESS)
        << meshrt_last_error();
    TorchMesh T = TorchMesh::fromRanks(K.Ranks, resolved(K), K.Dims);
    auto Want = T.coordinate(R);
    int64_t Member = -1;
    ASSERT_EQ(meshrt_mesh_is_member(M, &Member), MESHRT_SUCCESS);
    EXPECT_EQ(Member, Want ? 1 : 0);
    for (int64_t I = 0; I < int64_t(K.Ranks.size()); ++I) {
      int64_t World = -1;
      EXPECT_EQ(meshrt_mesh_world_rank(M, I, &World), MESHRT_SUCCESS);
      EXPECT_EQ(World, K.Ranks[size_t(I)]);
    }
    int64_t Out;
    EXPECT_EQ(meshrt_mesh_world_rank(M, int64_t(K.Ranks.size()), &Out),
              MESHRT_ERROR_INVALID_ARGUMENT);
    for (int64_t A = 0; A < int64_t(K.Dims.size()); ++A) {
      int64_t Coord = -1;
      meshrt_status S = meshrt_mesh_coordinate(M, A, &Coord);
      meshrt_comm_t C = nullptr;
      // Collective over the world: every rank asks, members or not.
      ASSERT_EQ(meshrt_comm_get(M, 1, &A, &C), MESHRT_SUCCESS);
      int64_t Rank = -2, Size = -2;
      meshrt_comm_rank(C, &Rank);
      meshrt_comm_size(C, &Size);
      if (Want) {
        EXPECT_EQ(S, MESHRT_SUCCESS);
        EXPECT_EQ(Coord, (*Want)[size_t(A)]);
        std::vector<int64_t> G = *T.group({K.Dims[size_t(A)]}, R);
        EXPECT_EQ(Rank, Coord);
        EXPECT_EQ(Size, int64_t(G.size()));
        for (int64_t J = 0; J < Size; ++J) {
          int64_t Wr = -1;
          meshrt_comm_world_rank(C, J, &Wr);
          EXPECT_EQ(Wr, G[size_t(J)]);
        }
      } else {
        EXPECT_EQ(S, MESHRT_ERROR_NOT_MEMBER);
        EXPECT_TRUE(contains(meshrt_last_error(), "is not in mesh"));
        EXPECT_EQ(Rank, -1);
        EXPECT_EQ(Size, 0);
        Buffer B(8);
        EXPECT_EQ(
            meshrt_all_reduce(C, B.get(), B.get(), 1, MESHRT_I64, MESHRT_SUM),
            MESHRT_ERROR_NOT_MEMBER);
        EXPECT_TRUE(contains(meshrt_last_error(),
                             "takes part in none of its collectives"))
            << meshrt_last_error();
        EXPECT_EQ(meshrt_barrier(C), MESHRT_ERROR_NOT_MEMBER);
        void *Native = nullptr;
        EXPECT_EQ(meshrt_comm_native_handle(C, &Native),
                  MESHRT_ERROR_NOT_MEMBER);
      }
    }
    // Redeclaring the same is free; the C++ API sees it by name.
    meshrt_mesh_t Again = nullptr;
    EXPECT_EQ(meshrt_mesh_declare_ranks(Name.c_str(), int64_t(K.Shape.size()),
                                        K.Shape.data(), Names.data(),
                                        int64_t(K.Ranks.size()), K.Ranks.data(),
                                        &Again),
              MESHRT_SUCCESS);
    EXPECT_EQ(Again, M);
  }
}

TEST(MeshRanks, BadRankArraysFailOnEveryRank) {
  int64_t W = worldSize(), R = worldRank();
  Runtime Rt(testBackend());
  auto Expect = [&](const std::vector<int64_t> &Ranks,
                    const std::vector<int64_t> &Shape, int Code,
                    const std::string &Part) {
    auto [C, Msg] = errorOf([&] {
      Rt.device_mesh("auto", Ranks, Shape, {}, "bad" + std::to_string(R % 1));
    });
    EXPECT_EQ(C, Code) << Msg;
    EXPECT_TRUE(contains(Msg, Part)) << Msg;
  };
  Expect({W}, {1}, MESHRT_ERROR_INVALID_ARGUMENT,
         "rank " + std::to_string(W) + " at position 0 is not a world rank");
  Expect({-1}, {1}, MESHRT_ERROR_INVALID_ARGUMENT,
         "rank -1 at position 0 is not a world rank");
  if (W >= 2)
    Expect({0, 1, 0}, {3}, MESHRT_ERROR_INVALID_ARGUMENT,
           "rank 0 appears twice (positions 0 and 2)");
  Expect({0}, {2}, MESHRT_ERROR_INVALID_ARGUMENT,
         "shape (2,) has 2 positions but 1 ranks were given");
  Expect({}, {1}, MESHRT_ERROR_INVALID_ARGUMENT, "at least one rank");
  // One rank declares other ranks: every rank fails, naming both.
  if (W >= 2) {
    std::vector<int64_t> Mine = {0, 1};
    if (R == W - 1)
      Mine = {1, 0};
    auto [C, Msg] =
        errorOf([&] { Rt.device_mesh("auto", Mine, {2}, {"x"}, "mm"); });
    EXPECT_EQ(C, MESHRT_ERROR_MESH_MISMATCH);
    EXPECT_TRUE(contains(Msg, "over world ranks [0, 1]")) << Msg;
    EXPECT_TRUE(contains(Msg, "over world ranks [1, 0]")) << Msg;
  }
  // C ABI: nranks out of range, and a redeclaration with other ranks.
  int64_t Size = 1, Zero = 0;
  const char *X[] = {"x"};
  meshrt_mesh_t M;
  EXPECT_EQ(meshrt_mesh_declare_ranks("cbad", 1, &Size, X, 0, &Zero, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "nranks 0 is not in [1, "));
  EXPECT_EQ(meshrt_mesh_declare_ranks("cgood", 1, &Size, X, 1, &Zero, &M),
            MESHRT_SUCCESS);
  int64_t Last = W - 1;
  if (W > 1) {
    EXPECT_EQ(meshrt_mesh_declare_ranks("cgood", 1, &Size, X, 1, &Last, &M),
              MESHRT_ERROR_MESH_MISMATCH);
    EXPECT_TRUE(contains(meshrt_last_error(), "over world ranks [0]"));
  }
  EXPECT_EQ(meshrt_mesh_declare_ranks("cnull", 1, &Size, X, 1, nullptr, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  // The runtime is still usable.
  DeviceMesh Ok = Rt.device_mesh("auto", {0}, {1}, {"x"}, "ok");
  EXPECT_EQ(Ok.is_member(), R == 0);
  Rt.finalize();
}

TEST(MeshRanks, PointToPointBetweenPipelineStages) {
  int64_t W = worldSize(), R = worldRank();
  bool Device = meshrt::test::useDeviceMemory();
  if (W >= 2) {
    // Stage 0 is the first half of the world, stage 1 the second: rank i of
    // stage 0 sends to rank i of stage 1 (found through the mesh), which
    // sends back twice the values.
    int64_t Half = W / 2;
    std::vector<int64_t> S0, S1;
    for (int64_t I = 0; I < Half; ++I) {
      S0.push_back(I);
      S1.push_back(I + Half);
    }
    DeviceMesh Stage0("auto", S0, {Half}, {"x"}, "p2p-stage0");
    DeviceMesh Stage1("auto", S1, {Half}, {"x"}, "p2p-stage1");
    const int64_t N = 5;
    Buffer B(N * 4);
    if (Stage0.is_member()) {
      int64_t I = Stage0.get_local_rank("x");
      int64_t Peer = -1;
      meshrt_mesh_world_rank(Stage1.handle(), I, &Peer);
      std::vector<float> V(N);
      for (int64_t J = 0; J < N; ++J)
        V[size_t(J)] = float(R * 10 + J);
      B.upload(V.data());
      ASSERT_EQ(meshrt_send(B.get(), N, MESHRT_F32, Peer, 0), MESHRT_SUCCESS)
          << meshrt_last_error();
      ASSERT_EQ(meshrt_recv(B.get(), N, MESHRT_F32, Peer, 0), MESHRT_SUCCESS);
      std::vector<unsigned char> Got = B.download();
      std::vector<float> Back(N);
      std::memcpy(Back.data(), Got.data(), N * 4);
      for (int64_t J = 0; J < N; ++J)
        EXPECT_EQ(Back[size_t(J)], 2.0f * float(R * 10 + J));
    } else if (Stage1.is_member()) {
      int64_t I = Stage1.get_local_rank("x");
      int64_t Peer = Stage0.mesh()[size_t(I)];
      default_runtime().recv(B.get(), N, DType::F32, Peer);
      std::vector<unsigned char> Got = B.download();
      std::vector<float> V(N);
      std::memcpy(V.data(), Got.data(), N * 4);
      for (int64_t J = 0; J < N; ++J)
        EXPECT_EQ(V[size_t(J)], float(Peer * 10 + J));
      for (float &X : V)
        X *= 2;
      B.upload(V.data());
      send(B.get(), N, DType::F32, Peer);
    }
    // Two tags received in the other order (MPI matches by tag, and sends
    // small messages eagerly; NCCL and gloo complete a send only once its
    // recv is posted, which this order would deadlock, as MPI_Send may).
    meshrt_backend Kind = MESHRT_BACKEND_AUTO;
    meshrt_get_backend(&Kind);
    bool Eager = !Device && Kind == MESHRT_BACKEND_MPI;
    if (Eager && R < 2 * Half && R % 2 == 0 && R + 1 < W) {
      std::vector<int32_t> A = {1, 2}, Bv = {3, 4};
      default_runtime().send(A, R + 1, 5);
      default_runtime().send(Bv, R + 1, 6);
    } else if (Eager && R % 2 == 1) {
      std::vector<int32_t> A(2), Bv(2);
      default_runtime().recv(Bv, R - 1, 6);
      default_runtime().recv(A, R - 1, 5);
      EXPECT_EQ(A, (std::vector<int32_t>{1, 2}));
      EXPECT_EQ(Bv, (std::vector<int32_t>{3, 4}));
    }
  }
  // Errors, all local (nothing is sent).
  Buffer B(8);
  auto Expect = [&](meshrt_status S, int Code, const std::string &Part) {
    EXPECT_EQ(S, Code) << meshrt_last_error();
    EXPECT_TRUE(contains(meshrt_last_error(), Part)) << meshrt_last_error();
  };
  Expect(meshrt_send(B.get(), 1, MESHRT_I64, R, 0),
         MESHRT_ERROR_INVALID_ARGUMENT,
         "meshrt_send: send: peer " + std::to_string(R) + " is this process");
  if (W == 1) // The only peer is itself.
    return;
  Expect(meshrt_recv(B.get(), 1, MESHRT_I64, W, 0),
         MESHRT_ERROR_INVALID_ARGUMENT,
         "peer " + std::to_string(W) + " is not a world rank");
  Expect(meshrt_send(B.get(), -1, MESHRT_I64, (R + 1) % W, 0),
         MESHRT_ERROR_INVALID_ARGUMENT, "negative count -1");
  Expect(meshrt_send(B.get(), 1, meshrt_dtype(42), (R + 1) % W, 0),
         MESHRT_ERROR_INVALID_ARGUMENT, "invalid dtype 42");
  Expect(meshrt_recv(nullptr, 1, MESHRT_I64, (R + 1) % W, 0),
         MESHRT_ERROR_INVALID_ARGUMENT, "null buffer");
  Expect(meshrt_send(B.get(), 1, MESHRT_I64, (R + 1) % W, 40000),
         MESHRT_ERROR_INVALID_ARGUMENT, "tag 40000 is not in [0, 32767]");
  if (W >= 2) {
    // A count of 0 moves nothing, so it waits for nobody.
    EXPECT_EQ(meshrt_send(B.get(), 0, MESHRT_I64, (R + 1) % W, 0),
              MESHRT_SUCCESS);
    EXPECT_EQ(meshrt_recv(B.get(), 0, MESHRT_I64, (R + 1) % W, 0),
              MESHRT_SUCCESS);
  }
  if (Device && W >= 2)
    Expect(meshrt_send(B.get(), 1, MESHRT_I64, (R + 1) % W, 3),
           MESHRT_ERROR_UNSUPPORTED, "tag 3 on the NCCL backend");
}

TEST(MeshRanks, FlattenUnflattenAndSlicesMatchPyTorch) {
  int64_t W = worldSize(), R = worldRank();
  if (W != 8 && W != 4)
    GTEST_SKIP() << "needs a (2, 2, W/4) mesh";
  Runtime Rt(testBackend());
  std::vector<int64_t> Ranks(static_cast<size_t>(W));
  std::iota(Ranks.rbegin(), Ranks.rend(), 0); // Reversed: not the world.
  std::vector<int64_t> Shape = {2, 2, W / 4};
  std::vector<std::string> Names = {"dp", "cp", "tp"};
  DeviceMesh M = Rt.device_mesh("auto", Ranks, Shape, Names, "m3");
  TorchMesh T = TorchMesh::fromRanks(Ranks, Shape, Names);
  std::string Dev = M.device_type();

  // flatten of a slice, with and without a name: PyTorch's example of
  // mesh_3d["dp", "cp"]._flatten() -> "dp_cp".
  DeviceMesh DpCp = M[{"dp", "cp"}].flatten();
  EXPECT_EQ(DpCp.mesh_dim_names(), (std::vector<std::string>{"dp_cp"}));
  EXPECT_EQ(DpCp.get_group().members(), *T.group({"dp", "cp"}, R));
  EXPECT_EQ(DpCp.to_string(),
            torchFlattenRepr(*T.sub({"dp", "cp"}, R), "dp_cp", Dev));
  // Non-contiguous: (dp, tp) keeps two strides.
  DeviceMesh DpTp = M[{"dp", "tp"}].flatten("dp_tp");
  EXPECT_EQ(DpTp.get_group().members(), *T.group({"dp", "tp"}, R));
  EXPECT_EQ(DpTp.to_string(),
            torchFlattenRepr(*T.sub({"dp", "tp"}, R), "dp_tp", Dev));
  // Reachable from the root and from its sub-meshes, as PyTorch's
  // get_group looks in the root's flattened meshes.
  EXPECT_EQ(M.get_group("dp_cp").members(), *T.group({"dp", "cp"}, R));
  EXPECT_EQ(M["tp"].get_group("dp_cp").members(), *T.group({"dp", "cp"}, R));
  EXPECT_EQ(M["cp"].get_local_rank("dp_tp"), DpTp.get_local_rank());
  EXPECT_EQ(M["dp_cp"].mesh(), *T.group({"dp", "cp"}, R));
  int64_t Splits = Rt.stats().splits;
  // Flattening again (from another sub-mesh) creates nothing.
  M[{"dp", "cp", "tp"}].flatten("dp_cp", {"dp", "cp"});
  EXPECT_EQ(Rt.stats().splits, Splits);

  // unflatten: PyTorch's example, a 1-D mesh into (2, 2, W/4). (The
  // flattened mesh is a split of its own: its ranks are not in world order.)
  DeviceMesh Flat = M.flatten("world");
  if (W == 8) // At 4 ranks tp has size 1: "world" is dp_cp's grouping.
    ++Splits;
  EXPECT_EQ(Rt.stats().splits, Splits);
  DeviceMesh Un = Flat.unflatten("world", Shape, {"a", "b", "c"});
  EXPECT_EQ(Un.mesh_dim_names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Un.shape(), Shape);
  TorchMesh TF = *T.sub({"dp", "cp", "tp"}, R);
  TorchMesh TU = TorchMesh::fromRanks(TF.tolist(), {W}, {"world"})
                     .unflatten("world", Shape, {"a", "b", "c"});
  EXPECT_EQ(Un.mesh(), TU.tolist());
  EXPECT_EQ(Un.get_coordinate(), *TU.coordinate(R));
  for (const char *D : {"a", "b", "c"})
    EXPECT_EQ(Un.get_group(D).members(), *TU.group({D}, R)) << D;
  // Same groupings as dp, cp, tp: unflatten reuses their communicators.
  EXPECT_EQ(Un.get_group("a").handle() != nullptr, true);
  EXPECT_EQ(Rt.stats().splits, Splits);
  // A plain dimension unflattened: tp -> (t0, t1) on 8 ranks.
  if (W == 8) {
    DeviceMesh Dp2 = M.unflatten("dp", {2, 1}, {"d0", "d1"});
    TorchMesh TD = T.unflatten("dp", {2, 1}, {"d0", "d1"});
    EXPECT_EQ(Dp2.to_string(), torchRepr(TD, Dev));
    EXPECT_EQ(Dp2.get_group("d0").members(), *TD.group({"d0"}, R));
    EXPECT_EQ(Dp2.get_group("d1").members(), *TD.group({"d1"}, R));
    DeviceMesh Tp2 = M.unflatten(-1, {2, 1}, {"t0", "t1"});
    TorchMesh TT = T.unflatten("tp", {2, 1}, {"t0", "t1"});
    EXPECT_EQ(Tp2.to_string(), torchRepr(TT, Dev));
    EXPECT_EQ(Tp2.get_group("t0").members(), *TT.group({"t0"}, R));
  }
  // A flattened dimension of two parts unflattened back: dp_tp -> (x, y)
  // gives dp's and tp's groups.
  DeviceMesh Back = DpTp.unflatten(0, {2, W / 4}, {"x", "y"});
  EXPECT_EQ(Back.get_group("x").members(), *T.group({"dp"}, R));
  EXPECT_EQ(Back.get_group("y").members(), *T.group({"tp"}, R));

  // concatenate: PyTorch's _concatenate of sub-meshes of one root.
  DeviceMesh Cat = DeviceMesh::concatenate({M["tp"], M["dp"]});
  EXPECT_EQ(Cat.mesh_dim_names(), (std::vector<std::string>{"tp", "dp"}));
  EXPECT_EQ(Cat.mesh(), T.sub({"tp", "dp"}, R)->tolist());
  EXPECT_EQ(Cat, (M[{"tp", "dp"}]));
  EXPECT_EQ(Cat.get_group("dp").handle(), M.get_group("dp").handle());
  EXPECT_EQ(Cat.to_string(), torchRepr(*T.sub({"tp", "dp"}, R), Dev));

  // Errors, alike on every rank and before any communication.
  auto Expect = [&](auto &&Fn, int Code, const std::string &Part) {
    auto [C, Msg] = errorOf(Fn);
    EXPECT_EQ(C, Code) << Msg;
    EXPECT_TRUE(contains(Msg, Part)) << Msg;
  };
  Expect([&] { M.unflatten("dp", {3}, {"x"}); }, MESHRT_ERROR_INVALID_ARGUMENT,
         "the sizes (3) multiply to 3, but the dimension has size 2");
  Expect([&] { M.unflatten("dp", {2, 1}, {"x"}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "2 sizes and 1 names were given");
  Expect([&] { M.unflatten("dp", {1, 2}, {"x", "x"}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "the name 'x' is given twice");
  Expect([&] { M.unflatten("dp", {1, 2}, {"x", "cp"}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "already has a dimension 'cp'");
  Expect([&] { M.unflatten("pp", {2}, {"x"}); }, MESHRT_ERROR_UNKNOWN_AXIS,
         "no dimension 'pp'");
  Expect([&] { M.unflatten(5, {2}, {"x"}); }, MESHRT_ERROR_INVALID_ARGUMENT,
         "dimension 5 is out of range");
  Expect([&] { M.unflatten("dp_cp", {4}, {"x"}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "is a flattened name of the root");
  Expect([&] { DeviceMesh::concatenate({}); }, MESHRT_ERROR_INVALID_ARGUMENT,
         "no meshes were given");
  Expect([&] { DeviceMesh::concatenate({M["dp"], M["dp"]}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "dimension 'dp' appears twice");
  Expect([&] { DeviceMesh::concatenate({M["dp_cp"], M["cp"]}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "the meshes overlap");
  DeviceMesh Other = Rt.init_device_mesh("auto", {W}, {"w"}, "other");
  Expect([&] { DeviceMesh::concatenate({M["dp"], Other}); },
         MESHRT_ERROR_INVALID_ARGUMENT, "come from different meshes");
  Rt.finalize();
}

TEST(MeshRanks, FromGroupMatchesPyTorch) {
  int64_t W = worldSize(), R = worldRank();
  Runtime Rt(testBackend());
  int64_t Rows = W % 2 == 0 ? 2 : 1;
  DeviceMesh M = Rt.init_device_mesh("auto", {Rows, W / Rows}, {"r", "c"});
  TorchMesh T = TorchMesh::fromRanks(
      [&] {
        std::vector<int64_t> V(static_cast<size_t>(W));
        std::iota(V.begin(), V.end(), 0);
        return V;
      }(),
      {Rows, W / Rows}, {"r", "c"});
  int64_t Splits = Rt.stats().splits;
  // 1-D: the mesh is the group's ranks; no communication.
  DeviceMesh One = DeviceMesh::from_group(M.get_group("c"), "auto", {"cols"});
  EXPECT_EQ(One.mesh(), *T.group({"c"}, R));
  EXPECT_EQ(One.get_group().handle(), M.get_group("c").handle());
  EXPECT_EQ(One.get_local_rank(), M.get_local_rank("c"));
  EXPECT_EQ(One.flatten("again").get_group().members(), *T.group({"c"}, R));
  EXPECT_EQ(Rt.stats().splits, Splits);
  // N-D: dimension k uses group k; every rank calls it.
  DeviceMesh Two =
      DeviceMesh::from_group({M.get_group("r"), M.get_group("c")}, "auto",
                             T.tolist(), {Rows, W / Rows}, {"rr", "cc"});
  EXPECT_EQ(Two.get_group("rr").handle(), M.get_group("r").handle());
  EXPECT_EQ(Two.get_group("cc").handle(), M.get_group("c").handle());
  EXPECT_EQ(Two.get_coordinate(), *T.coordinate(R));
  EXPECT_EQ(Rt.stats().splits, Splits);
  // And new groupings on it work (it was declared on every rank).
  EXPECT_EQ(Two.flatten().get_group().members(), *T.group({"r", "c"}, R));

  // Errors.
  auto [Code, Msg] = errorOf(
      [&] { DeviceMesh::from_group(M.get_group("c"), "auto", {}, {W + 7}); });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(Msg, "is not the group's ranks")) << Msg;
  std::tie(Code, Msg) =
      errorOf([&] { DeviceMesh::from_group(Group(), "auto"); });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  std::tie(Code, Msg) =
      errorOf([&] { One.unflatten(0, {1, W / Rows}, {"x", "y"}); });
  if (W / Rows > 1 || W == 1) {
    EXPECT_EQ(Code, MESHRT_ERROR_UNSUPPORTED) << Msg;
    EXPECT_TRUE(contains(Msg, "made by DeviceMesh::from_group")) << Msg;
  }
  if (Rows == 2 && W / Rows != 2) {
    // The groups swapped: wrong on every member, and every rank fails.
    std::tie(Code, Msg) = errorOf([&] {
      DeviceMesh::from_group({M.get_group("c"), M.get_group("r")}, "auto",
                             T.tolist(), {Rows, W / Rows}, {"x", "y"},
                             "swapped");
    });
    EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT) << Msg;
  }
  std::tie(Code, Msg) = errorOf([&] {
    DeviceMesh::from_group({M.get_group("c")}, "auto", T.tolist(),
                           {Rows, W / Rows}, {}, "count");
  });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(Msg, "1 groups for a 2-D mesh")) << Msg;
  Rt.finalize();
}

TEST(MeshRanks, UnflattenThatCutsAcrossPartsFails) {
  int64_t W = worldSize();
  if (W != 6)
    GTEST_SKIP() << "needs parts of sizes 2 and 3 (6 ranks)";
  Runtime Rt(testBackend());
  DeviceMesh M = Rt.init_device_mesh("auto", {2, 3}, {"r", "c"});
  // (c, r): parts of sizes 3 and 2; (3, 2) follows them, (2, 3) cuts the
  // part of size 2 by 3.
  DeviceMesh CR = M[{"c", "r"}].flatten("cr");
  DeviceMesh Ok = CR.unflatten(0, {3, 2}, {"x", "y"});
  EXPECT_EQ(Ok.get_group("x").members(), M.get_group("c").members());
  auto [Code, Msg] = errorOf([&] { CR.unflatten(0, {2, 3}, {"x", "y"}); });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(Msg, "size 3 does not split at the boundaries")) << Msg;
  Rt.finalize();
}

TEST(MeshRanks, ToStringIsPyTorchsRepr) {
  int64_t W = worldSize();
  if (W != 8)
    GTEST_SKIP() << "the tutorial's (2, 4) mesh needs 8 ranks";
  Runtime Rt(testBackend());
  DeviceMesh M = Rt.init_device_mesh("auto", {2, 4}, {"replicate", "shard"});
  std::string D = M.device_type();
  // Strings as PyTorch prints them (DeviceMesh.__repr__, CuTe layouts).
  EXPECT_EQ(M.to_string(),
            "DeviceMesh((replicate=2, shard=4), '" + D + "', stride=(4, 1))");
  EXPECT_EQ(M["shard"].to_string(),
            "DeviceMesh((shard=4), '" + D + "', stride=(1,))");
  EXPECT_EQ(M.flatten().to_string(),
            "DeviceMesh((replicate_shard=8), '" + D + "', stride=1)");
  EXPECT_EQ((M[{"shard", "replicate"}].to_string()),
            "DeviceMesh((shard=4, replicate=2), '" + D + "', stride=(1, 4))");
  setenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL", 1);
  std::string Detail = M.to_string();
  unsetenv("TORCH_DISTRIBUTED_DEBUG");
  EXPECT_EQ(Detail, "DeviceMesh((replicate=2, shard=4), '" + D +
                        "', stride=(4, 1), Mesh: [[0, 1, 2, 3], [4, 5, 6, "
                        "7]])");
  Rt.finalize();
}

} // namespace
