//===- PadToDivide.cpp - pad dims that annotations split unevenly ---------===//
//
// An annotation that splits a static dim of `s` elements over `n` devices
// that do not divide it (the DeviceMesh tutorial's Linear(10, 10) over 4) is
// made to divide, as FSDP and Shardy do: the dim is padded to the next
// multiple of `n`, so each device holds a block of ceil(s / n) elements and
// the last blocks end in padding. The global program is rewritten before
// propagation, so everything after it sees dims that divide:
//
// - Dims tied by the ops' sharding rules (a matmul's contracted dims, an
//   elementwise op's dims, a loop's carried values) form classes; a class
//   with a non-dividing annotation is padded to a multiple of every such
//   annotation's devices, and every dim of the class takes that size. Ops
//   whose values keep their shape this way: elementwise ops, linalg ops
//   without windows, fills, empty tensors, splats and constants (padded
//   with zeros), `mesh.shard`, and loops and branches (their tied values).
// - Every other op (a reshape, a slice, a window, a call, an op without a
//   rule) is a boundary: its operands are sliced back to their size, and
//   its results padded (with zeros) where a padded class needs them.
// - A function argument annotated with a non-dividing dim takes the padded
//   size in the signature (each device is given its block, the last one
//   padded, as FSDP pads its flat parameter); other dims of its class are
//   padded inside. Results likewise; calls convert.
// - The padding never reaches a result: a reduction over a padded dim (a
//   contraction, a sum, a max) first replaces the padding of each input by
//   the reduction's neutral element (zero for sums and contractions, -inf
//   for max, ...) through a mask, since the padding of a value may hold
//   anything (what a caller passed, exp(0) = 1 of padding zeros). Values
//   padded here with zeros need no mask.
//
//===----------------------------------------------------------------------===//

#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/SetVector.h"

#include <numeric>

using namespace mlir;
using namespace mlir::mesh;

/// Marks the slices and pads padding makes (until propagation ends): a
/// later round may read through them, never through the user's own.
static constexpr llvm::StringLiteral kPaddingMark = "mesh_padding";

namespace {

/// A dim of a tensor value.
using Slot = std::pair<Value, unsigned>;

/// One function's dims, in classes, and what each class must divide by.
class PadToDivide {
public:
  PadToDivide(
      FunctionOpInterface fn, MeshCache &meshes, StringAttr name,
      const DenseMap<Operation *, SmallVector<RankedTensorType>> &argTypes,
      const DenseMap<Operation *, SmallVector<RankedTensorType>> &resultTypes,
      SymbolTableCollection &tables, ArrayRef<UnevenWindow> windows)
      : fn(fn), meshes(meshes), shardingName(name), newArgTypes(argTypes),
        newResultTypes(resultTypes), tables(tables) {
    for (const UnevenWindow &w : windows)
      if (fn->isProperAncestor(w.op))
        windowLoops[w.op].push_back({w.loop, w.size});
  }

  LogicalResult run();

private:
  enum class Kind { Keeps, Boundary };
  Kind kindOf(Operation *op);
  unsigned slotOf(Value v, unsigned dim);
  unsigned find(unsigned i);
  void unite(unsigned a, unsigned b);
  void require(Value v, ShardingAttr s, Operation *scope);
  void uniteOp(Operation *op);
  /// The padded type of `v` (its own type when nothing pads it).
  RankedTensorType paddedType(Value v);
  LogicalResult addMasks(linalg::LinalgOp op);
  /// Notes that the dims the padded loops of the window ops index take the
  /// loops' padded sizes.
  void requireWindowLoops();
  /// Pads (or slices) the inputs each window op reads through its padded
  /// loops to what the loops' new sizes reach.
  void fitWindowInputs();
  /// A result of the window op `op` that is sliced back and padded again
  /// only for the function's return (a padded signature) is returned as it
  /// is: the padding of a returned block is the caller's to ignore (a
  /// caller masks padded call results before it reduces over them).
  void returnPaddedResults(Operation *op);
  Value convert(OpBuilder &b, Location loc, Value v, RankedTensorType to);
  Value mask(OpBuilder &b, Location loc, Value x, unsigned d, int64_t real,
             TypedAttr neutral);
  Value zeroPadding(Value v);
  void recordDataSizes();
  // The rewrite, step by step.
  FunctionOpInterface calleeOf(Operation *op);
  Value convertUses(Value v, RankedTensorType target, OpBuilder &b,
                    Location loc);
  SmallVector<Value> retypeCallResults();
  LogicalResult convertResult(Operation *def, Value v, RankedTensorType target);
  LogicalResult retypeValue(Value v, RankedTensorType target);
  void convertOperands(Operation *op);
  LogicalResult retype();

  FunctionOpInterface fn;
  MeshCache &meshes;
  StringAttr shardingName;
  const DenseMap<Operation *, SmallVector<RankedTensorType>> &newArgTypes;
  const DenseMap<Operation *, SmallVector<RankedTensorType>> &newResultTypes;
  SymbolTableCollection &tables;

  DenseMap<Slot, unsigned> slots;
  SmallVector<unsigned> parent;
  SmallVector<int64_t> sizeOf;   // The dim's size (kDynamic, or -2 mixed).
  SmallVector<int64_t> multiple; // What the class must divide by (1: none).
  /// The values with tensor types, in walk order, and their original types.
  llvm::SetVector<Value> values;
  DenseMap<Value, RankedTensorType> original;
  /// The dims of values padded here with zeros: no mask needed along them.
  DenseMap<Value, SmallVector<bool>> zeroPadded;
  /// Values and their padding zeroed, read by all their users.
  DenseMap<Value, Value> zeroedOf;
  /// Ops made here (converts, masks): not rewritten again.
  DenseSet<Operation *> made;
  /// The region-branch ops whose values all tie up (the others are
  /// boundaries).
  DenseSet<Operation *> tied;
  /// The linalg ops with windows whose loops are padded (a valid
  /// convolution's output rows): loop and its padded size. They keep
  /// shapes.
  DenseMap<Operation *, SmallVector<std::pair<unsigned, int64_t>>> windowLoops;
};

} // namespace

SmallVector<int64_t> mlir::mesh::getUnevenSplits(MeshCache &meshes,
                                                 Operation *scope, Type type,
                                                 ShardingAttr s) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!s || !tensor ||
      static_cast<int64_t>(s.getDims().size()) != tensor.getRank())
    return {};
  MeshOp mesh = meshes.get(scope, s.getMesh());
  if (!mesh)
    return {};
  SmallVector<int64_t> uneven(tensor.getRank(), 0);
  bool any = false;
  for (auto [d, axes] : llvm::enumerate(s.getDims())) {
    if (!axes || axes.empty() || tensor.isDynamicDim(d))
      continue;
    std::optional<int64_t> n = meshes.getGroupSize(mesh, axes);
    if (!n || ShapedType::isDynamic(*n) || *n <= 1 ||
        tensor.getDimSize(d) % *n == 0)
      continue;
    uneven[d] = *n;
    any = true;
  }
  if (!any)
    uneven.clear();
  return uneven;
}

unsigned PadToDivide::slotOf(Value v, unsigned dim) {
  auto [it, inserted] = slots.try_emplace(Slot{v, dim}, parent.size());
  if (inserted) {
    parent.push_back(parent.size());
    sizeOf.push_back(cast<RankedTensorType>(v.getType()).getDimSize(dim));
    multiple.push_back(1);
    values.insert(v);
  }
  return it->second;
}

unsigned PadToDivide::find(unsigned i) {
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

void PadToDivide::unite(unsigned a, unsigned b) {
  a = find(a);
  b = find(b);
  if (a == b)
    return;
  parent[b] = a;
  if (sizeOf[a] != sizeOf[b])
    sizeOf[a] = -2; // Mixed sizes: never padded.
  multiple[a] = std::lcm(multiple[a], multiple[b]);
}

/// Notes what an annotation `s` of `v` needs: each static dim split over a
/// static number of devices that does not divide it must be padded.
void PadToDivide::require(Value v, ShardingAttr s, Operation *scope) {
  for (auto [d, n] :
       llvm::enumerate(getUnevenSplits(meshes, scope, v.getType(), s))) {
    if (n == 0)
      continue;
    unsigned i = find(slotOf(v, d));
    multiple[i] = std::lcm(multiple[i], n);
  }
}

PadToDivide::Kind PadToDivide::kindOf(Operation *op) {
  if (made.contains(op))
    return Kind::Boundary;
  if (isa<ShardOp, tensor::EmptyOp, tensor::SplatOp, arith::ConstantOp>(op))
    return Kind::Keeps;
  // (Not an op that may trap on the padding: an integer division by its
  // zeros.)
  if (op->hasTrait<OpTrait::Elementwise>() && op->getNumRegions() == 0 &&
      isPure(op))
    return Kind::Keeps;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (!linalgOp.hasPureTensorSemantics())
      return Kind::Boundary;
    // Windows (a convolution's s * oh + kh) tie dims of other sizes; a
    // window op whose loop is padded keeps its other dims (its windowed
    // inputs are fitted to the loop after).
    if (windowLoops.contains(op))
      return Kind::Keeps;
    return hasWindowedOperand(linalgOp) ? Kind::Boundary : Kind::Keeps;
  }
  return Kind::Boundary;
}

/// Ties the dims an op keeps together: those of one factor of its rule, or
/// the tied values of a loop or branch.
void PadToDivide::uniteOp(Operation *op) {
  if (auto branch = dyn_cast<RegionBranchOpInterface>(op)) {
    FailureOr<SmallVector<TiedGroup>> groups = getTiedValueGroups(branch);
    if (failed(groups))
      return; // A boundary, then.
    tied.insert(op);
    for (const TiedGroup &group : *groups) {
      auto type = dyn_cast<RankedTensorType>(group.values.front().getType());
      if (!type)
        continue;
      for (unsigned d = 0; d < type.getRank(); ++d)
        for (Value v : group.values)
          if (cast<RankedTensorType>(v.getType()).getRank() == type.getRank())
            unite(slotOf(group.values.front(), d), slotOf(v, d));
    }
    return;
  }
  if (kindOf(op) != Kind::Keeps)
    return;
  if (auto shard = dyn_cast<ShardOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(shard.getType());
    for (unsigned d = 0; type && d < type.getRank(); ++d)
      unite(slotOf(shard.getSrc(), d), slotOf(shard.getResult(), d));
    return;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    // A tensor constant keeps any shape (padded with zeros); a dense
    // attribute of another kind is left alone.
    if (!isa<DenseIntOrFPElementsAttr>(constant.getValue()))
      return;
  }
  FailureOr<ShardingRule> rule = getShardingRule(op);
  if (failed(rule))
    return;
  DenseMap<int64_t, unsigned> first;
  // A window op's windowed dims are not its loop's size: not tied.
  SmallVector<AffineMap> maps;
  if (windowLoops.contains(op))
    maps = cast<linalg::LinalgOp>(op).getIndexingMapsArray();
  auto add = [&](Value v, ArrayRef<int64_t> dims, unsigned mapIndex) {
    if (!isa<RankedTensorType>(v.getType()))
      return;
    for (auto [d, f] : llvm::enumerate(dims)) {
      if (f < 0 ||
          (!maps.empty() && !isa<AffineDimExpr>(maps[mapIndex].getResult(d))))
        continue;
      unsigned s = slotOf(v, d);
      auto [it, inserted] = first.try_emplace(f, s);
      if (!inserted)
        unite(it->second, s);
    }
  };
  for (auto [i, v, dims] :
       llvm::enumerate(op->getOperands(), rule->operandDims))
    add(v, dims, i);
  // (A linalg op's results are indexed as its inits, the last operands.)
  unsigned firstInit = op->getNumOperands() - op->getNumResults();
  for (auto [i, v, dims] : llvm::enumerate(op->getResults(), rule->resultDims))
    add(v, dims, firstInit + i);
}

RankedTensorType PadToDivide::paddedType(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  bool changed = false;
  for (unsigned d = 0; d < shape.size(); ++d) {
    auto it = slots.find(Slot{v, d});
    if (it == slots.end())
      continue;
    unsigned c = find(it->second);
    if (multiple[c] <= 1 || sizeOf[c] < 0)
      continue;
    int64_t padded = (shape[d] + multiple[c] - 1) / multiple[c] * multiple[c];
    changed |= padded != shape[d];
    shape[d] = padded;
  }
  return changed ? type.clone(shape) : type;
}

/// The neutral element of `kind` for `type`.
static TypedAttr neutralOf(ReductionKind kind, Type type) {
  if (auto fType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = fType.getFloatSemantics();
    switch (kind) {
    case ReductionKind::Sum:
      return FloatAttr::get(type, APFloat::getZero(sem));
    case ReductionKind::Prod:
      return FloatAttr::get(type, APFloat::getOne(sem));
    // (A format without infinities has its largest value instead.)
    case ReductionKind::Max:
      return FloatAttr::get(type, APFloat::semanticsHasInf(sem)
                                      ? APFloat::getInf(sem, /*Negative=*/true)
                                      : APFloat::getLargest(sem, true));
    case ReductionKind::Min:
      return FloatAttr::get(type, APFloat::semanticsHasInf(sem)
                                      ? APFloat::getInf(sem)
                                      : APFloat::getLargest(sem));
    default:
      return {};
    }
  }
  auto iType = dyn_cast<IntegerType>(type);
  if (!iType)
    return {};
  unsigned w = iType.getWidth();
  switch (kind) {
  case ReductionKind::Sum:
  case ReductionKind::Or:
  case ReductionKind::Xor:
    return IntegerAttr::get(type, APInt::getZero(w));
  case ReductionKind::Prod:
    return IntegerAttr::get(type, APInt(w, 1));
  case ReductionKind::And:
    return IntegerAttr::get(type, APInt::getAllOnes(w));
  case ReductionKind::Max:
    return IntegerAttr::get(type, APInt::getSignedMinValue(w));
  case ReductionKind::Min:
    return IntegerAttr::get(type, APInt::getSignedMaxValue(w));
  default:
    return {};
  }
}

/// How the padding of a reduction's inputs must read so that it adds
/// nothing: the body combines its accumulator with one input element
/// (`acc + x`, `max(acc, x)`) or with a product of input elements (a
/// contraction: a zero factor makes the product zero). Fails otherwise.
static FailureOr<ReductionKind>
getMaskKind(linalg::LinalgOp op, const DenseSet<unsigned> &paddedLoops) {
  if (op.getNumDpsInits() != 1)
    return failure();
  Block *body = op.getBlock();
  Operation *combiner = body->getTerminator()->getOperand(0).getDefiningOp();
  BlockArgument acc = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  if (!combiner || combiner->getNumOperands() != 2 ||
      combiner->getParentOp() != op.getOperation())
    return failure();
  std::optional<ReductionKind> kind = getReductionCombinerKind(combiner);
  Value x = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                           : combiner->getOperand(0);
  if (!kind ||
      (combiner->getOperand(0) != acc && combiner->getOperand(1) != acc))
    return failure();
  auto isInput = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == body && arg != acc;
  };
  // The padded loops that input `v` is read along (its mask covers them).
  auto loopsOf = [&](Value v) {
    DenseSet<unsigned> loops;
    AffineMap map = op.getMatchingIndexingMap(
        op.getMatchingOpOperand(cast<BlockArgument>(v)));
    for (AffineExpr e : map.getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        if (paddedLoops.contains(d.getPosition()))
          loops.insert(d.getPosition());
    return loops;
  };
  // Each padded lane must add the neutral element: the input combined must
  // be read along every padded loop (an input without that loop would be
  // added once per padded lane).
  if (isInput(x)) {
    if (loopsOf(x).size() != paddedLoops.size())
      return failure();
    return *kind;
  }
  // A contraction: acc + a * b (also through casts of the inputs).
  Operation *product = x.getDefiningOp();
  if (*kind != ReductionKind::Sum || !product ||
      !isa<arith::MulFOp, arith::MulIOp>(product))
    return failure();
  auto inputOrCast = [&](Value v) {
    if (isInput(v))
      return true;
    Operation *cast = v.getDefiningOp();
    return cast &&
           isa<arith::ExtFOp, arith::ExtSIOp, arith::ExtUIOp, arith::SIToFPOp,
               arith::UIToFPOp>(cast) &&
           isInput(cast->getOperand(0));
  };
  if (!inputOrCast(product->getOperand(0)) ||
      !inputOrCast(product->getOperand(1)))
    return failure();
  // A zero factor makes the product zero: each padded loop must be read by
  // one of the factors.
  auto inputOf = [&](Value v) {
    return isInput(v) ? v : v.getDefiningOp()->getOperand(0);
  };
  DenseSet<unsigned> covered = loopsOf(inputOf(product->getOperand(0)));
  for (unsigned l : loopsOf(inputOf(product->getOperand(1))))
    covered.insert(l);
  if (covered.size() != paddedLoops.size())
    return failure();
  return ReductionKind::Sum;
}

/// Before `op` reduces over a padded dim, the padding of each input read
/// along it becomes the reduction's neutral element: select(mask, x,
/// neutral), the mask a constant vector along the dim.
LogicalResult PadToDivide::addMasks(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // The padded reduction loops: loop -> (padded size, real size).
  DenseMap<unsigned, std::pair<int64_t, int64_t>> padded;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    for (unsigned d = 0; d < map.getNumResults(); ++d) {
      auto dimExpr = dyn_cast<AffineDimExpr>(map.getResult(d));
      if (!dimExpr ||
          iterators[dimExpr.getPosition()] != utils::IteratorType::reduction)
        continue;
      RankedTensorType want = paddedType(input->get());
      int64_t real = original.lookup(input->get())
                         ? original.lookup(input->get()).getDimSize(d)
                         : type.getDimSize(d);
      if (want.getDimSize(d) != real)
        padded[dimExpr.getPosition()] = {want.getDimSize(d), real};
    }
  }
  if (padded.empty())
    return success();
  DenseSet<unsigned> paddedLoops;
  for (auto &entry : padded)
    paddedLoops.insert(entry.first);
  FailureOr<ReductionKind> kind = getMaskKind(op, paddedLoops);
  if (failed(kind))
    return op->emitError()
           << "cannot pad the reduction of this op over a dim that its "
              "sharding splits unevenly (only sums, products, min, max, "
              "logical reductions and contractions of the inputs): pad the "
              "dim in the program, or pass exact-division";
  OpBuilder b(op);
  Location loc = op.getLoc();
  bool zeroIsNeutral = *kind == ReductionKind::Sum ||
                       *kind == ReductionKind::Or ||
                       *kind == ReductionKind::Xor;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value v = input->get();
    auto type = dyn_cast<RankedTensorType>(paddedType(v));
    if (!type)
      continue;
    // Padding made here with zeros along every padded reduction dim of
    // this input needs no mask, where zero is the neutral element.
    AffineMap inputMap = op.getMatchingIndexingMap(input);
    auto zeros = zeroIsNeutral ? zeroPadded.find(v) : zeroPadded.end();
    bool needed = false;
    for (unsigned d = 0; d < inputMap.getNumResults(); ++d) {
      auto dimExpr = dyn_cast<AffineDimExpr>(inputMap.getResult(d));
      if (dimExpr && padded.count(dimExpr.getPosition()) &&
          (zeros == zeroPadded.end() || !zeros->second[d]))
        needed = true;
    }
    if (!needed)
      continue;
    // Where zero is the neutral element, every user of the value reads it
    // with its padding zeroed, masked once where it is defined: the padding
    // matters to no other user, and a weight read plain and transposed stays
    // one value (one gather). A value made here (a window input's pad) has
    // no record of its sizes: masked for this op only, below.
    if (zeroIsNeutral && original.count(v)) {
      input->set(zeroPadding(v));
      continue;
    }
    TypedAttr neutral = neutralOf(*kind, type.getElementType());
    if (!neutral)
      return op->emitError()
             << "cannot pad a reduction of " << type.getElementType();
    AffineMap map = op.getMatchingIndexingMap(input);
    Value masked = v;
    for (unsigned d = 0; d < map.getNumResults(); ++d) {
      auto dimExpr = dyn_cast<AffineDimExpr>(map.getResult(d));
      auto it = dimExpr ? padded.find(dimExpr.getPosition()) : padded.end();
      if (it != padded.end())
        masked = mask(b, loc, masked, d, it->second.second, neutral);
    }
    input->set(masked);
  }
  return success();
}

/// select(i < real, x, neutral) along dim `d` of `x`, at `b`'s point.
Value PadToDivide::mask(OpBuilder &b, Location loc, Value x, unsigned d,
                        int64_t real, TypedAttr neutral) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t size = type.getDimSize(d);
  SmallVector<bool> bits(size, false);
  std::fill(bits.begin(), bits.begin() + real, true);
  auto maskType = RankedTensorType::get({size}, b.getI1Type());
  Value mask = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(maskType, ArrayRef<bool>(bits)));
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, x),
                                       type.getElementType());
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap along = AffineMap::get(rank, 0, getAffineDimExpr(d, ctx), ctx);
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{x, mask}, ValueRange{init},
      ArrayRef<AffineMap>{id, along, id}, parallel,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value n = arith::ConstantOp::create(nb, nloc, neutral);
        Value s = arith::SelectOp::create(nb, nloc, args[1], args[0], n);
        linalg::YieldOp::create(nb, nloc, s);
      });
  made.insert(generic);
  return generic.getResult(0);
}

/// `v` with zeros in its padding, made once where `v` is defined, and read
/// by every user of `v` from then on; `v` itself where its padding is known
/// to be zeros. The result's padding is zeros along every dim.
Value PadToDivide::zeroPadding(Value v) {
  if (auto it = zeroedOf.find(v); it != zeroedOf.end())
    return it->second;
  RankedTensorType real = original.lookup(v);
  auto type = cast<RankedTensorType>(v.getType());
  auto known = zeroPadded.find(v);
  OpBuilder b(v.getContext());
  if (auto arg = dyn_cast<BlockArgument>(v))
    b.setInsertionPointToStart(arg.getOwner());
  else
    b.setInsertionPointAfter(v.getDefiningOp());
  // The users to move, before the masks add their own.
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : v.getUses())
    uses.push_back(&use);
  Value zeroed = v;
  TypedAttr zero = b.getZeroAttr(type.getElementType());
  for (unsigned d = 0; real && d < type.getRank(); ++d) {
    if (type.isDynamicDim(d) || real.getDimSize(d) >= type.getDimSize(d) ||
        (known != zeroPadded.end() && known->second[d]))
      continue;
    zeroed = mask(b, v.getLoc(), zeroed, d, real.getDimSize(d), zero);
  }
  zeroedOf[v] = zeroed;
  if (zeroed == v)
    return v;
  zeroedOf[zeroed] = zeroed;
  original[zeroed] = real;
  zeroPadded[zeroed] = SmallVector<bool>(type.getRank(), true);
  for (OpOperand *use : uses)
    use->set(zeroed);
  return zeroed;
}

/// `v` converted to `to`: sliced where it is larger, padded with zeros
/// where it is smaller.
Value PadToDivide::convert(OpBuilder &b, Location loc, Value v,
                           RankedTensorType to) {
  Value source = v;
  auto from = cast<RankedTensorType>(v.getType());
  if (from == to)
    return v;
  unsigned rank = from.getRank();
  SmallVector<int64_t> smaller(from.getShape());
  bool slice = false, pad = false;
  for (unsigned d = 0; d < rank; ++d) {
    if (to.isDynamicDim(d) || from.isDynamicDim(d))
      continue;
    if (to.getDimSize(d) < from.getDimSize(d)) {
      smaller[d] = to.getDimSize(d);
      slice = true;
    } else if (to.getDimSize(d) > from.getDimSize(d)) {
      pad = true;
    }
  }
  if (slice) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1)), sizes;
    for (auto [d, s] : llvm::enumerate(smaller)) {
      if (ShapedType::isDynamic(s)) {
        auto dim = tensor::DimOp::create(b, loc, v, d);
        made.insert(dim);
        sizes.push_back(dim.getResult());
      } else {
        sizes.push_back(b.getIndexAttr(s));
      }
    }
    auto op = tensor::ExtractSliceOp::create(b, loc, from.clone(smaller), v,
                                             offsets, sizes, strides);
    op->setAttr(kPaddingMark, b.getUnitAttr());
    made.insert(op);
    v = op.getResult();
  }
  if (pad) {
    SmallVector<OpFoldResult> low(rank, b.getIndexAttr(0)), high;
    SmallVector<bool> zeros(rank, false);
    // The source's own padding (a padded argument's, what its caller
    // passed) is not zeros: only a dim that held its real size is.
    RankedTensorType real = original.lookup(source);
    for (unsigned d = 0; d < rank; ++d) {
      bool grows =
          !ShapedType::isDynamic(smaller[d]) && to.getDimSize(d) > smaller[d];
      high.push_back(b.getIndexAttr(grows ? to.getDimSize(d) - smaller[d] : 0));
      zeros[d] = grows && (!real || real.getDimSize(d) >= smaller[d]);
    }
    Value zero =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(to.getElementType()));
    auto op = tensor::PadOp::create(b, loc, to, v, low, high, zero);
    op->setAttr(kPaddingMark, b.getUnitAttr());
    made.insert(op);
    v = op.getResult();
    zeroPadded[v] = std::move(zeros);
  }
  return v;
}

/// A dense constant of `to`'s shape: `attr` with zeros after it.
static DenseElementsAttr padConstant(DenseIntOrFPElementsAttr attr,
                                     RankedTensorType to) {
  if (attr.isSplat())
    return DenseElementsAttr::get(to, attr.getSplatValue<Attribute>());
  auto from = cast<RankedTensorType>(attr.getType());
  SmallVector<Attribute> values(attr.getValues<Attribute>());
  Attribute zero = Builder(attr.getContext()).getZeroAttr(to.getElementType());
  SmallVector<Attribute> out(to.getNumElements(), zero);
  SmallVector<int64_t> idx(from.getRank(), 0);
  for (Attribute value : values) {
    int64_t flat = 0;
    for (unsigned d = 0; d < idx.size(); ++d)
      flat = flat * to.getDimSize(d) + idx[d];
    out[flat] = value;
    for (int64_t d = idx.size() - 1; d >= 0; --d) {
      if (++idx[d] < from.getDimSize(d))
        break;
      idx[d] = 0;
    }
  }
  return DenseElementsAttr::get(to, out);
}

void PadToDivide::requireWindowLoops() {
  for (auto &[op, loops] : windowLoops) {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    for (auto [loop, size] : loops)
      for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
        AffineMap map = linalgOp.getMatchingIndexingMap(&init);
        for (auto [d, e] : llvm::enumerate(map.getResults())) {
          auto dim = dyn_cast<AffineDimExpr>(e);
          if (!dim || dim.getPosition() != loop)
            continue;
          // A multiple of `size` at least the loop's size: `size` itself.
          unsigned c = find(slotOf(init.get(), d));
          multiple[c] = std::lcm(multiple[c], size);
        }
      }
  }
}

bool mlir::mesh::isPaddingSlice(tensor::ExtractSliceOp slice) {
  return slice->hasAttr(kPaddingMark) &&
         slice.getSourceType().getRank() == slice.getType().getRank() &&
         slice.getSourceType().hasStaticShape() &&
         llvm::all_of(
             slice.getMixedOffsets(),
             [](OpFoldResult o) { return isConstantIntValue(o, 0); }) &&
         llvm::all_of(
             slice.getMixedStrides(),
             [](OpFoldResult o) { return isConstantIntValue(o, 1); }) &&
         slice.getType().hasStaticShape();
}

void PadToDivide::returnPaddedResults(Operation *op) {
  auto returnsOnly = [&](Operation *pad) {
    return llvm::all_of(pad->getUsers(), [&](Operation *user) {
      return user->hasTrait<OpTrait::ReturnLike>() &&
             user->getParentOp() == fn.getOperation();
    });
  };
  for (OpResult r : op->getResults())
    for (Operation *user : llvm::make_early_inc_range(r.getUsers())) {
      auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!slice || !isPaddingSlice(slice))
        continue;
      for (Operation *u : llvm::make_early_inc_range(slice->getUsers())) {
        auto pad = dyn_cast<tensor::PadOp>(u);
        if (!pad || !pad->hasAttr(kPaddingMark) ||
            pad.getResultType() != r.getType() || !returnsOnly(pad) ||
            llvm::any_of(pad.getStaticLow(), [](int64_t l) { return l != 0; }))
          continue;
        pad.getResult().replaceAllUsesWith(r);
        made.erase(pad);
        pad->erase();
      }
      if (slice->use_empty()) {
        made.erase(slice);
        slice->erase();
      }
    }
}

void PadToDivide::fitWindowInputs() {
  for (auto &[op, loops] : windowLoops) {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    // How much each padded loop grew, from an init dim it indexes.
    DenseMap<unsigned, int64_t> growth;
    for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
      AffineMap map = linalgOp.getMatchingIndexingMap(&init);
      RankedTensorType was = original.lookup(init.get());
      auto now = cast<RankedTensorType>(init.get().getType());
      for (auto [d, e] : llvm::enumerate(map.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(e); dim && was)
          growth[dim.getPosition()] = now.getDimSize(d) - was.getDimSize(d);
    }
    OpBuilder b(op);
    for (OpOperand *input : linalgOp.getDpsInputOperands()) {
      auto type = dyn_cast<RankedTensorType>(input->get().getType());
      if (!type)
        continue;
      AffineMap map = linalgOp.getMatchingIndexingMap(input);
      RankedTensorType was = original.lookup(input->get());
      SmallVector<int64_t> shape(type.getShape());
      bool windowed = false;
      for (auto [d, e] : llvm::enumerate(map.getResults())) {
        if (isa<AffineDimExpr>(e))
          continue;
        for (auto [loop, size] : loops) {
          std::optional<int64_t> c = getLoopCoefficient(map, e, loop);
          if (int64_t grew = growth.lookup(loop); c && grew > 0 && *c > 0) {
            shape[d] = (was ? was : type).getDimSize(d) + *c * grew;
            windowed = true;
          }
        }
      }
      if (!windowed)
        continue;
      // The elements past the old end feed only padded outputs: a prefix
      // of a larger value (a padded window op's output, sliced back for
      // this op) is read whole instead of padded again.
      Value source = input->get();
      auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
      if (slice && isPaddingSlice(slice))
        source = slice.getSource();
      input->set(convert(b, op->getLoc(), source, type.clone(shape)));
      if (source != input->get() && slice && slice->use_empty()) {
        made.erase(slice);
        slice->erase();
      }
    }
    returnPaddedResults(op);
  }
}

LogicalResult PadToDivide::run() {
  // Requirements: the annotations of the arguments, results and ops.
  Region &body = fn.getFunctionBody();
  for (BlockArgument arg : body.getArguments())
    require(arg,
            fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), shardingName),
            fn);
  fn.walk([&](Operation *op) {
    if (auto shard = dyn_cast<ShardOp>(op)) {
      require(shard.getResult(), shard.getSharding(), op);
    } else if (op->hasTrait<OpTrait::ReturnLike>() &&
               op->getParentOp() == fn.getOperation()) {
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        require(v, fn.getResultAttrOfType<ShardingAttr>(i, shardingName), fn);
    } else if (op->getDiscardableAttr(shardingName)) {
      for (OpResult r : op->getResults())
        require(r, getResultAnnotation(op, r.getResultNumber(), shardingName),
                op);
    }
  });
  // The classes. (A function without requirements may still call one
  // whose signature changed; retype converts at the call.)
  fn.walk([&](Operation *op) { uniteOp(op); });
  requireWindowLoops();
  for (unsigned i = 0; i < parent.size(); ++i)
    if (multiple[i] > 1 && find(i) == i && sizeOf[i] < 0) {
      // The annotation names the value; the sizes say why.
      return fn.emitError()
             << "a dim split unevenly by an annotation is tied, through the "
                "ops of @"
             << fn.getName()
             << ", to dims of other or dynamic sizes: it cannot be padded "
                "(pass exact-division for the error that names it)";
    }
  for (Value v : values)
    original[v] = cast<RankedTensorType>(v.getType());
  SmallVector<linalg::LinalgOp> reductions;
  fn.walk([&](linalg::LinalgOp op) {
    if (kindOf(op) == Kind::Keeps && op.getNumReductionLoops() != 0)
      reductions.push_back(op);
  });
  if (failed(retype()))
    return failure();
  fitWindowInputs();
  for (linalg::LinalgOp op : reductions)
    if (failed(addMasks(op)))
      return failure();
  recordDataSizes();
  return success();
}

/// The sizes of each padded value's data (its type before padding), for
/// partitioning's collectives to move only the data.
void PadToDivide::recordDataSizes() {
  // The data of a value the pass made (a slice or pad at the start of a
  // padded value, converting it to another class's sizes) is its source's,
  // cut to its own sizes.
  DenseMap<Value, SmallVector<int64_t>> made;
  auto dataOf = [&](Value v) -> std::optional<SmallVector<int64_t>> {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return std::nullopt;
    if (auto it = original.find(v); it != original.end()) {
      if (it->second.getRank() != type.getRank())
        return std::nullopt;
      return SmallVector<int64_t>(it->second.getShape());
    }
    if (auto it = made.find(v); it != made.end())
      return it->second;
    return std::nullopt;
  };
  auto fromSource = [&](Operation *op, Value source) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    std::optional<SmallVector<int64_t>> data = dataOf(source);
    if (!type || !type.hasStaticShape() || !data ||
        data->size() != size_t(type.getRank()))
      return;
    SmallVector<int64_t> cut(*data);
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      cut[d] = cut[d] < 0 ? size : std::min(cut[d], size);
    made[op->getResult(0)] = cut;
  };
  fn.walk([&](Operation *op) {
    if (original.count(op->getNumResults() ? op->getResult(0) : Value()))
      return;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (slice.hasZeroOffset() && slice.hasUnitStride())
        fromSource(op, slice.getSource());
    } else if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      if (llvm::all_of(pad.getStaticLow(), [](int64_t l) { return l == 0; }))
        fromSource(op, pad.getSource());
    }
  });
  auto sizesOf = [&](Value v) -> DenseI64ArrayAttr {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    std::optional<SmallVector<int64_t>> data = dataOf(v);
    if (!type || !data || ArrayRef<int64_t>(*data) == type.getShape())
      return {};
    return DenseI64ArrayAttr::get(v.getContext(), *data);
  };
  Builder b(fn.getContext());
  auto record = [&](Operation *op, ValueRange values) {
    SmallVector<Attribute> sizes;
    bool any = false;
    for (Value v : values) {
      DenseI64ArrayAttr s = sizesOf(v);
      any |= bool(s);
      sizes.push_back(s ? s : b.getDenseI64ArrayAttr({}));
    }
    if (any)
      op->setDiscardableAttr(kDataSizesName, b.getArrayAttr(sizes));
    return any;
  };
  bool anyOp = false;
  fn.walk([&](Operation *op) {
    if (op != fn.getOperation())
      anyOp |= record(op, op->getResults());
  });
  // The function carries the attribute whenever an op of it does (for its
  // arguments, or empty), so partitioning strips only where padding was.
  if (!record(fn, fn.getArguments()) && anyOp)
    fn->setDiscardableAttr(
        kDataSizesName, b.getArrayAttr(SmallVector<Attribute>(
                            fn.getNumArguments(), b.getDenseI64ArrayAttr({}))));
}

FunctionOpInterface PadToDivide::calleeOf(Operation *op) {
  auto call = dyn_cast<CallOpInterface>(op);
  return call ? dyn_cast_or_null<FunctionOpInterface>(
                    call.resolveCallableInTable(&tables))
              : FunctionOpInterface();
}

/// Converts `v` (of its current type) to `target` with `b`; the uses move to
/// the convert.
Value PadToDivide::convertUses(Value v, RankedTensorType target, OpBuilder &b,
                               Location loc) {
  Value c = convert(b, loc, v, target);
  if (c == v)
    return c;
  RankedTensorType before = original.lookup(v);
  original[c] = before;
  SmallPtrSet<Operation *, 4> keep;
  for (Operation *user : v.getUsers())
    if (made.contains(user))
      keep.insert(user);
  v.replaceAllUsesExcept(c, keep);
  return c;
}

/// Gives calls' results their callees' new types; returns them (with their
/// former types in `original`).
SmallVector<Value> PadToDivide::retypeCallResults() {
  SmallVector<Value> results;
  fn.walk([&](CallOpInterface call) {
    FunctionOpInterface callee = calleeOf(call);
    auto it = callee ? newResultTypes.find(callee) : newResultTypes.end();
    if (it == newResultTypes.end())
      return;
    for (OpResult r : call->getResults()) {
      RankedTensorType t = it->second[r.getResultNumber()];
      if (!t || t == r.getType())
        continue;
      if (!original.count(r))
        original[r] = cast<RankedTensorType>(r.getType());
      results.push_back(r);
      r.setType(t);
    }
  });
  return results;
}

/// Gives `v`, made by `def` (a boundary: its type is `v`'s current one),
/// the type `target` through a convert after it; an uneven annotation of
/// the result moves to the padded value.
LogicalResult PadToDivide::convertResult(Operation *def, Value v,
                                         RankedTensorType target) {
  OpBuilder b(def->getContext());
  b.setInsertionPointAfter(def);
  Value c = convertUses(v, target, b, def->getLoc());
  Attribute a = def->getDiscardableAttr(shardingName);
  unsigned r = cast<OpResult>(v).getResultNumber();
  if (!a || c == v ||
      getUnevenSplits(meshes, def, def->getResult(r).getType(),
                      getResultAnnotation(def, r, shardingName))
          .empty())
    return success();
  if (def->getNumResults() != 1)
    return def->emitError()
           << "cannot pad a result of this op that its annotation splits "
              "unevenly (an op of several results): pad the dim in the "
              "program, or pass exact-division";
  c.getDefiningOp()->setDiscardableAttr(shardingName, a);
  def->removeDiscardableAttr(shardingName);
  return success();
}

/// Gives `v` the type `target` where it is made: in place for a tied region
/// argument and the result of an op that keeps shapes or whose values tie
/// up; the function's entry arguments take their signature type and are
/// converted at the entry; any other value (a boundary's result, a
/// successor block's argument) is converted where it is made.
LogicalResult PadToDivide::retypeValue(Value v, RankedTensorType target) {
  Operation *def = v.getDefiningOp();
  auto arg = dyn_cast<BlockArgument>(v);
  Block &entry = fn.getFunctionBody().front();
  if (arg && arg.getOwner() == &entry) {
    arg.setType(
        newArgTypes.find(fn.getOperation())->second[arg.getArgNumber()]);
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    convertUses(arg, target, b, arg.getLoc());
    return success();
  }
  bool inPlace = arg ? tied.contains(arg.getOwner()->getParentOp())
                     : (!calleeOf(def) &&
                        (kindOf(def) == Kind::Keeps || tied.contains(def)));
  if (inPlace) {
    if (auto constant = dyn_cast_or_null<arith::ConstantOp>(def)) {
      auto attr = dyn_cast<DenseIntOrFPElementsAttr>(constant.getValue());
      if (!attr)
        return constant.emitError("cannot pad this constant");
      constant.setValueAttr(padConstant(attr, target));
    }
    v.setType(target);
    return success();
  }
  if (arg) {
    OpBuilder b = OpBuilder::atBlockBegin(arg.getOwner());
    convertUses(arg, target, b, arg.getLoc());
    return success();
  }
  return convertResult(def, v, target);
}

/// Converts the operands of a boundary `op` to the types it had (a callee's
/// new argument types, the function's new result types for its return).
void PadToDivide::convertOperands(Operation *op) {
  bool isReturn = op->hasTrait<OpTrait::ReturnLike>() &&
                  op->getParentOp() == fn.getOperation();
  if (made.contains(op) || kindOf(op) == Kind::Keeps || tied.contains(op) ||
      (!isReturn && isa<RegionBranchTerminatorOpInterface>(op) &&
       tied.contains(op->getParentOp())))
    return;
  const SmallVector<RankedTensorType> &sigResults =
      newResultTypes.find(fn.getOperation())->second;
  FunctionOpInterface callee = calleeOf(op);
  auto calleeArgs = callee ? newArgTypes.find(callee) : newArgTypes.end();
  // (An empty range has no first operand to ask.)
  OperandRange callArgs = callee
                              ? cast<CallOpInterface>(op).getArgOperands()
                              : OperandRange(op->getOperands().take_front(0));
  unsigned firstArg = callArgs.empty() ? 0 : callArgs.getBeginOperandIndex();
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    unsigned i = operand.getOperandNumber();
    RankedTensorType to;
    if (isReturn && i < sigResults.size())
      to = sigResults[i];
    else if (calleeArgs != newArgTypes.end() && i >= firstArg &&
             i - firstArg < calleeArgs->second.size())
      to = calleeArgs->second[i - firstArg];
    else if (auto it = original.find(operand.get()); it != original.end())
      to = it->second;
    if (!to || to == type)
      continue;
    OpBuilder b(op);
    operand.set(convert(b, op->getLoc(), operand.get(), to));
  }
}

/// Gives each value of a padded class its padded type, and each boundary
/// the types it had.
LogicalResult PadToDivide::retype() {
  DenseMap<Value, RankedTensorType> want;
  for (Value v : values) {
    RankedTensorType p = paddedType(v);
    if (p != original[v])
      want[v] = p;
  }
  SmallVector<Value> produced(values.begin(), values.end());
  SmallVector<Value> callResults = retypeCallResults();
  for (Value v : produced) {
    auto it = want.find(v);
    if (it == want.end() || llvm::is_contained(callResults, v))
      continue;
    if (failed(retypeValue(v, it->second)))
      return failure();
  }
  // A call's result takes its padded type, or, if nothing pads it, the
  // type it had.
  for (Value r : callResults) {
    auto it = want.find(r);
    if (failed(convertResult(r.getDefiningOp(), r,
                             it != want.end() ? it->second : original[r])))
      return failure();
  }
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops)
    convertOperands(op);
  return success();
}

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

void mlir::mesh::stripPaddingMarks(ModuleOp module) {
  module.walk([](Operation *op) {
    if (isa<tensor::ExtractSliceOp, tensor::PadOp>(op))
      op->removeAttr(kPaddingMark);
  });
}

SmallVector<UnevenWindow>
mlir::mesh::paddableWindows(ModuleOp module, ArrayRef<UnevenWindow> windows) {
  if (windows.empty())
    return {};
  // On a copy, silently: a window whose padding reaches a reduction that
  // cannot be masked, or dims of other sizes, is left as it was (its input
  // gathered) rather than failing a program that splits nothing unevenly.
  IRMapping mapping;
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone(mapping)));
  SmallVector<UnevenWindow> mapped;
  for (UnevenWindow w : windows) {
    w.op = mapping.lookupOrNull(w.op);
    if (w.op)
      mapped.push_back(w);
  }
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  SymbolTableCollection tables;
  if (mapped.size() != windows.size() ||
      failed(padNonDividingDims(*copy, tables, mapped)) ||
      failed(verify(*copy)))
    return {};
  return SmallVector<UnevenWindow>(windows);
}

/// Remarks on each op result and constraint whose annotation splits a dim
/// unevenly; whether there is one.
static bool remarkUnevenOps(ModuleOp module, MeshCache &meshes,
                            StringAttr name) {
  bool any = false;
  module.walk([&](Operation *op) {
    auto check = [&](Value v, ShardingAttr s) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      for (auto [d, n] :
           llvm::enumerate(getUnevenSplits(meshes, op, v.getType(), s))) {
        if (n == 0)
          continue;
        op->emitRemark() << "dim " << d << " of size " << type.getDimSize(d)
                         << " does not divide by the " << n
                         << " devices of axes " << s.getDims()[d] << ": padded";
        any = true;
      }
    };
    if (auto shard = dyn_cast<ShardOp>(op))
      check(shard.getResult(), shard.getSharding());
    else if (op->getDiscardableAttr(name))
      for (OpResult r : op->getResults())
        check(r, getResultAnnotation(op, r.getResultNumber(), name));
  });
  return any;
}

/// Remarks on each window loop padded; whether there is one.
static bool remarkWindows(ArrayRef<UnevenWindow> windows) {
  for (const UnevenWindow &w : windows) {
    auto linalgOp = cast<linalg::LinalgOp>(w.op);
    int64_t size = linalgOp.getStaticLoopRanges()[w.loop];
    w.op->emitRemark() << "loop " << w.loop << " of size " << size
                       << " reads an input through a window whose dim is "
                          "split over the "
                       << w.devices << " devices of axes " << w.axes
                       << ": padded to " << w.size << " (blocks of "
                       << w.size / w.devices
                       << "), the input padded after its end to match, so "
                          "each device computes its block from its own "
                          "block and a halo";
  }
  return !windows.empty();
}

LogicalResult mlir::mesh::padNonDividingDims(ModuleOp module,
                                             SymbolTableCollection &tables,
                                             ArrayRef<UnevenWindow> windows) {
  MLIRContext *ctx = module.getContext();
  StringAttr name = StringAttr::get(ctx, MeshDialect::getShardingAttrName());
  MeshCache meshes(tables);
  // The signatures first: a dim an argument's or result's own annotation
  // splits unevenly is padded in it.
  DenseMap<Operation *, SmallVector<RankedTensorType>> argTypes, resultTypes;
  bool any = false;
  auto padTo = [&](FunctionOpInterface fn, Type t, ShardingAttr s,
                   StringRef what, unsigned index) -> RankedTensorType {
    auto type = dyn_cast<RankedTensorType>(t);
    SmallVector<int64_t> uneven = getUnevenSplits(meshes, fn, t, s);
    if (uneven.empty())
      return type;
    SmallVector<int64_t> shape(type.getShape());
    for (auto [d, n] : llvm::enumerate(uneven)) {
      if (n == 0)
        continue;
      int64_t padded = (shape[d] + n - 1) / n * n;
      InFlightDiagnostic remark = emitRemark(
          fn.isExternal() ? fn.getLoc() : fn.getFunctionBody().getLoc());
      remark << what << " " << index << " of @" << fn.getName() << ": dim " << d
             << " of size " << shape[d] << " does not divide by the " << n
             << " devices of axes " << s.getDims()[d] << ": padded to "
             << padded << " (blocks of " << padded / n << ", "
             << padded - shape[d]
             << " elements of padding; pass exact-division to make this an "
                "error)";
      shape[d] = padded;
      any = true;
    }
    return type.clone(shape);
  };
  for (auto fn : module.getOps<FunctionOpInterface>()) {
    SmallVector<RankedTensorType> args, results;
    if (!isa<FunctionType>(fn.getFunctionType())) {
      args.resize(fn.getNumArguments());
      results.resize(fn.getNumResults());
      argTypes[fn] = std::move(args);
      resultTypes[fn] = std::move(results);
      continue;
    }
    for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
      args.push_back(padTo(fn, t, fn.getArgAttrOfType<ShardingAttr>(i, name),
                           "argument", i));
    for (auto [i, t] : llvm::enumerate(fn.getResultTypes()))
      results.push_back(padTo(
          fn, t, fn.getResultAttrOfType<ShardingAttr>(i, name), "result", i));
    argTypes[fn] = std::move(args);
    resultTypes[fn] = std::move(results);
  }
  // Ops and constraints may split unevenly too; and windows are padded.
  any |= remarkUnevenOps(module, meshes, name);
  any |= remarkWindows(windows);
  if (!any)
    return success();
  for (auto fn :
       llvm::make_early_inc_range(module.getOps<FunctionOpInterface>())) {
    if (fn.isExternal())
      continue;
    PadToDivide pad(fn, meshes, name, argTypes, resultTypes, tables, windows);
    if (failed(pad.run()))
      return failure();
  }
  for (auto fn : module.getOps<FunctionOpInterface>()) {
    SmallVector<Type> args(argTypes[fn].begin(), argTypes[fn].end());
    SmallVector<Type> results(resultTypes[fn].begin(), resultTypes[fn].end());
    for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
      if (!args[i])
        args[i] = t;
    for (auto [i, t] : llvm::enumerate(fn.getResultTypes()))
      if (!results[i])
        results[i] = t;
    if (ArrayRef<Type>(args) == fn.getArgumentTypes() &&
        ArrayRef<Type>(results) == fn.getResultTypes())
      continue;
    // (Only a builtin function type is rewritten; padTo made no change to
    // another kind, an llvm.func's.)
    fn.setType(FunctionType::get(module.getContext(), args, results));
  }
  return success();
}
