//===- StripCompileTimes.cpp - no compile times in the kernel objects -----===//
//
// gpu-module-to-binary records in each #gpu.object how long its kernels took
// to compile. Those numbers change on every run; without them, the same
// program compiles to the same module, byte for byte.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUSTRIPCOMPILETIMES
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

namespace {

/// The object without the two timing properties (the same object if it has
/// neither).
gpu::ObjectAttr withoutCompileTimes(gpu::ObjectAttr object) {
  DictionaryAttr properties = object.getProperties();
  if (!properties)
    return object;
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute property : properties)
    if (property.getName() != "LLVMIRToISATimeInMs" &&
        property.getName() != "ISAToBinaryTimeInMs")
      kept.push_back(property);
  if (kept.size() == properties.size())
    return object;
  MLIRContext *ctx = object.getContext();
  return gpu::ObjectAttr::get(
      ctx, object.getTarget(), object.getFormat(), object.getObject(),
      kept.empty() ? DictionaryAttr() : DictionaryAttr::get(ctx, kept),
      object.getKernels());
}

struct MeshGpuStripCompileTimesPass
    : public mesh::impl::MeshGpuStripCompileTimesBase<
          MeshGpuStripCompileTimesPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::BinaryOp binary) {
      SmallVector<Attribute> objects;
      for (Attribute object : binary.getObjectsAttr()) {
        auto gpuObject = dyn_cast<gpu::ObjectAttr>(object);
        objects.push_back(gpuObject ? withoutCompileTimes(gpuObject) : object);
      }
      binary.setObjectsAttr(ArrayAttr::get(binary.getContext(), objects));
    });
  }
};

} // namespace
