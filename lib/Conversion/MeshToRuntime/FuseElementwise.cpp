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
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHFUSEELEMENTWISE
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// Upstream's control (fuse a producer with one use), and no fold of an
/// expand_shape with dynamic sizes into its producer pad.
static bool fuses(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto expand = dyn_cast<tensor::ExpandShapeOp>(fused->getOwner());
  return !(expand && isa<tensor::PadOp>(producer) &&
           !expand.getOutputShape().empty());
}

struct MeshFuseElementwisePass
    : public mesh::impl::MeshFuseElementwiseBase<MeshFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fuses);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, fuses);
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
