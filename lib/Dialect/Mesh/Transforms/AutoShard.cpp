//===- AutoShard.cpp - choosing every sharding by an exact minimum --------===//
//
// mesh-auto-shard: every op with a sharding rule, every argument and every
// result of a function is a variable whose choices are the rule's factor
// assignments (or the layouts of the value); every use of a value is a cost
// between its producer's choice and its consumer's (the resharding the
// partitioner would plan, priced per axis); every op's arithmetic a cost of
// its own choice. PairwiseMinimizer finds the exact minimum; a memory budget
// is met by a Lagrangian search over the memory at the peak point. The
// plan is written as mesh.sharding annotations.
//
//===----------------------------------------------------------------------===//

#include "AutoShardSolver.h"
#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <functional>
#include <optional>

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_AUTOSHARD
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

using Cost = AutoShardCost;

/// The minimizer's costs are the model's (picoseconds, plus the weighted
/// memory of a budget search) shifted up by kTieBits, plus the bytes at the
/// peak point: of two plans that cost the same, the one that holds less
/// there wins (an argument nothing else decides is split, not replicated).
constexpr unsigned kTieBits = 40;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// `text` as a number times its prefix's power (K, M, G, T: 10^3..; Ki, Mi,
/// Gi, Ti: 2^10..), followed by `unit` (optional). None when malformed.
std::optional<double> parseQuantity(StringRef text, StringRef unit) {
  text = text.trim();
  if (!unit.empty())
    text.consume_back(unit);
  static const std::pair<StringRef, double> prefixes[] = {
      {"Ki", 1024.0},       {"Mi", 1048576.0},
      {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"K", 1e3},           {"k", 1e3},
      {"M", 1e6},           {"G", 1e9},
      {"T", 1e12}};
  double scale = 1;
  for (auto [p, s] : prefixes)
    if (text.consume_back(p)) {
      scale = s;
      break;
    }
  std::string number = text.trim().str();
  if (number.empty())
    return std::nullopt;
  char *end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (*end != '\0' || !(value >= 0) || std::isinf(value))
    return std::nullopt;
  return value * scale;
}

/// A time (`10us`, `2ms`, `500ns`, `1s`) in picoseconds.
std::optional<int64_t> parseTimePs(StringRef text) {
  text = text.trim();
  static const std::pair<StringRef, double> units[] = {
      {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  for (auto [u, ps] : units)
    if (text.consume_back(u)) {
      std::string number = text.trim().str();
      char *end = nullptr;
      double v = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(v >= 0) || v * ps > 9e18)
        return std::nullopt;
      return static_cast<int64_t>(std::llround(v * ps));
    }
  return std::nullopt;
}

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
  Cost collectivePs(ArrayRef<std::string> group, int64_t bytes) const {
    int64_t latency = 0, bandwidth = INT64_MAX;
    for (const std::string &a : group) {
      const AxisCost &c = of(a);
      latency = std::max(latency, c.latencyPs);
      bandwidth = std::min(bandwidth, c.bytesPerSecond);
    }
    return Cost(latency) +
           Cost(bytes) * Cost(1'000'000'000'000) / Cost(bandwidth);
  }
  Cost computePs(uint64_t flops) const {
    return Cost(flops) * Cost(1'000'000'000'000) / Cost(flopsPerSecond);
  }
};

/// Parses `axis=latency:bandwidth,...` into `model`.
LogicalResult parseAxisCosts(StringRef text, CostModel &model,
                             std::string &error) {
  SmallVector<StringRef> entries;
  text.split(entries, ',', -1, false);
  for (StringRef entry : entries) {
    auto [axis, cost] = entry.split('=');
    auto [latency, bandwidth] = cost.split(':');
    std::optional<int64_t> ps = parseTimePs(latency);
    std::optional<double> bw = parseQuantity(bandwidth, "B/s");
    axis = axis.trim();
    if (axis.empty() || !ps || !bw || *bw < 1 || *bw > 9e18) {
      error = "axis-cost: cannot read '" + entry.trim().str() +
              "' (expected axis=latency:bandwidth, as dp=20us:10GB/s)";
      return failure();
    }
    AxisCost c{*ps, static_cast<int64_t>(std::llround(*bw))};
    if (axis == "*")
      model.fallback = c;
    else
      model.axes[axis] = c;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

/// One way to run an op (or lay out an argument or result).
struct Choice {
  /// The layout each operand is read in (null: not a tensor, or not read
  /// through the plan).
  SmallVector<ShardingAttr, 4> operands;
  /// The layout of each result (null: not a tensor).
  SmallVector<ShardingAttr, 2> results;
  /// Picoseconds of arithmetic on one device.
  Cost computePs = 0;
};

struct Variable {
  enum class Kind { Argument, Op, Result };
  Kind kind;
  /// The op (Kind::Op), else the function.
  Operation *op = nullptr;
  /// The argument's or result's number.
  unsigned number = 0;
  /// Fixed by the user: one choice.
  bool pinned = false;
  SmallVector<Choice, 8> choices;
};

/// A use of a value produced by a variable.
struct Use {
  unsigned producer, result, consumer, operand;
  RankedTensorType type;
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
};

int64_t elementBytes(RankedTensorType t) {
  unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

/// Bytes of one device's block of `t` laid out as `s` (null: whole).
int64_t blockBytes(MeshOp mesh, RankedTensorType t, ShardingAttr s) {
  int64_t n = t.getNumElements() * elementBytes(t);
  if (!s)
    return n;
  for (AxisListAttr axes : s.getDims())
    for (StringAttr a : axes)
      n /= mesh.getAxisSize(a.getValue());
  return n;
}

std::string formatBytes(int64_t b) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (b >= (int64_t(1) << 30))
    os << llvm::format("%.2f GiB", b / 1073741824.0);
  else if (b >= (int64_t(1) << 20))
    os << llvm::format("%.2f MiB", b / 1048576.0);
  else if (b >= 1024)
    os << llvm::format("%.2f KiB", b / 1024.0);
  else
    os << b << " B";
  return s;
}

std::string formatPs(Cost ps) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double v = static_cast<double>(ps);
  if (v >= 1e9)
    os << llvm::format("%.3f ms", v / 1e9);
  else
    os << llvm::format("%.3f us", v / 1e6);
  return s;
}

std::string layoutText(ShardingAttr s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (!s) {
    os << "replicated";
    return text;
  }
  os << "[";
  llvm::interleaveComma(s.getDims(), os, [&](AxisListAttr axes) {
    os << "[";
    llvm::interleaveComma(
        axes, os, [&](StringAttr a) { os << '"' << a.getValue() << '"'; });
    os << "]";
  });
  os << "]";
  if (s.isPartial()) {
    os << " partial(";
    llvm::interleaveComma(s.getPartialAxisNames(), os);
    os << ")";
  }
  return text;
}

/// The chosen plan's numbers.
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

/// One function's problem and its solution.
class FunctionPlanner {
public:
  FunctionPlanner(FunctionOpInterface fn, MeshOp mesh, const CostModel &model,
                  SymbolTableCollection &tables)
      : fn(fn), mesh(mesh), meshRef(FlatSymbolRefAttr::get(mesh)), model(model),
        meshCache(tables) {}

  LogicalResult build();
  /// Solves; writes the annotations; prints the explanation.
  LogicalResult run(bool explain, bool exhaustive);

private:
  LogicalResult addOp(Operation *op);
  unsigned addLayoutVariable(Variable::Kind kind, unsigned number,
                             RankedTensorType type, ShardingAttr fixed,
                             bool asOperand);
  void enumerateLayouts(RankedTensorType type,
                        SmallVectorImpl<ShardingAttr> &out);
  void enumerateRule(Operation *op, const ShardingRule &rule,
                     SmallVectorImpl<Choice> &out);
  Choice pinnedRuleChoice(Operation *op, const ShardingRule &rule);
  Cost computePs(Operation *op, const ShardingRule &rule,
                 ArrayRef<AxisListAttr> factors);
  const Reshard &reshard(ShardingAttr from, ShardingAttr to,
                         RankedTensorType type);
  void computeLiveness();
  Evaluation evaluate(ArrayRef<unsigned> plan);
  /// Solves with memory weighted by `weight` / 2^20 per byte at the peak
  /// point; `banned` (var, choice) excluded.
  /// `fixed[v]` >= 0 restricts v to that choice.
  std::pair<Cost, SmallVector<unsigned>>
  solve(uint64_t weight, ArrayRef<int> fixed = {},
        std::optional<std::pair<unsigned, unsigned>> banned = std::nullopt);
  FailureOr<bool> searchWithinBudget(SmallVectorImpl<unsigned> &best,
                                     Evaluation &bestEval, Cost &lowerBound,
                                     uint64_t &weight);
  void annotate(ArrayRef<unsigned> plan);
  void explainPlan(ArrayRef<unsigned> plan, const Evaluation &e,
                   uint64_t weight, Cost lowerBound, bool proven);
  void describeVariable(raw_ostream &os, unsigned v);
  void describePeak(raw_ostream &os, ArrayRef<unsigned> plan,
                    const Evaluation &e);
  LogicalResult checkExhaustively(ArrayRef<unsigned> plan, bool proven);

  FunctionOpInterface fn;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  const CostModel &model;
  MeshCache meshCache;
  OpClassifier classifier;

  std::vector<Variable> vars;
  std::vector<Use> uses;
  /// Value -> (variable, result) that produces it.
  DenseMap<Value, std::pair<unsigned, unsigned>> producers;
  /// Values that need no data (made again wherever a layout is wanted).
  llvm::DenseSet<Value> free;
  /// Ops in program order (their position is their program point).
  DenseMap<Operation *, unsigned> position;
  unsigned numPoints = 0;
  std::vector<LiveValue> live;
  /// Per variable and choice: the bytes of its values live at the peak
  /// point (arguments: the block).
  std::vector<SmallVector<int64_t, 8>> peakBytes;
  unsigned peakPoint = 0;
  std::optional<PairwiseMinimizer> minimizer;
  DenseMap<std::tuple<Attribute, Attribute, Type>, Reshard> reshards;
  /// Result -> the argument variable carried to it, and back.
  DenseMap<unsigned, unsigned> carriedFrom, carriedTo;
};

//===----------------------------------------------------------------------===//
// Building the problem
//===----------------------------------------------------------------------===//

/// The mesh axes that can split anything (size above 1), in mesh order.
SmallVector<StringRef> splittingAxes(MeshOp mesh) {
  SmallVector<StringRef> axes;
  for (auto [name, size] : llvm::zip(
           mesh.getAxisNames().getAsValueRange<StringAttr>(), mesh.getShape()))
    if (size > 1)
      axes.push_back(name);
  return axes;
}

void FunctionPlanner::enumerateLayouts(RankedTensorType type,
                                       SmallVectorImpl<ShardingAttr> &out) {
  SmallVector<StringRef> axes = splittingAxes(mesh);
  unsigned rank = type.getRank();
  // Each axis: -1 (none) or a dim.
  SmallVector<int, 4> where(axes.size(), -1);
  while (true) {
    SmallVector<SmallVector<StringRef>> dims(rank);
    bool ok = true;
    for (auto [a, d] : llvm::enumerate(where))
      if (d >= 0)
        dims[d].push_back(axes[a]);
    for (unsigned d = 0; d < rank && ok; ++d) {
      if (dims[d].empty())
        continue;
      int64_t size = type.getDimSize(d);
      int64_t group = mesh.getGroupSize(dims[d]);
      ok = !ShapedType::isDynamic(size) && !ShapedType::isDynamic(group) &&
           size % group == 0;
    }
    if (ok)
      out.push_back(ShardingAttr::get(meshRef, dims));
    // The next assignment (the last axis moves fastest).
    int a = axes.size() - 1;
    for (; a >= 0; --a) {
      if (++where[a] < static_cast<int>(rank))
        break;
      where[a] = -1;
    }
    if (a < 0)
      break;
  }
}

unsigned FunctionPlanner::addLayoutVariable(Variable::Kind kind,
                                            unsigned number,
                                            RankedTensorType type,
                                            ShardingAttr fixed,
                                            bool asOperand) {
  Variable v;
  v.kind = kind;
  v.op = fn;
  v.number = number;
  SmallVector<ShardingAttr> layouts;
  if (fixed) {
    v.pinned = true;
    layouts.push_back(fixed);
  } else {
    enumerateLayouts(type, layouts);
  }
  for (ShardingAttr s : layouts) {
    Choice c;
    // An argument is read as its layout too (by the result it is carried
    // to, if any).
    c.operands.push_back(s);
    if (!asOperand)
      c.results.push_back(s);
    v.choices.push_back(std::move(c));
  }
  vars.push_back(std::move(v));
  return vars.size() - 1;
}

Cost FunctionPlanner::computePs(Operation *op, const ShardingRule &rule,
                                ArrayRef<AxisListAttr> factors) {
  uint64_t perPoint;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    Block *body = linalgOp.getBlock();
    perPoint = body ? std::max<size_t>(1, body->getOperations().size() - 1) : 1;
  } else if (op->hasTrait<OpTrait::Elementwise>()) {
    perPoint = 1;
  } else {
    return 0;
  }
  uint64_t points = 1, shards = 1;
  for (auto [f, factor] : llvm::enumerate(rule.factors)) {
    if (factor.numParts)
      continue;
    if (ShapedType::isDynamic(factor.size))
      return 0;
    points *= factor.size;
    if (factors[f])
      for (StringAttr a : factors[f])
        shards *= mesh.getAxisSize(a.getValue());
  }
  return model.computePs(points * perPoint / shards);
}

void FunctionPlanner::enumerateRule(Operation *op, const ShardingRule &rule,
                                    SmallVectorImpl<Choice> &out) {
  MLIRContext *ctx = op->getContext();
  unsigned numFactors = rule.factors.size();
  // The factors an axis may shard: not blocked, without halos, of known
  // size, seen in a result (so that the partitioner derives the same
  // assignment from the results' annotations): a parallel factor on a
  // result dim (a product's part through its product), a reduction when
  // it is the op's only one.
  llvm::SmallBitVector onResult(numFactors);
  for (ArrayRef<int64_t> dims : rule.resultDims)
    for (int64_t f : dims)
      if (f >= 0)
        onResult.set(f);
  unsigned reductions = 0;
  for (const ShardingFactor &f : rule.factors)
    reductions += f.reduction && !f.blocked;
  SmallVector<int, 8> allowed;
  for (auto [i, f] : llvm::enumerate(rule.factors)) {
    bool visible = f.reduction ? reductions == 1
                               : onResult.test(i) || (f.product >= 0 &&
                                                      onResult.test(f.product));
    if (!f.blocked && f.maxHalo == 0 && f.numParts == 0 &&
        !ShapedType::isDynamic(f.size) && f.size > 1 && visible)
      allowed.push_back(i);
  }
  SmallVector<StringRef> axes = splittingAxes(mesh);
  // Each axis: an index into `allowed`, or -1.
  SmallVector<int, 4> where(axes.size(), -1);
  llvm::DenseSet<std::pair<Attribute, Attribute>> seen;
  while (true) {
    SmallVector<SmallVector<StringRef>> names(numFactors);
    for (auto [a, w] : llvm::enumerate(where))
      if (w >= 0)
        names[allowed[w]].push_back(axes[a]);
    bool ok = true;
    for (unsigned f = 0; f < numFactors && ok; ++f) {
      if (names[f].empty())
        continue;
      int64_t group = mesh.getGroupSize(names[f]);
      ok = !ShapedType::isDynamic(group) && rule.factors[f].size % group == 0;
    }
    // A product takes its parts' axes, major first, and is sharded only as
    // blocks: every part before the last sharded one is split down to 1.
    for (unsigned f = 0; f < numFactors && ok; ++f) {
      const ShardingFactor &product = rule.factors[f];
      if (!product.numParts)
        continue;
      unsigned first = f - product.numParts;
      int last = -1;
      for (unsigned p = first; p < f; ++p)
        if (!names[p].empty())
          last = p;
      for (int p = first; p < last && ok; ++p)
        ok = mesh.getGroupSize(names[p]) == rule.factors[p].size;
      for (unsigned p = first; p < f; ++p)
        llvm::append_range(names[f], names[p]);
    }
    if (ok) {
      SmallVector<AxisListAttr, 8> factors(numFactors);
      for (unsigned f = 0; f < numFactors; ++f)
        if (!names[f].empty())
          factors[f] = AxisListAttr::get(ctx, names[f]);
      Choice c;
      for (auto [i, operand] : llvm::enumerate(op->getOperands()))
        c.operands.push_back(
            isa<RankedTensorType>(operand.getType()) &&
                    i < rule.operandDims.size()
                ? projectFactors(meshRef, factors, rule.operandDims[i])
                : ShardingAttr());
      for (auto [i, result] : llvm::enumerate(op->getResults()))
        c.results.push_back(
            isa<RankedTensorType>(result.getType()) &&
                    i < rule.resultDims.size()
                ? projectResult(meshRef, rule, factors, rule.resultDims[i])
                : ShardingAttr());
      c.computePs = computePs(op, rule, factors);
      // Two assignments with the same layouts are one choice.
      Attribute key1 = ArrayAttr::get(
          ctx,
          llvm::map_to_vector(c.operands, [&](ShardingAttr s) -> Attribute {
            return s ? Attribute(s) : UnitAttr::get(ctx);
          }));
      Attribute key2 = ArrayAttr::get(
          ctx, llvm::map_to_vector(c.results, [&](ShardingAttr s) -> Attribute {
            return s ? Attribute(s) : UnitAttr::get(ctx);
          }));
      if (seen.insert({key1, key2}).second)
        out.push_back(std::move(c));
    }
    int a = axes.size() - 1;
    for (; a >= 0; --a) {
      if (++where[a] < static_cast<int>(allowed.size()))
        break;
      where[a] = -1;
    }
    if (a < 0)
      break;
  }
}

Choice FunctionPlanner::pinnedRuleChoice(Operation *op,
                                         const ShardingRule &rule) {
  StringAttr shardingName = StringAttr::get(op->getContext(), "mesh.sharding");
  FactorAssignment assignment(rule, op, meshCache);
  for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
    ShardingAttr s = getResultAnnotation(op, r, shardingName);
    if (!s)
      continue;
    assignment.takeDims(s, dims, op->getResult(r).getType());
    assignment.takePartial(s, [](unsigned) { return ShardingAttr(); });
  }
  ArrayRef<AxisListAttr> factors = assignment.getFactors();
  Choice c;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    c.operands.push_back(
        isa<RankedTensorType>(operand.getType()) && i < rule.operandDims.size()
            ? projectFactors(meshRef, factors, rule.operandDims[i])
            : ShardingAttr());
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    ShardingAttr s = getResultAnnotation(op, i, shardingName);
    if (!s && isa<RankedTensorType>(result.getType()) &&
        i < rule.resultDims.size())
      s = projectResult(meshRef, rule, factors, rule.resultDims[i]);
    c.results.push_back(s);
  }
  c.computePs = computePs(op, rule, factors);
  return c;
}

/// True when `op` carries a mesh.sharding annotation.
bool isAnnotated(Operation *op) {
  return op->getDiscardableAttr("mesh.sharding") != nullptr;
}

LogicalResult FunctionPlanner::addOp(Operation *op) {
  bool hasTensor =
      llvm::any_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
      llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
  OpRole role = classifier.classify(op);
  if (role == OpRole::FunctionReturn) {
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type)
        continue;
      auto fixed = fn.getResultAttrOfType<ShardingAttr>(i, "mesh.sharding");
      // A result carried from an argument is laid out as the argument.
      unsigned var;
      if (auto carried = carriedFrom.find(i); carried != carriedFrom.end()) {
        var = carried->second;
        ShardingAttr argFixed =
            vars[var].pinned ? vars[var].choices[0].results[0] : ShardingAttr();
        if (fixed && !(argFixed && sameLayout(fixed, argFixed)))
          return fn.emitError("mesh-auto-shard: result ")
                 << i << " is carried from argument " << vars[var].number
                 << " (mesh.carried) but annotated otherwise";
      } else {
        var = addLayoutVariable(Variable::Kind::Result, i, type, fixed,
                                /*asOperand=*/true);
      }
      auto it = producers.find(v);
      if (it != producers.end())
        uses.push_back({it->second.first, it->second.second, var, 0, type});
    }
    return success();
  }
  if (!hasTensor)
    return success();
  // Values that need no data: made again in each layout a user wants (an
  // annotation on one changes nothing the plan pays for).
  if (role == OpRole::Rule && classifier.hasRuleInterface(op) &&
      op->getNumResults() == 1 &&
      cast<ShardingRuleOpInterface>(op).needsNoData() &&
      llvm::all_of(op->getOperands(), [&](Value v) {
        return !isa<RankedTensorType>(v.getType()) || free.contains(v);
      })) {
    free.insert(op->getResult(0));
    return success();
  }
  Variable var;
  var.kind = Variable::Kind::Op;
  var.op = op;
  switch (role) {
  case OpRole::Rule: {
    FailureOr<ShardingRule> rule = getShardingRule(op);
    if (failed(rule))
      return op->emitError("mesh-auto-shard: no sharding rule for this op");
    if (op->getNumRegions() && !isa<linalg::LinalgOp>(op) &&
        !isa<ShardingRuleOpInterface>(op))
      return op->emitError("mesh-auto-shard: ops with regions are not in "
                           "the plan space yet");
    if (isAnnotated(op)) {
      var.pinned = true;
      var.choices.push_back(pinnedRuleChoice(op, *rule));
    } else {
      enumerateRule(op, *rule, var.choices);
    }
    break;
  }
  case OpRole::Shard: {
    auto shard = cast<ShardOp>(op);
    ShardingAttr s = shard.getSharding();
    if (s && s.getMesh() != meshRef)
      return op->emitError("mesh-auto-shard: a constraint on another mesh "
                           "than the function's (")
             << s.getMesh() << ")";
    Choice c;
    c.operands.push_back(s);
    c.results.push_back(s);
    var.pinned = true;
    var.choices.push_back(std::move(c));
    break;
  }
  case OpRole::NoRule: {
    if (op->getNumRegions())
      return op->emitError("mesh-auto-shard: '")
             << op->getName()
             << "' has regions (loops, branches): not in the plan space yet";
    Choice c;
    c.operands.resize(op->getNumOperands());
    c.results.resize(op->getNumResults());
    var.pinned = true;
    var.choices.push_back(std::move(c));
    break;
  }
  case OpRole::Call:
    return op->emitError("mesh-auto-shard: calls are not in the plan space "
                         "yet (inline the callee first)");
  case OpRole::RegionBranch:
  case OpRole::RegionTerminator:
    return op->emitError("mesh-auto-shard: '")
           << op->getName()
           << "' has regions (loops, branches): not in the plan space yet";
  case OpRole::PerDevice:
    return op->emitError("mesh-auto-shard: the function is already per "
                         "device (it has collectives)");
  case OpRole::FunctionReturn:
    break;
  }
  if (var.choices.empty())
    return op->emitError("mesh-auto-shard: no choice for this op");
  vars.push_back(std::move(var));
  unsigned id = vars.size() - 1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    auto it = producers.find(operand.get());
    if (it != producers.end())
      uses.push_back({it->second.first, it->second.second, id,
                      operand.getOperandNumber(), type});
  }
  for (OpResult r : op->getResults())
    if (isa<RankedTensorType>(r.getType()))
      producers[r] = {id, r.getResultNumber()};
  return success();
}

LogicalResult FunctionPlanner::build() {
  Region &body = fn.getFunctionBody();
  if (!body.hasOneBlock())
    return fn.emitError("mesh-auto-shard: functions of one block only");
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    auto fixed =
        fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), "mesh.sharding");
    unsigned var = addLayoutVariable(Variable::Kind::Argument,
                                     arg.getArgNumber(), type, fixed,
                                     /*asOperand=*/false);
    producers[arg] = {var, 0};
    // `mesh.carried = N`: result N is this argument's next value (a
    // parameter and its update); both take one layout.
    Attribute carried = fn.getArgAttr(arg.getArgNumber(), "mesh.carried");
    if (!carried)
      continue;
    auto number = dyn_cast<IntegerAttr>(carried);
    if (!number || number.getInt() < 0 ||
        number.getInt() >= static_cast<int64_t>(fn.getNumResults()) ||
        fn.getResultTypes()[number.getInt()] != type)
      return fn.emitError("mesh-auto-shard: argument ")
             << arg.getArgNumber()
             << ": mesh.carried must be the number of a result of the "
                "argument's type";
    if (!carriedFrom.try_emplace(number.getInt(), var).second)
      return fn.emitError("mesh-auto-shard: two arguments are carried to "
                          "result ")
             << number.getInt();
    carriedTo[var] = number.getInt();
  }
  for (Operation &op : body.front()) {
    position[&op] = numPoints++;
    if (failed(addOp(&op)))
      return failure();
  }
  // The pairwise tables: each use's resharding time.
  SmallVector<unsigned> domains;
  for (const Variable &v : vars)
    domains.push_back(v.choices.size());
  minimizer.emplace(domains);
  for (const Use &u : uses) {
    const Variable &p = vars[u.producer], &c = vars[u.consumer];
    if (u.producer == u.consumer)
      continue; // Not possible in a block without cycles.
    // Many choices share a layout: price each distinct pair once.
    SmallVector<unsigned> from, to;
    SmallVector<ShardingAttr> fromLayouts, toLayouts;
    auto index = [](SmallVectorImpl<ShardingAttr> &layouts, ShardingAttr s) {
      auto it = llvm::find(layouts, s);
      if (it != layouts.end())
        return static_cast<unsigned>(it - layouts.begin());
      layouts.push_back(s);
      return static_cast<unsigned>(layouts.size() - 1);
    };
    for (const Choice &pc : p.choices)
      from.push_back(index(fromLayouts, pc.results[u.result]));
    for (const Choice &cc : c.choices)
      to.push_back(index(toLayouts, cc.operands[u.operand]));
    std::vector<Cost> distinct(fromLayouts.size() * toLayouts.size());
    for (auto [i, fl] : llvm::enumerate(fromLayouts))
      for (auto [j, tl] : llvm::enumerate(toLayouts)) {
        const Reshard &r = reshard(fl, tl, u.type);
        distinct[i * toLayouts.size() + j] =
            r.possible ? std::min(r.ps, Cost(1) << 70) << kTieBits : kForbidden;
      }
    std::vector<Cost> table(p.choices.size() * c.choices.size());
    for (unsigned i = 0; i < from.size(); ++i)
      for (unsigned j = 0; j < to.size(); ++j)
        table[i * to.size() + j] = distinct[from[i] * toLayouts.size() + to[j]];
    minimizer->addPair(u.producer, u.consumer, table);
  }
  std::string why;
  if (failed(minimizer->prepare(uint64_t(1) << 26, why)))
    return fn.emitError("mesh-auto-shard: the program is too wide to solve "
                        "exactly: ")
           << why;
  computeLiveness();
  return success();
}

/// True when `to` lays a tensor out as `from` with some dims split over more
/// axes, minor to the ones they had, that `from` does not use: going there
/// is slicing alone. Neither may be partial or have halos.
static bool onlySplitsFurther(ShardingAttr from, ShardingAttr to) {
  if (!to || to.isPartial() || to.hasHalo() ||
      (from && (from.isPartial() || from.hasHalo())))
    return false;
  if (from && from.getRank() != to.getRank())
    return false;
  SmallVector<StringAttr, 8> had;
  if (from)
    for (AxisListAttr axes : from.getDims())
      llvm::append_range(had, axes.getAxes());
  for (unsigned d = 0; d < to.getRank(); ++d) {
    ArrayRef<StringAttr> want = to.getDimAxes(d).getAxes();
    ArrayRef<StringAttr> have =
        from ? from.getDimAxes(d).getAxes() : ArrayRef<StringAttr>();
    if (want.size() < have.size() || want.take_front(have.size()) != have)
      return false;
    for (StringAttr a : want.drop_front(have.size()))
      if (llvm::is_contained(had, a))
        return false;
  }
  return true;
}

const Reshard &FunctionPlanner::reshard(ShardingAttr from, ShardingAttr to,
                                        RankedTensorType type) {
  auto key = std::make_tuple(Attribute(from), Attribute(to), Type(type));
  auto it = reshards.find(key);
  if (it != reshards.end())
    return it->second;
  Reshard r;
  // The same layout, or one that only splits further (each dim keeps its
  // axes and may take more, minor, that no dim had): nothing moves, each
  // device keeps a part of its block (all_slice).
  if (sameLayout(from, to) || onlySplitsFurther(from, to))
    return reshards.try_emplace(key, std::move(r)).first->second;
  unsigned rank = type.getRank();
  ShardingLayout src = layoutOf(from, rank), dst = layoutOf(to, rank);
  auto axisSize = [&](StringRef a) { return mesh.getAxisSize(a); };
  std::string why;
  FailureOr<SmallVector<ReshardStep>> plan =
      planResharding(src, dst, type.getShape(), axisSize, why);
  if (failed(plan)) {
    r.possible = false;
  } else {
    int64_t bytes = type.getNumElements() * elementBytes(type);
    int64_t before = 0;
    for (unsigned i = 0; i < plan->size(); ++i) {
      int64_t upTo =
          getPlanBytes(src, ArrayRef(*plan).take_front(i + 1), bytes, axisSize);
      const ReshardStep &step = (*plan)[i];
      if (step.kind != ReshardStep::Kind::AllSlice)
        r.ps += model.collectivePs(step.axes, upTo - before);
      before = upTo;
    }
    r.bytes = before;
    r.steps = std::move(*plan);
  }
  return reshards.try_emplace(key, std::move(r)).first->second;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

void FunctionPlanner::computeLiveness() {
  for (auto [value, source] : producers) {
    if (vars[source.first].kind == Variable::Kind::Argument)
      continue;
    Operation *def = value.getDefiningOp();
    unsigned last = position[def];
    for (Operation *user : value.getUsers()) {
      Operation *top =
          fn.getFunctionBody().front().findAncestorOpInBlock(*user);
      if (top)
        last = std::max(last, position[top]);
    }
    live.push_back({source.first, source.second, position[def], last, value});
  }
  // A fixed order (the map's is not).
  llvm::sort(live, [](const LiveValue &a, const LiveValue &b) {
    return std::tie(a.def, a.result) < std::tie(b.def, b.result);
  });
  // The peak point of the program with every value whole.
  std::vector<int64_t> delta(numPoints + 1, 0);
  for (const LiveValue &l : live) {
    int64_t b = cast<RankedTensorType>(l.value.getType()).getNumElements() *
                elementBytes(cast<RankedTensorType>(l.value.getType()));
    delta[l.def] += b;
    delta[l.last + 1] -= b;
  }
  int64_t now = 0, best = -1;
  for (unsigned p = 0; p < numPoints; ++p) {
    now += delta[p];
    if (now > best) {
      best = now;
      peakPoint = p;
    }
  }
  peakBytes.assign(vars.size(), {});
  for (auto [v, var] : llvm::enumerate(vars))
    peakBytes[v].assign(var.choices.size(), 0);
  for (auto [v, var] : llvm::enumerate(vars))
    if (var.kind == Variable::Kind::Argument) {
      auto type = cast<RankedTensorType>(
          fn.getFunctionBody().getArgument(var.number).getType());
      for (auto [c, choice] : llvm::enumerate(var.choices))
        peakBytes[v][c] = blockBytes(mesh, type, choice.results[0]);
    }
  for (const LiveValue &l : live)
    if (l.def <= peakPoint && peakPoint <= l.last) {
      auto type = cast<RankedTensorType>(l.value.getType());
      for (auto [c, choice] : llvm::enumerate(vars[l.var].choices))
        peakBytes[l.var][c] += blockBytes(mesh, type, choice.results[l.result]);
    }
}

Evaluation FunctionPlanner::evaluate(ArrayRef<unsigned> plan) {
  Evaluation e;
  for (auto [v, var] : llvm::enumerate(vars)) {
    e.computePs += var.choices[plan[v]].computePs;
    if (var.kind == Variable::Kind::Argument)
      e.argumentBytes += peakBytes[v][plan[v]];
  }
  for (const Use &u : uses) {
    const Reshard &r = reshard(
        vars[u.producer].choices[plan[u.producer]].results[u.result],
        vars[u.consumer].choices[plan[u.consumer]].operands[u.operand], u.type);
    e.commPs += r.possible ? r.ps : kForbidden;
    e.commBytes += r.bytes;
  }
  std::vector<int64_t> delta(numPoints + 1, 0);
  for (const LiveValue &l : live) {
    int64_t b = blockBytes(mesh, cast<RankedTensorType>(l.value.getType()),
                           vars[l.var].choices[plan[l.var]].results[l.result]);
    delta[l.def] += b;
    delta[l.last + 1] -= b;
  }
  int64_t now = 0;
  e.peakLive = -1;
  for (unsigned p = 0; p < numPoints; ++p) {
    now += delta[p];
    if (now > e.peakLive) {
      e.peakLive = now;
      e.peakPoint = p;
    }
  }
  e.peakLive = std::max<int64_t>(e.peakLive, 0);
  return e;
}

std::pair<Cost, SmallVector<unsigned>>
FunctionPlanner::solve(uint64_t weight, ArrayRef<int> fixed,
                       std::optional<std::pair<unsigned, unsigned>> banned) {
  // Bounds that keep every sum of a few terms below kForbidden: costs up to
  // 2^70 before the shift (a time of 2^50 ps plus a weighted memory of
  // 2^40 * 2^40 / 2^20), tie bytes below 2^kTieBits.
  constexpr Cost kMaxCost = Cost(1) << 70;
  constexpr int64_t kMaxTie = (int64_t(1) << kTieBits) - 1;
  SmallVector<SmallVector<Cost, 8>> unary(vars.size());
  for (auto [v, var] : llvm::enumerate(vars))
    for (auto [c, choice] : llvm::enumerate(var.choices)) {
      if (!fixed.empty() && fixed[v] >= 0 && fixed[v] != static_cast<int>(c)) {
        unary[v].push_back(kForbidden);
        continue;
      }
      Cost cost =
          choice.computePs + (Cost(weight) * Cost(peakBytes[v][c]) >> 20);
      unary[v].push_back((std::min(cost, kMaxCost) << kTieBits) +
                         std::min(peakBytes[v][c], kMaxTie));
    }
  if (banned)
    unary[banned->first][banned->second] = kForbidden;
  SmallVector<unsigned> plan;
  Cost total = minimizer->solve(unary, plan);
  return {total >= kForbidden ? kForbidden : total >> kTieBits,
          std::move(plan)};
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

void FunctionPlanner::annotate(ArrayRef<unsigned> plan) {
  MLIRContext *ctx = fn->getContext();
  for (auto [v, var] : llvm::enumerate(vars)) {
    const Choice &c = var.choices[plan[v]];
    if (auto it = carriedTo.find(v); it != carriedTo.end())
      fn.setResultAttr(it->second, "mesh.sharding", c.results[0]);
    if (var.pinned)
      continue;
    switch (var.kind) {
    case Variable::Kind::Argument:
      fn.setArgAttr(var.number, "mesh.sharding", c.results[0]);
      break;
    case Variable::Kind::Result:
      fn.setResultAttr(var.number, "mesh.sharding", c.operands[0]);
      break;
    case Variable::Kind::Op:
      if (c.results.size() == 1) {
        var.op->setDiscardableAttr("mesh.sharding", c.results[0]);
      } else {
        var.op->setDiscardableAttr(
            "mesh.sharding",
            ArrayAttr::get(ctx,
                           llvm::map_to_vector(
                               c.results, [&](ShardingAttr s) -> Attribute {
                                 return s ? Attribute(s) : UnitAttr::get(ctx);
                               })));
      }
      break;
    }
  }
}

void FunctionPlanner::describeVariable(raw_ostream &os, unsigned v) {
  const Variable &var = vars[v];
  switch (var.kind) {
  case Variable::Kind::Argument:
    os << "argument " << var.number << " ("
       << fn.getFunctionBody().getArgument(var.number).getType() << ")";
    return;
  case Variable::Kind::Result:
    os << "result " << var.number;
    return;
  case Variable::Kind::Op:
    os << "'" << var.op->getName() << "' at " << var.op->getLoc();
    return;
  }
}

void FunctionPlanner::describePeak(raw_ostream &os, ArrayRef<unsigned> plan,
                                   const Evaluation &e) {
  Operation *at = nullptr;
  for (Operation &op : fn.getFunctionBody().front())
    if (position[&op] == e.peakPoint)
      at = &op;
  os << "  peak memory: " << formatBytes(e.memory()) << " per device ("
     << e.memory() << " bytes; " << formatBytes(e.argumentBytes)
     << " of arguments, " << formatBytes(e.peakLive) << " live";
  if (at)
    os << " at '" << at->getName() << "' " << at->getLoc();
  os << ")\n";
  SmallVector<std::pair<int64_t, const LiveValue *>> here;
  for (const LiveValue &l : live)
    if (l.def <= e.peakPoint && e.peakPoint <= l.last)
      here.push_back(
          {blockBytes(mesh, cast<RankedTensorType>(l.value.getType()),
                      vars[l.var].choices[plan[l.var]].results[l.result]),
           &l});
  llvm::sort(here, [](auto &a, auto &b) {
    return std::make_tuple(-a.first, a.second->def, a.second->result) <
           std::make_tuple(-b.first, b.second->def, b.second->result);
  });
  for (auto &[bytes, l] : ArrayRef(here).take_front(5)) {
    os << "    " << formatBytes(bytes) << ": ";
    describeVariable(os, l->var);
    os << " result " << l->result << ", "
       << layoutText(vars[l->var].choices[plan[l->var]].results[l->result])
       << "\n";
  }
}

void FunctionPlanner::explainPlan(ArrayRef<unsigned> plan, const Evaluation &e,
                                  uint64_t weight, Cost lowerBound,
                                  bool proven) {
  raw_ostream &os = llvm::errs();
  os << "auto-shard @" << SymbolTable::getSymbolName(fn).getValue() << " on @"
     << mesh.getSymName() << " (" << mesh.getAxisListForDiagnostic()
     << "): " << formatPs(e.total()) << " per call (communication "
     << formatPs(e.commPs) << ", " << e.commBytes
     << " bytes per device; arithmetic " << formatPs(e.computePs) << ")";
  if (proven)
    os << ", proven optimal\n";
  else
    os << ", not proven optimal: at most " << formatPs(e.total() - lowerBound)
       << " above the optimum\n";
  describePeak(os, plan, e);
  if (model.memoryBudget)
    os << "  budget: " << formatBytes(model.memoryBudget) << " per device\n";
  // Each argument, with the best plan that lays it out otherwise.
  unsigned runnersUp = 0;
  for (auto [v, var] : llvm::enumerate(vars)) {
    if (var.kind != Variable::Kind::Argument)
      continue;
    os << "  ";
    describeVariable(os, v);
    os << ": " << layoutText(var.choices[plan[v]].results[0]);
    if (var.pinned) {
      os << " (annotated)\n";
      continue;
    }
    if (var.choices.size() < 2 || runnersUp == 64) {
      os << "\n";
      continue;
    }
    ++runnersUp;
    auto [cost, other] =
        solve(weight, {}, std::make_pair(unsigned(v), plan[v]));
    if (cost >= kForbidden) {
      os << "; no other layout is possible\n";
      continue;
    }
    Evaluation alt = evaluate(other);
    Cost delta = alt.total() - e.total();
    os << "; runner-up " << layoutText(var.choices[other[v]].results[0]) << ": "
       << formatPs(alt.total()) << " (" << (delta < 0 ? "-" : "+")
       << formatPs(delta < 0 ? -delta : delta) << "), "
       << formatBytes(alt.memory()) << " per device";
    if (model.memoryBudget && alt.memory() > model.memoryBudget)
      os << ", does not fit";
    os << "\n";
  }
  // Every resharding the plan makes.
  for (const Use &u : uses) {
    ShardingAttr from =
        vars[u.producer].choices[plan[u.producer]].results[u.result];
    ShardingAttr to =
        vars[u.consumer].choices[plan[u.consumer]].operands[u.operand];
    const Reshard &r = reshard(from, to, u.type);
    if (r.steps.empty() || r.bytes == 0)
      continue;
    os << "  resharding for ";
    describeVariable(os, u.consumer);
    os << " operand " << u.operand << ": " << layoutText(from) << " -> "
       << layoutText(to) << ", " << r.bytes << " bytes per device, "
       << formatPs(r.ps) << " (";
    llvm::interleaveComma(r.steps, os, [&](const ReshardStep &s) {
      static const char *names[] = {"all_reduce", "reduce_scatter",
                                    "all_gather", "all_slice", "all_to_all"};
      os << names[static_cast<int>(s.kind)] << " [";
      llvm::interleaveComma(s.axes, os);
      os << "]";
    });
    os << ")\n";
  }
}

LogicalResult FunctionPlanner::checkExhaustively(ArrayRef<unsigned> plan,
                                                 bool proven) {
  uint64_t count = 1;
  for (const Variable &v : vars) {
    count *= v.choices.size();
    if (count > 5'000'000)
      return fn.emitError("mesh-auto-shard: verify-exhaustive: more than "
                          "5000000 plans to enumerate");
  }
  SmallVector<unsigned> current(vars.size(), 0);
  Cost best = kForbidden;
  uint64_t fitting = 0;
  for (uint64_t i = 0; i < count; ++i) {
    Evaluation e = evaluate(current);
    if (e.total() < kForbidden &&
        (!model.memoryBudget || e.memory() <= model.memoryBudget)) {
      ++fitting;
      best = std::min(best, e.total());
    }
    for (int v = vars.size() - 1; v >= 0; --v) {
      if (++current[v] < vars[v].choices.size())
        break;
      current[v] = 0;
    }
  }
  Cost chosen = evaluate(plan).total();
  InFlightDiagnostic d = fn.emitRemark()
                         << "mesh-auto-shard: exhaustive check: " << count
                         << " plans, " << fitting << " fit; the least cost of "
                         << "one that fits is "
                         << static_cast<int64_t>(std::min(best, kForbidden))
                         << " ps; the plan costs "
                         << static_cast<int64_t>(chosen) << " ps";
  d.report();
  if (proven && best < chosen)
    return fn.emitError("mesh-auto-shard: the plan said to be optimal is "
                        "not: an enumerated plan costs less");
  return success();
}

/// The cheapest plan that fits the budget: first a Lagrangian search on the
/// memory at the peak point (each weight w, in 2^-20 picoseconds per byte,
/// gives a plan and a lower bound on the optimum: the minimum less w times
/// the budget), then a branch and bound on the variables that hold memory
/// at the constraint points (the peak point, and each point where a plan
/// that fits there peaked elsewhere), bounded by the same two minima at
/// each node, for at most kMaxNodes nodes. Returns whether the plan is
/// proven optimal; `lowerBound` is then its cost, else the bound.
FailureOr<bool>
FunctionPlanner::searchWithinBudget(SmallVectorImpl<unsigned> &best,
                                    Evaluation &bestEval, Cost &lowerBound,
                                    uint64_t &weight) {
  // The search's size: about 4e8 sums of the minimizer's (a second or so
  // here), at least 16 nodes, at most 2000: a count, not a time, so that
  // every machine stops at the same node.
  const unsigned kMaxNodes = static_cast<unsigned>(std::clamp<uint64_t>(
      400'000'000 / std::max<uint64_t>(1, minimizer->getWork()), 16, 2000));
  int64_t budget = model.memoryBudget;
  bool found = false;
  auto allowance = [&](uint64_t w) {
    return (Cost(w) * Cost(budget) + ((Cost(1) << 20) - 1)) >> 20;
  };
  // The plan of least memory seen, for the message when none fits.
  SmallVector<unsigned> leastPlan;
  int64_t leastMemory = INT64_MAX;
  auto consider = [&](ArrayRef<unsigned> plan) {
    Evaluation e = evaluate(plan);
    if (e.total() >= kForbidden)
      return false;
    if (e.memory() < leastMemory) {
      leastMemory = e.memory();
      leastPlan.assign(plan.begin(), plan.end());
    }
    bool ok = e.memory() <= budget;
    if (ok && (!found || e.total() < bestEval.total())) {
      found = true;
      best.assign(plan.begin(), plan.end());
      bestEval = e;
    }
    return ok;
  };
  // The Lagrangian search, for a first plan and the best weight.
  Cost rootBound = lowerBound;
  uint64_t boundWeight = 0;
  auto tryWeight = [&](uint64_t w) {
    auto [obj, plan] = solve(w);
    if (obj - allowance(w) > rootBound) {
      rootBound = obj - allowance(w);
      boundWeight = w;
    }
    return consider(plan);
  };
  Evaluation e0 = bestEval;
  uint64_t scale = static_cast<uint64_t>(std::min<Cost>(
      Cost(1) << 40, (e0.total() << 20) / std::max<int64_t>(1, e0.memory())));
  uint64_t lo = 0, hi = std::max<uint64_t>(1, scale / 64);
  bool hiFits = false;
  // Up to 2^40 (2^20 ps a byte: memory above any time).
  while (hi <= (uint64_t(1) << 40)) {
    if ((hiFits = tryWeight(hi)))
      break;
    lo = hi;
    hi *= 4;
  }
  if (hiFits)
    // To within 1/64 of the weight.
    for (int i = 0; i < 24 && hi - lo > std::max<uint64_t>(1, hi / 64); ++i) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (tryWeight(mid))
        hi = mid;
      else
        lo = mid;
    }

  // Branch and bound.
  SmallVector<unsigned> points = {peakPoint};
  // Per variable and choice, the bytes of each result (of the argument).
  auto bytesOf = [&](unsigned v, unsigned c, unsigned r) {
    const Variable &var = vars[v];
    if (var.kind == Variable::Kind::Argument)
      return peakBytes[v][c];
    Value value = var.op->getResult(r);
    return blockBytes(mesh, cast<RankedTensorType>(value.getType()),
                      var.choices[c].results[r]);
  };
  std::vector<int> fixed(vars.size(), -1);
  auto minBytes = [&](unsigned v, unsigned r) {
    if (fixed[v] >= 0)
      return bytesOf(v, fixed[v], r);
    int64_t m = INT64_MAX;
    for (unsigned c = 0; c < vars[v].choices.size(); ++c)
      m = std::min(m, bytesOf(v, c, r));
    return m;
  };
  auto memoryMayFit = [&]() {
    int64_t args = 0;
    for (auto [v, var] : llvm::enumerate(vars))
      if (var.kind == Variable::Kind::Argument)
        args += minBytes(v, 0);
    for (unsigned p : points) {
      int64_t total = args;
      for (const LiveValue &l : live)
        if (l.def <= p && p <= l.last)
          total += minBytes(l.var, l.result);
      if (total > budget)
        return false;
    }
    return true;
  };
  // The variables whose choice changes the memory at a constraint point,
  // the largest change first (ties: the first variable).
  SmallVector<unsigned> branchOrder;
  auto order = [&]() {
    SmallVector<std::pair<int64_t, unsigned>> keyed;
    llvm::SmallBitVector seen(vars.size());
    auto add = [&](unsigned v, unsigned r) {
      int64_t lo = INT64_MAX, hi = 0;
      for (unsigned c = 0; c < vars[v].choices.size(); ++c) {
        lo = std::min(lo, bytesOf(v, c, r));
        hi = std::max(hi, bytesOf(v, c, r));
      }
      if (hi > lo && !seen.test(v)) {
        seen.set(v);
        keyed.push_back({-(hi - lo), v});
      }
    };
    for (auto [v, var] : llvm::enumerate(vars))
      if (var.kind == Variable::Kind::Argument)
        add(v, 0);
    for (unsigned p : points)
      for (const LiveValue &l : live)
        if (l.def <= p && p <= l.last)
          add(l.var, l.result);
    llvm::sort(keyed);
    branchOrder.clear();
    for (auto &[k, v] : keyed)
      branchOrder.push_back(v);
  };
  order();
  unsigned nodes = 0;
  bool capped = false;
  Cost openBound = kForbidden;
  std::function<void(Cost)> visit = [&](Cost parentBound) {
    if (found && parentBound >= bestEval.total())
      return;
    if (nodes++ >= kMaxNodes) {
      capped = true;
      openBound = std::min(openBound, parentBound);
      return;
    }
    if (!memoryMayFit())
      return;
    auto [obj0, plan0] = solve(0, fixed);
    if (obj0 >= kForbidden)
      return;
    Cost bound = std::max(parentBound, obj0);
    bool fits0 = consider(plan0);
    SmallVector<unsigned> guide = plan0;
    if (boundWeight) {
      auto [obj1, plan1] = solve(boundWeight, fixed);
      bound = std::max(bound, obj1 - allowance(boundWeight));
      consider(plan1);
      guide = plan1;
    }
    // The least cost here fits: nothing below this node is cheaper.
    if (fits0 || (found && bound >= bestEval.total()))
      return;
    auto next =
        llvm::find_if(branchOrder, [&](unsigned v) { return fixed[v] < 0; });
    if (next == branchOrder.end()) {
      // Every variable that holds memory at the constraint points is fixed
      // and the cheapest plan peaks at another point: constrain it too.
      unsigned peak = evaluate(plan0).peakPoint;
      if (llvm::is_contained(points, peak))
        return;
      points.push_back(peak);
      order();
      next =
          llvm::find_if(branchOrder, [&](unsigned v) { return fixed[v] < 0; });
      if (next == branchOrder.end())
        return;
    }
    unsigned v = *next;
    SmallVector<unsigned> choices = {guide[v]};
    for (unsigned c = 0; c < vars[v].choices.size(); ++c)
      if (c != guide[v])
        choices.push_back(c);
    for (unsigned c : choices) {
      fixed[v] = c;
      visit(bound);
    }
    fixed[v] = -1;
  };
  visit(rootBound);
  weight = boundWeight;
  if (!found) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (!leastPlan.empty())
      describePeak(os, leastPlan, evaluate(leastPlan));
    int64_t atLeast = 0;
    std::fill(fixed.begin(), fixed.end(), -1);
    for (auto [v, var] : llvm::enumerate(vars))
      if (var.kind == Variable::Kind::Argument)
        atLeast += minBytes(v, 0);
    int64_t liveAtPeak = 0;
    for (const LiveValue &l : live)
      if (l.def <= peakPoint && peakPoint <= l.last)
        liveAtPeak += minBytes(l.var, l.result);
    atLeast += liveAtPeak;
    InFlightDiagnostic d = fn.emitError("mesh-auto-shard: no plan fits ");
    d << formatBytes(budget) << " per device";
    if (capped)
      d << " among the " << kMaxNodes << " nodes searched";
    d << ": the smallest budget that fits is at least " << formatBytes(atLeast);
    if (!leastPlan.empty())
      d << " and at most " << formatBytes(leastMemory)
        << " (the plan of least memory found; what is live at its peak "
           "follows)\n"
        << text;
    return failure();
  }
  if (!capped) {
    lowerBound = bestEval.total();
    return true;
  }
  lowerBound = std::min(openBound, bestEval.total());
  return lowerBound >= bestEval.total();
}

LogicalResult FunctionPlanner::run(bool explain, bool exhaustive) {
  auto [cost0, plan0] = solve(0);
  if (cost0 >= kForbidden)
    return fn.emitError("mesh-auto-shard: no plan is possible (the "
                        "annotations cannot be reached from each other)");
  Evaluation e0 = evaluate(plan0);
  SmallVector<unsigned> best = plan0;
  Evaluation bestEval = e0;
  Cost lowerBound = e0.total();
  bool fits = !model.memoryBudget || e0.memory() <= model.memoryBudget;
  uint64_t weight = 0;
  bool proven = true;
  if (!fits) {
    FailureOr<bool> exact =
        searchWithinBudget(best, bestEval, lowerBound, weight);
    if (failed(exact))
      return failure();
    proven = *exact;
  }
  annotate(best);
  if (explain)
    explainPlan(best, bestEval, weight, lowerBound, proven);
  if (exhaustive && failed(checkExhaustively(best, proven)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// True when the user annotated something in `fn`: an argument or result
/// (mesh.sharding, mesh.carried), an op, or a constraint.
bool isAnnotatedFunction(FunctionOpInterface fn) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, "mesh.sharding") || fn.getArgAttr(i, "mesh.carried"))
      return true;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (fn.getResultAttr(i, "mesh.sharding"))
      return true;
  return fn
      ->walk([](Operation *op) {
        return isa<ShardOp>(op) || isAnnotated(op) ? WalkResult::interrupt()
                                                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The mesh of `fn`: the one its annotations name (all the same), else the
/// module's only mesh.
FailureOr<MeshOp> findMesh(FunctionOpInterface fn, ModuleOp module,
                           SymbolTableCollection &tables) {
  FlatSymbolRefAttr named;
  Operation *namedBy = nullptr;
  auto see = [&](Attribute a, Operation *where) -> LogicalResult {
    auto check = [&](ShardingAttr s) -> LogicalResult {
      if (!named) {
        named = s.getMesh();
        namedBy = where;
        return success();
      }
      if (s.getMesh() == named)
        return success();
      InFlightDiagnostic d = where->emitError(
          "mesh-auto-shard: annotations on two meshes in one function (");
      d << named << " and " << s.getMesh() << ")";
      d.attachNote(namedBy->getLoc()) << "the first here";
      return failure();
    };
    if (auto s = dyn_cast_or_null<ShardingAttr>(a))
      return check(s);
    if (auto array = dyn_cast_or_null<ArrayAttr>(a))
      for (Attribute e : array)
        if (auto s = dyn_cast<ShardingAttr>(e); s && failed(check(s)))
          return failure();
    return success();
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (failed(see(fn.getArgAttr(i, "mesh.sharding"), fn)))
      return failure();
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (failed(see(fn.getResultAttr(i, "mesh.sharding"), fn)))
      return failure();
  WalkResult walked = fn->walk([&](Operation *op) {
    if (failed(see(op->getDiscardableAttr("mesh.sharding"), op)))
      return WalkResult::interrupt();
    if (auto shard = dyn_cast<ShardOp>(op))
      if (failed(see(shard.getSharding(), op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  if (named) {
    auto mesh = tables.lookupNearestSymbolFrom<MeshOp>(fn, named);
    if (!mesh)
      return fn.emitError("mesh-auto-shard: no mesh ") << named;
    return mesh;
  }
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return fn.emitError("mesh-auto-shard: no annotation names a mesh, and "
                        "the module has ")
           << meshes.size() << " meshes: annotate one value";
  return meshes.front();
}

struct AutoShardPass : public mesh::impl::AutoShardBase<AutoShardPass> {
  using AutoShardBase::AutoShardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    CostModel model;
    std::string error;
    // A quantity option: its value, or an error naming it and what it
    // expects.
    auto quantity = [&](StringRef option, StringRef text, StringRef unit,
                        StringRef expected) -> std::optional<int64_t> {
      std::optional<double> v = parseQuantity(text, unit);
      if (!v || *v < 1 || *v > 9e18) {
        module.emitError("mesh-auto-shard: ")
            << option << ": cannot read '" << text << "' (expected " << expected
            << ")";
        return std::nullopt;
      }
      return static_cast<int64_t>(std::llround(*v));
    };
    if (!memoryPerDevice.empty()) {
      std::optional<int64_t> b = quantity("memory-per-device", memoryPerDevice,
                                          "B", "bytes, as 24GiB or 1e9");
      if (!b)
        return signalPassFailure();
      model.memoryBudget = *b;
    }
    std::optional<int64_t> rate =
        quantity("flops", flops, "", "operations per second, as 1e11 or 50G");
    if (!rate)
      return signalPassFailure();
    model.flopsPerSecond = *rate;
    if (failed(parseAxisCosts(axisCost, model, error))) {
      module.emitError("mesh-auto-shard: ") << error;
      return signalPassFailure();
    }
    SymbolTableCollection tables;
    SmallVector<FunctionOpInterface> functions;
    module.walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        functions.push_back(fn);
    });
    for (FunctionOpInterface fn : functions) {
      // A function nothing annotates is left as it is (replicated), as a
      // caller comparing a plan with the whole program wants it.
      if (!isAnnotatedFunction(fn))
        continue;
      // As propagation does: generics drop the results nobody uses (the
      // argmax beside a max), whose index would keep a loop whole.
      SmallVector<Operation *> generics;
      fn->walk([&](linalg::GenericOp g) {
        if (!isAnnotated(g))
          generics.push_back(g);
      });
      eraseUnusedLinalgResults(generics);
      FailureOr<MeshOp> mesh = findMesh(fn, module, tables);
      if (failed(mesh))
        return signalPassFailure();
      for (const auto &entry : model.axes)
        if (!mesh->getAxisIndex(entry.getKey())) {
          fn.emitError("mesh-auto-shard: axis-cost names axis '")
              << entry.getKey() << "', which @" << mesh->getSymName()
              << " does not have (" << mesh->getAxisListForDiagnostic() << ")";
          return signalPassFailure();
        }
      FunctionPlanner planner(fn, *mesh, model, tables);
      if (failed(planner.build()) ||
          failed(planner.run(explain, verifyExhaustive)))
        return signalPassFailure();
    }
  }
};

} // namespace
