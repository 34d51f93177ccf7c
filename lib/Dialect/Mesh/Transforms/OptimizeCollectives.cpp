//===- OptimizeCollectives.cpp - fewer, cheaper collectives ---------------===//
//
// Three rewrites on per-device programs: an all_slice of the result of an
// all_reduce over the same axes is a reduce_scatter, also when elementwise
// ops, broadcasts, transposes and reshapes stand between them (the slice
// moves up through them: partitioning reduces a partial sum where an
// elementwise op needs it whole and slices it where a later consumer wants
// it split, so in Megatron-style sequence parallelism the bias add between
// the two hides the pair); size-1 axes leave collectives; independent small
// all_reduces of one block with the same group, reduction and element type
// are combined into one (flatten, concatenate, reduce, split).
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_OPTIMIZECOLLECTIVES
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// How a value is sliced over the devices of a group: along dim `dim`, or,
/// with a `view`, along sub-dim `sub` of dim `dim` seen as the row-major
/// dims `view`. A view comes from an expand_shape whose sliced dim has a
/// larger dim before it in its group: block k of [B, S] along S is B pieces
/// of [B*S], no slice of it, but it is a slice of [B*S] expanded to [B, S]
/// and collapsed back. The sliced value keeps its rank either way.
struct SliceOf {
  int64_t dim;
  SmallVector<int64_t, 4> view = {};
  int64_t sub = 0;
};

/// Moves an all_slice up to the all_reduce whose result it slices, through
/// the ops in between, and makes the pair one reduce_scatter:
///
///   all_slice(f(all_reduce(x), y)) = f(reduce_scatter(x), all_slice(y))
///
/// for `f` an elementwise op, a broadcast, a transpose, or a reshape.
/// Slicing commutes with each of them: block k of f's result along the
/// sliced dim is f of block k of the operands along the dims that dim maps
/// to (operands that do not have it, a broadcast bias, are taken whole).
/// Through a reshape the sliced dim must be its group's first dim of size
/// other than 1; an expand_shape's later dim is followed with a view
/// (SliceOf), and the reduction and the other operands are then expanded,
/// sliced and collapsed back. Other operands are sliced with all_slice,
/// which is a local copy. Every value on the path must be used by the next
/// op on it alone, so that the old ops die; the rewrite is made only when
/// the path reaches an all_reduce over the slice's axes, so that it buys a
/// reduce_scatter and changes nothing otherwise.
class ReduceScatterFromSlice : public OpRewritePattern<AllSliceOp> {
public:
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    if (!isa<RankedTensorType>(slice.getType()))
      return failure();
    Path path(slice);
    SliceOf start{static_cast<int64_t>(slice.getSliceDim())};
    if (!path.reaches(slice.getInput(), start, slice, 0))
      return failure();
    Value sliced =
        path.rewrite(rewriter, slice.getInput(), start, slice.getType());
    rewriter.replaceOp(slice, sliced);
    // Users first: each old op's only users came after it on the path.
    for (Operation *old : llvm::reverse(path.replaced))
      if (old->use_empty())
        rewriter.eraseOp(old);
    return success();
  }

private:
  /// For each operand of an op, how it is sliced (nothing: taken whole).
  using OperandSlices = SmallVector<std::optional<SliceOf>>;

  /// The ops a slice of one all_slice moves through.
  struct Path {
    explicit Path(AllSliceOp slice)
        : mesh(slice.getMeshAttr()), axes(slice.getAxes()) {
      if (std::optional<int64_t> n = getStaticGroupSize(
              cast<CollectiveOpInterface>(slice.getOperation())))
        groupSize = *n;
    }

    /// True when slicing `v` as `s` moves up to an all_reduce over the
    /// slice's axes: `v` is that reduction's result, or the result of an op
    /// the slice moves through one of whose operands reaches one. `user` is
    /// the op that would take `v` sliced; it must be `v`'s only user.
    bool reaches(Value v, const SliceOf &s, Operation *user, unsigned depth) {
      if (depth > kMaxDepth || !onlyUsedBy(v, user))
        return false;
      Operation *def = v.getDefiningOp();
      if (!def)
        return false;
      if (auto reduce = dyn_cast<AllReduceOp>(def))
        return reduce.getMeshAttr() == mesh && reduce.getAxes() == axes &&
               (s.view.empty() || groupSize);
      std::optional<OperandSlices> slices = getOperandSlices(def, s);
      if (!slices)
        return false;
      for (auto [operand, slice] : llvm::zip(def->getOperands(), *slices))
        if (slice && isFollowed(def, operand, *slices) &&
            reaches(operand, *slice, def, depth + 1))
          return true;
      return false;
    }

    /// `v` sliced as `s` (of type `slicedType`), made by moving the slice up
    /// to the reductions `reaches` finds; the ops it replaces go to
    /// `replaced`.
    Value rewrite(PatternRewriter &rewriter, Value v, const SliceOf &s,
                  Type slicedType) {
      // A value an op reads twice (`x + x`) is sliced once.
      if (Value done = rewritten.lookup(v))
        return done;
      Operation *def = v.getDefiningOp();
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(def);
      if (auto reduce = dyn_cast<AllReduceOp>(def)) {
        replaced.push_back(reduce);
        return rewritten[v] = sliceAs(
                   rewriter, def->getLoc(), reduce.getInput(), s,
                   [&](Value input, int64_t dim, RankedTensorType type) {
                     return ReduceScatterOp::create(
                         rewriter, def->getLoc(), type, input, mesh, axes,
                         rewriter.getI64IntegerAttr(dim),
                         reduce.getReductionAttr(), IntegerAttr());
                   });
      }
      OperandSlices slices = *getOperandSlices(def, s);
      SmallVector<Value> operands;
      for (auto [operand, slice] : llvm::zip(def->getOperands(), slices)) {
        auto type = dyn_cast<RankedTensorType>(operand.getType());
        if (!slice) {
          operands.push_back(operand);
        } else if (isFollowed(def, operand, slices) &&
                   reaches(operand, *slice, def, /*depth=*/0)) {
          operands.push_back(rewrite(rewriter, operand, *slice,
                                     getSlicedType(type, slice->dim)));
        } else if (auto empty = operand.getDefiningOp<tensor::EmptyOp>();
                   empty && getSlicedType(type, slice->dim).hasStaticShape()) {
          // An init whose values the op does not read: made again.
          RankedTensorType made = getSlicedType(type, slice->dim);
          operands.push_back(tensor::EmptyOp::create(
              rewriter, def->getLoc(), made.getShape(), made.getElementType()));
        } else {
          operands.push_back(sliceAs(
              rewriter, def->getLoc(), operand, *slice,
              [&](Value input, int64_t dim, RankedTensorType type) {
                return AllSliceOp::create(rewriter, def->getLoc(), type, input,
                                          mesh, axes,
                                          rewriter.getI64IntegerAttr(dim));
              }));
        }
      }
      rewriter.setInsertionPoint(def);
      Operation *made = nullptr;
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
        SmallVector<OpFoldResult> shape = expand.getMixedOutputShape();
        shape[s.dim] = rewriter.getIndexAttr(
            cast<RankedTensorType>(slicedType).getDimSize(s.dim));
        made = tensor::ExpandShapeOp::create(
            rewriter, def->getLoc(), slicedType, operands.front(),
            expand.getReassociationIndices(), shape);
      } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
        made = tensor::CollapseShapeOp::create(
            rewriter, def->getLoc(), slicedType, operands.front(),
            collapse.getReassociationIndices());
      } else {
        made = mlir::clone(rewriter, def, {slicedType}, operands);
      }
      replaced.push_back(def);
      return rewritten[v] = made->getResult(0);
    }

    /// How each operand of `op` is sliced when its result is sliced as `s`,
    /// or nothing when the slice cannot move above `op`.
    std::optional<OperandSlices> getOperandSlices(Operation *op,
                                                  const SliceOf &s) {
      if (op->getNumResults() != 1 || !groupSize)
        return std::nullopt;
      std::optional<OperandSlices> slices;
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
        slices = getLinalgOperandSlices(linalgOp, s);
      else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
        slices = getExpandOperandSlices(expand, s);
      else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
        slices = getCollapseOperandSlices(collapse, s);
      else if (OpTrait::hasElementwiseMappableTraits(op) &&
               isMemoryEffectFree(op) && op->getNumRegions() == 0)
        slices = getElementwiseOperandSlices(op, s);
      // A view needs the sizes of the dims it expands.
      if (slices && !s.view.empty())
        for (auto [operand, slice] : llvm::zip(op->getOperands(), *slices))
          if (slice && cast<RankedTensorType>(operand.getType())
                           .isDynamicDim(slice->dim))
            return std::nullopt;
      return slices;
    }

    static OperandSlices getElementwiseOperandSlices(Operation *op,
                                                     const SliceOf &s) {
      OperandSlices slices;
      for (Type t : op->getOperandTypes())
        slices.push_back(isa<RankedTensorType>(t) ? std::optional(s)
                                                  : std::nullopt);
      return slices;
    }

    /// A linalg op whose loops are all parallel, whose body does not read
    /// its indices, whose result is written through a permutation and whose
    /// operands are read through projections (broadcasts, transposes).
    static std::optional<OperandSlices>
    getLinalgOperandSlices(linalg::LinalgOp op, const SliceOf &s) {
      if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
          op.getNumParallelLoops() != op.getNumLoops() ||
          op.hasIndexSemantics())
        return std::nullopt;
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      AffineMap result = maps[op.getDpsInitOperand(0)->getOperandNumber()];
      if (!result.isPermutation())
        return std::nullopt;
      AffineExpr loop =
          getAffineDimExpr(result.getDimPosition(s.dim), op.getContext());
      OperandSlices slices;
      for (OpOperand &operand : op->getOpOperands()) {
        AffineMap map = maps[operand.getOperandNumber()];
        if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
          return std::nullopt;
        std::optional<SliceOf> slice;
        if (isa<RankedTensorType>(operand.get().getType()))
          for (unsigned k = 0; k < map.getNumResults(); ++k)
            if (map.getResult(k) == loop)
              slice = SliceOf{k, s.view, s.sub};
        slices.push_back(slice);
      }
      return slices;
    }

    /// The source dim of the sliced dim's group: sliced directly when the
    /// dims before it in the group have size 1, else through a view of the
    /// group's sizes.
    std::optional<OperandSlices>
    getExpandOperandSlices(tensor::ExpandShapeOp op, const SliceOf &s) const {
      RankedTensorType type = op.getResultType();
      if (!s.view.empty() || !op.getSrcType().hasStaticShape() ||
          !type.hasStaticShape() || type.getDimSize(s.dim) % *groupSize != 0)
        return std::nullopt;
      for (auto [g, group] : llvm::enumerate(op.getReassociationIndices())) {
        auto *at = llvm::find(group, s.dim);
        if (at == group.end())
          continue;
        SliceOf slice{static_cast<int64_t>(g)};
        if (llvm::any_of(llvm::make_range(group.begin(), at),
                         [&](int64_t d) { return type.getDimSize(d) != 1; })) {
          for (int64_t d : group)
            slice.view.push_back(type.getDimSize(d));
          slice.sub = at - group.begin();
        }
        return OperandSlices{slice};
      }
      return std::nullopt;
    }

    /// The first source dim of size other than 1 in the group of the sliced
    /// dim, when it divides by the devices: block k of the collapsed dim is
    /// then block k of that dim.
    std::optional<OperandSlices>
    getCollapseOperandSlices(tensor::CollapseShapeOp op,
                             const SliceOf &s) const {
      RankedTensorType src = op.getSrcType();
      if (!s.view.empty() || !src.hasStaticShape() ||
          !op.getResultType().hasStaticShape())
        return std::nullopt;
      // A local: the loop would otherwise range over a temporary's element.
      SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
      for (int64_t d : groups[s.dim]) {
        if (src.getDimSize(d) == 1)
          continue;
        if (src.getDimSize(d) % *groupSize != 0)
          return std::nullopt;
        return OperandSlices{SliceOf{d}};
      }
      return std::nullopt;
    }

    /// True when the path may go on through `operand` of `op`: every
    /// operand of `op` that is the same value is sliced along the same
    /// dim (a value read twice, as `x + x`, is sliced once).
    static bool isFollowed(Operation *op, Value operand,
                           ArrayRef<std::optional<SliceOf>> slices) {
      std::optional<int64_t> first;
      for (auto [other, slice] : llvm::zip(op->getOperands(), slices)) {
        if (other != operand)
          continue;
        int64_t d = slice ? slice->dim : -1;
        if (first && *first != d)
          return false;
        first = d;
      }
      return true;
    }

    /// True when every use of `v` is in `user`.
    static bool onlyUsedBy(Value v, Operation *user) {
      return llvm::all_of(v.getUsers(),
                          [&](Operation *u) { return u == user; });
    }

    RankedTensorType getSlicedType(RankedTensorType type, int64_t dim) const {
      SmallVector<int64_t> shape(type.getShape());
      if (!ShapedType::isDynamic(shape[dim]))
        shape[dim] = groupSize ? shape[dim] / *groupSize : ShapedType::kDynamic;
      return type.clone(shape);
    }

    /// `make` (a collective that slices `input` along `dim` to `type`)
    /// applied to `v` as `s` says: directly, or, with a view, to `v`
    /// expanded to the view, and collapsed back.
    Value
    sliceAs(PatternRewriter &rewriter, Location loc, Value v, const SliceOf &s,
            function_ref<Value(Value, int64_t, RankedTensorType)> make) const {
      auto type = cast<RankedTensorType>(v.getType());
      if (s.view.empty())
        return make(v, s.dim, getSlicedType(type, s.dim));
      SmallVector<int64_t> shape(type.getShape().take_front(s.dim));
      SmallVector<ReassociationIndices> groups;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        ReassociationIndices &group = groups.emplace_back();
        for (int64_t k = 0, e = d == s.dim ? s.view.size() : 1; k < e; ++k)
          group.push_back(d + k + (d > s.dim ? s.view.size() - 1 : 0));
      }
      llvm::append_range(shape, s.view);
      llvm::append_range(shape, type.getShape().drop_front(s.dim + 1));
      Value expanded = tensor::ExpandShapeOp::create(
          rewriter, loc, type.clone(shape), v, groups);
      Value sliced = make(expanded, s.dim + s.sub,
                          getSlicedType(type.clone(shape), s.dim + s.sub));
      return tensor::CollapseShapeOp::create(
          rewriter, loc, getSlicedType(type, s.dim), sliced, groups);
    }

    /// Paths longer than this are not searched (the search is exhaustive
    /// over the operands, so long chains of wide ops would be slow).
    static constexpr unsigned kMaxDepth = 32;

    FlatSymbolRefAttr mesh;
    ArrayAttr axes;
    std::optional<int64_t> groupSize;
    /// The ops the rewrite replaced, producers before their users.
    SmallVector<Operation *> replaced;
    /// Each value the rewrite replaced and its sliced replacement.
    DenseMap<Value, Value> rewritten;
  };
};

/// The permutation of a transpose: a `linalg.transpose`, or a generic that
/// only copies its one input through a permutation map (torch-mlir's
/// spelling). Result dim i is dim perm[i] of the input.
static std::optional<SmallVector<int64_t>>
getTransposePermutation(Operation *op) {
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
    if (!transpose.hasPureTensorSemantics())
      return std::nullopt;
    return SmallVector<int64_t>(transpose.getPermutation());
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0)
    return std::nullopt;
  AffineMap in = generic.getMatchingIndexingMap(generic.getDpsInputOperand(0));
  AffineMap out = generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  if (!out.isIdentity() || !in.isPermutation())
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (body.getOperations().size() != 1 || !yield ||
      yield.getValues().front() != body.getArgument(0))
    return std::nullopt;
  // Output dim i reads input dim in(i): the input's map sends loop i
  // (output dim i) to input dim `in.getDimPosition(k)` at result k.
  SmallVector<int64_t> perm(in.getNumResults());
  for (unsigned k = 0; k < in.getNumResults(); ++k)
    perm[in.getDimPosition(k)] = k;
  return perm;
}

/// A value gathered twice, once plain and once transposed (a weight used
/// as is in the forward pass and transposed for the input's gradient; FSDP
/// gathers it once):
///
///   all_gather(transpose(x), dim i) = transpose(all_gather(x, dim perm[i]))
///
/// When `x` is gathered along dim perm[i] over the same axes elsewhere, the
/// transposed gather is replaced by a transpose of that gather's result
/// (moved up, within its block, to where both can use it), so the value
/// crosses the network once.
struct GatherBeforeTranspose : public OpRewritePattern<AllGatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllGatherOp gather,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(gather.getType());
    Operation *transpose = gather.getInput().getDefiningOp();
    if (!type || !type.hasStaticShape() || !transpose)
      return failure();
    std::optional<SmallVector<int64_t>> perm =
        getTransposePermutation(transpose);
    if (!perm)
      return failure();
    Value x = transpose->getOperand(0);
    int64_t dim = (*perm)[gather.getGatherDim()];
    AllGatherOp other;
    for (Operation *user : x.getUsers()) {
      auto candidate = dyn_cast<AllGatherOp>(user);
      if (candidate && candidate != gather &&
          candidate.getMeshAttr() == gather.getMeshAttr() &&
          candidate.getAxes() == gather.getAxes() &&
          static_cast<int64_t>(candidate.getGatherDim()) == dim &&
          isa<RankedTensorType>(candidate.getType())) {
        other = candidate;
        break;
      }
    }
    if (!other)
      return failure();
    // The other gather must come first: it moves up to the transpose when
    // both are in one block (its only operand, x, is defined before);
    // otherwise it must already be before the op that holds this gather.
    if (other->getBlock() == transpose->getBlock()) {
      if (transpose->isBeforeInBlock(other))
        rewriter.moveOpBefore(other, transpose);
    } else {
      Operation *holder = other->getBlock()->findAncestorOpInBlock(*gather);
      if (!holder || !other->isBeforeInBlock(holder))
        return failure();
    }
    Location loc = gather.getLoc();
    rewriter.setInsertionPoint(gather);
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    auto transposed = linalg::TransposeOp::create(
        rewriter, loc, other.getResult(), init, *perm);
    rewriter.replaceOp(gather, transposed->getResults());
    return success();
  }
};

/// Drops the axes of size 1 from a collective's axis list.
struct DropUnitAxes : public OpInterfaceRewritePattern<CollectiveOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(CollectiveOpInterface op,
                                PatternRewriter &rewriter) const override {
    MeshOp mesh = lookupMesh(op, op.getMeshAttr());
    if (!mesh)
      return failure();
    SmallVector<StringRef> kept;
    bool dropped = false;
    for (StringRef axis : op.getAxisNames()) {
      if (mesh.getAxisIndex(axis) && mesh.getAxisSize(axis) == 1) {
        dropped = true;
        continue;
      }
      kept.push_back(axis);
    }
    if (!dropped)
      return failure();
    rewriter.modifyOpInPlace(
        op, [&] { op->setAttr("axes", rewriter.getStrArrayAttr(kept)); });
    return success();
  }
};

/// Combines independent all_reduces of one block into buckets, as DDP
/// does with gradients: a bucket is emitted where the first of its results
/// is needed, and every later all_reduce of the block with the same group,
/// reduction and element type whose input is ready there joins it, up to
/// `threshold` bytes in all. A joining all_reduce moves up to the bucket,
/// so its input dies earlier and its result is born earlier, by the same
/// bytes: peak memory grows by the concatenated bucket at most.
class Combiner {
public:
  Combiner(int64_t threshold) : threshold(threshold) {}

  void run(Operation *root) {
    root->walk([&](Block *block) { runOnBlock(*block); });
  }

private:
  using Key = std::tuple<Attribute, Attribute, uint32_t, Type>;

  static int64_t bytesOf(AllReduceOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    return type.getNumElements() *
           static_cast<int64_t>(type.getElementTypeBitWidth()) / 8;
  }

  bool isCandidate(AllReduceOp op) {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0)
      return false;
    return bytesOf(op) <= threshold;
  }

  static Key keyOf(AllReduceOp op) {
    return Key{op.getMeshAttr(), op.getAxes(),
               static_cast<uint32_t>(op.getReduction()),
               cast<ShapedType>(op.getType()).getElementType()};
  }

  /// Whether `v` exists before `at` (an op of the block being combined).
  static bool readyBefore(Value v, Operation *at) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != at->getBlock())
      return true; // A block argument, or defined around the block.
    return def->isBeforeInBlock(at);
  }

  void runOnBlock(Block &block) {
    // Insertion order, so that the output does not depend on pointers.
    llvm::MapVector<Key, SmallVector<AllReduceOp>> pending;
    DenseMap<Operation *, Key> pendingKey;
    // The ops as they were: flushing erases later all_reduces that joined.
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    erased.clear();
    for (Operation *op : ops) {
      if (erased.contains(op))
        continue;
      // A pending group whose result `op` needs is emitted right here.
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        auto it = def ? pendingKey.find(def) : pendingKey.end();
        if (it == pendingKey.end())
          continue;
        Key key = it->second;
        flush(key, pending[key], op, pendingKey);
      }
      // Nested regions may use a pending result too: flush conservatively.
      if (op->getNumRegions())
        for (auto &[key, group] : pending)
          if (!group.empty() && usedInside(group, *op))
            flush(key, group, op, pendingKey);
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (!reduce || !isCandidate(reduce))
        continue;
      Key key = keyOf(reduce);
      SmallVector<AllReduceOp> &group = pending[key];
      // A full bucket goes out here, before the all_reduce that would
      // overflow it.
      int64_t bytes = 0;
      for (AllReduceOp member : group)
        bytes += bytesOf(member);
      if (!group.empty() && bytes + bytesOf(reduce) > threshold)
        flush(key, group, op, pendingKey);
      group.push_back(reduce);
      pendingKey[reduce] = key;
    }
    for (auto &[key, group] : pending)
      if (!group.empty())
        flush(key, group, block.empty() ? nullptr : &block.back(), pendingKey);
  }

  static bool usedInside(ArrayRef<AllReduceOp> group, Operation &op) {
    bool used = false;
    op.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (auto def = v.getDefiningOp<AllReduceOp>())
          if (llvm::is_contained(group, def))
            used = true;
    });
    return used;
  }

  /// Whether `v` can exist before `at` without the results of `group`: it
  /// does, or it is made by pure ops of the block (a gradient scaled by the
  /// learning rate, which the partitioner reduces after scaling) whose
  /// operands can, at most `depth` deep; those ops are added to `moved`.
  /// (The ops before `at` use no result of the group, or it would have
  /// been emitted at the first; `at` and later ones may.)
  static bool canBeReadyBefore(Value v, Operation *at,
                               ArrayRef<AllReduceOp> group,
                               const DenseMap<Operation *, Key> &pendingKey,
                               SmallVectorImpl<Operation *> &moved,
                               unsigned depth = 4) {
    Operation *def = v.getDefiningOp();
    // Nor the result of a reduction still pending in another group: that
    // group is emitted later, at its first use, which would then come
    // before it.
    if (auto reduce = dyn_cast_or_null<AllReduceOp>(def))
      if (llvm::is_contained(group, reduce) || pendingKey.count(reduce))
        return false;
    if (readyBefore(v, at))
      return true;
    if (depth == 0 || def == at || !isMemoryEffectFree(def) ||
        isa<AllReduceOp>(def))
      return false;
    if (llvm::is_contained(moved, def))
      return true;
    for (Value operand : def->getOperands())
      if (!canBeReadyBefore(operand, at, group, pendingKey, moved, depth - 1))
        return false;
    // What a region (a linalg.generic's body) reads from around it must
    // exist already (and so cannot be a result of the group).
    for (Region &region : def->getRegions()) {
      SetVector<Value> captured;
      getUsedValuesDefinedAbove(region, captured);
      if (llvm::any_of(captured, [&](Value c) {
            auto reduce = c.getDefiningOp<AllReduceOp>();
            return !readyBefore(c, at) ||
                   (reduce && (llvm::is_contained(group, reduce) ||
                               pendingKey.count(reduce)));
          }))
        return false;
    }
    moved.push_back(def);
    return true;
  }

  /// Adds to `group` the later all_reduces of `at`'s block with `key` whose
  /// inputs exist before `at`, or can (pure ops moved up with them), while
  /// the bucket has room. (Such an input cannot depend on the group's
  /// results: the first op to use one would have emitted the group there.
  /// `at` itself may use one: it is skipped.)
  void fillBucket(const Key &key, SmallVector<AllReduceOp> &group,
                  Operation *at, const DenseMap<Operation *, Key> &pendingKey) {
    int64_t bytes = 0;
    for (AllReduceOp member : group)
      bytes += bytesOf(member);
    for (Operation *next = at->getNextNode(); next;
         next = next->getNextNode()) {
      auto reduce = dyn_cast<AllReduceOp>(next);
      if (!reduce || erased.contains(reduce) || !isCandidate(reduce) ||
          keyOf(reduce) != key || bytes + bytesOf(reduce) > threshold)
        continue;
      SmallVector<Operation *> moved;
      if (!canBeReadyBefore(reduce.getInput(), at, group, pendingKey, moved))
        continue;
      // Producers first: each was pushed after its operands.
      for (Operation *op : moved)
        op->moveBefore(at);
      group.push_back(reduce);
      bytes += bytesOf(reduce);
    }
  }

  /// Emits the group, with the later all_reduces that can join it (if two
  /// or more in all), before `at`, and clears it.
  void flush(const Key &key, SmallVector<AllReduceOp> &group, Operation *at,
             DenseMap<Operation *, Key> &pendingKey) {
    for (AllReduceOp op : group)
      pendingKey.erase(op);
    if (at && !group.empty())
      fillBucket(key, group, at, pendingKey);
    if (group.size() < 2 || !at) {
      group.clear();
      return;
    }
    OpBuilder b(at);
    Location loc = group.front().getLoc();
    Type element = cast<ShapedType>(group.front().getType()).getElementType();
    SmallVector<Value> flat;
    int64_t total = 0;
    for (AllReduceOp op : group) {
      auto type = cast<RankedTensorType>(op.getType());
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < type.getRank(); ++d)
        all[0].push_back(d);
      Value collapsed =
          type.getRank() == 1
              ? op.getInput()
              : tensor::CollapseShapeOp::create(b, loc, op.getInput(), all)
                    .getResult();
      flat.push_back(collapsed);
      total += type.getNumElements();
    }
    auto flatType = RankedTensorType::get({total}, element);
    Value joined = tensor::ConcatOp::create(b, loc, flatType, 0, flat);
    AllReduceOp first = group.front();
    Value reduced =
        AllReduceOp::create(b, loc, flatType, joined, first.getMeshAttr(),
                            first.getAxes(), first.getReductionAttr());
    int64_t offset = 0;
    for (AllReduceOp op : group) {
      auto type = cast<RankedTensorType>(op.getType());
      int64_t n = type.getNumElements();
      Value part = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({n}, element), reduced, ValueRange(),
          ValueRange(), ValueRange(), b.getDenseI64ArrayAttr({offset}),
          b.getDenseI64ArrayAttr({n}), b.getDenseI64ArrayAttr({1}));
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < type.getRank(); ++d)
        all[0].push_back(d);
      Value shaped =
          type.getRank() == 1
              ? part
              : tensor::ExpandShapeOp::create(b, loc, type, part, all)
                    .getResult();
      op.getResult().replaceAllUsesWith(shaped);
      erased.insert(op);
      op.erase();
      offset += n;
    }
    group.clear();
  }

  int64_t threshold;
  /// The all_reduces of the block being combined that are gone.
  DenseSet<Operation *> erased;
};

struct OptimizeCollectivesPass
    : public mesh::impl::OptimizeCollectivesBase<OptimizeCollectivesPass> {
  using OptimizeCollectivesBase::OptimizeCollectivesBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReduceScatterFromSlice, DropUnitAxes, GatherBeforeTranspose>(
        &getContext());
    for (RegisteredOperationName name : getContext().getRegisteredOperations())
      if (name.getDialectNamespace() == MeshDialect::getDialectNamespace())
        name.getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    if (combineThreshold > 0)
      Combiner(combineThreshold).run(getOperation());
  }
};

} // namespace
