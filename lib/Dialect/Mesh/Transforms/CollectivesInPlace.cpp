//===- CollectivesInPlace.cpp - buffer collectives into dying inputs ------===//
//
// After deallocation, a memref all_reduce or broadcast whose input buffer is
// freed after it and read by nothing later becomes `in_place`: it writes the
// input, which takes the result's place, and the input's dealloc goes. The
// proof that nothing later sees the old contents is local: an allocating op
// defines the input (no other value names the buffer), and every use other
// than the collective and its one unconditional dealloc is an earlier op of
// the same block that yields no buffer.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_COLLECTIVESINPLACE
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;
using namespace mlir::mesh;

namespace {

/// True when `op` has a buffer result that something uses: a value that may
/// alias one of its operands.
bool yieldsUsedBuffer(Operation *op) {
  return llvm::any_of(op->getResults(), [](Value result) {
    return isa<BaseMemRefType>(result.getType()) && !result.use_empty();
  });
}

/// The unconditional dealloc of the input of the buffer collective `op` when
/// the input dies at `op` (see the pass description), else null.
memref::DeallocOp findDyingInputDealloc(Operation *op) {
  Value input = op->getOperand(0);
  auto inType = dyn_cast<MemRefType>(input.getType());
  auto outType = dyn_cast<MemRefType>(op->getResult(0).getType());
  if (!inType || !outType || !inType.getLayout().isIdentity() ||
      inType.getMemorySpace() != outType.getMemorySpace() ||
      !memref::CastOp::areCastCompatible(inType, outType))
    return nullptr;

  // A fresh buffer: no other value names it.
  Operation *def = input.getDefiningOp();
  if (!def || !hasEffect<MemoryEffects::Allocate>(def, input))
    return nullptr;

  Block *block = op->getBlock();
  memref::DeallocOp dealloc;
  for (OpOperand &use : input.getUses()) {
    Operation *user = use.getOwner();
    if (user == op)
      continue;
    if (auto free = dyn_cast<memref::DeallocOp>(user)) {
      if (dealloc || free->getBlock() != block || !op->isBeforeInBlock(free))
        return nullptr;
      dealloc = free;
      continue;
    }
    // Any other use is done before `op` and leaves no alias behind.
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || !ancestor->isBeforeInBlock(op) || yieldsUsedBuffer(user) ||
        yieldsUsedBuffer(ancestor))
      return nullptr;
  }
  return dealloc;
}

struct CollectivesInPlacePass
    : public mesh::impl::CollectivesInPlaceBase<CollectivesInPlacePass> {
  void runOnOperation() override {
    // In program order, so that a chain's second collective sees the first
    // already in place (an earlier use that yields no buffer). Collected
    // first: the rewrites erase deallocs the walk has not reached.
    SmallVector<Operation *> collectives;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<AllReduceOp, BroadcastOp>(op) && !isInPlace(op))
        collectives.push_back(op);
    });
    for (Operation *op : collectives) {
      auto allReduce = dyn_cast<AllReduceOp>(op);
      auto broadcast = dyn_cast<BroadcastOp>(op);
      memref::DeallocOp dealloc = findDyingInputDealloc(op);
      if (!dealloc)
        continue;
      if (allReduce)
        allReduce.setInPlace(true);
      else
        broadcast.setInPlace(true);
      dealloc.erase();
      Value input = op->getOperand(0);
      Value result = op->getResult(0);
      Value replacement = input;
      if (input.getType() != result.getType()) {
        OpBuilder b(op->getContext());
        b.setInsertionPointAfter(op);
        replacement =
            memref::CastOp::create(b, op->getLoc(), result.getType(), input);
      }
      result.replaceAllUsesWith(replacement);
    }
  }
};

} // namespace
