//===- ShardingRuleModels.cpp - sharding rules of upstream ops ------------===//
//
// Each rule is a ShardingRuleOpInterface model attached to the op.
//
// Linalg structured ops: one factor per loop. An operand dim whose index is a
// plain loop dim maps to that loop's factor. An input dim read through a
// window, `s * p + t1 * r1 + ... + c` with p a parallel loop, the r
// reduction loops of static size and s, t, c constants (a convolution's
// `2 * d1 + d4`, a stencil's `d0 + 1`), maps to p's factor with a halo: each
// device's block of p reads a block of the input plus what the window
// reaches beyond it, `size - s * |p|` elements; the loops r stay whole. A dim
// indexed by anything else maps to no factor, and every loop in it is
// blocked, since sharding it would misplace the window. A reduction loop
// whose index the body reads (linalg.index) is blocked; a parallel one may
// split when a result dim iterates it (partitioning adds the device's block
// start to the index, see getLinalgRule). A reduction loop
// is a reduction factor whose kind comes from the combiner in the body; it
// may only be sharded when every accumulator starts from the kind's neutral
// value (or the kind is idempotent, max or min), else each device would add
// the initial value once more.
//
// Elementwise ops (the trait; no model needed) map each dim of each same-rank
// operand to the result's. tensor.empty has one free factor per dim;
// constants are replicated; reshapes, slices, concat and pad keep the
// factors of the dims they do not change. A dim that pad pads by static
// widths, with a padding value that does not depend on the position, keeps
// its factor too when every user reads it through a window that takes it
// whole: the padded dim then has a halo of the padding widths, which the
// devices at the ends pad and the others receive from their neighbours. So
// does a dim that mesh.circular_pad pads, whose devices at the ends are
// neighbours.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/Transforms/ShardingRuleModels.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace mlir::mesh;

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

std::optional<ReductionKind>
mlir::mesh::getReductionCombinerKind(Operation *op) {
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
    BlockArgument acc = op.getMatchingBlockArgument(op.getDpsInitOperand(i));
    if (combiner->getOperand(0) != acc && combiner->getOperand(1) != acc)
      return std::nullopt;
    std::optional<ReductionKind> k = getReductionCombinerKind(combiner);
    if (!k || (kind && *kind != *k))
      return std::nullopt;
    kind = k;
  }
  return kind;
}

/// What startsNeutral and the linalg rule's variant read of an accumulator:
/// whether it is a fill of a constant zero, one, or all ones (bits).
enum FillBits : unsigned { FillZero = 1, FillOne = 2, FillAllOnes = 4 };
static unsigned getFillBits(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  Attribute value;
  if (!fill || !matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return 0;
  if (auto f = dyn_cast<FloatAttr>(value)) {
    double v = f.getValueAsDouble();
    return (v == 0.0 ? FillZero : 0) | (v == 1.0 ? FillOne : 0);
  }
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    const APInt &v = i.getValue();
    return (v.isZero() ? FillZero : 0) | (v.isOne() ? FillOne : 0) |
           (v.isAllOnes() ? FillAllOnes : 0);
  }
  return 0;
}

/// True when `init` starts from the neutral value of `kind`.
static bool startsNeutral(Value init, ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Max:
  case ReductionKind::Min:
    return true; // Idempotent: combining the initial value again is harmless.
  case ReductionKind::Sum:
  case ReductionKind::Or:
  case ReductionKind::Xor:
    return getFillBits(init) & FillZero;
  case ReductionKind::Prod:
    return getFillBits(init) & FillOne;
  case ReductionKind::And:
    return getFillBits(init) & FillAllOnes;
  default:
    return false;
  }
}

/// A dim read through a window along loop `loop`: the dim's elements beyond
/// the stride times the loop's size are its halo.
struct Window {
  unsigned loop;
  int64_t halo;
  /// The halo as a sharding spells it: which elements a device holds
  /// depends only on lo + hi, and halves ask the least of each block.
  DimHalo split() const { return {halo / 2, halo - halo / 2}; }
};

/// The window of a dim of `size` elements read at `stride * i + c` for `i`
/// in a loop of `range` iterations and `c` up to `reach`: each block of `b`
/// iterations reads `stride * b` elements and `reach - stride + 1` more
/// after them, which the halo must hold. None when the dim is too small for
/// that.
static std::optional<Window> makeWindow(unsigned loop, int64_t size,
                                        int64_t stride, int64_t reach,
                                        int64_t range) {
  int64_t halo = size - stride * range;
  if (stride < 1 || reach < 0 || halo < 0 || halo < reach - stride + 1)
    return std::nullopt;
  return Window{loop, halo};
}

/// The window through which `op` reads dim `dim` of input `operand`, when
/// its index is `s * p + t1 * r1 + ... + c` (see the file comment) and the
/// sizes are static. `ranges` are the op's static loop ranges.
static std::optional<Window> getWindow(linalg::LinalgOp op, OpOperand &operand,
                                       unsigned dim, AffineMap map,
                                       ArrayRef<int64_t> ranges) {
  auto type = dyn_cast<RankedTensorType>(operand.get().getType());
  if (!type || op.isDpsInit(&operand) || type.isDynamicDim(dim))
    return std::nullopt;
  SmallVector<int64_t> flat;
  if (failed(getFlattenedAffineExpr(map.getResult(dim), map.getNumDims(),
                                    map.getNumSymbols(), &flat)) ||
      flat.size() != map.getNumDims() + map.getNumSymbols() + 1)
    return std::nullopt; // A floor division or a modulo: not a window.
  if (llvm::any_of(
          ArrayRef<int64_t>(flat).slice(map.getNumDims(), map.getNumSymbols()),
          [](int64_t c) { return c != 0; }))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  std::optional<unsigned> parallel;
  int64_t stride = 0, reach = flat.back();
  for (unsigned d = 0; d < map.getNumDims(); ++d) {
    int64_t coefficient = flat[d];
    if (coefficient == 0)
      continue;
    if (coefficient < 0 || ShapedType::isDynamic(ranges[d]))
      return std::nullopt;
    if (iterators[d] == utils::IteratorType::parallel) {
      if (parallel)
        return std::nullopt; // Two loops slide along one dim.
      parallel = d;
      stride = coefficient;
      continue;
    }
    reach += coefficient * (ranges[d] - 1);
  }
  if (!parallel)
    return std::nullopt;
  return makeWindow(*parallel, type.getDimSize(dim), stride, reach,
                    ranges[*parallel]);
}

/// The window through which an extract_slice reads dim `dim` of its source:
/// static offset, size and stride, the result's dim being the loop (0).
static std::optional<Window> getWindow(tensor::ExtractSliceOp slice,
                                       unsigned dim) {
  RankedTensorType source = slice.getSourceType();
  if (source.getRank() != slice.getType().getRank() ||
      source.isDynamicDim(dim) || slice.isDynamicOffset(dim) ||
      slice.isDynamicSize(dim) || slice.isDynamicStride(dim))
    return std::nullopt;
  return makeWindow(0, source.getDimSize(dim), slice.getStaticStride(dim),
                    slice.getStaticOffset(dim), slice.getStaticSize(dim));
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
  // A loop whose index the body reads may split only where partitioning can
  // give each device the global index back (localizeLoopIndices in
  // Partition.cpp adds the device's block start): a parallel loop that a
  // result dim iterates, whose block start is the result block's. A
  // reduction loop whose index is read (an argmax) stays whole: each device
  // would pick among its own block only. Loops whose index nobody reads may
  // split.
  if (op.hasIndexSemantics()) {
    llvm::BitVector inResult(iterators.size());
    for (OpOperand &init : op.getDpsInitsMutable())
      for (AffineExpr e : maps[init.getOperandNumber()].getResults())
        if (auto d = dyn_cast<AffineDimExpr>(e))
          inResult.set(d.getPosition());
    op.getBlock()->walk([&](linalg::IndexOp index) {
      uint64_t d = index.getDim();
      if (d < rule.factors.size() &&
          (iterators[d] != utils::IteratorType::parallel || !inResult.test(d)))
        rule.factors[d].blocked = true;
    });
  }
  llvm::BitVector sized(rule.factors.size());
  // Static loop ranges, needed only for windows.
  SmallVector<int64_t> ranges;
  auto dimsOf = [&](OpOperand &operand) {
    SmallVector<int64_t> dims;
    SmallVector<DimHalo> halos;
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
      if (ranges.empty() && op.getShapesToLoopsMap())
        ranges = op.getStaticLoopRanges();
      std::optional<Window> window =
          ranges.empty() ? std::nullopt
                         : getWindow(op, operand, k, map, ranges);
      dims.push_back(window ? static_cast<int64_t>(window->loop) : -1);
      if (window) {
        halos.resize(map.getNumResults());
        halos[k] = window->split();
        int64_t &widest = rule.factors[window->loop].maxHalo;
        widest = std::max(widest, halos[k].hi);
      }
      e.walk([&](AffineExpr sub) {
        if (auto d = dyn_cast<AffineDimExpr>(sub))
          if (!window || d.getPosition() != window->loop)
            rule.factors[d.getPosition()].blocked = true;
      });
    }
    if (!halos.empty()) {
      rule.operandHalos.resize(operand.getOperandNumber());
      rule.operandHalos.push_back(std::move(halos));
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
/// one dim on the narrow side. A group of one dim shares its factor; the
/// narrow dim of a larger group is the product of the group's factors, so
/// that (batch on "dp", heads on "tp") collapses to one dim on ["dp", "tp"]
/// when each device holds one batch row, and an expand splits it back.
static FailureOr<ShardingRule>
getReshapeRule(RankedTensorType wide, RankedTensorType narrow,
               ArrayRef<ReassociationIndices> groups, bool wideIsOperand) {
  ShardingRule rule;
  SmallVector<int64_t> wideDims(wide.getRank(), -1), narrowDims;
  for (const ReassociationIndices &group : groups) {
    int64_t product = rule.factors.size() + group.size();
    int64_t size = 1;
    for (int64_t d : group) {
      wideDims[d] = rule.factors.size();
      rule.factors.push_back({wide.getDimSize(d), std::nullopt, false});
      if (group.size() > 1)
        rule.factors.back().product = product;
      size = ShapedType::isDynamic(size) || wide.isDynamicDim(d)
                 ? ShapedType::kDynamic
                 : size * wide.getDimSize(d);
    }
    if (group.size() == 1) {
      narrowDims.push_back(wideDims[group.front()]);
      continue;
    }
    narrowDims.push_back(product);
    rule.factors.push_back({size, std::nullopt, false});
    rule.factors.back().numParts = group.size();
  }
  rule.operandDims.push_back(wideIsOperand ? wideDims : narrowDims);
  rule.resultDims.push_back(wideIsOperand ? narrowDims : wideDims);
  return rule;
}

/// extract_slice / insert_slice: a dim taken whole (offset 0, full size,
/// stride 1) keeps one factor on both sides. A dim an extract_slice takes
/// with static offset, size and stride keeps it as a window (a shifted
/// slice of a padded tensor, a stencil's neighbour): the source then needs
/// the halo of that window. Any other sliced dim belongs to no factor and
/// stays unsharded, and so does a dim a rank-reducing slice drops.
static FailureOr<ShardingRule>
getSliceRule(OffsetSizeAndStrideOpInterface op, RankedTensorType full,
             RankedTensorType part, const llvm::SmallBitVector &dropped) {
  auto extract = dyn_cast<tensor::ExtractSliceOp>(op.getOperation());
  ShardingRule rule;
  SmallVector<int64_t> fullDims, partDims;
  SmallVector<DimHalo> halos;
  for (int64_t d = 0; d < full.getRank(); ++d) {
    if (dropped.test(d)) {
      fullDims.push_back(-1);
      continue;
    }
    int64_t k = partDims.size();
    bool whole = op.isDynamicOffset(d) == false && op.getStaticOffset(d) == 0 &&
                 !op.isDynamicSize(d) &&
                 op.getStaticSize(d) == full.getDimSize(d) &&
                 !full.isDynamicDim(d) && !op.isDynamicStride(d) &&
                 op.getStaticStride(d) == 1;
    std::optional<Window> window;
    if (!whole && extract && !dropped.any())
      window = getWindow(extract, d);
    if (!whole && !window) {
      fullDims.push_back(-1);
      partDims.push_back(-1);
      continue;
    }
    if (window) {
      halos.resize(full.getRank());
      halos[d] = window->split();
    }
    fullDims.push_back(rule.factors.size());
    partDims.push_back(rule.factors.size());
    rule.factors.push_back({part.getDimSize(k), std::nullopt, false,
                            window ? window->split().hi : 0});
  }
  // extract_slice(source: full); insert_slice(source: part, dest: full);
  // then index operands.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<RankedTensorType>(operand.getType()))
      rule.operandDims.emplace_back();
    else
      rule.operandDims.push_back(!extract && i == 0 ? partDims : fullDims);
  }
  rule.resultDims.push_back(extract ? partDims : fullDims);
  if (!halos.empty())
    rule.operandHalos.push_back(std::move(halos));
  return rule;
}

static FailureOr<ShardingRule> getFillRule(linalg::FillOp fill) {
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

static FailureOr<ShardingRule> getEmptyRule(tensor::EmptyOp empty) {
  auto [rule, identity] = factorPerDim(empty.getType());
  rule.operandDims.resize(empty->getNumOperands());
  rule.resultDims.push_back(identity);
  return rule;
}

/// The dim concatenated along belongs to no factor; the others keep one.
static FailureOr<ShardingRule> getConcatRule(tensor::ConcatOp concat) {
  RankedTensorType type = concat.getResultType();
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
  rule.operandDims.assign(concat->getNumOperands(), dims);
  rule.resultDims.push_back(dims);
  return rule;
}

/// True when every use of `v` reads its dim `dim` through a window whose
/// halo is `halo` wide: its sharded blocks, with that halo, are then what
/// each user needs.
static bool readThroughWindows(Value v, unsigned dim, int64_t halo) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    std::optional<Window> window;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(use.getOwner())) {
      window = getWindow(slice, dim);
    } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(use.getOwner())) {
      if (!linalgOp.hasPureTensorSemantics() || !linalgOp.getShapesToLoopsMap())
        return false;
      AffineMap map = linalgOp.getMatchingIndexingMap(&use);
      if (isa<AffineDimExpr>(map.getResult(dim)))
        return false;
      window =
          getWindow(linalgOp, use, dim, map, linalgOp.getStaticLoopRanges());
    }
    if (!window || window->halo != halo)
      return false;
  }
  return true;
}

/// The rule of a pad of `type` by `low` and `high` into `result`
/// (tensor.pad, mesh.circular_pad): a dim left alone (static zero widths)
/// keeps one factor on both sides. A dim padded by static widths keeps it
/// too, with the widths as its halo, when `haloable` (the padding can be
/// made on each device: a uniform value, or the wrapped-around ends, which
/// the neighbours send) and every user reads the dim through a window that
/// needs that halo (see the file comment); any other padded dim belongs to
/// no factor. Operands past the first (a padding value, dynamic widths) have
/// no dims.
static ShardingRule getPaddingRule(RankedTensorType type, ArrayRef<int64_t> low,
                                   ArrayRef<int64_t> high, bool haloable,
                                   Value result, unsigned numOperands) {
  ShardingRule rule;
  SmallVector<int64_t> dims;
  SmallVector<DimHalo> halos;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (low[d] != 0 || high[d] != 0) { // Padded, or padded by a dynamic amount.
      bool halo = haloable && !ShapedType::isDynamic(low[d]) &&
                  !ShapedType::isDynamic(high[d]) && !type.isDynamicDim(d) &&
                  readThroughWindows(result, d, low[d] + high[d]);
      if (!halo) {
        dims.push_back(-1);
        continue;
      }
      halos.resize(type.getRank());
      halos[d] = {low[d], high[d]};
    }
    dims.push_back(rule.factors.size());
    rule.factors.push_back(
        {type.getDimSize(d), std::nullopt, false, std::max(low[d], high[d])});
  }
  rule.operandDims.push_back(dims);
  if (!halos.empty())
    rule.resultHalos.push_back(std::move(halos));
  rule.operandDims.resize(numOperands);
  rule.resultDims.push_back(dims);
  return rule;
}

static FailureOr<ShardingRule> getConstantRule(arith::ConstantOp constant) {
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  if (!type)
    return failure();
  ShardingRule rule;
  rule.resultDims.push_back(SmallVector<int64_t>(type.getRank(), -1));
  return rule;
}

/// `size` / `devices` for dim `dim` of a result of `op`, known only at run
/// time: a size that does not divide stops the program with a message that
/// names the op, its place and the dim, never a silently truncated block.
static Value divideAmongDevices(OpBuilder &b, Operation *op, unsigned dim,
                                Value size, Value devices) {
  Location loc = op->getLoc();
  Value rem = arith::RemUIOp::create(b, loc, size, devices);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value divides =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, zero);
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "'" << op->getName() << "'";
  if (auto place = loc->findInstanceOf<FileLineColLoc>())
    os << " at " << place.getFilename().getValue() << ":" << place.getLine()
       << ":" << place.getColumn();
  os << ": dim " << dim << " does not divide by the devices of its mesh axes";
  cf::AssertOp::create(b, loc, divides, message);
  return arith::DivUIOp::create(b, loc, size, devices);
}

/// The size of a dim that is static globally but dynamic on each device (a
/// `?` axis splits it): the global size divided by the devices along it.
static Value
localSize(OpBuilder &b, Operation *op, int64_t globalSize, unsigned result,
          unsigned dim,
          function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) {
  Value size = arith::ConstantIndexOp::create(b, op->getLoc(), globalSize);
  if (Value n = devicesAlong(b, result, dim))
    size = divideAmongDevices(b, op, dim, size, n);
  return size;
}

/// A slice's sizes after partitioning: a dim taken whole takes the whole
/// per-device dim of `part` (the slice side, now local), a size operand when
/// that dim is dynamic. Sizes that were operands stay. `whole` is the slice
/// side's type before partitioning.
static void setLocalSliceSizes(
    OffsetSizeAndStrideOpInterface slice, RankedTensorType whole,
    RankedTensorType part, MutableOperandRange sizeOperands,
    function_ref<void(ArrayRef<int64_t>)> setStatic,
    function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) {
  OpBuilder b(slice);
  SmallVector<int64_t> sizes(slice.getStaticSizes());
  // The dims a rank-reducing slice drops, from the types before
  // partitioning: the op's getDroppedDims() matches the sizes against
  // `part`, where a kept dim may now be 1 per device and look dropped.
  std::optional<llvm::SmallDenseSet<unsigned>> mask =
      computeRankReductionMask(sizes, whole.getShape(), /*matchDynamic=*/true);
  if (!mask) // Not for an op that verified with these types.
    return;
  llvm::SmallBitVector dropped(sizes.size());
  for (unsigned d : *mask)
    dropped.set(d);
  SmallVector<Value> dynamic;
  ValueRange old = slice.getSizes();
  unsigned k = 0;
  // `p`: the dim of `part` that dim `d` of the full side becomes (a
  // rank-reducing slice drops some, whose size stays 1).
  for (int64_t d = 0, p = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    bool kept = !dropped.test(d);
    int64_t partDim = kept ? p++ : -1;
    if (ShapedType::isDynamic(sizes[d])) {
      dynamic.push_back(old[k++]);
      continue;
    }
    if (!kept || sizes[d] == part.getDimSize(partDim))
      continue;
    if (!part.isDynamicDim(partDim)) {
      sizes[d] = part.getDimSize(partDim);
      continue;
    }
    // devicesAlong names a dim of the result: the part for extract_slice.
    int64_t resultDim =
        isa<tensor::ExtractSliceOp>(slice.getOperation()) ? partDim : d;
    dynamic.push_back(localSize(b, slice.getOperation(), sizes[d], 0, resultDim,
                                devicesAlong));
    sizes[d] = ShapedType::kDynamic;
  }
  setStatic(sizes);
  sizeOperands.assign(dynamic);
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

namespace {

/// Every linalg structured op but fill: the rule of its indexing maps.
struct LinalgRuleModel
    : public ShardingRuleOpInterface::FallbackModel<LinalgRuleModel> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return getLinalgRule(cast<linalg::LinalgOp>(op));
  }
  /// A named op's body is spelled by its name and properties: its rule
  /// depends on those, its types and its accumulators (getRuleVariant).
  /// linalg.generic, linalg.map and linalg.reduce write their bodies out,
  /// and derive their own.
  RuleSharing getRuleSharing(Operation *op) const {
    return isa<linalg::GenericOp, linalg::MapOp, linalg::ReduceOp>(op)
               ? RuleSharing::None
               : RuleSharing::Signature;
  }
  /// What startsNeutral reads of each accumulator, whatever the reduction
  /// kind (which the name and properties fix): its fill bits, three each.
  std::optional<unsigned> getRuleVariant(Operation *op) const {
    auto dps = cast<DestinationStyleOpInterface>(op);
    if (dps.getNumDpsInits() > 10)
      return std::nullopt; // More bits than fit.
    unsigned variant = 0;
    for (Value init : dps.getDpsInits())
      variant = variant << 3 | getFillBits(init);
    return variant;
  }
  bool needsNoData(Operation *) const { return false; }
  void updateSizesForLocalTypes(
      Operation *, function_ref<Type(unsigned)>, TypeRange,
      function_ref<Value(OpBuilder &, unsigned, unsigned)>) const {}
};

struct FillRuleModel
    : public ShardingRuleOpInterface::ExternalModel<FillRuleModel,
                                                    linalg::FillOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return getFillRule(cast<linalg::FillOp>(op));
  }
  RuleSharing getRuleSharing(Operation *) const { return RuleSharing::Types; }
  /// A fill of a scalar: its init is the only tensor.
  bool needsNoData(Operation *op) const {
    auto fill = cast<linalg::FillOp>(op);
    return fill.hasPureTensorSemantics() &&
           !isa<ShapedType>(fill.getInputs()[0].getType());
  }
};

/// The dynamic sizes of a per-device `tensor.empty` or `tensor.splat`: a
/// global size (an operand, or the static global size) divided by the
/// devices along the dim. A static global dim becomes dynamic on a `?` axis.
/// `keep` leading operands (a splat's value) stay.
static void setLocalDynamicSizes(
    Operation *op, unsigned keep, RankedTensorType global,
    RankedTensorType local, OperandRange globalSizes,
    function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) {
  OpBuilder b(op);
  SmallVector<Value> operands(op->getOperands().take_front(keep));
  unsigned k = 0;
  for (int64_t d = 0; d < global.getRank(); ++d) {
    Value size;
    if (global.isDynamicDim(d))
      size = globalSizes[k++];
    if (!local.isDynamicDim(d))
      continue;
    if (!size)
      size =
          arith::ConstantIndexOp::create(b, op->getLoc(), global.getDimSize(d));
    if (Value n = devicesAlong(b, 0, d))
      size = divideAmongDevices(b, op, d, size, n);
    operands.push_back(size);
  }
  op->setOperands(operands);
}

struct EmptyRuleModel
    : public ShardingRuleOpInterface::ExternalModel<EmptyRuleModel,
                                                    tensor::EmptyOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return getEmptyRule(cast<tensor::EmptyOp>(op));
  }
  RuleSharing getRuleSharing(Operation *) const { return RuleSharing::Types; }
  /// Static sizes only: dynamic ones would have to be divided again.
  bool needsNoData(Operation *op) const {
    return cast<tensor::EmptyOp>(op).getType().hasStaticShape();
  }
  void updateSizesForLocalTypes(
      Operation *op, function_ref<Type(unsigned)>, TypeRange globalResultTypes,
      function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) const {
    auto empty = cast<tensor::EmptyOp>(op);
    setLocalDynamicSizes(
        op, /*keep=*/0, cast<RankedTensorType>(globalResultTypes[0]),
        empty.getType(), empty.getDynamicSizes(), devicesAlong);
  }
};

/// `tensor.splat %v`: one value everywhere, so any layout is made on the
/// spot, like `tensor.empty` (the learning rate times a gradient).
struct SplatRuleModel
    : public ShardingRuleOpInterface::ExternalModel<SplatRuleModel,
                                                    tensor::SplatOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto splat = cast<tensor::SplatOp>(op);
    auto [rule, identity] = factorPerDim(splat.getType());
    rule.operandDims.resize(op->getNumOperands());
    rule.resultDims.push_back(identity);
    return rule;
  }
  RuleSharing getRuleSharing(Operation *) const { return RuleSharing::Types; }
  /// Only the scalar is data: the tensor is made again in any layout.
  bool needsNoData(Operation *op) const {
    return cast<tensor::SplatOp>(op).getType().hasStaticShape();
  }
  void updateSizesForLocalTypes(
      Operation *op, function_ref<Type(unsigned)>, TypeRange globalResultTypes,
      function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) const {
    auto splat = cast<tensor::SplatOp>(op);
    setLocalDynamicSizes(
        op, /*keep=*/1, cast<RankedTensorType>(globalResultTypes[0]),
        splat.getType(), splat.getDynamicSizes(), devicesAlong);
  }
};

struct ConstantRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ConstantRuleModel,
                                                    arith::ConstantOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return getConstantRule(cast<arith::ConstantOp>(op));
  }
  RuleSharing getRuleSharing(Operation *) const { return RuleSharing::Types; }
  /// A splat of static shape is made again in any layout (the same value
  /// everywhere), never sliced or gathered.
  bool needsNoData(Operation *op) const {
    auto constant = cast<arith::ConstantOp>(op);
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    return type && type.hasStaticShape() &&
           isa<SplatElementsAttr>(constant.getValue());
  }
};

struct CollapseShapeRuleModel
    : public ShardingRuleOpInterface::ExternalModel<CollapseShapeRuleModel,
                                                    tensor::CollapseShapeOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    return getReshapeRule(collapse.getSrcType(), collapse.getResultType(),
                          collapse.getReassociationIndices(),
                          /*wideIsOperand=*/true);
  }
};

struct ExpandShapeRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ExpandShapeRuleModel,
                                                    tensor::ExpandShapeOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    if (!expand.getOutputShape().empty())
      return failure(); // Dynamic output sizes: not handled yet.
    return getReshapeRule(expand.getResultType(), expand.getSrcType(),
                          expand.getReassociationIndices(),
                          /*wideIsOperand=*/false);
  }
  /// The output shape follows the per-device result type; a dim a `?` axis
  /// splits gets a size operand.
  void updateSizesForLocalTypes(
      Operation *op, function_ref<Type(unsigned)>, TypeRange globalResultTypes,
      function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    auto global = cast<RankedTensorType>(globalResultTypes[0]);
    RankedTensorType local = expand.getResultType();
    OpBuilder b(op);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < local.getRank(); ++d)
      if (local.isDynamicDim(d))
        sizes.push_back(
            localSize(b, op, global.getDimSize(d), 0, d, devicesAlong));
    expand.setStaticOutputShape(local.getShape());
    expand.getOutputShapeMutable().assign(sizes);
  }
};

struct ExtractSliceRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ExtractSliceRuleModel,
                                                    tensor::ExtractSliceOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto extract = cast<tensor::ExtractSliceOp>(op);
    return getSliceRule(extract, extract.getSourceType(), extract.getType(),
                        extract.getDroppedDims());
  }
  void updateSizesForLocalTypes(
      Operation *op, function_ref<Type(unsigned)>, TypeRange globalResultTypes,
      function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) const {
    auto extract = cast<tensor::ExtractSliceOp>(op);
    setLocalSliceSizes(
        extract, cast<RankedTensorType>(globalResultTypes.front()),
        extract.getType(), extract.getSizesMutable(),
        [&](ArrayRef<int64_t> s) { extract.setStaticSizes(s); }, devicesAlong);
  }
};

struct InsertSliceRuleModel
    : public ShardingRuleOpInterface::ExternalModel<InsertSliceRuleModel,
                                                    tensor::InsertSliceOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    return getSliceRule(insert, insert.getDestType(), insert.getSourceType(),
                        insert.getDroppedDims());
  }
  void updateSizesForLocalTypes(
      Operation *op, function_ref<Type(unsigned)> globalOperandType, TypeRange,
      function_ref<Value(OpBuilder &, unsigned, unsigned)> devicesAlong) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    setLocalSliceSizes(
        insert, cast<RankedTensorType>(globalOperandType(0)),
        insert.getSourceType(), insert.getSizesMutable(),
        [&](ArrayRef<int64_t> s) { insert.setStaticSizes(s); }, devicesAlong);
  }
};

/// A pad by a value that is the same everywhere.
struct PadRuleModel
    : public ShardingRuleOpInterface::ExternalModel<PadRuleModel,
                                                    tensor::PadOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto pad = cast<tensor::PadOp>(op);
    return getPaddingRule(pad.getSourceType(), pad.getStaticLow(),
                          pad.getStaticHigh(),
                          static_cast<bool>(pad.getConstantPaddingValue()),
                          pad.getResult(), op->getNumOperands());
  }
};

/// A periodic pad: its halos wrap around the devices (partitioning's
/// fillHalos rotates).
struct CircularPadRuleModel
    : public ShardingRuleOpInterface::ExternalModel<CircularPadRuleModel,
                                                    CircularPadOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto pad = cast<CircularPadOp>(op);
    return getPaddingRule(pad.getSource().getType(), pad.getLow(),
                          pad.getHigh(), /*haloable=*/true, pad.getResult(),
                          op->getNumOperands());
  }
};

/// linalg.softmax: one factor per dim; the dim it normalises along stays
/// whole (each row's maximum and sum need all of it), the others split.
struct SoftmaxRuleModel
    : public ShardingRuleOpInterface::ExternalModel<SoftmaxRuleModel,
                                                    linalg::SoftmaxOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto softmax = cast<linalg::SoftmaxOp>(op);
    auto type = dyn_cast<RankedTensorType>(softmax.getInput().getType());
    if (!type || !isa<RankedTensorType>(softmax.getOutput().getType()))
      return failure();
    auto [rule, identity] = factorPerDim(type);
    rule.factors[softmax.getDimension()].blocked = true;
    rule.operandDims.assign(op->getNumOperands(), identity);
    rule.resultDims.assign(op->getNumResults(), identity);
    return rule;
  }
  RuleSharing getRuleSharing(Operation *) const { return RuleSharing::None; }
};

struct ConcatRuleModel
    : public ShardingRuleOpInterface::ExternalModel<ConcatRuleModel,
                                                    tensor::ConcatOp> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    return getConcatRule(cast<tensor::ConcatOp>(op));
  }
};

} // namespace

void mlir::mesh::registerShardingRuleModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *linalg) {
    linalg::FillOp::attachInterface<FillRuleModel>(*ctx);
    linalg::SoftmaxOp::attachInterface<SoftmaxRuleModel>(*ctx);
    // Every structured op of the dialect, named or generic, present or added
    // later to upstream: they all describe themselves through LinalgOp.
    for (RegisteredOperationName name : ctx->getRegisteredOperations())
      if (&name.getDialect() == linalg &&
          name.hasInterface<linalg::LinalgOp>() &&
          !name.hasInterface<ShardingRuleOpInterface>())
        name.attachInterface<LinalgRuleModel>();
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::EmptyOp::attachInterface<EmptyRuleModel>(*ctx);
    tensor::SplatOp::attachInterface<SplatRuleModel>(*ctx);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeRuleModel>(*ctx);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeRuleModel>(*ctx);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceRuleModel>(*ctx);
    tensor::InsertSliceOp::attachInterface<InsertSliceRuleModel>(*ctx);
    tensor::ConcatOp::attachInterface<ConcatRuleModel>(*ctx);
    tensor::PadOp::attachInterface<PadRuleModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, MeshDialect *) {
    CircularPadOp::attachInterface<CircularPadRuleModel>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    arith::ConstantOp::attachInterface<ConstantRuleModel>(*ctx);
  });
}

FailureOr<ShardingRule> mlir::mesh::getShardingRule(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    return iface.getShardingRule();
  if (op->hasTrait<OpTrait::Elementwise>())
    return getElementwiseRule(op);
  return failure();
}

RuleSharing mlir::mesh::getShardingRuleSharing(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    return iface.getRuleSharing();
  return op->hasTrait<OpTrait::Elementwise>() ? RuleSharing::Types
                                              : RuleSharing::None;
}

std::optional<unsigned> mlir::mesh::getShardingRuleVariant(Operation *op) {
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
    return iface.getRuleVariant();
  return 0;
}
