//===- SplitEmptyTensors.cpp - one tensor.empty per use -------------------===//
//
// A tensor.empty has a shape and no contents, so a program after CSE shares
// one per shape among every op that writes a fresh tensor of that shape
// (torch-mlir's output does). One-shot bufferization then sees every one of
// those destinations as the same buffer and analyses each pair of writes for
// conflicts: on a 48-layer GPT stack it took 17.5 of the pipeline's 20 s,
// growing with the cube of the layers. Giving each use its own
// tensor.empty, created just before the user (the shared one is erased),
// changes nothing in the program's meaning and leaves the analysis linear.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHSPLITEMPTYTENSORS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

struct MeshSplitEmptyTensorsPass
    : public mesh::impl::MeshSplitEmptyTensorsBase<MeshSplitEmptyTensorsPass> {
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> shared;
    getOperation().walk([&](tensor::EmptyOp empty) {
      if (!empty->hasOneUse() && !empty->use_empty())
        shared.push_back(empty);
    });
    for (tensor::EmptyOp empty : shared) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : empty->getUses())
        uses.push_back(&use);
      for (OpOperand *use : uses) {
        OpBuilder b(use->getOwner());
        use->set(b.clone(*empty)->getResult(0));
      }
      empty->erase();
    }
  }
};

} // namespace
