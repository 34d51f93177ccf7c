//===- FuseElementwise.cpp - elementwise fusion for the host pipeline -----===//
//
// The patterns of upstream's linalg-fuse-elementwise-ops, with one fold left
// out: MLIR 22 folds a tensor.expand_shape into the tensor.pad producing it
// by building a new expand_shape right after the pad's source with the old
// one's size operands, which may be defined later (partitioning computes a
// size split over a `?` axis at the reshape), and the result fails to verify.
// The control function refuses that fold when the expand_shape has dynamic
// sizes; everything else fuses as upstream's pass does.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHFUSEELEMENTWISE
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `op` is a contraction (a product the BLAS computes on the host,
/// cuBLAS on a GPU): it must stay the op it is, named or generic, with its
/// operands as they are.
static bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() > 0 &&
         linalg::isaContractionOpInterface(linalgOp);
}

/// Upstream's control (fuse a producer with one use), with three limits:
///  - an elementwise producer fuses into its consumer only where the
///    consumer reads each of its elements once (the operand's indexing map
///    is a permutation of the consumer's loops). Through a broadcast the
///    producer would be computed again for every element it is broadcast to
///    (layer norm's rsqrt once per hidden column, GELU's tanh once per
///    output column of the next matmul), and a contraction reads each input
///    element once per column or row of the other operand;
///  - no reshape is folded into a contraction by expansion (it would turn a
///    2-D matmul into a generic over more loops, which the BLAS rewrite then
///    cannot take and elementwise producers could then fuse into);
///  - no expand_shape with dynamic sizes is folded into the tensor.pad that
///    produces it (MLIR 22 gets that fold wrong, see the pass description).
static bool fuses(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  Operation *consumer = fused->getOwner();
  if (isContraction(consumer) || isContraction(producer))
    return false;
  if (auto linalgConsumer = dyn_cast<linalg::LinalgOp>(consumer);
      linalgConsumer && isa<linalg::LinalgOp>(producer)) {
    AffineMap map = linalgConsumer.getMatchingIndexingMap(fused);
    if (!map.isPermutation())
      return false;
  }
  auto expand = dyn_cast<tensor::ExpandShapeOp>(consumer);
  return !(expand && isa<tensor::PadOp>(producer) &&
           !expand.getOutputShape().empty());
}

/// A contraction reading the result of a linalg.transpose reads the
/// transpose's input instead, through the composed indexing map: the product
/// becomes a linalg.generic with the same body, and the BLAS (or cuBLAS)
/// reads the operand transposed, with no copy. torch-mlir spells F.linear
/// as a transpose of the weight and a matmul, so without this every call
/// would copy every weight.
struct FoldTransposeIntoContraction
    : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || !isContraction(op))
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<Value> inputs = op.getDpsInputs();
    bool changed = false;
    for (OpOperand *operand : op.getDpsInputOperands()) {
      auto transpose = operand->get().getDefiningOp<linalg::TransposeOp>();
      if (!transpose || !transpose.hasPureTensorSemantics())
        continue;
      // Result dim i of the transpose is dim perm[i] of its input.
      ArrayRef<int64_t> perm = transpose.getPermutation();
      AffineMap map = maps[operand->getOperandNumber()];
      SmallVector<AffineExpr> results(map.getNumResults());
      for (auto [i, p] : llvm::enumerate(perm))
        results[p] = map.getResult(i);
      maps[operand->getOperandNumber()] =
          AffineMap::get(map.getNumDims(), 0, results, op.getContext());
      inputs[operand->getOperandNumber()] = transpose.getInput();
      changed = true;
    }
    if (!changed)
      return failure();
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), op->getResultTypes(), inputs, op.getDpsInits(),
        maps, op.getIteratorTypesArray());
    IRMapping mapping;
    op->getRegion(0).cloneInto(&generic.getRegion(), mapping);
    rewriter.replaceOp(op, generic->getResults());
    return success();
  }
};

struct MeshFuseElementwisePass
    : public mesh::impl::MeshFuseElementwiseBase<MeshFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fuses);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, fuses);
    patterns.add<FoldTransposeIntoContraction>(context);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, fuses);
    // Top-down, as upstream, for compile time.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns),
                                GreedyRewriteConfig().setUseTopDownTraversal());
  }
};

} // namespace
