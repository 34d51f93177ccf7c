//===- Pipelines.cpp - registered pass pipelines --------------------------===//
//
// --mesh-to-llvm: from partitioned tensor IR (per-device shapes, mesh
// collectives) to the LLVM dialect, ready for mlir-translate --mlir-to-llvmir.
// --mesh-to-nvvm (MeshToNVVM.cpp): the same with the kernels on an NVIDIA GPU.
//
//===----------------------------------------------------------------------===//

#include "mesh/Pipelines/Pipelines.h"
#include "mesh/Conversion/Passes.h"
#include "mesh/Dialect/Mesh/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::mesh::addBufferizationAndRuntimeCalls(
    OpPassManager &pm, bool partition, bool writableArguments,
    StringRef initSymbol, StringRef finiSymbol, bool initInMain, bool onStream,
    bool fuseElementwise, bool loopBuffers, bool convolutionsAsGemms,
    StringRef signatureSymbol) {
  // A global program is partitioned first, never compiled whole for every
  // device.
  if (partition)
    pm.addPass(createPartitionIfAnnotated());
  // Refuse annotations that are left and buffers the input frees itself,
  // and keep callers' buffers read-only.
  PrepareForBufferizationOptions prepare;
  prepare.writableArguments = writableArguments;
  prepare.freesBuffers = true;
  pm.addPass(createPrepareForBufferization(prepare));
  // Per-device signatures, for loaders (mesh-compile --shared).
  if (!signatureSymbol.empty()) {
    MeshExportSignatureOptions signature;
    signature.symbol = signatureSymbol.str();
    signature.initSymbol = initSymbol.str();
    signature.finiSymbol = finiSymbol.str();
    signature.deviceBuffers = onStream;
    pm.addPass(createMeshExportSignature(signature));
  }
  // A loop's step written as a call: inlined, so that the rewrites below see
  // its buffers.
  if (loopBuffers)
    pm.addPass(createMeshInlineLoopCalls());

  // Convolutions as an im2col copy and a contraction, which becomes a GEMM
  // call after bufferization (after partitioning: halos need them whole).
  if (convolutionsAsGemms)
    pm.addPass(createConvolutionsToGemm());

  // Tensors: elementwise arith/math to linalg, chains of elementwise linalg
  // ops fused into one loop nest (no buffer for each intermediate, one pass
  // over memory; linalg-fuse-elementwise-ops without a fold MLIR 22 gets
  // wrong), then bufferize everything, function boundaries included, with
  // plain (identity-layout) buffers.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  if (fuseElementwise)
    pm.addNestedPass<func::FuncOp>(createMeshFuseElementwise());
  pm.addPass(createCanonicalizerPass());
  // Loops carry padded blocks; pads fill their border only.
  if (loopBuffers)
    pm.addNestedPass<func::FuncOp>(createMeshPadInPlace());
  // One tensor.empty per use: shared ones make the analysis cubic.
  pm.addNestedPass<func::FuncOp>(createMeshSplitEmptyTensors());
  // A value inserted into a bigger tensor (a pad's interior) is computed in
  // place there, not in a buffer of its own that is then copied.
  if (loopBuffers)
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // A loop may carry a collective's result (a new buffer each iteration).
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Its constants' globals are numbered in an order that changes from run
  // to run: name them by their first use.
  pm.addPass(createMeshNameConstantGlobals());
  // A loop that makes its carried buffer per iteration alternates two.
  if (loopBuffers)
    pm.addNestedPass<func::FuncOp>(createMeshDoubleBufferLoops());

  // Deallocation runs while collectives are still ops: their results carry
  // an Allocate effect, so they get freed like any allocation. The conversion
  // then frees its own staging buffers explicitly.
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);

  // Collectives whose input dies at them write into it (after deallocation:
  // the input's dealloc is the proof).
  pm.addPass(createCollectivesInPlace());

  // Collectives to runtime calls.
  ConvertMeshToRuntimeOptions runtime;
  runtime.initSymbol = initSymbol.str();
  runtime.finiSymbol = finiSymbol.str();
  runtime.initInMain = initInMain;
  runtime.onStream = onStream;
  pm.addPass(createConvertMeshToRuntime(runtime));
  // A program's main: stdout line-buffered before start-up, so that a
  // message printed just before an abort is not lost under mpirun.
  if (initInMain)
    pm.addPass(createMeshLineBufferStdout());
}

void mlir::mesh::buildMeshToLLVMPipeline(OpPassManager &pm,
                                         const MeshToLLVMOptions &options) {
  // Stencil loops two steps per pass over memory, on the global program
  // (partitioning then moves their halos half as often, twice as deep).
  if (options.temporalBlocking)
    pm.addPass(createTemporalBlocking());
  addBufferizationAndRuntimeCalls(
      pm, options.partition, options.writableArguments, options.initSymbol,
      options.finiSymbol, options.initInMain, /*onStream=*/false,
      /*fuseElementwise=*/true, /*loopBuffers=*/true,
      /*convolutionsAsGemms=*/options.blas, options.signatureSymbol);
  // Buffers an iteration allocates and frees (temporaries, collectives'
  // results and staging) allocated once around the loop.
  pm.addNestedPass<func::FuncOp>(createMeshHoistLoopBuffers());
  // Contractions to BLAS calls, before the other linalg ops become loops.
  if (options.blas)
    pm.addPass(createMeshLinalgToBlas());
  // exp, tanh, ... as arithmetic the loop vectoriser widens.
  pm.addNestedPass<func::FuncOp>(createMeshApproximateMath());
  // Reductions with the accumulator carried in a register, reassociable.
  pm.addNestedPass<func::FuncOp>(createMeshReductionLoops());
  // Strided copies (insert_slice / extract_slice, a pad's interior) as
  // linalg.copy loops, which vectorise, instead of the generic memrefCopy of
  // the C runner utilities (one memcpy call per element of a strided view).
  pm.addNestedPass<func::FuncOp>(createMeshGpuCopyKernels());
  addHostLoweringToLLVM(pm);
}

void mlir::mesh::addHostLoweringToLLVM(OpPassManager &pm) {
  // Loops and the conversions to LLVM.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Arithmetic and math on bf16 and f16 computed in f32 between an extf and
  // a truncf (as the CPU has no bf16 arithmetic: LLVM would otherwise widen
  // each op itself and round back with a call of __truncsfbf2, which
  // Debian 12's libgcc lacks); then those conversions as integer
  // arithmetic.
  pm.addNestedPass<func::FuncOp>(math::createMathExtendToSupportedTypes());
  arith::ArithEmulateUnsupportedFloatsOptions bf16;
  bf16.sourceTypeStrs = {"bf16"};
  pm.addNestedPass<func::FuncOp>(
      arith::createArithEmulateUnsupportedFloats(bf16));
  pm.addNestedPass<func::FuncOp>(createMeshExpandBFloat16());
  // The math functions LLVM cannot lower (asinh, erf on f64, ...) or lowers
  // inaccurately (expm1, log1p) as calls of libm.
  pm.addPass(createMeshMathToLibm());
  // bufferization.clone (returned arguments) to memref.alloc + copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Vector loads and stores (the GPU path's elementwise kernels, which the
  // host-kernels target runs here).
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::mesh::registerMeshPipelines() {
  PassPipelineRegistration<MeshToLLVMOptions>(
      "mesh-to-llvm",
      "Partitioned tensor IR with mesh collectives to the LLVM dialect, "
      "collectives as calls into the mesh runtime",
      buildMeshToLLVMPipeline);
  PassPipelineRegistration<MeshToNVVMOptions>(
      "mesh-to-nvvm",
      "Partitioned tensor IR with mesh collectives to the LLVM dialect with "
      "kernels for an NVIDIA GPU in a gpu.binary, collectives as "
      "stream-ordered calls into the mesh runtime",
      buildMeshToNVVMPipeline);
}
