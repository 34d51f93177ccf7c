//===- ShardingRules.cpp - built-in sharding rules ------------------------===//
//
// Linalg structured ops: one factor per loop. An operand dim whose index is a
// plain loop dim maps to that loop's factor; a dim indexed by anything else
// (a convolution's `d0 + d3`) maps to no factor, and every loop in that
// expression is blocked, since sharding it would misplace the window. Ops
// that read loop indices (linalg.index) block every factor. A reduction loop
// is a reduction factor whose kind comes from the combiner in the body; it
// may only be sharded when every accumulator starts from the kind's neutral
// value (or the kind is idempotent, max or min), else each device would add
// the initial value once more.
//
// Elementwise ops map each dim of each same-rank operand to the result's.
// tensor.empty has one free factor per dim; constants are replicated.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/Transforms/ShardingRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace mlir::mesh;

/// The reduction kind of a combiner op, if it is one we know.
static std::optional<ReductionKind> getCombinerKind(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return ReductionKind::Sum;
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return ReductionKind::Prod;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(op))
    return ReductionKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(op))
    return ReductionKind::Min;
  if (isa<arith::AndIOp>(op))
    return ReductionKind::And;
  if (isa<arith::OrIOp>(op))
    return ReductionKind::Or;
  if (isa<arith::XOrIOp>(op))
    return ReductionKind::Xor;
  return std::nullopt;
}

/// The one reduction kind of a linalg op's body, if every yielded value is
/// `combiner(accumulator, x)` with the same known combiner.
static std::optional<ReductionKind> getReductionKind(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield)
    return std::nullopt;
  std::optional<ReductionKind> kind;
  for (auto [i, value] : llvm::enumerate(yield.getOperands())) {
    Operation *combiner = value.getDefiningOp();
    if (!combiner || combiner->getNumOperands() != 2)
      return std::nullopt;
    BlockArgument acc =
        op.getMatchingBlockArgument(op.getDpsInitOperand(i));
    if (combiner->getOperand(0) != acc && combiner->getOperand(1) != acc)
      return std::nullopt;
    std::optional<ReductionKind> k = getCombinerKind(combiner);
    if (!k || (kind && *kind != *k))
      return std::nullopt;
    kind = k;
  }
  return kind;
}

/// True when `init` starts from the neutral value of `kind`.
static bool startsNeutral(Value init, ReductionKind kind) {
  if (kind == ReductionKind::Max || kind == ReductionKind::Min)
    return true; // Idempotent: combining the initial value again is harmless.
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Attribute value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return false;
  if (auto f = dyn_cast<FloatAttr>(value)) {
    double v = f.getValueAsDouble();
    return kind == ReductionKind::Sum ? v == 0.0
           : kind == ReductionKind::Prod ? v == 1.0
                                          : false;
  }
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    APInt v = i.getValue();
    switch (kind) {
    case ReductionKind::Sum:
    case ReductionKind::Or:
    case ReductionKind::Xor:
      return v.isZero();
    case ReductionKind::Prod:
      return v.isOne();
    case ReductionKind::And:
      return v.isAllOnes();
    default:
      return false;
    }
  }
  return false;
}

static FailureOr<ShardingRule> getLinalgRule(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return failure();
  ShardingRule rule;
  // Named ops build their indexing maps on every call: take them once.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  bool reduces = llvm::is_contained(iterators, utils::IteratorType::reduction);
  std::optional<ReductionKind> kind =
      reduces ? getReductionKind(op) : std::nullopt;
  for (utils::IteratorType it : iterators) {
    ShardingFactor f{ShapedType::kDynamic, std::nullopt, false};
    if (it == utils::IteratorType::reduction) {
      f.reduction = kind;
      f.blocked = !kind;
    }
    rule.factors.push_back(f);
  }
  if (op.hasIndexSemantics())
    for (ShardingFactor &f : rule.factors)
      f.blocked = true;
  llvm::BitVector sized(rule.factors.size());
  auto dimsOf = [&](OpOperand &operand) {
    SmallVector<int64_t> dims;
    AffineMap map = maps[operand.getOperandNumber()];
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    for (auto [k, e] : llvm::enumerate(map.getResults())) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        unsigned loop = d.getPosition();
        dims.push_back(loop);
        // A loop's size is that of the first operand dim indexed by it
        // alone, as in getStaticLoopRanges (dynamic if that dim is).
        if (type && !sized.test(loop)) {
          rule.factors[loop].size = type.getDimSize(k);
          sized.set(loop);
        }
        continue;
      }
      dims.push_back(-1);
      e.walk([&](AffineExpr sub) {
        if (auto d = dyn_cast<AffineDimExpr>(sub))
          rule.factors[d.getPosition()].blocked = true;
      });
    }
    return dims;
  };
  for (OpOperand &operand : op->getOpOperands())
    rule.operandDims.push_back(dimsOf(operand));
  for (OpOperand &init : op.getDpsInitsMutable())
    rule.resultDims.push_back(dimsOf(init));
  // Reductions may only be split when every accumulator starts neutral.
  if (kind && !llvm::all_of(op.getDpsInits(), [&](Value init) {
        return startsNeutral(init, *kind);
      }))
    for (ShardingFactor &f : rule.factors)
      if (f.reduction)
        f.blocked = true;
  return rule;
}

/// One free factor per dim of `type`, and the dims 0, 1, ... mapping to them.
static std::pair<ShardingRule, SmallVector<int64_t>>
factorPerDim(RankedTensorType type) {
  ShardingRule rule;
  for (int64_t size : type.getShape())
    rule.factors.push_back({size, std::nullopt, false});
  return {std::move(rule),
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))};
}

static FailureOr<ShardingRule> getElementwiseRule(Operation *op) {
  if (op->getNumResults() == 0)
    return failure();
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type)
    return failure();
  auto [rule, identity] = factorPerDim(type);
  for (Value operand : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(operand.getType());
    if (t && t.getRank() != type.getRank())
      return failure();
    rule.operandDims.push_back(t ? identity : SmallVector<int64_t>());
  }
  for (Value result : op->getResults()) {
    auto t = dyn_cast<RankedTensorType>(result.getType());
    if (!t || t.getRank() != type.getRank())
      return failure();
    rule.resultDims.push_back(identity);
  }
  return rule;
}

/// collapse_shape and expand_shape: a group of dims on the wide side maps to
/// one dim on the narrow side; only the group's major dim shares its factor
/// with the narrow dim (a block of the narrow dim is then a block of the
/// major dim), the group's other dims get factors that stay unsharded.
static FailureOr<ShardingRule>
getReshapeRule(RankedTensorType wide, RankedTensorType narrow,
               ArrayRef<ReassociationIndices> groups, bool wideIsOperand) {
  ShardingRule rule;
  SmallVector<int64_t> wideDims(wide.getRank(), -1), narrowDims;
  for (auto [j, group] : llvm::enumerate(groups)) {
    for (auto [k, d] : llvm::enumerate(group)) {
      wideDims[d] = rule.factors.size();
      rule.factors.push_back({wide.getDimSize(d), std::nullopt, k != 0});
    }
    narrowDims.push_back(wideDims[group.front()]);
  }
  rule.operandDims.push_back(wideIsOperand ? wideDims : narrowDims);
  rule.resultDims.push_back(wideIsOperand ? narrowDims : wideDims);
  return rule;
}

/// extract_slice / insert_slice: a dim taken whole (offset 0, full size,
/// stride 1) keeps one factor on both sides; a sliced dim belongs to none and
/// stays unsharded. Rank-reducing slices have no rule.
static FailureOr<ShardingRule> getSliceRule(OffsetSizeAndStrideOpInterface op,
                                            RankedTensorType full,
                                            RankedTensorType part,
                                            bool isInsert) {
  if (full.getRank() != part.getRank())
    return failure();
  ShardingRule rule;
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < full.getRank(); ++d) {
    bool whole = op.isDynamicOffset(d) == false && op.getStaticOffset(d) == 0 &&
                 !op.isDynamicSize(d) && op.getStaticSize(d) == full.getDimSize(d) &&
                 !full.isDynamicDim(d) && !op.isDynamicStride(d) &&
                 op.getStaticStride(d) == 1;
    if (whole) {
      dims.push_back(rule.factors.size());
      rule.factors.push_back({full.getDimSize(d), std::nullopt, false});
    } else {
      dims.push_back(-1);
    }
  }
  Operation *raw = op.getOperation();
  for (Value operand : raw->getOperands())
    rule.operandDims.push_back(isa<RankedTensorType>(operand.getType())
                                   ? dims
                                   : SmallVector<int64_t>());
  rule.resultDims.push_back(dims);
  (void)isInsert;
  return rule;
}

ShardingAttr mlir::mesh::projectFactors(FlatSymbolRefAttr mesh,
                                        ArrayRef<ArrayAttr> factors,
                                        ArrayRef<int64_t> dims) {
  MLIRContext *ctx = mesh.getContext();
  ArrayAttr none = ArrayAttr::get(ctx, {});
  SmallVector<Attribute, 4> dimAttrs;
  for (int64_t f : dims)
    dimAttrs.push_back(f >= 0 && factors[f] ? factors[f] : none);
  return ShardingAttr::get(ctx, mesh, ArrayAttr::get(ctx, dimAttrs), none,
                           ReductionKind::Sum);
}

ShardingAttr mlir::mesh::projectResult(FlatSymbolRefAttr mesh,
                                       const ShardingRule &rule,
                                       ArrayRef<ArrayAttr> factors,
                                       ArrayRef<int64_t> dims) {
  ShardingAttr projected = projectFactors(mesh, factors, dims);
  SmallVector<Attribute, 4> partial;
  ReductionKind kind = ReductionKind::Sum;
  for (auto [f, factor] : llvm::enumerate(rule.factors))
    if (factor.reduction && factors[f]) {
      llvm::append_range(partial, factors[f].getValue());
      kind = *factor.reduction;
    }
  if (partial.empty())
    return projected;
  MLIRContext *ctx = mesh.getContext();
  return ShardingAttr::get(ctx, mesh, projected.getDims(),
                           ArrayAttr::get(ctx, partial), kind);
}

static size_t hashRule(const ShardingRule &rule) {
  llvm::hash_code h = llvm::hash_value(rule.factors.size());
  for (const ShardingFactor &f : rule.factors)
    h = llvm::hash_combine(h, f.size, f.blocked, f.reduction.has_value(),
                           f.reduction ? static_cast<uint32_t>(*f.reduction)
                                       : 0u);
  for (const auto *list : {&rule.operandDims, &rule.resultDims}) {
    h = llvm::hash_combine(h, list->size());
    for (const SmallVector<int64_t> &dims : *list)
      h = llvm::hash_combine(h, llvm::hash_combine_range(dims.begin(),
                                                         dims.end()));
  }
  return static_cast<size_t>(h);
}

static bool equalRules(const ShardingRule &a, const ShardingRule &b) {
  if (a.factors.size() != b.factors.size() || a.operandDims != b.operandDims ||
      a.resultDims != b.resultDims)
    return false;
  for (auto [x, y] : llvm::zip(a.factors, b.factors))
    if (x.size != y.size || x.blocked != y.blocked || x.reduction != y.reduction)
      return false;
  return true;
}

/// True when `op`'s built-in rule depends only on its name and types.
static bool ruleFollowsFromTypes(Operation *op) {
  if (isa<ShardingRuleOpInterface>(op))
    return false;
  return isa<tensor::EmptyOp, linalg::FillOp, arith::ConstantOp>(op) ||
         (op->hasTrait<OpTrait::Elementwise>() && !isa<linalg::LinalgOp>(op));
}

int ShardingRuleTable::add(Operation *op) {
  if (!ruleFollowsFromTypes(op))
    return intern(getShardingRule(op));
  SmallVector<const void *, 8> key;
  key.push_back(op->getName().getAsOpaquePointer());
  key.push_back(reinterpret_cast<const void *>(
      static_cast<uintptr_t>(op->getNumOperands())));
  for (Type t : op->getOperandTypes())
    key.push_back(t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    key.push_back(t.getAsOpaquePointer());
  auto [it, inserted] = bySignature.try_emplace(std::move(key), -1);
  if (inserted)
    it->second = intern(getShardingRule(op));
  return it->second;
}

int ShardingRuleTable::intern(FailureOr<ShardingRule> rule) {
  if (failed(rule))
    return -1;
  SmallVector<int, 1> &bucket = byHash[hashRule(*rule)];
  for (int index : bucket)
    if (equalRules(rules[index], *rule))
      return index;
  rules.push_back(std::move(*rule));
  bucket.push_back(static_cast<int>(rules.size()) - 1);
  return bucket.back();
}

ShardingAttr ShardingProjector::get(FlatSymbolRefAttr mesh,
                                    const ShardingRule *rule,
                                    ArrayRef<ArrayAttr> factors,
                                    ArrayRef<int64_t> dims) {
  // The key: the mesh, then each dim's axes, then (for a result) the axes
  // and kinds of the sharded reduction factors.
  SmallVector<const void *, 8> key;
  key.push_back(mesh.getAsOpaquePointer());
  for (int64_t f : dims)
    key.push_back(f >= 0 && factors[f] ? factors[f].getAsOpaquePointer()
                                       : nullptr);
  if (rule)
    for (auto [f, factor] : llvm::enumerate(rule->factors))
      if (factor.reduction && factors[f]) {
        key.push_back(reinterpret_cast<const void *>(
            static_cast<uintptr_t>(*factor.reduction) + 1));
        key.push_back(factors[f].getAsOpaquePointer());
      }
  size_t h = llvm::hash_combine_range(key.begin(), key.end());
  Entry &entry = entries[h % kEntries];
  if (entry.value && entry.key == key)
    return entry.value;
  entry.key = std::move(key);
  entry.value = rule ? mlir::mesh::projectResult(mesh, *rule, factors, dims)
                     : projectFactors(mesh, factors, dims);
  return entry.value;
}

FailureOr<ShardingRule> mlir::mesh::getShardingRule(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    return iface.getShardingRule();
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    // One parallel factor per dim of the init; the scalar maps to none.
    // (Its generic indexing maps are rebuilt on every call: skip them.)
    auto type = dyn_cast<RankedTensorType>(fill.getOutputs()[0].getType());
    if (!type || !fill.hasPureTensorSemantics())
      return failure();
    auto [rule, identity] = factorPerDim(type);
    auto scalar = dyn_cast<ShapedType>(fill.getInputs()[0].getType());
    rule.operandDims.push_back(
        SmallVector<int64_t>(scalar ? scalar.getRank() : 0, -1));
    rule.operandDims.push_back(identity);
    rule.resultDims.push_back(identity);
    return rule;
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return getLinalgRule(linalgOp);
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    auto [rule, identity] = factorPerDim(empty.getType());
    rule.operandDims.resize(op->getNumOperands());
    rule.resultDims.push_back(identity);
    return rule;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return getReshapeRule(collapse.getSrcType(), collapse.getResultType(),
                          collapse.getReassociationIndices(), true);
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    if (!expand.getOutputShape().empty())
      return failure(); // Dynamic output sizes: not handled yet.
    return getReshapeRule(expand.getResultType(), expand.getSrcType(),
                          expand.getReassociationIndices(), false);
  }
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op))
    return getSliceRule(extract, extract.getSourceType(), extract.getType(),
                        false);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    FailureOr<ShardingRule> rule = getSliceRule(
        insert, insert.getDestType(), insert.getSourceType(), true);
    return rule;
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    auto type = concat.getResultType();
    ShardingRule rule;
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d == static_cast<int64_t>(concat.getDim())) {
        dims.push_back(-1);
        continue;
      }
      dims.push_back(rule.factors.size());
      rule.factors.push_back({type.getDimSize(d), std::nullopt, false});
    }
    rule.operandDims.assign(op->getNumOperands(), dims);
    rule.resultDims.push_back(dims);
    return rule;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (!type)
      return failure();
    ShardingRule rule;
    rule.resultDims.push_back(SmallVector<int64_t>(type.getRank(), -1));
    return rule;
  }
  if (op->hasTrait<OpTrait::Elementwise>())
    return getElementwiseRule(op);
  return failure();
}
