//===- MeshLayoutTest.cpp - Rank math against brute force -----------------===//
//
// Checks MeshLayout (coordinates, groups, ranks in group, colors, group keys,
// world reuse, shape resolution) against BruteMesh for every axis subset and
// order of the meshes (8), (2,4), (4,2), (2,2,2), (1,8), (3,5), (2,3,4) and a
// few more. No communication.
//
//===----------------------------------------------------------------------===//

#include "BruteForce.h"

#include "meshrt/Error.h"
#include "meshrt/MeshLayout.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace meshrt;
using meshrt::test::BruteMesh;
using meshrt::test::orderedAxisLists;

namespace {

std::string str(const std::vector<int64_t> &V) {
  std::string S = "[";
  for (size_t I = 0; I < V.size(); ++I)
    S += (I ? "," : "") + std::to_string(V[I]);
  return S + "]";
}

const std::vector<std::vector<int64_t>> &testShapes() {
  static const std::vector<std::vector<int64_t>> Shapes = {
      {8}, {2, 4}, {4, 2},    {2, 2, 2}, {1, 8},    {3, 5}, {2, 3, 4}, {1},
      {},  {8, 1}, {2, 1, 4}, {4, 3, 2}, {1, 1, 1}, {6, 4}, {2, 2, 6}};
  return Shapes;
}

class LayoutVsBruteForce
    : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(LayoutVsBruteForce, CoordinatesAreRowMajor) {
  MeshLayout L(GetParam());
  BruteMesh B(GetParam());
  ASSERT_EQ(L.numRanks(), B.numRanks());
  for (int64_t R = 0; R < B.numRanks(); ++R) {
    EXPECT_EQ(L.coordinates(R), B.coords(R)) << "rank " << R;
    EXPECT_EQ(L.rankOf(B.coords(R)), R);
  }
}

TEST_P(LayoutVsBruteForce, EveryOrderedAxisList) {
  MeshLayout L(GetParam());
  BruteMesh B(GetParam());
  auto Lists = orderedAxisLists(L.ndims());
  for (const auto &Axes : Lists) {
    // Colors: same color iff same member set; in [0, NumGroups).
    std::map<int64_t, std::set<int64_t>> ByColor;
    for (int64_t R = 0; R < B.numRanks(); ++R) {
      SCOPED_TRACE("shape " + MeshLayout::formatShape(GetParam()) + " axes " +
                   str(Axes) + " rank " + std::to_string(R));
      std::vector<int64_t> Expected = B.members(R, Axes);
      GroupPosition P = L.position(R, Axes);
      EXPECT_EQ(L.groupMembers(R, Axes), Expected);
      EXPECT_EQ(P.RankInGroup, B.rankInGroup(R, Axes));
      EXPECT_EQ(P.Size, int64_t(Expected.size()));
      EXPECT_EQ(P.NumGroups * P.Size, B.numRanks());
      EXPECT_GE(P.Color, 0);
      EXPECT_LT(P.Color, P.NumGroups);
      ByColor[P.Color].insert(R);
      std::set<int64_t> Set(Expected.begin(), Expected.end());
      EXPECT_EQ(ByColor[P.Color].count(R), 1u);
      for (int64_t Q : ByColor[P.Color])
        EXPECT_TRUE(Set.count(Q)) << "rank " << Q << " shares color " << P.Color
                                  << " but is not in the group";
    }
    EXPECT_EQ(int64_t(ByColor.size()), L.position(0, Axes).NumGroups)
        << "axes " << str(Axes);
  }
}

TEST_P(LayoutVsBruteForce, WorldGroupIsFullIdentity) {
  MeshLayout L(GetParam());
  BruteMesh B(GetParam());
  for (const auto &Axes : orderedAxisLists(L.ndims())) {
    bool Identity = true;
    for (int64_t R = 0; R < B.numRanks(); ++R) {
      std::vector<int64_t> M = B.members(R, Axes);
      if (int64_t(M.size()) != B.numRanks() || B.rankInGroup(R, Axes) != R)
        Identity = false;
    }
    EXPECT_EQ(L.isWorldGroup(Axes), Identity)
        << MeshLayout::formatShape(GetParam()) << " axes " << str(Axes);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayoutVsBruteForce,
                         ::testing::ValuesIn(testShapes()));

// Two (shape, axes) pairs with the same number of ranks may share a
// communicator exactly when every rank gets the same members in the same
// order. The key must say "same" in exactly those cases.
TEST(GroupKey, EqualIffSameGroupingAcrossShapes) {
  struct Entry {
    std::vector<int64_t> Shape, Axes;
    GroupKey Key;
    std::vector<std::vector<int64_t>> Groups; // Per rank, ordered members.
  };
  std::map<int64_t, std::vector<Entry>> ByWorld;
  for (const auto &Shape : testShapes()) {
    MeshLayout L(Shape);
    BruteMesh B(Shape);
    for (const auto &Axes : orderedAxisLists(L.ndims())) {
      Entry E{Shape, Axes, L.groupKey(Axes), {}};
      for (int64_t R = 0; R < B.numRanks(); ++R)
        E.Groups.push_back(B.members(R, Axes));
      ByWorld[B.numRanks()].push_back(std::move(E));
    }
  }
  int64_t Pairs = 0, Shared = 0;
  for (auto &[World, Entries] : ByWorld)
    for (const Entry &A : Entries)
      for (const Entry &B : Entries) {
        ++Pairs;
        bool SameGrouping = A.Groups == B.Groups;
        Shared += SameGrouping;
        EXPECT_EQ(A.Key == B.Key, SameGrouping)
            << MeshLayout::formatShape(A.Shape) << str(A.Axes) << " vs "
            << MeshLayout::formatShape(B.Shape) << str(B.Axes);
      }
  EXPECT_GT(Shared, 0);
  EXPECT_GT(Pairs, 1000);
}

TEST(GroupKey, ExamplesFromTheContract) {
  // (2,4): full mesh in mesh order is the world; the other order is not.
  MeshLayout L({2, 4});
  EXPECT_TRUE(L.isWorldGroup({0, 1}));
  EXPECT_FALSE(L.isWorldGroup({1, 0}));
  EXPECT_FALSE(L.isWorldGroup({1}));
  // (1,8) along its only non-trivial axis is the world as well.
  EXPECT_TRUE(MeshLayout({1, 8}).isWorldGroup({1}));
  EXPECT_TRUE(MeshLayout({1, 8}).isWorldGroup({0, 1}));
  EXPECT_FALSE(MeshLayout({1, 8}).isWorldGroup({0}));
  // A world of one is always served by the world.
  EXPECT_TRUE(MeshLayout({1, 1}).isWorldGroup({}));
  // ["shard", "replicate"] orders members differently.
  EXPECT_EQ(L.groupMembers(5, {0, 1}),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(L.groupMembers(5, {1, 0}),
            (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(L.position(5, {1, 0}).RankInGroup, 3);
  // Tutorial groups: replicate = columns, shard = rows.
  EXPECT_EQ(L.groupMembers(6, {0}), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(L.groupMembers(6, {1}), (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(ResolveShape, DynamicAndErrors) {
  EXPECT_EQ(MeshLayout::resolveShape({2, -1}, 8), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(MeshLayout::resolveShape({-1}, 5), (std::vector<int64_t>{5}));
  EXPECT_EQ(MeshLayout::resolveShape({-1, 2, 2}, 8),
            (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(MeshLayout::resolveShape({}, 1), (std::vector<int64_t>{}));
  auto Message = [](std::vector<int64_t> S, int64_t W) -> std::string {
    try {
      MeshLayout::resolveShape(S, W);
    } catch (const Error &E) {
      return std::to_string(E.status()) + ":" + E.what();
    }
    return "no error";
  };
  EXPECT_EQ(Message({3, 3}, 8),
            "3:mesh shape (3, 3) needs 9 processes but the world has 8 "
            "processes (launch with mpirun -n 9 or torchrun "
            "--nproc_per_node=9, or make one size -1 to fit any world)");
  EXPECT_NE(Message({3, -1}, 8).find("not divisible"), std::string::npos);
  EXPECT_NE(Message({-1, -1}, 8).find("more than one dynamic"),
            std::string::npos);
  EXPECT_NE(Message({0, 8}, 8).find("sizes must be >= 1"), std::string::npos);
  EXPECT_EQ(Message({}, 2).substr(0, 2), "3:");
  EXPECT_EQ(Message(std::vector<int64_t>(17, 1), 1).substr(0, 2), "1:");
}

TEST(CheckAxes, RejectsDuplicatesAndRange) {
  MeshLayout L({2, 2, 2});
  EXPECT_NO_THROW(L.checkAxes({2, 0}));
  EXPECT_THROW(L.checkAxes({0, 0}), Error);
  EXPECT_THROW(L.checkAxes({3}), Error);
  EXPECT_THROW(L.checkAxes({-1}), Error);
  EXPECT_THROW(L.position(0, {1, 1}), Error);
  EXPECT_THROW(MeshLayout({2, 0}), Error);
}

TEST(FormatShape, PrintsDynamicAsQuestionMark) {
  EXPECT_EQ(MeshLayout::formatShape({2, -1}), "(2, ?)");
  EXPECT_EQ(MeshLayout::formatShape({8}), "(8,)");
  EXPECT_EQ(MeshLayout::formatShape({}), "()");
}

TEST(MeshLayout, ModesAreSizesAndRowMajorStrides) {
  // The layout of an axis list: each axis's size and its distance in the
  // row-major rank array, against the brute-force coordinates.
  for (std::vector<int64_t> Shape :
       {std::vector<int64_t>{2, 4}, {2, 3, 4}, {1, 8}, {3, 1, 5}}) {
    MeshLayout L(Shape);
    BruteMesh B(Shape);
    for (const auto &Axes : orderedAxisLists(int64_t(Shape.size()))) {
      std::vector<LayoutMode> M = L.modes(Axes);
      ASSERT_EQ(M.size(), Axes.size());
      for (size_t J = 0; J < Axes.size(); ++J) {
        EXPECT_EQ(M[J].Size, Shape[size_t(Axes[J])]);
        // Moving one step along the axis moves Stride positions.
        if (M[J].Size > 1) {
          std::vector<int64_t> C = B.coords(0);
          C[size_t(Axes[J])] = 1;
          int64_t Pos = 0;
          while (B.coords(Pos) != C)
            ++Pos;
          EXPECT_EQ(M[J].Stride, Pos);
        }
      }
    }
    EXPECT_THROW(L.modes({int64_t(Shape.size())}), Error);
    EXPECT_THROW(L.modes({0, 0}), Error);
  }
}

TEST(OrderedAxisLists, Counts) {
  EXPECT_EQ(orderedAxisLists(0).size(), 1u);
  EXPECT_EQ(orderedAxisLists(2).size(), 5u);
  EXPECT_EQ(orderedAxisLists(3).size(), 16u);
}

} // namespace
