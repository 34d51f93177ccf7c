//===- DeviceMeshTest.cpp - The C++ API on the tutorial scenarios ---------===//
//
// Runs under mpirun next to CollectivesTest. Checks the DeviceMesh API on the
// seed scenarios - the tutorial's 2-D (replicate, shard) mesh, its 3-D
// slicing with communicator reuse, flatten, DeepSpeed's (data_parallel,
// sequence_parallel) mesh - plus split counts, ordered groups, errors that
// every rank sees alike, independent runtimes, and the C ABI's view of meshes
// made in C++. Expected groups come from BruteMesh, not from the runtime.
//
//===----------------------------------------------------------------------===//

#include "BruteForce.h"
#include "TestBuffers.h"
#include "TestErrors.h"

#include "meshrt/DeviceMesh.h"
#include "meshrt/MeshLayout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <unordered_set>

using namespace meshrt;
using meshrt::test::BruteMesh;
using meshrt::test::Buffer;
using meshrt::test::contains;
using meshrt::test::errorOf;
using meshrt::test::orderedAxisLists;

namespace {

using meshrt::test::worldRank;
using meshrt::test::worldSize;
bool deviceBuffers() { return meshrt::test::useDeviceMemory(); }

/// The backend the test binary runs on (that of the default context), for
/// the extra runtimes the tests start: with Backend::Auto they could pick
/// NCCL on a GPU machine while the test runs with host buffers.
Backend testBackend() {
  meshrt_backend B;
  meshrt_get_backend(&B);
  return Backend(B);
}

std::vector<int64_t> range(int64_t From, int64_t To, int64_t Step = 1) {
  std::vector<int64_t> V;
  for (int64_t I = From; I < To; I += Step)
    V.push_back(I);
  return V;
}

/// all_reduce of one int64 through host or device memory.
int64_t allReduceScalar(const Group &G, int64_t V, ReduceOp Op) {
  Buffer B(8);
  B.upload(&V);
  G.all_reduce(B.get(), B.get(), 1, DType::I64, Op);
  int64_t Out;
  std::memcpy(&Out, B.download().data(), 8);
  return Out;
}

TEST(DeviceMesh, TutorialTwoDimensionalSetup) {
  if (worldSize() != 8)
    GTEST_SKIP() << "the tutorial's (2, 4) mesh needs 8 ranks";
  int64_t R = worldRank();
  Runtime Rt(testBackend()); // A fresh context, so the counters start at zero.
  DeviceMesh Mesh2D =
      Rt.init_device_mesh("auto", {2, 4}, {"replicate", "shard"});
  EXPECT_EQ(Mesh2D.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Mesh2D.ndim(), 2);
  EXPECT_EQ(Mesh2D.size(), 8);
  EXPECT_EQ(Mesh2D.size("shard"), 4);
  EXPECT_EQ(Mesh2D.mesh_dim_names(),
            (std::vector<std::string>{"replicate", "shard"}));
  EXPECT_EQ(Mesh2D.get_coordinate(), (std::vector<int64_t>{R / 4, R % 4}));
  EXPECT_EQ(Mesh2D.get_local_rank("replicate"), R / 4);
  EXPECT_EQ(Mesh2D.get_rank(), R);

  // The tutorial's manual groups: shard (0,1,2,3),(4,5,6,7); replicate
  // (0,4),(1,5),(2,6),(3,7).
  Group Replicate = Mesh2D.get_group("replicate");
  Group Shard = Mesh2D.get_group("shard");
  EXPECT_EQ(Shard.members(), range(R / 4 * 4, R / 4 * 4 + 4));
  EXPECT_EQ(Replicate.members(), (std::vector<int64_t>{R % 4, R % 4 + 4}));
  EXPECT_EQ(Shard.rank(), R % 4);
  EXPECT_EQ(Replicate.rank(), R / 4);
  EXPECT_EQ(allReduceScalar(Shard, R, ReduceOp::Sum), 4 * (R / 4 * 4) + 6);
  EXPECT_EQ(allReduceScalar(Replicate, R, ReduceOp::Max), R % 4 + 4);

  std::string Device = Mesh2D.device_type();
  EXPECT_EQ(Mesh2D.to_string(), "DeviceMesh((replicate=2, shard=4), '" +
                                    Device + "', stride=(4, 1))");
  // One split per dimension; the world is the third communicator.
  Stats S = Rt.stats();
  EXPECT_EQ(S.splits, 2);
  EXPECT_EQ(S.communicators, 3);
  // Getting the groups again creates nothing.
  Mesh2D.get_group("shard");
  EXPECT_EQ(Rt.stats().splits, 2);
  // Dimensions by number, as PyTorch users write them (negative from the
  // end): the same groups, sizes and coordinates, and no new split. (The
  // literal 0 used to convert to a null string_view and crash.)
  EXPECT_EQ(Mesh2D.size(0), 2);
  EXPECT_EQ(Mesh2D.size(-1), 4);
  EXPECT_EQ(Mesh2D.get_local_rank(0), R / 4);
  EXPECT_EQ(Mesh2D.get_local_rank(-1), R % 4);
  EXPECT_EQ(Mesh2D.get_group(0).members(), Replicate.members());
  EXPECT_EQ(Mesh2D.get_group(1).members(), Shard.members());
  EXPECT_EQ(Mesh2D.get_group(-2).members(), Replicate.members());
  EXPECT_EQ(Mesh2D["shard"].get_group(0).members(), Shard.members());
  EXPECT_EQ(Rt.stats().splits, 2);
  Rt.finalize();
}

TEST(DeviceMesh, SlicingReusesCommunicatorsAndFlattenMakesOne) {
  if (worldSize() != 8)
    GTEST_SKIP() << "the tutorial's (2, 2, 2) mesh needs 8 ranks";
  int64_t R = worldRank();
  Runtime Rt(testBackend());
  DeviceMesh Mesh3D =
      Rt.init_device_mesh("auto", {2, 2, 2}, {"replicate", "shard", "tp"});
  EXPECT_EQ(Rt.stats().splits, 3);

  DeviceMesh Hsdp = Mesh3D[{"replicate", "shard"}];
  DeviceMesh Tp = Mesh3D["tp"];
  EXPECT_EQ(Hsdp.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Tp.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(Hsdp.mesh(),
            (std::vector<int64_t>{R % 2, R % 2 + 2, R % 2 + 4, R % 2 + 6}));
  // The sub-meshes hand out the parent's communicators.
  EXPECT_EQ(Hsdp["replicate"].get_group().handle(),
            Mesh3D.get_group("replicate").handle());
  EXPECT_EQ(Hsdp["shard"].get_group().handle(),
            Mesh3D.get_group("shard").handle());
  EXPECT_EQ(Tp.get_group().handle(), Mesh3D.get_group("tp").handle());
  EXPECT_EQ(Tp.get_group().members(),
            (std::vector<int64_t>{R / 2 * 2, R / 2 * 2 + 1}));
  EXPECT_EQ(Rt.stats().splits, 3) << "slicing must not create communicators";
  EXPECT_EQ(Rt.stats().communicators, 4);

  // Flattening (replicate, shard) makes exactly one communicator: the ranks
  // with the same tp coordinate, ordered row-major over (replicate, shard).
  DeviceMesh Dp = Mesh3D.flatten("dp", {"replicate", "shard"});
  EXPECT_EQ(Rt.stats().splits, 4);
  EXPECT_EQ(Dp.shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(Dp.get_group().members(),
            (std::vector<int64_t>{R % 2, R % 2 + 2, R % 2 + 4, R % 2 + 6}));
  EXPECT_EQ(Dp.get_local_rank(), R / 2);
  EXPECT_EQ(Mesh3D.get_group("dp").handle(), Dp.get_group().handle());
  // The same flatten again, or one of the sub-mesh with the same grouping,
  // or one of all axes in mesh order (the world): no new communicator.
  Mesh3D.flatten("dp", {"replicate", "shard"});
  DeviceMesh Dp2 = Hsdp.flatten("dp2");
  DeviceMesh All = Mesh3D.flatten("all");
  EXPECT_EQ(Rt.stats().splits, 4);
  EXPECT_EQ(All.get_group().members(), range(0, 8));
  EXPECT_EQ(allReduceScalar(Dp2.get_group(), 1, ReduceOp::Sum), 4);
  // A flattened name may not hide a real axis or change meaning.
  EXPECT_EQ(errorOf([&] { Mesh3D.flatten("tp", {"replicate"}); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([&] { Mesh3D.flatten("dp", {"shard", "tp"}); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);
  Rt.finalize();
}

TEST(DeviceMesh, DeepSpeedDataAndSequenceParallel) {
  int64_t W = worldSize(), R = worldRank();
  int64_t Sp = W >= 4 ? 4 : W;
  Runtime Rt(testBackend());
  DeviceMesh Mesh = Rt.init_device_mesh("auto", {-1, Sp},
                                        {"data_parallel", "sequence_parallel"});
  // ZeRO sees the data-parallel world size: W / sp.
  int64_t DpSize = Mesh.size("data_parallel");
  EXPECT_EQ(DpSize, W / Sp);
  Group Sequence = Mesh.get_group("sequence_parallel");
  Group Data = Mesh.get_group("data_parallel");
  EXPECT_EQ(Sequence.members(), range(R / Sp * Sp, R / Sp * Sp + Sp));
  EXPECT_EQ(Data.members(), range(R % Sp, W, Sp));
  EXPECT_EQ(Data.size(), DpSize);

  // Ulysses: all_to_all over the sequence group swaps "my sequence chunk of
  // every head group" for "every sequence chunk of my head group".
  const int64_t Chunk = 2;
  std::vector<float> Mine(static_cast<size_t>(Sp * Chunk)),
      Want(static_cast<size_t>(Sp * Chunk));
  for (int64_t Head = 0; Head < Sp; ++Head)
    for (int64_t I = 0; I < Chunk; ++I) {
      Mine[size_t(Head * Chunk + I)] = float(R * 100 + Head * 10 + I);
      int64_t From = Sequence.members()[size_t(Head)];
      Want[size_t(Head * Chunk + I)] =
          float(From * 100 + Sequence.rank() * 10 + I);
    }
  Buffer Send(Mine.size() * 4), Recv(Mine.size() * 4);
  Send.upload(Mine.data());
  Sequence.all_to_all(Send.get(), Recv.get(), Chunk, DType::F32);
  std::vector<unsigned char> Got = Recv.download();
  EXPECT_EQ(std::memcmp(Got.data(), Want.data(), Got.size()), 0);

  // Gradient averaging over data parallel.
  float Grad = float(R % Sp) + float(R / Sp) * 2.0f;
  float WantAvg = float(R % Sp) + float(DpSize - 1); // mean of 2*k, k<DpSize
  Buffer G(4);
  G.upload(&Grad);
  Data.all_reduce(G.get(), G.get(), 1, DType::F32, ReduceOp::Avg);
  float Avg;
  std::memcpy(&Avg, G.download().data(), 4);
  EXPECT_EQ(Avg, WantAvg);
  Rt.finalize();
}

TEST(DeviceMesh, FlattenWithoutANameAllGroupsAndEquality) {
  if (worldSize() != 8)
    GTEST_SKIP() << "a (2, 4) mesh needs 8 ranks";
  int64_t R = worldRank();
  Runtime Rt(testBackend());
  DeviceMesh Mesh = Rt.init_device_mesh("auto", {2, 4}, {"replicate", "shard"});
  // get_all_groups: one per dimension, in order, as get_group(i).
  std::vector<Group> All = Mesh.get_all_groups();
  ASSERT_EQ(All.size(), 2u);
  EXPECT_EQ(All[0].members(), (std::vector<int64_t>{R % 4, R % 4 + 4}));
  EXPECT_EQ(All[1].members(), range(R / 4 * 4, R / 4 * 4 + 4));
  int64_t Splits = Rt.stats().splits;

  // Flattening a 1-D mesh into its own name is that mesh: nothing created.
  DeviceMesh Shard = Mesh["shard"];
  EXPECT_EQ(Shard.flatten("shard"), Shard);
  EXPECT_EQ(Shard.flatten(), Shard);
  EXPECT_EQ(Mesh.flatten("shard", {"shard"}), Shard);
  EXPECT_EQ(Rt.stats().splits, Splits);

  // Without a name, PyTorch's: the names joined by "_". The world serves
  // all axes in mesh order, so still no split; the name reaches the parent.
  DeviceMesh Flat = Mesh.flatten();
  EXPECT_EQ(Flat.mesh_dim_names(),
            (std::vector<std::string>{"replicate_shard"}));
  EXPECT_EQ(Flat.size(), 8);
  EXPECT_EQ(Mesh.get_group("replicate_shard").members(), range(0, 8));
  EXPECT_EQ(Rt.stats().splits, Splits);

  // Equality by value, as PyTorch's __eq__: the same slice twice, a copy;
  // not a different slice, nor the parent. Hash agrees.
  EXPECT_EQ(Mesh["shard"], (Mesh[{"shard"}]));
  EXPECT_EQ(DeviceMesh(Mesh), Mesh);
  EXPECT_NE(Mesh["shard"], Mesh["replicate"]);
  EXPECT_NE(Mesh["shard"], Mesh);
  EXPECT_NE((Mesh[{"shard", "replicate"}]), Mesh);
  EXPECT_EQ(Mesh["shard"].hash(), (Mesh[{"shard"}].hash()));
  std::unordered_set<DeviceMesh> Set = {Mesh, Mesh["shard"], Mesh[{"shard"}]};
  EXPECT_EQ(Set.size(), 2u);
  EXPECT_EQ(DeviceMesh(), DeviceMesh());
  EXPECT_NE(DeviceMesh(), Mesh);
  // Another runtime's mesh of the same shape is another mesh.
  Runtime Other(testBackend());
  EXPECT_NE(Other.init_device_mesh("auto", {2, 4}, {"replicate", "shard"}),
            Mesh);
  Other.finalize();
  Rt.finalize();
}

TEST(DeviceMesh, GroupsFollowTheOrderOfTheDimensions) {
  int64_t W = worldSize(), R = worldRank();
  if (W % 2)
    GTEST_SKIP() << "needs an even number of ranks";
  Runtime Rt(testBackend());
  DeviceMesh Mesh = Rt.init_device_mesh("auto", {2, -1}, {"a", "b"});
  BruteMesh B({2, W / 2});
  for (const auto &Axes : orderedAxisLists(2)) {
    std::vector<std::string> Names;
    for (int64_t A : Axes)
      Names.push_back(A == 0 ? "a" : "b");
    Group G = Mesh.get_group(Names);
    EXPECT_EQ(G.members(), B.members(R, Axes));
    EXPECT_EQ(G.rank(), B.rankInGroup(R, Axes));
    EXPECT_EQ(allReduceScalar(G, 1, ReduceOp::Sum), G.size());
  }
  // [a, b] in mesh order is the world; [], [a], [b] and [b, a] are one split
  // each - except at 2 ranks, where b has size 1 and only [] (= [b]) splits.
  EXPECT_EQ(Rt.stats().splits, W == 2 ? 1 : 4);
  Rt.finalize();
}

TEST(DeviceMesh, SplitsCountDistinctGroupingsNotGroups) {
  int64_t W = worldSize(), R = worldRank();
  std::vector<std::vector<int64_t>> Shapes = {{W}};
  if (W == 8)
    Shapes = {{8}, {2, 4}, {2, 2, 2}};
  else if (W == 4)
    Shapes = {{4}, {2, 2}};
  for (const auto &Shape : Shapes) {
    Runtime Rt(testBackend());
    std::vector<std::string> Names;
    for (size_t I = 0; I < Shape.size(); ++I)
      Names.push_back("d" + std::to_string(I));
    DeviceMesh Mesh = Rt.init_device_mesh("auto", Shape, Names);
    BruteMesh B(Shape);
    std::set<std::vector<std::vector<int64_t>>> Groupings;
    int64_t Lists = 0;
    for (const auto &Axes : orderedAxisLists(int64_t(Shape.size()))) {
      std::vector<std::string> Ns;
      for (int64_t A : Axes)
        Ns.push_back(Names[size_t(A)]);
      Group G = Mesh.get_group(Ns);
      EXPECT_EQ(G.members(), B.members(R, Axes));
      std::vector<std::vector<int64_t>> Grouping;
      for (int64_t Q = 0; Q < W; ++Q)
        Grouping.push_back(B.members(Q, Axes));
      Groupings.insert(Grouping);
      ++Lists;
    }
    // One split per distinct grouping, except the world's (identity) one.
    std::vector<std::vector<int64_t>> World(static_cast<size_t>(W),
                                            range(0, W));
    int64_t Want = int64_t(Groupings.size()) - int64_t(Groupings.count(World));
    Stats S = Rt.stats();
    EXPECT_EQ(S.splits, Want) << MeshLayout::formatShape(Shape);
    EXPECT_EQ(S.communicators, Want + 1);
    EXPECT_GE(S.comm_requests, Lists);
    Rt.finalize();
  }
}

TEST(DeviceMesh, SmallerThanTheWorldCoversItsFirstRanks) {
  // init_device_mesh("cpu", {2}, {"a"}) on a world of 4, as in PyTorch: the
  // mesh is world ranks 0-1; ranks 2-3 have no coordinate and take part in
  // nothing (their collectives on it are errors, not hangs).
  int64_t W = worldSize(), R = worldRank();
  if (W < 2)
    GTEST_SKIP() << "needs 2 ranks";
  Runtime Rt(testBackend());
  for (int64_t N : {int64_t(1), W / 2, W - 1}) {
    DeviceMesh M =
        Rt.init_device_mesh("auto", {N}, {"a"}, "sub" + std::to_string(N));
    EXPECT_EQ(M.size(), N);
    EXPECT_EQ(M.mesh(), range(0, N));
    EXPECT_EQ(M.is_member(), R < N);
    if (R < N) {
      EXPECT_EQ(M.get_coordinate(), (std::vector<int64_t>{R}));
      EXPECT_EQ(allReduceScalar(M.get_group("a"), R + 1, ReduceOp::Sum),
                N * (N + 1) / 2);
    } else {
      EXPECT_TRUE(M.get_coordinate().empty());
      auto [Code, Msg] =
          errorOf([&] { allReduceScalar(M.get_group("a"), 1, ReduceOp::Sum); });
      EXPECT_EQ(Code, MESHRT_ERROR_NOT_MEMBER) << Msg;
    }
  }
  // Two dimensions: (2, N/2) of the first ranks, when the world is larger.
  if (W >= 4) {
    int64_t Half = W / 2;
    DeviceMesh M2 =
        Rt.init_device_mesh("auto", {2, Half / 2}, {"dp", "tp"}, "sub2d");
    EXPECT_EQ(M2.size(), 2 * (Half / 2));
    EXPECT_EQ(M2.is_member(), R < 2 * (Half / 2));
  }
  Rt.finalize();
}

TEST(DeviceMesh, ErrorsAreThrownOnEveryRankAlike) {
  int64_t W = worldSize(), R = worldRank();
  Runtime Rt(testBackend());
  // Sizes whose product is not the world size.
  auto [Code, Msg] =
      errorOf([&] { Rt.init_device_mesh("auto", {W + 1}, {"x"}, "bad"); });
  EXPECT_EQ(Code, MESHRT_ERROR_WORLD_SIZE);
  EXPECT_TRUE(contains(Msg, "needs " + std::to_string(W + 1) +
                                " processes but the world has " +
                                std::to_string(W)))
      << Msg;
  // A '?' that does not divide.
  std::tie(Code, Msg) = errorOf(
      [&] { Rt.init_device_mesh("auto", {W + 1, -1}, {"x", "y"}, "bad2"); });
  EXPECT_EQ(Code, MESHRT_ERROR_WORLD_SIZE);
  EXPECT_TRUE(contains(Msg, "not divisible")) << Msg;

  DeviceMesh Mesh = Rt.init_device_mesh("auto", {1, W}, {"rows", "cols"});
  // Unknown axes list the valid ones, on the mesh and on a sub-mesh.
  std::tie(Code, Msg) = errorOf([&] { Mesh.get_group("tp"); });
  EXPECT_EQ(Code, MESHRT_ERROR_UNKNOWN_AXIS);
  EXPECT_TRUE(contains(Msg, "no dimension 'tp'; valid dimensions: rows, cols"))
      << Msg;
  std::tie(Code, Msg) = errorOf([&] { Mesh["cols"].get_group("rows"); });
  EXPECT_TRUE(contains(Msg, "valid dimensions: cols")) << Msg;
  std::tie(Code, Msg) = errorOf([&] { Mesh.get_group(); });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  // Dimension numbers out of range, and null names: errors, not crashes.
  std::tie(Code, Msg) = errorOf([&] { Mesh.get_group(2); });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(Msg, "DeviceMesh::get_group: dimension 2 is out of "
                            "range for a 2-D mesh (valid: -2 to 1)"))
      << Msg;
  EXPECT_EQ(errorOf([&] { Mesh.size(-3); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([&] { Mesh["cols"].get_local_rank(1); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);
  const char *Null = nullptr;
  std::tie(Code, Msg) = errorOf([&] { Mesh.get_local_rank(Null); });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(Msg, "DeviceMesh::get_local_rank: the dimension name is null"))
      << Msg;
  EXPECT_EQ(errorOf([&] { Mesh.size(Null); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(errorOf([&] { Mesh.get_group(Null); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);
  // A device type other than the runtime's backend asks for the other
  // backend: a mesh on it, or, where NCCL cannot start, an error on every
  // rank naming what is missing.
  std::string Other = Mesh.device_type() == "cpu" ? "cuda" : "cpu";
  std::tie(Code, Msg) =
      errorOf([&] { Rt.init_device_mesh(Other, {W}, {"x"}, "other"); });
  if (Other == "cuda" && !cuda_available()) {
    // MESHRT_ERROR_UNSUPPORTED where meshrt was built without NCCL.
    EXPECT_TRUE(Code == MESHRT_ERROR_BACKEND ||
                Code == MESHRT_ERROR_UNSUPPORTED)
        << Code;
    EXPECT_TRUE(contains(Msg, "cannot start the nccl backend for mesh 'other' "
                              "axes [x]: on rank 0: "))
        << Msg;
  } else if (Other == "cuda" && Code != MESHRT_SUCCESS) {
    // On a GPU node the one refusal is NCCL's: ranks of one node sharing a
    // GPU (the test launched with more processes than GPUs).
    EXPECT_EQ(Code, MESHRT_ERROR_BACKEND);
    EXPECT_TRUE(contains(Msg, "NCCL needs one GPU per process")) << Msg;
  } else {
    EXPECT_EQ(Code, MESHRT_SUCCESS) << Msg;
  }
  EXPECT_EQ(errorOf([&] { Rt.init_device_mesh("tpu", {W}, {"x"}); }).first,
            MESHRT_ERROR_INVALID_ARGUMENT);

  // A mesh declared differently on one rank fails on every rank, naming
  // both declarations, and the runtime stays usable.
  if (W >= 2) {
    std::vector<int64_t> Shape = {1, W};
    if (R == W - 1)
      Shape = {W, 1};
    std::tie(Code, Msg) =
        errorOf([&] { Rt.init_device_mesh("auto", Shape, {"a", "b"}, "m"); });
    EXPECT_EQ(Code, MESHRT_ERROR_MESH_MISMATCH);
    EXPECT_TRUE(contains(Msg, "rank 0 declared 'm' with shape (1, " +
                                  std::to_string(W) + ")"))
        << Msg;
    EXPECT_TRUE(contains(Msg, "rank " + std::to_string(W - 1) +
                                  " declared 'm' with shape (" +
                                  std::to_string(W) + ", 1)"))
        << Msg;
    DeviceMesh M = Rt.init_device_mesh("auto", {1, W}, {"a", "b"}, "m");
    EXPECT_EQ(allReduceScalar(M.get_group("b"), 1, ReduceOp::Sum), W);
  }
  Rt.finalize();
  EXPECT_EQ(errorOf([&] { Mesh.get_group("rows"); }).first,
            MESHRT_ERROR_NOT_INITIALIZED);
}

TEST(DeviceMesh, TwoRuntimesDoNotShareState) {
  int64_t W = worldSize();
  Runtime A(testBackend()), B(testBackend());
  DeviceMesh MA = A.init_device_mesh("auto", {W}, {"x"}, "same-name");
  DeviceMesh MB = B.init_device_mesh("auto", {1, W}, {"y", "x"}, "same-name");
  EXPECT_EQ(allReduceScalar(MA.get_group("x"), 2, ReduceOp::Sum), 2 * W);
  EXPECT_EQ(allReduceScalar(MB.get_group("x"), 3, ReduceOp::Sum), 3 * W);
  EXPECT_EQ(A.stats().meshes, 1);
  EXPECT_EQ(B.stats().meshes, 1);
  EXPECT_EQ(A.stats().splits, 0) << "(W) along its axis is the world";
  EXPECT_EQ(B.stats().splits, W == 1 ? 0 : 1) << "y (size 1) is a split";
  A.finalize();
  // B still works after A is gone.
  EXPECT_EQ(allReduceScalar(MB.get_group("x"), 1, ReduceOp::Sum), W);
  B.finalize();
}

TEST(DeviceMesh, TypedHelpersOnHostMemory) {
  if (deviceBuffers())
    GTEST_SKIP() << "the vector helpers use host memory (MPI backend)";
  int64_t W = worldSize(), R = worldRank();
  DeviceMesh Mesh = init_device_mesh("auto", {W}, {"w"}, "typed");
  Group G = Mesh.get_group("w");
  std::vector<Half> Gathered = G.all_gather(std::vector<Half>{Half(float(R))});
  for (int64_t I = 0; I < W; ++I)
    EXPECT_EQ(float(Gathered[size_t(I)]), float(I));
  std::vector<BFloat16> All(static_cast<size_t>(W), BFloat16(1.0f));
  std::vector<BFloat16> Mine = G.reduce_scatter(All, ReduceOp::Sum);
  ASSERT_EQ(Mine.size(), 1u);
  EXPECT_EQ(float(Mine[0]), float(W));
  std::vector<int32_t> Blocks(static_cast<size_t>(W));
  std::iota(Blocks.begin(), Blocks.end(), int32_t(R * 100));
  std::vector<int32_t> T = G.all_to_all(Blocks);
  for (int64_t I = 0; I < W; ++I)
    EXPECT_EQ(T[size_t(I)], int32_t(I * 100 + R));
  std::vector<double> V = {double(R), double(R)};
  G.broadcast(V, W - 1);
  EXPECT_EQ(V, (std::vector<double>{double(W - 1), double(W - 1)}));
  std::vector<float> Shifted =
      G.permute(std::vector<float>{float(R)}, 1, false);
  EXPECT_EQ(Shifted[0], R == 0 ? 0.0f : float(R - 1));
  std::vector<int64_t> Sum = {R, 1};
  G.all_reduce(Sum);
  EXPECT_EQ(Sum, (std::vector<int64_t>{W * (W - 1) / 2, W}));
  std::vector<uint8_t> Bits = {uint8_t(1u << (R % 8))};
  G.all_reduce(Bits, ReduceOp::BitOr);
  EXPECT_EQ(Bits[0], uint8_t(W >= 8 ? 0xff : (1u << W) - 1));
  if (W > 1)
    EXPECT_THROW(G.all_to_all(std::vector<int32_t>(size_t(W) + 1)), Error);
}

TEST(DeviceMesh, CAbiSeesMeshesMadeInCxx) {
  int64_t W = worldSize(), R = worldRank();
  DeviceMesh Mesh =
      init_device_mesh("auto", {1, W}, {"rows", "cols"}, "shared");
  meshrt_mesh_t Handle = nullptr;
  ASSERT_EQ(meshrt_mesh_lookup("shared", &Handle), MESHRT_SUCCESS);
  EXPECT_EQ(Handle, Mesh.handle());
  int64_t Index = -1, Size = -1, Coord = -1;
  EXPECT_EQ(meshrt_mesh_axis_index(Handle, "cols", &Index), MESHRT_SUCCESS);
  EXPECT_EQ(Index, 1);
  EXPECT_EQ(meshrt_mesh_axis_size(Handle, 1, &Size), MESHRT_SUCCESS);
  EXPECT_EQ(Size, W);
  EXPECT_EQ(meshrt_mesh_coordinate(Handle, 1, &Coord), MESHRT_SUCCESS);
  EXPECT_EQ(Coord, R);
  EXPECT_EQ(meshrt_mesh_axis_index(Handle, "tp", &Index),
            MESHRT_ERROR_UNKNOWN_AXIS);
  EXPECT_TRUE(contains(meshrt_last_error(), "valid axes: rows, cols"))
      << meshrt_last_error();
  // A flattened name made in C++ works by name in the C ABI.
  Mesh.flatten("everything");
  const char *Names[] = {"everything"};
  meshrt_comm_t C = nullptr;
  ASSERT_EQ(meshrt_comm_get_by_names(Handle, 1, Names, &C), MESHRT_SUCCESS);
  EXPECT_EQ(C, Mesh.get_group({"rows", "cols"}).handle());
  // Redeclaring identically is free; differently is an error on this rank.
  const int64_t Sizes[] = {1, W};
  const char *Axes[] = {"rows", "cols"};
  meshrt_mesh_t Again = nullptr;
  meshrt_stats Before, After;
  meshrt_get_stats(&Before);
  EXPECT_EQ(meshrt_mesh_declare("shared", 2, Sizes, Axes, &Again),
            MESHRT_SUCCESS);
  EXPECT_EQ(Again, Handle);
  meshrt_get_stats(&After);
  EXPECT_EQ(After.meshes, Before.meshes);
  const char *Other[] = {"r", "c"};
  EXPECT_EQ(meshrt_mesh_declare("shared", 2, Sizes, Other, &Again),
            MESHRT_ERROR_MESH_MISMATCH);
  EXPECT_EQ(meshrt_mesh_lookup("nope", &Again), MESHRT_ERROR_UNKNOWN_MESH);
  EXPECT_EQ(meshrt_mesh_coordinate(Handle, 2, &Coord),
            MESHRT_ERROR_INVALID_ARGUMENT);
  const int64_t Dup[] = {1, 1};
  EXPECT_EQ(meshrt_comm_get(Handle, 2, Dup, &C), MESHRT_ERROR_INVALID_ARGUMENT);
}

} // namespace
