//===- ShardingRules.h - the sharding rule of an op --------------*- C++ -*-===//
//
// Finds an op's sharding rule: its ShardingRuleOpInterface if it has one,
// else the built-in rules (linalg structured ops from their indexing maps,
// elementwise ops, tensor.empty, constants).
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULES_H
#define MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULES_H

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

namespace mlir {
namespace mesh {

/// The sharding rule of `op`, or failure when none applies (the op's
/// tensors are then replicated, with a warning).
FailureOr<ShardingRule> getShardingRule(Operation *op);

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULES_H
