//===- MeshBase.td - mesh dialect, enums and attributes ----*- tablegen -*-===//
//
// The `mesh` dialect: named device meshes, sharding annotations and
// collectives on named mesh axes. This file holds the dialect definition,
// the reduction-kind enum and the sharding attribute; ops live in MeshOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_IR_MESHBASE_TD
#define MESH_DIALECT_MESH_IR_MESHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Mesh_Dialect : Dialect {
  let name = "mesh";
  let cppNamespace = "::mlir::mesh";
  let summary = "Named device meshes, shardings and collectives on mesh axes";
  let description = [{
    The `mesh` dialect describes programs that run on a logical grid of
    devices, the *mesh*. A mesh has named axes with sizes, laid out row-major
    exactly like PyTorch's `init_device_mesh`: device `r` of a mesh of shape
    `(s0, ..., sn-1)` has coordinate `c_k = (r / prod(s_{k+1..})) % s_k`.

    Tensors carry a `#mesh.sharding` that says which mesh axes split each
    tensor dimension and which axes hold a pending (partial) reduction.
    Collective operations (`mesh.all_reduce`, `mesh.all_gather`, ...) name the
    mesh axes they communicate over; the group of a device is every device that
    agrees with it on all other axes, ordered row-major over the axes in the
    order they are written.

    ```mlir
    mesh.mesh @world(["replicate" = 2, "shard" = 4])
    func.func @f(%x: tensor<16x128xf32>) -> tensor<64x128xf32> {
      %g = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0
          : tensor<16x128xf32> -> tensor<64x128xf32>
      return %g : tensor<64x128xf32>
    }
    ```

    The numbered constraints cited by the verifiers, such as `(M2)` or `(C4)`,
    are listed in `docs/MeshSpec.md`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let extraClassDeclaration = [{
    /// Registers the attributes (defined where their storage is complete).
    void registerAttributes();

    /// The discardable attribute that carries a value's sharding: on function
    /// arguments and results, and on operations (one sharding for each
    /// result, or a single sharding for an op with one result).
    static constexpr ::llvm::StringLiteral getShardingAttrName() {
      return ::llvm::StringLiteral("mesh.sharding");
    }

    /// The unit attribute of the GPU device stage on a `memref.alloc` or a
    /// memref function argument whose buffer stays in host memory
    /// (mesh-gpu-host-buffers).
    static constexpr ::llvm::StringLiteral getHostBufferAttrName() {
      return ::llvm::StringLiteral("mesh.host_buffer");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Reduction kinds
//===----------------------------------------------------------------------===//

def Mesh_ReductionKind : I32EnumAttr<"ReductionKind",
    "How the values of a group are combined", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Prod", 1, "prod">,
  I32EnumAttrCase<"Min", 2, "min">,
  I32EnumAttrCase<"Max", 3, "max">,
  I32EnumAttrCase<"Avg", 4, "avg">,
  I32EnumAttrCase<"And", 5, "and">,
  I32EnumAttrCase<"Or", 6, "or">,
  I32EnumAttrCase<"Xor", 7, "xor">
]> {
  let description = [{
    The reduction of `mesh.all_reduce` and `mesh.reduce_scatter`, and the
    pending reduction of a partial `#mesh.sharding`.

    ```mlir
    %r = mesh.all_reduce %x on @world axes = ["shard"] reduction = avg
        : tensor<8xf32> -> tensor<8xf32>
    ```
  }];
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::mesh";
}

/// The pending reduction of a sharding; `sum` when none is pending.
def Mesh_PartialKindParameter
    : DefaultValuedParameter<"::mlir::mesh::ReductionKind",
                             "::mlir::mesh::ReductionKind::Sum",
                             "the pending reduction">;

def Mesh_ReductionKindAttr
    : EnumAttr<Mesh_Dialect, Mesh_ReductionKind, "reduction"> {
  let summary = "A reduction kind: sum, prod, min, max, avg, and, or, xor";
  let description = [{
    How a collective combines the values of a group. `sum`, `prod`, `min`,
    `max` and `avg` apply to integers and floats (`avg` of integers truncates
    toward zero, as NCCL's `ncclAvg`); `and`, `or` and `xor` are bitwise and
    apply to integers only. It is written as the bare kind, inside an op and
    on its own:

    ```mlir
    %r = mesh.all_reduce %x on @world axes = ["shard"] reduction = max
        : tensor<8xi32> -> tensor<8xi32>
    ```
  }];
  // The keyword through a directive of ours, so that an unknown kind gets one
  // message that lists the valid ones.
  let assemblyFormat = "custom<ReductionKindKeyword>($value)";
}

//===----------------------------------------------------------------------===//
// Axis lists
//===----------------------------------------------------------------------===//

def Mesh_AxisListAttr : AttrDef<Mesh_Dialect, "AxisList"> {
  let mnemonic = "axes";
  let summary = "An ordered list of mesh axis names";
  let description = [{
    The axes that split one dimension of a `#mesh.sharding`, or that hold its
    pending reduction, major to minor. Inside a sharding it is written as the
    bracketed list alone; on its own it is `#mesh.axes[...]`. Being uniqued,
    two equal lists are one attribute, which the passes compare by pointer.

    ```mlir
    #mesh.axes["replicate", "shard"]
    #mesh.sharding<@world, [["replicate", "shard"], []]>
    ```
  }];
  let parameters = (ins OptionalArrayRefParameter<"::mlir::StringAttr",
                                                  "axis names">:$axes);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// True when the list names no axis.
    bool empty() const { return getAxes().empty(); }
    /// Number of axes.
    size_t size() const { return getAxes().size(); }
    ::llvm::ArrayRef<::mlir::StringAttr>::iterator begin() const {
      return getAxes().begin();
    }
    ::llvm::ArrayRef<::mlir::StringAttr>::iterator end() const {
      return getAxes().end();
    }
    /// The axis names as strings.
    ::llvm::SmallVector<::llvm::StringRef> getNames() const;
    /// The list of `names`.
    static AxisListAttr get(::mlir::MLIRContext *context,
                            ::llvm::ArrayRef<::llvm::StringRef> names);
  }];
}

//===----------------------------------------------------------------------===//
// Sharding attribute
//===----------------------------------------------------------------------===//

def Mesh_ShardingAttr : AttrDef<Mesh_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "How a tensor is laid out over the axes of a mesh";
  let description = [{
    `#mesh.sharding<@mesh, [[axes of dim 0], [axes of dim 1], ...]>` gives,
    for each tensor dimension, the ordered list of mesh axes that split it
    (major to minor); an empty list means the dimension is not split. Axes that
    split no dimension replicate the tensor. The list has one entry for each
    dimension of the tensor (`(S2)`), axis names are non-empty strings
    (`(S4)`), and an axis appears at most once in the whole sharding
    (`(S3)`).

    An optional `partial = kind[axes]` says that the value held on each device
    is a partial result still to be reduced over those axes with that
    reduction kind: a pending reduction, as a sharded contraction produces.
    It names a known kind and at least one axis (`(S5)`).

    An optional `halo = [[lo, hi], ...]`, one pair of widths for each
    dimension, makes the blocks of split dimensions overlap: the dimension
    without its first `lo` and last `hi` elements (its core) is split as
    above, and each device also holds the `lo` elements before its block and
    the `hi` elements after it, which belong to its neighbours (or, at the
    ends, to the `lo` first and `hi` last elements). A device of index `k`
    along the dimension's axes then holds elements `[k*b, k*b + b + lo + hi)`
    of a dimension of size `d`, with `b = (d - lo - hi) / n`. Shardings whose
    halos differ only in how `lo + hi` is split hold the same elements on
    every device. Widths are non-negative and only split dimensions have
    them `(S9)`; each is at most the block `b` `(S10)`. Partitioning derives
    halos (a padded tensor that a window reads); users rarely write them.

    ```mlir
    mesh.mesh @world(["replicate" = 2, "shard" = 4])
    // Rows split over "shard", columns whole: each device holds 16x128 of 64x128.
    #mesh.sharding<@world, [["shard"], []]>
    // Rows 0..65 of a 66x128 tensor: device k holds rows [16k, 16k + 18),
    // its 16 rows of the core (rows 1..64) and one on each side.
    #mesh.sharding<@world, [["shard"], []], halo = [[1, 1], [0, 0]]>
    // Rows split over both axes, "replicate" major: 8 rows per device.
    #mesh.sharding<@world, [["replicate", "shard"], []]>
    // Whole on every device, but still to be summed over "shard".
    #mesh.sharding<@world, [[], []], partial = sum["shard"]>
    ```
  }];
  let parameters = (ins
    AttrParameter<"::mlir::FlatSymbolRefAttr", "the mesh">:$mesh,
    ArrayRefParameter<"::mlir::mesh::AxisListAttr",
                      "for each tensor dim, the axes that split it">:$dims,
    OptionalParameter<"::mlir::mesh::AxisListAttr",
                      "axes with a pending reduction (null: none)">:$partialAxes,
    Mesh_PartialKindParameter:$partialKind,
    OptionalArrayRefParameter<"int64_t",
        "halo widths, lo and hi of each dim in turn (empty: none)">:$halo
  );
  // The dims list may be empty (a rank-0 tensor), which a generated list
  // parser does not accept, a defaulted kind would be left out when it is
  // `sum`, and two optional clauses each open with a comma: the attribute
  // parses and prints itself.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilderWithInferredContext<(ins
        "::mlir::FlatSymbolRefAttr":$mesh,
        "::llvm::ArrayRef<::llvm::SmallVector<::llvm::StringRef>>":$dims,
        CArg<"::llvm::ArrayRef<::llvm::StringRef>", "{}">:$partialAxes,
        CArg<"::mlir::mesh::ReductionKind",
             "::mlir::mesh::ReductionKind::Sum">:$partialKind,
        CArg<"::llvm::ArrayRef<int64_t>", "{}">:$halo)>
  ];
  let extraClassDeclaration = [{
    /// Number of tensor dimensions this sharding describes.
    unsigned getRank() const { return getDims().size(); }
    /// The axes that split tensor dimension `dim`, major to minor.
    ::mlir::mesh::AxisListAttr getDimAxes(unsigned dim) const {
      return getDims()[dim];
    }
    /// The names of the axes with a pending reduction (none if not partial).
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxisNames() const;
    /// True when no dimension is split and nothing is pending.
    bool isFullyReplicated() const;
    /// True when some axis holds a pending reduction.
    bool isPartial() const { return static_cast<bool>(getPartialAxes()); }
    /// True when some dim has a halo.
    bool hasHalo() const { return !getHalo().empty(); }
    /// The halo widths (lo, hi) of dim `dim` ({0, 0} without halo).
    std::pair<int64_t, int64_t> getDimHalo(unsigned dim) const {
      if (getHalo().empty())
        return {0, 0};
      return {getHalo()[2 * dim], getHalo()[2 * dim + 1]};
    }
    /// This sharding with `halo` (flattened lo, hi pairs; all zero: none).
    ShardingAttr withHalo(::llvm::ArrayRef<int64_t> halo) const;
  }];
}

#endif // MESH_DIALECT_MESH_IR_MESHBASE_TD
