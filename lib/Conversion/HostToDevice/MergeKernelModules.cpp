//===- MergeKernelModules.cpp - one gpu.module for all kernels ------------===//
//
// After gpu-kernel-outlining: moves the kernels of every gpu.module that holds
// only gpu.funcs into one module, so the device binary is made by one ptxas
// and fatbinary run and loaded once.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace mesh {
#define GEN_PASS_DEF_MESHGPUMERGEKERNELMODULES
#include "mesh/Conversion/Passes.h.inc"
} // namespace mesh
} // namespace mlir

using namespace mlir;

/// True when `module` holds nothing but kernels, which can move freely.
static bool onlyKernels(gpu::GPUModuleOp module) {
  if (module.getTargetsAttr() || module.getOffloadingHandlerAttr())
    return false;
  for (Operation &op : module.getBody()->without_terminator())
    if (!isa<gpu::GPUFuncOp>(op))
      return false;
  return true;
}

namespace {

struct MeshGpuMergeKernelModulesPass
    : public mesh::impl::MeshGpuMergeKernelModulesBase<
          MeshGpuMergeKernelModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> movable;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      if (onlyKernels(gpuModule))
        movable.push_back(gpuModule);
    if (movable.size() < 2)
      return;

    SymbolTable symbols(module);
    OpBuilder b(movable.front());
    auto merged =
        gpu::GPUModuleOp::create(b, movable.front().getLoc(), "mesh_kernels");
    symbols.insert(merged); // Renamed if the name is taken.
    SymbolTable mergedSymbols(merged);

    // Old (module, kernel) to the kernel's new name in `merged`.
    DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp from : movable) {
      SmallVector<gpu::GPUFuncOp> funcs(from.getOps<gpu::GPUFuncOp>());
      for (gpu::GPUFuncOp func : funcs) {
        StringAttr oldName = func.getNameAttr();
        std::string name = from.getName().str();
        if (funcs.size() != 1)
          name += "_" + oldName.str();
        func->moveBefore(merged.getBody(), merged.getBody()->end());
        func.setName(name);
        // Unique in `merged`: the module names were unique in the parent.
        StringAttr newName = mergedSymbols.insert(func);
        renamed[{from.getNameAttr(), oldName}] = newName;
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it =
          renamed.find({kernel.getRootReference(), kernel.getLeafReference()});
      if (it == renamed.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
    });
    for (gpu::GPUModuleOp from : movable)
      from.erase();
  }
};

} // namespace
