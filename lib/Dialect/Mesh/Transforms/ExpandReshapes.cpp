//===- ExpandReshapes.cpp - ops on merged dims, on the dims themselves ----===//
//
// torch-mlir writes a matmul of 4-D tensors as collapse_shape of (batch,
// heads) into one dim, linalg.batch_matmul, and expand_shape back. With the
// batch split over "dp" and the heads over "tp", the merged dim is a block
// sharding of its product only while each device holds one batch row: with
// two, a device's rows of the merged dim are not one block of it, and the
// reshape loses the heads' axis (the partitioner would gather q, k and v).
// Yet the product is parallel over the merged dim: computed on the two dims
// themselves, it needs no communication.
//
// So, where propagation finds such a reshape (a merged group whose dims carry
// more axes than the merged dim), the linalg ops on the merged side are
// rewritten on the unmerged dims by MLIR's own fold-by-expansion patterns
// (the op's loop over the merged dim becomes one loop per dim of the group),
// and propagation runs again. The rewrite goes on through what it makes: the
// collapse it leaves after an expanded op folds into the next op or into the
// expand back, so a chain (the scores, a softmax written on the merged
// dims, the product with v) is computed on the unmerged dims as a whole.
// Elementwise arith and math ops on tensors in those functions become
// linalg.generic ops for that (as the compile pipelines make them anyway).
// Only a chain that closes is rewritten: one whose merged values reach
// linalg and elementwise ops and, through them, expand_shape ops only. A
// merged value that escapes (returned, passed on) would be gathered after
// the chain instead of its inputs before it, which may cost more. Reshapes
// propagation is content with, and ops that carry `mesh.sharding` (the
// user's constraints), are left as written.
//
//===----------------------------------------------------------------------===//

#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::mesh;

/// An elementwise arith or math op on tensors (a scale, an exp between the
/// products): the fold patterns take linalg ops only, so these become
/// linalg.generic first, as the compile pipelines make them anyway.
static bool isElementwiseOnTensors(Operation *op) {
  return OpTrait::hasElementwiseMappableTraits(op) &&
         op->getNumResults() == 1 &&
         isa<RankedTensorType>(op->getResult(0).getType());
}

/// Whether the merged values at `reshape` (a collapse's result; the other
/// results of the op an expand reads) reach only linalg and elementwise ops
/// and, through them, expand_shape ops: the chain closes, and computing it
/// unmerged needs no merged value in the end. A merged value that escapes
/// (returned, passed to a call, yielded, sliced) would be gathered after
/// the chain, which may cost more than gathering its inputs before it.
static bool closesLocally(Operation *reshape) {
  SmallVector<Value> work;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape)) {
    work.push_back(collapse.getResult());
  } else if (Operation *producer = reshape->getOperand(0).getDefiningOp()) {
    llvm::append_range(work, producer->getResults());
  }
  llvm::DenseSet<Operation *> seen{reshape};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (!seen.insert(user).second || isa<tensor::ExpandShapeOp>(user))
        continue;
      if (!isa<linalg::LinalgOp>(user) && !isElementwiseOnTensors(user))
        return false;
      llvm::append_range(work, user->getResults());
    }
  }
  return true;
}

bool mlir::mesh::expandThroughReshapes(ArrayRef<Operation *> candidates) {
  SmallVector<Operation *> reshapes;
  for (Operation *reshape : candidates)
    if (closesLocally(reshape))
      reshapes.push_back(reshape);
  if (reshapes.empty())
    return false;
  StringRef name = MeshDialect::getShardingAttrName();
  llvm::DenseSet<Operation *> lossy(reshapes.begin(), reshapes.end());
  // The reshapes and linalg ops of the functions concerned: the patterns
  // see these and what they make, nothing else of the program.
  llvm::DenseSet<Operation *> scopes;
  for (Operation *reshape : reshapes)
    if (auto fn = reshape->getParentOfType<FunctionOpInterface>())
      scopes.insert(fn);
  SmallVector<Operation *> ops;
  llvm::DenseSet<Operation *> original;
  auto annotated = [&](Operation *op) {
    return op && op->getDiscardableAttr(name);
  };
  for (Operation *scope : scopes)
    scope->walk([&](Operation *op) {
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
        original.insert(op);
      // An annotated op (the user's constraint) is never rewritten, folded
      // or reshaped through: neither it nor a reshape of its result is
      // listed.
      if (annotated(op) ||
          (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op) &&
           annotated(op->getOperand(0).getDefiningOp())))
        return;
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, linalg::LinalgOp,
              tensor::EmptyOp, arith::ConstantOp>(op) ||
          isElementwiseOnTensors(op))
        ops.push_back(op);
    });
  // A reshape folds into the op beside it when propagation found it lossy
  // or an earlier fold made it; never into or out of an annotated op.
  auto control = [&](OpOperand *fused) {
    Operation *producer = fused->get().getDefiningOp();
    Operation *consumer = fused->getOwner();
    if (!producer || producer->getDiscardableAttr(name) ||
        consumer->getDiscardableAttr(name))
      return false;
    Operation *reshape =
        isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(consumer)
            ? consumer
            : producer;
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(reshape))
      return false;
    // Folding an expand into the op that makes its operand replaces that
    // op for all its users: only where they are all this expand (or the
    // same expand again); else the others would take the merged value
    // collapsed again, an escape.
    if (reshape == consumer) {
      auto expand = dyn_cast<tensor::ExpandShapeOp>(consumer);
      if (!expand || llvm::any_of(producer->getUsers(), [&](Operation *user) {
            auto same = dyn_cast<tensor::ExpandShapeOp>(user);
            return !same || same.getType() != expand.getType() ||
                   same.getReassociationIndices() !=
                       expand.getReassociationIndices();
          }))
        return false;
    }
    return lossy.contains(reshape) || !original.contains(reshape);
  };
  MLIRContext *context = reshapes.front()->getContext();
  RewritePatternSet patterns(context);
  linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
  linalg::populateElementwiseToLinalgConversionPatterns(patterns);
  // An expand of a collapse (or the reverse) that gives the value back
  // folds away (the reshapes' folders). No reshape is composed with
  // another: a composed reshape would be new, and fold into ops propagation
  // was content with (a projection's [B * S, H] matmul, which the BLAS
  // takes as it is).
  // A fill (of an empty tensor) that other ops use merged is filled again
  // unmerged, not reshaped: no op computes a whole merged dim for a reshape.
  linalg::FillOp::getCanonicalizationPatterns(patterns, context);
  tensor::populateFoldTensorEmptyPatterns(patterns);
  // An op erased may give its address to one the patterns make: forgotten.
  struct Forget : public RewriterBase::Listener {
    llvm::DenseSet<Operation *> &lossy, &original;
    Forget(llvm::DenseSet<Operation *> &lossy,
           llvm::DenseSet<Operation *> &original)
        : lossy(lossy), original(original) {}
    void notifyOperationErased(Operation *op) override {
      lossy.erase(op);
      original.erase(op);
    }
  } forget(lossy, original);
  GreedyRewriteConfig config;
  config.setListener(&forget);
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  bool changed = false;
  (void)applyOpPatternsGreedily(ops, std::move(patterns), config, &changed);
  return changed;
}
