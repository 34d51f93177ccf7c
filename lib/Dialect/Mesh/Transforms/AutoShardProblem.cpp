//===- AutoShardProblem.cpp - mesh-auto-shard's variables and costs -------===//
//
// Builds one function's problem (AutoShardPlanner.h): the variables and
// their choices, each use's resharding costs, the liveness the memory is
// measured by; evaluates a plan; runs the minimizer.
//
//===----------------------------------------------------------------------===//

#include "AutoShardPlanner.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <numeric>
#include <set>

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::autoshard;

Cost CostModel::collectivePs(ArrayRef<std::string> group, int64_t bytes) const {
  int64_t latency = 0, bandwidth = INT64_MAX;
  for (const std::string &a : group) {
    const AxisCost &c = of(a);
    latency = std::max(latency, c.latencyPs);
    bandwidth = std::min(bandwidth, c.bytesPerSecond);
  }
  return Cost(latency) +
         Cost(bytes) * Cost(1'000'000'000'000) / Cost(bandwidth);
}

bool autoshard::isAnnotated(Operation *op) {
  return op->getDiscardableAttr("mesh.sharding") != nullptr;
}

//===----------------------------------------------------------------------===//
// Choices
//===----------------------------------------------------------------------===//

/// The mesh axes that can split anything (size above 1), in mesh order.
static SmallVector<StringRef> splittingAxes(MeshOp mesh) {
  SmallVector<StringRef> axes;
  for (auto [name, size] : llvm::zip(
           mesh.getAxisNames().getAsValueRange<StringAttr>(), mesh.getShape()))
    if (size > 1)
      axes.push_back(name);
  return axes;
}

/// Steps `where` (each entry -1 or below `limit`; the last moves fastest)
/// to the next assignment; false after the last.
static bool nextAssignment(SmallVectorImpl<int> &where, int limit) {
  for (int a = where.size() - 1; a >= 0; --a) {
    if (++where[a] < limit)
      return true;
    where[a] = -1;
  }
  return false;
}

void FunctionPlanner::enumerateLayouts(RankedTensorType type,
                                       SmallVectorImpl<ShardingAttr> &out) {
  SmallVector<StringRef> axes = splittingAxes(mesh);
  unsigned rank = type.getRank();
  // Each axis: -1 (none) or a dim.
  SmallVector<int, 4> where(axes.size(), -1);
  do {
    SmallVector<SmallVector<StringRef>> dims(rank);
    for (auto [a, d] : llvm::enumerate(where))
      if (d >= 0)
        dims[d].push_back(axes[a]);
    bool ok = llvm::all_of(llvm::seq(rank), [&](unsigned d) {
      if (dims[d].empty())
        return true;
      int64_t size = type.getDimSize(d);
      int64_t group = mesh.getGroupSize(dims[d]);
      return !ShapedType::isDynamic(size) && !ShapedType::isDynamic(group) &&
             size % group == 0;
    });
    if (ok)
      out.push_back(ShardingAttr::get(meshRef, dims));
  } while (nextAssignment(where, rank));
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

Choice FunctionPlanner::ruleChoice(Operation *op, const ShardingRule &rule,
                                   ArrayRef<AxisListAttr> factors) {
  Choice c;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    c.operands.push_back(
        isa<RankedTensorType>(operand.getType()) && i < rule.operandDims.size()
            ? projector.project(meshRef, factors, rule.operandDims[i])
            : ShardingAttr());
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    c.results.push_back(isa<RankedTensorType>(result.getType()) &&
                                i < rule.resultDims.size()
                            ? projector.projectResult(meshRef, rule, factors,
                                                      rule.resultDims[i])
                            : ShardingAttr());
  c.computePs = computePs(op, rule, factors);
  return c;
}

/// The factors of `rule` an axis may shard: not blocked, without halos, of
/// known size, seen in a result (so that the partitioner derives the same
/// assignment from the results' annotations): a parallel factor on a
/// result dim (a product's part through its product), a reduction when it
/// is the op's only one.
static SmallVector<int, 8> getShardableFactors(const ShardingRule &rule) {
  llvm::SmallBitVector onResult(rule.factors.size());
  for (ArrayRef<int64_t> dims : rule.resultDims)
    for (int64_t f : dims)
      if (f >= 0)
        onResult.set(f);
  unsigned reductions = llvm::count_if(
      rule.factors, [](auto &f) { return f.reduction && !f.blocked; });
  SmallVector<int, 8> allowed;
  for (auto [i, f] : llvm::enumerate(rule.factors)) {
    bool visible = f.reduction ? reductions == 1
                               : onResult.test(i) || (f.product >= 0 &&
                                                      onResult.test(f.product));
    if (!f.blocked && f.maxHalo == 0 && f.numParts == 0 &&
        !ShapedType::isDynamic(f.size) && f.size > 1 && visible)
      allowed.push_back(i);
  }
  return allowed;
}

/// Whether the axes `names` give each factor of `rule` divide it, with each
/// product taking its parts' axes (major first) and split only as blocks:
/// every part before the last split one is split down to 1.
static bool isBlockAssignment(MeshOp mesh, const ShardingRule &rule,
                              SmallVectorImpl<SmallVector<StringRef>> &names) {
  for (auto [f, factor] : llvm::enumerate(rule.factors)) {
    if (names[f].empty())
      continue;
    int64_t group = mesh.getGroupSize(names[f]);
    if (ShapedType::isDynamic(group) || factor.size % group != 0)
      return false;
  }
  for (auto [f, product] : llvm::enumerate(rule.factors)) {
    if (!product.numParts)
      continue;
    unsigned first = f - product.numParts;
    int last = -1;
    for (unsigned p = first; p < f; ++p)
      if (!names[p].empty())
        last = p;
    for (int p = first; p < last; ++p)
      if (mesh.getGroupSize(names[p]) != rule.factors[p].size)
        return false;
    for (unsigned p = first; p < f; ++p)
      llvm::append_range(names[f], names[p]);
  }
  return true;
}

void FunctionPlanner::enumerateRule(Operation *op, const ShardingRule &rule,
                                    SmallVectorImpl<Choice> &out) {
  MLIRContext *ctx = op->getContext();
  unsigned numFactors = rule.factors.size();
  SmallVector<int, 8> allowed = getShardableFactors(rule);
  SmallVector<StringRef> axes = splittingAxes(mesh);
  // Each axis: an index into `allowed`, or -1.
  SmallVector<int, 4> where(axes.size(), -1);
  // Two assignments with the same layouts are one choice.
  std::set<std::vector<const void *>> seen;
  do {
    SmallVector<SmallVector<StringRef>> names(numFactors);
    for (auto [a, w] : llvm::enumerate(where))
      if (w >= 0)
        names[allowed[w]].push_back(axes[a]);
    if (!isBlockAssignment(mesh, rule, names))
      continue;
    SmallVector<AxisListAttr, 8> factors(numFactors);
    for (unsigned f = 0; f < numFactors; ++f)
      if (!names[f].empty())
        factors[f] = AxisListAttr::get(ctx, names[f]);
    Choice c = ruleChoice(op, rule, factors);
    std::vector<const void *> key;
    for (ShardingAttr s : llvm::concat<ShardingAttr>(c.operands, c.results))
      key.push_back(s.getAsOpaquePointer());
    if (seen.insert(std::move(key)).second)
      out.push_back(std::move(c));
  } while (nextAssignment(where, allowed.size()));
}

Choice FunctionPlanner::pinnedRuleChoice(Operation *op,
                                         const ShardingRule &rule) {
  StringAttr name = StringAttr::get(op->getContext(), "mesh.sharding");
  FactorAssignment assignment = assignFactorsFromResults(
      rule, op, meshCache, name, [](unsigned) { return ShardingAttr(); });
  Choice c = ruleChoice(op, rule, assignment.getFactors());
  // The results are as annotated (which the projection may only approach).
  for (unsigned i = 0; i < c.results.size(); ++i)
    if (ShardingAttr annotated = getResultAnnotation(op, i, name))
      c.results[i] = annotated;
  return c;
}

//===----------------------------------------------------------------------===//
// Variables
//===----------------------------------------------------------------------===//

LogicalResult FunctionPlanner::addArguments() {
  for (BlockArgument arg : fn.getFunctionBody().getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    unsigned number = arg.getArgNumber();
    auto fixed = fn.getArgAttrOfType<ShardingAttr>(number, "mesh.sharding");
    unsigned var = addLayoutVariable(Variable::Kind::Argument, number, type,
                                     fixed, /*asOperand=*/false);
    producers[arg] = {var, 0};
    // `mesh.carried = N`: result N is this argument's next value (a
    // parameter and its update); both take one layout. The dialect checks
    // that N names a result of the argument's type.
    auto carried = fn.getArgAttrOfType<IntegerAttr>(number, "mesh.carried");
    if (!carried)
      continue;
    if (!carriedFrom.try_emplace(carried.getInt(), var).second)
      return fn.emitError("mesh-auto-shard: two arguments are carried to "
                          "result ")
             << carried.getInt();
    carriedTo[var] = carried.getInt();
  }
  return success();
}

LogicalResult FunctionPlanner::addReturn(Operation *ret) {
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
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
    addUse(v, var, 0, ret);
  }
  return success();
}

/// A use by `consumer`'s operand `operand` of `v` (read by `user`), if a
/// variable produces `v`.
void FunctionPlanner::addUse(Value v, unsigned consumer, unsigned operand,
                             Operation *user, bool asPassedIn) {
  auto it = producers.find(v);
  if (it == producers.end())
    return;
  // The partitioner puts the resharding before the loops around `user`
  // that `v` comes from outside of: those loops do not repeat it.
  Operation *at = getReshardPoint(v, user);
  auto times = timesInside.find(at->getParentOp());
  Use u{it->second.first,
        it->second.second,
        consumer,
        operand,
        cast<RankedTensorType>(v.getType()),
        times == timesInside.end() ? 1 : times->second};
  u.asPassedIn = asPassedIn;
  u.block = at->getBlock();
  uses.push_back(u);
}

/// Values that need no data: made again in each layout a user wants (an
/// annotation on one changes nothing the plan pays for).
bool FunctionPlanner::needsNoData(Operation *op, OpRole role) {
  return role == OpRole::Rule && classifier.hasRuleInterface(op) &&
         op->getNumResults() == 1 &&
         cast<ShardingRuleOpInterface>(op).needsNoData() &&
         llvm::all_of(op->getOperands(), [&](Value v) {
           return !isa<RankedTensorType>(v.getType()) || free.contains(v);
         });
}

/// The error for an op outside the plan space.
static LogicalResult notInPlanSpace(Operation *op) {
  return op->emitError("mesh-auto-shard: '")
         << op->getName()
         << "' has regions that are neither a loop nor a branch "
            "(RegionBranchOpInterface): not in the plan space";
}

/// The ranked tensors defined outside `op` that ops in its regions use, in
/// the order of their first use: an op without a rule runs on them whole.
static SmallVector<Value> capturedTensors(Operation *op) {
  llvm::SetVector<Value> captured;
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value v : inner->getOperands())
      if (isa<RankedTensorType>(v.getType()) &&
          !op->isAncestor(v.getParentBlock()->getParentOp()))
        captured.insert(v);
  });
  return captured.takeVector();
}

FailureOr<Variable> FunctionPlanner::makeOpVariable(Operation *op, OpRole role,
                                                    uint64_t times) {
  Variable var;
  var.kind = Variable::Kind::Op;
  var.op = op;
  // Ops the plan cannot change have one choice.
  var.pinned = true;
  FailureOr<ShardingRule> rule = failure();
  // As propagation does: an op without a rule keeps its tensors whole.
  if (role == OpRole::Rule && failed(rule = getShardingRule(op)))
    role = OpRole::NoRule;
  switch (role) {
  case OpRole::Rule: {
    if (op->getNumRegions() && !isa<linalg::LinalgOp>(op) &&
        !isa<ShardingRuleOpInterface>(op))
      return notInPlanSpace(op);
    if (isAnnotated(op)) {
      var.choices.push_back(pinnedRuleChoice(op, *rule));
    } else {
      var.pinned = false;
      enumerateRule(op, *rule, var.choices);
    }
    break;
  }
  case OpRole::Shard: {
    ShardingAttr s = cast<ShardOp>(op).getSharding();
    if (s && s.getMesh() != meshRef)
      return op->emitError("mesh-auto-shard: a constraint on another mesh "
                           "than the function's (")
             << s.getMesh() << ")";
    Choice c;
    c.operands.push_back(s);
    c.results.push_back(s);
    var.choices.push_back(std::move(c));
    break;
  }
  case OpRole::NoRule: {
    warnNoShardingRule(op);
    // Whole operands, and whole tensors from outside for its regions (its
    // uses of them follow the operands' in Use::operand).
    Choice c;
    c.operands.resize(op->getNumOperands() +
                      (op->getNumRegions() ? capturedTensors(op).size() : 0));
    c.results.resize(op->getNumResults());
    var.choices.push_back(std::move(c));
    break;
  }
  case OpRole::Call:
    return op->emitError("mesh-auto-shard: calls are not in the plan space "
                         "yet (inline the callee first)");
  case OpRole::RegionBranch:
  case OpRole::RegionTerminator:
    llvm_unreachable("loops and branches are added by addRegionBranch");
  case OpRole::PerDevice:
    return op->emitError("mesh-auto-shard: the function is already per "
                         "device (it has collectives)");
  case OpRole::FunctionReturn:
    llvm_unreachable("returns are added by addReturn");
  }
  if (var.choices.empty())
    return op->emitError("mesh-auto-shard: no choice for this op");
  for (Choice &c : var.choices)
    c.computePs *= times;
  return var;
}

void FunctionPlanner::addUsesAndResults(Operation *op, unsigned id) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (isa<RankedTensorType>(operand.get().getType()))
      addUse(operand.get(), id, operand.getOperandNumber(), op);
  }
  // An op without a rule reads the tensors its regions use whole
  // (makeOpVariable gave them operand slots after the operands).
  if (vars[id].choices.front().operands.size() > op->getNumOperands())
    for (auto [i, v] : llvm::enumerate(capturedTensors(op)))
      addUse(v, id, op->getNumOperands() + i, op);
  for (OpResult r : op->getResults())
    if (isa<RankedTensorType>(r.getType()))
      producers[r] = {id, r.getResultNumber()};
}

LogicalResult FunctionPlanner::addOp(Operation *op, uint64_t times) {
  OpRole role = classifier.classify(op);
  if (role == OpRole::FunctionReturn)
    return addReturn(op);
  // A loop's or branch's terminator: what it passes on is a use of the
  // values it is tied to (addRegionBranch).
  if (role == OpRole::RegionTerminator)
    return success();
  if (role == OpRole::RegionBranch)
    return addRegionBranch(cast<RegionBranchOpInterface>(op), times);
  bool hasTensor =
      llvm::any_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
      llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
  if (!hasTensor)
    return success();
  if (needsNoData(op, role)) {
    free.insert(op->getResult(0));
    return success();
  }
  FailureOr<Variable> var = makeOpVariable(op, role, times);
  if (failed(var))
    return failure();
  vars.push_back(std::move(*var));
  addUsesAndResults(op, vars.size() - 1);
  return success();
}

LogicalResult FunctionPlanner::addBlock(Block &block, uint64_t times) {
  for (Operation &op : block) {
    position[&op] = numPoints++;
    if (failed(addOp(&op, times)))
      return failure();
    endPosition[&op] = numPoints - 1;
  }
  return success();
}

/// How many times a region of `op` runs each time `op` does: a loop's
/// constant trip count (at most kMaxTimes), else once.
static uint64_t timesPerRun(RegionBranchOpInterface op) {
  auto loop = dyn_cast<LoopLikeOpInterface>(op.getOperation());
  if (!loop)
    return 1;
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips)
    return 1;
  if (trips->getActiveBits() > 64)
    return kMaxTimes;
  return std::clamp<uint64_t>(trips->getZExtValue(), 1, kMaxTimes);
}

/// A loop or branch. Each of its tied groups (an operand passed in, the
/// region arguments that receive it, the values its terminators pass on,
/// the results) is one variable, its layout, as the partitioner lays the
/// group out: the operands passed in and the values passed on are uses of
/// it, and it produces the region arguments and the results. The ops inside
/// are priced for each time their region runs.
LogicalResult FunctionPlanner::addRegionBranch(RegionBranchOpInterface op,
                                               uint64_t times) {
  FailureOr<SmallVector<TiedGroup>> groups = getTiedValueGroups(op);
  if (failed(groups))
    return op->emitError("mesh-auto-shard: '")
           << op->getName()
           << "' has a tensor region argument or result that receives no "
              "value it passes on (RegionBranchOpInterface): not in the plan "
              "space";
  StringAttr name = StringAttr::get(op->getContext(), "mesh.sharding");
  DenseMap<OpOperand *, unsigned> groupOf;
  DenseSet<unsigned> withoutResult;
  for (auto [g, group] : llvm::enumerate(*groups)) {
    auto type = dyn_cast<RankedTensorType>(group.values.front().getType());
    if (!type)
      continue;
    if (llvm::any_of(group.values,
                     [&](Value v) { return v.getType() != type; }))
      return op->emitError("mesh-auto-shard: values of one loop-carried or "
                           "branch group differ in type (")
             << type << "): not in the plan space";
    ShardingAttr fixed;
    SmallVector<unsigned, 1> results;
    for (Value input : group.inputs)
      if (auto r = dyn_cast<OpResult>(input)) {
        results.push_back(r.getResultNumber());
        if (ShardingAttr s =
                getResultAnnotation(op, r.getResultNumber(), name)) {
          if (s.getMesh() != meshRef)
            return op->emitError("mesh-auto-shard: result ")
                   << r.getResultNumber() << " is annotated on another mesh "
                   << "than the function's (" << s.getMesh() << ")";
          fixed = s;
        }
      }
    // A group no result carries is laid out as the value passed in; one
    // passed in that needs no data is made whole.
    if (results.empty() && llvm::any_of(group.operands, [&](OpOperand *o) {
          return o->getOwner() == op.getOperation() &&
                 !producers.contains(o->get());
        }))
      fixed = ShardingAttr::get(
          meshRef, SmallVector<SmallVector<StringRef>>(type.getRank()));
    unsigned var = addLayoutVariable(Variable::Kind::Tied, g, type, fixed,
                                     /*asOperand=*/false);
    vars[var].op = op;
    vars[var].type = type;
    vars[var].tiedResults = std::move(results);
    if (vars[var].tiedResults.empty())
      withoutResult.insert(var);
    for (OpOperand *operand : group.operands)
      groupOf[operand] = var;
    for (Value input : group.inputs)
      producers[input] = {var, 0};
  }
  auto addGroupUse = [&](OpOperand &operand) {
    auto group = groupOf.find(&operand);
    if (group == groupOf.end())
      return;
    addUse(operand.get(), group->second, 0, operand.getOwner(),
           operand.getOwner() == op.getOperation() &&
               withoutResult.contains(group->second));
  };
  for (OpOperand &operand : op->getOpOperands())
    addGroupUse(operand);
  // (Loops nested deeper than kMaxTimes runs all count kMaxTimes: their
  // costs keep their order against the ops outside them.)
  uint64_t inside =
      std::min(kMaxTimes, llvm::SaturatingMultiply(times, timesPerRun(op)));
  timesInside[op] = inside;
  for (Region &region : op->getRegions()) {
    if (region.empty())
      continue;
    if (!region.hasOneBlock())
      return op->emitError("mesh-auto-shard: regions of one block only");
    if (failed(addBlock(region.front(), inside)))
      return failure();
    if (Operation *terminator = region.front().getTerminator())
      for (OpOperand &operand : terminator->getOpOperands())
        addGroupUse(operand);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

LogicalResult FunctionPlanner::build() {
  Region &body = fn.getFunctionBody();
  if (!body.hasOneBlock())
    return fn.emitError("mesh-auto-shard: functions of one block only");
  if (failed(addArguments()) || failed(addBlock(body.front(), 1)))
    return failure();
  fillResultBytes();
  findCopyGroups();
  constexpr uint64_t kMaxEntries = uint64_t(1) << 26;
  if (!copies.empty()) {
    // The shared copies widen the elimination: kept unless the problem
    // without them is much cheaper to solve (a measure of work, the same
    // on every machine) or they make it too wide. Decided on the
    // elimination's structure alone, before any table is made.
    auto workOf = [&]() -> std::optional<uint64_t> {
      PairwiseMinimizer shape = makeMinimizer(Tables::StructureOnly);
      std::string ignored;
      if (failed(shape.prepare(kMaxEntries, ignored)))
        return std::nullopt;
      return shape.getWork();
    };
    std::optional<uint64_t> shared = workOf();
    std::vector<CopyGroup> groups = std::move(copies);
    DenseMap<unsigned, unsigned> groupOf = std::move(groupOfUse);
    copies.clear();
    groupOfUse.clear();
    std::optional<uint64_t> alone = workOf();
    if (!shared || (alone && *shared > 4 * *alone + (uint64_t(1) << 24))) {
      unsharedValues += groups.size();
    } else {
      copies = std::move(groups);
      groupOfUse = std::move(groupOf);
    }
  }
  std::string why;
  minimizer.emplace(makeMinimizer());
  if (failed(minimizer->prepare(kMaxEntries, why)) &&
      failed(narrow(kMaxEntries, why)))
    return fn.emitError("mesh-auto-shard: the program is too wide to solve, "
                        "even with each op's layouts cut to two: ")
           << why;
  computeLiveness();
  return success();
}

/// True when `c` keeps every tensor whole (null, or an annotation that
/// splits nothing).
static bool isWholeChoice(const Choice &c) {
  auto whole = [](ShardingAttr s) { return sameLayout(s, ShardingAttr()); };
  return llvm::all_of(c.operands, whole) && llvm::all_of(c.results, whole);
}

LogicalResult FunctionPlanner::narrow(uint64_t maxEntries, std::string &why) {
  // A bound for the whole problem first: every use costs at least nothing,
  // every op at least its cheapest arithmetic.
  Cost bound = 0;
  for (const Variable &var : vars) {
    Cost least = kForbidden;
    for (const Choice &c : var.choices)
      least = std::min(least, c.computePs);
    bound += least;
  }
  unsigned before = 0;
  for (const Variable &var : vars)
    before += var.choices.size();
  // Then the widest variables lose their dearest half (by arithmetic, the
  // fixed order among equals), keeping the choice that keeps everything
  // whole, until the elimination fits.
  for (int round = 0; round < 16; ++round) {
    size_t widest = 0;
    for (const Variable &var : vars)
      if (var.kind != Variable::Kind::Copy && !var.pinned)
        widest = std::max(widest, var.choices.size());
    if (widest <= 2)
      return failure();
    for (Variable &var : vars) {
      if (var.kind == Variable::Kind::Copy || var.pinned ||
          var.choices.size() * 2 <= widest)
        continue;
      SmallVector<unsigned> order = llvm::to_vector(
          llvm::seq<unsigned>(0, static_cast<unsigned>(var.choices.size())));
      // (Ties by index: one order on every machine.)
      llvm::sort(order, [&](unsigned a, unsigned b) {
        return std::make_pair(var.choices[a].computePs, a) <
               std::make_pair(var.choices[b].computePs, b);
      });
      llvm::SmallBitVector keep(var.choices.size());
      for (unsigned i = 0; i < (var.choices.size() + 1) / 2; ++i)
        keep.set(order[i]);
      for (auto [c, choice] : llvm::enumerate(var.choices))
        if (isWholeChoice(choice))
          keep.set(c);
      SmallVector<Choice, 8> kept;
      for (auto [c, choice] : llvm::enumerate(var.choices))
        if (keep.test(c))
          kept.push_back(std::move(choice));
      var.choices = std::move(kept);
    }
    minimizer.emplace(makeMinimizer());
    why.clear();
    if (succeeded(minimizer->prepare(maxEntries, why))) {
      unsigned after = 0;
      for (const Variable &var : vars)
        after += var.choices.size();
      narrowed = {bound, before - after};
      return success();
    }
  }
  return failure();
}

/// Bytes of one device's block of `t` laid out as `s` (null: whole).
static int64_t blockBytes(MeshOp mesh, RankedTensorType t, ShardingAttr s) {
  int64_t n = t.getNumElements() * getElementBytes(t.getElementType());
  if (!s)
    return n;
  for (AxisListAttr axes : s.getDims())
    for (StringAttr a : axes)
      n /= mesh.getAxisSize(a.getValue());
  return n;
}

void FunctionPlanner::fillResultBytes() {
  for (Variable &var : vars)
    for (Choice &c : var.choices) {
      c.resultBytes.assign(c.results.size(), 0);
      for (auto [r, s] : llvm::enumerate(c.results)) {
        Type type = var.kind == Variable::Kind::Argument
                        ? fn.getFunctionBody().getArgument(var.number).getType()
                    : var.kind == Variable::Kind::Tied
                        ? Type(var.type)
                        : var.op->getResult(r).getType();
        if (auto tensor = dyn_cast<RankedTensorType>(type))
          c.resultBytes[r] = blockBytes(mesh, tensor, s);
      }
    }
}

std::pair<Cost, int64_t>
FunctionPlanner::useCost(const Use &u, ShardingAttr from, ShardingAttr to) {
  const Reshard &r = reshard(from, to, u.type);
  if (!r.possible || (u.asPassedIn && !sameLayout(withoutPartial(from), to)))
    return {kForbidden, 0};
  return {r.ps * u.times,
          int64_t(std::min(Cost(r.bytes) * Cost(u.times), kMaxUseBytes))};
}

/// A minimizer's entry for a cost: shifted for the tie bits, forbidden kept.
static Cost entryOf(Cost c) {
  return c >= kForbidden ? kForbidden : std::min(c, Cost(1) << 70) << kTieBits;
}

/// A use's resharding entries, each distinct pair of layouts priced once
/// (many choices share a layout).
struct FunctionPlanner::UsePrices {
  /// Distinct layouts: `index` numbers a layout by its first appearance.
  struct LayoutIndex {
    SmallVector<ShardingAttr> layouts;
    unsigned index(ShardingAttr s) {
      auto it = llvm::find(layouts, s);
      if (it != layouts.end())
        return static_cast<unsigned>(it - layouts.begin());
      layouts.push_back(s);
      return layouts.size() - 1;
    }
  };
  LayoutIndex from, to;
  /// Per producer choice, per consumer choice: its layout's index.
  SmallVector<unsigned> fromOf, toOf;
  std::vector<Cost> distinct;
  /// The entry for producer choice `i` and consumer choice `j`.
  Cost at(unsigned i, unsigned j) const {
    return distinct[fromOf[i] * to.layouts.size() + toOf[j]];
  }
};

FunctionPlanner::UsePrices FunctionPlanner::priceUse(const Use &u) {
  UsePrices prices;
  for (const Choice &pc : vars[u.producer].choices)
    prices.fromOf.push_back(prices.from.index(pc.results[u.result]));
  for (const Choice &cc : vars[u.consumer].choices)
    prices.toOf.push_back(prices.to.index(cc.operands[u.operand]));
  unsigned nt = prices.to.layouts.size();
  prices.distinct.resize(prices.from.layouts.size() * nt);
  for (auto [i, fl] : llvm::enumerate(prices.from.layouts))
    for (auto [j, tl] : llvm::enumerate(prices.to.layouts))
      prices.distinct[i * nt + j] = entryOf(useCost(u, fl, tl).first);
  return prices;
}

/// The most entries a copy group's table may have.
static constexpr uint64_t kMaxCopyTable = uint64_t(1) << 16;

/// The uses of one value whose reshardings are made in one block, where at
/// least two could want the same layout: a Kind::Copy variable each.
void FunctionPlanner::findCopyGroups() {
  // (producer, result, block) -> its uses, in program order.
  llvm::MapVector<std::tuple<unsigned, unsigned, Block *>,
                  SmallVector<unsigned, 4>>
      byValue;
  for (auto [i, u] : llvm::enumerate(uses))
    if (u.producer != u.consumer && !u.asPassedIn)
      byValue[{u.producer, u.result, u.block}].push_back(i);
  for (auto &[key, members] : byValue) {
    if (members.size() < 2)
      continue;
    // The layouts each use can want; those two or more can are the copy's.
    llvm::MapVector<const void *, unsigned> wanted;
    for (unsigned i : members) {
      const Use &u = uses[i];
      llvm::SmallPtrSet<const void *, 8> seen;
      for (const Choice &c : vars[u.consumer].choices) {
        // (Null and an annotation that splits nothing are both whole: an op
        // without a rule reads null, a constraint [[], []].)
        ShardingAttr s = c.operands[u.operand];
        const void *key =
            sameLayout(s, ShardingAttr()) ? nullptr : s.getAsOpaquePointer();
        if (seen.insert(key).second)
          ++wanted[key];
      }
    }
    CopyGroup g;
    g.producer = std::get<0>(key);
    g.result = std::get<1>(key);
    g.uses = members;
    for (auto [layout, count] : wanted)
      if (count >= 2)
        g.layouts.push_back(ShardingAttr::getFromOpaquePointer(layout));
    if (g.layouts.empty())
      continue;
    // The group's widest table; past the bound its uses are priced one by
    // one (an upper bound on what the partitioner moves).
    uint64_t widest = 0;
    for (unsigned i : members)
      widest =
          std::max<uint64_t>(widest, uint64_t(vars[g.producer].choices.size()) *
                                         (g.layouts.size() + 1) *
                                         vars[uses[i].consumer].choices.size());
    if (widest > kMaxCopyTable) {
      ++unsharedValues;
      continue;
    }
    Variable v;
    v.kind = Variable::Kind::Copy;
    v.op = fn;
    v.number = copies.size();
    v.choices.emplace_back(); // None.
    for (ShardingAttr s : g.layouts) {
      Choice c;
      c.operands.push_back(s);
      v.choices.push_back(std::move(c));
    }
    g.var = vars.size();
    vars.push_back(std::move(v));
    for (unsigned i : members)
      groupOfUse[i] = copies.size();
    copies.push_back(std::move(g));
  }
}

/// `c`, or with `possibleOnly` 0 where it is possible.
static Cost possibleOr(Cost c, bool possibleOnly) {
  return possibleOnly && c < kForbidden ? 0 : c;
}

/// A copy group's tables: the copy made from the producer's layout, and
/// each use's resharding, nothing where the copy has its layout (with
/// `possibleOnly`, only whether each is possible).

void FunctionPlanner::addCopyCosts(PairwiseMinimizer &m, const CopyGroup &g,
                                   bool possibleOnly) {
  const Variable &p = vars[g.producer], &copy = vars[g.var];
  unsigned np = p.choices.size(), nk = copy.choices.size();
  const Use &first = uses[g.uses.front()];
  std::vector<Cost> made(size_t(np) * nk, 0);
  for (unsigned i = 0; i < np; ++i)
    for (unsigned k = 1; k < nk; ++k)
      made[size_t(i) * nk + k] =
          possibleOr(entryOf(useCost(first, p.choices[i].results[g.result],
                                     g.layouts[k - 1])
                                 .first),
                     possibleOnly);
  m.addPair(g.producer, g.var, made);
  for (unsigned ui : g.uses) {
    const Use &u = uses[ui];
    UsePrices prices = priceUse(u);
    unsigned nt = prices.to.layouts.size();
    // Whether copy choice k serves target layout j.
    std::vector<bool> serves(size_t(nk) * nt, false);
    for (unsigned k = 1; k < nk; ++k)
      for (auto [j, tl] : llvm::enumerate(prices.to.layouts))
        serves[k * nt + j] = sameLayout(g.layouts[k - 1], tl);
    unsigned nc = vars[u.consumer].choices.size();
    std::vector<Cost> table(size_t(np) * nk * nc);
    for (unsigned i = 0; i < np; ++i)
      for (unsigned k = 0; k < nk; ++k)
        for (unsigned j = 0; j < nc; ++j)
          table[(size_t(i) * nk + k) * nc + j] =
              serves[k * nt + prices.toOf[j]]
                  ? 0
                  : possibleOr(prices.at(i, j), possibleOnly);
    m.addFactor({g.producer, g.var, u.consumer}, table);
  }
}

/// The tables: each use's resharding time (each distinct pair of layouts
/// priced once: many choices share a layout), or its copy group's.
PairwiseMinimizer FunctionPlanner::makeMinimizer(Tables tables) {
  bool structureOnly = tables == Tables::StructureOnly;
  bool possibleOnly = tables == Tables::Possible;
  PairwiseMinimizer m(
      llvm::map_to_vector(
          vars, [](const Variable &v) { return unsigned(v.choices.size()); }),
      structureOnly);
  for (const CopyGroup &g : copies) {
    if (!structureOnly) {
      addCopyCosts(m, g, possibleOnly);
      continue;
    }
    m.addPair(g.producer, g.var, {});
    for (unsigned ui : g.uses)
      m.addFactor({g.producer, g.var, uses[ui].consumer}, {});
  }
  for (auto [ui, u] : llvm::enumerate(uses)) {
    // An argument returned as it is to the result it is carried to: one
    // variable, nothing to move.
    if (u.producer == u.consumer || groupOfUse.contains(ui))
      continue;
    if (structureOnly) {
      m.addPair(u.producer, u.consumer, {});
      continue;
    }
    UsePrices prices = priceUse(u);
    unsigned np = prices.fromOf.size(), nc = prices.toOf.size();
    std::vector<Cost> table(size_t(np) * nc);
    for (unsigned i = 0; i < np; ++i)
      for (unsigned j = 0; j < nc; ++j)
        table[size_t(i) * nc + j] = possibleOr(prices.at(i, j), possibleOnly);
    m.addPair(u.producer, u.consumer, table);
  }
  return m;
}

std::tuple<int, Cost, int64_t>
FunctionPlanner::bestCopy(const CopyGroup &g, ArrayRef<unsigned> plan) {
  ShardingAttr src =
      vars[g.producer].choices[plan[g.producer]].results[g.result];
  auto total = [&](int k) -> std::pair<Cost, int64_t> {
    Cost ps = 0;
    int64_t bytes = 0;
    if (k >= 0) {
      auto [c, b] = useCost(uses[g.uses.front()], src, g.layouts[k]);
      ps += c;
      bytes += b;
    }
    for (unsigned ui : g.uses) {
      const Use &u = uses[ui];
      ShardingAttr to =
          vars[u.consumer].choices[plan[u.consumer]].operands[u.operand];
      if (k >= 0 && sameLayout(g.layouts[k], to))
        continue;
      auto [c, b] = useCost(u, src, to);
      ps += c;
      bytes += b;
    }
    return {std::min(ps, kForbidden), bytes};
  };
  int best = -1;
  auto [bestPs, bestBytes] = total(-1);
  for (int k = 0; k < static_cast<int>(g.layouts.size()); ++k) {
    auto [ps, bytes] = total(k);
    if (ps < bestPs) {
      best = k;
      bestPs = ps;
      bestBytes = bytes;
    }
  }
  return {best, bestPs, bestBytes};
}

std::vector<bool> FunctionPlanner::reusingUses(ArrayRef<unsigned> plan) {
  std::vector<bool> reusing(uses.size(), false);
  for (const CopyGroup &g : copies) {
    int k = std::get<0>(bestCopy(g, plan));
    if (k < 0)
      continue;
    bool made = false;
    for (unsigned ui : g.uses) {
      const Use &u = uses[ui];
      ShardingAttr to =
          vars[u.consumer].choices[plan[u.consumer]].operands[u.operand];
      if (!sameLayout(g.layouts[k], to))
        continue;
      // The first use that wants the copy makes it; the others reuse it.
      reusing[ui] = made;
      made = true;
    }
  }
  return reusing;
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

/// The planner's steps from `src` to `dst` for a tensor of `type`, or none
/// when there is no plan. The planner sees
/// - axes only as indices, in the order it meets them (the source's dims,
///   its pending axes, the target's, the target's pending axes), and their
///   sizes: layouts that differ by renaming axes of equal size get the same
///   plan, renamed (on a (2, 2, 2) mesh, six pairs are planned once);
/// - the shape only to know which dims divide by which groups of axes (its
///   bytes are fractions of the tensor's), and each group's size divides
///   the mesh's: dims with the same greatest common divisors with the
///   mesh's size get the same plan.
/// So plans are kept by that key, on axes named by their index.
std::optional<SmallVector<ReshardStep>>
FunctionPlanner::plannedSteps(const ShardingLayout &src,
                              const ShardingLayout &dst,
                              RankedTensorType type) {
  SmallVector<StringRef, 8> met;
  std::string key;
  auto put = [&](int64_t n) {
    key.append(reinterpret_cast<const char *>(&n), sizeof(n));
  };
  auto indexOf = [&](StringRef a) {
    auto it = llvm::find(met, a);
    if (it == met.end())
      it = met.insert(met.end(), a);
    return int64_t(it - met.begin());
  };
  auto putLayout = [&](const ShardingLayout &l) {
    for (const SmallVector<std::string> &axes : l.dims) {
      for (const std::string &a : axes)
        put(indexOf(a));
      put(-1);
    }
    put(-2);
    for (const std::string &a : l.partial)
      put(indexOf(a));
    put(-3);
    put(static_cast<int64_t>(l.partialKind));
  };
  putLayout(src);
  putLayout(dst);
  for (StringRef a : met)
    put(mesh.getAxisSize(a));
  put(-4);
  int64_t devices = 1;
  for (int64_t size : mesh.getShape())
    devices *= size;
  SmallVector<int64_t, 4> classes;
  for (int64_t d : type.getShape())
    put(classes.emplace_back(ShapedType::isDynamic(d) ? d
                                                      : std::gcd(d, devices)));
  auto [it, fresh] = plans.try_emplace(key);
  if (fresh) {
    auto rename = [&](const ShardingLayout &l) {
      ShardingLayout named = l;
      for (SmallVector<std::string> &axes : named.dims)
        for (std::string &a : axes)
          a = std::to_string(indexOf(a));
      for (std::string &a : named.partial)
        a = std::to_string(indexOf(a));
      return named;
    };
    auto sizeOf = [&](StringRef index) {
      return mesh.getAxisSize(met[std::stoul(index.str())]);
    };
    std::string why;
    FailureOr<SmallVector<ReshardStep>> made =
        planResharding(rename(src), rename(dst), classes, sizeOf, why);
    if (succeeded(made))
      it->second = std::move(*made);
  }
  // The plan in this pair's names.
  std::optional<SmallVector<ReshardStep>> named = it->second;
  if (named)
    for (ReshardStep &step : *named)
      for (std::string &a : step.axes)
        a = met[std::stoul(a)].str();
  return named;
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
  std::optional<SmallVector<ReshardStep>> plan = plannedSteps(src, dst, type);
  if (!plan) {
    r.possible = false;
    return reshards.try_emplace(key, std::move(r)).first->second;
  }
  // Each step's bytes: those of the plan up to it, less those before it.
  int64_t bytes =
      type.getNumElements() * getElementBytes(type.getElementType());
  for (unsigned i = 0; i < plan->size(); ++i) {
    int64_t upTo =
        getPlanBytes(src, ArrayRef(*plan).take_front(i + 1), bytes, axisSize);
    const ReshardStep &step = (*plan)[i];
    if (step.kind != ReshardStep::Kind::AllSlice)
      r.ps += model.collectivePs(step.axes, upTo - r.bytes);
    r.bytes = upTo;
  }
  r.steps = std::move(*plan);
  return reshards.try_emplace(key, std::move(r)).first->second;
}

//===----------------------------------------------------------------------===//
// Memory and evaluation
//===----------------------------------------------------------------------===//

std::vector<int64_t>
autoshard::liveBytesAt(ArrayRef<LiveValue> live, unsigned numPoints,
                       function_ref<int64_t(const LiveValue &)> bytes) {
  std::vector<int64_t> at(numPoints + 1, 0);
  for (const LiveValue &l : live) {
    int64_t b = bytes(l);
    at[l.def] += b;
    at[l.last + 1] -= b;
  }
  for (unsigned p = 1; p <= numPoints; ++p)
    at[p] += at[p - 1];
  at.pop_back();
  return at;
}

/// The program point of most live bytes (the first of equals) for values
/// live over [def, last] of `bytes` each.
static std::pair<unsigned, int64_t>
getPeak(ArrayRef<LiveValue> live, unsigned numPoints,
        function_ref<int64_t(const LiveValue &)> bytes) {
  std::vector<int64_t> at = liveBytesAt(live, numPoints, bytes);
  int64_t most = -1;
  unsigned point = 0;
  for (unsigned p = 0; p < numPoints; ++p)
    if (at[p] > most) {
      most = at[p];
      point = p;
    }
  return {point, std::max<int64_t>(most, 0)};
}

void FunctionPlanner::computeLiveness() {
  for (auto [value, source] : producers) {
    if (vars[source.first].kind == Variable::Kind::Argument)
      continue;
    // A loop's or branch's result is made at its end; a region argument at
    // its start. A value used inside a loop or branch stays live to its end.
    unsigned def;
    if (auto arg = dyn_cast<BlockArgument>(value))
      def = position[arg.getOwner()->getParentOp()];
    else if (vars[source.first].kind == Variable::Kind::Tied)
      def = endPosition[value.getDefiningOp()];
    else
      def = position[value.getDefiningOp()];
    unsigned last = def;
    Block *block = value.getParentBlock();
    for (Operation *user : value.getUsers())
      if (Operation *top = block->findAncestorOpInBlock(*user))
        last = std::max(last, endPosition[top]);
    live.push_back({source.first, source.second, def, last, value});
  }
  // A fixed order (the map's is not).
  llvm::sort(live, [](const LiveValue &a, const LiveValue &b) {
    return std::tie(a.def, a.last, a.var, a.result) <
           std::tie(b.def, b.last, b.var, b.result);
  });
  // The peak point of the program with every value whole.
  peakPoint =
      getPeak(live, numPoints, [&](const LiveValue &l) {
        auto type = cast<RankedTensorType>(l.value.getType());
        return type.getNumElements() * getElementBytes(type.getElementType());
      }).first;
  peakBytes.assign(vars.size(), {});
  for (auto [v, var] : llvm::enumerate(vars)) {
    peakBytes[v].assign(var.choices.size(), 0);
    if (var.kind == Variable::Kind::Argument)
      for (auto [c, choice] : llvm::enumerate(var.choices))
        peakBytes[v][c] = choice.resultBytes[0];
  }
  for (const LiveValue &l : live)
    if (l.isLiveAt(peakPoint))
      for (auto [c, choice] : llvm::enumerate(vars[l.var].choices))
        peakBytes[l.var][c] += choice.resultBytes[l.result];
}

Evaluation FunctionPlanner::evaluate(ArrayRef<unsigned> plan) {
  Evaluation e;
  for (auto [v, var] : llvm::enumerate(vars)) {
    e.computePs += var.choices[plan[v]].computePs;
    if (var.kind == Variable::Kind::Argument)
      e.argumentBytes += peakBytes[v][plan[v]];
  }
  for (auto [ui, u] : llvm::enumerate(uses)) {
    if (groupOfUse.contains(ui))
      continue;
    auto [ps, bytes] =
        useCost(u, vars[u.producer].choices[plan[u.producer]].results[u.result],
                vars[u.consumer].choices[plan[u.consumer]].operands[u.operand]);
    e.commPs += ps;
    e.commBytes += bytes;
  }
  // A copy group at its best copy (the plan's copy variables aside: an
  // enumeration does not set them).
  for (const CopyGroup &g : copies) {
    auto [k, ps, bytes] = bestCopy(g, plan);
    e.commPs += ps;
    e.commBytes += bytes;
  }
  e.commPs = std::min(e.commPs, kForbidden);
  std::tie(e.peakPoint, e.peakLive) =
      getPeak(live, numPoints, [&](const LiveValue &l) {
        return vars[l.var].choices[plan[l.var]].resultBytes[l.result];
      });
  return e;
}

int64_t FunctionPlanner::leastBytes(unsigned v, unsigned r) const {
  int64_t b = INT64_MAX;
  for (const Choice &c : vars[v].choices)
    b = std::min(b, c.resultBytes[r]);
  return b;
}

int64_t FunctionPlanner::leastPeakBound() const {
  int64_t arguments = 0;
  for (auto [v, var] : llvm::enumerate(vars))
    if (var.kind == Variable::Kind::Argument)
      arguments += leastBytes(v, 0);
  std::vector<int64_t> at =
      liveBytesAt(live, numPoints, [&](const LiveValue &l) {
        return leastBytes(l.var, l.result);
      });
  int64_t most = 0;
  for (int64_t b : at)
    most = std::max(most, b);
  return arguments + most;
}

std::optional<SmallVector<unsigned>> FunctionPlanner::leastMemoryPlan() {
  PairwiseMinimizer m = makeMinimizer(Tables::Possible);
  std::string why;
  if (failed(m.prepare(uint64_t(1) << 26, why)))
    return std::nullopt;
  // Each choice's blocks: the argument's, and its results' that are live.
  SmallVector<SmallVector<Cost, 8>> unary(vars.size());
  for (auto [v, var] : llvm::enumerate(vars))
    unary[v].assign(var.choices.size(), 0);
  for (auto [v, var] : llvm::enumerate(vars))
    if (var.kind == Variable::Kind::Argument)
      for (auto [c, choice] : llvm::enumerate(var.choices))
        unary[v][c] += choice.resultBytes[0];
  for (const LiveValue &l : live)
    for (auto [c, choice] : llvm::enumerate(vars[l.var].choices))
      unary[l.var][c] += choice.resultBytes[l.result];
  SmallVector<unsigned> plan;
  if (m.solve(unary, plan) >= kForbidden)
    return std::nullopt;
  return plan;
}

std::pair<Cost, SmallVector<unsigned>> FunctionPlanner::solveUnary(
    function_ref<Cost(unsigned, unsigned)> memory, ArrayRef<int> fixed,
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
      Cost cost = choice.computePs + (memory(v, c) >> 20);
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

std::pair<Cost, SmallVector<unsigned>>
FunctionPlanner::solve(uint64_t weight, ArrayRef<int> fixed,
                       std::optional<std::pair<unsigned, unsigned>> banned) {
  return solveUnary(
      [&](unsigned v, unsigned c) {
        return Cost(weight) * Cost(peakBytes[v][c]);
      },
      fixed, banned);
}

std::pair<Cost, SmallVector<unsigned>>
FunctionPlanner::solveWeighted(ArrayRef<SmallVector<Cost, 8>> weighted,
                               ArrayRef<int> fixed) {
  return solveUnary([&](unsigned v, unsigned c) { return weighted[v][c]; },
                    fixed, std::nullopt);
}

std::vector<SmallVector<Cost, 8>>
FunctionPlanner::weighBytes(ArrayRef<uint64_t> at) const {
  // sum[p]: the weights of the points before p.
  std::vector<Cost> sum(numPoints + 1, 0);
  for (unsigned q = 0; q < numPoints; ++q)
    sum[q + 1] = sum[q] + Cost(at[q]);
  std::vector<SmallVector<Cost, 8>> weighted(vars.size());
  for (auto [v, var] : llvm::enumerate(vars)) {
    weighted[v].assign(var.choices.size(), 0);
    if (var.kind == Variable::Kind::Argument)
      for (auto [c, choice] : llvm::enumerate(var.choices))
        weighted[v][c] = Cost(choice.resultBytes[0]) * sum[numPoints];
  }
  for (const LiveValue &l : live) {
    Cost span = sum[std::min(l.last + 1, numPoints)] - sum[l.def];
    for (auto [c, choice] : llvm::enumerate(vars[l.var].choices))
      weighted[l.var][c] += Cost(choice.resultBytes[l.result]) * span;
  }
  return weighted;
}

std::vector<int64_t> FunctionPlanner::liveAt(ArrayRef<unsigned> plan) const {
  return liveBytesAt(live, numPoints, [&](const LiveValue &l) {
    return vars[l.var].choices[plan[l.var]].resultBytes[l.result];
  });
}

std::vector<int64_t> FunctionPlanner::memoryAt(ArrayRef<unsigned> plan) const {
  std::vector<int64_t> at = liveAt(plan);
  int64_t arguments = 0;
  for (auto [v, var] : llvm::enumerate(vars))
    if (var.kind == Variable::Kind::Argument)
      arguments += var.choices[plan[v]].resultBytes[0];
  for (int64_t &b : at)
    b += arguments;
  return at;
}
