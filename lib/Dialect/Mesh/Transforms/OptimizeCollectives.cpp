//===- OptimizeCollectives.cpp - fewer, cheaper collectives ---------------===//
//
// Three rewrites on per-device programs: all_reduce + all_slice over the same
// axes is a reduce_scatter; size-1 axes leave collectives; independent small
// all_reduces of one block with the same group, reduction and element type
// are combined into one (flatten, concatenate, reduce, split).
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

/// all_slice(all_reduce(x)) over the same axes, when the slice is the
/// reduction's only user, is reduce_scatter(x).
struct AllReduceThenSlice : public OpRewritePattern<AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto reduce = slice.getInput().getDefiningOp<AllReduceOp>();
    if (!reduce || !reduce->hasOneUse() ||
        reduce.getMeshAttr() != slice.getMeshAttr() ||
        reduce.getAxes() != slice.getAxes() ||
        !isa<RankedTensorType>(slice.getType()))
      return failure();
    rewriter.replaceOpWithNewOp<ReduceScatterOp>(
        slice, slice.getType(), reduce.getInput(), slice.getMeshAttr(),
        slice.getAxes(), slice.getSliceDimAttr(), reduce.getReductionAttr());
    rewriter.eraseOp(reduce);
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

/// Combines independent all_reduces of one block.
class Combiner {
public:
  Combiner(int64_t threshold) : threshold(threshold) {}

  void run(Operation *root) {
    root->walk([&](Block *block) { runOnBlock(*block); });
  }

private:
  using Key = std::tuple<Attribute, Attribute, uint32_t, Type>;

  bool isCandidate(AllReduceOp op) {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0)
      return false;
    int64_t bits = type.getNumElements() *
                   static_cast<int64_t>(type.getElementTypeBitWidth());
    return bits / 8 <= threshold;
  }

  void runOnBlock(Block &block) {
    // Insertion order, so that the output does not depend on pointers.
    llvm::MapVector<Key, SmallVector<AllReduceOp>> pending;
    DenseMap<Operation *, Key> keyOf;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      // A pending group whose result `op` needs is emitted right here.
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        auto it = def ? keyOf.find(def) : keyOf.end();
        if (it == keyOf.end())
          continue;
        Key key = it->second;
        flush(pending[key], &op, keyOf);
      }
      // Nested regions may use a pending result too: flush conservatively.
      if (op.getNumRegions())
        for (auto &[key, group] : pending)
          if (!group.empty() && usedInside(group, op))
            flush(group, &op, keyOf);
      auto reduce = dyn_cast<AllReduceOp>(&op);
      if (!reduce || !isCandidate(reduce))
        continue;
      Key key{reduce.getMeshAttr(), reduce.getAxes(),
              static_cast<uint32_t>(reduce.getReduction()),
              cast<ShapedType>(reduce.getType()).getElementType()};
      pending[key].push_back(reduce);
      keyOf[reduce] = key;
    }
    for (auto &[key, group] : pending)
      if (!group.empty())
        flush(group, block.empty() ? nullptr : &block.back(), keyOf);
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

  /// Emits the group (if two or more) before `at` and clears it.
  void flush(SmallVector<AllReduceOp> &group, Operation *at,
             DenseMap<Operation *, Key> &keyOf) {
    for (AllReduceOp op : group)
      keyOf.erase(op);
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
      op.erase();
      offset += n;
    }
    group.clear();
  }

  int64_t threshold;
};

struct OptimizeCollectivesPass
    : public mesh::impl::OptimizeCollectivesBase<OptimizeCollectivesPass> {
  using OptimizeCollectivesBase::OptimizeCollectivesBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AllReduceThenSlice, DropUnitAxes>(&getContext());
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
