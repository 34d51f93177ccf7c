//===- InitMesh.cpp - dialects and passes the tools register --------------===//
//
// mesh-opt, mesh-lsp-server and the fuzzer register exactly this set: our
// dialect, and the upstream dialects and passes a user needs to go from
// sharded tensor programs to the LLVM dialect, and nothing else.
//
//===----------------------------------------------------------------------===//

#include "mesh/InitMesh.h"
#include "mesh/Conversion/Passes.h"
#include "mesh/Dialect/Mesh/IR/MeshDialect.h"
#include "mesh/Dialect/Mesh/Transforms/BufferizableOpInterfaceImpl.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/ShardingRuleModels.h"
#include "mesh/Pipelines/Pipelines.h"
#include "meshrt/meshrt.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/MemRefMemorySlot.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

void mlir::mesh::registerMeshToolDialects(mlir::DialectRegistry &registry) {
  using namespace mlir;
  registry
      .insert<mesh::MeshDialect, func::FuncDialect, arith::ArithDialect,
              math::MathDialect, tensor::TensorDialect, linalg::LinalgDialect,
              memref::MemRefDialect, scf::SCFDialect, cf::ControlFlowDialect,
              affine::AffineDialect, index::IndexDialect, ub::UBDialect,
              bufferization::BufferizationDialect, LLVM::LLVMDialect,
              gpu::GPUDialect, NVVM::NVVMDialect>();

  // Bufferization of the mesh collectives and of the upstream ops a sharded
  // program uses.
  mesh::registerBufferizableOpInterfaceExternalModels(registry);
  mesh::registerShardingRuleModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // Tiling of linalg ops (mesh-convolutions-to-gemm tiles big convolutions).
  linalg::registerTilingInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);

  // Inlining and the convert-to-llvm interfaces.
  func::registerInlinerExtension(registry);
  LLVM::registerInlinerInterface(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);

  // --mesh-to-nvvm: the NVVM target (gpu-module-to-binary), and the LLVM IR
  // translations it runs on each gpu.module.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

void mlir::mesh::registerMeshToolPasses() {
  using namespace mlir;
  // Ours.
  mesh::registerMeshTransformsPasses();
  mesh::registerMeshConversionPasses();
  mesh::registerMeshPipelines();
  // General clean-ups.
  registerCanonicalizerPass();
  registerCSEPass();
  registerInlinerPass();
  registerSymbolDCEPass();
  registerLoopInvariantCodeMotionPass();
  // Bufferization (one-shot-bufferize, deallocation pipeline, ...).
  bufferization::registerBufferizationPasses();
  bufferization::registerBufferizationPipelines();
  // Linalg to loops.
  registerConvertLinalgToLoopsPass();
  registerLinalgGeneralizeNamedOpsPass();
  registerConvertElementwiseToLinalgPass();
  // The standard lowerings to the LLVM dialect.
  memref::registerExpandStridedMetadataPass();
  registerLowerAffinePass();
  registerSCFToControlFlowPass();
  registerArithToLLVMConversionPass();
  registerConvertControlFlowToLLVMPass();
  registerConvertFuncToLLVMPass();
  registerConvertIndexToLLVMPass();
  registerConvertMathToLLVMPass();
  registerFinalizeMemRefToLLVMConversionPass();
  registerConvertToLLVMPass();
  registerReconcileUnrealizedCastsPass();
  // The GPU path's upstream steps, to run or debug them one at a time.
  registerConvertLinalgToParallelLoopsPass();
  registerSCFParallelLoopFusion();
  registerSCFParallelLoopTiling();
  registerGPUPasses();
  registerConvertParallelLoopToGpuPass();
  registerConvertGpuOpsToNVVMOps();
  registerGpuToLLVMConversionPass();
}

void mlir::mesh::registerMeshVersionPrinter(const char *toolName) {
  llvm::cl::SetVersionPrinter([toolName](llvm::raw_ostream &os) {
    os << toolName << " (mesh " << MESHRT_VERSION_STRING << ")\n"
       << "  compiled code needs libmeshrt " << MESHRT_VERSION_MAJOR << "."
       << MESHRT_VERSION_MINOR << ".x\n";
    // LLVM's own message (the LLVM and MLIR version, the build), which
    // --version prints without a printer of ours.
    llvm::cl::PrintVersionMessage();
  });
}
