//===- ReshardingTest.cpp - the planner against an exhaustive search ------===//
//
// For every pair of shardings of a 64x64 f32 tensor on the meshes (8),
// (2, 4) and (2, 2, 2), the plan of planResharding must reach the target
// and send as few bytes per device as the cheapest plan an exhaustive
// search finds. The search here is independent of the planner's: it relaxes
// every step from every layout until no price improves (Bellman-Ford), with
// its own list of steps and its own prices, in bytes.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace mlir;
using namespace mlir::mesh;

namespace {

constexpr int64_t kDimSize = 64;
constexpr int64_t kTensorBytes = kDimSize * kDimSize * 4;

using Axes = std::vector<std::string>;

struct Mesh {
  std::vector<std::pair<std::string, int64_t>> axes;
  int64_t size(const std::string &axis) const {
    for (const auto &[name, n] : axes)
      if (name == axis)
        return n;
    ADD_FAILURE() << "no axis " << axis;
    return 1;
  }
  int64_t size(const Axes &group) const {
    int64_t n = 1;
    for (const std::string &axis : group)
      n *= size(axis);
    return n;
  }
};

/// A rank-2 layout: the axes of each dim and the pending (sum) reduction's.
struct Layout {
  Axes dims[2];
  std::set<std::string> partial;
  bool operator<(const Layout &o) const {
    return std::tie(dims[0], dims[1], partial) <
           std::tie(o.dims[0], o.dims[1], o.partial);
  }
  bool operator==(const Layout &o) const {
    return !(*this < o) && !(o < *this);
  }
  bool uses(const std::string &axis) const {
    return partial.count(axis) ||
           std::count(dims[0].begin(), dims[0].end(), axis) ||
           std::count(dims[1].begin(), dims[1].end(), axis);
  }
  std::string str() const {
    std::string s = "[";
    for (int d = 0; d < 2; ++d) {
      s += d ? ", [" : "[";
      for (size_t i = 0; i < dims[d].size(); ++i)
        s += (i ? ", " : "") + dims[d][i];
      s += "]";
    }
    s += "]";
    if (!partial.empty()) {
      s += " partial sum [";
      for (const std::string &a : partial)
        s += a + " ";
      s += "]";
    }
    return s;
  }
};

/// True when every axis of `axes` is in `of`.
bool isSubset(const Axes &axes, const Axes &of) {
  for (const std::string &a : axes)
    if (std::find(of.begin(), of.end(), a) == of.end())
      return false;
  return true;
}

/// Every way to place some of `axes`, in some order, on two dims.
void enumerateDims(const std::vector<std::string> &axes, size_t next,
                   Layout &cur, std::vector<Layout> &out) {
  if (next == axes.size()) {
    out.push_back(cur);
    return;
  }
  // Unused, or inserted at any position of either dim.
  enumerateDims(axes, next + 1, cur, out);
  for (int d = 0; d < 2; ++d)
    for (size_t pos = 0; pos <= cur.dims[d].size(); ++pos) {
      cur.dims[d].insert(cur.dims[d].begin() + pos, axes[next]);
      enumerateDims(axes, next + 1, cur, out);
      cur.dims[d].erase(cur.dims[d].begin() + pos);
    }
}

/// The bytes per device of one step on a block of `block` bytes in a group
/// of `g` (ring algorithms).
int64_t stepBytes(const std::string &kind, int64_t block, int64_t g) {
  if (kind == "all_reduce")
    return 2 * (g - 1) * block / g;
  if (kind == "reduce_scatter" || kind == "all_to_all")
    return (g - 1) * block / g;
  if (kind == "all_gather")
    return (g - 1) * block;
  return 0;
}

int64_t blockBytes(const Mesh &mesh, const Layout &l) {
  return kTensorBytes / mesh.size(l.dims[0]) / mesh.size(l.dims[1]);
}

/// Every subset of `items`, then every order of it, as lists.
std::vector<Axes> orderedSubsets(const Axes &items) {
  std::vector<Axes> out;
  for (unsigned mask = 1; mask < (1u << items.size()); ++mask) {
    Axes subset;
    for (size_t i = 0; i < items.size(); ++i)
      if (mask & (1u << i))
        subset.push_back(items[i]);
    std::sort(subset.begin(), subset.end());
    do
      out.push_back(subset);
    while (std::next_permutation(subset.begin(), subset.end()));
  }
  return out;
}

/// Every step from `from` towards a target that keeps `kept` pending and
/// splits dims over `targetAxes`, with its price; the rules of the planner's
/// documentation, written again.
std::vector<std::pair<Layout, int64_t>>
successors(const Mesh &mesh, const Layout &from,
           const std::set<std::string> &kept, const Axes &targetAxes) {
  std::vector<std::pair<Layout, int64_t>> out;
  int64_t block = blockBytes(mesh, from);
  Axes finishable;
  for (const std::string &a : from.partial)
    if (!kept.count(a))
      finishable.push_back(a);
  for (const Axes &group : orderedSubsets(finishable)) {
    Layout reduced = from;
    for (const std::string &a : group)
      reduced.partial.erase(a);
    int64_t g = mesh.size(group);
    out.push_back({reduced, stepBytes("all_reduce", block, g)});
    for (int d = 0; d < 2; ++d) {
      Layout next = reduced;
      next.dims[d].insert(next.dims[d].end(), group.begin(), group.end());
      out.push_back({next, stepBytes("reduce_scatter", block, g)});
    }
  }
  for (int d = 0; d < 2; ++d)
    for (size_t len = 1; len <= from.dims[d].size(); ++len) {
      Axes group(from.dims[d].end() - len, from.dims[d].end());
      int64_t g = mesh.size(group);
      Layout gathered = from;
      gathered.dims[d].resize(from.dims[d].size() - len);
      out.push_back({gathered, stepBytes("all_gather", block, g)});
      Layout moved = gathered;
      moved.dims[1 - d].insert(moved.dims[1 - d].end(), group.begin(),
                               group.end());
      out.push_back({moved, stepBytes("all_to_all", block, g)});
    }
  Axes free;
  for (const std::string &a : targetAxes)
    if (!from.uses(a))
      free.push_back(a);
  for (const Axes &group : orderedSubsets(free))
    for (int d = 0; d < 2; ++d) {
      Layout next = from;
      next.dims[d].insert(next.dims[d].end(), group.begin(), group.end());
      out.push_back({next, 0});
    }
  return out;
}

/// The cheapest price from `source` to every layout, over plans of any
/// length: relax every step until nothing improves.
std::map<Layout, int64_t> cheapest(const Mesh &mesh, const Layout &source,
                                   const std::set<std::string> &kept,
                                   const Axes &targetAxes) {
  std::map<Layout, int64_t> price{{source, 0}};
  for (bool changed = true; changed;) {
    changed = false;
    std::map<Layout, int64_t> now = price;
    for (const auto &[layout, bytes] : now)
      for (const auto &[next, step] :
           successors(mesh, layout, kept, targetAxes)) {
        auto it = price.find(next);
        if (it == price.end() || bytes + step < it->second) {
          price[next] = bytes + step;
          changed = true;
        }
      }
  }
  return price;
}

ShardingLayout toShardingLayout(const Layout &l) {
  ShardingLayout out;
  for (const Axes &axes : l.dims)
    out.dims.emplace_back(axes.begin(), axes.end());
  for (const std::string &a : l.partial)
    out.partial.push_back(a);
  return out;
}

/// Why `l` cannot hold a 64x64 tensor on `mesh` (empty: it can).
std::string checkDivides(const Mesh &mesh, const Layout &l) {
  for (int d = 0; d < 2; ++d)
    if (kDimSize % mesh.size(l.dims[d]) != 0)
      return "dim " + std::to_string(d) + " does not divide";
  return "";
}

/// `steps` replayed on `from`: each must be legal there (its axes where the
/// step needs them, and `check` of the layout it reaches empty); returns the
/// layout reached and the bytes, or nothing with a failure recorded.
std::optional<std::pair<Layout, int64_t>>
replay(const Mesh &mesh, Layout cur, ArrayRef<ReshardStep> steps,
       const std::function<std::string(const Layout &)> &check) {
  int64_t total = 0;
  for (const ReshardStep &step : steps) {
    Axes group(step.axes.begin(), step.axes.end());
    int64_t g = mesh.size(group);
    int64_t block = blockBytes(mesh, cur);
    auto isSuffix = [&](int64_t d) {
      return d >= 0 && d < 2 && cur.dims[d].size() >= group.size() &&
             std::equal(group.begin(), group.end(),
                        cur.dims[d].end() - group.size());
    };
    auto isFree = [&] {
      for (const std::string &a : group)
        if (cur.uses(a))
          return false;
      return true;
    };
    std::string kind;
    switch (step.kind) {
    case ReshardStep::Kind::AllReduce:
    case ReshardStep::Kind::ReduceScatter:
      kind = step.kind == ReshardStep::Kind::AllReduce ? "all_reduce"
                                                       : "reduce_scatter";
      for (const std::string &a : group)
        if (!cur.partial.erase(a)) {
          ADD_FAILURE() << kind << " over " << a << ", not pending";
          return std::nullopt;
        }
      if (step.kind == ReshardStep::Kind::ReduceScatter) {
        if (step.dim < 0 || step.dim > 1) {
          ADD_FAILURE() << "reduce_scatter onto dim " << step.dim;
          return std::nullopt;
        }
        cur.dims[step.dim].insert(cur.dims[step.dim].end(), group.begin(),
                                  group.end());
      }
      break;
    case ReshardStep::Kind::AllGather:
      kind = "all_gather";
      if (!isSuffix(step.dim)) {
        ADD_FAILURE() << "all_gather of a group not at the minor end";
        return std::nullopt;
      }
      cur.dims[step.dim].resize(cur.dims[step.dim].size() - group.size());
      break;
    case ReshardStep::Kind::AllToAll:
      kind = "all_to_all";
      if (!isSuffix(step.concatDim) || step.dim < 0 || step.dim > 1 ||
          step.dim == step.concatDim) {
        ADD_FAILURE() << "all_to_all of a group not at the minor end";
        return std::nullopt;
      }
      cur.dims[step.concatDim].resize(cur.dims[step.concatDim].size() -
                                      group.size());
      cur.dims[step.dim].insert(cur.dims[step.dim].end(), group.begin(),
                                group.end());
      break;
    case ReshardStep::Kind::AllSlice:
      kind = "all_slice";
      if (!isFree() || step.dim < 0 || step.dim > 1) {
        ADD_FAILURE() << "all_slice over axes in use";
        return std::nullopt;
      }
      cur.dims[step.dim].insert(cur.dims[step.dim].end(), group.begin(),
                                group.end());
      break;
    }
    if (group.empty() ||
        std::set<std::string>(group.begin(), group.end()).size() !=
            group.size()) {
      ADD_FAILURE() << kind << " over an empty or repeated group";
      return std::nullopt;
    }
    if (std::string why = check(cur); !why.empty()) {
      ADD_FAILURE() << kind << " reaches " << cur.str() << ": " << why;
      return std::nullopt;
    }
    total += stepBytes(kind, block, g);
  }
  return std::make_pair(cur, total);
}

TEST(ReshardingPlanner, BytesEqualExhaustiveSearch) {
  std::vector<Mesh> meshes = {
      {{{"x", 8}}},
      {{{"a", 2}, {"b", 4}}},
      {{{"a", 2}, {"b", 2}, {"c", 2}}},
  };
  int64_t pairs = 0;
  for (const Mesh &mesh : meshes) {
    std::vector<std::string> names;
    for (const auto &axis : mesh.axes)
      names.push_back(axis.first);
    std::vector<Layout> targets;
    Layout empty;
    enumerateDims(names, 0, empty, targets);
    // Sources: every target layout, with a pending sum over any subset of
    // the axes it leaves unused.
    std::vector<Layout> sources;
    for (const Layout &l : targets) {
      Axes unused;
      for (const std::string &a : names)
        if (!l.uses(a))
          unused.push_back(a);
      for (unsigned mask = 0; mask < (1u << unused.size()); ++mask) {
        Layout s = l;
        for (size_t i = 0; i < unused.size(); ++i)
          if (mask & (1u << i))
            s.partial.insert(unused[i]);
        sources.push_back(s);
      }
    }
    auto axisSize = [&](StringRef a) { return mesh.size(a.str()); };
    int64_t shape[] = {kDimSize, kDimSize};
    for (const Layout &src : sources) {
      // Targets keep none, or all, of the source's pending reductions.
      for (bool keep : {false, true}) {
        if (keep && src.partial.empty())
          continue;
        std::map<Axes, std::map<Layout, int64_t>> prices;
        for (Layout dst : targets) {
          bool clash = false;
          for (const std::string &a : src.partial)
            clash |= dst.uses(a) && keep;
          if (clash)
            continue;
          if (keep)
            dst.partial = src.partial;
          Axes targetAxes(dst.dims[0]);
          targetAxes.insert(targetAxes.end(), dst.dims[1].begin(),
                            dst.dims[1].end());
          std::sort(targetAxes.begin(), targetAxes.end());
          auto it = prices.find(targetAxes);
          if (it == prices.end())
            it = prices
                     .emplace(targetAxes,
                              cheapest(mesh, src, dst.partial, targetAxes))
                     .first;
          std::string whyNot;
          FailureOr<SmallVector<ReshardStep>> plan =
              planResharding(toShardingLayout(src), toShardingLayout(dst),
                             shape, axisSize, whyNot);
          ASSERT_TRUE(succeeded(plan)) << whyNot;
          std::optional<std::pair<Layout, int64_t>> end =
              replay(mesh, src, *plan,
                     [&](const Layout &l) { return checkDivides(mesh, l); });
          ASSERT_TRUE(end) << src.str() << " -> " << dst.str();
          EXPECT_EQ(end->first, dst) << src.str() << " -> " << dst.str()
                                     << " ends at " << end->first.str();
          auto best = it->second.find(dst);
          ASSERT_NE(best, it->second.end()) << dst.str();
          EXPECT_EQ(end->second, best->second)
              << src.str() << " -> " << dst.str();
          // The partitioner's price of a plan is the same count.
          EXPECT_EQ(getPlanBytes(toShardingLayout(src), *plan, kTensorBytes,
                                 axisSize),
                    end->second)
              << src.str() << " -> " << dst.str();
          ++pairs;
        }
      }
    }
  }
  std::cout << "checked " << pairs << " pairs of shardings\n";
}

/// With a `?` axis and a dim of dynamic size, sizes cannot be checked: every
/// layout a plan passes through must split dim 0 (dynamic) and any dim over
/// the `?` axis only over axes its source or its target splits it over, and
/// the plan must still reach the target.
/// mesh-auto-shard keeps one plan per renaming of axes of equal size (and
/// per class of shape): the planner must see axes only through the order
/// it meets them and their sizes. For every pair of layouts, and every
/// renaming that keeps sizes, the plan of the renamed pair is the plan of
/// the pair, renamed, step for step (or both fail).
TEST(ReshardingPlanner, PlansFollowRenamingOfEqualAxes) {
  struct Case {
    Mesh mesh;
    std::vector<std::map<std::string, std::string>> renamings;
  };
  std::vector<Case> cases = {
      {{{{"a", 2}, {"b", 2}, {"c", 2}}},
       {{{"a", "b"}, {"b", "c"}, {"c", "a"}},
        {{"a", "c"}, {"b", "b"}, {"c", "a"}},
        {{"a", "b"}, {"b", "a"}, {"c", "c"}}}},
      {{{{"a", 2}, {"b", 4}, {"c", 2}}},
       {{{"a", "c"}, {"b", "b"}, {"c", "a"}}}},
  };
  auto rename = [](ShardingLayout l,
                   const std::map<std::string, std::string> &to) {
    for (auto &axes : l.dims)
      for (std::string &a : axes)
        a = to.at(a);
    for (std::string &a : l.partial)
      a = to.at(a);
    return l;
  };
  int64_t compared = 0;
  for (const Case &c : cases) {
    std::vector<std::string> names;
    for (const auto &axis : c.mesh.axes)
      names.push_back(axis.first);
    std::vector<Layout> layouts;
    Layout empty;
    enumerateDims(names, 0, empty, layouts);
    auto axisSize = [&](StringRef a) { return c.mesh.size(a.str()); };
    // A dim of 2 fits one axis of size 2 only: plans must go around it.
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{64, 64}, std::vector<int64_t>{64, 2}}) {
      for (const Layout &s : layouts) {
        // The source with a pending sum over its first unused axis, too.
        std::vector<ShardingLayout> sources = {toShardingLayout(s)};
        for (const std::string &a : names)
          if (!s.uses(a)) {
            sources.push_back(toShardingLayout(s));
            sources.back().partial.push_back(a);
            break;
          }
        for (const ShardingLayout &src : sources)
          for (const Layout &d : layouts) {
            ShardingLayout dst = toShardingLayout(d);
            std::string why;
            FailureOr<SmallVector<ReshardStep>> plan =
                planResharding(src, dst, shape, axisSize, why);
            for (const auto &to : c.renamings) {
              FailureOr<SmallVector<ReshardStep>> renamed = planResharding(
                  rename(src, to), rename(dst, to), shape, axisSize, why);
              ASSERT_EQ(succeeded(plan), succeeded(renamed));
              if (failed(plan))
                continue;
              ASSERT_EQ(plan->size(), renamed->size());
              for (auto [p, r] : llvm::zip(*plan, *renamed)) {
                EXPECT_EQ(p.kind, r.kind);
                EXPECT_EQ(p.dim, r.dim);
                EXPECT_EQ(p.concatDim, r.concatDim);
                ASSERT_EQ(p.axes.size(), r.axes.size());
                for (auto [pa, ra] : llvm::zip(p.axes, r.axes))
                  EXPECT_EQ(to.at(pa), ra);
              }
              ++compared;
            }
          }
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

TEST(ReshardingPlanner, UnknownSizesStayWithinSourceAndTarget) {
  // Bytes are replayed with "u" as 16 devices, the planner's price for `?`.
  Mesh mesh{{{"u", 16}, {"b", 4}}};
  auto axisSize = [](StringRef a) {
    return a == "u" ? ShapedType::kDynamic : int64_t(4);
  };
  int64_t shape[] = {ShapedType::kDynamic, kDimSize};
  std::vector<Layout> layouts;
  Layout empty;
  enumerateDims({"u", "b"}, 0, empty, layouts);
  int64_t pairs = 0;
  for (const Layout &src : layouts)
    for (const Layout &dst : layouts) {
      auto check = [&](const Layout &l) -> std::string {
        for (int d = 0; d < 2; ++d) {
          const Axes &axes = l.dims[d];
          bool unknown =
              d == 0 || std::find(axes.begin(), axes.end(), "u") != axes.end();
          if (unknown && !isSubset(axes, src.dims[d]) &&
              !isSubset(axes, dst.dims[d]))
            return "dim " + std::to_string(d) +
                   " takes axes neither its source nor its target has";
          if (!unknown && kDimSize % mesh.size(axes) != 0)
            return "dim " + std::to_string(d) + " does not divide";
        }
        return "";
      };
      std::string whyNot;
      FailureOr<SmallVector<ReshardStep>> plan =
          planResharding(toShardingLayout(src), toShardingLayout(dst), shape,
                         axisSize, whyNot);
      ASSERT_TRUE(succeeded(plan)) << whyNot;
      std::optional<std::pair<Layout, int64_t>> end =
          replay(mesh, src, *plan, check);
      ASSERT_TRUE(end) << src.str() << " -> " << dst.str();
      EXPECT_EQ(end->first, dst) << src.str() << " -> " << dst.str();
      ++pairs;
    }
  std::cout << "checked " << pairs << " pairs with unknown sizes\n";
}

/// The prices of docs/partitioning.md, rounded down like the report's, and
/// exact on the large blocks the planner prices (no overflow).
TEST(ReshardingPlanner, StepPrices) {
  using Kind = ReshardStep::Kind;
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllReduce, 512, 4), 768);
  EXPECT_EQ(getStepBytesPerDevice(Kind::ReduceScatter, 512, 4), 384);
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllToAll, 512, 4), 384);
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllGather, 512, 4), 1536);
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllSlice, 512, 4), 0);
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllReduce, 4, 8), 7);
  int64_t g = int64_t(1) << 24, block = int64_t(1) << 48;
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllReduce, block, g),
            2 * (g - 1) * (block / g));
  // floor((g-1) (block+3) / g): the 3 extra bytes add floor(3 (g-1) / g).
  EXPECT_EQ(getStepBytesPerDevice(Kind::AllToAll, block + 3, g),
            (g - 1) * (block / g) + 2);
}

/// Layouts over more devices than the planner prices fail with a reason.
TEST(ReshardingPlanner, TooManyDevices) {
  ShardingLayout src, dst;
  src.dims = {{"a"}, {"b"}};
  dst.dims = {{"b"}, {"a"}};
  int64_t shape[] = {int64_t(1) << 26, int64_t(1) << 26};
  std::string whyNot;
  auto axisSize = [](StringRef a) { return int64_t(1) << 13; };
  EXPECT_TRUE(failed(planResharding(src, dst, shape, axisSize, whyNot)));
  EXPECT_NE(whyNot.find("2^24 devices"), std::string::npos) << whyNot;
  // 2^24 devices are priced.
  auto smaller = [](StringRef a) { return int64_t(1) << 12; };
  FailureOr<SmallVector<ReshardStep>> plan =
      planResharding(src, dst, shape, smaller, whyNot);
  ASSERT_TRUE(succeeded(plan)) << whyNot;
  EXPECT_FALSE(plan->empty());
}

} // namespace
