//===- PropagateSharding.cpp - a sharding for every tensor ----------------===//
//
// Annotated values are constraints; the rest are filled in through the ops'
// sharding rules by alternating forward and backward sweeps until nothing
// changes. A value keeps the first sharding it gets, and within an op the
// first known value decides each factor, so the result is deterministic, and
// each sweep costs one visit per op: the pass is linear in the program, also
// when one value has thousands of users. Shardings are kept as uniqued
// attributes and rules in a table of distinct rules, so a visit allocates
// nothing when it finds what an earlier op found.
//
// Ops are seen through interfaces: sharding rules (ShardingRuleOpInterface),
// calls (CallOpInterface), function returns (ReturnLike), and region ops
// (RegionBranchOpInterface), whose tied values share one sharding.
//
//===----------------------------------------------------------------------===//

#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/FunctionAttrs.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/PointerIntPair.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PROPAGATESHARDING
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// What is known of one tensor value: 16 bytes, so that the map of 50,000
/// values stays small.
struct ValueInfo {
  enum class Source : uint8_t { Annotation, Forward, Backward, Default };
  ValueInfo(ShardingAttr sharding, Source source, Operation *from)
      : sharding(sharding), fromAndSource(from, source) {}
  ShardingAttr sharding;
  /// The op whose rule gave the sharding (Forward/Backward), and how.
  llvm::PointerIntPair<Operation *, 2, Source> fromAndSource;
  Source source() const { return fromAndSource.getInt(); }
  Operation *from() const { return fromAndSource.getPointer(); }
};
static_assert(sizeof(ValueInfo) == 16, "ValueInfo should stay small");

bool isRankedTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

/// What propagation knows of one op of the sweeps: 8 bytes, apart from the
/// op pointer and its done bit, so that a sweep over 50,000 ops reads little
/// memory for the ops it skips.
struct OpEntry {
  /// The index of its rule in the table, for OpRole::Rule.
  unsigned rule = 0;
  OpRole role;
  /// For OpRole::RegionBranch: this entry comes before the op's body (each
  /// region-branch op has one entry before and one after it).
  bool beforeBody = false;
  /// For OpRole::Rule: a linalg op some of whose result dims no input reads
  /// (a broadcast; see broadcastsUndecided).
  bool mayBroadcast = false;
};
static_assert(sizeof(OpEntry) == 8, "OpEntry should stay small");

class Propagation {
public:
  /// With `padUneven`, an annotation that splits a static dim unevenly is
  /// not an error: run() stops early and says so (foundUneven), for the
  /// caller to pad the program and propagate again.
  Propagation(ModuleOp module, bool padUneven)
      : module(module),
        shardingName(StringAttr::get(module.getContext(),
                                     MeshDialect::getShardingAttrName())),
        padUneven(padUneven) {}

  bool foundUneven() const { return uneven; }
  /// After run(): the collapse_shape and expand_shape ops (without an
  /// annotation of their own) whose merged dim carries fewer axes than the
  /// dims of its group: the partitioner would gather there.
  SmallVector<Operation *> lossyReshapes();
  /// After run(): the linalg ops that read an input through a window along
  /// a loop whose size the devices splitting that input's dim do not divide
  /// (a valid convolution): padding the loop lets each device compute its
  /// block of outputs from its block of the input and a halo.
  SmallVector<UnevenWindow> unevenWindows();

  /// Reads the annotations and rules, then sweeps until nothing changes.
  /// Fails, with an error naming it, on an annotation that does not split
  /// its tensor evenly.
  LogicalResult run();
  /// Writes the shardings back as annotations; remarks with `explain`.
  void annotate(bool explain);

private:
  // Reading the program.
  void addOp(Operation *op);
  void collectAnnotations(FunctionOpInterface fn);
  void collectAnnotations(Operation *op);
  void setFixed(Value v, ShardingAttr s);
  /// Checks that the annotation `s` of a value of type `type` splits it
  /// evenly (a dim of static size over static axes divides by their
  /// devices), before propagation spreads it; `what` names the value in
  /// the error. Only the first error is reported.
  void checkDivides(Operation *scope, Type type, ShardingAttr s,
                    function_ref<InFlightDiagnostic()> what);

  // Sweeps.
  bool visitAndMark(size_t index, bool forward);
  bool visitShard(ShardOp shard, bool forward);
  bool visitCall(CallOpInterface call, bool forward);
  bool visitFunctionReturn(Operation *ret, bool forward);
  bool visitRegionBranch(Operation *op, bool forward, bool beforeBody);
  bool visitRule(Operation *op, const ShardingRule &rule, bool forward,
                 bool mayBroadcast, bool &settled);
  bool broadcastsUndecided(Operation *op, const ShardingRule &rule,
                           ArrayRef<AxisListAttr> factors);
  /// Whether `op` (with `rule`) is a linalg op with a result factor that no
  /// input has: the structural part of broadcastsUndecided, kept per op.
  bool mayBroadcast(Operation *op, const ShardingRule &rule);
  /// Gives `v` a sharding if it has none. Returns true if it changed.
  bool assign(Value v, ShardingAttr sharding, ValueInfo::Source source,
              Operation *from);

  // Writing back.
  void annotateFunction(FunctionOpInterface fn, bool explain);
  void annotateResults(Operation *op, bool explain);
  /// The sharding to write for `v`: what propagation found, else replicated
  /// on the module's only mesh (null if it has several).
  ShardingAttr layoutFor(Value v, const ValueInfo *&infoOut);
  std::string describe(const ValueInfo *vi);
  FlatSymbolRefAttr getDefaultMesh();
  void warnAboutOpsWithoutRules();

  ModuleOp module;
  StringAttr shardingName;
  SymbolTableCollection symbolTables;
  /// Every op but the module and meshes, in walk order.
  SmallVector<Operation *> walked;
  /// The same without functions; their roles; and whether nothing more
  /// can propagate through them.
  SmallVector<Operation *> ops;
  SmallVector<OpEntry> entries;
  llvm::BitVector done;
  /// The tied values of each region-branch op.
  DenseMap<Operation *, SmallVector<TiedGroup>> tiedGroups;
  MeshCache meshCache{symbolTables};
  OpClassifier classifier;
  ShardingProjector projector;
  DenseMap<Value, ValueInfo, ValueAddressInfo> info;
  ShardingRuleTable rules;
  /// Per rule: mayBroadcast of its ops (-1: not asked yet).
  SmallVector<int8_t> ruleBroadcasts;
  /// Whether some rule has windows, some op is a reshape: the scans after
  /// propagation (unevenWindows, lossyReshapes) run only then.
  bool sawWindow = false, sawReshape = false;
  DenseMap<int64_t, ShardingAttr> replicatedByRank;
  /// Each sharding written, as the whole attribute dictionary of an op
  /// that has no other attribute.
  DenseMap<Attribute, DictionaryAttr> onlySharding;
  FlatSymbolRefAttr defaultMesh;
  /// An annotation did not divide its tensor.
  bool badAnnotation = false;
  /// Uneven annotations are reported (uneven) instead of errors.
  bool padUneven;
  bool uneven = false;
  /// The (mesh, tensor type, sharding) triples checked by checkDivides.
  DenseSet<std::tuple<Operation *, Type, Attribute>> dividing;
};

} // namespace

//===----------------------------------------------------------------------===//
// Reading the program
//===----------------------------------------------------------------------===//

LogicalResult Propagation::run() {
  // One walk lists the ops, reads and checks the annotations and finds the
  // rules, touching each op once. Ops come in program order, an op with
  // regions before its body; a region-branch op (a loop, a branch) is also
  // listed again after its body, so that each sweep, in either direction,
  // hands the layouts of a loop's initial values and results to its block
  // arguments before the body's ops decide theirs, and takes what the body
  // found afterwards.
  size_t values = 0;
  SmallVector<size_t> openBranches;
  module.walk([&](Operation *op, const WalkStage &stage) {
    if (isa<ModuleOp, MeshOp>(op))
      return;
    if (!stage.isBeforeAllRegions()) {
      if (stage.isAfterAllRegions() && !openBranches.empty() &&
          ops[openBranches.back()] == op) {
        ops.push_back(op);
        entries.push_back(entries[openBranches.pop_back_val()]);
        entries.back().beforeBody = false;
      }
      return;
    }
    walked.push_back(op);
    if (op->getNumRegions() != 0)
      if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
        collectAnnotations(fn);
        return;
      }
    addOp(op);
    values += op->getNumResults();
    if (op->getNumRegions() != 0 &&
        entries.back().role == OpRole::RegionBranch) {
      entries.back().beforeBody = true;
      openBranches.push_back(ops.size() - 1);
    }
  });
  if (badAnnotation)
    return failure();
  if (uneven)
    return success(); // The caller pads, then propagates again.
  info.reserve(values + info.size());
  done.resize(ops.size());
  // Sweeps until nothing changes; a value only ever goes from unknown to
  // known, so this ends, and in practice after two or three sweeps.
  for (int sweep = 0; sweep < 16; ++sweep) {
    bool changed = false;
    bool forward = sweep % 2 == 0;
    if (forward) {
      for (size_t i = 0, e = ops.size(); i < e; ++i)
        if (!done.test(i))
          changed |= visitAndMark(i, /*forward=*/true);
    } else {
      for (size_t i = ops.size(); i-- > 0;)
        if (!done.test(i))
          changed |= visitAndMark(i, /*forward=*/false);
    }
    if (!changed && sweep > 0)
      break;
  }
  warnAboutOpsWithoutRules();
  return success();
}

SmallVector<Operation *> Propagation::lossyReshapes() {
  auto axesOf = [&](Value v, ArrayRef<int64_t> dims) {
    auto it = info.find(v);
    size_t n = 0;
    if (it != info.end())
      for (int64_t d : dims)
        n += it->second.sharding.getDimAxes(d).size();
    return n;
  };
  SmallVector<Operation *> lossy;
  if (!sawReshape)
    return lossy;
  for (Operation *op : ops) {
    Value wide, narrow;
    SmallVector<ReassociationIndices> groups;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      wide = collapse.getSrc();
      narrow = collapse.getResult();
      groups = collapse.getReassociationIndices();
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      wide = expand.getResult();
      narrow = expand.getSrc();
      groups = expand.getReassociationIndices();
    } else {
      continue;
    }
    if (op->getDiscardableAttr(shardingName))
      continue;
    for (auto [i, group] : llvm::enumerate(groups))
      if (group.size() > 1 &&
          axesOf(wide, group) > axesOf(narrow, {static_cast<int64_t>(i)})) {
        lossy.push_back(op);
        break;
      }
  }
  return lossy;
}

/// Whether every result of `maps` that involves loop `loop` is a plain dim
/// or an affine sum with a positive coefficient on it.
static bool readsForward(ArrayRef<AffineMap> maps, int64_t loop) {
  for (AffineMap map : maps)
    for (AffineExpr e : map.getResults()) {
      if (isa<AffineDimExpr>(e) || !e.isFunctionOfDim(loop))
        continue;
      std::optional<int64_t> c = getLoopCoefficient(map, e, loop);
      if (!c || *c <= 0)
        return false;
    }
  return true;
}

SmallVector<UnevenWindow> Propagation::unevenWindows() {
  SmallVector<UnevenWindow> found;
  if (!sawWindow)
    return found;
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (entries[i].role != OpRole::Rule || !isa<linalg::LinalgOp>(op) ||
        op->getDiscardableAttr(shardingName))
      continue;
    const ShardingRule &rule = rules[entries[i].rule];
    if (rule.operandHalos.empty())
      continue;
    auto maps = cast<linalg::LinalgOp>(op).getIndexingMapsArray();
    for (unsigned o = 0, e = rule.operandHalos.size(); o < e; ++o) {
      // The input as the program split it: through a prefix slice (one
      // that padding made to give this op its size back), its source.
      Value input = op->getOperand(o);
      bool afterWindow = false;
      if (auto slice = input.getDefiningOp<tensor::ExtractSliceOp>();
          slice && isPaddingSlice(slice)) {
        input = slice.getSource();
        // The padded output of a window op before this one (a stack of
        // valid convolutions): its blocks are the ones to keep.
        auto producer = input.getDefiningOp<linalg::LinalgOp>();
        afterWindow = producer && hasWindowedOperand(producer);
      }
      auto it = info.find(input);
      if (it == info.end())
        continue;
      ShardingAttr s = it->second.sharding;
      auto type = cast<RankedTensorType>(input.getType());
      // Every split windowed dim of the input must be padded for any to
      // be: one left to the general reshard (its loop divides) would drop
      // the others' halos again (the input gathered whole along it).
      size_t before = found.size();
      bool allPadded = true;
      for (unsigned d = 0, r = rule.getOperandHalos(o).size(); d < r; ++d) {
        int64_t f = rule.operandDims[o][d];
        if (f < 0 || isa<AffineDimExpr>(maps[o].getResult(d)) ||
            d >= s.getRank() || s.getDimAxes(d).empty())
          continue;
        allPadded = false; // Until it is, below.
        std::optional<int64_t> stride =
            getLoopCoefficient(maps[o], maps[o].getResult(d), f);
        if (s.getDimHalo(d) != std::pair<int64_t, int64_t>{0, 0} ||
            type.isDynamicDim(d) || !stride)
          break;
        int64_t size = rule.factors[f].size;
        MeshOp mesh = meshCache.get(op, s.getMesh());
        std::optional<int64_t> n =
            mesh ? meshCache.getGroupSize(mesh, s.getDimAxes(d)) : std::nullopt;
        // (A loop the devices divide is split as it is, the input
        // resharded to its blocks and halos: the result's layout may ask
        // for those blocks; unless the input comes padded from a window
        // op before. Where the input's rows only shift to those blocks, a
        // neighbour's rows each way (stride 1, the reach within a block),
        // the other dims may still be padded.)
        if (n && !ShapedType::isDynamic(*n) && *n > 1 &&
            !ShapedType::isDynamic(size) && size % *n == 0 && !afterWindow &&
            *stride == 1 && type.getDimSize(d) % *n == 0) {
          int64_t block = type.getDimSize(d) / *n;
          int64_t shift = block - size / *n;
          if (shift > 0 && (*n - 1) * shift <= block) {
            allPadded = true;
            continue;
          }
        }
        if (!n || ShapedType::isDynamic(*n) || *n <= 1 ||
            ShapedType::isDynamic(size) || (size % *n == 0 && !afterWindow) ||
            *stride < 1 || type.getDimSize(d) % (*n * *stride) != 0)
          break;
        // Blocks of the loop that read the input's blocks: the input's
        // block over the stride each.
        // Not a loop that must stay whole, nor one whose blocks would be
        // shorter than its halo (it would not be split), nor one an operand
        // reads backwards or otherwise than through a plain window (its
        // padded range would read before the start).
        int64_t aligned = type.getDimSize(d) / *stride;
        if (aligned <= size || rule.factors[f].blocked ||
            aligned / *n < rule.factors[f].maxHalo || !readsForward(maps, f))
          break;
        allPadded = true;
        if (llvm::none_of(found, [&, op = op](const UnevenWindow &w) {
              return w.op == op && w.loop == f;
            }))
          found.push_back(
              {op, static_cast<unsigned>(f), aligned, *n, s.getDimAxes(d)});
      }
      if (!allPadded)
        found.truncate(before);
    }
  }
  return found;
}

void Propagation::addOp(Operation *op) {
  collectAnnotations(op);
  sawReshape |= isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op);
  OpEntry entry;
  entry.role = classifier.classify(op);
  if (entry.role == OpRole::RegionBranch) {
    FailureOr<SmallVector<TiedGroup>> groups =
        getTiedValueGroups(cast<RegionBranchOpInterface>(op));
    if (succeeded(groups))
      tiedGroups[op] = std::move(*groups);
    else
      entry.role = OpRole::NoRule; // Replicated, with a warning.
  } else if (entry.role == OpRole::Rule) {
    std::optional<unsigned> rule = rules.add(op);
    if (rule) {
      entry.rule = *rule;
      // Ops that share a rule share their structure: asked once per rule.
      if (*rule >= ruleBroadcasts.size())
        ruleBroadcasts.resize(*rule + 1, -1);
      if (ruleBroadcasts[*rule] < 0) {
        ruleBroadcasts[*rule] = mayBroadcast(op, rules[*rule]);
        sawWindow |= !rules[*rule].operandHalos.empty();
      }
      entry.mayBroadcast = ruleBroadcasts[*rule] == 1;
    } else {
      entry.role = OpRole::NoRule;
    }
  }
  ops.push_back(op);
  entries.push_back(entry);
}

void Propagation::setFixed(Value v, ShardingAttr s) {
  info.insert_or_assign(v,
                        ValueInfo{s, ValueInfo::Source::Annotation, nullptr});
}

void Propagation::collectAnnotations(FunctionOpInterface fn) {
  ArrayRef<Type> argTypes = fn.getArgumentTypes();
  for (unsigned i = 0, e = argTypes.size(); i < e; ++i) {
    auto s = fn.getArgAttrOfType<ShardingAttr>(i, shardingName);
    if (!s)
      continue;
    checkDivides(fn, argTypes[i], s, [&] {
      Location loc = fn.isExternal() ? fn.getLoc() : fn.getArgument(i).getLoc();
      return emitError(loc) << "argument " << i << " of @" << fn.getName();
    });
    if (!fn.isExternal())
      setFixed(fn.getArgument(i), s);
  }
  ArrayRef<Type> resultTypes = fn.getResultTypes();
  for (unsigned i = 0, e = resultTypes.size(); i < e; ++i)
    checkDivides(fn, resultTypes[i],
                 fn.getResultAttrOfType<ShardingAttr>(i, shardingName), [&] {
                   return emitError(fn.getLoc())
                          << "result " << i << " of @" << fn.getName();
                 });
}

void Propagation::collectAnnotations(Operation *op) {
  if (auto shard = dyn_cast<ShardOp>(op)) {
    checkDivides(op, shard.getResult().getType(), shard.getSharding(), [&] {
      return emitError(op->getLoc()) << "the mesh.shard operand";
    });
    setFixed(shard.getResult(), shard.getSharding());
    return;
  }
  // (By the interned name: a pointer compare, and no dictionary built for
  // ops without properties, as getDiscardableAttrDictionary would.)
  if (!op->getDiscardableAttr(shardingName))
    return;
  for (OpResult r : op->getResults())
    if (ShardingAttr s =
            getResultAnnotation(op, r.getResultNumber(), shardingName)) {
      checkDivides(op, r.getType(), s, [&] {
        return emitError(op->getLoc()) << "result " << r.getResultNumber()
                                       << " of '" << op->getName() << "'";
      });
      setFixed(r, s);
    }
}

void Propagation::checkDivides(Operation *scope, Type type, ShardingAttr s,
                               function_ref<InFlightDiagnostic()> what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (badAnnotation || !s || !tensor)
    return;
  // Dims without axes always fit (most annotations replicate weights).
  if (static_cast<int64_t>(s.getDims().size()) == tensor.getRank() &&
      llvm::all_of(s.getDims(), [](AxisListAttr a) { return a.empty(); }))
    return;
  MeshOp mesh = meshCache.get(scope, s.getMesh());
  if (!mesh)
    return; // The verifier names an unknown mesh.
  // Programs repeat a few (type, sharding) pairs many times.
  if (!dividing.insert({mesh.getOperation(), tensor, s}).second)
    return;
  std::string whyNot;
  if (succeeded(getLocalType(mesh, tensor, ShardingLayout::get(s), whyNot)))
    return;
  if (padUneven && !getUnevenSplits(meshCache, scope, tensor, s).empty()) {
    uneven = true; // Padding makes it divide.
    return;
  }
  what() << " of type " << tensor << " cannot be sharded as " << s << ": "
         << whyNot;
  badAnnotation = true;
}

//===----------------------------------------------------------------------===//
// Sweeps
//===----------------------------------------------------------------------===//

bool Propagation::assign(Value v, ShardingAttr sharding,
                         ValueInfo::Source source, Operation *from) {
  if (!isRankedTensor(v))
    return false;
  return info.try_emplace(v, ValueInfo{sharding, source, from}).second;
}

/// Visits one op; marks it done once every tensor it touches has a
/// sharding, since then no later sweep can change anything through it.
bool Propagation::visitAndMark(size_t index, bool forward) {
  Operation *op = ops[index];
  const OpEntry &entry = entries[index];
  bool settled = false;
  bool changed = false;
  switch (entry.role) {
  case OpRole::Shard:
    changed = visitShard(cast<ShardOp>(op), forward);
    break;
  case OpRole::Call:
    changed = visitCall(cast<CallOpInterface>(op), forward);
    break;
  case OpRole::FunctionReturn:
    changed = visitFunctionReturn(op, forward);
    break;
  case OpRole::RegionBranch:
    // Never done: its groups are revisited as their members become known.
    return visitRegionBranch(op, forward, entry.beforeBody);
  case OpRole::Rule:
    changed =
        visitRule(op, rules[entry.rule], forward, entry.mayBroadcast, settled);
    break;
  case OpRole::NoRule:
    // Ops without tensors are settled at once.
    settled = op->getNumRegions() == 0 &&
              llvm::none_of(op->getOperands(), isRankedTensor) &&
              llvm::none_of(op->getResults(), isRankedTensor);
    break;
  case OpRole::RegionTerminator:
  case OpRole::PerDevice:
    break; // Handled by the owner, or already per device.
  }
  auto known = [&](Value v) { return !isRankedTensor(v) || info.count(v); };
  if (settled || (llvm::all_of(op->getOperands(), known) &&
                  llvm::all_of(op->getResults(), known)))
    done.set(index);
  return changed;
}

/// The operand takes the target's sharding as a hint (without pending
/// reductions), backward only.
bool Propagation::visitShard(ShardOp shard, bool forward) {
  if (forward)
    return false;
  auto target = info.find(shard.getResult());
  if (target == info.end())
    return false;
  return assign(shard.getSrc(), withoutPartial(target->second.sharding),
                ValueInfo::Source::Backward, shard);
}

/// Operands take the callee's argument shardings (backward), results its
/// result shardings (forward); shardings do not flow into callees.
bool Propagation::visitCall(CallOpInterface call, bool forward) {
  FunctionOpInterface callee = getCallee(call, symbolTables);
  if (!callee)
    return false;
  StringRef name = MeshDialect::getShardingAttrName();
  bool changed = false;
  if (forward) {
    for (auto [i, v] : llvm::enumerate(call->getResults()))
      if (auto s = callee.getResultAttrOfType<ShardingAttr>(i, name))
        changed |= assign(v, s, ValueInfo::Source::Forward, call);
    return changed;
  }
  for (auto [i, v] : llvm::enumerate(call.getArgOperands()))
    if (auto s = callee.getArgAttrOfType<ShardingAttr>(i, name))
      changed |=
          assign(v, withoutPartial(s), ValueInfo::Source::Backward, call);
  return changed;
}

/// Returned values take the function's result shardings, backward.
bool Propagation::visitFunctionReturn(Operation *ret, bool forward) {
  if (forward)
    return false;
  auto fn = cast<FunctionOpInterface>(ret->getParentOp());
  bool changed = false;
  for (auto [i, v] : llvm::enumerate(ret->getOperands()))
    if (auto s = fn.getResultAttrOfType<ShardingAttr>(
            i, MeshDialect::getShardingAttrName()))
      changed |= assign(v, s, ValueInfo::Source::Backward, ret);
  return changed;
}

/// The values of each tied group share one sharding: the first known one (in
/// program order forward, reversed backward) gives it to the others. Where
/// the known values disagree (the two branches of an `scf.if` yield
/// different layouts, or a loop's body yields another layout than the one
/// it starts from), the forward sweep leaves the group to the backward one,
/// which sees the results first: the layout the results' users want (a
/// function result's annotation, a consumer's other operands) wins, else the
/// last one yielded, so a loop carries its body's layout and reshards its
/// initial value once, before the loop, not on every iteration.
///
/// Forward, the op is visited before its body too (`beforeBody`): then only
/// the region arguments receive the group's layout, so that the body's ops
/// start from the layout the loop is entered with (a training loop's
/// parameters keep their annotated sharding through the body) while what
/// the body yields is still the body's to decide.
bool Propagation::visitRegionBranch(Operation *op, bool forward,
                                    bool beforeBody) {
  bool changed = false;
  auto source =
      forward ? ValueInfo::Source::Forward : ValueInfo::Source::Backward;
  for (const TiedGroup &tied : tiedGroups.find(op)->second) {
    ArrayRef<Value> group = tied.values;
    const ValueInfo *known = nullptr;
    auto findKnown = [&](auto &&values) -> const ValueInfo * {
      for (Value v : values)
        if (auto it = info.find(v); it != info.end())
          return &it->second;
      return nullptr;
    };
    known = forward ? findKnown(group) : findKnown(llvm::reverse(group));
    if (!known)
      continue;
    // Loops and branches carry complete values: a pending reduction is
    // finished before the value enters (the partitioner reshards).
    ShardingAttr complete = withoutPartial(known->sharding);
    if (forward && llvm::any_of(group, [&](Value v) {
          auto it = info.find(v);
          return it != info.end() &&
                 withoutPartial(it->second.sharding) != complete;
        }))
      continue;
    auto assignAll = [&](auto &&values) {
      for (Value v : values)
        changed |= assign(v, complete, source, op);
    };
    if (forward && beforeBody)
      assignAll(llvm::make_filter_range(
          tied.inputs, [](Value v) { return isa<BlockArgument>(v); }));
    else if (forward)
      assignAll(group);
    else
      assignAll(llvm::reverse(group));
  }
  return changed;
}

bool Propagation::mayBroadcast(Operation *op, const ShardingRule &rule) {
  if (op->getNumRegions() == 0 || op->getNumResults() == 0)
    return false; // Linalg ops have their body.
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return false;
  llvm::SmallBitVector read(rule.factors.size());
  for (OpOperand *input : linalgOp.getDpsInputOperands()) {
    unsigned i = input->getOperandNumber();
    if (i < rule.operandDims.size())
      for (int64_t f : rule.operandDims[i])
        if (f >= 0)
          read.set(f);
  }
  for (ArrayRef<int64_t> dims : rule.resultDims)
    for (int64_t f : dims)
      if (f >= 0 && !read.test(f))
        return true;
  return false;
}

/// Whether `op` broadcasts its data along a dim of an unknown result that
/// no known value has decided: a `linalg.broadcast` of a bias over the
/// batch. Its input says nothing of that dim, so forward the op waits, and
/// the layout its result's users want (the batch's) decides backward: the
/// bias is then gathered, or broadcast only over this device's rows, instead
/// of broadcast whole and moved or sliced.
bool Propagation::broadcastsUndecided(Operation *op, const ShardingRule &rule,
                                      ArrayRef<AxisListAttr> factors) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || op->getNumResults() == 0)
    return false;
  llvm::SmallBitVector covered(rule.factors.size());
  bool hasData = false;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (i >= rule.operandDims.size() || !isRankedTensor(operand.get()) ||
        (linalgOp.isDpsInit(&operand) &&
         !linalgOp.payloadUsesValueFromOperand(&operand)))
      continue;
    hasData = true;
    for (int64_t f : rule.operandDims[i])
      if (f >= 0)
        covered.set(f);
  }
  if (!hasData)
    return false; // A fill: no data to move, any layout is made on the spot.
  for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
    if (r >= op->getNumResults() || info.count(op->getResult(r)))
      continue;
    for (int64_t f : dims)
      if (f >= 0 && !covered.test(f) && (!factors[f] || factors[f].empty()))
        return true;
  }
  return false;
}

/// Propagates through an op with a rule: the known values decide the
/// factors, and every other tensor of the op gets its projection. Sets
/// `settled` when every tensor of the op has a sharding afterwards.
bool Propagation::visitRule(Operation *op, const ShardingRule &rule,
                            bool forward, bool mayBroadcast, bool &settled) {
  FactorAssignment assignment(rule, op, meshCache);
  // Whether a known value says more than "a pending sum, whole": such a
  // value can be reduced into any layout at no more cost than whole, so
  // forward it decides nothing, and the layout the op's other tensors
  // get from their users (backward) wins: a momentum buffer updated with a
  // gradient takes its parameter's sharding, not the replicated one.
  bool informative = false;
  auto take = [&](Value v, ArrayRef<int64_t> dims) {
    auto it = info.find(v);
    if (it == info.end())
      return;
    ShardingAttr s = it->second.sharding;
    informative |=
        !s.isPartial() ||
        llvm::any_of(s.getDims(), [](AxisListAttr a) { return !a.empty(); });
    assignment.takeDims(s, dims, v.getType());
  };
  auto takeOperands = [&] {
    for (auto [v, dims] : llvm::zip(op->getOperands(), rule.operandDims))
      if (isRankedTensor(v))
        take(v, dims);
  };
  auto takeResults = [&] {
    for (auto [v, dims] : llvm::zip(op->getResults(), rule.resultDims))
      take(v, dims);
  };
  if (forward) {
    takeOperands();
    takeResults();
  } else {
    takeResults();
    takeOperands();
  }
  FlatSymbolRefAttr mesh = assignment.getMesh();
  if (!mesh || (forward && !informative))
    return false;
  ArrayRef<AxisListAttr> factors = assignment.getFactors();
  if (forward && mayBroadcast && broadcastsUndecided(op, rule, factors))
    return false;
  // Every tensor of the op gets a sharding below, if it has none yet.
  settled = rule.operandDims.size() >= op->getNumOperands() &&
            rule.resultDims.size() >= op->getNumResults();

  auto source =
      forward ? ValueInfo::Source::Forward : ValueInfo::Source::Backward;
  bool changed = false;
  for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
    Value v = r < op->getNumResults() ? op->getResult(r) : Value();
    if (v && !info.count(v))
      changed |= assign(v,
                        projector.projectResult(mesh, rule, factors, dims,
                                                rule.getResultHalos(r)),
                        source, op);
  }
  for (auto [i, dims] : llvm::enumerate(rule.operandDims)) {
    Value v = i < op->getNumOperands() ? op->getOperand(i) : Value();
    if (v && isRankedTensor(v) && !info.count(v))
      changed |= assign(
          v, projector.project(mesh, factors, dims, rule.getOperandHalos(i)),
          source, op);
  }
  return changed;
}

void Propagation::warnAboutOpsWithoutRules() {
  for (auto [op, entry] : llvm::zip(ops, entries)) {
    if (entry.role == OpRole::NoRule)
      warnNoShardingRule(op);
  }
}

//===----------------------------------------------------------------------===//
// Writing back
//===----------------------------------------------------------------------===//

void Propagation::annotate(bool explain) {
  defaultMesh = getDefaultMesh();
  for (Operation *op : walked) {
    if (auto fn = op->getNumRegions() ? dyn_cast<FunctionOpInterface>(op)
                                      : FunctionOpInterface()) {
      annotateFunction(fn, explain);
      continue;
    }
    if (isa<ShardOp, MeshOp, ModuleOp>(op) || op->getNumResults() == 0)
      continue;
    annotateResults(op, explain);
  }
}

ShardingAttr Propagation::layoutFor(Value v, const ValueInfo *&infoOut) {
  auto it = info.find(v);
  if (it != info.end()) {
    infoOut = &it->second;
    return it->second.sharding;
  }
  infoOut = nullptr;
  if (!defaultMesh)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  ShardingAttr &replicated = replicatedByRank[type.getRank()];
  if (!replicated)
    replicated = ShardingLayout::replicated(type.getRank()).toAttr(defaultMesh);
  return replicated;
}

/// Arguments take their shardings; results take their returned value's
/// sharding unless annotated.
void Propagation::annotateFunction(FunctionOpInterface fn, bool explain) {
  if (fn.isExternal())
    return;
  StringRef name = MeshDialect::getShardingAttrName();
  editArgAttrs(fn, [&](unsigned i, NamedAttrList &attrs) {
    BlockArgument arg = fn.getArgument(i);
    if (!isRankedTensor(arg))
      return;
    const ValueInfo *vi;
    if (ShardingAttr s = layoutFor(arg, vi)) {
      attrs.set(name, s);
      if (explain)
        fn->emitRemark() << "argument " << i << ": " << s << " "
                         << describe(vi);
    }
  });
  Operation *ret = nullptr;
  for (Block &block : fn.getFunctionBody())
    if (block.mightHaveTerminator() &&
        block.getTerminator()->hasTrait<OpTrait::ReturnLike>())
      ret = block.getTerminator();
  if (!ret || ret->getNumOperands() != fn.getNumResults())
    return;
  // An unannotated result takes its value's layout, but complete: a caller
  // (host code above all) gets the value the program computes, not
  // per-device pieces of a sum still to be reduced.
  editResultAttrs(fn, [&](unsigned i, NamedAttrList &attrs) {
    Value v = ret->getOperand(i);
    if (!isRankedTensor(v) || attrs.get(name))
      return;
    const ValueInfo *vi;
    if (ShardingAttr s = layoutFor(v, vi))
      attrs.set(name, withoutPartial(s));
  });
}

/// One sharding for an op with one result, an array for several, where a
/// result that is not a ranked tensor (a loop's counter) has `unit`. An op
/// none of whose results has a sharding is left alone.
void Propagation::annotateResults(Operation *op, bool explain) {
  SmallVector<Attribute> shardings;
  bool any = false;
  for (OpResult r : op->getResults()) {
    if (!isRankedTensor(r)) {
      shardings.push_back(UnitAttr::get(op->getContext()));
      continue;
    }
    const ValueInfo *vi;
    ShardingAttr s = layoutFor(r, vi);
    if (!s)
      return;
    any = true;
    shardings.push_back(s);
    if (explain)
      op->emitRemark() << "result " << r.getResultNumber() << ": " << s << " "
                       << describe(vi);
  }
  if (!any)
    return;
  Attribute value = shardings.size() == 1
                        ? shardings.front()
                        : ArrayAttr::get(op->getContext(), shardings);
  // Most ops carry no other attribute: they all get one of a few
  // dictionaries, each built once (rebuilding it was a quarter of the pass
  // on a long chain of ops). A registered op's inherent attributes have
  // ODS names, without a dot, so `mesh.sharding` belongs in the dictionary
  // of discardable ones, where the passes read it.
  if (!op->getRawDictionaryAttrs().empty()) {
    op->setAttr(shardingName, value);
    return;
  }
  DictionaryAttr &only = onlySharding[value];
  if (!only)
    only = DictionaryAttr::get(op->getContext(),
                               NamedAttribute(shardingName, value));
  op->setDiscardableAttrs(only);
}

std::string Propagation::describe(const ValueInfo *vi) {
  if (!vi)
    return "(replicated: nothing constrains it)";
  std::string out;
  llvm::raw_string_ostream os(out);
  switch (vi->source()) {
  case ValueInfo::Source::Annotation:
    os << "(from the annotation)";
    break;
  case ValueInfo::Source::Forward:
  case ValueInfo::Source::Backward:
    os << "(propagated "
       << (vi->source() == ValueInfo::Source::Forward ? "forward through"
                                                      : "backward through")
       << " '" << vi->from()->getName() << "' at " << vi->from()->getLoc()
       << ")";
    break;
  case ValueInfo::Source::Default:
    os << "(replicated: nothing constrains it)";
    break;
  }
  return out;
}

FlatSymbolRefAttr Propagation::getDefaultMesh() {
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return {};
  return FlatSymbolRefAttr::get(meshes.front().getSymNameAttr());
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct PropagateShardingPass
    : public mesh::impl::PropagateShardingBase<PropagateShardingPass> {
  using PropagateShardingBase::PropagateShardingBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    registerShardingRuleModels(registry);
    // Padding dims that do not divide makes pads, slices, masks and
    // constants.
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    tensor::TensorDialect>();
  }
  void runOnOperation() override {
    // What to rewrite before propagating, in one walk (raising pads erases
    // slices and concats, no generic).
    SmallVector<Operation *> concats, generics;
    getOperation()->walk([&](Operation *op) {
      if (isa<tensor::ConcatOp>(op))
        concats.push_back(op);
      else if (isa<linalg::GenericOp>(op))
        generics.push_back(op);
    });
    raiseCircularPads(concats);
    eraseUnusedLinalgResults(generics);
    // Propagates; where an annotation splits a dim unevenly, pads and
    // propagates again; where a reshape loses axes, computes the ops beside
    // it on the unmerged dims and propagates again. The common case, where
    // everything divides and no reshape loses an axis, propagates once.
    SymbolTableCollection tables;
    bool padded = false, expanded = false;
    int windowRounds = 0;
    while (true) {
      Propagation propagation(getOperation(),
                              /*padUneven=*/!exactDivision && !padded);
      if (failed(propagation.run()))
        return signalPassFailure();
      if (propagation.foundUneven()) {
        if (failed(padNonDividingDims(getOperation(), tables)))
          return signalPassFailure();
        padded = true;
        continue;
      }
      // A valid convolution on a split input: its output rows padded to
      // divide (once; bounded, since each round pads what the last found).
      if (windowRounds < 4 && !exactDivision) {
        SmallVector<UnevenWindow> windows =
            paddableWindows(getOperation(), propagation.unevenWindows());
        if (!windows.empty()) {
          ++windowRounds;
          if (failed(padNonDividingDims(getOperation(), tables, windows)))
            return signalPassFailure();
          continue;
        }
      }
      if (!expanded) {
        expanded = true;
        if (expandThroughReshapes(propagation.lossyReshapes()))
          continue;
      }
      if (padded || windowRounds != 0)
        stripPaddingMarks(getOperation());
      propagation.annotate(explain);
      return;
    }
  }
};
} // namespace
