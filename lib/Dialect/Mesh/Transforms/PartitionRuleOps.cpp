//===- PartitionRuleOps.cpp - ops with a sharding rule, partitioned -------===//
//
// The partitioner's ops with a sharding rule (or none): factors assigned,
// operands resharded (pending sums kept through linear ops), per-device
// sizes and loop indices, group sizes and indices.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::mesh;
using namespace mlir::mesh::partition_detail;

//===----------------------------------------------------------------------===//
// Ops with a sharding rule (or none)
//===----------------------------------------------------------------------===//

/// Operands are resharded to the projection of the op's factors, results
/// typed as the op produces them and resharded where annotated otherwise,
/// and the sizes the op spells made per-device.
LogicalResult FunctionPartitioner::partitionRuleOp(Operation *op) {
  if (!hasTensors(op))
    return success();
  const ShardingRule *rule = ruleOf(op);
  // An op with regions that does not describe itself runs replicated, on
  // the whole values it uses from above too.
  if (op->getNumRegions() && !op->hasTrait<OpTrait::IsIsolatedFromAbove>() &&
      !isa<ShardingRuleOpInterface>(op) && failed(replicateRegions(op)))
    return failure();
  std::optional<FactorAssignment> assignment;
  std::optional<LinearPartial> linear;
  if (rule) {
    assignment.emplace(assignFactors(op, *rule));
    linear = getLinearPartial(op, *rule, *assignment);
  }
  const FactorAssignment *factors = assignment ? &*assignment : nullptr;
  const LinearPartial *pending = linear ? &*linear : nullptr;
  // Ops that spell sizes rewrite them from their global result types, read
  // before the results become per-device.
  bool spellsSizes = rule && classifier.hasRuleInterface(op);
  SmallVector<Type> globalResultTypes;
  if (spellsSizes)
    llvm::append_range(globalResultTypes, op->getResultTypes());
  if (failed(reshardOperands(op, rule, factors, pending)) ||
      failed(typeResults(op, rule, factors, pending)))
    return failure();
  if (rule) {
    if (spellsSizes)
      updateSizes(op, globalResultTypes, *rule, *assignment);
    // (The dialect first: a failed interface lookup on every op is dear.)
    if (isa_and_present<linalg::LinalgDialect>(op->getDialect()))
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
        localizeLoopIndices(linalgOp, *assignment);
  }
  dropSharding(op);
  return success();
}

/// Prepares an op with regions and no rule to run replicated, as written:
/// tensors its regions use from above are gathered whole before it (a
/// warning names the op when that moves data), and the ops inside keep their
/// global types, without annotations or constraints.
LogicalResult FunctionPartitioner::replicateRegions(Operation *op) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  bool gathered = false;
  for (Value v : captured) {
    if (!isa<RankedTensorType>(v.getType()) || !placedOf(v))
      continue;
    FailureOr<Value> whole =
        reshard(v, ShardingAttr(), placedOf(v).getMesh(), op,
                "a value '" + op->getName().getStringRef() + "' uses");
    if (failed(whole))
      return failure();
    gathered |= *whole != v;
    replaceAllUsesInRegionWith(v, *whole, op->getRegion(0));
    for (Region &region : op->getRegions().drop_front())
      replaceAllUsesInRegionWith(v, *whole, region);
  }
  // Constraints inside are moot: the region computes whole values.
  SmallVector<ShardOp> shards;
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    dropSharding(nested);
    if (auto shard = dyn_cast<ShardOp>(nested))
      shards.push_back(shard);
  });
  for (ShardOp shard : shards) {
    shard.getResult().replaceAllUsesWith(shard.getSrc());
    shard->erase();
  }
  if (gathered || llvm::any_of(op->getOperands(), [&](Value v) {
        return static_cast<bool>(placedOf(v));
      }))
    op->emitWarning() << "'" << op->getName()
                      << "' has regions and no sharding rule: it runs "
                         "replicated, on whole values";
  return success();
}

/// The rule of `op`, if it has one. Ops come in the order of
/// `rulesInOrder`, so this is a step or two of a cursor; any other order
/// still finds the right entry, by a search.
const ShardingRule *FunctionPartitioner::ruleOf(Operation *op) {
  auto found = [&](size_t i) -> const ShardingRule * {
    ruleCursor = i + 1;
    return rulesInOrder[i].rule ? &rules[*rulesInOrder[i].rule] : nullptr;
  };
  for (size_t i = ruleCursor; i < rulesInOrder.size(); ++i)
    if (rulesInOrder[i].op == op)
      return found(i);
  for (size_t i = 0; i < ruleCursor && i < rulesInOrder.size(); ++i)
    if (rulesInOrder[i].op == op)
      return found(i);
  return nullptr;
}

/// The factors' axes, from the results' annotations; the axes of pending
/// reductions go to the reduction factors whose operand dims are sharded
/// over them.
FactorAssignment FunctionPartitioner::assignFactors(Operation *op,
                                                    const ShardingRule &rule) {
  return assignFactorsFromResults(
      rule, op, meshCache, shardingName, [&](unsigned i) -> ShardingAttr {
        if (i >= op->getNumOperands() ||
            !isa<RankedTensorType>(op->getOperand(i).getType()))
          return {};
        return placedOf(op->getOperand(i));
      });
}

/// `s` with a pending sum over `axes`.
static ShardingAttr withPendingSum(ShardingAttr s, AxisListAttr axes) {
  return ShardingAttr::get(s.getContext(), s.getMesh(), s.getDims(), axes,
                           ReductionKind::Sum, s.getHalo());
}

/// The factors `op`'s values are projected from.
static ArrayRef<AxisListAttr> getFactors(const FactorAssignment *assignment,
                                         const LinearPartial *linear) {
  if (linear)
    return linear->factors;
  return assignment ? assignment->getFactors() : ArrayRef<AxisListAttr>();
}

std::optional<LinearPartial>
FunctionPartitioner::getLinearPartial(Operation *op, const ShardingRule &rule,
                                      const FactorAssignment &assignment) {
  // Most ops read no pending sum: nothing to look at.
  if (op->getNumResults() != 1 ||
      llvm::none_of(op->getOperands(), [&](Value v) {
        ShardingAttr s = placedOf(v);
        return s && s.isPartial();
      }))
    return std::nullopt;
  FlatSymbolRefAttr mesh = assignment.getMesh();
  MeshOp meshOp = mesh ? meshFor(op, mesh) : MeshOp();
  if (!meshOp)
    return std::nullopt;
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  bool fills = isInsertIntoZeros(op) && fillsWithPendingSums(op);
  return findLinearPartial(
      op, rule, assignment.getFactors(), mesh,
      [&](Value v) { return placedOf(v); },
      [&](Value v) {
        return fills ||
               (result && globalTypeOf(v, placedOf(v), meshOp).getShape() ==
                              result.getShape());
      });
}

/// Whether the chain of `tensor.insert_slice`s that starts at `op` (each
/// result the next one's destination, used by it alone) inserts pending
/// sums that fill its destination: a flat gradient assembled from the
/// pieces. Reducing the assembled buffer once then moves no more than
/// reducing each piece would, and it can be scattered.
bool FunctionPartitioner::fillsWithPendingSums(Operation *op) {
  auto first = cast<tensor::InsertSliceOp>(op);
  RankedTensorType dest = first.getDestType();
  if (!dest.hasStaticShape())
    return false;
  auto isPending = [&](Value v) {
    ShardingAttr s = placedOf(v);
    if (!s)
      if (auto r = dyn_cast<OpResult>(v))
        s = getResultAnnotation(r.getOwner(), r.getResultNumber(),
                                shardingName);
    return s && s.isPartial();
  };
  int64_t covered = 0;
  for (auto insert = first; insert;) {
    RankedTensorType source = insert.getSourceType();
    if (!source.hasStaticShape() || !isPending(insert.getSource()))
      break;
    covered += source.getNumElements();
    Value r = insert.getResult();
    if (!r.hasOneUse())
      break;
    auto next = dyn_cast<tensor::InsertSliceOp>(*r.getUsers().begin());
    insert = next && next.getDest() == r ? next : tensor::InsertSliceOp();
  }
  return covered >= dest.getNumElements();
}

/// Operands: resharded to what the op needs (replicated without a rule).
LogicalResult
FunctionPartitioner::reshardOperands(Operation *op, const ShardingRule *rule,
                                     const FactorAssignment *assignment,
                                     const LinearPartial *linear) {
  FlatSymbolRefAttr mesh = assignment ? assignment->getMesh() : nullptr;
  ArrayRef<AxisListAttr> factors = getFactors(assignment, linear);
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    ShardingAttr target =
        mesh && i < rule->operandDims.size()
            ? projector.project(mesh, factors, rule->operandDims[i],
                                rule->getOperandHalos(i))
            : ShardingAttr();
    if (target && linear && linear->partial[i])
      target = withPendingSum(target, linear->axes);
    if (failed(reshardOperand(operand, target, mesh, op,
                              "operand " + Twine(i) + " of '" +
                                  op->getName().getStringRef() + "'")))
      return failure();
  }
  return success();
}

/// Results: per-device types of what the op produces; a result annotated
/// otherwise is resharded right after the op.
LogicalResult
FunctionPartitioner::typeResults(Operation *op, const ShardingRule *rule,
                                 const FactorAssignment *assignment,
                                 const LinearPartial *linear) {
  FlatSymbolRefAttr mesh = assignment ? assignment->getMesh() : nullptr;
  ArrayRef<AxisListAttr> factors = getFactors(assignment, linear);
  for (OpResult result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    unsigned r = result.getResultNumber();
    // The description is spelled out at each use: a Twine must not outlive
    // its statement, and a string built for every result costs more than the
    // rest of the loop.
    StringRef opName = op->getName().getStringRef();
    ShardingAttr produced =
        mesh && r < rule->resultDims.size()
            ? projector.projectResult(mesh, *rule, factors, rule->resultDims[r],
                                      rule->getResultHalos(r))
            : ShardingAttr();
    if (produced && linear)
      produced = withPendingSum(produced, linear->axes);
    FailureOr<RankedTensorType> local = localType(
        op, type, produced, "result " + Twine(r) + " of '" + opName + "'");
    if (failed(local))
      return failure();
    noteDynamicLocal(result, type, *local);
    result.setType(*local);
    placed[result] = produced;
    // The value users see: the result, or it with its halos filled.
    Value value = result;
    if (produced && produced.hasHalo()) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : result.getUses())
        uses.push_back(&use);
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      FailureOr<Value> filled =
          fillHalos(b, op, result, produced, meshFor(op, produced.getMesh()));
      if (failed(filled))
        return failure();
      for (OpOperand *use : uses)
        use->set(*filled);
      placed[*filled] = produced;
      value = *filled;
    }
    // Values that need no data are made again where another layout is
    // needed (remake): keep their global type.
    if (isRemakeable(op))
      globalTypes[result] = type;
    ShardingAttr annotated = getResultAnnotation(op, r, shardingName);
    if (!annotated || sameLayout(annotated, produced))
      continue;
    // A partial result of a linear op stays partial until a consumer needs
    // it otherwise: a linear consumer takes it as it is, and the others
    // share one reshard. Not when a user is in another block, which would
    // not see that reshard (a loop's body would reduce it every step).
    if (linear && llvm::all_of(result.getUsers(), [&](Operation *user) {
          return user->getBlock() == op->getBlock();
        }))
      continue;
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : value.getUses())
      uses.push_back(&use);
    Operation *after = value == result ? op : value.getDefiningOp();
    FailureOr<Value> v = reshard(value, annotated, {}, after->getNextNode(),
                                 "result " + Twine(r) + " of '" + opName + "'");
    if (failed(v))
      return failure();
    for (OpOperand *use : uses)
      use->set(*v);
  }
  return success();
}

/// Lets the op (one with ShardingRuleOpInterface) rewrite the sizes it
/// spells for its per-device types.
void FunctionPartitioner::updateSizes(Operation *op,
                                      TypeRange globalResultTypes,
                                      const ShardingRule &rule,
                                      const FactorAssignment &assignment) {
  auto iface = cast<ShardingRuleOpInterface>(op);
  FlatSymbolRefAttr mesh = assignment.getMesh();
  auto devicesAlong = [&](OpBuilder &b, unsigned result,
                          unsigned dim) -> Value {
    if (!mesh || result >= rule.resultDims.size())
      return {};
    int64_t f = rule.resultDims[result][dim];
    if (f < 0 || !assignment.getFactors()[f])
      return {};
    return groupSize(b, op->getLoc(), meshFor(op, mesh),
                     assignment.getFactors()[f].getNames());
  };
  // The operands are per-device now, each placed as the op needs it.
  auto globalOperandType = [&](unsigned i) -> Type {
    Value v = op->getOperand(i);
    ShardingAttr from =
        isa<RankedTensorType>(v.getType()) ? placedOf(v) : ShardingAttr();
    MeshOp meshOp = from ? meshFor(op, from.getMesh()) : MeshOp();
    return meshOp ? Type(globalTypeOf(v, from, meshOp)) : v.getType();
  };
  iface.updateSizesForLocalTypes(globalOperandType, globalResultTypes,
                                 devicesAlong);
}

/// A linalg op whose body reads the index of a loop that is now split
/// (the rule lets a parallel loop split when a result dim iterates it):
/// each device runs its block of the loop, so the global index is the
/// local one plus the block's start, the device's index among the loop's
/// axes times the per-device size of that result dim.
void FunctionPartitioner::localizeLoopIndices(
    linalg::LinalgOp op, const FactorAssignment &assignment) {
  FlatSymbolRefAttr mesh = assignment.getMesh();
  if (!mesh || !op.hasIndexSemantics())
    return;
  ArrayRef<AxisListAttr> factors = assignment.getFactors();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  DenseMap<uint64_t, Value> starts;
  // The start of this device's block of loop `d`, built before the op.
  auto blockStart = [&](uint64_t d) -> Value {
    if (Value &start = starts[d])
      return start;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      AffineMap map = maps[init.getOperandNumber()];
      for (unsigned k = 0; k < map.getNumResults(); ++k) {
        auto e = dyn_cast<AffineDimExpr>(map.getResult(k));
        if (!e || e.getPosition() != d)
          continue;
        OpBuilder b(op);
        Location loc = op.getLoc();
        auto type = cast<RankedTensorType>(init.get().getType());
        Value size =
            type.isDynamicDim(k)
                ? tensor::DimOp::create(b, loc, init.get(), k).getResult()
                : arith::ConstantIndexOp::create(b, loc, type.getDimSize(k))
                      .getResult();
        Value index =
            groupIndex(b, loc, meshFor(op, mesh), factors[d].getNames());
        return starts[d] = arith::MulIOp::create(b, loc, index, size);
      }
    }
    return {};
  };
  SmallVector<linalg::IndexOp> indices;
  op.getBlock()->walk([&](linalg::IndexOp index) {
    uint64_t d = index.getDim();
    if (d < factors.size() && factors[d] && !factors[d].empty())
      indices.push_back(index);
  });
  for (linalg::IndexOp index : indices) {
    Value start = blockStart(index.getDim());
    assert(start && "the rule splits only loops a result dim iterates");
    OpBuilder b(index->getContext());
    b.setInsertionPointAfter(index);
    Value global = arith::AddIOp::create(b, index.getLoc(), index, start);
    index.getResult().replaceAllUsesExcept(global, global.getDefiningOp());
  }
}

/// The number of devices of `axes` as an index value.
Value FunctionPartitioner::groupSize(OpBuilder &b, Location loc, MeshOp mesh,
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

/// This device's index in the group of `axes` (row-major over them), as an
/// index value.
Value FunctionPartitioner::groupIndex(OpBuilder &b, Location loc, MeshOp mesh,
                                      ArrayRef<StringRef> axes) {
  FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Value index;
  for (StringRef axis : axes) {
    Value i = AxisIndexOp::create(b, loc, b.getIndexType(), ref,
                                  b.getStringAttr(axis));
    if (!index) {
      index = i;
      continue;
    }
    Value size = groupSize(b, loc, mesh, {axis});
    index = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, index, size), i);
  }
  return index ? index : arith::ConstantIndexOp::create(b, loc, 0);
}
