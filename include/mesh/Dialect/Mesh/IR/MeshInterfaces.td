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
        return ::llvm::to_vector(
            $_op.getAxesAttr().template getAsValueRange<::mlir::StringAttr>());
      }]>
  ];
}

def Mesh_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::mesh";
  let description = [{
    Lets an op of any dialect describe how sharding flows through it, as a
    `ShardingRule`: factors (loop dims, some of them reductions), and the
    factor of each operand and result dim. Sharding propagation and
    partitioning see ops only through it (ops with the `Elementwise` trait
    that lack it get the elementwise rule). The rules of linalg, tensor and
    arith ops are external models, registered by
    `registerShardingRuleModels`; attach it to another dialect's ops the same
    way.
  }];
  let methods = [
    InterfaceMethod<"The op's sharding rule, or failure if it has none.",
      "::mlir::FailureOr<::mlir::mesh::ShardingRule>", "getShardingRule">,
    InterfaceMethod<[{
        What the rule depends on beside the op's name, so that ops that agree
        on it share one rule without asking each op again: nothing more
        than the operand and result types (`RuleSharing::Types`), those and
        the op's properties and `getRuleVariant` (`RuleSharing::Signature`),
        or more (`RuleSharing::None`, each op derives its own).
      }],
      "::mlir::mesh::RuleSharing", "getRuleSharing", (ins), [{}],
      [{ return ::mlir::mesh::RuleSharing::None; }]>,
    InterfaceMethod<[{
        For `RuleSharing::Signature`: what else the rule reads of the op
        (of its operands' producers, say), as a small number that ops
        sharing one rule must agree on; std::nullopt when it does not fit,
        and the op then derives its own rule.
      }],
      "::std::optional<unsigned>", "getRuleVariant", (ins), [{}],
      [{ return 0u; }]>,
    InterfaceMethod<[{
        True when the op's results hold no data but what its scalar operands
        give (an empty tensor, a fill of one): each tensor operand has the
        results' layout and needs no data either. Partitioning then makes
        such a value again in the layout a consumer needs instead of moving
        it.
      }],
      "bool", "needsNoData", (ins), [{}], [{ return false; }]>,
    InterfaceMethod<[{
        Called by partitioning once the op's operands and results have their
        per-device types: rewrites the sizes the op spells (static sizes in
        attributes, an output shape, dynamic size operands) to per-device
        ones. `globalOperandType(i)` and `globalResultTypes` are the operand
        and result types before partitioning (a dim split over a `?` axis
        may be dynamic there; an operand's is computed when asked).
        `devicesAlong(builder, result, dim)` builds, before the op, the
        number of devices that split dim `dim` of result `result`, or returns
        null when none do.
      }],
      "void", "updateSizesForLocalTypes",
      (ins "::llvm::function_ref<::mlir::Type(unsigned)>":$globalOperandType,
           "::mlir::TypeRange":$globalResultTypes,
           "::llvm::function_ref<::mlir::Value(::mlir::OpBuilder &, unsigned, "
           "unsigned)>":$devicesAlong), [{}], [{ return; }]>
  ];
}

#endif // MESH_DIALECT_MESH_IR_MESHINTERFACES_TD
