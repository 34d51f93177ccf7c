//===- MeshToNVVM.cpp - the --mesh-to-nvvm pipeline -----------------------===//
//
// From partitioned tensor IR to the LLVM dialect with the kernels compiled
// for an NVIDIA GPU: the host stage of --mesh-to-llvm with collectives on
// the runtime's stream, linalg to tiled parallel loops mapped to blocks and
// threads, our host-to-device rewrite and its check, then NVVM and
// gpu-module-to-binary.
//
//===----------------------------------------------------------------------===//

#include "mesh/Conversion/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"
#include "mesh/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

using namespace mlir;

std::string mlir::mesh::resolveCudaPath(StringRef requested) {
  if (!requested.empty())
    return requested.str();
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

/// Bufferization, deallocation and collectives, as on the host path, the
/// collectives enqueued on the runtime's shared stream.
static void addHostStage(OpPassManager &pm,
                         const mesh::MeshToNVVMOptions &options) {
  mesh::addBufferizationAndRuntimeCalls(
      pm, options.partition, options.writableArguments, options.initSymbol,
      options.finiSymbol, options.initInMain,
      /*onStream=*/!options.hostKernels, /*fuseElementwise=*/true,
      /*loopBuffers=*/false,
      /*convolutionsAsGemms=*/options.gpuMatmul == mesh::GpuMatmul::Library,
      options.signatureSymbol);
  // bufferization.clone to memref.alloc + memref.copy, which the device
  // stage turns into gpu.alloc + gpu.memcpy.
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// linalg to parallel loops, fused, tiled (the tile is the thread block),
/// and mapped to blocks and threads; what has no parallel dimension becomes
/// a one-thread kernel; every buffer moves to the device (with
/// `hostKernels`, the stage stops before the kernels are outlined).
static void addDeviceStage(OpPassManager &pm,
                           const mesh::MeshToNVVMOptions &options) {
  // Empty: each loop nest's own shape chooses (mesh-gpu-tile-parallel-loops).
  SmallVector<int64_t> tiles(options.tileSizes.begin(),
                             options.tileSizes.end());
  // Contractions (with the bias and activation after them) to cuBLASLt,
  // before anything becomes a kernel; the buffers they use are device
  // buffers like the collectives'.
  if (options.gpuMatmul == mesh::GpuMatmul::Library) {
    mesh::MeshGpuLinalgToCublasOptions cublas;
    switch (options.matmulPrecision) {
    case mesh::MatmulPrecision::Highest:
      cublas.precision = "highest";
      break;
    case mesh::MatmulPrecision::TF32:
      cublas.precision = "tf32";
      break;
    case mesh::MatmulPrecision::BF16:
      cublas.precision = "bf16";
      break;
    }
    cublas.host = options.hostKernels;
    pm.addPass(mesh::createMeshGpuLinalgToCublas(cublas));
  }
  pm.addPass(mesh::createMeshGpuHostBuffers());
  pm.addNestedPass<func::FuncOp>(mesh::createMeshGpuCopyKernels());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createParallelLoopFusionPass());
  // No canonicalisation between tiling and mapping: it would merge the
  // nested loops again and give every block one thread. Without min/max
  // bounds, ragged and dynamic shapes still become one guarded kernel.
  // Row reductions: a block per row (not in the host-kernels test target,
  // which runs launches as host loops and has no barriers).
  // Reductions to one value: partial values in parallel, then a one-row
  // reduction of them (with host-kernels too, where both run as loops).
  pm.addNestedPass<func::FuncOp>(mesh::createMeshGpuFullReductions());
  if (!options.hostKernels)
    pm.addNestedPass<func::FuncOp>(mesh::createMeshGpuRowReductions());
  // Elementwise nests load and store 16 bytes at a time (the host-kernels
  // target runs the same vector code on the host).
  mesh::MeshGpuVectorizeElementwiseOptions vectors;
  vectors.vectorBytes = options.vectorBytes;
  pm.addNestedPass<func::FuncOp>(
      mesh::createMeshGpuVectorizeElementwise(vectors));
  mesh::MeshGpuTileParallelLoopsOptions tiling;
  tiling.tileSizes = tiles;
  pm.addNestedPass<func::FuncOp>(mesh::createMeshGpuTileParallelLoops(tiling));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(mesh::createMeshGpuSerialKernels());
  // Constants: a copy made once (on the device, or with host kernels in host
  // memory, where the executable suites check the logic on numbers).
  mesh::MeshGpuDeviceConstantsOptions constants;
  constants.finiSymbol = options.finiSymbol;
  constants.hostMemory = options.hostKernels;
  pm.addPass(mesh::createMeshGpuDeviceConstants(constants));
  if (options.hostKernels)
    return;
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(mesh::createMeshGpuMergeKernelModules());
  pm.addPass(mesh::createMeshGpuDeviceMemory());
  pm.addPass(mesh::createMeshGpuVerifyHostAccess());
}

/// Upstream's GPU-to-NVVM lowering, spelled out so that the chip, the
/// toolkit and the PTX ISA (the chip's lowest) are ours to choose.
static void addNVVMStage(OpPassManager &pm,
                         const mesh::MeshToNVVMOptions &options) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertIndexToLLVMPassOptions index;
  index.indexBitwidth = 64;
  pm.addPass(createConvertIndexToLLVMPass(index));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createStripDebugInfoPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  // The vector loads and stores of elementwise kernels (convert-gpu-to-nvvm
  // leaves vector ops alone).
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(LLVM::createNVVMOptimizeForTargetPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());

  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = mesh::resolveCudaPath(options.cudaPath);
  pm.addPass(createGpuModuleToBinaryPass(binary));
  // The same program compiles to the same output: no compile times.
  pm.addPass(mesh::createMeshGpuStripCompileTimes());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::mesh::buildMeshToNVVMPipeline(OpPassManager &pm,
                                         const MeshToNVVMOptions &options) {
  addHostStage(pm, options);
  addDeviceStage(pm, options);
  if (options.hostKernels) {
    pm.addPass(mesh::createMeshGpuLaunchToHostLoops());
    mesh::addHostLoweringToLLVM(pm);
    return;
  }
  addNVVMStage(pm, options);
}
