//===- EraseUnusedResults.cpp - results nobody uses, before propagation ---===//
//
// torch-mlir lowers aten.max.dim to one linalg.generic with two results, the
// maximum and its index (an argmax, from linalg.index of the reduced loop),
// and models often use the maximum only. The index read blocks the reduced
// loop, and the unused result's computation runs anyway. MLIR's
// EraseUnusedOperandsAndResults patterns drop such a result with the part of
// the body only it needed, so propagation sees the op that is really used.
//
// An op annotated with `mesh.sharding` is left as written: every result of
// an op with several carries an entry (S6), so its unused results are the
// user's constraints too.
//
//===----------------------------------------------------------------------===//

#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::mesh;

void mlir::mesh::eraseUnusedLinalgResults(ArrayRef<Operation *> generics) {
  StringRef name = MeshDialect::getShardingAttrName();
  // The generics with a result nobody uses, and the ops of their bodies,
  // which become dead with the result.
  SmallVector<Operation *> ops;
  for (Operation *op : generics) {
    auto generic = cast<linalg::GenericOp>(op);
    if (!generic.hasPureTensorSemantics() ||
        generic->getDiscardableAttr(name) ||
        llvm::none_of(generic->getResults(),
                      [](OpResult r) { return r.use_empty(); }))
      continue;
    ops.push_back(generic);
    generic.getBlock()->walk([&](Operation *op) { ops.push_back(op); });
  }
  if (ops.empty())
    return;
  RewritePatternSet patterns(ops.front()->getContext());
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  // Only these ops and what the patterns make of them; no folding, so the
  // rest of the program stays as written.
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  (void)applyOpPatternsGreedily(ops, std::move(patterns), config);
}
