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

#include <map>

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PARTITION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// The layout and mesh a local value currently has.
struct Placed {
  ShardingLayout layout;
  FlatSymbolRefAttr mesh;
};

/// The shardings of a function's arguments and results, read before any
/// function is partitioned (partitioning removes them).
struct Signature {
  SmallVector<ShardingAttr> args, results;
};

class FunctionPartitioner {
public:
  FunctionPartitioner(FunctionOpInterface fn, SymbolTableCollection &tables,
                      const llvm::StringMap<Signature> &signatures)
      : fn(fn), tables(tables), signatures(signatures) {}

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
    // Rules describe global shapes: read them all before any type changes.
    fn.walk([&](Operation *op) {
      if (op != fn.getOperation() &&
          !isa<ShardOp, func::ReturnOp, func::CallOp, scf::ForOp, scf::IfOp,
               scf::YieldOp>(op))
        if (FailureOr<ShardingRule> rule = getShardingRule(op); succeeded(rule))
          rules.try_emplace(op, std::move(*rule));
    });
    if (failed(partitionBlock(fn.getFunctionBody().front())))
      return failure();
    // The signature follows the body.
    SmallVector<Type> resultTypes;
    fn.walk([&](func::ReturnOp ret) {
      resultTypes.assign(ret.getOperandTypes().begin(),
                         ret.getOperandTypes().end());
    });
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
  /// null) and records its layout.
  LogicalResult place(Value v, ShardingAttr s, Operation *where,
                      const std::string &what) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return success();
    Placed p{s ? ShardingLayout::get(s) : ShardingLayout::replicated(type.getRank()),
             s ? s.getMesh() : FlatSymbolRefAttr()};
    if (s) {
      FailureOr<RankedTensorType> local = localType(where, type, p, what);
      if (failed(local))
        return failure();
      v.setType(*local);
    }
    placed[v] = std::move(p);
    return success();
  }

  FailureOr<RankedTensorType> localType(Operation *where,
                                        RankedTensorType global,
                                        const Placed &p,
                                        const std::string &what) {
    if (!p.mesh)
      return global;
    MeshOp mesh = lookupMesh(where, p.mesh, &tables);
    if (!mesh)
      return where->emitError() << "mesh " << p.mesh << " is not defined",
             failure();
    std::string whyNot;
    FailureOr<RankedTensorType> local =
        getLocalType(mesh, global, p.layout, whyNot);
    if (failed(local))
      return where->emitError()
             << "cannot partition " << what << " of type " << global << ": "
             << whyNot,
             failure();
    return local;
  }

  const Placed &placedOf(Value v) {
    auto it = placed.find(v);
    if (it != placed.end())
      return it->second;
    auto type = cast<RankedTensorType>(v.getType());
    placed[v] = Placed{ShardingLayout::replicated(type.getRank()), {}};
    return placed[v];
  }

  /// `v` resharded from its layout to `target` on `mesh`, before `where`.
  FailureOr<Value> reshard(Value v, const ShardingLayout &target,
                           FlatSymbolRefAttr mesh, Operation *where,
                           const std::string &what) {
    Placed from = placedOf(v);
    if (from.layout == target)
      return v;
    // The same value resharded the same way earlier in this block (or in a
    // block around it) is reused: one collective, not one per use.
    std::string key = layoutKey(target);
    auto cached = reshardCache.find({v.getAsOpaquePointer(), key});
    if (cached != reshardCache.end()) {
      Operation *def = cached->second.getDefiningOp();
      if (def && def->getBlock()->findAncestorOpInBlock(*where))
        return cached->second;
    }
    FlatSymbolRefAttr meshRef = mesh ? mesh : from.mesh;
    if (from.mesh && mesh && from.mesh != mesh)
      return where->emitError()
             << "cannot reshard " << what << " from mesh " << from.mesh
             << " to mesh " << mesh << "; resharding stays on one mesh",
             failure();
    MeshOp meshOp = lookupMesh(where, meshRef, &tables);
    if (!meshOp)
      return where->emitError() << "cannot reshard " << what
                                << ": no mesh is known for it",
             failure();
    std::string whyNot;
    FailureOr<SmallVector<ReshardStep>> steps =
        planResharding(meshOp, from.layout, target, whyNot);
    if (failed(steps))
      return where->emitError() << "cannot reshard " << what << ": " << whyNot,
             failure();
    OpBuilder b(where);
    Value out = emitResharding(b, where->getLoc(), meshOp, v, *steps);
    placed[out] = Placed{target, meshRef};
    reshardCache[{v.getAsOpaquePointer(), key}] = out;
    return out;
  }

  static std::string layoutKey(const ShardingLayout &layout) {
    std::string key;
    for (const auto &axes : layout.dims) {
      for (const std::string &a : axes)
        key += a + ",";
      key += ";";
    }
    for (const std::string &a : layout.partial)
      key += a + ",";
    return key + std::to_string(static_cast<int>(layout.partialKind));
  }

  static ShardingAttr annotationOf(Operation *op, unsigned result) {
    Attribute attr = op->getAttr(MeshDialect::getShardingAttrName());
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

  /// The layout annotated on result `i` of `op` (replicated if none).
  static std::pair<ShardingLayout, FlatSymbolRefAttr>
  resultLayout(Operation *op, unsigned i) {
    if (ShardingAttr s = annotationOf(op, i))
      return {ShardingLayout::get(s), s.getMesh()};
    auto type = cast<RankedTensorType>(op->getResult(i).getType());
    return {ShardingLayout::replicated(type.getRank()), FlatSymbolRefAttr()};
  }

  /// Reshards the tensor operands of `yield` to the layouts of `owner`'s
  /// results.
  LogicalResult reshardYield(Operation *yield, Operation *owner) {
    for (OpOperand &operand : yield->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      auto [layout, mesh] = resultLayout(owner, operand.getOperandNumber());
      FailureOr<Value> v =
          reshard(operand.get(), layout, mesh, yield,
                  "yielded value " + std::to_string(operand.getOperandNumber()));
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
                         "result " + std::to_string(r.getResultNumber()) +
                             " of '" + op->getName().getStringRef().str() +
                             "'")))
          return failure();
    return success();
  }

  LogicalResult partitionFor(scf::ForOp loop) {
    // Inits take the loop's layouts; so do the iteration arguments.
    for (unsigned i = 0; i < loop.getNumResults(); ++i) {
      if (!isa<RankedTensorType>(loop.getResult(i).getType()))
        continue;
      auto [layout, mesh] = resultLayout(loop, i);
      OpOperand &init = loop.getInitArgsMutable()[i];
      FailureOr<Value> v = reshard(init.get(), layout, mesh, loop,
                                   "loop init " + std::to_string(i));
      if (failed(v))
        return failure();
      init.set(*v);
      BlockArgument arg = loop.getRegionIterArgs()[i];
      if (failed(place(arg, annotationOf(loop, i), loop,
                       "loop-carried value " + std::to_string(i))))
        return failure();
    }
    if (failed(partitionBlock(*loop.getBody())) ||
        failed(reshardYield(loop.getBody()->getTerminator(), loop)) ||
        failed(placeResults(loop)))
      return failure();
    loop->removeAttr(MeshDialect::getShardingAttrName());
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
    branch->removeAttr(MeshDialect::getShardingAttrName());
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
      FailureOr<Value> v = reshard(shard.getSrc(), ShardingLayout::get(target),
                                   target.getMesh(), op, "the mesh.shard operand");
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
        ShardingLayout target =
            s ? ShardingLayout::get(s) : ShardingLayout::replicated(type.getRank());
        FailureOr<Value> v = reshard(
            operand.get(), target, s ? s.getMesh() : FlatSymbolRefAttr(), op,
            "operand " + std::to_string(operand.getOperandNumber()) +
                " of the call to @" + call.getCallee().str());
        if (failed(v))
          return failure();
        operand.set(*v);
      }
      for (OpResult result : op->getResults())
        if (failed(place(result, sig.results[result.getResultNumber()], op,
                         "result " + std::to_string(result.getResultNumber()) +
                             " of the call to @" + call.getCallee().str())))
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
        ShardingLayout target =
            s ? ShardingLayout::get(s) : ShardingLayout::replicated(type.getRank());
        FailureOr<Value> v =
            reshard(operand.get(), target, s ? s.getMesh() : FlatSymbolRefAttr(),
                    op, "result " + std::to_string(operand.getOperandNumber()));
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

    FailureOr<ShardingRule> rule = failure();
    if (auto it = rules.find(op); it != rules.end())
      rule = it->second;
    // The factors' axes, from the results' annotations.
    FlatSymbolRefAttr mesh;
    FactorSharding factors;
    if (succeeded(rule)) {
      factors.resize(rule->factors.size());
      for (auto [r, dims] : llvm::enumerate(rule->resultDims)) {
        ShardingAttr s = annotationOf(op, r);
        if (!s)
          continue;
        if (!mesh)
          mesh = s.getMesh();
        if (s.getMesh() != mesh)
          continue;
        for (auto [d, f] : llvm::enumerate(dims))
          if (f >= 0 && !factors[f] && !rule->factors[f].blocked &&
              !s.getDimAxes(d).empty()) {
            SmallVector<std::string> axes;
            for (StringRef a : s.getDimAxes(d))
              axes.push_back(a.str());
            factors[f] = axes;
          }
        // Reduction factors: the partial axes, found where propagation took
        // them from, on the operands' dims of each reduction factor.
        SmallVector<std::string> partialLeft;
        for (StringRef a : s.getPartialAxisNames())
          partialLeft.push_back(a.str());
        for (auto [f, factor] : llvm::enumerate(rule->factors)) {
          if (!factor.reduction || factor.blocked || factors[f])
            continue;
          for (auto [i, dims] : llvm::enumerate(rule->operandDims)) {
            if (factors[f] || i >= op->getNumOperands() ||
                !isa<RankedTensorType>(op->getOperand(i).getType()))
              continue;
            const Placed &p = placedOf(op->getOperand(i));
            for (auto [d, g] : llvm::enumerate(dims)) {
              if (g != static_cast<int64_t>(f) || d >= p.layout.dims.size())
                continue;
              const auto &axes = p.layout.dims[d];
              if (axes.empty() || !llvm::all_of(axes, [&](const std::string &a) {
                    return llvm::is_contained(partialLeft, a);
                  }))
                continue;
              factors[f] = axes;
              for (const std::string &a : axes)
                llvm::erase(partialLeft, a);
              break;
            }
          }
        }
        // Whatever is left goes to the first free reduction factor.
        if (!partialLeft.empty())
          for (auto [f, factor] : llvm::enumerate(rule->factors))
            if (factor.reduction && !factor.blocked && !factors[f]) {
              factors[f] = partialLeft;
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
      ShardingLayout target =
          succeeded(rule) && i < rule->operandDims.size()
              ? projectFactors(factors, rule->operandDims[i])
              : ShardingLayout::replicated(type.getRank());
      FailureOr<Value> v = reshard(operand.get(), target, mesh, op,
                                   "operand " + std::to_string(i) + " of '" +
                                       op->getName().getStringRef().str() + "'");
      if (failed(v))
        return failure();
      operand.set(*v);
    }
    // tensor.empty's dynamic sizes are global; divide them.
    if (auto empty = dyn_cast<tensor::EmptyOp>(op); empty && mesh) {
      MeshOp meshOp = lookupMesh(op, mesh, &tables);
      OpBuilder b(op);
      unsigned k = 0;
      for (int64_t d = 0; d < empty.getType().getRank(); ++d) {
        if (!empty.getType().isDynamicDim(d))
          continue;
        int64_t f = rule->resultDims[0][d];
        if (f >= 0 && factors[f]) {
          SmallVector<StringRef> refs(factors[f]->begin(), factors[f]->end());
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
      ShardingLayout produced =
          succeeded(rule) && r < rule->resultDims.size()
              ? projectResult(*rule, factors, rule->resultDims[r])
              : ShardingLayout::replicated(type.getRank());
      Placed p{produced, mesh};
      FailureOr<RankedTensorType> local =
          localType(op, type, p,
                    "result " + std::to_string(r) + " of '" +
                        op->getName().getStringRef().str() + "'");
      if (failed(local))
        return failure();
      result.setType(*local);
      placed[result] = p;
      // A result annotated otherwise is resharded right after the op.
      ShardingAttr annotated = annotationOf(op, r);
      if (annotated && ShardingLayout::get(annotated) != produced) {
        Operation *next = op->getNextNode();
        SmallVector<OpOperand *> uses;
        for (OpOperand &use : result.getUses())
          uses.push_back(&use);
        FailureOr<Value> v =
            reshard(result, ShardingLayout::get(annotated),
                    annotated.getMesh(), next,
                    "result " + std::to_string(r) + " of '" +
                        op->getName().getStringRef().str() + "'");
        if (failed(v))
          return failure();
        for (OpOperand *use : uses)
          use->set(*v);
      }
    }
    updateStaticSizes(op);
    op->removeAttr(MeshDialect::getShardingAttrName());
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
  DenseMap<Value, Placed> placed;
  DenseMap<Operation *, ShardingRule> rules;
  /// (value, target layout) -> the value resharded there.
  std::map<std::pair<const void *, std::string>, Value> reshardCache;
};

struct PartitionPass : public mesh::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    SymbolTableCollection tables;
    SmallVector<FunctionOpInterface> fns;
    llvm::StringMap<Signature> signatures;
    StringRef name = MeshDialect::getShardingAttrName();
    getOperation().walk([&](FunctionOpInterface fn) {
      if (fn.isExternal())
        return;
      fns.push_back(fn);
      Signature &sig = signatures[fn.getName()];
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        sig.args.push_back(fn.getArgAttrOfType<ShardingAttr>(i, name));
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        sig.results.push_back(fn.getResultAttrOfType<ShardingAttr>(i, name));
    });
    for (FunctionOpInterface fn : fns)
      if (failed(FunctionPartitioner(fn, tables, signatures).run()))
        return signalPassFailure();
  }
};

} // namespace
