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
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

namespace mlir {
namespace mesh {

/// The sharding rule of `op`, or failure when none applies (the op's
/// tensors are then replicated, with a warning).
FailureOr<ShardingRule> getShardingRule(Operation *op);

/// The axes each factor of a rule is sharded over (unset: not sharded).
using FactorSharding = SmallVector<std::optional<SmallVector<std::string>>>;

/// The layout of a value whose dims map to the factors `dims` (-1: none).
ShardingLayout projectFactors(const FactorSharding &factors,
                              ArrayRef<int64_t> dims);

/// The layout of an op result: the projection, partial over the axes of the
/// sharded reduction factors.
ShardingLayout projectResult(const ShardingRule &rule,
                             const FactorSharding &factors,
                             ArrayRef<int64_t> dims);

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULES_H
