//===- MeshInterfaces.td - interfaces of the mesh dialect --*- tablegen -*-===//
//
// The interface shared by every collective op: the mesh, the ordered axes of
// the group, the data operand and result. Passes (folding, lowering,
// optimisation) handle all collectives through it.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_IR_MESHINTERFACES_TD
#define MESH_DIALECT_MESH_IR_MESHINTERFACES_TD

include "mlir/IR/OpBase.td"

def Mesh_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::mesh";
  let description = [{
    An operation that communicates within the groups of a mesh formed by an
    ordered list of mesh axes. Every collective of the `mesh` dialect
    implements it.
  }];
  let methods = [
    InterfaceMethod<"The mesh the collective runs on.",
      "::mlir::FlatSymbolRefAttr", "getMeshAttr">,
    InterfaceMethod<"The ordered axis names that form each group.",
      "::mlir::ArrayAttr", "getAxesAttr">,
    InterfaceMethod<"The axis names as strings, in group order.",
      "::llvm::SmallVector<::llvm::StringRef>", "getAxisNames", (ins), [{}],
      [{
        ::llvm::SmallVector<::llvm::StringRef> names;
        for (::mlir::Attribute a : $_op.getAxesAttr())
          names.push_back(::llvm::cast<::mlir::StringAttr>(a).getValue());
        return names;
      }]>
  ];
}

def Mesh_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::mesh";
  let description = [{
    Lets an op of any dialect describe how sharding flows through it, as a
    `ShardingRule`: factors (loop dims, some of them reductions), and the
    factor of each operand and result dim. Sharding propagation and
    partitioning use it before their built-in rules (linalg structured ops
    from their indexing maps, elementwise ops, `tensor.empty`). Attach it to
    another dialect's ops as an external model.
  }];
  let methods = [
    InterfaceMethod<"The op's sharding rule, or failure if it has none.",
      "::mlir::FailureOr<::mlir::mesh::ShardingRule>", "getShardingRule">
  ];
}

#endif // MESH_DIALECT_MESH_IR_MESHINTERFACES_TD
