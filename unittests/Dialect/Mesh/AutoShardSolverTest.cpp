//===- AutoShardSolverTest.cpp - the minimizer against brute force
//---------===//
//
// PairwiseMinimizer (mesh-auto-shard's exact solver) on random problems
// small enough to enumerate: its minimum must equal the least cost over
// every assignment, and the choices it returns must cost that minimum.
// The problems include identical pieces, large enough that the solver
// computes each distinct elimination step once and copies it, and pieces
// that differ in one entry only, which it must not confuse; and every
// problem is solved again with every step compared with the earlier ones.
//
//===----------------------------------------------------------------------===//

#include "AutoShardSolver.h"

#include "gtest/gtest.h"

#include <random>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// A problem: domains, unary costs, and factors over 2 or 3 variables.
struct Problem {
  std::vector<unsigned> domains;
  std::vector<SmallVector<AutoShardCost, 8>> unary;
  std::vector<std::pair<std::vector<unsigned>, std::vector<AutoShardCost>>>
      factors;

  AutoShardCost costOf(const std::vector<unsigned> &choice) const {
    AutoShardCost total = 0;
    for (unsigned v = 0; v < domains.size(); ++v)
      total += unary[v][choice[v]];
    for (const auto &[vars, table] : factors) {
      uint64_t index = 0;
      for (unsigned v : vars)
        index = index * domains[v] + choice[v];
      total += table[index];
    }
    return total;
  }

  AutoShardCost bruteForce() const {
    std::vector<unsigned> choice(domains.size(), 0);
    AutoShardCost best = costOf(choice);
    while (true) {
      unsigned v = 0;
      for (; v < domains.size(); ++v) {
        if (++choice[v] < domains[v])
          break;
        choice[v] = 0;
      }
      if (v == domains.size())
        return best;
      best = std::min(best, costOf(choice));
    }
  }

  /// The minimizer's minimum, checked against the cost of its choices.
  /// `memoMinSums`: 0 compares every step with the earlier ones.
  AutoShardCost solve(uint64_t memoMinSums = 4096) const {
    PairwiseMinimizer m(domains);
    m.setMemoMinSums(memoMinSums);
    for (const auto &[vars, table] : factors) {
      if (vars.size() == 2)
        m.addPair(vars[0], vars[1], table);
      else
        m.addFactor(vars, table);
    }
    std::string why;
    EXPECT_TRUE(succeeded(m.prepare(uint64_t(1) << 24, why))) << why;
    SmallVector<unsigned> choice;
    AutoShardCost min = m.solve(unary, choice);
    EXPECT_EQ(static_cast<int64_t>(min),
              static_cast<int64_t>(
                  costOf(std::vector<unsigned>(choice.begin(), choice.end()))));
    return min;
  }
};

std::vector<AutoShardCost> randomTable(std::mt19937 &rng, size_t n, int range) {
  std::uniform_int_distribution<int> cost(0, range);
  std::vector<AutoShardCost> t(n);
  for (AutoShardCost &c : t)
    c = cost(rng);
  return t;
}

TEST(AutoShardSolver, RandomProblemsEqualBruteForce) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    Problem p;
    unsigned n = 2 + trial % 5;
    std::uniform_int_distribution<unsigned> domain(1, 4);
    for (unsigned v = 0; v < n; ++v) {
      p.domains.push_back(domain(rng));
      std::vector<AutoShardCost> u = randomTable(rng, p.domains.back(), 5);
      p.unary.emplace_back(u.begin(), u.end());
    }
    std::uniform_int_distribution<unsigned> var(0, n - 1);
    for (unsigned f = 0; f < n + 2; ++f) {
      unsigned a = var(rng), b = var(rng), c = var(rng);
      if (a == b)
        continue;
      std::vector<unsigned> vars = {a, b};
      if (n > 2 && f % 3 == 0 && c != a && c != b)
        vars.push_back(c);
      size_t size = 1;
      for (unsigned v : vars)
        size *= p.domains[v];
      // Small ranges make ties, which the choices must still reach.
      p.factors.push_back({vars, randomTable(rng, size, trial % 2 ? 3 : 50)});
    }
    int64_t expected = static_cast<int64_t>(p.bruteForce());
    EXPECT_EQ(static_cast<int64_t>(p.solve()), expected) << "trial " << trial;
    EXPECT_EQ(static_cast<int64_t>(p.solve(0)), expected) << "trial " << trial;
  }
}

/// `pieces` pieces between the same two boundaries: each piece is a
/// variable with a factor to each boundary, all pieces alike but the one
/// `odd` (if any), whose table differs in one entry. The pieces are
/// eliminated first, each a step of 16x16 entries summing two rows of 16:
/// large enough to be compared with the earlier steps.
Problem star(unsigned pieces, int odd, uint32_t seed) {
  std::mt19937 rng(seed);
  const unsigned d = 16;
  Problem p;
  std::vector<AutoShardCost> in = randomTable(rng, d * d, 1000);
  std::vector<AutoShardCost> out = randomTable(rng, d * d, 1000);
  // Variables: the two boundaries, then the pieces.
  for (unsigned v = 0; v < pieces + 2; ++v) {
    p.domains.push_back(d);
    std::vector<AutoShardCost> own = randomTable(rng, d, 1000);
    p.unary.emplace_back(own.begin(), own.end());
  }
  for (unsigned l = 0; l < pieces; ++l) {
    // Alike pieces need alike costs of their own.
    p.unary[l + 2] = p.unary[2];
    std::vector<AutoShardCost> o = out;
    if (static_cast<int>(l) == odd)
      o[37] += 1;
    p.factors.push_back({{0, l + 2}, in});
    p.factors.push_back({{l + 2, 1}, o});
  }
  return p;
}

/// The minimum of a star, by another exact method: for each pair of
/// boundary choices, each piece's least cost, summed.
AutoShardCost starMinimum(const Problem &p) {
  unsigned d = p.domains[0], pieces = p.domains.size() - 2;
  AutoShardCost best = -1;
  for (unsigned a = 0; a < d; ++a)
    for (unsigned b = 0; b < d; ++b) {
      AutoShardCost total = p.unary[0][a] + p.unary[1][b];
      for (unsigned l = 0; l < pieces; ++l) {
        const std::vector<AutoShardCost> &in = p.factors[2 * l].second;
        const std::vector<AutoShardCost> &out = p.factors[2 * l + 1].second;
        AutoShardCost least = -1;
        for (unsigned x = 0; x < d; ++x) {
          AutoShardCost c = p.unary[l + 2][x] + in[a * d + x] + out[x * d + b];
          if (least < 0 || c < least)
            least = c;
        }
        total += least;
      }
      if (best < 0 || total < best)
        best = total;
    }
  return best;
}

TEST(AutoShardSolver, IdenticalPiecesSolvedAlike) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (int odd : {-1, 0, 5, 11}) {
      Problem p = star(12, odd, seed);
      int64_t expected = static_cast<int64_t>(starMinimum(p));
      EXPECT_EQ(static_cast<int64_t>(p.solve()), expected)
          << "seed " << seed << " odd " << odd;
      // The same with no step compared: the copies changed nothing.
      EXPECT_EQ(static_cast<int64_t>(p.solve(~uint64_t(0))), expected);
    }
  }
}

TEST(AutoShardSolver, SmallStarEqualsBruteForce) {
  // Two pieces (four variables of 16 choices): enumerable.
  for (int odd : {-1, 1}) {
    Problem p = star(2, odd, 7);
    EXPECT_EQ(static_cast<int64_t>(p.solve()),
              static_cast<int64_t>(p.bruteForce()));
  }
}

} // namespace
