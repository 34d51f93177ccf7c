//===- AutoShardPlanner.h - mesh-auto-shard's problem and plan --*- C++ -*-===//
//
// Private to mesh-auto-shard. One function's problem: every op with a
// sharding rule, every argument, every result and every group of values a
// loop or branch ties together is a variable whose choices are the rule's
// factor assignments (or the value's layouts); every
// use of a value is a cost between its producer's choice and its
// consumer's (the resharding the partitioner would plan, priced per axis);
// every op's arithmetic a cost of its own choice. PairwiseMinimizer finds
// the exact minimum; a memory budget is met by BudgetSearch.
//
//   AutoShardProblem.cpp  the variables, their costs, memory, solve()
//   AutoShardSearch.cpp   run(): the minimum, and the search under a budget
//   AutoShardReport.cpp   the annotations written, explain, the enumeration
//   AutoShard.cpp         the pass: options, meshes, functions
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_DIALECT_MESH_TRANSFORMS_AUTOSHARDPLANNER_H
#define MESH_LIB_DIALECT_MESH_TRANSFORMS_AUTOSHARDPLANNER_H

#include "AutoShardSolver.h"
#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace mlir {
namespace mesh {
namespace autoshard {

using Cost = AutoShardCost;

/// The minimizer's costs are the model's (picoseconds, plus the weighted
/// memory of a budget search) shifted up by kTieBits, plus the bytes at the
/// peak point: of two plans that cost the same, the one that holds less
/// there wins (an argument nothing else decides is split, not replicated).
constexpr unsigned kTieBits = 40;
/// The most times an op is counted per call (loops of more trips, or
/// nested to more, count this many): 2^32.
constexpr uint64_t kMaxTimes = uint64_t(1) << 32;
/// The most bytes one use's reshardings are counted per call (2^50), so
/// that sums of them stay within 64 bits.
constexpr Cost kMaxUseBytes = Cost(1) << 50;

/// What one collective on an axis costs.
struct AxisCost {
  int64_t latencyPs = 10'000'000;         // 10 us
  int64_t bytesPerSecond = 5'000'000'000; // 5 GB/s
};

/// The cost model's parameters.
struct CostModel {
  llvm::StringMap<AxisCost> axes;
  AxisCost fallback;
  int64_t flopsPerSecond = 100'000'000'000;
  /// 0: no budget.
  int64_t memoryBudget = 0;

  const AxisCost &of(StringRef axis) const {
    auto it = axes.find(axis);
    return it == axes.end() ? fallback : it->second;
  }
  /// A collective on the group `axes` moving `bytes` per device: the
  /// slowest axis's latency plus the bytes at the slowest axis's bandwidth.
  Cost collectivePs(ArrayRef<std::string> group, int64_t bytes) const;
  Cost computePs(uint64_t flops) const {
    return Cost(flops) * Cost(1'000'000'000'000) / Cost(flopsPerSecond);
  }
};

/// One way to run an op (or lay out an argument or result).
struct Choice {
  /// The layout each operand is read in (null: not a tensor, or read
  /// replicated).
  SmallVector<ShardingAttr, 4> operands;
  /// The layout of each result (null: not a tensor, or replicated).
  SmallVector<ShardingAttr, 2> results;
  /// The bytes of one device's block of each result (0: not a tensor).
  SmallVector<int64_t, 2> resultBytes;
  /// Picoseconds of arithmetic on one device.
  Cost computePs = 0;
};

struct Variable {
  /// Kind::Tied: the values of a loop or branch (scf.for, scf.while,
  /// scf.if) that share one layout: an operand passed in, the region
  /// arguments receiving it, the values yielded to it, the result.
  ///
  /// Kind::Copy: the layout of the one copy of a value that several of its
  /// uses share (the partitioner reshards a value to a layout once and
  /// reuses the copy): choice 0 is none, choice i the copy in
  /// `CopyGroup::layouts[i - 1]`.
  enum class Kind { Argument, Op, Result, Tied, Copy };
  Kind kind;
  /// The op (Kind::Op, Kind::Tied), else the function.
  Operation *op = nullptr;
  /// The argument's or result's number; Kind::Tied: the group's.
  unsigned number = 0;
  /// Kind::Tied: the group's type and the op's results in it.
  RankedTensorType type;
  SmallVector<unsigned, 1> tiedResults;
  /// Fixed by the user: one choice.
  bool pinned = false;
  SmallVector<Choice, 8> choices;
};

/// A use of a value produced by a variable.
struct Use {
  unsigned producer, result, consumer, operand;
  RankedTensorType type;
  /// How many times its resharding runs per call: the trip counts of the
  /// loops around the consumer that the producer is inside of (the
  /// partitioner hoists the rest: getReshardPoint), 1 where one is not
  /// constant.
  uint64_t times = 1;
  /// The consumer is a loop value no result carries (an scf.while's
  /// before-region arguments): the partitioner lays it out as the value
  /// passed in, reduced; any other layout is not a choice.
  bool asPassedIn = false;
  /// The block its resharding is made in (getReshardPoint's).
  Block *block = nullptr;
};

/// Uses of one value whose reshardings are made in one block, in program
/// order: the partitioner makes a copy in each layout once and the later
/// uses that want it reuse it. A Kind::Copy variable picks the layout of
/// the copy they share, so a value resharded to one layout for several uses
/// is paid once (exact when no two different layouts are each wanted by
/// two of them: always with up to three uses; otherwise an upper bound).
struct CopyGroup {
  unsigned var;
  unsigned producer, result;
  SmallVector<unsigned, 4> uses;
  /// The layouts two of the uses can want.
  SmallVector<ShardingAttr, 8> layouts;
};

/// What one resharding costs.
struct Reshard {
  Cost ps = 0;
  int64_t bytes = 0;
  SmallVector<ReshardStep> steps;
  bool possible = true;
};

/// A value whose memory the plan decides: live from `def` to `last`
/// (program points: op positions; the return is the last).
struct LiveValue {
  unsigned var, result;
  unsigned def, last;
  Value value;
  bool isLiveAt(unsigned point) const { return def <= point && point <= last; }
};

/// The bytes live at each program point, for values live over [def, last]
/// of `bytes` each.
std::vector<int64_t>
liveBytesAt(ArrayRef<LiveValue> live, unsigned numPoints,
            function_ref<int64_t(const LiveValue &)> bytes);

/// A plan's numbers.
struct Evaluation {
  Cost commPs = 0, computePs = 0;
  int64_t commBytes = 0;
  int64_t argumentBytes = 0;
  /// The live bytes at the worst point (arguments aside) and the point.
  int64_t peakLive = 0;
  unsigned peakPoint = 0;
  Cost total() const { return commPs + computePs; }
  int64_t memory() const { return argumentBytes + peakLive; }
};

/// A stretch of the program that `explain` reports as one: a layer, or a
/// part of one.
struct ProgramRegion {
  /// The scope the ops' locations name ("layers.3.mlp" of
  /// "layers.3.mlp.fc1"); empty where the regions come from the program's
  /// cut points or repetitions.
  std::string name;
  /// Program points, inclusive.
  unsigned first = 0, last = 0;
  /// Its op variables, then the arguments it uses first.
  SmallVector<unsigned> vars;
};

/// What one region of a plan costs; `signature` is equal for regions
/// laid out and costing alike.
struct RegionTotals {
  Cost commPs = 0, computePs = 0;
  int64_t bytes = 0, mostLive = 0;
  unsigned reshardings = 0;
  std::string signature;
};

/// An argument's best other layout: the plan's cost minus the best plan's,
/// and the layout (its choice).
struct RunnerUp {
  Cost delta = 0;
  unsigned choice = 0;
  /// Within the budget (or there is none).
  bool fits = true;
};

/// `b` bytes as "1.25 MiB".
std::string formatBytes(int64_t b);
/// `ps` picoseconds as "12.345 us" or "1.234 ms".
std::string formatPs(Cost ps);
/// A layout as `[["dp"], []] partial(tp)` ("replicated" for null).
std::string layoutText(ShardingAttr s);
/// True when `op` carries a mesh.sharding annotation.
bool isAnnotated(Operation *op);

/// One function's problem and its solution.
class FunctionPlanner {
public:
  FunctionPlanner(FunctionOpInterface fn, MeshOp mesh, const CostModel &model,
                  SymbolTableCollection &tables)
      : fn(fn), mesh(mesh), meshRef(FlatSymbolRefAttr::get(mesh)), model(model),
        meshCache(tables) {}

  LogicalResult build();
  /// Where the elimination is too wide: cuts the widest variables' choices
  /// until it fits (narrowed says by how much); fails if it never does.
  LogicalResult narrow(uint64_t maxEntries, std::string &why);
  /// Solves; writes the annotations; prints the explanation.
  LogicalResult run(bool explain, bool exhaustive);

private:
  friend class BudgetSearch;

  // Building (AutoShardProblem.cpp).
  LogicalResult addArguments();
  LogicalResult addBlock(Block &block, uint64_t times);
  LogicalResult addOp(Operation *op, uint64_t times);
  LogicalResult addRegionBranch(RegionBranchOpInterface op, uint64_t times);
  LogicalResult addReturn(Operation *ret);
  bool needsNoData(Operation *op, OpRole role);
  FailureOr<Variable> makeOpVariable(Operation *op, OpRole role,
                                     uint64_t times);
  void addUsesAndResults(Operation *op, unsigned id);
  unsigned addLayoutVariable(Variable::Kind kind, unsigned number,
                             RankedTensorType type, ShardingAttr fixed,
                             bool asOperand);
  void enumerateLayouts(RankedTensorType type,
                        SmallVectorImpl<ShardingAttr> &out);
  void enumerateRule(Operation *op, const ShardingRule &rule,
                     SmallVectorImpl<Choice> &out);
  Choice pinnedRuleChoice(Operation *op, const ShardingRule &rule);
  Choice ruleChoice(Operation *op, const ShardingRule &rule,
                    ArrayRef<AxisListAttr> factors);
  Cost computePs(Operation *op, const ShardingRule &rule,
                 ArrayRef<AxisListAttr> factors);
  void fillResultBytes();
  /// What makeMinimizer's tables hold: the costs; nothing (the
  /// elimination's structure alone, for its work); or only which pairs of
  /// choices are possible (0, else forbidden).
  enum class Tables { Costs, StructureOnly, Possible };
  PairwiseMinimizer makeMinimizer(Tables tables = Tables::Costs);
  struct UsePrices;
  UsePrices priceUse(const Use &u);
  void findCopyGroups();
  void addCopyCosts(PairwiseMinimizer &m, const CopyGroup &g,
                    bool possibleOnly);
  void addUse(Value v, unsigned consumer, unsigned operand, Operation *user,
              bool asPassedIn = false);
  /// The cost (and bytes) of `u`'s resharding under the given layouts,
  /// `u.times` times; forbidden when not possible.
  std::pair<Cost, int64_t> useCost(const Use &u, ShardingAttr from,
                                   ShardingAttr to);
  /// Per use: true when `plan` has it reuse a copy an earlier use of its
  /// group made (it moves nothing).
  std::vector<bool> reusingUses(ArrayRef<unsigned> plan);
  /// The layout index (into the group's layouts; -1: none) of the copy
  /// that makes the group cheapest under `plan`'s other choices, and the
  /// group's cost and bytes with it.
  std::tuple<int, Cost, int64_t> bestCopy(const CopyGroup &g,
                                          ArrayRef<unsigned> plan);
  const Reshard &reshard(ShardingAttr from, ShardingAttr to,
                         RankedTensorType type);
  std::optional<SmallVector<ReshardStep>>
  plannedSteps(const ShardingLayout &src, const ShardingLayout &dst,
               RankedTensorType type);
  void computeLiveness();
  Evaluation evaluate(ArrayRef<unsigned> plan);
  /// A bound below the peak memory of every plan: the most, over program
  /// points, of the arguments' and the live values' least blocks.
  int64_t leastPeakBound() const;
  /// The least bytes of result `r` of variable `v` over its choices.
  int64_t leastBytes(unsigned v, unsigned r) const;
  /// A possible plan that holds the least sum of the arguments' and live
  /// values' blocks; where every value's least block is possible at once,
  /// its peak is leastPeakBound(). None when that problem is too wide.
  std::optional<SmallVector<unsigned>> leastMemoryPlan();
  /// Solves with memory weighted by `weight` / 2^20 per byte at the peak
  /// point. `fixed[v]` >= 0 restricts v to that choice; `banned` (var,
  /// choice) is excluded.
  std::pair<Cost, SmallVector<unsigned>>
  solve(uint64_t weight, ArrayRef<int> fixed = {},
        std::optional<std::pair<unsigned, unsigned>> banned = std::nullopt);
  /// Solves with `memory(v, c)` (in 2^-20 ps) added to each choice's cost.
  std::pair<Cost, SmallVector<unsigned>>
  solveUnary(function_ref<Cost(unsigned, unsigned)> memory, ArrayRef<int> fixed,
             std::optional<std::pair<unsigned, unsigned>> banned);
  /// Per variable and choice: the bytes it holds at each program point
  /// (an argument's block at every point) times that point's weight in
  /// `at` (2^-20 ps per byte), summed.
  std::vector<SmallVector<Cost, 8>> weighBytes(ArrayRef<uint64_t> at) const;
  /// Solves with memory weighted as `weighted` (weighBytes') says.
  std::pair<Cost, SmallVector<unsigned>>
  solveWeighted(ArrayRef<SmallVector<Cost, 8>> weighted,
                ArrayRef<int> fixed = {});
  /// The bytes of the values live at each point under `plan` (arguments
  /// aside).
  std::vector<int64_t> liveAt(ArrayRef<unsigned> plan) const;
  /// The bytes each point holds under `plan`, arguments included.
  std::vector<int64_t> memoryAt(ArrayRef<unsigned> plan) const;

  // Output (AutoShardReport.cpp).
  void annotate(ArrayRef<unsigned> plan);
  void explainPlan(ArrayRef<unsigned> plan, const Evaluation &e,
                   uint64_t weight, Cost lowerBound, bool proven);
  void explainArguments(raw_ostream &os, ArrayRef<unsigned> plan,
                        const Evaluation &e, uint64_t weight,
                        DenseMap<unsigned, RunnerUp> &runnersUp);
  /// What explain's regions are cut by.
  enum class RegionBasis { Names, Cuts, Repeats, Whole };
  /// Regions of fewer ops join their neighbours (cut points only).
  static constexpr size_t kFewestOps = 8;
  std::vector<ProgramRegion> findRegions(RegionBasis &basis);
  std::vector<ProgramRegion> regionsByName(ArrayRef<unsigned> ops);
  std::vector<int> crossingCounts() const;
  std::vector<ProgramRegion> regionsByCuts(ArrayRef<unsigned> ops,
                                           ArrayRef<int> crossing);
  std::vector<ProgramRegion> regionsByRepeats(ArrayRef<unsigned> ops,
                                              ArrayRef<int> crossing);
  void explainRegions(raw_ostream &os, ArrayRef<unsigned> plan,
                      const DenseMap<unsigned, RunnerUp> &runnersUp);
  std::vector<RegionTotals> totalRegions(ArrayRef<unsigned> plan,
                                         ArrayRef<ProgramRegion> regions);
  void describeRegion(raw_ostream &os, ArrayRef<unsigned> plan,
                      ArrayRef<ProgramRegion> regions, unsigned i,
                      const RegionTotals &t,
                      const DenseMap<unsigned, RunnerUp> &runnersUp);
  void explainReshardings(raw_ostream &os, ArrayRef<unsigned> plan);
  const Reshard *movingReshard(unsigned u, ArrayRef<unsigned> plan,
                               const std::vector<bool> &reusing,
                               ShardingAttr *from = nullptr,
                               ShardingAttr *to = nullptr);
  void describeVariable(raw_ostream &os, unsigned v);
  void describeOperand(raw_ostream &os, const Use &u);
  /// The error when no plan is possible: where a single layout cannot be
  /// reached, else for the function.
  LogicalResult reportImpossible();
  void describePeak(raw_ostream &os, ArrayRef<unsigned> plan,
                    const Evaluation &e);
  /// Calls `visit` with every plan (the copy variables aside), `count` of
  /// them; fails, with an error, beyond 5,000,000.
  LogicalResult forEachPlan(uint64_t &count,
                            function_ref<void(ArrayRef<unsigned>)> visit);
  LogicalResult checkExhaustively(ArrayRef<unsigned> plan, bool proven);
  /// With no plan that fits: the least memory of any plan must be within
  /// the bounds the error gave.
  LogicalResult checkSmallestBudget(int64_t atLeast, int64_t atMost);

  FunctionOpInterface fn;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  const CostModel &model;
  MeshCache meshCache;
  OpClassifier classifier;
  ShardingProjector projector;

  std::vector<Variable> vars;
  std::vector<Use> uses;
  std::vector<CopyGroup> copies;
  /// Use -> its copy group (absent: priced alone).
  DenseMap<unsigned, unsigned> groupOfUse;
  /// Values whose uses could share a copy but are priced one by one (their
  /// group's tables would be too wide).
  unsigned unsharedValues = 0;
  /// Value -> (variable, result) that produces it.
  DenseMap<Value, std::pair<unsigned, unsigned>> producers;
  /// Values that need no data (made again wherever a layout is wanted).
  llvm::DenseSet<Value> free;
  /// Ops in program order, nested ones after their parent (their position
  /// is their program point).
  DenseMap<Operation *, unsigned> position;
  /// A loop's or branch's last nested program point (its values used
  /// inside stay live to there).
  DenseMap<Operation *, unsigned> endPosition;
  /// A loop or branch -> how many times per call the ops directly inside
  /// it run.
  DenseMap<Operation *, uint64_t> timesInside;
  unsigned numPoints = 0;
  std::vector<LiveValue> live;
  /// Per variable and choice: the bytes of its values live at the peak
  /// point (arguments: the block).
  std::vector<SmallVector<int64_t, 8>> peakBytes;
  unsigned peakPoint = 0;
  std::optional<PairwiseMinimizer> minimizer;
  /// After narrow(): a lower bound on the whole problem's optimum (each
  /// op's cheapest arithmetic, no communication) and how many choices were
  /// set aside.
  struct Narrowed {
    Cost bound;
    unsigned dropped;
  };
  std::optional<Narrowed> narrowed;
  DenseMap<std::tuple<Attribute, Attribute, Type>, Reshard> reshards;
  /// The planner's steps by plannedSteps's key, on axes named by their
  /// index; none when there is no plan.
  llvm::StringMap<std::optional<SmallVector<ReshardStep>>> plans;
  /// Result -> the argument variable carried to it, and back.
  DenseMap<unsigned, unsigned> carriedFrom, carriedTo;
};

} // namespace autoshard
} // namespace mesh
} // namespace mlir

#endif // MESH_LIB_DIALECT_MESH_TRANSFORMS_AUTOSHARDPLANNER_H
