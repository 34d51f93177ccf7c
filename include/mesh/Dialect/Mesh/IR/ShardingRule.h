//===- ShardingRule.h - how an op's dims relate, as factors -----*- C++ -*-===//
//
// A sharding rule describes an op as loops over *factors*: each tensor dim of
// each operand and result is one factor (or none), and a factor may be a
// reduction. Sharding a factor over mesh axes shards every dim mapped to it;
// sharding a reduction factor leaves the results partial. This is Shardy's
// idea, in our own words; propagation and partitioning only see rules.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_IR_SHARDINGRULE_H
#define MESH_DIALECT_MESH_IR_SHARDINGRULE_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir {
namespace mesh {

enum class ReductionKind : uint32_t;

/// One factor of a sharding rule.
struct ShardingFactor {
  /// Global size (ShapedType::kDynamic when unknown).
  int64_t size;
  /// Set for a reduction factor: how the partial results combine.
  std::optional<ReductionKind> reduction;
  /// A factor that must not be sharded (an index expression that is not a
  /// plain loop dim, a reduction of unknown kind, a loop whose index is read).
  bool blocked = false;
};

/// The factors of an op and the factor of each operand and result dim
/// (-1: the dim belongs to no factor and is never sharded).
struct ShardingRule {
  SmallVector<ShardingFactor> factors;
  SmallVector<SmallVector<int64_t>> operandDims;
  SmallVector<SmallVector<int64_t>> resultDims;
};

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_IR_SHARDINGRULE_H
