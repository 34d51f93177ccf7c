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
  /// The widest halo (lo or hi) of a dim mapped to this factor: the factor
  /// is only split into blocks at least that long (halos come from the
  /// neighbouring devices).
  int64_t maxHalo = 0;
  /// For a factor that is the product of others (the dim a collapse_shape
  /// makes of a group of dims): how many; they are the factors right
  /// before it, major first. Its axes are always theirs, in that order,
  /// and it is sharded only when that is a block sharding of the product:
  /// every part before the last sharded one is split down to size 1.
  int32_t numParts = 0;
  /// For a part of such a product: the index of the product (-1: none).
  int32_t product = -1;
};

/// The halo of a dim whose factor is sharded: each device also holds `lo`
/// elements before its block and `hi` after it (see #mesh.sharding).
struct DimHalo {
  int64_t lo = 0, hi = 0;
  bool operator==(const DimHalo &o) const { return lo == o.lo && hi == o.hi; }
  bool operator!=(const DimHalo &o) const { return !(*this == o); }
};

/// The factors of an op and the factor of each operand and result dim
/// (-1: the dim belongs to no factor and is never sharded).
///
/// Window ops have halos. An operand dim read through a window (a
/// convolution's `s * oh + kh`) maps to the factor of the output dim it
/// slides along; when that factor is sharded, the operand needs the halo
/// `operandHalos` gives, so that each device's block holds its whole window.
/// A result dim with a halo in `resultHalos` (a padded dim) is made with the
/// elements of the halo computed as at the ends of the tensor (the padding
/// value); partitioning fills those that lie inside it from the
/// neighbouring devices. An empty list (or an empty entry) means no halos.
struct ShardingRule {
  SmallVector<ShardingFactor> factors;
  SmallVector<SmallVector<int64_t>> operandDims;
  SmallVector<SmallVector<int64_t>> resultDims;
  SmallVector<SmallVector<DimHalo>> operandHalos;
  SmallVector<SmallVector<DimHalo>> resultHalos;

  /// The halos of operand `i` (empty: none).
  ArrayRef<DimHalo> getOperandHalos(unsigned i) const {
    return i < operandHalos.size() ? ArrayRef<DimHalo>(operandHalos[i])
                                   : ArrayRef<DimHalo>();
  }
  /// The halos of result `i` (empty: none).
  ArrayRef<DimHalo> getResultHalos(unsigned i) const {
    return i < resultHalos.size() ? ArrayRef<DimHalo>(resultHalos[i])
                                  : ArrayRef<DimHalo>();
  }
};

/// What an op's sharding rule depends on beside the op's name, so that ops
/// that agree on it share one rule, derived once (a chain of 50,000 ops on
/// one shape has one rule).
enum class RuleSharing : uint8_t {
  /// Every op derives its own (its body or attributes decide).
  None,
  /// The operand and result types.
  Types,
  /// The types, the op's properties (inherent attributes) and its rule
  /// variant (ShardingRuleOpInterface::getRuleVariant).
  Signature,
};

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_IR_SHARDINGRULE_H
