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

/// The options both compile pipelines have (`Derived` is the pipeline's
/// options type, as PassPipelineOptions wants).
template <typename Derived>
struct MeshCompileOptions : public mlir::PassPipelineOptions<Derived> {
  mlir::detail::PassOptions::Option<std::string> initSymbol{
      *this, "init-symbol",
      llvm::cl::desc("Name of the generated start-up function"),
      llvm::cl::init("mesh_module_init")};
  mlir::detail::PassOptions::Option<std::string> finiSymbol{
      *this, "fini-symbol",
      llvm::cl::desc("Name of the generated shut-down function"),
      llvm::cl::init("mesh_module_fini")};
  mlir::detail::PassOptions::Option<bool> writableArguments{
      *this, "writable-arguments",
      llvm::cl::desc("Let kernels write into their callers' tensor arguments"),
      llvm::cl::init(false)};
  mlir::detail::PassOptions::Option<bool> partition{
      *this, "partition",
      llvm::cl::desc("Partition a program that still carries sharding "
                     "annotations first (mesh-partition-if-annotated); "
                     "false: such a program is an error"),
      llvm::cl::init(true)};
  mlir::detail::PassOptions::Option<std::string> signatureSymbol{
      *this, "signature-symbol",
      llvm::cl::desc("Name of a global that holds the exported functions' "
                     "per-device signatures as JSON (mesh-export-signature), "
                     "for loaders; empty: none"),
      llvm::cl::init("")};
  mlir::detail::PassOptions::Option<bool> initInMain{
      *this, "init-in-main",
      llvm::cl::desc("Call start-up and shut-down from main, if any"),
      llvm::cl::init(true)};
};

/// Options of --mesh-to-llvm.
struct MeshToLLVMOptions : public MeshCompileOptions<MeshToLLVMOptions> {
  PassOptions::Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("Compute contractions with the runtime's BLAS GEMM "
                     "(mesh-linalg-to-blas); false: as loops"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> temporalBlocking{
      *this, "temporal-blocking",
      llvm::cl::desc("Run two steps of a stencil loop per pass over its "
                     "field (mesh-temporal-blocking); false: one"),
      llvm::cl::init(true)};
};

/// The start of both compile pipelines: with `partition`, a program that
/// still carries annotations partitioned (without, refused), tensors
/// bufferized (function boundaries included, identity layouts),
/// deallocation, collectives in place where their input dies, collectives
/// to runtime calls (stream-ordered ones with `onStream`), and, with
/// `initInMain`, stdout line-buffered in main. With `fuseElementwise`,
/// chains of elementwise linalg ops become one loop nest before
/// bufferization (the host pipeline; the GPU pipeline keeps one kernel per
/// op until a GPU run has checked the fused kernels). With `loopBuffers`,
/// calls in loops are inlined, loops carry padded blocks, pads fill their
/// border only and a loop's carried buffer alternates between two (the
/// host pipeline; the GPU pipeline's buffers are device memory, not yet
/// measured with these). With `convolutionsAsGemms`, the per-device
/// program's 2-D convolutions become an im2col copy and a contraction
/// (mesh-convolutions-to-gemm: when contractions go to a GEMM library). With
/// a `signatureSymbol`, the exported functions' per-device signatures are
/// recorded in a global of that name.
void addBufferizationAndRuntimeCalls(
    mlir::OpPassManager &pm, bool partition, bool writableArguments,
    llvm::StringRef initSymbol, llvm::StringRef finiSymbol, bool initInMain,
    bool onStream, bool fuseElementwise, bool loopBuffers,
    bool convolutionsAsGemms, llvm::StringRef signatureSymbol = {});

/// The end of --mesh-to-llvm, after the runtime calls: linalg to loops and
/// the standard conversions of host code to the LLVM dialect.
void addHostLoweringToLLVM(mlir::OpPassManager &pm);

/// Partitioned tensor IR with mesh collectives to the LLVM dialect: tensors
/// to linalg, one-shot bufferization, collectives to runtime calls, linalg to
/// loops, deallocation, and the standard conversions to LLVM.
void buildMeshToLLVMPipeline(mlir::OpPassManager &pm,
                             const MeshToLLVMOptions &options);

/// Options of --mesh-to-nvvm: those of --mesh-to-llvm, and the GPU's.
/// How --mesh-to-nvvm computes contractions, and in what precision.
enum class GpuMatmul { Library, Kernels };
enum class MatmulPrecision { Highest, TF32, BF16 };

struct MeshToNVVMOptions : public MeshCompileOptions<MeshToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("GPU architecture the kernels are compiled for (sm_XY); "
                     "the PTX ISA is the lowest the chip supports"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit (ptxas, fatbinary, libdevice); empty: "
                     "$CUDA_HOME, else /usr/local/cuda"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What the kernels become: fatbin (SASS for the chip and "
                     "PTX), bin (SASS only), isa (PTX text, no toolkit run)"),
      llvm::cl::init("fatbin")};
  PassOptions::Option<bool> hostKernels{
      *this, "host-kernels",
      llvm::cl::desc("Test lowering: run the device stage up to the "
                     "launches, then each launch as host loops and the rest "
                     "as --mesh-to-llvm (collectives on the host); checks "
                     "the device stage's rewrites on numbers without a GPU"),
      llvm::cl::init(false)};
  PassOptions::ListOption<int64_t> tileSizes{
      *this, "tile-sizes",
      llvm::cl::desc("Threads per block along the leading parallel "
                     "dimensions (default: chosen per loop nest, 256 "
                     "threads with threadIdx.x along the innermost "
                     "dimension; see mesh-gpu-tile-parallel-loops)")};
  PassOptions::Option<int64_t> vectorBytes{
      *this, "vector-bytes",
      llvm::cl::desc("Bytes per load and store of elementwise kernels: 16, "
                     "8, 4, or 1 for one element per access (see "
                     "mesh-gpu-vectorize-elementwise)"),
      llvm::cl::init(16)};
  PassOptions::Option<GpuMatmul> gpuMatmul{
      *this, "gpu-matmul", llvm::cl::desc("How contractions run on the GPU"),
      llvm::cl::init(GpuMatmul::Library),
      llvm::cl::values(
          clEnumValN(GpuMatmul::Library, "library",
                     "cuBLASLt, with the bias and ReLU/GELU after them in its "
                     "epilogue (mesh-gpu-linalg-to-cublas)"),
          clEnumValN(GpuMatmul::Kernels, "kernels", "our own kernels"))};
  PassOptions::Option<MatmulPrecision> matmulPrecision{
      *this, "matmul-precision",
      llvm::cl::desc("f32 products through the library"),
      llvm::cl::init(MatmulPrecision::Highest),
      llvm::cl::values(
          clEnumValN(MatmulPrecision::Highest, "highest", "exact f32"),
          clEnumValN(MatmulPrecision::TF32, "tf32",
                     "inputs rounded to TF32, f32 accumulation (about 1e-3 "
                     "relative)"),
          clEnumValN(MatmulPrecision::BF16, "bf16",
                     "inputs rounded to BF16, f32 accumulation (about 1e-2 "
                     "relative)"))};
};

/// Partitioned tensor IR with mesh collectives to the LLVM dialect with the
/// kernels in a gpu.binary: bufferization and collectives as for
/// --mesh-to-llvm (collectives on the shared stream), linalg to tiled
/// parallel loops mapped to blocks and threads, every buffer in device
/// memory, the device checks, NVVM, and gpu-module-to-binary.
void buildMeshToNVVMPipeline(mlir::OpPassManager &pm,
                             const MeshToNVVMOptions &options);

/// The CUDA toolkit directory `--mesh-to-nvvm` uses when its `cuda-path`
/// option is `requested`: that, else $CUDA_HOME, else /usr/local/cuda.
std::string resolveCudaPath(llvm::StringRef requested);

/// Registers --mesh-to-llvm and --mesh-to-nvvm.
void registerMeshPipelines();

} // namespace mesh
} // namespace mlir

#endif // MESH_PIPELINES_PIPELINES_H
