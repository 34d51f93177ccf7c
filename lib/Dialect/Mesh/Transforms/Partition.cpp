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

#include "Linearity.h"
#include "ShardingSupport.h"

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

namespace {

bool hasTensors(Operation *op) {
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTensor) ||
         llvm::any_of(op->getResultTypes(), isTensor);
}

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

/// The shardings of a function's arguments and results, read before any
/// function is partitioned (partitioning removes them).
struct Signature {
  SmallVector<ShardingAttr> args, results;
};

/// The rule of an op, when it has one.
struct RuleOf {
  Operation *op;
  std::optional<unsigned> rule;
};

class FunctionPartitioner {
public:
  FunctionPartitioner(FunctionOpInterface fn, SymbolTableCollection &tables,
                      const DenseMap<Operation *, Signature> &signatures)
      : fn(fn), tables(tables), signatures(signatures),
        shardingName(StringAttr::get(fn->getContext(),
                                     MeshDialect::getShardingAttrName())),
        noAttrs(DictionaryAttr::get(fn->getContext())) {}

  /// Partitions the body, then the signature.
  LogicalResult run();

private:
  // Values and their per-device types.
  LogicalResult place(Value v, ShardingAttr s, Operation *where,
                      const Twine &what);
  FailureOr<RankedTensorType> localType(Operation *where,
                                        RankedTensorType global, ShardingAttr s,
                                        const Twine &what);
  /// The sharding `v` has now (null: replicated, on no mesh).
  ShardingAttr placedOf(Value v) { return placed.lookup(v); }
  bool fillsWithPendingSums(Operation *op);
  MeshOp meshFor(Operation *op, FlatSymbolRefAttr ref) {
    return meshCache.get(op, ref);
  }

  // Resharding.
  FailureOr<Value> reshard(Value v, ShardingAttr target, FlatSymbolRefAttr mesh,
                           Operation *where, const Twine &what);
  /// reshard's steps: the mesh both layouts are on (an error when they are
  /// on two, or none is known); of `v` and its reshards visible at `at`,
  /// the one whose plan to `target` sends the fewest bytes, with that plan
  /// (`plan`, the plan from `v`, is replaced when another wins); and the
  /// record of `out` as `v` resharded to `target`.
  MeshOp reshardMesh(ShardingAttr from, FlatSymbolRefAttr mesh,
                     Operation *where, const Twine &what);
  Value cheapestSource(Value v, ShardingAttr from, ShardingAttr target,
                       RankedTensorType global, MeshOp meshOp, Operation *at,
                       FailureOr<ArrayRef<ReshardStep>> &plan);
  void noteReshard(Value v, Attribute targetKey, ShardingAttr target,
                   Value out);
  LogicalResult reshardOperand(OpOperand &operand, ShardingAttr target,
                               FlatSymbolRefAttr mesh, Operation *where,
                               const Twine &what);
  Value findReshard(Value v, Attribute targetKey, Operation *where);
  Value remake(Value v, ShardingAttr target, Operation *where);
  RankedTensorType globalTypeOf(Value v, ShardingAttr from, MeshOp mesh);
  /// Remembers the global type of `v` when its per-device type `local` has
  /// a dynamic dim that is static in `global` (split over a `?` axis).
  void noteDynamicLocal(Value v, RankedTensorType global,
                        RankedTensorType local) {
    for (int64_t d = 0; d < global.getRank(); ++d)
      if (local.isDynamicDim(d) && !global.isDynamicDim(d)) {
        staticGlobals[v] = global;
        return;
      }
  }
  /// True when `op` says its one result needs no data.
  bool isRemakeable(Operation *op) {
    return op->getNumResults() == 1 && classifier.hasRuleInterface(op) &&
           cast<ShardingRuleOpInterface>(op).needsNoData();
  }
  /// `global` is the tensor's global type, whose static dims every layout
  /// on the way must divide; null, its dims are taken as dynamic.
  FailureOr<ArrayRef<ReshardStep>> getPlan(MeshOp mesh, ShardingAttr from,
                                           ShardingAttr target, unsigned rank,
                                           Operation *where, const Twine &what,
                                           RankedTensorType global = {});
  /// getPlan without a diagnostic: the reason goes to `whyNot`.
  FailureOr<ArrayRef<ReshardStep>> findPlan(MeshOp mesh, ShardingAttr from,
                                            ShardingAttr target, unsigned rank,
                                            RankedTensorType global,
                                            std::string &whyNot);
  FailureOr<Value> reshardHalos(Value v, ShardingAttr from, ShardingAttr target,
                                MeshOp mesh, Operation *where,
                                const Twine &what);
  FailureOr<Value> fillHalos(OpBuilder &b, Operation *op, Value local,
                             ShardingAttr s, MeshOp mesh);

  // Ops, by role.
  LogicalResult partitionBlock(Block &block);
  LogicalResult partition(Operation *op);
  LogicalResult partitionShard(ShardOp shard);
  LogicalResult partitionCall(CallOpInterface call);
  LogicalResult partitionReturn(Operation *ret);
  LogicalResult partitionRegionBranch(RegionBranchOpInterface op,
                                      ArrayRef<TiedGroup> groups);
  LogicalResult placeResults(Operation *op);
  LogicalResult partitionRuleOp(Operation *op);
  LogicalResult replicateRegions(Operation *op);

  // The steps of partitionRuleOp.
  const ShardingRule *ruleOf(Operation *op);
  FactorAssignment assignFactors(Operation *op, const ShardingRule &rule);
  std::optional<LinearPartial>
  getLinearPartial(Operation *op, const ShardingRule &rule,
                   const FactorAssignment &assignment);
  LogicalResult reshardOperands(Operation *op, const ShardingRule *rule,
                                const FactorAssignment *assignment,
                                const LinearPartial *linear);
  LogicalResult typeResults(Operation *op, const ShardingRule *rule,
                            const FactorAssignment *assignment,
                            const LinearPartial *linear);
  void updateSizes(Operation *op, TypeRange globalResultTypes,
                   const ShardingRule &rule,
                   const FactorAssignment &assignment);
  void localizeLoopIndices(linalg::LinalgOp op,
                           const FactorAssignment &assignment);
  static Value groupSize(OpBuilder &b, Location loc, MeshOp mesh,
                         ArrayRef<StringRef> axes);
  static Value groupIndex(OpBuilder &b, Location loc, MeshOp mesh,
                          ArrayRef<StringRef> axes);

  FunctionOpInterface fn;
  SymbolTableCollection &tables;
  const DenseMap<Operation *, Signature> &signatures;
  StringAttr shardingName;
  DictionaryAttr noAttrs;
  /// Drops `op`'s sharding annotation; most ops carry nothing else beside
  /// their properties, and then no new dictionary is built.
  void dropSharding(Operation *op) {
    DictionaryAttr attrs = op->getRawDictionaryAttrs();
    if (attrs.size() == 1 && attrs.begin()->getName() == shardingName)
      op->setDiscardableAttrs(noAttrs);
    else
      op->removeDiscardableAttr(shardingName);
  }
  /// The sharding of each per-device value (absent or null: replicated).
  DenseMap<Value, ShardingAttr, ValueAddressInfo> placed;
  ShardingRuleTable rules;
  /// Each op with a rule role, in pre-order, with its rule, and a cursor:
  /// partitioning reaches the ops in that order.
  SmallVector<RuleOf> rulesInOrder;
  size_t ruleCursor = 0;
  /// The tied values of each region-branch op, read before types change.
  DenseMap<Operation *, SmallVector<TiedGroup>> tiedGroups;
  ShardingProjector projector;
  OpClassifier classifier;
  MeshCache meshCache{tables};
  /// (source, target, mesh, rank, global type) -> the plan between them.
  using PlanKey = std::tuple<Attribute, Attribute, Operation *, unsigned, Type>;
  DenseMap<PlanKey, SmallVector<ReshardStep>> plans;
  DenseMap<std::pair<Type, Attribute>, RankedTensorType> localTypes;
  /// The global types of the values remake can make again.
  DenseMap<Value, RankedTensorType> globalTypes;
  /// The static global types of values a `?` axis made dynamic.
  DenseMap<Value, RankedTensorType> staticGlobals;
  /// (value, target sharding) -> the value resharded there.
  DenseMap<std::pair<Value, Attribute>, Value> reshardCache;
  /// Each value -> the values plans resharded it to, in order.
  DenseMap<Value, SmallVector<Value, 2>> reshardsOf;
};

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

/// Where a reshard of `v` needed by `where` goes: before the outermost loop
/// around `where` (directly, with no branch between) that `v` is defined
/// outside of, so that it runs once, not on every iteration.
static Operation *hoistOutOfLoops(Value v, Operation *where) {
  Operation *at = where;
  // A function (isolated from above) ends the search without an interface
  // lookup.
  for (Operation *parent = at->getParentOp();
       parent && !parent->hasTrait<OpTrait::IsIsolatedFromAbove>();
       parent = at->getParentOp()) {
    auto loop = dyn_cast<LoopLikeOpInterface>(parent);
    if (!loop || !loop.isDefinedOutsideOfLoop(v))
      break;
    at = loop;
  }
  return at;
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
  Operation *at = hoistOutOfLoops(v, where);
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
  Value out = emitResharding(b, where->getLoc(), meshOp, source, *plan);
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
  Type element = global.getElementType();
  int64_t tensorBytes =
      global.getNumElements() *
      (element.isIntOrFloat() ? (element.getIntOrFloatBitWidth() + 7) / 8 : 1);
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

namespace {
/// The offsets, sizes and strides of the slab of a tensor shaped as `of`
/// that is [offset, offset + size) along dim `dim` and whole along the
/// others (a dynamic one, split over a `?` axis, sized by a tensor.dim).
struct Slab {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  Slab(OpBuilder &b, Location loc, Value of, unsigned dim, OpFoldResult offset,
       int64_t size)
      : offsets(cast<RankedTensorType>(of.getType()).getRank(),
                b.getIndexAttr(0)),
        sizes(tensor::getMixedSizes(b, loc, of)),
        strides(offsets.size(), b.getIndexAttr(1)) {
    sizes[dim] = b.getIndexAttr(size);
    offsets[dim] = offset;
  }
  Value extract(OpBuilder &b, Location loc, Value from) const {
    return tensor::ExtractSliceOp::create(b, loc, from, offsets, sizes,
                                          strides);
  }
  Value insert(OpBuilder &b, Location loc, Value part, Value into) const {
    return tensor::InsertSliceOp::create(b, loc, part, into, offsets, sizes,
                                         strides);
  }
};
} // namespace

/// The number of devices along dim `dim` of `local` (a per-device value
/// laid out as `s`, whose dim has a halo), or an error at `where` when it
/// or the dim's size is not static: halos move in blocks of known size.
static FailureOr<int64_t> haloGroupSize(MeshOp mesh, ShardingAttr s,
                                        unsigned dim, Value local,
                                        Operation *where, const Twine &what) {
  int64_t n = mesh.getGroupSize(s.getDimAxes(dim).getNames());
  if (ShapedType::isDynamic(n) ||
      cast<RankedTensorType>(local.getType()).isDynamicDim(dim))
    return where->emitError() << "cannot move " << what << " laid out as " << s
                              << ": dim " << dim << " has a halo and "
                              << (ShapedType::isDynamic(n)
                                      ? "is split over axes of unknown size"
                                      : "a dynamic size"),
           failure();
  return n;
}

/// `v` resharded from `from` to `target` when either has halos: the halos of
/// `from` are dropped by gathering their dims (each device's block, then the
/// last device's trailing halo), the plan takes the rest to `target` with
/// its halo dims whole, and each device then slices its block and halo out
/// of those dims. Moving a halo to a neighbour is what an op with a halo
/// result does (fillHalos); this is the general path, for layouts that
/// differ in more than that.
FailureOr<Value> FunctionPartitioner::reshardHalos(Value v, ShardingAttr from,
                                                   ShardingAttr target,
                                                   MeshOp mesh,
                                                   Operation *where,
                                                   const Twine &what) {
  OpBuilder b(where);
  Location loc = where->getLoc();
  FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  AxisListAttr none = AxisListAttr::get(b.getContext(), ArrayRef<StringAttr>());
  // `s` with its halo dims whole and no halos.
  auto wholeHaloDims = [&](ShardingAttr s) {
    SmallVector<AxisListAttr> dims(s.getDims());
    for (unsigned d = 0; d < s.getRank(); ++d)
      if (s.getDimHalo(d) != std::pair<int64_t, int64_t>(0, 0))
        dims[d] = none;
    return ShardingAttr::get(b.getContext(), s.getMesh(), dims,
                             s.getPartialAxes(), s.getPartialKind(), {});
  };
  Value cur = v;
  if (from && from.hasHalo()) {
    for (unsigned d = 0; d < from.getRank(); ++d) {
      auto [lo, hi] = from.getDimHalo(d);
      if (!lo && !hi)
        continue;
      FailureOr<int64_t> n = haloGroupSize(mesh, from, d, cur, where, what);
      if (failed(n))
        return failure();
      auto type = cast<RankedTensorType>(cur.getType());
      int64_t block = type.getDimSize(d) - lo - hi;
      ArrayAttr axes = b.getStrArrayAttr(from.getDimAxes(d).getNames());
      SmallVector<int64_t> shape(type.getShape());
      shape[d] = block * *n;
      Value blocks =
          Slab(b, loc, cur, d, b.getIndexAttr(0), block).extract(b, loc, cur);
      Value whole = AllGatherOp::create(b, loc, type.clone(shape), blocks, ref,
                                        axes, b.getI64IntegerAttr(d));
      Value tail = Slab(b, loc, cur, d, b.getIndexAttr(block), lo + hi)
                       .extract(b, loc, cur);
      tail = BroadcastOp::create(b, loc, tail.getType(), tail, ref, axes,
                                 b.getI64IntegerAttr(*n - 1), UnitAttr());
      cur = tensor::ConcatOp::create(b, loc, d, ValueRange{whole, tail});
    }
  }
  ShardingAttr curS = from && from.hasHalo() ? wholeHaloDims(from) : from;
  ShardingAttr mid =
      target && target.hasHalo() ? wholeHaloDims(target) : target;
  unsigned rank = cast<RankedTensorType>(cur.getType()).getRank();
  FailureOr<ArrayRef<ReshardStep>> plan =
      getPlan(mesh, curS, mid, rank, where, what);
  if (failed(plan))
    return failure();
  cur = emitResharding(b, loc, mesh, cur, *plan);
  if (!target || !target.hasHalo())
    return cur;
  // Each device's block and halo, out of the dims now whole.
  for (unsigned d = 0; d < target.getRank(); ++d) {
    auto [lo, hi] = target.getDimHalo(d);
    if (!lo && !hi)
      continue;
    FailureOr<int64_t> n = haloGroupSize(mesh, target, d, cur, where, what);
    if (failed(n))
      return failure();
    auto type = cast<RankedTensorType>(cur.getType());
    int64_t block = (type.getDimSize(d) - lo - hi) / *n;
    Value index = groupIndex(b, loc, mesh, target.getDimAxes(d).getNames());
    Value offset = arith::MulIOp::create(
        b, loc, index, arith::ConstantIndexOp::create(b, loc, block));
    cur = Slab(b, loc, cur, d, offset, block + lo + hi).extract(b, loc, cur);
  }
  return cur;
}

/// Fills the halos of `local`, the per-device result of `op` laid out as
/// `s` (whose halos its rule gives): `op` made each halo as
/// at the ends of the tensor; each device but the first along a dim's axes
/// takes its low halo from the end of the previous device's block, each but
/// the last its high halo from the start of the next one's. A periodic pad
/// (mesh.circular_pad) wraps: the first and last devices are neighbours too,
/// and every device takes both halos. Dims go one after the other, each
/// moving whole slabs of the others (halos included), so corners arrive in
/// two steps.
FailureOr<Value> FunctionPartitioner::fillHalos(OpBuilder &b, Operation *op,
                                                Value local, ShardingAttr s,
                                                MeshOp mesh) {
  Location loc = op->getLoc();
  FlatSymbolRefAttr ref = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  auto type = cast<RankedTensorType>(local.getType());
  Value made = local; // Its sizes are the slabs' (halos do not change them).
  bool periodic = isa<CircularPadOp>(op);
  for (unsigned d = 0; d < s.getRank(); ++d) {
    auto [lo, hi] = s.getDimHalo(d);
    if (!lo && !hi)
      continue;
    FailureOr<int64_t> n =
        haloGroupSize(mesh, s, d, local, op,
                      "the result of '" + op->getName().getStringRef() + "'");
    if (failed(n))
      return failure();
    SmallVector<StringRef> axisNames = s.getDimAxes(d).getNames();
    int64_t block = type.getDimSize(d) - lo - hi;
    ArrayAttr axes = b.getStrArrayAttr(axisNames);
    Value index = periodic ? Value() : groupIndex(b, loc, mesh, axisNames);
    // The halo at [at, at + size) comes from the neighbour `offset` away,
    // out of its block at [from, from + size); unless periodic, the device
    // at `edge` keeps what the op made.
    auto exchange = [&](int64_t at, int64_t from, int64_t size, int64_t offset,
                        int64_t edge) {
      Value slab = Slab(b, loc, made, d, b.getIndexAttr(from), size)
                       .extract(b, loc, local);
      Value got = PermuteOp::create(b, loc, slab.getType(), slab, ref, axes,
                                    b.getI64IntegerAttr(offset),
                                    periodic ? b.getUnitAttr() : UnitAttr());
      Slab dst(b, loc, made, d, b.getIndexAttr(at), size);
      if (periodic) {
        local = dst.insert(b, loc, got, local);
        return;
      }
      Value own = dst.extract(b, loc, local);
      Value atEdge =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index,
                                arith::ConstantIndexOp::create(b, loc, edge));
      Value halo = arith::SelectOp::create(b, loc, atEdge, own, got);
      local = dst.insert(b, loc, halo, local);
    };
    // The low halo: the last `lo` of the previous device's block.
    if (lo)
      exchange(0, block, lo, 1, 0);
    // The high halo: the first `hi` of the next device's block.
    if (hi)
      exchange(lo + block, lo, hi, -1, *n - 1);
  }
  return local;
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
    return made ? made->getResult(0) : Value();
  }
  // A per-device type with a dynamic dim (a `?` axis, or a dynamic global
  // size) needs its size computed: the value is resharded instead (for an
  // empty tensor or a fill that is an all_slice, a local copy).
  if (!local->hasStaticShape())
    return {};
  Operation *clone = b.clone(*def, operands);
  dropSharding(clone);
  clone->getResult(0).setType(*local);
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
  FactorAssignment assignment(rule, op, meshCache);
  auto operandSharding = [&](unsigned i) -> ShardingAttr {
    if (i >= op->getNumOperands() ||
        !isa<RankedTensorType>(op->getOperand(i).getType()))
      return {};
    return placedOf(op->getOperand(i));
  };
  for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
    ShardingAttr s = getResultAnnotation(op, r, shardingName);
    if (!s)
      continue;
    assignment.takeDims(s, dims, op->getResult(r).getType());
    assignment.takePartial(s, operandSharding);
  }
  return assignment;
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
