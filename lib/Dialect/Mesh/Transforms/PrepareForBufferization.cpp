//===- PrepareForBufferization.cpp - ready a partitioned program ----------===//
//
// Drops the mesh.sharding annotations of a partitioned program (they describe
// tensors that are about to become buffers, and would no longer verify) and
// makes public functions' tensor arguments read-only for bufferization, so
// that compiled kernels do not overwrite their callers' buffers.
//
//===----------------------------------------------------------------------===//

#include "mesh/Dialect/Mesh/IR/MeshDialect.h"
#include "mesh/Dialect/Mesh/Transforms/FunctionAttrs.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_PREPAREFORBUFFERIZATION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {
struct PrepareForBufferizationPass
    : public mesh::impl::PrepareForBufferizationBase<
          PrepareForBufferizationPass> {
  using PrepareForBufferizationBase::PrepareForBufferizationBase;

  void runOnOperation() override {
    StringRef name = mesh::MeshDialect::getShardingAttrName();
    getOperation().walk([&](Operation *op) {
      op->removeAttr(name);
      auto fn = dyn_cast<FunctionOpInterface>(op);
      if (!fn)
        return;
      bool readOnly = !writableArguments && fn.isPublic();
      mesh::editArgAttrs(fn, [&](unsigned i, NamedAttrList &attrs) {
        attrs.erase(name);
        if (readOnly && isa<TensorType>(fn.getArgumentTypes()[i]))
          attrs.set(bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(op->getContext(), false));
      });
      mesh::editResultAttrs(
          fn, [&](unsigned, NamedAttrList &attrs) { attrs.erase(name); });
    });
  }
};
} // namespace
