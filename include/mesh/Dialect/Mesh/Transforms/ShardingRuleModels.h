//===- ShardingRuleModels.h - sharding rules of upstream ops ----*- C++ -*-===//
//
// The sharding rules of linalg, tensor and arith ops, registered as external
// models of ShardingRuleOpInterface, and the lookup the passes use.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULEMODELS_H
#define MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULEMODELS_H

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

namespace mlir {
class DialectRegistry;

namespace mesh {

/// Registers ShardingRuleOpInterface models for the ops whose rules we know:
/// every linalg structured op (from its indexing maps), linalg.fill,
/// tensor.empty, tensor.collapse_shape / expand_shape / extract_slice /
/// insert_slice / concat / pad, and arith.constant.
void registerShardingRuleModels(DialectRegistry &registry);

/// The sharding rule of `op`: its ShardingRuleOpInterface, else the
/// elementwise rule for an op with the Elementwise trait. Failure when none
/// applies (the op's tensors are then replicated, with a warning).
FailureOr<ShardingRule> getShardingRule(Operation *op);

/// True when `op`'s rule depends on nothing but its name and types.
bool isShardingRuleFixedByTypes(Operation *op);

/// True when `op`'s rule depends on nothing but its name, its types, its
/// properties (inherent attributes) and getShardingRuleVariant: linalg's
/// structured ops whose body their name and properties spell (all but
/// linalg.generic, linalg.map and linalg.reduce, whose bodies are written
/// out).
bool isShardingRuleFixedBySignature(Operation *op);

/// For an op fixed by signature, what its rule reads of its operands'
/// values: whether each accumulator is a fill of a constant zero, one or all
/// ones (a reduction loop splits only where every accumulator starts from
/// the reduction's neutral value); std::nullopt when that does not fit in
/// the number.
std::optional<unsigned> getShardingRuleVariant(Operation *op);

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULEMODELS_H
