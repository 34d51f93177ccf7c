//===- Passes.h - transforms of the mesh dialect ----------------*- C++ -*-===//
//
// Declarations and registration of the passes in Transforms/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_PASSES_H
#define MESH_DIALECT_MESH_TRANSFORMS_PASSES_H

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mesh {

#define GEN_PASS_DECL
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"

/// True when `root` holds a sharding annotation: a `mesh.sharding` attribute
/// on an op, a function argument or a result, or a `mesh.shard` op. Calls
/// `report(op, what)` for each one found ("carries a 'mesh.sharding'
/// annotation", "has argument 2 with a 'mesh.sharding' annotation", ...).
bool findShardingAnnotation(
    Operation *root,
    function_ref<void(Operation *, StringRef)> report = nullptr);

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_PASSES_H
