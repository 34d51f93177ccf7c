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

    ```mlir
    mesh.mesh @world(["replicate" = 2, "shard" = 4])
    mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrArrayAttr:$axis_names,
    DenseI64ArrayAttr:$shape
  );
  let assemblyFormat = [{
    $sym_name `(` custom<MeshAxes>($axis_names, $shape) `)` attr-dict
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

def Mesh_AllGatherOp : Mesh_CollectiveOp<"all_gather", (ins I64Attr:$gather_dim)> {
  let summary = "Concatenates the members' tensors along a dimension";
  let description = [{
    Concatenates the `input` of every member of the group along `gather_dim`,
    in group order, and gives the whole to every member. The result's
    `gather_dim` is the input's times the group size; other dimensions are
    equal `(C5)`.

    ```mlir
    %g = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0
        : tensor<16x128xf32> -> tensor<64x128xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `gather_dim` `=` $gather_dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Mesh_ReduceScatterOp : Mesh_CollectiveOp<"reduce_scatter", (ins I64Attr:$scatter_dim,
                                 Mesh_ReductionKindAttr:$reduction)> {
  let summary = "Reduces over the group, then gives each member one slice";
  let description = [{
    Combines `input` elementwise over the group with `reduction`, then splits
    the result along `scatter_dim` into as many equal slices as the group has
    members; member `i` gets slice `i`. The input's `scatter_dim` must divide
    by the group size where both are static `(C7)`; the reduction is a known
    kind `(C10)` and valid for the element type `(C6)`.

    ```mlir
    %s = mesh.reduce_scatter %x on @world axes = ["shard"] scatter_dim = 0
        reduction = sum : tensor<64x128xf32> -> tensor<16x128xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `scatter_dim` `=` $scatter_dim
    `reduction` `=` `` $reduction attr-dict `:` type($input) `->` type($result)
  }];
}

def Mesh_AllToAllOp : Mesh_CollectiveOp<"all_to_all", (ins I64Attr:$split_dim,
                                     I64Attr:$concat_dim)> {
  let summary = "Splits along one dimension, exchanges, concatenates along another";
  let description = [{
    Each member splits `input` along `split_dim` into as many equal blocks as
    the group has members and sends block `j` to member `j`; each member then
    concatenates the blocks it received, in group order, along `concat_dim`.
    The result's `split_dim` is divided and its `concat_dim` multiplied by the
    group size `(C5)`, `(C7)`. This is the exchange of DeepSpeed-Ulysses
    (sequence-split to head-split).

    ```mlir
    %a = mesh.all_to_all %x on @dpsp axes = ["sequence_parallel"]
        split_dim = 1 concat_dim = 0 : tensor<8x64xf32> -> tensor<32x16xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
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
// Synchronisation and queries
//===----------------------------------------------------------------------===//

def Mesh_BarrierOp : Mesh_Op<"barrier", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Waits until every member of the group has arrived";
  let description = [{
    Blocks until every member of each group formed by `axes` has reached it.
    Its axes obey the same rules as a collective's `(C1)`-`(C3)`.

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

    ```mlir
    %i = mesh.axis_index @world "shard" : index
    ```
  }];
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

#endif // MESH_DIALECT_MESH_IR_MESHOPS_TD
