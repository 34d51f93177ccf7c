//===- ShardingSupport.cpp - what propagation and partitioning share ------===//

#include "ShardingSupport.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;
using namespace mlir::mesh;

//===----------------------------------------------------------------------===//
// Op roles
//===----------------------------------------------------------------------===//

OpClassifier::NameInfo OpClassifier::getInfo(Operation *op) {
  return byName.get(op->getName().getAsOpaquePointer(), [&] {
    NameInfo info;
    info.returnLike = op->hasTrait<OpTrait::ReturnLike>();
    info.branchTerminator = isa<RegionBranchTerminatorOpInterface>(op);
    info.ruleInterface = isa<ShardingRuleOpInterface>(op);
    if (isa<ShardOp>(op))
      info.role = OpRole::Shard;
    else if (isa<CollectiveOpInterface>(op))
      info.role = OpRole::PerDevice;
    else if (isa<CallOpInterface>(op))
      info.role = OpRole::Call;
    else if (isa<RegionBranchOpInterface>(op) && !info.ruleInterface)
      info.role = OpRole::RegionBranch;
    else if (info.returnLike || info.branchTerminator)
      info.role = OpRole::RegionTerminator; // Refined by the parent below.
    else
      info.role = OpRole::Rule;
    return info;
  });
}

void mlir::mesh::warnNoShardingRule(Operation *op) {
  if (llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
    op->emitWarning() << "'" << op->getName()
                      << "' has no sharding rule; its tensor results are "
                         "replicated";
}

/// The roles that depend on more than the name: a terminator is a function
/// return or a region-branch terminator by its parent, else it has a rule
/// role like any op.
OpRole OpClassifier::classifySpecial(Operation *op) {
  NameInfo info = getInfo(op);
  if (info.role != OpRole::RegionTerminator)
    return info.role;
  Operation *parent = op->getParentOp();
  if (info.returnLike && isa_and_nonnull<FunctionOpInterface>(parent))
    return OpRole::FunctionReturn;
  if (info.branchTerminator && isa_and_nonnull<RegionBranchOpInterface>(parent))
    return OpRole::RegionTerminator;
  return OpRole::Rule;
}

Operation *mlir::mesh::getReshardPoint(Value v, Operation *where) {
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

FunctionOpInterface mlir::mesh::getCallee(CallOpInterface call,
                                          SymbolTableCollection &tables) {
  return dyn_cast_or_null<FunctionOpInterface>(
      call.resolveCallableInTable(&tables));
}

FactorAssignment mlir::mesh::assignFactorsFromResults(
    const ShardingRule &rule, Operation *op, MeshCache &meshes, StringAttr name,
    function_ref<ShardingAttr(unsigned)> operandSharding) {
  FactorAssignment assignment(rule, op, meshes);
  for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
    ShardingAttr s = getResultAnnotation(op, r, name);
    if (!s)
      continue;
    assignment.takeDims(s, dims, op->getResult(r).getType());
    assignment.takePartial(s, operandSharding);
  }
  return assignment;
}

ShardingAttr mlir::mesh::getResultAnnotation(Operation *op, unsigned result,
                                             StringAttr name) {
  Attribute attr = op->getDiscardableAttr(name);
  if (auto s = dyn_cast_or_null<ShardingAttr>(attr))
    return op->getNumResults() == 1 ? s : ShardingAttr();
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    if (result < array.size())
      return dyn_cast<ShardingAttr>(array[result]);
  return {};
}

//===----------------------------------------------------------------------===//
// Tied values of region-branch ops
//===----------------------------------------------------------------------===//

namespace {
/// Builds the groups of getTiedValueGroups. A value a successor receives (a
/// region argument or a result) is an *input*; inputs that receive the same
/// operand of the same branch point are one group, and each forwarded
/// operand belongs to the group of the inputs it reaches. Operands are
/// tracked by position, not value: a value yielded twice belongs to two
/// groups.
class TiedGroups {
public:
  explicit TiedGroups(RegionBranchOpInterface op) : op(op) {}

  LogicalResult build() {
    for (RegionBranchPoint point : op.getAllRegionBranchPoints()) {
      SmallVector<RegionSuccessor> successors;
      op.getSuccessorRegions(point, successors);
      for (const RegionSuccessor &successor : successors) {
        OperandRange operands = op.getSuccessorOperands(point, successor);
        ValueRange inputs = successor.getSuccessorInputs();
        if (operands.size() != inputs.size())
          return failure();
        // The range is a slice of some op's operands: link by position.
        for (auto [k, input] : llvm::enumerate(inputs))
          link(operands.getBase() + k, input);
      }
    }
    return success();
  }

  /// The groups, each in the canonical order of its members.
  FailureOr<SmallVector<TiedGroup>> collect() {
    SmallVector<TiedGroup> groups;
    DenseMap<Value, unsigned> groupOf; // Leader input -> index in `groups`.
    auto groupFor = [&](Value input) -> TiedGroup & {
      Value leader = inputs.getLeaderValue(input);
      auto [it, inserted] = groupOf.try_emplace(leader, groups.size());
      if (inserted)
        groups.emplace_back();
      return groups[it->second];
    };
    auto addOperand = [&](OpOperand &operand) {
      auto it = inputOf.find(&operand);
      if (it == inputOf.end())
        return;
      TiedGroup &group = groupFor(it->second);
      group.values.push_back(operand.get());
      group.operands.push_back(&operand);
    };
    auto addInput = [&](Value v) -> LogicalResult {
      if (!inputs.contains(v))
        // A tensor nothing flows into has no layout to share.
        return failure(isa<RankedTensorType>(v.getType()));
      TiedGroup &group = groupFor(v);
      group.values.push_back(v);
      group.inputs.push_back(v);
      return success();
    };
    for (OpOperand &operand : op->getOpOperands())
      addOperand(operand);
    for (Region &region : op->getRegions()) {
      for (Block &block : region) {
        for (BlockArgument arg : block.getArguments())
          if (failed(addInput(arg)))
            return failure();
        if (block.mightHaveTerminator())
          for (OpOperand &operand : block.getTerminator()->getOpOperands())
            addOperand(operand);
      }
    }
    for (Value result : op->getResults())
      if (failed(addInput(result)))
        return failure();
    return groups;
  }

private:
  void link(OpOperand *operand, Value input) {
    inputs.insert(input);
    auto [it, inserted] = inputOf.try_emplace(operand, input);
    if (!inserted)
      inputs.unionSets(it->second, input);
  }

  RegionBranchOpInterface op;
  llvm::EquivalenceClasses<Value> inputs;
  /// Each forwarded operand -> the first input it reaches.
  DenseMap<OpOperand *, Value> inputOf;
};
} // namespace

FailureOr<SmallVector<TiedGroup>>
mlir::mesh::getTiedValueGroups(RegionBranchOpInterface op) {
  TiedGroups groups(op);
  if (failed(groups.build()))
    return failure();
  return groups.collect();
}

//===----------------------------------------------------------------------===//
// Projections
//===----------------------------------------------------------------------===//

/// The flattened halo widths of the sharded dims among `dims` (empty when
/// none has one).
static SmallVector<int64_t> projectHalos(ArrayRef<AxisListAttr> factors,
                                         ArrayRef<int64_t> dims,
                                         ArrayRef<DimHalo> halos) {
  SmallVector<int64_t> widths;
  if (halos.empty())
    return widths;
  bool any = false;
  for (auto [d, f] : llvm::enumerate(dims)) {
    DimHalo h = f >= 0 && factors[f] && d < halos.size() ? halos[d] : DimHalo();
    widths.append({h.lo, h.hi});
    any |= h.lo || h.hi;
  }
  if (!any)
    widths.clear();
  return widths;
}

ShardingAttr mlir::mesh::projectFactors(FlatSymbolRefAttr mesh,
                                        ArrayRef<AxisListAttr> factors,
                                        ArrayRef<int64_t> dims,
                                        ArrayRef<DimHalo> halos) {
  MLIRContext *ctx = mesh.getContext();
  AxisListAttr none = AxisListAttr::get(ctx, ArrayRef<StringAttr>());
  SmallVector<AxisListAttr, 4> dimAxes;
  for (int64_t f : dims)
    dimAxes.push_back(f >= 0 && factors[f] ? factors[f] : none);
  return ShardingAttr::get(ctx, mesh, dimAxes, AxisListAttr(),
                           ReductionKind::Sum,
                           projectHalos(factors, dims, halos));
}

ShardingAttr mlir::mesh::projectResult(FlatSymbolRefAttr mesh,
                                       const ShardingRule &rule,
                                       ArrayRef<AxisListAttr> factors,
                                       ArrayRef<int64_t> dims,
                                       ArrayRef<DimHalo> halos) {
  ShardingAttr projected = projectFactors(mesh, factors, dims, halos);
  SmallVector<StringAttr, 4> partial;
  ReductionKind kind = ReductionKind::Sum;
  for (auto [f, factor] : llvm::enumerate(rule.factors))
    if (factor.reduction && factors[f]) {
      llvm::append_range(partial, factors[f].getAxes());
      kind = *factor.reduction;
    }
  if (partial.empty())
    return projected;
  MLIRContext *ctx = mesh.getContext();
  return ShardingAttr::get(ctx, mesh, projected.getDims(),
                           AxisListAttr::get(ctx, partial), kind,
                           projected.getHalo());
}

ShardingAttr ShardingProjector::get(FlatSymbolRefAttr mesh,
                                    const ShardingRule *rule,
                                    ArrayRef<AxisListAttr> factors,
                                    ArrayRef<int64_t> dims,
                                    ArrayRef<DimHalo> halos) {
  // The key: the mesh, the rank, each dim's axes; then, when a sharded dim
  // has a halo, a mark that no pointer or kind equals and every dim's
  // widths; then (for a result) the kinds and axes of the sharded reduction
  // factors. Each part has a fixed length or an unambiguous start, so two
  // different projections never share a key.
  SmallVector<const void *, 8> key;
  auto number = [](int64_t v) {
    return reinterpret_cast<const void *>(static_cast<uintptr_t>(v));
  };
  key.append({mesh.getAsOpaquePointer(), number(dims.size())});
  for (int64_t f : dims)
    key.push_back(f >= 0 && factors[f] ? factors[f].getAsOpaquePointer()
                                       : nullptr);
  bool halo = false;
  for (auto [d, h] : llvm::enumerate(halos))
    halo |=
        d < dims.size() && dims[d] >= 0 && factors[dims[d]] && h != DimHalo();
  if (halo) {
    key.push_back(number(-1));
    for (unsigned d = 0; d < dims.size(); ++d) {
      DimHalo h = d < halos.size() ? halos[d] : DimHalo();
      key.append({number(h.lo), number(h.hi)});
    }
  }
  if (rule)
    for (auto [f, factor] : llvm::enumerate(rule->factors))
      if (factor.reduction && factors[f]) {
        key.push_back(number(static_cast<int64_t>(*factor.reduction) + 1));
        key.push_back(factors[f].getAsOpaquePointer());
      }
  Entry &entry = entries[hashPointerKey(key) % kEntries];
  if (entry.value && entry.key == key)
    return entry.value;
  entry.key = std::move(key);
  entry.value =
      rule ? mlir::mesh::projectResult(mesh, *rule, factors, dims, halos)
           : projectFactors(mesh, factors, dims, halos);
  return entry.value;
}

//===----------------------------------------------------------------------===//
// Caches
//===----------------------------------------------------------------------===//

MeshOp MeshCache::get(Operation *op, FlatSymbolRefAttr ref) {
  return meshes.get({op->getParentOp(), ref},
                    [&] { return lookupMesh(op, ref, &tables); });
}

std::optional<int64_t> MeshCache::getGroupSize(MeshOp mesh, AxisListAttr axes) {
  return groupSizes.get(
      {mesh.getOperation(), axes}, [&]() -> std::optional<int64_t> {
        SmallVector<StringRef> names = axes.getNames();
        if (!llvm::all_of(names,
                          [&](StringRef a) { return mesh.getAxisIndex(a); }))
          return std::nullopt;
        return mesh.getGroupSize(names);
      });
}

static unsigned hashRule(const ShardingRule &rule) {
  llvm::hash_code h = llvm::hash_value(rule.factors.size());
  for (const ShardingFactor &f : rule.factors)
    h = llvm::hash_combine(h, f.size, f.blocked, f.maxHalo, f.numParts,
                           f.product, f.reduction.has_value(),
                           f.reduction ? static_cast<uint32_t>(*f.reduction)
                                       : 0u);
  for (const auto *list : {&rule.operandDims, &rule.resultDims}) {
    h = llvm::hash_combine(h, list->size());
    for (const SmallVector<int64_t> &dims : *list)
      h = llvm::hash_combine(
          h, llvm::hash_combine_range(dims.begin(), dims.end()));
  }
  for (const auto *list : {&rule.operandHalos, &rule.resultHalos})
    for (const SmallVector<DimHalo> &halos : *list)
      for (DimHalo halo : halos)
        h = llvm::hash_combine(h, halo.lo, halo.hi);
  // Never DenseMap's empty or tombstone key for `unsigned`.
  return static_cast<unsigned>(h) & 0x7fffffffu;
}

static bool equalRules(const ShardingRule &a, const ShardingRule &b) {
  if (a.factors.size() != b.factors.size() || a.operandDims != b.operandDims ||
      a.resultDims != b.resultDims || a.operandHalos != b.operandHalos ||
      a.resultHalos != b.resultHalos)
    return false;
  for (auto [x, y] : llvm::zip(a.factors, b.factors))
    if (x.size != y.size || x.blocked != y.blocked || x.maxHalo != y.maxHalo ||
        x.numParts != y.numParts || x.product != y.product ||
        x.reduction != y.reduction)
      return false;
  return true;
}

std::optional<unsigned> ShardingRuleTable::add(Operation *op) {
  RuleSharing sharing =
      sharingByName.get(op->getName().getAsOpaquePointer(),
                        [&] { return getShardingRuleSharing(op); });
  if (sharing == RuleSharing::None)
    return intern(getShardingRule(op));
  auto number = [](uintptr_t n) { return reinterpret_cast<const void *>(n); };
  SmallVector<const void *, 8> key;
  key.push_back(op->getName().getAsOpaquePointer());
  key.push_back(number(op->getNumOperands()));
  for (Type t : op->getOperandTypes())
    key.push_back(t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    key.push_back(t.getAsOpaquePointer());
  // Properties are hashed into the key and compared with those of the op
  // the entry was derived from (building them as an attribute costs more
  // than deriving a small rule).
  bool withProperties = sharing == RuleSharing::Signature;
  if (withProperties) {
    std::optional<unsigned> variant = getShardingRuleVariant(op);
    if (!variant)
      return intern(getShardingRule(op));
    key.push_back(number(op->hashProperties()));
    key.push_back(number(*variant));
  }
  SmallVector<SignatureEntry, 1> &bucket = bySignature[hashPointerKey(key)];
  for (const SignatureEntry &entry : bucket)
    if (entry.key == key &&
        (!withProperties || op->getName().compareOpProperties(
                                entry.derivedFrom->getPropertiesStorage(),
                                op->getPropertiesStorage())))
      return entry.rule;
  std::optional<unsigned> rule = intern(getShardingRule(op));
  bucket.push_back({std::move(key), rule, withProperties ? op : nullptr});
  return rule;
}

std::optional<unsigned>
ShardingRuleTable::intern(FailureOr<ShardingRule> rule) {
  if (failed(rule))
    return std::nullopt;
  SmallVector<unsigned, 1> &bucket = byHash[hashRule(*rule)];
  for (unsigned index : bucket)
    if (equalRules(rules[index], *rule))
      return index;
  rules.push_back(std::move(*rule));
  bucket.push_back(rules.size() - 1);
  return bucket.back();
}

//===----------------------------------------------------------------------===//
// FactorAssignment
//===----------------------------------------------------------------------===//

void FactorAssignment::deriveProduct(unsigned product) {
  SmallVector<StringAttr, 4> axes;
  for (unsigned p = product - rule.factors[product].numParts; p < product; ++p)
    if (factors[p])
      llvm::append_range(axes, factors[p].getAxes());
  factors[product] =
      axes.empty() ? AxisListAttr() : AxisListAttr::get(op->getContext(), axes);
}

void FactorAssignment::takePart(unsigned part, AxisListAttr axes,
                                int64_t devices) {
  unsigned product = rule.factors[part].product;
  unsigned first = product - rule.factors[product].numParts;
  // Every part before the last sharded one must be split down to size 1:
  // then a block of the product is a block of each part.
  unsigned last = part;
  for (unsigned p = part + 1; p < product; ++p)
    if (factors[p])
      last = p;
  for (unsigned p = first; p < last; ++p) {
    int64_t size = rule.factors[p].size;
    std::optional<int64_t> n = p == part ? std::optional<int64_t>(devices)
                               : factors[p]
                                   ? meshes.getGroupSize(meshOp, factors[p])
                                   : std::optional<int64_t>(1);
    if (!n || ShapedType::isDynamic(*n) || *n != size)
      return;
  }
  assign(part, axes);
  deriveProduct(product);
}

void FactorAssignment::takeProduct(unsigned product, AxisListAttr axes,
                                   int64_t from) {
  MLIRContext *ctx = op->getContext();
  unsigned first = product - rule.factors[product].numParts;
  SmallVector<std::pair<unsigned, AxisListAttr>, 4> split;
  ArrayRef<StringAttr> rest = axes.getAxes();
  for (unsigned p = first; p < product && !rest.empty(); ++p) {
    const ShardingFactor &part = rule.factors[p];
    if (part.size == 1)
      continue;
    // The last part sharded takes every axis left, if they may shard it
    // (the axes left shard what the parts before left of `from`)...
    AxisListAttr all = AxisListAttr::get(ctx, rest);
    std::optional<int64_t> n = meshes.getGroupSize(meshOp, all);
    if (!n)
      return;
    if (mayShard(part.size, *n, from)) {
      split.push_back({p, all});
      rest = {};
      break;
    }
    // ... the others take the leading axes that split them down to 1.
    size_t k = 1;
    for (; k < rest.size(); ++k) {
      std::optional<int64_t> m = meshes.getGroupSize(
          meshOp, AxisListAttr::get(ctx, rest.take_front(k)));
      if (!m || ShapedType::isDynamic(*m) || *m >= part.size)
        break;
    }
    AxisListAttr lead = AxisListAttr::get(ctx, rest.take_front(k));
    std::optional<int64_t> m = meshes.getGroupSize(meshOp, lead);
    if (k == rest.size() || !m || *m != part.size)
      return;
    split.push_back({p, lead});
    rest = rest.drop_front(k);
    if (!ShapedType::isDynamic(from))
      from /= part.size;
  }
  if (!rest.empty() || llvm::any_of(split, [&](auto &s) {
        return factors[s.first] || rule.factors[s.first].blocked;
      }))
    return;
  for (auto [p, a] : split)
    assign(p, a);
  deriveProduct(product);
}

void FactorAssignment::takePartial(
    ShardingAttr s, function_ref<ShardingAttr(unsigned)> operandSharding) {
  if (!s.isPartial() || !onMesh(s))
    return;
  SmallVector<StringAttr> pending(s.getPartialAxes().getAxes());
  auto allPending = [&](AxisListAttr axes) {
    return llvm::all_of(
        axes, [&](StringAttr a) { return llvm::is_contained(pending, a); });
  };
  // Each reduction factor takes the axes one of its operand dims is sharded
  // over, when they are all pending: where propagation took them from.
  for (auto [f, factor] : llvm::enumerate(rule.factors)) {
    if (!factor.reduction || factor.blocked || factors[f])
      continue;
    for (auto [i, dims] : llvm::enumerate(rule.operandDims)) {
      if (factors[f])
        break;
      ShardingAttr p = operandSharding(i);
      if (!p)
        continue;
      for (auto [d, g] : llvm::enumerate(dims)) {
        if (g != static_cast<int64_t>(f) || d >= p.getRank())
          continue;
        AxisListAttr axes = p.getDimAxes(d);
        if (axes.empty() || !allPending(axes))
          continue;
        assign(f, axes);
        for (StringAttr a : axes)
          llvm::erase(pending, a);
        break;
      }
    }
  }
  // Whatever is left goes to the first free reduction factor.
  if (pending.empty())
    return;
  for (auto [f, factor] : llvm::enumerate(rule.factors))
    if (factor.reduction && !factor.blocked && !factors[f]) {
      assign(f, AxisListAttr::get(op->getContext(), pending));
      return;
    }
}

bool mlir::mesh::hasWindowedOperand(linalg::LinalgOp op) {
  return llvm::any_of(op.getIndexingMapsArray(), [](AffineMap map) {
    return !map.isProjectedPermutation(/*allowZeroInResults=*/true);
  });
}

std::optional<int64_t>
mlir::mesh::getLoopCoefficient(AffineMap map, AffineExpr e, unsigned loop) {
  SmallVector<int64_t> flat;
  if (failed(getFlattenedAffineExpr(e, map.getNumDims(), map.getNumSymbols(),
                                    &flat)))
    return std::nullopt;
  return flat[loop];
}

//===----------------------------------------------------------------------===//
// The sizes of padded values' data
//===----------------------------------------------------------------------===//

SmallVector<int64_t> mlir::mesh::getDataSizes(Value v) {
  auto fromArray = [](Attribute a) -> SmallVector<int64_t> {
    if (auto sizes = dyn_cast_or_null<DenseI64ArrayAttr>(a))
      return SmallVector<int64_t>(sizes.asArrayRef());
    return {};
  };
  // One entry for each value, or none: an op rewritten with fewer results
  // (a canonicalization that drops dead ones keeps its attributes) has
  // entries that no longer match.
  auto entry = [&](Operation *op, unsigned i,
                   unsigned count) -> SmallVector<int64_t> {
    auto all =
        dyn_cast_or_null<ArrayAttr>(op->getDiscardableAttr(kDataSizesName));
    if (!all || all.size() != count)
      return {};
    return fromArray(all[i]);
  };
  if (auto r = dyn_cast<OpResult>(v))
    return entry(r.getOwner(), r.getResultNumber(),
                 r.getOwner()->getNumResults());
  auto arg = cast<BlockArgument>(v);
  Operation *parent = arg.getOwner()->getParentOp();
  if (auto fn = dyn_cast_or_null<FunctionOpInterface>(parent)) {
    if (arg.getOwner() != &fn.getFunctionBody().front())
      return {};
    return entry(fn, arg.getArgNumber(), fn.getNumArguments());
  }
  // A loop's region argument is its result, padded alike.
  if (auto loop = dyn_cast_or_null<LoopLikeOpInterface>(parent))
    if (OpResult r = loop.getTiedLoopResult(arg))
      return getDataSizes(r);
  if (auto loop = dyn_cast_or_null<scf::WhileOp>(parent))
    if (arg.getOwner() == loop.getAfterBody() &&
        arg.getArgNumber() < loop->getNumResults())
      return getDataSizes(loop->getResult(arg.getArgNumber()));
  return {};
}

void mlir::mesh::stripDataSizes(FunctionOpInterface fn) {
  // Only where padding recorded sizes (it marks the function then); a lookup
  // first: removing rebuilds the op's attribute list.
  if (!fn->getDiscardableAttr(kDataSizesName))
    return;
  fn.walk([](Operation *op) {
    if (op->getDiscardableAttr(kDataSizesName))
      op->removeDiscardableAttr(kDataSizesName);
  });
}
