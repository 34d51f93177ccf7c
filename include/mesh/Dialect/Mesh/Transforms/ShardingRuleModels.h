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

/// The reduction kind of a combiner op (`arith.addf` is a sum, `maximumf`
/// a max, ...), if it is one we know.
std::optional<ReductionKind> getReductionCombinerKind(Operation *op);

/// What `op`'s rule depends on beside its name: its
/// ShardingRuleOpInterface's answer, else `RuleSharing::Types` for an op
/// with the Elementwise trait (its rule is the elementwise one).
RuleSharing getShardingRuleSharing(Operation *op);

/// For an op whose rule is shared by signature: its interface's
/// getRuleVariant.
std::optional<unsigned> getShardingRuleVariant(Operation *op);

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULEMODELS_H
