//===- PropagateSharding.cpp - a sharding for every tensor ----------------===//
//
// Annotated values are constraints; the rest are filled in through the ops'
// sharding rules by alternating forward and backward sweeps until nothing
// changes. A value keeps the first sharding it gets, and within an op the
// first known value decides each factor, so the result is deterministic, and
// each sweep costs one visit per op: the pass is linear in the program, also
// when one value has thousands of users.
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
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PROPAGATESHARDING
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// What is known of one tensor value.
struct ValueInfo {
  ShardingLayout layout;
  FlatSymbolRefAttr mesh;
  enum class Source { Annotation, Forward, Backward, Default } source;
  /// The op whose rule gave the sharding (Forward/Backward).
  Operation *from = nullptr;
  bool fixed = false;
};

bool isRankedTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

class Propagation {
public:
  explicit Propagation(ModuleOp module) : module(module) {}

  void run() {
    collectAnnotations();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (!isa<ModuleOp, MeshOp>(op) && !isa<FunctionOpInterface>(op))
        ops.push_back(op);
    });
    rules.reserve(ops.size());
    for (Operation *op : ops)
      if (!isa<ShardOp, func::ReturnOp, func::CallOp, scf::ForOp, scf::IfOp,
               scf::YieldOp>(op)) {
        FailureOr<ShardingRule> rule = getShardingRule(op);
        if (succeeded(rule))
          rules.try_emplace(op, std::move(*rule));
      }
    // Sweeps until nothing changes; a value only ever goes from unknown to
    // known, so this ends, and in practice after two or three sweeps.
    for (int sweep = 0; sweep < 16; ++sweep) {
      bool changed = false;
      bool forward = sweep % 2 == 0;
      if (forward)
        for (Operation *op : ops)
          changed |= visit(op, /*forward=*/true);
      else
        for (Operation *op : llvm::reverse(ops))
          changed |= visit(op, /*forward=*/false);
      if (!changed && sweep > 0)
        break;
    }
    warnAboutOpsWithoutRules(ops);
  }

  /// Writes the shardings back as annotations; remarks with `explain`.
  void annotate(bool explain) {
    FlatSymbolRefAttr defaultMesh = getDefaultMesh();
    auto layoutFor = [&](Value v, ValueInfo *&infoOut) -> ShardingAttr {
      auto it = info.find(v);
      if (it != info.end()) {
        infoOut = &it->second;
        return it->second.layout.toAttr(it->second.mesh);
      }
      infoOut = nullptr;
      if (!defaultMesh)
        return {};
      auto type = cast<RankedTensorType>(v.getType());
      return ShardingLayout::replicated(type.getRank()).toAttr(defaultMesh);
    };
    StringRef name = MeshDialect::getShardingAttrName();
    module.walk([&](Operation *op) {
      if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
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
        fn.walk([&](func::ReturnOp r) { ret = r; });
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
        op->setAttr(name, shardings.front());
      else
        op->setAttr(name, ArrayAttr::get(op->getContext(), shardings));
    });
  }

private:
  std::string describe(const ValueInfo *vi) {
    if (!vi)
      return "(replicated: nothing constrains it)";
    std::string out;
    llvm::raw_string_ostream os(out);
    switch (vi->source) {
    case ValueInfo::Source::Annotation:
      os << "(from the annotation)";
      break;
    case ValueInfo::Source::Forward:
    case ValueInfo::Source::Backward:
      os << "(propagated "
         << (vi->source == ValueInfo::Source::Forward ? "forward through"
                                                      : "backward through")
         << " '" << vi->from->getName() << "' at " << vi->from->getLoc()
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
    ValueInfo vi{ShardingLayout::get(s), s.getMesh(),
                 ValueInfo::Source::Annotation, nullptr, true};
    info[v] = std::move(vi);
  }

  void collectAnnotations() {
    StringRef name = MeshDialect::getShardingAttrName();
    module.walk([&](Operation *op) {
      if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
        if (fn.isExternal())
          return;
        for (BlockArgument arg : fn.getArguments())
          if (auto s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                         name))
            setFixed(arg, s);
        return;
      }
      if (auto shard = dyn_cast<ShardOp>(op)) {
        setFixed(shard.getResult(), shard.getSharding());
        return;
      }
      Attribute attr = op->getAttr(name);
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
    });
  }

  /// Gives `v` a sharding if it has none. Returns true if it changed.
  bool assign(Value v, ShardingLayout layout, FlatSymbolRefAttr mesh,
              ValueInfo::Source source, Operation *from) {
    if (!isRankedTensor(v) || info.count(v))
      return false;
    info[v] = ValueInfo{std::move(layout), mesh, source, from, false};
    return true;
  }

  bool visit(Operation *op, bool forward) {
    if (auto shard = dyn_cast<ShardOp>(op)) {
      // The operand takes the target's sharding as a hint (no partial).
      if (forward)
        return false;
      const ValueInfo &target = info[shard.getResult()];
      ShardingLayout hint = target.layout;
      hint.partial.clear();
      return assign(shard.getSrc(), hint, target.mesh,
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
            changed |= assign(v, ShardingLayout::get(s), s.getMesh(),
                              ValueInfo::Source::Forward, op);
      } else {
        for (auto [i, v] : llvm::enumerate(call.getOperands()))
          if (auto s = callee.getArgAttrOfType<ShardingAttr>(i, name)) {
            ShardingLayout layout = ShardingLayout::get(s);
            layout.partial.clear();
            changed |= assign(v, layout, s.getMesh(),
                              ValueInfo::Source::Backward, op);
          }
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
          changed |= assign(v, ShardingLayout::get(s), s.getMesh(),
                            ValueInfo::Source::Backward, op);
      return changed;
    }
    auto it = rules.find(op);
    if (it == rules.end())
      return false;
    const ShardingRule &rule = it->second;
    MeshOp meshOp;
    FlatSymbolRefAttr mesh;
    FactorSharding factors(rule.factors.size());
    llvm::StringSet<> used;

    auto consider = [&](Value v, ArrayRef<int64_t> dims) {
      auto vit = info.find(v);
      if (vit == info.end())
        return;
      const ValueInfo &vi = vit->second;
      if (!mesh) {
        mesh = vi.mesh;
        meshOp = lookupMesh(op, mesh, &symbolTables);
        if (!meshOp)
          return;
      } else if (vi.mesh != mesh) {
        return;
      }
      for (auto [d, f] : llvm::enumerate(dims)) {
        if (f < 0 || d >= vi.layout.dims.size())
          continue;
        const auto &axes = vi.layout.dims[d];
        const ShardingFactor &factor = rule.factors[f];
        if (axes.empty() || factors[f] || factor.blocked)
          continue;
        if (llvm::any_of(axes, [&](const std::string &a) {
              return used.contains(a) || !meshOp.getAxisIndex(a);
            }))
          continue;
        SmallVector<StringRef> refs(axes.begin(), axes.end());
        int64_t n = meshOp.getGroupSize(refs);
        if (!ShapedType::isDynamic(factor.size) && !ShapedType::isDynamic(n) &&
            factor.size % n != 0)
          continue;
        factors[f] = axes;
        for (const std::string &a : axes)
          used.insert(a);
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

    auto source =
        forward ? ValueInfo::Source::Forward : ValueInfo::Source::Backward;
    bool changed = false;
    for (auto [v, dims] : llvm::zip(op->getResults(), rule.resultDims))
      changed |= assign(v, projectResult(rule, factors, dims), mesh, source, op);
    for (auto [v, dims] : llvm::zip(op->getOperands(), rule.operandDims))
      if (isRankedTensor(v))
        changed |= assign(v, projectFactors(factors, dims), mesh, source, op);
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
      ShardingLayout layout = known->layout;
      layout.partial.clear();
      FlatSymbolRefAttr mesh = known->mesh;
      auto source =
          forward ? ValueInfo::Source::Forward : ValueInfo::Source::Backward;
      for (Value v : group)
        changed |= assign(v, layout, mesh, source, op);
    }
    return changed;
  }

  void warnAboutOpsWithoutRules(ArrayRef<Operation *> ops) {
    for (Operation *op : ops) {
      if (rules.count(op) ||
          isa<ShardOp, func::ReturnOp, func::CallOp, scf::ForOp, scf::IfOp,
              scf::YieldOp, CollectiveOpInterface>(op))
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

  ModuleOp module;
  SymbolTableCollection symbolTables;
  DenseMap<Value, ValueInfo> info;
  DenseMap<Operation *, ShardingRule> rules;
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
