//===- Partition.cpp - global program to per-device program ---------------===//
//
// Rewrites each function in place, in program order. Every tensor value is
// given its per-device type from its annotation; an op with a sharding rule
// takes its factors' axes from its results' shardings, its operands are
// resharded to the projection of those factors (without pending reductions),
// and its results come out sharded that way, partial over the axes of
// sharded reduction factors. An op linear in its partial operands keeps
// them partial and leaves its result partial (Linearity.h). A result whose
// annotation differs from what the op produces is resharded after it.
// `mesh.shard` becomes the resharding it asks for, a function's return reshards
// to its result shardings, a call reshards to its callee's, and the tied values
// of a region op (a loop's init, argument, yielded value and result) take its
// result's sharding. Ops are seen through interfaces only (see
// ShardingSupport.h).
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/FunctionAttrs.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h" // A dependent dialect.
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PARTITION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

using namespace mlir::mesh::partition_detail;

namespace {

/// Gives `fn` the per-device signature `args` -> `results`, in the function
/// type of its own kind (an llvm.func takes an LLVM function type, not a
/// builtin one), and leaves it alone when nothing changed. Fails, naming
/// the function, where its kind cannot have that signature.
LogicalResult setSignature(FunctionOpInterface fn, ArrayRef<Type> args,
                           ArrayRef<Type> results) {
  if (llvm::equal(fn.getArgumentTypes(), args) &&
      llvm::equal(fn.getResultTypes(), results))
    return success();
  Type type = fn.cloneTypeWith(args, results);
  if (!type)
    return fn->emitError() << "cannot give @" << fn.getName()
                           << " its per-device signature: a '" << fn->getName()
                           << "' cannot take "
                           << FunctionType::get(fn->getContext(), args,
                                                results);
  fn.setType(type);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// The function
//===----------------------------------------------------------------------===//

LogicalResult FunctionPartitioner::run() {
  StringRef name = MeshDialect::getShardingAttrName();
  // Rules and tied values describe global shapes: read them all before any
  // type changes (the arguments' first), in pre-order, the order in which
  // partitionBlock reaches the ops.
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == fn.getOperation())
      return;
    OpRole role = classifier.classify(op);
    if (role == OpRole::Rule)
      rulesInOrder.push_back({op, rules.add(op)});
    if (role != OpRole::RegionBranch)
      return;
    FailureOr<SmallVector<TiedGroup>> groups =
        getTiedValueGroups(cast<RegionBranchOpInterface>(op));
    if (succeeded(groups))
      tiedGroups[op] = std::move(*groups);
    else
      rulesInOrder.push_back({op, std::nullopt});
  });
  // Arguments: per-device types.
  SmallVector<Type> argTypes;
  for (BlockArgument arg : fn.getArguments()) {
    auto s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), name);
    if (failed(place(arg, s, fn, "argument " + Twine(arg.getArgNumber()))))
      return failure();
    argTypes.push_back(arg.getType());
  }
  if (failed(partitionBlock(fn.getFunctionBody().front())))
    return failure();
  // The signature follows the body.
  SmallVector<Type> resultTypes;
  for (Block &block : fn.getFunctionBody())
    if (block.mightHaveTerminator() &&
        block.getTerminator()->hasTrait<OpTrait::ReturnLike>())
      resultTypes.assign(block.getTerminator()->getOperandTypes().begin(),
                         block.getTerminator()->getOperandTypes().end());
  if (resultTypes.size() != fn.getNumResults())
    resultTypes.assign(fn.getResultTypes().begin(), fn.getResultTypes().end());
  if (failed(setSignature(fn, argTypes, resultTypes)))
    return failure();
  auto drop = [&](unsigned, NamedAttrList &attrs) { attrs.erase(name); };
  editArgAttrs(fn, drop);
  editResultAttrs(fn, drop);
  stripDataSizes(fn);
  return success();
}

//===----------------------------------------------------------------------===//
// Values and their per-device types
//===----------------------------------------------------------------------===//

/// Gives `v` (a global tensor) its per-device type for `s` (replicated if
/// null) and records its sharding.
LogicalResult FunctionPartitioner::place(Value v, ShardingAttr s,
                                         Operation *where, const Twine &what) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return success();
  if (s) {
    FailureOr<RankedTensorType> local = localType(where, type, s, what);
    if (failed(local))
      return failure();
    noteDynamicLocal(v, type, *local);
    v.setType(*local);
  }
  placed[v] = s;
  return success();
}

/// The per-device type of `global` sharded as `s` (null: replicated).
/// Types are cached: a program has few distinct (type, sharding) pairs.
FailureOr<RankedTensorType>
FunctionPartitioner::localType(Operation *where, RankedTensorType global,
                               ShardingAttr s, const Twine &what) {
  if (!s)
    return global;
  auto [it, inserted] = localTypes.try_emplace({global, s}, nullptr);
  if (!inserted && it->second)
    return it->second;
  MeshOp mesh = meshFor(where, s.getMesh());
  if (!mesh)
    return where->emitError() << "mesh " << s.getMesh() << " is not defined",
           failure();
  std::string whyNot;
  FailureOr<RankedTensorType> local =
      getLocalType(mesh, global, ShardingLayout::get(s), whyNot);
  if (failed(local))
    return where->emitError() << "cannot partition " << what << " of type "
                              << global << ": " << whyNot,
           failure();
  it->second = *local;
  return local;
}

//===----------------------------------------------------------------------===//
// Resharding
//===----------------------------------------------------------------------===//

/// True when `made`, a value resharding made, may be used at `where`: it
/// was made in the block of `where` or in one around it (and earlier, as
/// partitioning goes in program order).
static bool isVisibleAt(Value made, Operation *where) {
  Operation *def = made.getDefiningOp();
  return def && def->getBlock()->findAncestorOpInBlock(*where);
}

/// `v` resharded from its sharding to `target` (null: replicated), before
/// `where` (or the loops around it that `v` comes from outside of).
/// `mesh` is the target's mesh when `target` is null.
FailureOr<Value> FunctionPartitioner::reshard(Value v, ShardingAttr target,
                                              FlatSymbolRefAttr mesh,
                                              Operation *where,
                                              const Twine &what) {
  ShardingAttr from = placedOf(v);
  if (sameLayout(from, target))
    return v;
  if (target)
    mesh = target.getMesh();
  // Replicated targets share one key whether spelled or null.
  Attribute targetKey =
      !target || target.isFullyReplicated() ? Attribute() : target;
  Operation *at = getReshardPoint(v, where);
  if (Value cached = findReshard(v, targetKey, at))
    return cached;
  if (Value made = remake(v, target, at)) {
    noteReshard(v, targetKey, target, made);
    return made;
  }
  MeshOp meshOp = reshardMesh(from, mesh, where, what);
  if (!meshOp)
    return failure();
  auto localNow = cast<RankedTensorType>(v.getType());
  unsigned rank = localNow.getRank();
  // The target must divide the global shape: found here, with the user's
  // value named, not by a collective's verifier after it is made.
  RankedTensorType global = globalTypeOf(v, from, meshOp);
  RankedTensorType want = global;
  if (target) {
    std::string whyNot;
    FailureOr<RankedTensorType> local =
        getLocalType(meshOp, global, ShardingLayout::get(target), whyNot);
    if (failed(local))
      return where->emitError() << "cannot reshard " << what << " of type "
                                << global << " to " << target << ": " << whyNot,
             failure();
    want = *local;
  }
  if ((from && from.hasHalo()) || (target && target.hasHalo())) {
    FailureOr<Value> out = reshardHalos(v, from, target, meshOp, where, what);
    if (failed(out))
      return failure();
    noteReshard(v, targetKey, target, *out);
    return *out;
  }
  FailureOr<ArrayRef<ReshardStep>> plan =
      getPlan(meshOp, from, target, rank, where, what, global);
  if (failed(plan))
    return failure();
  Value source = cheapestSource(v, from, target, global, meshOp, at, plan);
  OpBuilder b(at);
  // A padded value's gathers and scatters move only its data.
  // (Sizes that do not fit the value's global type are stale: none.)
  SmallVector<int64_t> dataSizes = getDataSizes(v);
  if (dataSizes.size() != rank ||
      llvm::any_of(llvm::seq<unsigned>(0, rank), [&](unsigned d) {
        return dataSizes[d] < 0 || global.isDynamicDim(d) ||
               dataSizes[d] > global.getDimSize(d);
      }))
    dataSizes.clear();
  Value out = emitResharding(b, where->getLoc(), meshOp, source, *plan,
                             placedOf(source), dataSizes);
  // A `?` axis leaves dims dynamic that the target's layout knows: cast
  // back, and remember the global type of what stays dynamic (a static
  // value sliced over a `?` axis), so that its later gathers cast back too.
  if (want != out.getType())
    out = tensor::CastOp::create(b, where->getLoc(), want, out);
  noteDynamicLocal(out, global, want);
  noteReshard(v, targetKey, target, out);
  reshardsOf[v].push_back(out);
  return out;
}

void FunctionPartitioner::noteReshard(Value v, Attribute targetKey,
                                      ShardingAttr target, Value out) {
  placed[out] = target;
  reshardCache[{v, targetKey}] = out;
}

MeshOp FunctionPartitioner::reshardMesh(ShardingAttr from,
                                        FlatSymbolRefAttr mesh,
                                        Operation *where, const Twine &what) {
  FlatSymbolRefAttr fromMesh = from ? from.getMesh() : FlatSymbolRefAttr();
  if (fromMesh && mesh && fromMesh != mesh) {
    where->emitError() << "cannot reshard " << what << " from mesh " << fromMesh
                       << " to mesh " << mesh
                       << "; resharding stays on one mesh";
    return {};
  }
  MeshOp meshOp = meshFor(where, mesh ? mesh : fromMesh);
  if (!meshOp)
    where->emitError() << "cannot reshard " << what
                       << ": no mesh is known for it";
  return meshOp;
}

Value FunctionPartitioner::cheapestSource(
    Value v, ShardingAttr from, ShardingAttr target, RankedTensorType global,
    MeshOp meshOp, Operation *at, FailureOr<ArrayRef<ReshardStep>> &plan) {
  // A value wanted in several layouts may move on from one it already
  // reached: of `v` and those visible here, start from the one whose plan
  // sends the fewest bytes (then has the fewest steps; `v` first among
  // equals). Bytes are compared where they are known: static shapes on
  // meshes of known size.
  auto others = reshardsOf.find(v);
  if (others == reshardsOf.end() || !global.hasStaticShape() ||
      llvm::any_of(meshOp.getShape(), ShapedType::isDynamic))
    return v;
  unsigned rank = global.getRank();
  auto axisSize = [&](StringRef axis) { return meshOp.getAxisSize(axis); };
  int64_t tensorBytes =
      global.getNumElements() * getElementBytes(global.getElementType());
  auto price = [&](ShardingAttr s, ArrayRef<ReshardStep> steps) {
    return std::make_pair(
        getPlanBytes(layoutOf(s, rank), steps, tensorBytes, axisSize),
        steps.size());
  };
  Value source = v;
  std::pair<int64_t, size_t> best = price(from, *plan);
  for (Value other : others->second) {
    if (!isVisibleAt(other, at))
      continue;
    std::string whyNot;
    FailureOr<ArrayRef<ReshardStep>> otherPlan =
        findPlan(meshOp, placedOf(other), target, rank, global, whyNot);
    if (failed(otherPlan))
      continue;
    std::pair<int64_t, size_t> otherPrice = price(placedOf(other), *otherPlan);
    if (otherPrice >= best)
      continue;
    best = otherPrice;
    source = other;
    plan = otherPlan;
  }
  return source;
}

/// The global type of the per-device value `v` placed as `from`: its dims
/// times the sizes of their axes (dynamic where either is).
RankedTensorType FunctionPartitioner::globalTypeOf(Value v, ShardingAttr from,
                                                   MeshOp mesh) {
  if (auto global = staticGlobals.find(v); global != staticGlobals.end())
    return global->second;
  auto local = cast<RankedTensorType>(v.getType());
  if (!from)
    return local;
  SmallVector<int64_t> shape(local.getShape());
  for (auto [d, axes] : llvm::enumerate(from.getDims())) {
    if (axes.empty() || d >= shape.size())
      continue;
    // (An axis the mesh lacks was refused where the sharding was placed.)
    int64_t n =
        meshCache.getGroupSize(mesh, axes).value_or(ShapedType::kDynamic);
    auto [lo, hi] = from.getDimHalo(d);
    shape[d] = ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(n)
                   ? ShapedType::kDynamic
                   : (shape[d] - lo - hi) * n + lo + hi;
  }
  return local.clone(shape);
}

/// The value of a constant-like op (null for any other op).
static Attribute constantValueOf(Operation *op) {
  Attribute value;
  if (op->hasTrait<OpTrait::ConstantLike>() &&
      matchPattern(op->getResult(0), m_Constant(&value)))
    return value;
  return {};
}

/// `v` made again in the layout `target`, before `where`, when its op needs
/// no data (ShardingRuleOpInterface::needsNoData): a clone of the op on its
/// tensor operands made again, with the per-device result type (a splat
/// constant: the splat of that type). Moving such
/// a value would only move garbage or copies of a scalar. Null when `v` is
/// not such a value, or `target` has a pending reduction (every device's
/// copy would count).
Value FunctionPartitioner::remake(Value v, ShardingAttr target,
                                  Operation *where) {
  if (target && target.isPartial())
    return {};
  auto global = globalTypes.find(v);
  if (global == globalTypes.end())
    return {};
  RankedTensorType globalType = global->second;
  Operation *def = v.getDefiningOp();
  IRMapping operands;
  for (Value operand : def->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    Value made = remake(operand, target, where);
    if (!made)
      return {};
    operands.map(operand, made);
  }
  FailureOr<RankedTensorType> local =
      localType(where, globalType, target, "a value made again");
  if (failed(local))
    return {};
  OpBuilder b(where);
  // A splat constant: the same splat, of the per-device type. A type that
  // a `?` axis leaves dynamic has no constant: the splat is sliced instead.
  if (auto splat =
          dyn_cast_if_present<SplatElementsAttr>(constantValueOf(def))) {
    if (!local->hasStaticShape())
      return {};
    Operation *made = def->getDialect()->materializeConstant(
        b, splat.resizeSplat(*local), *local, def->getLoc());
    if (!made)
      return {};
    // Made again once more where a third layout is needed, not moved.
    globalTypes[made->getResult(0)] = globalType;
    return made->getResult(0);
  }
  // A per-device type with a dynamic dim (a `?` axis, or a dynamic global
  // size) needs its size computed: the value is resharded instead (for an
  // empty tensor or a fill that is an all_slice, a local copy).
  if (!local->hasStaticShape())
    return {};
  Operation *clone = b.clone(*def, operands);
  dropSharding(clone);
  clone->getResult(0).setType(*local);
  globalTypes[clone->getResult(0)] = globalType;
  return clone->getResult(0);
}

/// The same value resharded the same way earlier in this block (or in a
/// block around it): one collective, not one per use.
Value FunctionPartitioner::findReshard(Value v, Attribute targetKey,
                                       Operation *where) {
  auto cached = reshardCache.find({v, targetKey});
  if (cached != reshardCache.end() && isVisibleAt(cached->second, where))
    return cached->second;
  return {};
}

/// Plans depend only on the two shardings, the mesh and the global type:
/// most reshards of a program repeat a few of them.
FailureOr<ArrayRef<ReshardStep>> FunctionPartitioner::getPlan(
    MeshOp mesh, ShardingAttr from, ShardingAttr target, unsigned rank,
    Operation *where, const Twine &what, RankedTensorType global) {
  std::string whyNot;
  FailureOr<ArrayRef<ReshardStep>> plan =
      findPlan(mesh, from, target, rank, global, whyNot);
  if (failed(plan))
    return where->emitError() << "cannot reshard " << what << ": " << whyNot,
           failure();
  return plan;
}

FailureOr<ArrayRef<ReshardStep>>
FunctionPartitioner::findPlan(MeshOp mesh, ShardingAttr from,
                              ShardingAttr target, unsigned rank,
                              RankedTensorType global, std::string &whyNot) {
  PlanKey key{from, target, mesh.getOperation(), rank, global};
  auto plan = plans.find(key);
  if (plan == plans.end()) {
    SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
    if (global)
      shape.assign(global.getShape().begin(), global.getShape().end());
    FailureOr<SmallVector<ReshardStep>> steps = planResharding(
        layoutOf(from, rank), layoutOf(target, rank), shape,
        [&](StringRef axis) { return mesh.getAxisSize(axis); }, whyNot);
    if (failed(steps))
      return failure();
    plan = plans.try_emplace(key, std::move(*steps)).first;
  }
  return ArrayRef<ReshardStep>(plan->second);
}

/// Reshards `operand` to `target` before `where` and uses the result.
LogicalResult FunctionPartitioner::reshardOperand(OpOperand &operand,
                                                  ShardingAttr target,
                                                  FlatSymbolRefAttr mesh,
                                                  Operation *where,
                                                  const Twine &what) {
  if (!isa<RankedTensorType>(operand.get().getType()))
    return success();
  FailureOr<Value> v = reshard(operand.get(), target, mesh, where, what);
  if (failed(v))
    return failure();
  operand.set(*v);
  return success();
}

//===----------------------------------------------------------------------===//
// Ops, by role
//===----------------------------------------------------------------------===//

LogicalResult FunctionPartitioner::partitionBlock(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partition(op)))
      return failure();
  return success();
}

LogicalResult FunctionPartitioner::partition(Operation *op) {
  switch (classifier.classify(op)) {
  case OpRole::Shard:
    return partitionShard(cast<ShardOp>(op));
  case OpRole::Call:
    return partitionCall(cast<CallOpInterface>(op));
  case OpRole::FunctionReturn:
    return partitionReturn(op);
  case OpRole::RegionBranch:
    if (auto it = tiedGroups.find(op); it != tiedGroups.end())
      return partitionRegionBranch(cast<RegionBranchOpInterface>(op),
                                   it->second);
    return partitionRuleOp(op); // Its values do not tie up: refused there.
  case OpRole::RegionTerminator:
    return success(); // Resharded by the owner once its region is done.
  case OpRole::PerDevice:
    if (!hasTensors(op))
      return success();
    return op->emitError()
           << "'" << op->getName()
           << "' is already per-device; partition programs written on "
              "global shapes";
  case OpRole::Rule:
  case OpRole::NoRule:
    return partitionRuleOp(op);
  }
  llvm_unreachable("unknown op role");
}

/// `mesh.shard` becomes the resharding it asks for.
LogicalResult FunctionPartitioner::partitionShard(ShardOp shard) {
  ShardingAttr target = shard.getSharding();
  FailureOr<Value> v = reshard(shard.getSrc(), target, target.getMesh(), shard,
                               "the mesh.shard operand");
  if (failed(v))
    return failure();
  shard.getResult().replaceAllUsesWith(*v);
  shard->erase();
  return success();
}

/// Arguments are resharded to the callee's argument shardings; results take
/// its result shardings.
LogicalResult FunctionPartitioner::partitionCall(CallOpInterface call) {
  FunctionOpInterface callee = getCallee(call, tables);
  auto it = callee ? signatures.find(callee) : signatures.end();
  if (it == signatures.end()) {
    InFlightDiagnostic diag = call->emitError()
                              << "cannot partition a call to ";
    if (auto symbol = dyn_cast<SymbolRefAttr>(call.getCallableForCallee()))
      diag << symbol << ", which is not a function of this module";
    else
      diag << "a function value; only direct calls are partitioned";
    return diag;
  }
  const Signature &sig = it->second;
  std::string calleeName = "@" + callee.getName().str();
  if (callee.isExternal()) {
    // A declaration without an annotation on some tensor gets it whole.
    auto unannotated = [](Type type, ShardingAttr s) {
      return !s && isa<RankedTensorType>(type);
    };
    if (llvm::any_of(llvm::zip(callee.getArgumentTypes(), sig.args),
                     [&](auto p) {
                       return unannotated(std::get<0>(p), std::get<1>(p));
                     }) ||
        llvm::any_of(llvm::zip(callee.getResultTypes(), sig.results),
                     [&](auto p) {
                       return unannotated(std::get<0>(p), std::get<1>(p));
                     }))
      call->emitWarning()
          << "the declaration " << calleeName
          << " has tensors without 'mesh.sharding': they are passed and "
             "returned replicated (annotate the declaration to pass them "
             "sharded)";
  }
  for (auto [i, operand] : llvm::enumerate(call.getArgOperandsMutable()))
    if (failed(reshardOperand(operand, sig.args[i], {}, call,
                              "operand " + Twine(i) + " of the call to " +
                                  calleeName)))
      return failure();
  for (OpResult result : call->getResults())
    if (failed(place(result, sig.results[result.getResultNumber()], call,
                     "result " + Twine(result.getResultNumber()) +
                         " of the call to " + calleeName)))
      return failure();
  dropSharding(call);
  return success();
}

/// Returned values are resharded to the function's result shardings.
LogicalResult FunctionPartitioner::partitionReturn(Operation *ret) {
  StringRef name = MeshDialect::getShardingAttrName();
  for (OpOperand &operand : ret->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (failed(reshardOperand(operand,
                              fn.getResultAttrOfType<ShardingAttr>(i, name), {},
                              ret, "result " + Twine(i))))
      return failure();
  }
  return success();
}

/// Each tied group takes the sharding of its result (or, without one, of the
/// value passed in): operands passed in are resharded to it before the op,
/// region arguments are placed in it, and the values terminators pass on are
/// resharded to it once their region is partitioned.
LogicalResult
FunctionPartitioner::partitionRegionBranch(RegionBranchOpInterface op,
                                           ArrayRef<TiedGroup> groups) {
  StringRef opName = op->getName().getStringRef();
  DenseMap<OpOperand *, ShardingAttr> targetOf;
  for (const TiedGroup &group : groups) {
    // The group's result says its layout; a group no result belongs to (an
    // scf.while's before-region arguments) keeps the layout of the value
    // passed in, without a pending reduction.
    ShardingAttr target;
    bool hasResult = false;
    for (Value input : group.inputs)
      if (auto result = dyn_cast<OpResult>(input)) {
        target =
            getResultAnnotation(op, result.getResultNumber(), shardingName);
        hasResult = true;
      }
    if (!hasResult)
      for (OpOperand *operand : group.operands)
        if (operand->getOwner() == op) {
          target = withoutPartial(placedOf(operand->get()));
          break;
        }
    for (OpOperand *operand : group.operands) {
      if (operand->getOwner() != op) {
        targetOf[operand] = target;
        continue;
      }
      if (failed(reshardOperand(*operand, target, {}, op,
                                "operand " +
                                    Twine(operand->getOperandNumber()) +
                                    " of '" + opName + "'")))
        return failure();
    }
    for (Value input : group.inputs)
      if (auto arg = dyn_cast<BlockArgument>(input))
        if (failed(place(arg, target, op,
                         "region argument " + Twine(arg.getArgNumber()) +
                             " of '" + opName + "'")))
          return failure();
  }
  for (Region &region : op->getRegions()) {
    for (Block &block : region) {
      if (failed(partitionBlock(block)))
        return failure();
      if (!block.mightHaveTerminator())
        continue;
      Operation *terminator = block.getTerminator();
      for (OpOperand &operand : terminator->getOpOperands()) {
        auto it = targetOf.find(&operand);
        if (it != targetOf.end() &&
            failed(reshardOperand(operand, it->second, {}, terminator,
                                  "value " + Twine(operand.getOperandNumber()) +
                                      " passed on by '" +
                                      terminator->getName().getStringRef() +
                                      "'")))
          return failure();
      }
    }
  }
  if (failed(placeResults(op)))
    return failure();
  dropSharding(op);
  return success();
}

/// Gives `op`'s tensor results their annotated per-device types.
LogicalResult FunctionPartitioner::placeResults(Operation *op) {
  for (OpResult r : op->getResults())
    if (failed(place(
            r, getResultAnnotation(op, r.getResultNumber(), shardingName), op,
            "result " + Twine(r.getResultNumber()) + " of '" +
                op->getName().getStringRef() + "'")))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct PartitionPass : public mesh::impl::PartitionBase<PartitionPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    PartitionBase::getDependentDialects(registry);
    registerShardingRuleModels(registry);
  }
  void runOnOperation() override {
    SymbolTableCollection tables;
    SmallVector<FunctionOpInterface> fns, declarations;
    DenseMap<Operation *, Signature> signatures;
    StringRef name = MeshDialect::getShardingAttrName();
    // Functions do not nest in functions: skip their bodies.
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op->getNumRegions() == 0)
        return WalkResult::skip();
      auto fn = dyn_cast<FunctionOpInterface>(op);
      if (!fn)
        return WalkResult::advance();
      if (fn.isExternal())
        declarations.push_back(fn);
      else
        fns.push_back(fn);
      Signature &sig = signatures[fn];
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        sig.args.push_back(fn.getArgAttrOfType<ShardingAttr>(i, name));
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        sig.results.push_back(fn.getResultAttrOfType<ShardingAttr>(i, name));
      return WalkResult::skip();
    });
    for (FunctionOpInterface fn : fns)
      if (failed(FunctionPartitioner(fn, tables, signatures).run()))
        return signalPassFailure();
    for (FunctionOpInterface fn : declarations)
      if (failed(localizeDeclaration(fn, tables)))
        return signalPassFailure();
  }

  /// A declaration's `mesh.sharding` attributes are its contract with the
  /// code that defines it elsewhere: that code works on per-device values,
  /// so the declaration takes their per-device types, and the attributes go.
  static LogicalResult localizeDeclaration(FunctionOpInterface fn,
                                           SymbolTableCollection &tables) {
    StringRef name = MeshDialect::getShardingAttrName();
    // Without shardings there is nothing to localize, and a declaration
    // need not have a builtin function type (llvm.func @printf).
    auto annotated = [&](ArrayAttr attrs) {
      return attrs && llvm::any_of(attrs, [&](Attribute a) {
               auto d = dyn_cast<DictionaryAttr>(a);
               return d && d.contains(name);
             });
    };
    if (!annotated(fn.getAllArgAttrs()) && !annotated(fn.getAllResultAttrs()))
      return success();
    if (!isa<FunctionType>(fn.getFunctionType()))
      return fn->emitError()
                 << "cannot partition the declaration @" << fn.getName()
                 << ": 'mesh.sharding' needs a function of "
                    "builtin function type",
             failure();
    auto localize = [&](Type type, ShardingAttr s,
                        const Twine &what) -> FailureOr<Type> {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!s || !tensor)
        return type;
      MeshOp mesh = lookupMesh(fn, s.getMesh(), &tables);
      std::string whyNot;
      FailureOr<RankedTensorType> local =
          mesh ? getLocalType(mesh, tensor, ShardingLayout::get(s), whyNot)
               : FailureOr<RankedTensorType>(failure());
      if (failed(local))
        return fn->emitError() << "cannot partition " << what << " of @"
                               << fn.getName() << " of type " << type << ": "
                               << (mesh ? whyNot : "its mesh is not defined"),
               failure();
      return Type(*local);
    };
    SmallVector<Type> args, results;
    for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
      FailureOr<Type> t =
          localize(type, fn.getArgAttrOfType<ShardingAttr>(i, name),
                   "argument " + Twine(i));
      if (failed(t))
        return failure();
      args.push_back(*t);
    }
    for (auto [i, type] : llvm::enumerate(fn.getResultTypes())) {
      FailureOr<Type> t =
          localize(type, fn.getResultAttrOfType<ShardingAttr>(i, name),
                   "result " + Twine(i));
      if (failed(t))
        return failure();
      results.push_back(*t);
    }
    if (failed(setSignature(fn, args, results)))
      return failure();
    auto drop = [&](unsigned, NamedAttrList &attrs) { attrs.erase(name); };
    editArgAttrs(fn, drop);
    editResultAttrs(fn, drop);
    return success();
  }
};
} // namespace
