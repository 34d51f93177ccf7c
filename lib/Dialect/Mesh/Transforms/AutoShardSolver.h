//===- AutoShardSolver.h - exact minimum of a pairwise cost -----*- C++ -*-===//
//
// Private to mesh-auto-shard: the exact minimum, over one choice per
// variable, of a sum of unary costs (one per variable and choice),
// pairwise costs (one table per pair of variables) and a few wider ones, by
// variable elimination. The elimination's structure (its order and the scope of
// each intermediate table) depends only on the graph, so it is worked out
// once and run again for each set of unary costs.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_DIALECT_MESH_TRANSFORMS_AUTOSHARDSOLVER_H
#define MESH_LIB_DIALECT_MESH_TRANSFORMS_AUTOSHARDSOLVER_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace mlir {
namespace mesh {

/// Costs are integers (wide enough for a time in picoseconds plus a scaled
/// memory term): sums are exact and the minimum is the same on every
/// machine.
using AutoShardCost = __int128;
/// A choice that must not be taken. Sums of a few stay far from overflow.
inline constexpr AutoShardCost kForbidden = AutoShardCost(1) << 120;

class PairwiseMinimizer {
public:
  /// Variables with `domains[v]` choices each (at least one). With
  /// `structureOnly`, the tables given are ignored (they may be empty):
  /// prepare() and getWork() work, solve() does not.
  explicit PairwiseMinimizer(ArrayRef<unsigned> domains,
                             bool structureOnly = false);

  /// Adds `table` (row-major: a's choice major, b's minor) to the cost of
  /// the pair (a, b), a != b. Tables of one pair add up.
  void addPair(unsigned a, unsigned b, ArrayRef<AutoShardCost> table);

  /// Adds a factor over `vars` (distinct; `table` row-major in the order
  /// given, the first variable's choice major).
  void addFactor(ArrayRef<unsigned> vars, ArrayRef<AutoShardCost> table);

  /// Works out the elimination order (least product of the neighbours'
  /// domains first, ties by the lower variable) and the intermediate tables.
  /// Fails, with a reason in `whyNot`, when one would exceed `maxEntries`.
  LogicalResult prepare(uint64_t maxEntries, std::string &whyNot);

  /// The minimum of the pairwise costs plus `unary[v][choice]`, and a choice
  /// per variable that reaches it. Ties go to the lowest choice of the
  /// variable eliminated last, then on down the order: a fixed rule.
  AutoShardCost solve(ArrayRef<SmallVector<AutoShardCost, 8>> unary,
                      SmallVectorImpl<unsigned> &choice);

  /// Steps of fewer sums than this are not compared with earlier ones
  /// (default 4096: below that, comparing costs about what summing does).
  void setMemoMinSums(uint64_t sums) { memoMinSums = sums; }

  /// The sums one solve() computes (after prepare()): a measure of its
  /// time that is the same on every machine.
  uint64_t getWork() const { return work; }

private:
  struct Factor {
    /// Variables, the table's major first: ascending as added; from
    /// prepare() on, the variable eliminated last first.
    SmallVector<unsigned, 4> scope;
    std::vector<AutoShardCost> table;
  };
  /// One elimination: the variable, the factors summed, and the table made.
  struct Step {
    unsigned var;
    SmallVector<unsigned, 4> inputs; // factor indices
    unsigned output;                 // factor index (its scope: the rest)
    /// Per input: its stride for each variable of the output's scope (its
    /// stride for `var` is 1).
    SmallVector<SmallVector<uint64_t, 4>, 4> strides;
    std::vector<uint16_t> argmin;
  };
  /// The elimination order: least product of the neighbours' domains
  /// first, ties by the lower variable.
  std::vector<unsigned> eliminationOrder() const;
  /// Makes `step`'s table and choices from its inputs and `own` costs.
  void eliminate(Step &step, ArrayRef<AutoShardCost> own);
  /// The most bytes one solve() keeps to find equal steps.
  static constexpr uint64_t kMemoBytes = uint64_t(64) << 20;
  /// Puts `factor`'s scope in the order `before` gives, its table with it.
  void reorderScope(Factor &factor,
                    function_ref<bool(unsigned, unsigned)> before) const;
  /// Each input's strides over the step's output scope and its variable.
  void addStrides(Step &step, ArrayRef<unsigned> scope) const;

  SmallVector<unsigned> domains;
  bool structureOnly = false;
  /// A deque: factors are added while others are referenced, and never
  /// copied when it grows.
  std::deque<Factor> factors;
  /// Factors below this index are the pairs' (kept across solves).
  unsigned numInputFactors = 0;
  /// (lower, higher) variable -> the factor of the pair.
  llvm::DenseMap<std::pair<unsigned, unsigned>, unsigned> pairs;
  std::vector<Step> steps;
  /// Factors with an empty scope left at the end.
  SmallVector<unsigned> constants;
  uint64_t work = 0;
  uint64_t memoMinSums = 1 << 12;
};

} // namespace mesh
} // namespace mlir

#endif // MESH_LIB_DIALECT_MESH_TRANSFORMS_AUTOSHARDSOLVER_H
