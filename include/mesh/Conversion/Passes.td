//===- Passes.td - conversions out of the mesh dialect -----*- tablegen -*-===//
//
// Conversions that leave the mesh dialect: collectives to runtime calls.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_CONVERSION_PASSES_TD
#define MESH_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMeshToRuntime : Pass<"convert-mesh-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lowers memref collectives and mesh queries to mesh runtime calls";
  let description = [{
    Turns every memref-form collective (`all_reduce`, `all_gather`,
    `reduce_scatter`, `all_to_all`, `all_slice`, `broadcast`, `permute`),
    `mesh.barrier`, `mesh.axis_index` and `mesh.axis_size` into calls to the
    C ABI of the mesh runtime (`meshrt_*`, see docs/runtime.md).

    Communicators are created once, never per call: each mesh becomes a
    `meshrt_mesh_declare` and each distinct (mesh, ordered axes) the module
    uses becomes one communicator handle in a global, both filled by a
    start-up function (`init-symbol`, default `mesh_module_init`) that also
    initialises the runtime; `fini-symbol` (default `mesh_module_fini`)
    finalizes it. When the module has a `main`, the two are called at its
    entry and before it returns (`init-in-main`); host code that links the
    object calls them itself.

    Gathers, scatters and exchanges on a non-leading dimension pack or unpack
    their blocks with `linalg.copy` around the runtime call, which works on
    contiguous blocks; inputs with a non-identity layout are copied to a
    contiguous buffer first. Results are new `memref.alloc` buffers.

    With `on-stream` (the GPU path, `--mesh-to-nvvm`), the buffers are in
    device memory and each collective becomes `meshrt_<op>_on_stream` with
    the arguments of `meshrt_<op>` plus the runtime's shared stream
    (`meshrt_gpu_stream`): it is enqueued behind the kernels that produce its
    input, and the kernels after it wait for it, with no synchronisation in
    between. Start-up then calls `meshrt_gpu_select_device` right after
    `meshrt_init`, before communicators are created and kernels loaded.

    Tensor collectives must be bufferized first (`one-shot-bufferize`), and a
    `mesh.shard` left in the module is an error: partition the program first.

    ```mlir
    mesh.mesh @world(["replicate" = 2, "shard" = 4])
    func.func @f(%x: memref<16xf32>) -> memref<16xf32> {
      %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum
          : memref<16xf32> -> memref<16xf32>
      return %0 : memref<16xf32>
    }
    // becomes, with @__mesh_comm_0 filled once by @mesh_module_init:
    //   %comm = llvm.load @__mesh_comm_0
    //   %out = memref.alloc() : memref<16xf32>
    //   llvm.call @meshrt_all_reduce(%comm, %in_ptr, %out_ptr, 16, f32, sum)
    ```
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::cf::ControlFlowDialect"
  ];
  let options = [
    Option<"initSymbol", "init-symbol", "std::string", "\"mesh_module_init\"",
           "Name of the generated start-up function">,
    Option<"finiSymbol", "fini-symbol", "std::string", "\"mesh_module_fini\"",
           "Name of the generated shut-down function">,
    Option<"initInMain", "init-in-main", "bool", "true",
           "Call the start-up and shut-down functions from `main`, if any">,
    Option<"onStream", "on-stream", "bool", "false",
           "Enqueue collectives on the runtime's GPU stream "
           "(`meshrt_*_on_stream`) and select the GPU at start-up">
  ];
}

#endif // MESH_CONVERSION_PASSES_TD
