//===- Passes.td - transforms of the mesh dialect ----------*- tablegen -*-===//
//
// Passes that rewrite mesh programs and stay in the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_PASSES_TD
#define MESH_DIALECT_MESH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareForBufferization
    : Pass<"mesh-prepare-for-bufferization", "::mlir::ModuleOp"> {
  let summary = "Readies a partitioned program for one-shot bufferization";
  let description = [{
    Run on a program in per-device form, before `one-shot-bufferize`:

    - fails if a `mesh.sharding` annotation (on an op, a function argument
      or a result) or a `mesh.shard` op is left: the program was not
      partitioned, and compiling it as it is would run the whole global
      program on every device. The error names the op or argument and says
      to run `mesh-partition` (which the compile pipelines do unless given
      `partition=false`);
    - unless `writable-arguments` is set, marks every tensor argument of a
      public function `bufferization.writable = false`, so that compiled
      kernels never overwrite the buffers their callers pass in (bufferization
      copies before writing instead);
    - with `frees-buffers` (set by the compile pipelines, whose ownership-based
      buffer deallocation frees every buffer itself and cannot take a program
      that already frees some), fails on each `memref.dealloc` in the input,
      naming it, instead of the deallocation pass's "memory free side-effect
      on MemRef value not supported!";
    - decomposes aggregate ops (`linalg.softmax`, `mesh.circular_pad`,
      through `AggregatedOpInterface`) into the linalg and tensor ops they
      stand for, which the lowering takes;
    - moves `i1` tensors (masks) through collectives as `i8`: each is
      sign-extended before and truncated after, which keeps every reduction's
      meaning on `i1` (sum is xor, prod and max are and, min is or); the
      runtime has no 1-bit type;
    - makes each rank-reducing `tensor.extract_slice` a slice that keeps
      its rank and a `tensor.collapse_shape` of the dropped unit dims (each
      `tensor.insert_slice` an `expand_shape` of its source and a slice
      that keeps its rank): MLIR 22's `expand-strided-metadata` crashes on
      some rank-reducing subviews (a stride other than 1 on a dropped dim,
      or dims it could drop with equal strides).

    ```mlir
    func.func @k(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = arith.negf %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    // becomes
    func.func @k(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> {
      %0 = arith.negf %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"writableArguments", "writable-arguments", "bool", "false",
           "Let bufferization write into the arguments of public functions">,
    Option<"freesBuffers", "frees-buffers", "bool", "false",
           "Refuse memref.dealloc in the input: the pipeline frees buffers "
           "itself">
  ];
  // mesh.circular_pad becomes tensor slices and concats.
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def AutoShard : Pass<"mesh-auto-shard", "::mlir::ModuleOp"> {
  let summary = "Chooses every sharding of a function from a few annotations, "
                "by an exact minimum of a cost model";
  let description = [{
    Given a function on global shapes, a mesh, the annotations the user
    wants kept (at least the batch's: they are hard constraints) and a
    per-device memory budget, chooses the sharding of every other argument,
    result and op result, and writes them as ordinary `mesh.sharding`
    annotations: `mesh-propagate-sharding`, `mesh-partition` and everything
    after run unchanged on the result. A function with no annotation at all
    is left as it is. `mesh.carried = N` on an argument says that result
    `N` is its next value (a parameter and its update in a training step):
    the two take one layout, so that the plan is a steady state of a
    training loop.

    The choices are the ops' sharding rules: each mesh axis shards at most
    one factor of an op (a loop of a linalg op, a dim of an elementwise op),
    its axes in mesh order, wherever the factor's size divides by them (a
    collapsed dim only as whole blocks; not a factor with halos, nor one of
    several reductions); an argument or result takes any layout whose dims
    divide. A sharded reduction factor leaves the result partial. The cost
    of a plan is, in integer picoseconds:

    - every resharding between a value's producer and each consumer (and
      at the function's results), planned exactly as `mesh-partition` plans
      it (its bytes per device are those `mesh-report-communication` counts
      in the partitioned program, before `mesh-optimize-collectives`, which
      can only remove some), each collective priced `latency + bytes /
      bandwidth` of the slowest axis of its group (`axis-cost`); a copy
      several uses of a value share (the partitioner makes each layout of
      a value once per block) is paid once;
    - every op's arithmetic (the iterations of its loops times the ops of
      its body) on one device, at `flops` per second.

    Memory per device is the arguments' blocks plus the most bytes live at
    any point of the function (from its own liveness: activations kept for
    a backward pass are live until it). Values that need no data
    (`tensor.empty`, fills, splats) are left to propagation and cost
    nothing: the partitioner makes them again in each layout a user wants.

    The minimum is exact, found by variable elimination over the program's
    dataflow graph (every op, argument and result a variable, every use a
    cost between two), in an elimination order of least width (ties by
    program order), with no solver dependency; of plans that cost the same,
    the one that holds least memory at the program's peak wins. When the
    cheapest plan does not fit `memory-per-device`, a Lagrangian search on
    the memory at the peak gives a plan that fits and a lower bound, and a
    branch and bound on the variables that hold memory at the constrained
    points (each point where a candidate peaks is added) closes the gap,
    for a number of nodes set by the program's size: the plan is then
    proven optimal, or the pass says by how much at most it may be off. No
    plan that fits is an error giving the smallest budget that does (exact
    where a plan can hold every value at its least block, as in every
    program tried; else bounds on it) and what is live at the peak of a
    plan that holds it. Costs are integers and every tie is
    broken by a fixed order, so the same input gives the same plan on every
    run and machine.

    With `explain`, a report (standard error) gives the plan's cost split
    into communication and arithmetic, its peak memory with the largest
    values live there, each argument's layout with the best plan that lays
    it out otherwise and how much worse that is, and every resharding the
    plan makes.

    Loops and branches (`scf.for`, `scf.while`, `scf.if`: any
    RegionBranchOpInterface whose values tie up) are in the plan space:
    each group of values the op ties together (the value passed in, the
    region arguments, the values yielded, the result) is one layout,
    written on the op's results, and the ops inside are planned like any
    other and priced once per iteration (the trip count where it is
    constant, else once), except the reshardings of values from outside a
    loop, which the partitioner puts before it. Calls in an annotated function are inlined for
    the plan (the partitioner would give a callee one layout for all its
    calls; inlined, each call is planned for its place, as XLA inlines
    before partitioning), and private callees left without a call are
    erased; a call to a declaration or an annotated function, and a
    recursion, are errors naming the call.

    ```mlir
    mesh.mesh @m(["d" = 4])
    func.func @f(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
                 %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %a = arith.addf %x, %y : tensor<8x16xf32>
      return %a : tensor<8x16xf32>
    }
    // %y, %a and the result become #mesh.sharding<@m, [["d"], []]>.
    ```
  }];
  let options = [
    Option<"memoryPerDevice", "memory-per-device", "std::string", "\"\"",
           "The bytes each device may hold (`24GiB`, `512MiB`, `1e9`); "
           "empty: no limit">,
    Option<"axisCost", "axis-cost", "std::string", "\"\"",
           "Per-axis collective costs, `axis=latency:bandwidth` separated by "
           "commas (`dp=20us:10GB/s,tp=2us:100GB/s`; `*` for every axis "
           "not named); default 10us:5GB/s">,
    Option<"flops", "flops", "std::string", "\"1e11\"",
           "The arithmetic rate of one device, operations per second "
           "(`1e11`, `50G`, `1T`)">,
    Option<"explain", "explain", "bool", "false",
           "Print the plan's costs, runners-up and peak memory to standard "
           "error">,
    Option<"verifyExhaustive", "verify-exhaustive", "bool", "false",
           "Also enumerate every plan (small programs only) and check that "
           "none that fits costs less; a remark gives both minima">
  ];
}

def PropagateSharding : Pass<"mesh-propagate-sharding", "::mlir::ModuleOp"> {
  let summary = "Decides a sharding for every tensor from a few annotations";
  let description = [{
    Annotations are constraints: function arguments and results with
    `mesh.sharding`, op results with `mesh.sharding`, and `mesh.shard`
    results keep the sharding they were given. Every other tensor gets one
    through the ops' sharding rules (factors: see `ShardingRuleOpInterface`):

    - First, a static dim that an annotation splits over devices that do not
      divide it (Linear(10, 10) over 4) is padded to the next multiple, as
      FSDP pads its flat parameter, with a remark: an argument or result so
      annotated takes the padded size in the signature (each device holds a
      block, the last ones padding), the dims tied to it through the ops
      (elementwise ops, linalg ops without windows, fills, constants, loops)
      are padded inside, other ops see their sizes again (a slice before
      them), calls convert, and every reduction over a padded dim (a
      contraction, a sum, a max) first masks the padding with the
      reduction's neutral element, so the padding never reaches a result.
      A reduction whose body cannot be masked is an error that names it.
      With `exact-division` such an annotation is an error instead.

    - Where an input dim split evenly is read through a window (a valid
      convolution: 16 rows over 4 devices, 14 outputs) whose loop the
      devices do not divide, the loop is padded to the input's blocks (16,
      blocks of 4) with a remark, the input padded after its end to what
      the loop reads, the output's users padded along and reductions over
      it masked, and propagation runs again: each device computes its
      block from its rows and a halo from its neighbour, instead of the
      input being gathered. Not with `exact-division`.
    - Where propagation finds a reshape that loses axes (torch-mlir's
      collapse of (batch, heads) into one dim for `batch_matmul`, with the
      batch over "dp", the heads over "tp" and two batch rows per device:
      a device's rows of the merged dim are not one block of it), the linalg
      ops on the merged side are rewritten on the unmerged dims (MLIR's
      fold-by-expansion patterns, going on through the chain they make,
      elementwise arith and math ops turned into `linalg.generic` for that)
      and propagation runs again: the product is computed locally, not
      gathered. Ops and reshapes that carry `mesh.sharding` stay as
      written.
    - First, a `linalg.generic` without `mesh.sharding` drops the results
      nobody uses, with the part of its body only they needed (MLIR's
      EraseUnusedOperandsAndResults patterns): the unused index of a max and
      argmax, whose `linalg.index` would keep the reduced loop whole.
    - Sweeps alternate forward (program order; an op takes its factors' axes
      from its operands first, then its results) and backward (reverse order;
      results first, then operands) until nothing changes. Within a sweep the
      first value that shards a factor decides it; an axis already used by
      another factor of the op, or whose size does not divide the factor's, is
      skipped. A value keeps the first sharding it gets. This rule is
      deterministic and each sweep visits each op once, so the pass is linear
      in the program.
    - A sharded reduction factor makes the results partial
      (`partial = sum[...]`, or the kind of the reduction's combiner); the
      partitioner reduces them where a consumer needs them. Forward, a value
      known only as a pending sum over whole dims decides nothing (it can
      be reduced into any layout): a momentum buffer updated with a gradient
      takes its parameter's layout from the update, backward.
    - Forward, a `linalg` op that broadcasts its data along a result dim no
      known value decides (a bias broadcast over the batch) waits for its
      result's users, so the bias is gathered or broadcast over the local
      rows only, not broadcast whole and then moved or sliced.
    - The tied values of a loop or a branch (`RegionBranchOpInterface`: an
      initial value, the region argument, the yielded value, the result)
      share one sharding. A loop is visited before its body too: its region
      arguments take the layout its initial values (or results) have, so a
      training loop's body starts from the parameters' annotated sharding.
      Where the body yields another layout, the results' users decide, and
      the initial value is resharded once, before the loop.
    - The operand of a `mesh.shard` without a sharding takes the target's,
      and a function result without an annotation takes its return value's.
    - An op with no rule gets replicated results and a warning naming it.
    - Tensors nothing constrains are replicated.

    The result is written back as `mesh.sharding` annotations. With
    `explain`, a remark for each value says where its sharding came from.

    ```mlir
    mesh.mesh @m(["x" = 4])
    func.func @f(%a: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>},
                 %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %c = arith.addf %a, %b : tensor<8x16xf32>
      return %c : tensor<8x16xf32>
    }
    // %b, %c and the result become #mesh.sharding<@m, [["x"], []]>.
    ```
  }];
  let options = [
    Option<"explain", "explain", "bool", "false",
           "Emit a remark for each value saying where its sharding came from">,
    Option<"exactDivision", "exact-division", "bool", "false",
           "A static dim an annotation splits over devices that do not "
           "divide it is an error instead of being padded">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def Partition : Pass<"mesh-partition", "::mlir::ModuleOp"> {
  // Resharding casts, makes empty tensors and fills again, and computes
  // sizes (checked at run time with cf.assert): those dialects may not be in
  // the input.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let summary = "Rewrites an annotated program into per-device form";
  let description = [{
    Reads the `mesh.sharding` annotations (run `mesh-propagate-sharding`
    first) and rewrites each function on global shapes into the program one
    device runs: tensor types become per-device types, function signatures
    change accordingly, every op works on local shapes, and collectives are
    inserted where a value's sharding is not the one its consumer needs. A
    resharding takes any sharding to any other on the same mesh with the plan
    that sends the fewest bytes per device, as `mesh-report-communication`
    counts them, then the fewest steps (reduce_scatter or all_reduce to
    finish a pending reduction, all_to_all to move axes between dims,
    all_gather and all_slice; see docs/partitioning.md).

    An elementwise op (or a linalg op with parallel loops only) that is linear
    in its operands that are pending sums over the same axes runs on the
    partial values, and its result stays partial until a consumer needs it
    otherwise: `p - q`, `p * c`, `a - alpha * b` are reduced once, not once
    per partial operand. Not when a partial operand has another user (it is
    reduced anyway), when the result is larger than every partial operand (a
    broadcast), or for `p + c` with `c` not partial, which is not linear.

    A static dim that does not divide by its axes' devices is an error that
    names the value and the sizes. A size known only at run time is divided
    after a `cf.assert` that it divides, whose message names the op, its
    place and the dim: the program stops instead of giving each device a
    truncated block. Ops without a sharding rule run replicated.
    Annotations are removed.

    ```mlir
    mesh.mesh @m(["x" = 4])
    func.func @f(%a: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>})
        -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}) {
      return %a : tensor<8x16xf32>
    }
    // becomes
    func.func @f(%a: tensor<2x16xf32>) -> tensor<8x16xf32> {
      %0 = mesh.all_gather %a on @m axes = ["x"] gather_dim = 0
          : tensor<2x16xf32> -> tensor<8x16xf32>
      return %0 : tensor<8x16xf32>
    }
    ```
  }];
}

def ReportCommunication : Pass<"mesh-report-communication", "::mlir::ModuleOp"> {
  let summary = "Prints every collective of each function and the bytes it moves";
  let description = [{
    Prints, for each function of a per-device program (after
    `mesh-partition`), every collective in program order with its kind,
    mesh and axes, the element count and type of its input, and the bytes
    each device sends under the usual algorithms, then the function's totals.
    The program is not changed. The report goes to standard error, or to the
    file `output` names.

    Bytes each device sends, for an input of `B` bytes on a group of `n`:
    `all_reduce` 2(n-1)/n B (ring), `all_gather` (n-1) B, `reduce_scatter`
    and `all_to_all` (n-1)/n B, `broadcast` and `permute` B, `all_slice` and
    `barrier` 0. The resharding planner of `mesh-partition` prices its
    steps with the same formulas. A dynamic size or a `?` axis makes a count
    unknown (`?`); the totals then say how many were left out.

    ```mlir
    mesh.mesh @m(["a" = 2, "b" = 4])
    func.func @f(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
      %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum
          : tensor<16x8xf32> -> tensor<16x8xf32>
      return %r : tensor<16x8xf32>
    }
    // communication of @f:
    //   all_reduce on @m axes ["b"]: 128 x f32 (512 bytes), 768 bytes per device
    //   total: 1 collective, 768 bytes per device
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", "\"-\"",
           "Where the report goes: a file, or - for standard error">
  ];
}

def OptimizeCollectives : Pass<"mesh-optimize-collectives"> {
  let summary = "Fewer, cheaper collectives in a partitioned program";
  let description = [{
    Rewrites the collectives of a per-device program:

    - an `all_reduce` whose only user is an `all_slice` over the same axes,
      in the same order, becomes one `reduce_scatter` (each member receives
      only its block: 1/n of the traffic); also when elementwise ops,
      broadcasts and transposes (linalg ops with parallel loops only that do
      not read their indices) and reshapes stand between them, each value
      used by the next alone: the slice moves up through them, their other
      operands are sliced with `all_slice` (a bias broadcast along the other
      dims is taken whole), and a reshape is crossed when the sliced dim is
      its group's first dim of size other than 1, or, for an `expand_shape`,
      through a view of its group (the reduction is expanded, scattered along
      the sliced dim and collapsed back). This is the reduce_scatter of
      sequence parallelism, where a bias add stands between W2's reduction
      and the slice;
    - an `all_gather` of a transposed value (`linalg.transpose`, or a
      generic that only permutes) whose source is also gathered plain, over
      the same axes along the matching dim, becomes a transpose of that
      gather: a weight used plain in the forward pass and transposed for the
      input's gradient crosses the network once;
    - axes of size 1 are dropped from a collective's axis list (the groups
      are the same), and a collective left with a group of one folds away;
    - `all_reduce`s in one block on the same mesh, axes, reduction and
      element type are bucketed, as DDP buckets gradients: flattened,
      concatenated, reduced once, and split back. A bucket goes out where
      the first of its results is needed, and every later `all_reduce` of
      the block whose input is ready there joins it (moving up), up to
      `combine-threshold` bytes in all (DDP's 25 MiB); so a training step
      whose gradient reductions each sit before their own update reduces
      them together. An `all_reduce` larger than the threshold stays alone.

    ```mlir
    %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum
        : tensor<8x16xf32> -> tensor<8x16xf32>
    %y = arith.addf %r, %bias : tensor<8x16xf32>
    %s = mesh.all_slice %y on @m axes = ["b"] slice_dim = 0
        : tensor<8x16xf32> -> tensor<2x16xf32>
    // becomes
    %r = mesh.reduce_scatter %x on @m axes = ["b"] scatter_dim = 0
        reduction = sum : tensor<8x16xf32> -> tensor<2x16xf32>
    %b = mesh.all_slice %bias on @m axes = ["b"] slice_dim = 0
        : tensor<8x16xf32> -> tensor<2x16xf32>
    %s = arith.addf %r, %b : tensor<2x16xf32>
    ```
  }];
  let options = [
    Option<"combineThreshold", "combine-threshold", "int64_t", "26214400",
           "Largest bucket of combined all_reduces, in bytes (25 MiB, DDP's "
           "default); 0 turns combining off">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def PartitionIfAnnotated
    : Pass<"mesh-partition-if-annotated", "::mlir::ModuleOp"> {
  let summary = "Partitions a program that still carries sharding annotations";
  let description = [{
    The first pass of `--mesh-to-llvm` and `--mesh-to-nvvm` (unless they are
    given `partition=false`), so that a global program is never compiled as
    if every device ran all of it. A module with a `mesh.sharding`
    annotation anywhere (on an op, a function argument or a result) or a
    `mesh.shard` op is a global program: this pass runs
    `mesh-propagate-sharding`, `mesh-partition` and
    `mesh-optimize-collectives` on it. A module with none (a per-device
    program, or one already partitioned) is left as it is.

    ```mlir
    mesh.mesh @m(["x" = 4])
    func.func @f(%a: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>})
        -> (tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) {
      %0 = arith.negf %a : tensor<16xf32>
      return %0 : tensor<16xf32>
    }
    // becomes
    func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = arith.negf %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvolutionsToGemm : Pass<"mesh-convolutions-to-gemm", "::mlir::ModuleOp"> {
  let summary = "Computes 2-D convolutions as an im2col copy and a GEMM";
  let description = [{
    `linalg.conv_2d_nhwc_hwcf`, `conv_2d_nhwc_fhwc` and `conv_2d_nchw_fchw`
    on tensors of one float type (f16, bf16, f32, f64) with static shapes
    and unit dilations (any strides) become MLIR's im2col form (`linalg::rewriteInIm2Col`): a copy of each
    output position's input window into one row of a matrix (filter taps
    times input channels wide), then a contraction of that matrix with the
    filter, which `mesh-linalg-to-blas` or `mesh-gpu-linalg-to-cublas` turn
    into a GEMM call. The copy is a 6-D generic over (n, oh, ow, kh, kw, c)
    reading (n, oh*sh + kh, ow*sw + kw, c) (NCHW alike), collapsed into the
    matrix: upstream's copy divides a flat column index per element, which
    keeps it scalar. Lowered as they are, convolutions are seven nested
    scalar loops (a 3x3, 64-channel layer ran 34x slower than PyTorch on one
    thread; now 0.53x oneDNN's direct convolution and faster than numpy).

    The matrix repeats each input element once per filter tap that reads it,
    so where it would exceed `max-columns-bytes`, the convolution is first
    tiled with `scf.for` over its images (then, for a single image too large,
    over its output rows), in tiles that divide the sizes, each with a matrix
    of its own. Runs on the per-device program, after partitioning, which
    needs convolutions as they are to exchange their halos: `--mesh-to-llvm`
    runs it when contractions go to the BLAS, `--mesh-to-nvvm` when they go
    to cuBLASLt. Depthwise, 1-D, 3-D, quantized and mixed-type convolutions
    are left as they are; with `report`, every convolution gets a remark
    saying which.

    ```mlir
    %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>,
                                   strides = dense<1> : tensor<2xi64>}
        ins(%x, %w : tensor<2x10x10x3xf32>, tensor<3x3x3x4xf32>)
        outs(%f : tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
    // becomes
    %win = linalg.generic {indexing_maps = [
        affine_map<(n, i, j, a, b, c) -> (n, i + a, j + b, c)>,
        affine_map<(n, i, j, a, b, c) -> (n, i, j, a, b, c)>], ...}
        ins(%x : tensor<2x10x10x3xf32>) outs(%e : tensor<2x8x8x3x3x3xf32>)
    %cols = tensor.collapse_shape %win [[0], [1, 2], [3, 4, 5]]
        : tensor<2x8x8x3x3x3xf32> into tensor<2x64x27xf32>
    %wm = tensor.collapse_shape %w [[0, 1, 2], [3]]
        : tensor<3x3x3x4xf32> into tensor<27x4xf32>
    // [2, 64, 27] x [27, 4] -> [2, 64, 4] (a linalg.generic contraction),
    // then tensor.expand_shape to tensor<2x8x8x4xf32>
    ```
  }];
  let options = [
    Option<"maxColumnsBytes", "max-columns-bytes", "int64_t", "32 << 20",
           "The largest im2col matrix, in bytes, before the convolution is "
           "tiled">,
    Option<"report", "report", "bool", "false",
           "A remark on each convolution: rewritten (and tiled how), or why "
           "not">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TemporalBlocking : Pass<"mesh-temporal-blocking", "::mlir::ModuleOp"> {
  let summary = "Runs two steps of a stencil loop per pass over its field";
  let description = [{
    A time-stepping `scf.for` that carries one tensor, whose step (the loop's
    body, or the one function it calls) pads the field by static widths with
    one value and computes the next field elementwise from windows of that
    pad, the field itself and values from outside the loop (a Jacobi or heat
    step), is bound by memory: each step reads the field and writes the next
    one. This pass makes the loop run two steps per iteration as one
    elementwise `linalg.generic` over windows of the field padded twice as
    wide, so the field streams through memory once per two steps:
    - the first step's value at each shift the second step reads is
      computed again there, in registers (an element of the second step
      costs the first step once per shift it reads: a 5-point stencil
      computes 4 + 1 steps' worth per element, for half the memory traffic);
    - outside the grid, the first step's values are the pad's value, as the
      second step's pad makes them (a `linalg.index` test per shifted dim);
    - loop-invariant tensors the step reads are padded once, before the
      loop, by the field's widths;
    - an odd last step runs the old loop once, and a trip count known only
      at run time is split at run time.

    Each element is computed by the same operations in the same order as
    before: results are the same bit for bit. Partitioned, the wider pad's
    halo moves every second step in the same messages, twice as deep.
    Sharding annotations of a called step's arguments and result become
    `mesh.shard` constraints in the new loop.

    A loop is left as it is when the step has another form (an op that is
    not elementwise, a second pad, side effects, a read of the loop's
    index), runs fewer than two steps, reads the field at more than
    `max-shifts` shifts (each one more computation of the first step per
    element: a 5-point stencil's 4 gain, a 9-point stencil's 8 lose 2x on
    bench/halo's machine), or when two steps would cost more than `max-ops`
    operations per element (the ops of a step times one plus the number of
    shifts). With `report`, each
    loop that carries one value gets a remark: "two steps per iteration", or
    why not. `--mesh-to-llvm` runs this pass first (`temporal-blocking=false`
    skips it).

    ```mlir
    %r = scf.for %i = %c0 to %c100 step %c1 iter_args(%u = %u0) -> (tensor<64x64xf32>) {
      %p = tensor.pad %u low[1, 1] high[1, 1] { ... tensor.yield %zero : f32 }
          : tensor<64x64xf32> to tensor<66x66xf32>
      %n = tensor.extract_slice %p[0, 1] [64, 64] [1, 1] : ...
      %s = tensor.extract_slice %p[2, 1] [64, 64] [1, 1] : ...
      %v = arith.addf %n, %s : tensor<64x64xf32>
      scf.yield %v : tensor<64x64xf32>
    }
    // becomes 50 iterations of
    //   %p = tensor.pad %u low[2, 2] high[2, 2] { ... }
    //   windows of %p at rows 0, 2 and 4, and
    //   %v = linalg.generic ins(%w0, %w2, %w4) {
    //     north = select(row == 0, %zero, w0 + w2)
    //     south = select(row >= 63, %zero, w2 + w4)
    //     yield north + south }
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "unsigned", "128",
           "Most operations per element two composed steps may take">,
    Option<"maxShifts", "max-shifts", "unsigned", "4",
           "Most shifts at which a step may read the field (each costs "
           "the first step once more per element)">,
    Option<"report", "report", "bool", "false",
           "A remark on each loop that carries one value: blocked or why not">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CollectivesInPlace : Pass<"mesh-collectives-in-place"> {
  let summary = "Buffer collectives write into inputs that die at them";
  let description = [{
    Run on buffers after deallocation (`buffer-deallocation-pipeline`),
    before `convert-mesh-to-runtime`. A memref `all_reduce` or `broadcast`
    allocates its result. Where its input buffer dies at the collective, the
    collective becomes `in_place` instead: it writes the input buffer, that
    buffer takes the result's place, and the input's `memref.dealloc` goes.
    The runtime then passes one buffer as send and receive (NCCL and MPI
    both reduce in place), and a broadcast no longer copies its input first.

    The input dies at the collective when all of these hold:

    - an allocating op defines it (`memref.alloc`, an earlier collective's
      result), so no other value names the buffer;
    - its layout is the identity, its shape and memory space the result's;
    - besides the collective, it has one `memref.dealloc`, later in the same
      block, and every other use lies in an op earlier in that block that
      makes no new buffer value (no view, cast or call result that could
      alias it and be read later).

    Anything else (an argument, a view, a conditional dealloc) keeps the
    fresh result, so the rewrite never changes what a program computes.

    ```mlir
    %0 = mesh.all_reduce %a on @m axes = ["x"] reduction = sum
        : memref<8xf32> -> memref<8xf32>
    %1 = mesh.all_reduce %0 on @m axes = ["x"] reduction = sum
        : memref<8xf32> -> memref<8xf32>
    memref.dealloc %0 : memref<8xf32>
    return %1 : memref<8xf32>
    // becomes
    %0 = mesh.all_reduce %a on @m axes = ["x"] reduction = sum
        : memref<8xf32> -> memref<8xf32>
    %1 = mesh.all_reduce %0 on @m axes = ["x"] reduction = sum in_place
        : memref<8xf32> -> memref<8xf32>
    return %0 : memref<8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // MESH_DIALECT_MESH_TRANSFORMS_PASSES_TD
