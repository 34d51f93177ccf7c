//===- SerialKernels.cpp - host loop nests to one-thread kernels ----------===//
//
// On the GPU path every buffer is in device memory. Loop nests without a
// parallel dimension are left on the host by convert-parallel-loops-to-gpu;
// this pass moves each of them, with the loads and pure ops that feed it,
// into a gpu.launch of a single thread, so no host code touches a buffer.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/HostBuffers.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUSERIALKERNELS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

/// True when `op` itself reads or writes a memref that moves to the device
/// (not a host buffer, see mesh-gpu-host-buffers).
static bool accessesMemRef(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::any_of(instances, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()) &&
           e.getValue() && isa<MemRefType>(e.getValue().getType()) &&
           !mesh::isHostBuffer(e.getValue());
  });
}

bool mlir::mesh::canRunAsSerialKernel(Operation *op) {
  if (op->getNumResults() != 0 || op->hasTrait<OpTrait::IsTerminator>() ||
      isa<gpu::GPUDialect>(op->getDialect()))
    return false;
  return !op->walk([&](Operation *nested) {
              if (isa<gpu::GPUDialect>(nested->getDialect()) ||
                  isa<CallOpInterface>(nested) ||
                  isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
                      memref::CopyOp>(nested))
                return WalkResult::interrupt();
              return WalkResult::advance();
            }).wasInterrupted();
}

/// True when `op` (with what it nests) becomes a one-thread kernel: it may,
/// and it touches a buffer that moves to the device.
static bool isSerialKernelRoot(Operation *op) {
  if (!mesh::canRunAsSerialKernel(op))
    return false;
  return op
      ->walk([](Operation *nested) {
        return accessesMemRef(nested) ? WalkResult::interrupt()
                                      : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The ops of `root`'s block that compute its operands and may be copied
/// into a kernel: loads and side-effect-free ops without regions, found
/// transitively, in block order.
static SmallVector<Operation *> kernelProducers(Operation *root) {
  llvm::SetVector<Operation *> found;
  SmallVector<Value> work;
  root->walk([&](Operation *nested) {
    for (Value v : nested->getOperands())
      work.push_back(v);
  });
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != root->getBlock() || found.contains(def) ||
        def->getNumRegions() != 0)
      continue;
    if (!isa<memref::LoadOp>(def) && !isMemoryEffectFree(def))
      continue;
    found.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ordered(found.begin(), found.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// Moves `root` into a new one-thread gpu.launch, with copies of the loads
/// and pure ops that feed it; erases the originals that are left unused.
static void wrapInSerialKernel(Operation *root) {
  SmallVector<Operation *> producers = kernelProducers(root);
  OpBuilder b(root);
  Location loc = root->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(terminator);
  IRMapping mapping;
  for (Operation *producer : producers)
    b.clone(*producer, mapping);
  root->moveBefore(terminator);
  root->walk([&](Operation *nested) {
    for (OpOperand &use : nested->getOpOperands())
      if (Value mapped = mapping.lookupOrNull(use.get()))
        use.set(mapped);
  });
  for (Operation *producer : llvm::reverse(producers))
    if (producer->use_empty())
      producer->erase();
}

namespace {

struct MeshGpuSerialKernelsPass
    : public mesh::impl::MeshGpuSerialKernelsBase<MeshGpuSerialKernelsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> roots;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (isa<gpu::LaunchOp>(op))
          return WalkResult::skip();
        if (op != func.getOperation() && isSerialKernelRoot(op)) {
          roots.push_back(op);
          return WalkResult::skip();
        }
        return WalkResult::advance();
      });
    }
    for (Operation *root : roots)
      wrapInSerialKernel(root);
  }
};

} // namespace
