//===- MeshOps.h - mesh dialect ops, attributes, enums ----------*- C++ -*-===//
//
// Declares the ops, the sharding attribute, the reduction enum and the
// collective interface of the mesh dialect, plus small helpers on them.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_IR_MESHOPS_H
#define MESH_DIALECT_MESH_IR_MESHOPS_H

#include "mesh/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mesh/Dialect/Mesh/IR/MeshEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mesh/Dialect/Mesh/IR/MeshAttrs.h.inc"

// The interfaces name ShardingRule: its header comes first.
#include "mesh/Dialect/Mesh/IR/ShardingRule.h"

#include "mesh/Dialect/Mesh/IR/MeshInterfaces.h.inc"

#define GET_OP_CLASSES
#include "mesh/Dialect/Mesh/IR/MeshOps.h.inc"

namespace mlir {
namespace mesh {

/// Finds the mesh named `meshRef` visible from `from`, using `symbolTables`
/// when given (cached lookups) and a plain symbol lookup otherwise. Returns a
/// null op when the symbol does not exist or is not a mesh.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr meshRef,
                  SymbolTableCollection *symbolTables = nullptr);

/// Emits an error at `op` unless `meshRef` names a `mesh.mesh` (C0).
FailureOr<MeshOp> getMeshOrEmitError(Operation *op, FlatSymbolRefAttr meshRef,
                                     SymbolTableCollection *symbolTables);

/// True when `kind` is a valid reduction for elements of type `elementType`
/// (C6): bitwise kinds need integers, all kinds need integers or floats.
bool isReductionValidFor(ReductionKind kind, Type elementType);

/// Verifies `sharding` against `type` (rank, C0/S1/S2/S3) and its mesh, as
/// seen from `op`. `what` names the value in messages ("operand 0", ...).
LogicalResult verifySharding(Operation *op, ShardingAttr sharding, Type type,
                             StringRef what,
                             SymbolTableCollection *symbolTables = nullptr);

/// The group size of `op` when statically known (product of its axes'
/// sizes), or std::nullopt when the mesh is missing or an axis is `?`.
std::optional<int64_t> getStaticGroupSize(CollectiveOpInterface op);

/// True when `op` is a memref collective marked `in_place` (C11): it writes
/// its input buffer, and its result is that buffer.
bool isInPlace(Operation *op);

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_IR_MESHOPS_H
