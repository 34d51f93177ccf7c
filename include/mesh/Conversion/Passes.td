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
    `mesh.barrier`, `mesh.axis_index`, `mesh.axis_size`, `mesh.is_member`,
    `mesh.send` and `mesh.recv` into calls to the C ABI of the mesh runtime
    (`meshrt_*`, see docs/runtime.md).

    Communicators are created once, never per call: each mesh becomes a
    `meshrt_mesh_declare` and each distinct (mesh, ordered axes) the module
    uses becomes one communicator handle in a global, both filled by a
    start-up function (`init-symbol`, default `mesh_module_init`) that also
    initialises the runtime, after `meshrt_check_version` has checked that
    the libmeshrt loaded has the major.minor the compiler was built for (a
    program compiled for another stops with a message naming both);
    `fini-symbol` (default `mesh_module_fini`)
    finalizes it. When the module has a `main`, the two are called at its
    entry and before it returns (`init-in-main`); host code that links the
    object calls them itself.

    On a `?` axis, a gather, scatter, slice or exchange whose static types
    fix the group's size (`memref<2xf32> -> memref<16xf32>` gathered is a
    group of 8) uses that size, and start-up checks it once per
    (communicator, size) with `meshrt_comm_expect_size`, so a run on a world
    that resolves the axis otherwise stops there, naming the first op that
    assumed it, instead of reading past a buffer or ignoring part of one.
    Where the types do not fix it, the size comes from the communicator at
    run time.

    A mesh with `devices` (over part of the world) is declared with
    `meshrt_mesh_declare_ranks`; start-up also stores whether this process
    is in it (`meshrt_mesh_is_member`), once. Every op on such a mesh then
    runs under an `scf.if` on that flag, so a process outside the mesh never
    calls the runtime for it: a collective gives zeros there, `axis_index`
    0, `barrier` nothing; `mesh.is_member` is the flag. `mesh.send` and
    `mesh.recv` become `meshrt_send` and `meshrt_recv` to the peer world
    rank, which start-up computes once for each (own mesh, other mesh) pair
    from this process's coordinates and `meshrt_mesh_world_rank`.

    ```mlir
    mesh.mesh @stage0(["dp" = 2, "tp" = 2]) devices = [0, 1, 2, 3]
    mesh.mesh @stage1(["dp" = 2, "tp" = 2]) devices = [4, 5, 6, 7]
    func.func @forward(%act: memref<4x8xf32>) {
      mesh.send %act on @stage0 to @stage1 : memref<4x8xf32>
      return
    }
    // becomes, with both globals filled once by @mesh_module_init:
    //   %peer = llvm.load @__mesh_peer_stage0_stage1_N : i64
    //   %in = llvm.load @__mesh_member_stage0_M : i64
    //   scf.if (%in != 0) {
    //     llvm.call @meshrt_send(%ptr, 32, f32, %peer, 0)
    //   }
    ```

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

    Each op has its own conversion pattern; the host and the `on-stream`
    lowerings are the same patterns, which differ only in the function they
    call. The runtime functions they call, and their types, come from one
    table (`include/mesh/Conversion/RuntimeEntryPoints.def`) whose types are
    the declarations in `meshrt/meshrt.h`: a symbol `meshrt_*` of the module
    declared otherwise is an error.

    Tensor collectives must be bufferized first (`one-shot-bufferize`), and a
    `mesh.shard` left in the module is an error: partition the program first.
    So is an element type the runtime has no dtype for, and a result with a
    non-identity layout; each error names the op. `mesh.send` and
    `mesh.recv` are not lowered with `on-stream` yet (an error).

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

def MeshLineBufferStdout
    : Pass<"mesh-line-buffer-stdout", "::mlir::ModuleOp"> {
  let summary = "Makes stdout line-buffered at the entry of main";
  let description = [{
    Inserts `setvbuf(stdout, NULL, _IOLBF, 0)` at the entry of the module's
    `main`, if it defines one; anything else is left alone. Under `mpirun`
    stdout is a pipe, so it would be fully buffered, and a message printed
    just before an abort (a failed `cf.assert`, such as the status check of
    a runtime call, prints and then aborts) would be lost in the buffer.

    Both compile pipelines run it after `convert-mesh-to-runtime` when they
    may change `main` (`init-in-main`), so the call comes before the
    start-up call. `stdout` and `setvbuf` are declared (as an external
    `llvm.mlir.global` and an `llvm.func`) unless the module has them; a
    symbol of either name with another meaning is an error.

    ```mlir
    func.func @main() -> i32 { ... }
    // becomes
    //   llvm.mlir.global external @stdout() : !llvm.ptr
    //   llvm.func @setvbuf(!llvm.ptr, !llvm.ptr, i32, i64) -> i32
    //   func.func @main() -> i32 {
    //     %stream = llvm.load (llvm.mlir.addressof @stdout) : !llvm.ptr -> !llvm.ptr
    //     llvm.call @setvbuf(%stream, %null, %line_buffered, %zero)
    //     ...
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MeshExportSignature
    : Pass<"mesh-export-signature", "::mlir::ModuleOp"> {
  let summary = "Records the exported functions' per-device signatures in "
                "the module, for loaders";
  let description = [{
    Adds a constant, NUL-terminated JSON string `symbol` (an external
    `llvm.mlir.global`) that says what a loader needs to call the module's
    functions through their C interface: for every public function with
    `llvm.emit_c_interface`, its arguments and results, each with its
    element type and, for tensors and memrefs, its per-device shape (-1 for
    a dynamic size); the names of the start-up and shut-down functions; and
    whether buffers are host or device memory. The Python package
    (`mesh.runtime.load`) reads it from a library made by
    `mesh-compile --shared`, checks each call's arguments against it and
    builds the memref descriptors.

    It runs after partitioning, so the shapes are those of one device. A
    function whose argument or result has a type the C interface cannot
    carry as a buffer or a scalar (a tuple, a vector, a non-integer index
    type of another dialect) is listed with an `unsupported` reason instead
    of its types.

    ```mlir
    func.func @f(%x: tensor<4x8xf32>, %n: index) -> tensor<4x8xf32>
        attributes {llvm.emit_c_interface} { ... }
    // mesh-export-signature{symbol=mesh_module_signature} adds
    //   llvm.mlir.global external constant @mesh_module_signature(...)
    // whose text, laid out, is
    //   {"version": 1, "init": "mesh_module_init",
    //    "fini": "mesh_module_fini", "memory": "host",
    //    "functions": [
    //      {"name": "f",
    //       "args": [
    //         {"dtype": "f32", "shape": [4, 8]},
    //         {"dtype": "index", "shape": null}
    //       ],
    //       "results": [
    //         {"dtype": "f32", "shape": [4, 8]}
    //       ]
    //      }
    //    ]
    //   }
    ```
  }];
  let options = [
    Option<"symbol", "symbol", "std::string", "\"mesh_module_signature\"",
           "Name of the global holding the JSON">,
    Option<"initSymbol", "init-symbol", "std::string", "\"mesh_module_init\"",
           "Name of the module's start-up function">,
    Option<"finiSymbol", "fini-symbol", "std::string", "\"mesh_module_fini\"",
           "Name of the module's shut-down function">,
    Option<"deviceBuffers", "device-buffers", "bool", "false",
           "Buffer arguments and results are device memory (the GPU "
           "target)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MeshFuseElementwise
    : Pass<"mesh-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuses elementwise linalg ops, as linalg-fuse-elementwise-ops "
                "does, without the reshape fold MLIR 22 breaks";
  let description = [{
    The patterns of upstream's `linalg-fuse-elementwise-ops` (elementwise
    producer-consumer fusion, reshapes folded into their producers and
    consumers by expansion, the canonicalizations and constant folding that
    pass adds, applied top-down), with the same control (a producer with one
    use), except that a `tensor.expand_shape` with dynamic output sizes is
    not folded into a `tensor.pad` that produces it: MLIR 22's pattern for
    that (`FoldReshapeWithProducerPadOpByExpansion`) builds the new
    `expand_shape` right after the pad's source and hands it the old one's
    size operands, which are defined later, and the program fails to verify
    ("operand #1 does not dominate this use"). Partitioning makes such pairs
    when a padded tensor is reshaped along a dim split over a `?` axis (its
    per-device size is computed at the reshape).

    `--mesh-to-llvm` runs it on every function after
    `convert-elementwise-to-linalg`.

    ```mlir
    %p = tensor.pad %x low[0, 1] high[0, 1] { ... } : tensor<?x16xi32> to tensor<?x18xi32>
    %n = arith.divui %c8, %devices : index
    %e = tensor.expand_shape %p [[0, 1], [2]] output_shape [%n, 1, 18]
        : tensor<?x18xi32> into tensor<?x1x18xi32>
    // stays as it is (linalg-fuse-elementwise-ops moves the expand_shape
    // above the pad, before %n)
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def MeshGpuLinalgToCublas : Pass<"mesh-gpu-linalg-to-cublas",
                                 "::mlir::ModuleOp"> {
  let summary = "Turns contractions on buffers, with the bias and activation "
                "after them, into calls of the runtime's cuBLASLt GEMM";
  let description = [{
    The device stage's counterpart of `mesh-linalg-to-blas`: the same
    contractions (named ops and generics, matched on their indexing maps
    and body; several batch, m or n loops become an `scf.for` nest) become
    calls of `meshrt_gpu_gemm`, which computes them with cuBLASLt on the
    runtime's shared stream, with what follows folded into the library's
    epilogue:

    * the accumulator: a `linalg.fill` of +0.0 (the product overwrites), or
      a `linalg.broadcast` of a contiguous vector along the output's rows
      (the bias);
    * up to two elementwise `linalg.generic`s after the product that read it
      where it dies: a bias add (a contiguous vector along the output's
      columns, read directly or through a `linalg.broadcast` into a buffer
      that dies there), then ReLU or GELU in its tanh form, in one generic
      or two, read directly or through a reshape (`expand_shape` of
      `[B*S, F]` to `[B, S, F]`).

    Bodies are recognised by what they compute: each is evaluated at sample
    points and compared with `x + b`, `max(x, 0)` and
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (within 1e-6 relative,
    for the f32 constants a program writes); an erf GELU is not cuBLASLt's
    and stays a kernel. The call goes where the last folded op was and
    writes its output; the product's inputs must not be written between.

    Mixed precision: f16 or bf16 inputs widened into an f32 accumulator in
    the body (`out + extf(a) * extf(b)`, the named ops' form of mixed types)
    become `meshrt_gpu_gemm_mixed`, cuBLASLt's product of 16-bit inputs
    accumulated in f32 into an f32 output, with the same epilogues (an f32
    bias): nothing is rounded to the inputs' type.

    Kept as kernels, with a remark under `report`: integer products, other
    mixed types (f32 into f64: cuBLASLt has no such product), what
    `mesh-linalg-to-blas` keeps (several k loops, a body that is more than a
    product), and operands with no static unit stride along their rows or
    columns (cuBLASLt's layouts need one). No epilogue is folded
    onto a product that accumulates into its output, nor a bias whose
    output columns have no unit stride.

    ```mlir
    linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
    linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x32xf32>)
                  outs(%c : memref<8x32xf32>)
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
        affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%c, %b : memref<8x32xf32>, memref<32xf32>)
        outs(%y : memref<8x32xf32>) {
    ^bb0(%v: f32, %bv: f32, %o: f32):
      %s = arith.addf %v, %bv : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    // becomes one call writing %y, with the bias and ReLU:
    //   llvm.call @meshrt_gpu_gemm(%plan, %f32, %c1, %c8, %c32, %c16,
    //       %px, ..., %pw, ..., %py, ..., %overwrite, %pb, %relu,
    //       %highest, %null_stream)
    ```

    `precision` (highest, tf32, bf16) is the arithmetic of f32 products,
    passed with every call and recorded on the module as
    `mesh.matmul_precision`; 16-bit inputs are not rounded further. With
    `host`, the calls are the host runtime's `meshrt_gemm_epilogue` and
    `meshrt_gemm_epilogue_mixed` (the gpu-on-host target: the same rewrite,
    computed by the BLAS on the CPU).
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"highest\"",
           "f32 products: highest (exact f32), tf32 or bf16 (inputs "
           "rounded, f32 accumulation)">,
    Option<"host", "host", "bool", "false",
           "Call the host's meshrt_gemm_epilogue[_mixed] (gpu-on-host) "
           "instead of meshrt_gpu_gemm[_mixed]">,
    Option<"report", "report", "bool", "false",
           "Emit a remark on each contraction kept as kernels, and on each "
           "epilogue not folded, saying why">
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def MeshLinalgToBlas : Pass<"mesh-linalg-to-blas", "::mlir::ModuleOp"> {
  let summary = "Turns contractions on buffers into calls of the runtime's "
                "BLAS GEMM";
  let description = [{
    Every linalg op on buffers that multiplies matrices, a matrix and a
    vector, or two vectors, optionally batched, becomes one call of
    `meshrt_gemm` (runtime/include/meshrt/meshrt.h), which computes it with
    a BLAS. Named ops (`linalg.matmul` with or without transposed indexing
    maps, `batch_matmul`, `matvec`, `vecmat`, `dot`, ...) and generics are
    matched alike: two inputs and one output of one float type (f16, bf16,
    f32, f64), indexing maps that are plain dims and form a contraction with
    exactly one k loop, and a body that is `out + a * b` and nothing else.
    A mixed-precision product, both inputs of a narrower float type than the
    output and widened exactly in the body (`out + ext(a) * ext(b)`: f16 or
    bf16 into f32 or f64, f32 into f64, as the named ops write it), becomes
    one call of `meshrt_gemm_mixed` instead, which takes both dtypes and
    widens the inputs in the runtime (one sgemm or dgemm, nothing rounded to
    the input type). So does a product of 8-bit integers into i32 or i64,
    both inputs widened alike (`arith.extsi`: i8, `arith.extui`: u8), which
    the runtime sums exactly through a float GEMM and wraps as integer
    arithmetic does; a zero fill of an integer output folds like +0.0.
    Where there are several batch, m or n loops (attention on (batch, heads)
    both, after propagation computed it on the unmerged dims; a matmul on
    (batch, rows)), the innermost of each kind is the call's and the others
    become an `scf.for` nest around it, one GEMM per iteration, each
    operand's pointer moved by its stride. Each operand's strides are read from
    its buffer at run time and passed along, so transposed and strided views
    need no copy in the program; the runtime hands row- and column-major
    operands to the library as they are and packs any other layout first.

    A `linalg.fill` of +0.0 into the product's output buffer, when that
    buffer is an allocation of the function and the fill comes earlier in
    the same block with nothing in between that may touch it (only another
    allocation is known apart: an argument, a select or a call result may
    be the same buffer), is folded into the call: the library then
    overwrites the output instead of adding to it.

    Everything else stays as it is: other integer products (i32 inputs,
    whose products a double cannot hold exactly),
    other mixed element types (inputs of two types, a narrower output),
    several k loops, a k loop that also
    indexes the output (an elementwise product), a buffer whose layout is
    not strided, a body that does more.
    With `report`, each contraction-like op that is kept says why in a
    remark; `-debug-only=mesh-linalg-to-blas` prints the same and each
    rewrite.

    ```mlir
    linalg.fill ins(%zero : f32) outs(%c : memref<64x32xf32>)
    linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x32xf32>)
                  outs(%c : memref<64x32xf32>)
    // becomes
    //   %s = llvm.call @meshrt_gemm(%f32, %c1, %c64, %c32, %c128,
    //          %pa, %c0, %c128, %c1, %pb, %c0, %c32, %c1,
    //          %pc, %c0, %c32, %c1, %overwrite) : (...) -> i32
    //   (status checked)
    ```

    `--mesh-to-llvm` runs it after bufferization and the collectives'
    rewrites, before the remaining linalg ops become loops.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark on each contraction-like op kept as loops, saying "
           "why">
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def MeshSplitEmptyTensors
    : Pass<"mesh-split-empty-tensors", "::mlir::func::FuncOp"> {
  let summary = "Gives each use of a tensor.empty its own, before "
                "bufferization";
  let description = [{
    A `tensor.empty` shared by several ops (one per shape, as after CSE, the
    way torch-mlir writes destinations) is cloned right before each of its
    users, and the shared one erased. `tensor.empty` has a shape and no contents, so the
    program means the same; one-shot bufferization no longer treats all
    those destinations as one buffer whose writes must be checked against
    each other pairwise. On the 48-layer GPT stack of bench/partition/gpt.py
    (tp plan) it took 17.5 of `--mesh-to-llvm`'s 20 s, and grew with the
    cube of the layers. Both compile pipelines run it right before
    `one-shot-bufferize`.

    ```mlir
    %e = tensor.empty() : tensor<8xf32>
    %a = linalg.fill ins(%x : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %b = linalg.fill ins(%y : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    // becomes
    //   %e0 = tensor.empty() : tensor<8xf32>
    //   %a = linalg.fill ins(%x : f32) outs(%e0 : ...)
    //   %e1 = tensor.empty() : tensor<8xf32>
    //   %b = linalg.fill ins(%y : f32) outs(%e1 : ...)
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def MeshNameConstantGlobals
    : Pass<"mesh-name-constant-globals", "::mlir::ModuleOp"> {
  let summary = "Names and orders the constants' globals by their first use, "
                "so that compiling a program twice gives the same output";
  let description = [{
    `one-shot-bufferize` turns each constant tensor into a private constant
    `memref.global` named `__constant_<type>` with a number that keeps the
    name unique. It visits the functions that call nothing in the order of
    a hash map keyed by their addresses, so the numbers and the globals'
    order changed from run to run (and `--target=cuda`'s device copies,
    named after them, with them). This pass, right after bufferization in
    both compile pipelines, renames every private constant global named
    `__constant_*` whose only uses are `memref.get_global`s to
    `__constant_<type>_<n>`, `n` counting them in the order of their first
    use in the module, and puts them in that order at the start of the
    module. A global used by anything else, and one the program named
    otherwise, keeps its name and place.

    ```mlir
    memref.global "private" constant @__constant_4xf32_17 : memref<4xf32> = dense<1.0>
    memref.global "private" constant @__constant_2xi32 : memref<2xi32> = dense<3>
    func.func @f() { %a = memref.get_global @__constant_2xi32 : memref<2xi32> ... }
    func.func @g() { %b = memref.get_global @__constant_4xf32_17 : memref<4xf32> ... }
    // becomes
    //   memref.global "private" constant @__constant_2xi32_0 ...
    //   memref.global "private" constant @__constant_4xf32_1 ...
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def MeshInlineLoopCalls
    : Pass<"mesh-inline-loop-calls", "::mlir::ModuleOp"> {
  let summary = "Inlines the calls made inside loops, before bufferization";
  let description = [{
    Each `func.call` inside a loop (`scf.for`, `scf.while`) of a function
    with a one-block body is replaced by that body; the callee stays (it may
    be public). A time-stepping loop written as a call of its step then
    shows the step's buffers to `mesh-pad-in-place`,
    `mesh-double-buffer-loops` and `mesh-hoist-loop-buffers`, which remove
    the allocations of each iteration; across a call boundary each call
    would allocate its results. Calls that the inlined bodies bring into
    loops are inlined too, up to 16 rounds (a recursion through loops
    stops there, as calls). Both compile pipelines run it right after
    partitioning.

    ```mlir
    func.func @step(%u: tensor<8xf32>) -> tensor<8xf32> {
      %v = arith.addf %u, %u : tensor<8xf32>
      return %v : tensor<8xf32>
    }
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<8xf32>) {
      %v = func.call @step(%u) : (tensor<8xf32>) -> tensor<8xf32>
      scf.yield %v : tensor<8xf32>
    }
    // becomes
    //   %r = scf.for ... iter_args(%u = %u0) -> (tensor<8xf32>) {
    //     %v = arith.addf %u, %u : tensor<8xf32>
    //     scf.yield %v : tensor<8xf32>
    //   }
    ```
  }];
}

def MeshPadInPlace : Pass<"mesh-pad-in-place", "::mlir::func::FuncOp"> {
  let summary = "Carries padded blocks through loops and fills only a pad's "
                "border";
  let description = [{
    Two rewrites on tensors, before bufferization, for stencils and halos:

    - An `scf.for` whose iteration argument is used only by one
      `tensor.pad` (static pads, a padding value from outside the loop) in
      the loop's body carries the padded tensor instead: the initial value
      is padded once before the loop, each iteration yields the pad of its
      result, the body reads the carried block, and the loop's users get its
      interior (`tensor.extract_slice`). The program means the same.
      The pad each iteration yields fills only the parts of its border that
      the next iteration reads before it overwrites them: the carried block
      is followed through the `tensor.insert_slice`s that write into it (an
      `extract_slice` reads its box, any other use everything still
      unwritten; a strip counts as written once one insert covers it
      whole). A halo exchange writes the whole border before the stencil
      reads it, so its fills shrink to the few elements its sends read on
      the way (the corners of the rows it sends: 4 elements instead of the
      two border columns of a 2-D block).
    - Every `tensor.pad` with static pads and shapes and a padding value
      that does not depend on the position becomes a `tensor.empty`, one
      `linalg.fill` of each border strip (the 2 x rank strips cover the
      border once) and the source inserted into the interior
      (`tensor.insert_slice`). Bufferized, the block is no longer filled
      whole and then overwritten; with `eliminate-empty-tensors`, the op
      that computes the source writes straight into the interior.

    Together, a Jacobi step's result is written into the interior of the
    next step's padded block, as a hand-written stencil with halo rings
    does: no copy of the grid per step, and the halo exchange writes the
    border in place.

    ```mlir
    %p = tensor.pad %u low[1] high[1] {
    ^bb0(%i: index):
      tensor.yield %zero : f32
    } : tensor<8xf32> to tensor<10xf32>
    // becomes
    //   %e = tensor.empty() : tensor<10xf32>
    //   %l = tensor.extract_slice %e[0] [1] [1]
    //   %lf = linalg.fill ins(%zero : f32) outs(%l : tensor<1xf32>)
    //   %e1 = tensor.insert_slice %lf into %e[0] [1] [1]
    //   %h = tensor.extract_slice %e1[9] [1] [1]
    //   %hf = linalg.fill ins(%zero : f32) outs(%h : tensor<1xf32>)
    //   %e2 = tensor.insert_slice %hf into %e1[9] [1] [1]
    //   %p = tensor.insert_slice %u into %e2[1] [8] [1]
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
}

def MeshDoubleBufferLoops
    : Pass<"mesh-double-buffer-loops", "::mlir::func::FuncOp"> {
  let summary = "Makes a loop that allocates its carried buffer per "
                "iteration alternate between two buffers";
  let description = [{
    After bufferization, before deallocation: an `scf.for` that yields, as
    an iteration argument, a `memref.alloc` of a static shape made in its
    body gets one more iteration argument, the spare, a buffer allocated
    before the loop. Each iteration writes into the spare instead of
    allocating, and hands over the buffer it read as the next spare. The
    buffer of the loop's initial value takes its turn when the function
    allocated it and nothing else uses it after the loop (a padded block
    made for the loop); else the initial value is copied once, before the
    loop, into a buffer that does. Only when nothing can refer to either
    buffer once an iteration ends: every alias of them (views,
    transitively) is used inside the loop by ops that read or write it or
    make fresh buffers (collectives), never yielded elsewhere, passed to a
    call, freed, turned into a pointer or a tensor. The deallocation
    pipeline then frees the buffer left over after the loop.

    ```mlir
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (memref<8xf32>) {
      %v = memref.alloc() : memref<8xf32>
      linalg.add ins(%u, %f : ...) outs(%v : memref<8xf32>)
      scf.yield %v : memref<8xf32>
    }
    // becomes (%u0 an argument: copied once)
    //   %c = memref.alloc() : memref<8xf32>
    //   memref.copy %u0, %c : memref<8xf32> to memref<8xf32>
    //   %s = memref.alloc() : memref<8xf32>
    //   %r:2 = scf.for %i = %c0 to %n step %c1
    //       iter_args(%u = %c, %spare = %s) -> (memref<8xf32>, memref<8xf32>) {
    //     linalg.add ins(%u, %f : ...) outs(%spare : memref<8xf32>)
    //     scf.yield %spare, %u : memref<8xf32>, memref<8xf32>
    //   }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"
  ];
}

def MeshHoistLoopBuffers
    : Pass<"mesh-hoist-loop-buffers", "::mlir::func::FuncOp"> {
  let summary = "Allocates once, around the loop, each buffer an iteration "
                "allocates and frees";
  let description = [{
    After deallocation and the runtime calls: a `memref.alloc` in an
    `scf.for` body, of a static shape or sizes defined before the loop, whose `memref.dealloc` is in the same block
    (a temporary, a collective's result or staging buffer) moves before the
    loop, its dealloc after it. Nothing uses the buffer after its dealloc,
    and its contents were undefined at each allocation, so one buffer
    serves every iteration. Inner loops first: a buffer leaves every loop
    around it.

    ```mlir
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<8xf32>
      "test.use"(%t) : (memref<8xf32>) -> ()
      memref.dealloc %t : memref<8xf32>
    }
    // becomes
    //   %t = memref.alloc() : memref<8xf32>
    //   scf.for %i = %c0 to %n step %c1 {
    //     "test.use"(%t) : (memref<8xf32>) -> ()
    //   }
    //   memref.dealloc %t : memref<8xf32>
    ```
  }];
}

def MeshApproximateMath
    : Pass<"mesh-approximate-math", "::mlir::func::FuncOp"> {
  let summary = "Rewrites f32 math functions as polynomial approximations "
                "the loop vectoriser can widen";
  let description = [{
    Applies MLIR's polynomial approximations of the math dialect to the
    functions on models' hot paths whose approximations hold over the whole
    f32 range: exp, expm1, log, log1p, log2, tanh and erf, with f16 and
    bf16 arguments widened to f32 first. The results are plain arithmetic,
    so the loops that compute them vectorise; a call of `expf` or `tanhf`
    per element does not. f64 keeps the library calls, and so do sin and
    cos (MLIR's range reduction fails for large arguments: sin(1e20) gave
    -inf), cbrt (NaN for infinity), atan2 (NaN for (0, 0)), erfc, asin,
    acos and atan.

    The approximations build 2^k from the exponent bits and know no
    subnormals, so around each f32 exp, log and log2 the pass adds a
    rescaling: exp(x) = exp(x / 2)^2 below x = -87, log(x) = log(x * 2^23) -
    23 ln 2 below 2^-126 (two selects and two arithmetic ops each).

    The approximations are accurate to a few units in the last place of f32
    (docs/compiling.md gives the errors measured against numpy on the
    benchmark kernels). `--mesh-to-llvm` runs it after the contractions
    become BLAS calls, before the linalg ops become loops.

    ```mlir
    %y = math.exp %x : f32
    // becomes a range reduction (x = k ln 2 + r), a polynomial in r and a
    // scaling by 2^k built from the exponent bits: arith.mulf, arith.addf,
    // math.fma, arith.fptosi, arith.shli, arith.bitcast, ... and no call.
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MeshMathToLibm : Pass<"mesh-math-to-libm", "::mlir::ModuleOp"> {
  let summary = "Calls libm for the math functions LLVM has no intrinsic "
                "for, and for expm1 and log1p";
  let description = [{
    MLIR's MathToLLVM has no lowering for `math.acosh`, `math.asinh`,
    `math.atanh`, `math.cbrt`, `math.erf` and `math.erfc` (they reached
    `mlir-translate` and failed there), and lowers `math.expm1` as
    exp(x) - 1 and `math.log1p` as log(1 + x), which lose every digit for
    small x (expm1(1e-20) gave 0). This pass turns exactly those ops into
    calls of the C library's functions (`asinhf`, `erf`, `expm1`, ...; a
    vector is computed element by element), with MLIR's MathToLibm patterns,
    and leaves every other math op to MathToLLVM. `--mesh-to-llvm` runs it
    after `mesh-approximate-math` (which already replaced the f32 expm1,
    log1p and erf on the hot paths), before the conversions to LLVM.

    ```mlir
    %y = math.expm1 %x : f64
    %z = math.asinh %v : vector<4xf32>
    // become
    %y = call @expm1(%x) : (f64) -> f64
    // and four calls of @asinhf on the vector's elements.
    ```
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::vector::VectorDialect", "::mlir::arith::ArithDialect"
  ];
}

def MeshExpandBFloat16
    : Pass<"mesh-expand-bf16", "::mlir::func::FuncOp"> {
  let summary = "Rewrites bf16 conversions as integer arithmetic on the "
                "host";
  let description = [{
    Applies MLIR's bf16 expansion (`arith::populateExpandBFloat16Patterns`):
    `arith.truncf` to bf16 rounds to nearest even with integer operations on
    the f32 bits (a NaN stays a NaN), and `arith.extf` from bf16 shifts the
    bits into an f32. Without it LLVM lowers the truncation of a CPU without
    AVX-512 BF16 to a call of `__truncsfbf2`, which the libgcc of GCC 12
    (Debian 12) lacks, so a program that stores bf16 does not link.
    `--mesh-to-llvm` runs it (also for `--target=gpu-on-host`'s kernels) just
    before the conversions to LLVM, after MLIR's
    `math-extend-to-supported-types` and
    `arith-emulate-unsupported-floats{source-types=bf16}` have put every
    other bf16 op (an add, a division, a comparison, a math function) in f32
    between an `arith.extf` and an `arith.truncf`: LLVM would otherwise widen
    those itself and round back with the same missing call. The fast-math
    flags those passes put on the conversions are dropped (ArithToLLVM would
    copy them onto `llvm.fpext` as an attribute `mlir-translate` rejects).

    ```mlir
    %b = arith.truncf %a : f32 to bf16
    // becomes arith.bitcast to i32, the rounding bias added, the top 16
    // bits kept (arith.shrui, arith.trunci), a select for NaN, and an
    // arith.bitcast to bf16.
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def MeshReductionLoops
    : Pass<"mesh-reduction-loops", "::mlir::func::FuncOp"> {
  let summary = "Lowers reductions to loops that carry the accumulator, "
                "reassociable so that they vectorise";
  let description = [{
    A linalg op on buffers whose reduction loops are all inside its parallel
    loops (a row sum, softmax's max and sum, layer norm's sums, an integer
    matmul) becomes `scf.for` loops: the parallel ones, a load of each
    output element, the reduction loops carrying the values as iteration
    arguments, and one store. `convert-linalg-to-loops` would load and
    store the output in every iteration, which LLVM cannot move out of the
    loop when the output and the input may alias, so the loop stayed scalar.
    The float ops of the body get the `reassoc` fast-math flag, so LLVM's
    vectoriser may keep partial sums in vector lanes: the result differs
    from the sequential order by rounding only. Ops whose innermost loop is
    parallel (a column sum) are left to `convert-linalg-to-loops`: their
    inner loop is elementwise and vectorises as it is. Indexing maps must
    be projected permutations (a convolution's are not: it stays), the
    outputs indexed by parallel loops only, and each output a buffer the
    function allocates that no input is a view of: the accumulator stays in
    a register until the final store, so an input that aliased the output
    would read stale values (an output that is an argument may be aliased
    by an input argument, so it stays too).

    ```mlir
    linalg.generic {indexing_maps = [(i, j) -> (i, j), (i, j) -> (i)],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<64x128xf32>) outs(%sum : memref<64xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    // becomes
    //   scf.for %i = %c0 to %c64 step %c1 {
    //     %init = memref.load %sum[%i]
    //     %r = scf.for %j = %c0 to %c128 step %c1 iter_args(%acc = %init) {
    //       %a = memref.load %x[%i, %j]
    //       %s = arith.addf %a, %acc fastmath<reassoc> : f32
    //       scf.yield %s : f32
    //     }
    //     memref.store %r, %sum[%i]
    //   }
    ```

    `--mesh-to-llvm` runs it after `mesh-linalg-to-blas` and
    `mesh-approximate-math`, before `convert-linalg-to-loops`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

//===----------------------------------------------------------------------===//
// The device stage of --mesh-to-nvvm
//===----------------------------------------------------------------------===//

def MeshGpuCopyKernels
    : Pass<"mesh-gpu-copy-kernels", "::mlir::func::FuncOp"> {
  let summary = "Turns strided buffer copies into linalg.copy, so they become kernels";
  let description = [{
    Part of the device stage of `--mesh-to-nvvm`, before linalg becomes
    parallel loops. A `memref.copy` between contiguous buffers becomes one
    `gpu.memcpy` later (`mesh-gpu-device-memory`); a copy into or out of a
    strided view (what `tensor.insert_slice` and `tensor.extract_slice`
    bufferize to) has no such form, so this pass rewrites it as a
    `linalg.copy`, which becomes a kernel like any other linalg op.

    ```mlir
    memref.copy %src, %view : memref<4x8xf32> to memref<4x8xf32, strided<[16, 1]>>
    // becomes
    linalg.copy ins(%src : memref<4x8xf32>) outs(%view : memref<4x8xf32, strided<[16, 1]>>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def MeshGpuFullReductions
    : Pass<"mesh-gpu-full-reductions", "::mlir::func::FuncOp"> {
  let summary = "Makes reductions to one value two parallel steps";
  let description = [{
    Part of the device stage of `--mesh-to-nvvm`, after linalg ops became
    loops and before `mesh-gpu-row-reductions`. A reduction over every
    dimension (a loss's sum or mean, a norm, a count of matches) has no
    parallel dimension: it is a nest of `scf.for` loops whose innermost body
    loads an accumulator at a place none of the loops moves, combines it
    with an element (`addf`, `maximumf`, `addi`, `ori`, ... on the types
    `mesh-gpu-row-reductions` takes) and stores it back. Left alone it
    would run as a kernel of one thread.

    This pass makes the nest (outside any parallel loop; each loop's bounds
    defined outside the nest, each body but the innermost only the next
    loop; a loop around it, such as a training loop, is looked into) two
    steps:

    1. an `scf.parallel` over P partial slots, P = the nest's iterations /
       `elements-per-thread`, from 1 to `max-partials`: slot g folds the
       iterations g, g + P, g + 2P, ... (each one's loop variables taken
       back from its position, the innermost fastest, so neighbouring
       threads read neighbouring elements) from the combiner's neutral
       element, and stores its value in a buffer of P partial values;
    2. a one-row reduction of that buffer into the accumulator, which
       `mesh-gpu-row-reductions` makes one block with a tree across its
       threads.

    With `host-kernels`, both steps run as host loops, which checks the
    first step's slots on numbers. Floating-point sums are reassociated, as
    a GPU library's are; the order is fixed by P, so a program gives the
    same result every run.

    ```mlir
    scf.for %i = %c0 to %c4096 step %c1 {
      scf.for %j = %c0 to %c1024 step %c1 {
        %a = memref.load %x[%i, %j] : memref<4096x1024xf32>
        %o = memref.load %s[] : memref<f32>
        %r = arith.addf %a, %o : f32
        memref.store %r, %s[] : memref<f32>
      }
    }
    // becomes (P = 4194304 / 32, at most 65536)
    %partials = memref.alloc(%p) : memref<?xf32>
    scf.parallel (%g) = (%c0) to (%p) step (%c1) {
      %v = scf.for %k = %g to %c4194304 step %p iter_args(%acc = %zero) -> (f32) {
        %j = arith.remui %k, %c1024 : index
        %i = arith.divui %k, %c1024 : index
        %a = memref.load %x[%i, %j] : memref<4096x1024xf32>
        %r = arith.addf %a, %acc : f32
        scf.yield %r : f32
      }
      memref.store %v, %partials[%g] : memref<?xf32>
    }
    scf.parallel (%row) = (%c0) to (%c1) step (%c1) {
      scf.for %k = %c0 to %p step %c1 {
        %a = memref.load %partials[%k] : memref<?xf32>
        %o = memref.load %s[] : memref<f32>
        %r = arith.addf %a, %o : f32
        memref.store %r, %s[] : memref<f32>
      }
    }
    memref.dealloc %partials : memref<?xf32>
    ```
  }];
  let options = [
    Option<"elementsPerThread", "elements-per-thread", "int64_t", "32",
           "Iterations each partial slot folds (at least)">,
    Option<"maxPartials", "max-partials", "int64_t", "65536",
           "Most partial slots (threads of the first step)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def MeshGpuRowReductions
    : Pass<"mesh-gpu-row-reductions", "::mlir::func::FuncOp"> {
  let summary = "Makes row reductions one block per row with a tree "
                "across its threads";
  let description = [{
    Part of the device stage of `--mesh-to-nvvm`, after linalg ops became
    `scf.parallel` nests (and were fused) and before they are tiled. A
    reduction along the last dimension (softmax's max and sum, layer norm's
    sums, a loss per row) is an `scf.parallel` over the rows whose body
    holds an `scf.for` over the row that loads an accumulator, combines
    (`addf`, `maximumf`, `mulf`, `addi`, `maxsi`, `andi`, ...) and stores it
    back. Tiled like other nests, each thread would walk one row, and
    neighbouring threads would read addresses a row apart.

    This pass turns such a nest (at most three parallel dimensions; f16,
    bf16, f32 or f64 accumulators, or signless integers up to 64 bits; every
    `scf.for` in it such a reduction, whose loads take the loop's induction
    variable as their last index or not at all; the rest of the body
    region-free ops) into one `gpu.launch` with a block per row (all on
    `blockIdx.x`, row-major over the nest's dimensions, since y and z stop
    at 65535 blocks) and
    `threads-per-block` threads (fewer for short static rows, at least 32):
    each thread folds the row's elements `tid`, `tid + threads`, ... from
    the combiner's neutral element, `gpu.all_reduce` combines the block's
    partial values (warp shuffles and shared memory, by
    `convert-gpu-to-nvvm`), and thread 0 combines the result into the
    accumulator. The warp shuffles move 32-bit values (64-bit ones as two
    halves): 16-bit floats are combined across the block in f32 and rounded
    back once, narrow integers in i32 (sign-extended for `maxsi`/`minsi`,
    zero-extended otherwise), which gives the narrow result exactly.
    What else the row does (the fill before, a division after,
    a second reduction reading the first one's result) runs once per row:
    stores in thread 0, each followed by `gpu.barrier`. Floating-point sums
    are reassociated, as a GPU library's are.

    Not run with `host-kernels` (the test target runs launches as host
    loops and has no barrier): there, rows stay one thread each.

    ```mlir
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      scf.for %j = %c0 to %c1000 step %c1 {
        %a = memref.load %x[%i, %j] : memref<64x1000xf32>
        %o = memref.load %m[%i] : memref<64xf32>
        %r = arith.maximumf %a, %o : f32
        memref.store %r, %m[%i] : memref<64xf32>
      }
    }
    // becomes
    gpu.launch blocks(%b, %by, %bz) in (%gx = %c64, ...) threads(%t, %ty, %tz) in (%nx = %c256, ...) {
      %p = scf.for %j = %t to %c1000 step %c256 iter_args(%acc = %ninf) -> (f32) {
        %a = memref.load %x[%b, %j] : memref<64x1000xf32>
        %r = arith.maximumf %a, %acc : f32
        scf.yield %r : f32
      }
      %all = gpu.all_reduce maximumf %p uniform {} : (f32) -> f32
      scf.if %first {   // %t == 0
        %o = memref.load %m[%b] : memref<64xf32>
        %r = arith.maximumf %all, %o : f32
        memref.store %r, %m[%b] : memref<64xf32>
      }
      gpu.barrier
      gpu.terminator
    }
    ```
  }];
  let options = [
    Option<"threadsPerBlock", "threads-per-block", "int64_t", "256",
           "Threads per block (a power of two from 32 to 1024)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def MeshGpuVectorizeElementwise
    : Pass<"mesh-gpu-vectorize-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Makes elementwise kernels move 16 bytes per load and store";
  let description = [{
    Part of the device stage of `--mesh-to-nvvm`, after linalg ops became
    `scf.parallel` nests (and were fused, and row reductions took theirs)
    and before they are tiled. In an elementwise nest each thread would
    load and store one element per instruction (4 bytes of f32); a GPU
    reaches its memory bandwidth with fewer, wider accesses
    (`ld.global.v4.f32`).

    This pass makes the innermost dimension of such a nest count vectors of
    V elements (its loop keeps step 1, the element index is the vector's
    times V), V = `vector-bytes` / the widest element the body loads or
    stores (4 for f32, 8 for f16, 2 for f64), and its row accesses
    `vector.load`/`vector.store` of V elements with an alignment of their
    size; the arith and math ops between them work on vectors, and values
    the whole vector shares (a scalar load that does not move along the row,
    a constant, an outer index) are broadcast. A nest is rewritten when:

    * its body has no regions and no other memory effect than loads and
      stores, and every op that uses a loaded row element is an
      elementwise `arith` or `math` op;
    * the innermost dimension runs from 0 with step 1 to a static multiple
      of V, and the loop's variable is used only as the last index of loads
      and stores (no shifted index, no gather, no transposed read);
    * every buffer it moves along is contiguous along its last dimension,
      with static outer strides and offset that are multiples of V.

    A buffer the function allocated starts aligned (the allocator's 16
    bytes on the host, 256 on the device). When an argument or a view of
    one is among the buffers, its start is tested on the host before the
    launch, and the scalar nest stays as the other branch of an `scf.if`:
    a caller's misaligned view runs correctly, only slower.
    `vector-bytes=1` leaves every nest as it is.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
      %a = memref.load %x[%i, %j] : memref<64x1024xf32>
      %r = arith.maximumf %a, %zero : f32
      memref.store %r, %y[%i, %j] : memref<64x1024xf32>
    }
    // becomes (%x and %y allocated in the function)
    scf.parallel (%i, %v) = (%c0, %c0) to (%c64, %c256) step (%c1, %c1) {
      %j = arith.muli %v, %c4 : index
      %a = vector.load %x[%i, %j] {alignment = 16 : i64} : memref<64x1024xf32>, vector<4xf32>
      %z = vector.broadcast %zero : f32 to vector<4xf32>
      %r = arith.maximumf %a, %z : vector<4xf32>
      vector.store %r, %y[%i, %j] {alignment = 16 : i64} : memref<64x1024xf32>, vector<4xf32>
    }
    ```
  }];
  let options = [
    Option<"vectorBytes", "vector-bytes", "int64_t", "16",
           "Bytes per access of the widest element: 16, 8, 4, or 1 for "
           "scalar accesses">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def MeshGpuTileParallelLoops
    : Pass<"mesh-gpu-tile-parallel-loops", "::mlir::func::FuncOp"> {
  let summary = "Splits each parallel loop nest into blocks of threads, "
                "threadIdx.x along rows";
  let description = [{
    Part of the device stage of `--mesh-to-nvvm`, after linalg ops became
    `scf.parallel` nests and before `convert-parallel-loops-to-gpu`. Each
    outermost `scf.parallel` (outside any `gpu.launch`) is tiled into a
    loop over blocks and a loop over the threads of a block, and both get
    their hardware mapping:

    * threads: the innermost dimension takes as many of
      `threads-per-block` as its static extent can use (rounded up to a
      power of two; all of them when the extent is dynamic), the next one
      out what is left, and so on; threads are mapped innermost first, so
      that `threadIdx.x` walks along the last dimension and neighbouring
      threads touch neighbouring elements of a row-major buffer (coalesced
      loads and stores);
    * blocks: mapped outermost first, so that the long outer dimensions
      (rows, batches) are on `blockIdx.x`, which has no 65535 limit.

    A nest of more than three dimensions first has its outer dimensions
    collapsed into one, so the two innermost stay on threads. `tile-sizes`
    replaces the automatic sizes (threads per block along the leading
    dimensions, as `parallel-loop-tiling` takes them), with no collapsing.
    Tiles have no min/max bounds: ragged and dynamic extents become guarded
    threads of one kernel. Parallel loops nested inside run sequentially in
    their thread.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4096, %c1024) step (%c1, %c1) { ... }
    // becomes blocks (%bi, %bj) of 1 x 256 threads: 4096 x 4 blocks, with
    // %bi on blockIdx.x, %bj on blockIdx.y and %j's thread on threadIdx.x
    ```
  }];
  let options = [
    ListOption<"tileSizes", "tile-sizes", "int64_t",
               "Threads per block along the leading dimensions, instead of "
               "the automatic choice">,
    Option<"threadsPerBlock", "threads-per-block", "int64_t", "256",
           "Threads per block of the automatic choice (a power of two, at "
           "most 1024)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect"];
}

def MeshGpuHostBuffers : Pass<"mesh-gpu-host-buffers", "::mlir::ModuleOp"> {
  let summary = "Marks the buffers that only scalar host code touches";
  let description = [{
    The first step of the device stage of `--mesh-to-nvvm`. Every buffer
    moves to device memory except the ones this pass marks with
    `mesh.host_buffer`: `memref.alloc`s (and parameters of private
    functions) whose every use, through views, is a host `memref.load`,
    `memref.store` into it, `memref.dim`, `memref.dealloc`, or a
    `func.call` passing it to a private function that uses it
    the same way and is never passed anything else. No kernel, copy or
    runtime call ever sees such a buffer (taking its address, as the
    lowered collectives do, disqualifies it), so it stays in host memory:
    `mesh-gpu-serial-kernels` does not make kernels of host code that only
    touches it, `mesh-gpu-device-memory` keeps its allocation, loads and
    frees on the host (no copy, no synchronisation), and
    `mesh-gpu-verify-host-access` accepts them. The typical case is the
    pointer lists that buffer deallocation builds for its `dealloc_helper`:
    pointer comparisons, which must not become a one-thread kernel whose
    flags the host then reads back one synchronisation at a time.

    ```mlir
    %ptrs = memref.alloc() {mesh.host_buffer} : memref<2xindex>
    memref.store %p, %ptrs[%c0] : memref<2xindex>
    call @dealloc_helper(%ptrs, ...)
    func.func private @dealloc_helper(%arg0: memref<?xindex> {mesh.host_buffer}, ...)
    ```
  }];
}

def MeshGpuSerialKernels
    : Pass<"mesh-gpu-serial-kernels", "::mlir::ModuleOp"> {
  let summary = "Wraps host loop nests on buffers in one-thread kernels";
  let description = [{
    After `convert-parallel-loops-to-gpu`, code that touches buffers but has
    no parallel dimension (a full reduction is an `scf.for`, a rank-0
    `linalg` op is a few loads and a store) is still host code. On the GPU
    path every buffer lives in device memory, so that host code would
    dereference device pointers. This pass moves each such nest, with the
    loads and the side-effect-free ops that compute what it stores, into a
    `gpu.launch` of one block of one thread: correct, serial, and never run
    on the host.

    A root is an op of a host function, outside any `gpu.launch`, that has
    no results, reads or writes a memref, and contains no GPU op and no
    call. Ops with results that the host uses later (a load whose value
    feeds host control flow) are left alone; the device verifier
    (`mesh-gpu-verify-host-access`) reports them.

    ```mlir
    func.func @sum(%x: memref<64xf32>, %out: memref<f32>) {
      scf.for %i = %c0 to %c64 step %c1 {
        %a = memref.load %x[%i] : memref<64xf32>
        %s = memref.load %out[] : memref<f32>
        %t = arith.addf %s, %a : f32
        memref.store %t, %out[] : memref<f32>
      }
      return
    }
    // becomes
    //   gpu.launch blocks(...) in (%1 = %c1, %2 = %c1, %3 = %c1)
    //              threads(...) in (%4 = %c1, %5 = %c1, %6 = %c1) {
    //     scf.for %i = %c0 to %c64 step %c1 { ... }
    //     gpu.terminator
    //   }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect"];
}

def MeshGpuStripCompileTimes
    : Pass<"mesh-gpu-strip-compile-times", "::mlir::ModuleOp"> {
  let summary = "Drops the compile times gpu-module-to-binary records on "
                "each object";
  let description = [{
    Upstream's `gpu-module-to-binary` records how long the kernels took to
    compile (`LLVMIRToISATimeInMs`, `ISAToBinaryTimeInMs`) in the properties
    of each `#gpu.object`. Those differ on every run, so `--target=cuda`
    would never compile a program to the same output twice. This pass, right
    after it in `--mesh-to-nvvm`, removes the two properties and keeps the
    others; the binaries themselves do not change.

    ```mlir
    gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">,
        properties = {ISAToBinaryTimeInMs = 14443 : i64,
                      LLVMIRToISATimeInMs = 3460 : i64}, "...">]
    // becomes
    //   gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, "...">]
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MeshGpuMergeKernelModules
    : Pass<"mesh-gpu-merge-kernel-modules", "::mlir::ModuleOp"> {
  let summary = "Puts every outlined kernel in one gpu.module";
  let description = [{
    `gpu-kernel-outlining` gives every kernel a `gpu.module` of its own, and
    `gpu-module-to-binary` then runs `ptxas` and `fatbinary` once per module:
    a program of a thousand kernels costs a thousand tool runs, and at run
    time a thousand module loads. This pass moves the kernels of all
    `gpu.module`s that hold nothing but `gpu.func`s into one module,
    `@mesh_kernels`, renaming each kernel after the module it came from
    (unique by construction), and points every `gpu.launch_func` at its new
    place. Modules that hold anything else (globals, called functions) are
    left as they are.

    ```mlir
    gpu.module @f_kernel { gpu.func @f_kernel(...) kernel {...} }
    gpu.module @f_kernel_0 { gpu.func @f_kernel(...) kernel {...} }
    gpu.launch_func @f_kernel_0::@f_kernel ...
    // becomes
    gpu.module @mesh_kernels {
      gpu.func @f_kernel(...) kernel {...}
      gpu.func @f_kernel_0(...) kernel {...}
    }
    gpu.launch_func @mesh_kernels::@f_kernel_0 ...
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MeshGpuDeviceConstants
    : Pass<"mesh-gpu-device-constants", "::mlir::ModuleOp"> {
  let summary = "Gives each constant a copy made once, for the kernels";
  let description = [{
    Runs in the device stage of `--mesh-to-nvvm`, once the kernels are
    formed and before they are outlined. Every `memref.get_global` of a
    constant in host code is replaced by a copy of the constant: allocated
    and filled (`memref.alloc` + `memref.copy`) the first time the function
    runs, remembered in a pointer global (`__mesh_device_<name>`, shared by
    every function that uses the constant), and rebuilt as a descriptor on
    every later use. `mesh-gpu-device-memory` then puts the copy on the
    device like any other buffer, so constants reach the device once, not
    per call. With `--mesh-to-nvvm{host-kernels}` the copy stays in host
    memory and the same logic runs on the CPU, where the executable suites
    check it on numbers.

    The copies live until the module's shut-down: where the function
    `fini-symbol` exists (`mesh_module_fini`, which programs with meshes
    have), it first frees each copy (`mgpuMemFree`, or `free` with
    `host-memory`) and clears its pointer, so a later start-up copies the
    constants again and a finished run leaves no device memory behind.

    A mutable global, or a constant with a dynamic shape or a strided
    layout, is an error that names the op.

    ```mlir
    %c = memref.get_global @__constant_4xf32 : memref<4xf32>
    // becomes
    //   %c = memref.get_global @__constant_4xf32 : memref<4xf32>
    //   %p = llvm.load @__mesh_device___constant_4xf32
    //   scf.if (%p is null) {
    //     %copy = memref.alloc() : memref<4xf32>
    //     memref.copy %c, %copy
    //     llvm.store (pointer of %copy), @__mesh_device___constant_4xf32
    //   }
    //   (a descriptor of the remembered pointer, cast to memref<4xf32>)
    // and mesh_module_fini starts with
    //   llvm.call @mgpuMemFree(llvm.load @__mesh_device___constant_4xf32, null)
    //   llvm.store null, @__mesh_device___constant_4xf32
    ```
  }];
  let options = [
    Option<"finiSymbol", "fini-symbol", "std::string",
           /*default=*/"\"mesh_module_fini\"",
           "The shut-down function that frees the copies, if it exists">,
    Option<"hostMemory", "host-memory", "bool", /*default=*/"false",
           "The copies are host memory (`--mesh-to-nvvm{host-kernels}`): "
           "freed with `free`, not `mgpuMemFree`">,
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"
  ];
}

def MeshGpuDeviceMemory
    : Pass<"mesh-gpu-device-memory", "::mlir::ModuleOp"> {
  let summary = "Puts every buffer in device memory, stream-ordered";
  let description = [{
    Runs after `gpu-kernel-outlining`. In every host function that does
    device work, it

    * takes the runtime's shared stream, as an `!llvm.ptr` and as the
      `!gpu.async.token` that the GPU lowering turns back into that stream:
      the one `convert-mesh-to-runtime{on-stream}` fetched at function entry
      (`meshrt_gpu_stream`) when there is one, else a fetch of its own there;
    * turns `memref.alloc` into `gpu.alloc async`, `memref.dealloc` into
      `gpu.dealloc async`, and a `memref.copy` between contiguous buffers
      into `gpu.memcpy async` (a strided copy is an error);
    * makes every `gpu.launch_func` asynchronous on the stream;
    * constants already have their copies (`mesh-gpu-device-constants`):
      a `memref.get_global` may only be the source of such a copy, and one
      that a kernel or the host still uses directly is an error;
    * turns a host `memref.load` of a device buffer (a result the host
      reads, such as a `tensor.extract` of a reduction) into a copy of that
      element to a host slot on the stream (`mgpuMemcpy`), a
      `meshrt_stream_synchronize`, and a load of the slot: the host waits
      where it reads, and only there;
    * calls `meshrt_stream_synchronize` once before each return of a
      public function, so results are ready when the call returns. A
      private function's callers are compiled functions that synchronise
      before they return, so it does not; a call of a compiled function
      counts as device work of its caller. Nothing else synchronises:
      kernels, copies and the `meshrt_*_on_stream` collectives are ordered
      by the one stream.

    Function arguments and results are device buffers. Host buffers
    (`mesh.host_buffer`, see `mesh-gpu-host-buffers`) stay in host memory:
    their allocations, loads and frees are left as they are.

    ```mlir
    func.func @f(%x: memref<16xf32>) -> memref<16xf32> {
      %0 = memref.alloc() : memref<16xf32>
      gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1)
          threads in (%c16, %c1, %c1) args(%x : memref<16xf32>, %0 : memref<16xf32>)
      return %0 : memref<16xf32>
    }
    // becomes
    //   %stream = (meshrt_gpu_stream)
    //   %t = builtin.unrealized_conversion_cast %stream : !llvm.ptr to !gpu.async.token
    //   %0, %t0 = gpu.alloc async [%t] () : memref<16xf32>
    //   %t1 = gpu.launch_func async [%t] @f_kernel::@f_kernel ...
    //   llvm.call @meshrt_stream_synchronize(%stream)
    //   return %0 : memref<16xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::cf::ControlFlowDialect"
  ];
}

def MeshGpuVerifyHostAccess
    : Pass<"mesh-gpu-verify-host-access", "::mlir::ModuleOp"> {
  let summary = "Fails when host code would touch a device buffer";
  let description = [{
    The last check of the device stage of `--mesh-to-nvvm`: on the GPU path
    every buffer is in device memory, so a host op that reads, writes,
    allocates or frees a memref is a bug that would crash (or silently
    corrupt memory) at run time. Each such op outside a kernel is reported
    with its name, and the pass fails. GPU ops (`gpu.alloc`, `gpu.memcpy`,
    `gpu.launch_func`, ...) are the allowed ways to touch device memory;
    taking a buffer's address (`memref.extract_aligned_pointer_as_index`)
    reads nothing and is allowed.

    ```mlir
    func.func @f(%x: memref<4xf32>) -> f32 {
      %c0 = arith.constant 0 : index
      // error: 'memref.load' op reads a device buffer on the host
      %v = memref.load %x[%c0] : memref<4xf32>
      return %v : f32
    }
    ```
  }];
}

def MeshGpuLaunchToHostLoops
    : Pass<"mesh-gpu-launch-to-host-loops", "::mlir::ModuleOp"> {
  let summary = "Runs each gpu.launch as host loops over its blocks and threads";
  let description = [{
    A test lowering of the device stage of `--mesh-to-nvvm`: each
    `gpu.launch` becomes six nested `scf.for` loops (blocks z, y, x, then
    threads z, y, x, the x dimensions innermost) around its body, with the
    block and thread ids and the grid and block sizes replaced by the loop
    variables and the launch's sizes. Everything the device stage did before
    (copy kernels, parallel loop fusion, tiling, the mapping to blocks and
    threads with its guards for ragged and dynamic shapes, one-thread kernels
    for serial nests) then runs on the CPU, so `mesh-to-nvvm{host-kernels}`
    checks those rewrites on numbers on machines without a GPU.

    A body is equivalent to its loops when its threads do not communicate:
    the pass fails with a message naming the op on a `gpu.barrier`, shuffles
    or any other GPU op but the id and size queries, on workgroup or private
    memory, on clusters, and on asynchronous launches.

    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
      ... %bx, %tx, %sx ...
      gpu.terminator
    }
    // becomes
    //   scf.for %bz = %c0 to %c1 step %c1 {  ... six loops ...
    //     scf.for %tx = %c0 to %c16 step %c1 { ... %bx, %tx, %c16 ... }
    //   }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // MESH_CONVERSION_PASSES_TD
