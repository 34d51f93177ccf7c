//===- Pipelines.h - registered pass pipelines ------------------*- C++ -*-===//
//
// The pipelines mesh-opt offers by name.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_PIPELINES_PIPELINES_H
#define MESH_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace mesh {

/// Options of --mesh-to-llvm.
struct MeshToLLVMOptions : public mlir::PassPipelineOptions<MeshToLLVMOptions> {
  PassOptions::Option<std::string> initSymbol{
      *this, "init-symbol",
      llvm::cl::desc("Name of the generated start-up function"),
      llvm::cl::init("mesh_module_init")};
  PassOptions::Option<std::string> finiSymbol{
      *this, "fini-symbol",
      llvm::cl::desc("Name of the generated shut-down function"),
      llvm::cl::init("mesh_module_fini")};
  PassOptions::Option<bool> writableArguments{
      *this, "writable-arguments",
      llvm::cl::desc("Let kernels write into their callers' tensor arguments"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> initInMain{
      *this, "init-in-main",
      llvm::cl::desc("Call start-up and shut-down from main, if any"),
      llvm::cl::init(true)};
};

/// Partitioned tensor IR with mesh collectives to the LLVM dialect: tensors
/// to linalg, one-shot bufferization, collectives to runtime calls, linalg to
/// loops, deallocation, and the standard conversions to LLVM.
void buildMeshToLLVMPipeline(mlir::OpPassManager &pm,
                             const MeshToLLVMOptions &options);

/// Registers --mesh-to-llvm.
void registerMeshPipelines();

} // namespace mesh
} // namespace mlir

#endif // MESH_PIPELINES_PIPELINES_H
