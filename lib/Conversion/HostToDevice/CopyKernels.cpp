//===- CopyKernels.cpp - strided buffer copies as linalg.copy -------------===//
//
// Part of the device stage of --mesh-to-nvvm: a memref.copy that involves a
// strided view cannot become one gpu.memcpy, so it is rewritten as a
// linalg.copy and becomes a kernel with the other linalg ops.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUCOPYKERNELS
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

struct MeshGpuCopyKernelsPass
    : public mesh::impl::MeshGpuCopyKernelsBase<MeshGpuCopyKernelsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> strided;
    getOperation().walk([&](memref::CopyOp copy) {
      auto source = cast<MemRefType>(copy.getSource().getType());
      auto target = cast<MemRefType>(copy.getTarget().getType());
      if (!source.getLayout().isIdentity() || !target.getLayout().isIdentity())
        strided.push_back(copy);
    });
    for (memref::CopyOp copy : strided) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
