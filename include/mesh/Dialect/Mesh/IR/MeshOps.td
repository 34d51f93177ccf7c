//===- MeshOps.td - operations of the mesh dialect ---------*- tablegen -*-===//
//
// Mesh declarations, sharding constraints, collectives on named mesh axes and
// the axis index/size queries. Verifiers cite the numbered constraints of
// docs/MeshSpec.md.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_IR_MESHOPS_TD
#define MESH_DIALECT_MESH_IR_MESHOPS_TD

include "mesh/Dialect/Mesh/IR/MeshBase.td"
include "mesh/Dialect/Mesh/IR/MeshInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"

class Mesh_Op<string mnemonic, list<Trait> traits = []>
    : Op<Mesh_Dialect, mnemonic, traits>;

def Mesh_TensorOrMemRef : AnyTypeOf<[AnyRankedTensor, AnyMemRef],
    "ranked tensor or memref">;

//===----------------------------------------------------------------------===//
// mesh.mesh
//===----------------------------------------------------------------------===//

def Mesh_MeshOp : Mesh_Op<"mesh", [Symbol]> {
  let summary = "Declares a device mesh with named axes";
  let description = [{
    Declares a logical grid of devices with named axes, major to minor. Ranks
    are laid out row-major over the axes, as PyTorch's
    `init_device_mesh(device, shape, mesh_dim_names=names)`: the last axis
    varies fastest. One axis size may be `?`, resolved when the program starts
    from the number of processes.

    Constraints: at least one axis `(M1)`; every size is at least 1 or `?`
    `(M2)`; names are non-empty and unique `(M3)`; at most one `?` `(M4)`;
    one size for each name `(M7)`.

    Without `devices`, the mesh spans the whole world: device `r` is world
    rank `r`, and the product of the sizes is the number of processes. With
    `devices = [...]`, the mesh covers exactly the listed world ranks, given
    row-major over the axes like PyTorch's `DeviceMesh(device_type,
    mesh_tensor)` or Shardy's `device_ids`: a pipeline stage, say, over part
    of the world. The list has one rank for each device `(M8)`, so every
    size is written (no `?`, `(M9)`), and the ranks are non-negative,
    distinct and below 2^31 `(M10)`. A process not listed is outside the
    mesh: the collectives, barriers and queries of the mesh are skipped
    there (see `docs/MeshSpec.md`, "Meshes over part of the world").

    ```mlir
    mesh.mesh @world(["replicate" = 2, "shard" = 4])
    mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])
    mesh.mesh @stage0(["dp" = 2, "tp" = 2]) devices = [0, 1, 2, 3]
    mesh.mesh @stage1(["dp" = 2, "tp" = 2]) devices = [4, 5, 6, 7]
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrArrayAttr:$axis_names,
    DenseI64ArrayAttr:$shape,
    OptionalAttr<DenseI64ArrayAttr>:$devices
  );
  let assemblyFormat = [{
    $sym_name `(` custom<MeshAxes>($axis_names, $shape) `)`
    (`devices` `=` $devices^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of axes.
    unsigned getRank() { return getShape().size(); }
    /// Index of the axis named `name`, if there is one.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name);
    /// Size of axis `name` (ShapedType::kDynamic for `?`); the axis must exist.
    int64_t getAxisSize(::llvm::StringRef name);
    /// Number of devices in a group over `axes` (kDynamic if any is `?`).
    int64_t getGroupSize(::llvm::ArrayRef<::llvm::StringRef> axes);
    /// The axis names, quoted and comma separated, for diagnostics.
    std::string getAxisListForDiagnostic();
    /// True when the mesh lists its world ranks (`devices`), so it may
    /// cover part of the world.
    bool hasDevices() { return getDevices().has_value(); }
    /// The world rank of the device at row-major position `index`, where it
    /// is known at compile time: the listed rank with `devices`, `index`
    /// itself for a whole-world mesh.
    int64_t getWorldRank(int64_t index) {
      if (std::optional<::llvm::ArrayRef<int64_t>> devices = getDevices())
        return (*devices)[index];
      return index;
    }
    /// The number of devices, kDynamic when a size is `?`.
    int64_t getNumDevices();
  }];
}

//===----------------------------------------------------------------------===//
// mesh.shard
//===----------------------------------------------------------------------===//

def Mesh_ShardOp : Mesh_Op<"shard", [
    Pure, AllTypesMatch<["src", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Constrains a tensor to a sharding";
  let description = [{
    Says that the value `src`, a tensor of global shape, is to be laid out as
    `sharding`. It is a constraint for sharding propagation and a point where
    partitioning inserts the collectives that move the data there; it computes
    nothing. The type comes before the sharding because MLIR's parser reads a
    `: type` that follows a dialect attribute as that attribute's own type.
    The sharding is a `#mesh.sharding` `(S6)`; it has one entry per tensor
    dimension `(S2)` and names axes of its mesh `(S1)`, each at most once
    `(S3)`.

    ```mlir
    %y = mesh.shard %v : tensor<64x128xf32>
        to #mesh.sharding<@world, [["replicate", "shard"], []]>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$src, Mesh_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $src `:` type($result) `to` qualified($sharding) attr-dict
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// A collective: `input` communicated on `mesh` within the groups that
/// `axes` form, plus the op's own arguments (`extraArgs`). The memory effects
/// and the checks against the mesh (C0, C1, and the group size through each
/// op's verifyGroupSize) are defined once here for every collective.
class Mesh_CollectiveOp<string mnemonic, dag extraArgs, list<Trait> traits = []>
    : Mesh_Op<mnemonic, !listconcat(traits, [
        Mesh_CollectiveOpInterface,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let arguments = !con((ins Mesh_TensorOrMemRef:$input,
                            FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes),
                       extraArgs);
  let results = (outs Mesh_TensorOrMemRef:$result);
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The checks of this collective that need its group size (kDynamic when
    /// an axis is `?`), once the mesh and axes are known to be valid.
    ::llvm::LogicalResult verifyGroupSize(int64_t groupSize);
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &tables) {
      ::mlir::FailureOr<int64_t> groupSize =
          verifyCollectiveMesh(*this, tables);
      if (::mlir::failed(groupSize))
        return ::mlir::failure();
      return verifyGroupSize(*groupSize);
    }
    void $cppClass::getEffects(
        ::llvm::SmallVectorImpl<::mlir::SideEffects::EffectInstance<
            ::mlir::MemoryEffects::Effect>> &effects) {
      getCollectiveEffects(*this, effects);
    }
  }];
}

def Mesh_AllReduceOp : Mesh_CollectiveOp<"all_reduce", (ins Mesh_ReductionKindAttr:$reduction,
                                                           UnitAttr:$in_place)> {
  let summary = "Reduces over the groups of the given axes; every member gets the result";
  let description = [{
    Combines `input` elementwise over each group formed by `axes` with
    `reduction`, and gives every member of the group the combined value. The
    result has the shape and element type of the input `(C5)`; the reduction
    is a known kind `(C10)` and valid for the element type `(C6)`.

    ```mlir
    %r = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum
        : tensor<16x128xf32> -> tensor<16x128xf32>
    ```

    On buffers, `in_place` reduces into the input buffer, and the result is
    that same buffer; `mesh-collectives-in-place` sets it where the input
    dies at the collective. The input then has an identity layout and the
    result's shape `(C11)`.

    ```mlir
    %r = mesh.all_reduce %buf on @world axes = ["shard"] reduction = sum
        in_place : memref<16x128xf32> -> memref<16x128xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `reduction` `=` `` $reduction
    (`in_place` $in_place^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Mesh_AllGatherOp : Mesh_CollectiveOp<"all_gather", (ins I64Attr:$gather_dim,
                                     OptionalAttr<I64Attr>:$valid)> {
  let summary = "Concatenates the members' tensors along a dimension";
  let description = [{
    Concatenates the `input` of every member of the group along `gather_dim`,
    in group order, and gives the whole to every member. The result's
    `gather_dim` is the input's times the group size; other dimensions are
    equal `(C5)`.

    An optional `valid = v` says that only the first `v` elements of the
    result's `gather_dim` hold data, the rest being padding (a dim of 10
    split over 4 devices in blocks of 3): only the data is sent, and the
    result's padding is zeros. It needs static shapes, dimensions of size 1
    before `gather_dim` (so that each member's data is a prefix of its
    block), and `0 <= v <=` the result's `gather_dim` `(C12)`.

    ```mlir
    %g = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0
        : tensor<16x128xf32> -> tensor<64x128xf32>
    // Rows 10 and 11 are padding: the last member sends one row.
    %p = mesh.all_gather %w on @world axes = ["shard"] gather_dim = 0
        valid = 10 : tensor<3x5xf32> -> tensor<12x5xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `gather_dim` `=` $gather_dim
    (`valid` `=` $valid^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Mesh_ReduceScatterOp : Mesh_CollectiveOp<"reduce_scatter", (ins I64Attr:$scatter_dim,
                                 Mesh_ReductionKindAttr:$reduction,
                                 OptionalAttr<I64Attr>:$valid)> {
  let summary = "Reduces over the group, then gives each member one slice";
  let description = [{
    Combines `input` elementwise over the group with `reduction`, then splits
    the result along `scatter_dim` into as many equal slices as the group has
    members; member `i` gets slice `i`. The input's `scatter_dim` must divide
    by the group size where both are static `(C7)`; the reduction is a known
    kind `(C10)` and valid for the element type `(C6)`.

    An optional `valid = v` says that only the first `v` elements of the
    input's `scatter_dim` hold data, the rest being padding: only the data is
    reduced, and each member's slice past the data is zeros. The conditions
    are all_gather's, on the input `(C12)`.

    ```mlir
    %s = mesh.reduce_scatter %x on @world axes = ["shard"] scatter_dim = 0
        reduction = sum : tensor<64x128xf32> -> tensor<16x128xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `scatter_dim` `=` $scatter_dim
    `reduction` `=` `` $reduction (`valid` `=` $valid^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Mesh_AllToAllOp : Mesh_CollectiveOp<"all_to_all", (ins I64Attr:$split_dim,
                                     I64Attr:$concat_dim,
                                     OptionalAttr<I64Attr>:$split_valid,
                                     OptionalAttr<I64Attr>:$concat_valid)> {
  let summary = "Splits along one dimension, exchanges, concatenates along another";
  let description = [{
    Each member splits `input` along `split_dim` into as many equal blocks as
    the group has members and sends block `j` to member `j`; each member then
    concatenates the blocks it received, in group order, along `concat_dim`.
    The result's `split_dim` is divided and its `concat_dim` multiplied by the
    group size `(C5)`, `(C7)`. This is the exchange of DeepSpeed-Ulysses
    (sequence-split to head-split).

    A dim padded to divide moves only its data, as in `all_gather`'s
    `valid`: `split_valid = v` says that only the first `v` elements of the
    input's `split_dim` hold data (the blocks sent to the last members carry
    less), `concat_valid = v` that only the first `v` elements of the
    result's `concat_dim` do (the last members send less). The padding is
    not sent, and the result's is zeros. Each needs static shapes and dims
    of size 1 before its dim (the input's for `split_valid`, the result's for
    `concat_valid`), `0 <= v <=` that dim's size, and the two dims distinct;
    at most one of the two is given `(C12)`.

    ```mlir
    %a = mesh.all_to_all %x on @dpsp axes = ["sequence_parallel"]
        split_dim = 1 concat_dim = 0 : tensor<8x64xf32> -> tensor<32x16xf32>
    // 10 rows over 4 members in blocks of 3: the last member sends 1 row.
    %p = mesh.all_to_all %w on @m axes = ["x"] split_dim = 1 concat_dim = 0
        concat_valid = 10 : tensor<3x8xf32> -> tensor<12x2xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim (`split_valid` `=` $split_valid^)?
    (`concat_valid` `=` $concat_valid^)? attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Mesh_AllSliceOp : Mesh_CollectiveOp<"all_slice", (ins I64Attr:$slice_dim)> {
  let summary = "Keeps this member's slice of a replicated tensor (no communication)";
  let description = [{
    The inverse of `all_gather` for a value that is the same on every member:
    member `i` of the group keeps slice `i` of `input` along `slice_dim`. No
    data moves. The input's `slice_dim` must divide by the group size where
    both are static `(C7)`.

    ```mlir
    %l = mesh.all_slice %x on @world axes = ["shard"] slice_dim = 1
        : tensor<16x128xf32> -> tensor<16x32xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `slice_dim` `=` $slice_dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Mesh_BroadcastOp : Mesh_CollectiveOp<"broadcast", (ins I64Attr:$root,
                                                         UnitAttr:$in_place)> {
  let summary = "Copies the root member's tensor to every member of its group";
  let description = [{
    Every member of a group gets the `input` of the member whose index in the
    group is `root`. `root` is at least 0 and less than the group size where
    that is static `(C8)`; the result has the input's type `(C5)`.

    ```mlir
    %b = mesh.broadcast %x on @world axes = ["shard"] root = 0
        : tensor<16x128xf32> -> tensor<16x128xf32>
    ```

    On buffers, `in_place` overwrites the input buffer with the root's, and
    the result is that same buffer, as for `all_reduce` `(C11)`.
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `root` `=` $root
    (`in_place` $in_place^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Mesh_PermuteOp : Mesh_CollectiveOp<"permute", (ins I64Attr:$offset, UnitAttr:$rotate)> {
  let summary = "Shifts tensors by a fixed offset along the group (ring or open chain)";
  let description = [{
    Member `i` of each group sends its `input` to member `i + offset`. With
    `rotate`, indices wrap around the group (a ring); without it, members whose
    target falls outside the group send nothing, and members that receive
    nothing get zeros. The building block of ring algorithms and halo
    exchange. `offset` is not 0 `(C9)`; the result has the input's type `(C5)`.

    ```mlir
    %q = mesh.permute %x on @world axes = ["shard"] offset = 1 rotate
        : tensor<16x128xf32> -> tensor<16x128xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `offset` `=` $offset (`rotate` $rotate^)?
    attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Point to point between meshes
//===----------------------------------------------------------------------===//

/// A transfer between two meshes of the same shape: the device at a
/// position of `mesh` and the device at the same position of the peer mesh.
/// The verifier (P1-P6) is shared; the memory effects say that the op
/// communicates, so it is neither removed nor reordered with other transfers.
class Mesh_PointToPointOp<string mnemonic, list<Trait> traits = []>
    : Mesh_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The mesh at the other end of the transfer.
    ::mlir::FlatSymbolRefAttr getPeerMeshAttr();
    /// The transferred value: the input of a send, the result of a recv.
    ::mlir::Value getData();
  }];
}

def Mesh_SendOp : Mesh_PointToPointOp<"send"> {
  let summary = "Sends this device's tensor to the same position of another mesh";
  let description = [{
    The device at row-major position `p` of `mesh` sends its `input` to the
    device at position `p` of the mesh `to`, which receives it with a
    matching `mesh.recv on @to from @mesh`: pipeline parallelism's
    activations going forward from one stage to the next. Both meshes are
    `mesh.mesh` ops `(P1)`, distinct and with the same sizes, axis by axis
    `(P2)`; no position is the same world rank in both where that is known
    at compile time `(P3)`; `tag` is in `[0, 32767]` `(P4)`. Transfers
    between two devices with the same tag arrive in the order they were
    sent; the receiver must expect the same element type and number of
    elements.

    A process outside `mesh` (a mesh over part of the world, see `devices`)
    sends nothing. A send blocks until its buffer may be reused.

    ```mlir
    mesh.mesh @stage0(["dp" = 2, "tp" = 2]) devices = [0, 1, 2, 3]
    mesh.mesh @stage1(["dp" = 2, "tp" = 2]) devices = [4, 5, 6, 7]
    mesh.send %act on @stage0 to @stage1 : tensor<4x8xf32>
    mesh.send %act on @stage0 to @stage1 tag = 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Mesh_TensorOrMemRef:$input, FlatSymbolRefAttr:$mesh,
                       FlatSymbolRefAttr:$to,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let assemblyFormat = [{
    $input `on` $mesh `to` $to (`tag` `=` $tag^)? attr-dict `:` type($input)
  }];
}

def Mesh_RecvOp : Mesh_PointToPointOp<"recv"> {
  let summary = "Receives the tensor the same position of another mesh sends";
  let description = [{
    The device at row-major position `p` of `mesh` receives the tensor that
    the device at position `p` of the mesh `from` sends with
    `mesh.send ... on @from to @mesh`. The meshes obey `(P1)`-`(P4)` as for
    `mesh.send`, and the result has a static shape `(P5)`: the receiver
    names the number of elements.

    A process outside `mesh` receives nothing, and its result is zeros.
    On buffers, the result is a new buffer, as a collective's.

    ```mlir
    %act = mesh.recv on @stage1 from @stage0 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, FlatSymbolRefAttr:$from,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs Mesh_TensorOrMemRef:$result);
  let assemblyFormat = [{
    `on` $mesh `from` $from (`tag` `=` $tag^)? attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Synchronisation and queries
//===----------------------------------------------------------------------===//

def Mesh_BarrierOp : Mesh_Op<"barrier", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Waits until every member of the group has arrived";
  let description = [{
    Blocks until every member of each group formed by `axes` has reached it.
    Its axes obey the same rules as a collective's `(C1)`-`(C3)`. On a
    process outside a mesh with `devices`, it does nothing.

    ```mlir
    mesh.barrier on @world axes = ["replicate", "shard"]
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let assemblyFormat = "`on` $mesh `axes` `=` $axes attr-dict";
  let hasVerifier = 1;
}

class Mesh_AxisQueryOp<string mnemonic>
    : Mesh_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrAttr:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$mesh $axis attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Mesh_AxisIndexOp : Mesh_AxisQueryOp<"axis_index"> {
  let summary = "This device's coordinate along a mesh axis";
  let description = [{
    The coordinate of the running device along `axis`, in `[0, size)`. It
    folds to 0 when the axis has size 1. The axis exists in the mesh `(C1)`.
    On a process outside a mesh with `devices`, it is 0.

    ```mlir
    %i = mesh.axis_index @world "shard" : index
    ```
  }];
}

def Mesh_IsMemberOp : Mesh_Op<"is_member", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Whether the running process is a device of the mesh";
  let description = [{
    True on the processes that `mesh` lists in its `devices`, false on the
    others; true everywhere for a mesh over the whole world, where it folds
    to a constant. The mesh exists `(C0)`. A pipeline stage branches on it
    so that only its own processes compute its layer:

    ```mlir
    %in0 = mesh.is_member @stage0 : i1
    scf.if %in0 {
      ...
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh);
  let results = (outs I1:$result);
  let assemblyFormat = "$mesh attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Mesh_AxisSizeOp : Mesh_AxisQueryOp<"axis_size"> {
  let summary = "The size of a mesh axis";
  let description = [{
    The number of devices along `axis`. It folds to a constant when the size
    is static; a `?` axis is known only when the program runs. The axis exists
    in the mesh `(C1)`.

    ```mlir
    %n = mesh.axis_size @world "shard" : index
    ```
  }];
}

//===----------------------------------------------------------------------===//
// mesh.circular_pad
//===----------------------------------------------------------------------===//

def Mesh_CircularPadOp : Mesh_Op<"circular_pad", [
    Pure, DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "Pads a tensor with its own wrapped-around ends (a torus)";
  let description = [{
    Pads each dim `d` of `source` with `low[d]` elements before and `high[d]`
    after, taken from the other end of the dim, as PyTorch's
    `pad(mode="circular")` does: element `i` of the result along `d` is
    element `(i - low[d]) mod n` of the source, `n` its size. A stencil on a
    periodic domain reads it through a window. Sharded on a padded dim, its
    halos come from the neighbouring devices, the first and last devices
    being neighbours (docs/partitioning.md); elsewhere it is decomposed into
    slices and a concat. There is one width per dim, none negative `(W1)`; a
    padded dim is static and at least as long as its widths `(W2)`; the
    result has the source's element type and each dim `n + low + high`
    `(W3)`.

    ```mlir
    %p = mesh.circular_pad %x low = [1, 1] high = [1, 1]
        : tensor<64x64xf32> -> tensor<66x66xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $source `low` `=` $low `high` `=` $high attr-dict `:` type($source) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

#endif // MESH_DIALECT_MESH_IR_MESHOPS_TD
