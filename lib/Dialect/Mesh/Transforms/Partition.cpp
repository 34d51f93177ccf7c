//===- Partition.cpp - global program to per-device program ---------------===//
//
// Rewrites each function in place, in program order. Every tensor value is
// given its per-device type from its annotation; an op with a sharding rule
// takes its factors' axes from its results' shardings, its operands are
// resharded to the projection of those factors (without pending reductions),
// and its results come out sharded that way, partial over the axes of
// sharded reduction factors. A result whose annotation differs from what the
// op produces is resharded after it. `mesh.shard` becomes the resharding it
// asks for, and `return` reshards to the function's result shardings.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/FunctionAttrs.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"
#include "mesh/Dialect/Mesh/Transforms/ShardingRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PARTITION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// The shardings of a function's arguments and results, read before any
/// function is partitioned (partitioning removes them).
struct Signature {
  SmallVector<ShardingAttr> args, results;
};

class FunctionPartitioner {
public:
  FunctionPartitioner(FunctionOpInterface fn, SymbolTableCollection &tables,
                      const llvm::StringMap<Signature> &signatures)
      : fn(fn), tables(tables), signatures(signatures),
        shardingName(StringAttr::get(fn->getContext(),
                                     MeshDialect::getShardingAttrName())) {}

  LogicalResult run() {
    StringRef name = MeshDialect::getShardingAttrName();
    // Arguments: per-device types.
    SmallVector<Type> argTypes;
    for (BlockArgument arg : fn.getArguments()) {
      auto s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), name);
      if (failed(place(arg, s, fn, "argument " + std::to_string(
                                                     arg.getArgNumber()))))
        return failure();
      argTypes.push_back(arg.getType());
    }
    // Rules describe global shapes: read them all before any type changes,
    // in pre-order, the order in which partitionBlock reaches the ops.
    fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op != fn.getOperation() &&
          !isa<ShardOp, func::ReturnOp, func::CallOp, scf::ForOp, scf::IfOp,
               scf::YieldOp>(op))
        ruleOf.push_back({op, rules.add(op)});
    });
    if (failed(partitionBlock(fn.getFunctionBody().front())))
      return failure();
    // The signature follows the body.
    SmallVector<Type> resultTypes;
    for (Block &block : fn.getFunctionBody())
      if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator()))
        resultTypes.assign(ret.getOperandTypes().begin(),
                           ret.getOperandTypes().end());
    if (resultTypes.size() != fn.getNumResults())
      resultTypes.assign(fn.getResultTypes().begin(), fn.getResultTypes().end());
    fn.setType(FunctionType::get(fn.getContext(), argTypes, resultTypes));
    auto drop = [&](unsigned, NamedAttrList &attrs) { attrs.erase(name); };
    editArgAttrs(fn, drop);
    editResultAttrs(fn, drop);
    return success();
  }

private:
  /// Gives `v` (a global tensor) its per-device type for `s` (replicated if
  /// null) and records its sharding.
  LogicalResult place(Value v, ShardingAttr s, Operation *where,
                      const Twine &what) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return success();
    if (s) {
      FailureOr<RankedTensorType> local = localType(where, type, s, what);
      if (failed(local))
        return failure();
      v.setType(*local);
    }
    placed[v] = s;
    return success();
  }

  /// The per-device type of `global` sharded as `s` (null: replicated).
  /// Types are cached: a program has few distinct (type, sharding) pairs.
  FailureOr<RankedTensorType> localType(Operation *where,
                                        RankedTensorType global,
                                        ShardingAttr s, const Twine &what) {
    if (!s)
      return global;
    auto [it, inserted] = localTypes.try_emplace({global, s}, nullptr);
    if (!inserted && it->second)
      return it->second;
    MeshOp mesh = meshFor(where, s.getMesh());
    if (!mesh)
      return where->emitError() << "mesh " << s.getMesh()
                                << " is not defined",
             failure();
    std::string whyNot;
    FailureOr<RankedTensorType> local =
        getLocalType(mesh, global, ShardingLayout::get(s), whyNot);
    if (failed(local))
      return where->emitError()
             << "cannot partition " << what << " of type " << global << ": "
             << whyNot,
             failure();
    it->second = *local;
    return local;
  }

  /// The index of `op`'s rule (-1: none). Ops come in the order of
  /// `ruleOf`, so this is a step or two of a cursor; any other order still
  /// finds the right entry, by a search.
  int ruleIndexOf(Operation *op) {
    auto match = [&](size_t i) {
      if (ruleOf[i].first != op)
        return false;
      ruleCursor = i + 1;
      return true;
    };
    for (size_t i = ruleCursor; i < ruleOf.size(); ++i)
      if (match(i))
        return ruleOf[i].second;
    for (size_t i = 0; i < ruleCursor && i < ruleOf.size(); ++i)
      if (match(i))
        return ruleOf[i].second;
    return -1;
  }

  MeshOp meshFor(Operation *op, FlatSymbolRefAttr ref) {
    return meshCache.get(op, ref);
  }

  /// The sharding `v` has now (null: replicated, on no mesh).
  ShardingAttr placedOf(Value v) { return placed.lookup(v); }

  /// `v` resharded from its sharding to `target` (null: replicated), before
  /// `where`. `mesh` is the target's mesh when `target` is null.
  FailureOr<Value> reshard(Value v, ShardingAttr target,
                           FlatSymbolRefAttr mesh, Operation *where,
                           const Twine &what) {
    ShardingAttr from = placedOf(v);
    if (sameLayout(from, target))
      return v;
    if (target)
      mesh = target.getMesh();
    // The same value resharded the same way earlier in this block (or in a
    // block around it) is reused: one collective, not one per use.
    // Replicated targets share one key whether spelled or null.
    Attribute targetKey =
        !target || target.isFullyReplicated() ? Attribute() : target;
    std::pair<Value, Attribute> key{v, targetKey};
    auto cached = reshardCache.find(key);
    if (cached != reshardCache.end()) {
      Operation *def = cached->second.getDefiningOp();
      if (def && def->getBlock()->findAncestorOpInBlock(*where))
        return cached->second;
    }
    FlatSymbolRefAttr fromMesh = from ? from.getMesh() : FlatSymbolRefAttr();
    FlatSymbolRefAttr meshRef = mesh ? mesh : fromMesh;
    if (fromMesh && mesh && fromMesh != mesh)
      return where->emitError()
             << "cannot reshard " << what << " from mesh " << fromMesh
             << " to mesh " << mesh << "; resharding stays on one mesh",
             failure();
    MeshOp meshOp = meshFor(where, meshRef);
    if (!meshOp)
      return where->emitError() << "cannot reshard " << what
                                << ": no mesh is known for it",
             failure();
    // Plans depend only on the two shardings: most reshards of a program
    // repeat a few of them.
    unsigned rank = cast<RankedTensorType>(v.getType()).getRank();
    PlanKey planKey{{from, target}, {meshOp.getOperation(), rank}};
    auto plan = plans.find(planKey);
    if (plan == plans.end()) {
      std::string whyNot;
      FailureOr<SmallVector<ReshardStep>> steps =
          planResharding(layoutOf(from, rank), layoutOf(target, rank), whyNot);
      if (failed(steps))
        return where->emitError()
                   << "cannot reshard " << what << ": " << whyNot,
               failure();
      plan = plans.try_emplace(planKey, std::move(*steps)).first;
    }
    OpBuilder b(where);
    Value out = emitResharding(b, where->getLoc(), meshOp, v, plan->second);
    placed[out] = target;
    reshardCache[key] = out;
    return out;
  }

  ShardingAttr annotationOf(Operation *op, unsigned result) {
    Attribute attr = op->getDiscardableAttr(shardingName);
    if (auto s = dyn_cast_or_null<ShardingAttr>(attr))
      return op->getNumResults() == 1 ? s : ShardingAttr();
    if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
      if (result < array.size())
        return dyn_cast<ShardingAttr>(array[result]);
    return {};
  }

  LogicalResult partitionBlock(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : ops)
      if (failed(partition(op)))
        return failure();
    return success();
  }

  /// Reshards the tensor operands of `yield` to the layouts of `owner`'s
  /// results.
  LogicalResult reshardYield(Operation *yield, Operation *owner) {
    for (OpOperand &operand : yield->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      FailureOr<Value> v =
          reshard(operand.get(), annotationOf(owner, operand.getOperandNumber()),
                  {}, yield, "yielded value " + Twine(operand.getOperandNumber()));
      if (failed(v))
        return failure();
      operand.set(*v);
    }
    return success();
  }

  /// Gives `op`'s tensor results their annotated per-device types.
  LogicalResult placeResults(Operation *op) {
    for (OpResult r : op->getResults())
      if (isa<RankedTensorType>(r.getType()))
        if (failed(place(r, annotationOf(op, r.getResultNumber()), op,
                         "result " + Twine(r.getResultNumber()) + " of '" +
                             op->getName().getStringRef() + "'")))
          return failure();
    return success();
  }

  LogicalResult partitionFor(scf::ForOp loop) {
    // Inits take the loop's layouts; so do the iteration arguments.
    for (unsigned i = 0; i < loop.getNumResults(); ++i) {
      if (!isa<RankedTensorType>(loop.getResult(i).getType()))
        continue;
      OpOperand &init = loop.getInitArgsMutable()[i];
      FailureOr<Value> v = reshard(init.get(), annotationOf(loop, i), {}, loop,
                                   "loop init " + Twine(i));
      if (failed(v))
        return failure();
      init.set(*v);
      BlockArgument arg = loop.getRegionIterArgs()[i];
      if (failed(place(arg, annotationOf(loop, i), loop,
                       "loop-carried value " + Twine(i))))
        return failure();
    }
    if (failed(partitionBlock(*loop.getBody())) ||
        failed(reshardYield(loop.getBody()->getTerminator(), loop)) ||
        failed(placeResults(loop)))
      return failure();
    loop->removeDiscardableAttr(shardingName);
    return success();
  }

  LogicalResult partitionIf(scf::IfOp branch) {
    for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()}) {
      if (region->empty())
        continue;
      if (failed(partitionBlock(region->front())) ||
          failed(reshardYield(region->front().getTerminator(), branch)))
        return failure();
    }
    if (failed(placeResults(branch)))
      return failure();
    branch->removeDiscardableAttr(shardingName);
    return success();
  }

  LogicalResult partition(Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return partitionFor(loop);
    if (auto branch = dyn_cast<scf::IfOp>(op))
      return partitionIf(branch);
    if (isa<scf::YieldOp>(op))
      return success(); // Resharded by the owner once its body is done.
    if (auto shard = dyn_cast<ShardOp>(op)) {
      ShardingAttr target = shard.getSharding();
      FailureOr<Value> v = reshard(shard.getSrc(), target, target.getMesh(), op,
                                   "the mesh.shard operand");
      if (failed(v))
        return failure();
      shard.getResult().replaceAllUsesWith(*v);
      op->erase();
      return success();
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto it = signatures.find(call.getCallee());
      if (it == signatures.end())
        return op->emitError() << "cannot partition a call to @"
                               << call.getCallee()
                               << ", which has no body in this module";
      const Signature &sig = it->second;
      for (OpOperand &operand : op->getOpOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        if (!type)
          continue;
        ShardingAttr s = sig.args[operand.getOperandNumber()];
        FailureOr<Value> v = reshard(
            operand.get(), s, {}, op,
            "operand " + Twine(operand.getOperandNumber()) +
                " of the call to @" + call.getCallee());
        if (failed(v))
          return failure();
        operand.set(*v);
      }
      for (OpResult result : op->getResults())
        if (failed(place(result, sig.results[result.getResultNumber()], op,
                         "result " + Twine(result.getResultNumber()) +
                             " of the call to @" + call.getCallee())))
          return failure();
      return success();
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (OpOperand &operand : ret->getOpOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        if (!type)
          continue;
        auto s = fn.getResultAttrOfType<ShardingAttr>(
            operand.getOperandNumber(), MeshDialect::getShardingAttrName());
        FailureOr<Value> v = reshard(operand.get(), s, {}, op,
                                     "result " +
                                         Twine(operand.getOperandNumber()));
        if (failed(v))
          return failure();
        operand.set(*v);
      }
      return success();
    }
    bool hasTensors =
        llvm::any_of(op->getOperandTypes(),
                     [](Type t) { return isa<RankedTensorType>(t); }) ||
        llvm::any_of(op->getResultTypes(),
                     [](Type t) { return isa<RankedTensorType>(t); });
    if (!hasTensors)
      return success();
    if (op->getNumRegions() && !op->hasTrait<OpTrait::IsIsolatedFromAbove>() &&
        !isa<linalg::LinalgOp>(op))
      return op->emitError() << "partitioning '" << op->getName()
                             << "' (an op with regions) is not supported yet";
    if (isa<CollectiveOpInterface>(op))
      return op->emitError()
             << "'" << op->getName()
             << "' is already per-device; partition programs written on "
                "global shapes";

    const ShardingRule *rule = nullptr;
    if (int index = ruleIndexOf(op); index >= 0)
      rule = &rules[index];
    // The factors' axes, from the results' annotations.
    FlatSymbolRefAttr mesh;
    FactorSharding factors;
    if (rule) {
      factors.resize(rule->factors.size());
      for (auto [r, dims] : llvm::enumerate(rule->resultDims)) {
        ShardingAttr s = annotationOf(op, r);
        if (!s)
          continue;
        if (!mesh)
          mesh = s.getMesh();
        if (s.getMesh() != mesh)
          continue;
        for (auto [d, f] : llvm::enumerate(dims)) {
          if (f < 0 || factors[f] || rule->factors[f].blocked)
            continue;
          auto axes = cast<ArrayAttr>(s.getDims()[d]);
          if (!axes.empty())
            factors[f] = axes;
        }
        if (!s.isPartial())
          continue;
        // Reduction factors: the partial axes, found where propagation took
        // them from, on the operands' dims of each reduction factor.
        SmallVector<Attribute> partialLeft(s.getPartialAxes().getValue());
        for (auto [f, factor] : llvm::enumerate(rule->factors)) {
          if (!factor.reduction || factor.blocked || factors[f])
            continue;
          for (auto [i, dims] : llvm::enumerate(rule->operandDims)) {
            if (factors[f] || i >= op->getNumOperands() ||
                !isa<RankedTensorType>(op->getOperand(i).getType()))
              continue;
            ShardingAttr p = placedOf(op->getOperand(i));
            if (!p)
              continue;
            for (auto [d, g] : llvm::enumerate(dims)) {
              if (g != static_cast<int64_t>(f) || d >= p.getRank())
                continue;
              auto axes = cast<ArrayAttr>(p.getDims()[d]);
              if (axes.empty() || !llvm::all_of(axes, [&](Attribute a) {
                    return llvm::is_contained(partialLeft, a);
                  }))
                continue;
              factors[f] = axes;
              for (Attribute a : axes)
                llvm::erase(partialLeft, a);
              break;
            }
          }
        }
        // Whatever is left goes to the first free reduction factor.
        if (!partialLeft.empty())
          for (auto [f, factor] : llvm::enumerate(rule->factors))
            if (factor.reduction && !factor.blocked && !factors[f]) {
              factors[f] = ArrayAttr::get(op->getContext(), partialLeft);
              break;
            }
      }
    }

    // Operands: resharded to what the op needs.
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type)
        continue;
      unsigned i = operand.getOperandNumber();
      ShardingAttr target = mesh && rule && i < rule->operandDims.size()
                                ? projector.project(mesh, factors,
                                                    rule->operandDims[i])
                                : ShardingAttr();
      FailureOr<Value> v = reshard(operand.get(), target, mesh, op,
                                   "operand " + Twine(i) + " of '" +
                                       op->getName().getStringRef() + "'");
      if (failed(v))
        return failure();
      operand.set(*v);
    }
    // tensor.empty's dynamic sizes are global; divide them.
    if (auto empty = dyn_cast<tensor::EmptyOp>(op); empty && mesh) {
      MeshOp meshOp = meshFor(op, mesh);
      OpBuilder b(op);
      unsigned k = 0;
      for (int64_t d = 0; d < empty.getType().getRank(); ++d) {
        if (!empty.getType().isDynamicDim(d))
          continue;
        int64_t f = rule->resultDims[0][d];
        if (f >= 0 && factors[f]) {
          SmallVector<StringRef> refs;
          for (Attribute a : factors[f])
            refs.push_back(cast<StringAttr>(a).getValue());
          Value n = groupSize(b, op->getLoc(), meshOp, refs);
          Value local = arith::DivUIOp::create(
              b, op->getLoc(), empty.getDynamicSizes()[k], n);
          op->setOperand(k, local);
        }
        ++k;
      }
    }
    // Results: per-device types of what the op produces.
    for (OpResult result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      unsigned r = result.getResultNumber();
      ShardingAttr produced =
          mesh && rule && r < rule->resultDims.size()
              ? projector.projectResult(mesh, *rule, factors,
                                        rule->resultDims[r])
              : ShardingAttr();
      FailureOr<RankedTensorType> local =
          localType(op, type, produced,
                    "result " + Twine(r) + " of '" +
                        op->getName().getStringRef() + "'");
      if (failed(local))
        return failure();
      result.setType(*local);
      placed[result] = produced;
      // A result annotated otherwise is resharded right after the op.
      ShardingAttr annotated = annotationOf(op, r);
      if (annotated && !sameLayout(annotated, produced)) {
        Operation *next = op->getNextNode();
        SmallVector<OpOperand *> uses;
        for (OpOperand &use : result.getUses())
          uses.push_back(&use);
        FailureOr<Value> v =
            reshard(result, annotated, {}, next,
                    "result " + Twine(r) + " of '" +
                        op->getName().getStringRef() + "'");
        if (failed(v))
          return failure();
        for (OpOperand *use : uses)
          use->set(*v);
      }
    }
    updateStaticSizes(op);
    op->removeDiscardableAttr(shardingName);
    return success();
  }

  /// Ops that spell sizes in attributes get the per-device ones.
  static void updateStaticSizes(Operation *op) {
    Builder b(op->getContext());
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      expand.setStaticOutputShape(expand.getResultType().getShape());
      return;
    }
    // Slices: a dim taken whole takes the whole local dim.
    auto fixSizes = [&](OffsetSizeAndStrideOpInterface slice,
                        RankedTensorType full, RankedTensorType part,
                        StringRef attrName) {
      SmallVector<int64_t> sizes(slice.getStaticSizes());
      for (int64_t d = 0; d < part.getRank(); ++d)
        if (!part.isDynamicDim(d) && !ShapedType::isDynamic(sizes[d]) &&
            sizes[d] != part.getDimSize(d))
          sizes[d] = part.getDimSize(d);
      (void)full;
      op->setAttr(attrName, b.getDenseI64ArrayAttr(sizes));
    };
    if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op))
      fixSizes(extract, extract.getSourceType(), extract.getType(),
               "static_sizes");
    else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
      fixSizes(insert, insert.getDestType(), insert.getSourceType(),
               "static_sizes");
  }

  static Value groupSize(OpBuilder &b, Location loc, MeshOp mesh,
                         ArrayRef<StringRef> axes) {
    int64_t n = mesh.getGroupSize(axes);
    if (!ShapedType::isDynamic(n))
      return arith::ConstantIndexOp::create(b, loc, n);
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    for (StringRef axis : axes) {
      Value size = AxisSizeOp::create(b, loc, b.getIndexType(), ref,
                                      b.getStringAttr(axis));
      total = arith::MulIOp::create(b, loc, total, size);
    }
    return total;
  }

  FunctionOpInterface fn;
  SymbolTableCollection &tables;
  const llvm::StringMap<Signature> &signatures;
  StringAttr shardingName;
  /// The sharding of each per-device value (absent or null: replicated).
  DenseMap<Value, ShardingAttr, ValueAddressInfo> placed;
  ShardingRuleTable rules;
  /// Each op (but the special ones) in pre-order, with its rule index.
  std::vector<std::pair<Operation *, int>> ruleOf;
  size_t ruleCursor = 0;
  ShardingProjector projector;
  MeshCache meshCache{tables};
  /// (source, target), (mesh, rank) -> the plan between them.
  using PlanKey = std::pair<std::pair<Attribute, Attribute>,
                            std::pair<Operation *, unsigned>>;
  DenseMap<PlanKey, SmallVector<ReshardStep>> plans;
  DenseMap<std::pair<Type, Attribute>, RankedTensorType> localTypes;
  /// (value, target sharding) -> the value resharded there.
  DenseMap<std::pair<Value, Attribute>, Value> reshardCache;
};

struct PartitionPass : public mesh::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    SymbolTableCollection tables;
    SmallVector<FunctionOpInterface> fns;
    llvm::StringMap<Signature> signatures;
    StringRef name = MeshDialect::getShardingAttrName();
    // Functions do not nest in functions: skip their bodies.
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op->getNumRegions() == 0)
        return WalkResult::skip();
      auto fn = dyn_cast<FunctionOpInterface>(op);
      if (!fn)
        return WalkResult::advance();
      if (fn.isExternal())
        return WalkResult::skip();
      fns.push_back(fn);
      Signature &sig = signatures[fn.getName()];
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        sig.args.push_back(fn.getArgAttrOfType<ShardingAttr>(i, name));
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        sig.results.push_back(fn.getResultAttrOfType<ShardingAttr>(i, name));
      return WalkResult::skip();
    });
    for (FunctionOpInterface fn : fns)
      if (failed(FunctionPartitioner(fn, tables, signatures).run()))
        return signalPassFailure();
  }
};

} // namespace
