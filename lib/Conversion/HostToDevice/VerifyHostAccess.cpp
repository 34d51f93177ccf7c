//===- VerifyHostAccess.cpp - no host op on device buffers ----------------===//
//
// The last step of the device stage of --mesh-to-nvvm: every buffer is in
// device memory, so a host op that reads, writes, allocates or frees a
// memref is an error, reported with the op's name. It turns the silent
// failures of a GPU lowering (a loop nest left on the host, a host copy,
// a host allocation) into compile-time errors.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/HostBuffers.h"
#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUVERIFYHOSTACCESS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

/// What `effect` does to a buffer, in words; empty when it is harmless (no
/// buffer, or a host buffer, see mesh-gpu-host-buffers).
static StringRef describe(const MemoryEffects::EffectInstance &effect) {
  Value value = effect.getValue();
  if (!value || !isa<MemRefType>(value.getType()) || mesh::isHostBuffer(value))
    return "";
  if (isa<MemoryEffects::Read>(effect.getEffect()))
    return "reads a device buffer on the host";
  if (isa<MemoryEffects::Write>(effect.getEffect()))
    return "writes a device buffer on the host";
  if (isa<MemoryEffects::Allocate>(effect.getEffect()))
    return "allocates a buffer in host memory (the device stage allocates "
           "with gpu.alloc)";
  if (isa<MemoryEffects::Free>(effect.getEffect()))
    return "frees a buffer with the host allocator (the device stage frees "
           "with gpu.dealloc)";
  return "";
}

/// Reports `op` if it touches a buffer on the host; returns true if so.
static bool reportHostAccess(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  for (const MemoryEffects::EffectInstance &effect : instances) {
    StringRef what = describe(effect);
    if (what.empty())
      continue;
    op->emitOpError() << what;
    return true;
  }
  return false;
}

namespace {

struct MeshGpuVerifyHostAccessPass
    : public mesh::impl::MeshGpuVerifyHostAccessBase<
          MeshGpuVerifyHostAccessPass> {
  void runOnOperation() override {
    bool failed = false;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        // Kernels still inline run on the device; GPU ops are how the host
        // is meant to touch device memory.
        if (isa<gpu::LaunchOp>(op))
          return WalkResult::skip();
        if (isa<gpu::GPUDialect>(op->getDialect()))
          return WalkResult::advance();
        failed |= reportHostAccess(op);
        return WalkResult::advance();
      });
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
