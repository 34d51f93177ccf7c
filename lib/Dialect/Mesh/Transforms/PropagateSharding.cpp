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
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/FunctionAttrs.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"
#include "mesh/Dialect/Mesh/Transforms/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/PointerIntPair.h"


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

class Propagation {
public:
  explicit Propagation(ModuleOp module)
      : module(module),
        shardingName(StringAttr::get(module.getContext(),
                                     MeshDialect::getShardingAttrName())) {}

  void run() {
    // One walk lists the ops, reads the annotations and finds the rules,
    // touching each op once.
    size_t values = 0;
    module.walk([&](Operation *op) {
      if (isa<ModuleOp, MeshOp>(op))
        return;
      walked.push_back(op);
      if (op->getNumRegions() != 0)
        if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
          collectAnnotations(fn);
          return;
        }
      ops.push_back(op);
      collectAnnotations(op);
      values += op->getNumResults();
      bool special = isa<ShardOp, func::ReturnOp, func::CallOp, scf::ForOp,
                         scf::IfOp, scf::YieldOp>(op);
      int rule = special ? kSpecial : rules.add(op);
      if (rule == -1 && isa<CollectiveOpInterface>(op))
        rule = kSpecial; // Already per-device: nothing to propagate.
      ruleOf.push_back(rule);
    });
    info.reserve(values + info.size());
    done.assign(ops.size(), false);
    // Sweeps until nothing changes; a value only ever goes from unknown to
    // known, so this ends, and in practice after two or three sweeps.
    for (int sweep = 0; sweep < 16; ++sweep) {
      bool changed = false;
      bool forward = sweep % 2 == 0;
      if (forward) {
        for (size_t i = 0, e = ops.size(); i < e; ++i)
          if (!done[i])
            changed |= visitAndMark(i, /*forward=*/true);
      } else {
        for (size_t i = ops.size(); i-- > 0;)
          if (!done[i])
            changed |= visitAndMark(i, /*forward=*/false);
      }
      if (!changed && sweep > 0)
        break;
    }
    warnAboutOpsWithoutRules(ops, ruleOf);
  }

  /// Writes the shardings back as annotations; remarks with `explain`.
  void annotate(bool explain) {
    FlatSymbolRefAttr defaultMesh = getDefaultMesh();
    auto layoutFor = [&](Value v, ValueInfo *&infoOut) -> ShardingAttr {
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
        replicated = ShardingLayout::replicated(type.getRank())
                         .toAttr(defaultMesh);
      return replicated;
    };
    StringRef name = MeshDialect::getShardingAttrName();
    StringAttr nameAttr = shardingName;
    auto annotateOp = [&](Operation *op) {
      if (auto fn = op->getNumRegions() ? dyn_cast<FunctionOpInterface>(op)
                                        : FunctionOpInterface()) {
        if (fn.isExternal())
          return;
        editArgAttrs(fn, [&](unsigned i, NamedAttrList &attrs) {
          BlockArgument arg = fn.getArgument(i);
          if (!isRankedTensor(arg))
            return;
          ValueInfo *vi;
          if (ShardingAttr s = layoutFor(arg, vi)) {
            attrs.set(name, s);
            if (explain)
              op->emitRemark() << "argument " << i << ": " << s << " "
                               << describe(vi);
          }
        });
        // Results take their return value's sharding unless annotated.
        func::ReturnOp ret;
        for (Block &block : fn.getFunctionBody())
          if (auto r = dyn_cast<func::ReturnOp>(block.getTerminator()))
            ret = r;
        if (ret && ret.getNumOperands() == fn.getNumResults())
          editResultAttrs(fn, [&](unsigned i, NamedAttrList &attrs) {
            Value v = ret.getOperand(i);
            if (!isRankedTensor(v) || attrs.get(name))
              return;
            ValueInfo *vi;
            if (ShardingAttr s = layoutFor(v, vi))
              attrs.set(name, s);
          });
        return;
      }
      if (isa<ShardOp, MeshOp, ModuleOp>(op) || op->getNumResults() == 0)
        return;
      SmallVector<Attribute> shardings;
      bool any = false;
      for (Value r : op->getResults()) {
        if (!isRankedTensor(r))
          return; // Mixed results: leave the op alone.
        ValueInfo *vi;
        ShardingAttr s = layoutFor(r, vi);
        if (!s)
          return;
        any = true;
        shardings.push_back(s);
        if (explain)
          op->emitRemark() << "result " << cast<OpResult>(r).getResultNumber()
                           << ": " << s << " " << describe(vi);
      }
      if (!any)
        return;
      if (shardings.size() == 1)
        op->setAttr(nameAttr, shardings.front());
      else
        op->setAttr(nameAttr, ArrayAttr::get(op->getContext(), shardings));
    };
    for (Operation *op : walked)
      annotateOp(op);
  }

private:
  std::string describe(const ValueInfo *vi) {
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

  FlatSymbolRefAttr getDefaultMesh() {
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    if (meshes.size() != 1)
      return {};
    return FlatSymbolRefAttr::get(meshes.front().getSymNameAttr());
  }

  void setFixed(Value v, ShardingAttr s) {
    info.insert_or_assign(v, ValueInfo{s, ValueInfo::Source::Annotation, nullptr});
  }

  void collectAnnotations(FunctionOpInterface fn) {
    if (fn.isExternal())
      return;
    StringRef name = MeshDialect::getShardingAttrName();
    for (BlockArgument arg : fn.getArguments())
      if (auto s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), name))
        setFixed(arg, s);
  }

  void collectAnnotations(Operation *op) {
    if (auto shard = dyn_cast<ShardOp>(op)) {
      setFixed(shard.getResult(), shard.getSharding());
      return;
    }
    Attribute attr = op->getDiscardableAttr(shardingName);
    if (!attr)
      return;
    if (auto s = dyn_cast<ShardingAttr>(attr)) {
      if (op->getNumResults() == 1)
        setFixed(op->getResult(0), s);
      return;
    }
    if (auto array = dyn_cast<ArrayAttr>(attr))
      for (auto [r, a] : llvm::zip(op->getResults(), array))
        if (auto s = dyn_cast<ShardingAttr>(a))
          setFixed(r, s);
  }

  /// Gives `v` a sharding if it has none. Returns true if it changed.
  bool assign(Value v, ShardingAttr sharding, ValueInfo::Source source,
              Operation *from) {
    if (!isRankedTensor(v))
      return false;
    return info.try_emplace(v, ValueInfo{sharding, source, from}).second;
  }

  /// Visits op `i`; marks it done once every tensor it touches has a
  /// sharding, since then no later sweep can change anything through it.
  bool visitAndMark(size_t i, bool forward) {
    Operation *op = ops[i];
    bool settled = false;
    bool changed = visit(op, ruleOf[i], forward, settled);
    if (settled) {
      done[i] = true;
      return changed;
    }
    auto known = [&](Value v) { return !isRankedTensor(v) || info.count(v); };
    if (!isa<scf::ForOp, scf::IfOp>(op) &&
        llvm::all_of(op->getOperands(), known) &&
        llvm::all_of(op->getResults(), known))
      done[i] = true;
    return changed;
  }

  MeshOp meshFor(Operation *op, FlatSymbolRefAttr ref) {
    return meshCache.get(op, ref);
  }

  /// Propagates through `op`; sets `settled` when every tensor of `op` has
  /// a sharding afterwards.
  bool visit(Operation *op, int ruleIndex, bool forward, bool &settled) {
    if (auto shard = dyn_cast<ShardOp>(op)) {
      // The operand takes the target's sharding as a hint (no partial).
      if (forward)
        return false;
      auto target = info.find(shard.getResult());
      if (target == info.end())
        return false;
      return assign(shard.getSrc(), withoutPartial(target->second.sharding),
                    ValueInfo::Source::Backward, op);
    }
    if (isa<scf::ForOp, scf::IfOp>(op))
      return visitRegionOp(op, forward);
    if (auto call = dyn_cast<func::CallOp>(op)) {
      // Operands take the callee's argument shardings (backward), results
      // its result shardings (forward); shardings do not flow into callees.
      auto callee = dyn_cast_or_null<FunctionOpInterface>(
          symbolTables.lookupNearestSymbolFrom(op, call.getCalleeAttr()));
      if (!callee)
        return false;
      StringRef name = MeshDialect::getShardingAttrName();
      bool changed = false;
      if (forward) {
        for (auto [i, v] : llvm::enumerate(call.getResults()))
          if (auto s = callee.getResultAttrOfType<ShardingAttr>(i, name))
            changed |= assign(v, s, ValueInfo::Source::Forward, op);
      } else {
        for (auto [i, v] : llvm::enumerate(call.getOperands()))
          if (auto s = callee.getArgAttrOfType<ShardingAttr>(i, name))
            changed |= assign(v, withoutPartial(s),
                              ValueInfo::Source::Backward, op);
      }
      return changed;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (forward)
        return false;
      auto fn = op->getParentOfType<FunctionOpInterface>();
      bool changed = false;
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (auto s = fn.getResultAttrOfType<ShardingAttr>(
                i, MeshDialect::getShardingAttrName()))
          changed |= assign(v, s, ValueInfo::Source::Backward, op);
      return changed;
    }
    if (ruleIndex < 0) {
      // Ops without tensors are settled at once.
      settled = ruleIndex == -1 && op->getNumRegions() == 0 &&
                llvm::none_of(op->getOperands(), isRankedTensor) &&
                llvm::none_of(op->getResults(), isRankedTensor);
      return false;
    }
    const ShardingRule &rule = rules[ruleIndex];
    MeshOp meshOp;
    FlatSymbolRefAttr mesh;
    FactorSharding factors(rule.factors.size());
    SmallVector<Attribute, 8> used;

    auto consider = [&](Value v, ArrayRef<int64_t> dims) {
      auto vit = info.find(v);
      if (vit == info.end())
        return;
      ShardingAttr s = vit->second.sharding;
      if (!mesh) {
        mesh = s.getMesh();
        meshOp = meshFor(op, mesh);
        if (!meshOp)
          return;
      } else if (s.getMesh() != mesh) {
        return;
      }
      ArrayAttr valueDims = s.getDims();
      for (auto [d, f] : llvm::enumerate(dims)) {
        if (f < 0 || d >= valueDims.size())
          continue;
        auto axes = cast<ArrayAttr>(valueDims[d]);
        const ShardingFactor &factor = rule.factors[f];
        if (axes.empty() || factors[f] || factor.blocked)
          continue;
        if (llvm::any_of(axes, [&](Attribute a) {
              return llvm::is_contained(used, a);
            }))
          continue;
        int64_t n = groupSize(meshOp, axes);
        if (n == kUnknownAxis)
          continue;
        if (!ShapedType::isDynamic(factor.size) && !ShapedType::isDynamic(n) &&
            factor.size % n != 0)
          continue;
        factors[f] = axes;
        llvm::append_range(used, axes.getValue());
      }
    };
    auto operandValues = [&]() {
      for (auto [v, dims] : llvm::zip(op->getOperands(), rule.operandDims))
        if (isRankedTensor(v))
          consider(v, dims);
    };
    auto resultValues = [&]() {
      for (auto [v, dims] : llvm::zip(op->getResults(), rule.resultDims))
        consider(v, dims);
    };
    if (forward) {
      operandValues();
      resultValues();
    } else {
      resultValues();
      operandValues();
    }
    if (!mesh || !meshOp)
      return false;
    // Every tensor of the op gets a sharding below, if it has none yet.
    settled = rule.operandDims.size() >= op->getNumOperands() &&
              rule.resultDims.size() >= op->getNumResults();

    auto source =
        forward ? ValueInfo::Source::Forward : ValueInfo::Source::Backward;
    bool changed = false;
    for (auto [v, dims] : llvm::zip(op->getResults(), rule.resultDims))
      if (!info.count(v))
        changed |= assign(v, projector.projectResult(mesh, rule, factors, dims),
                          source, op);
    for (auto [v, dims] : llvm::zip(op->getOperands(), rule.operandDims))
      if (isRankedTensor(v) && !info.count(v))
        changed |= assign(v, projector.project(mesh, factors, dims), source, op);
    return changed;
  }

  /// scf.for: init, iteration argument, yielded value and result of each
  /// loop-carried tensor share one sharding; scf.if: each result and the
  /// values both branches yield for it. The first known one (in program
  /// order forward, reversed backward) gives it to the others.
  bool visitRegionOp(Operation *op, bool forward) {
    SmallVector<SmallVector<Value>> tied;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
      for (unsigned i = 0; i < loop.getNumResults(); ++i)
        tied.push_back({loop.getInitArgs()[i], loop.getRegionIterArgs()[i],
                        yield.getOperand(i), loop.getResult(i)});
    } else {
      auto branch = cast<scf::IfOp>(op);
      for (unsigned i = 0; i < branch.getNumResults(); ++i) {
        SmallVector<Value> group;
        if (!branch.getThenRegion().empty())
          group.push_back(branch.thenYield().getOperand(i));
        if (!branch.getElseRegion().empty())
          group.push_back(branch.elseYield().getOperand(i));
        group.push_back(branch.getResult(i));
        tied.push_back(group);
      }
    }
    bool changed = false;
    for (SmallVector<Value> &group : tied) {
      if (!forward)
        std::reverse(group.begin(), group.end());
      const ValueInfo *known = nullptr;
      for (Value v : group)
        if (auto it = info.find(v); it != info.end()) {
          known = &it->second;
          break;
        }
      if (!known)
        continue;
      // Loops and branches carry complete values: a pending reduction is
      // finished before the value enters (the partitioner reshards).
      ShardingAttr complete = withoutPartial(known->sharding);
      auto source =
          forward ? ValueInfo::Source::Forward : ValueInfo::Source::Backward;
      for (Value v : group)
        changed |= assign(v, complete, source, op);
    }
    return changed;
  }

  void warnAboutOpsWithoutRules(ArrayRef<Operation *> ops,
                                ArrayRef<int> ruleIndices) {
    for (auto [op, ruleIndex] : llvm::zip(ops, ruleIndices)) {
      if (ruleIndex != -1) // A rule, or an op handled without one.
        continue;
      bool touchesTensors =
          llvm::any_of(op->getResultTypes(), [](Type t) {
            return isa<RankedTensorType>(t);
          });
      if (touchesTensors)
        op->emitWarning() << "'" << op->getName()
                          << "' has no sharding rule; its tensor results are "
                             "replicated";
    }
  }

  /// Not a group size: sizes are positive or ShapedType::kDynamic (a `?`
  /// axis).
  static constexpr int64_t kUnknownAxis = 0;

  /// The number of devices of `axes` on `mesh`, or kUnknownAxis when the
  /// mesh lacks one of them.
  int64_t groupSize(MeshOp mesh, ArrayAttr axes) {
    auto [it, inserted] =
        groupSizes.try_emplace({mesh.getOperation(), axes}, kUnknownAxis);
    if (inserted) {
      SmallVector<StringRef> names;
      for (Attribute a : axes)
        names.push_back(cast<StringAttr>(a).getValue());
      if (llvm::all_of(names,
                       [&](StringRef a) { return mesh.getAxisIndex(a); }))
        it->second = mesh.getGroupSize(names);
    }
    return it->second;
  }

  ModuleOp module;
  StringAttr shardingName;
  SymbolTableCollection symbolTables;
  /// Every op but the module and meshes, in walk order; and the same
  /// without functions.
  SmallVector<Operation *> walked, ops;
  /// Ops through which nothing more can propagate.
  std::vector<bool> done;
  MeshCache meshCache{symbolTables};
  ShardingProjector projector;
  DenseMap<Value, ValueInfo, ValueAddressInfo> info;
  ShardingRuleTable rules;
  /// In `ruleOf`: an op that propagation handles without a rule.
  static constexpr int kSpecial = -2;
  /// The rule of each op of `run`'s list, in the same order (-1: none,
  /// kSpecial: handled without one).
  SmallVector<int> ruleOf;
  DenseMap<std::pair<Operation *, Attribute>, int64_t> groupSizes;
  DenseMap<int64_t, ShardingAttr> replicatedByRank;
};

struct PropagateShardingPass
    : public mesh::impl::PropagateShardingBase<PropagateShardingPass> {
  using PropagateShardingBase::PropagateShardingBase;
  void runOnOperation() override {
    Propagation propagation(getOperation());
    propagation.run();
    propagation.annotate(explain);
  }
};

} // namespace
