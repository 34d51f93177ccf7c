//===- PartitionIfAnnotated.cpp - partition a global program, if it is one
//-===//
//
// The compile pipelines start here: a module that still carries sharding
// annotations is a global program and is propagated, partitioned and its
// collectives optimised before anything else; a per-device module is left
// alone.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PARTITIONIFANNOTATED
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

bool mlir::mesh::findShardingAnnotation(
    Operation *root, function_ref<void(Operation *, StringRef)> report) {
  StringRef name = MeshDialect::getShardingAttrName();
  bool found = false;
  root->walk([&](Operation *op) {
    auto note = [&](StringRef where) {
      found = true;
      if (report)
        report(op, where);
    };
    if (isa<ShardOp>(op))
      note("is a sharding constraint");
    else if (op->hasAttr(name))
      note("carries a 'mesh.sharding' annotation");
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (!fn)
      return;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (fn.getArgAttr(i, name))
        note(("has argument " + Twine(i) + " with a 'mesh.sharding' annotation")
                 .str());
    for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
      if (fn.getResultAttr(i, name))
        note(("has result " + Twine(i) + " with a 'mesh.sharding' annotation")
                 .str());
  });
  return found;
}

namespace {

/// The passes that turn an annotated program into per-device form.
void addPartitioning(OpPassManager &pm) {
  pm.addPass(mesh::createPropagateSharding());
  pm.addPass(mesh::createPartition());
  pm.addPass(mesh::createOptimizeCollectives());
}

struct PartitionIfAnnotatedPass
    : public mesh::impl::PartitionIfAnnotatedBase<PartitionIfAnnotatedPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    PartitionIfAnnotatedBase::getDependentDialects(registry);
    OpPassManager pm(ModuleOp::getOperationName());
    addPartitioning(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!mesh::findShardingAnnotation(module))
      return;
    OpPassManager pm(ModuleOp::getOperationName());
    addPartitioning(pm);
    if (failed(runPipeline(pm, module)))
      signalPassFailure();
  }
};

} // namespace
