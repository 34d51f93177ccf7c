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

#include <map>
#include <unordered_map>
#include <vector>

namespace mlir {
namespace mesh {

/// The sharding rule of `op`, or failure when none applies (the op's
/// tensors are then replicated, with a warning).
FailureOr<ShardingRule> getShardingRule(Operation *op);

/// The axes each factor of a rule is sharded over, as an array of axis names
/// (null: not sharded).
using FactorSharding = SmallVector<ArrayAttr, 8>;

/// The sharding on `mesh` of a value whose dims map to the factors `dims`
/// (-1: none).
ShardingAttr projectFactors(FlatSymbolRefAttr mesh,
                            ArrayRef<ArrayAttr> factors,
                            ArrayRef<int64_t> dims);

/// The sharding of an op result: the projection, partial over the axes of
/// the sharded reduction factors.
ShardingAttr projectResult(FlatSymbolRefAttr mesh, const ShardingRule &rule,
                           ArrayRef<ArrayAttr> factors,
                           ArrayRef<int64_t> dims);

/// Hashes values by address, keeping their order: values made
/// one after the other land in nearby buckets, so the maps the passes fill
/// and read in program order stay in cache on programs of 50,000 ops (the
/// default hash scatters them over the whole table).
struct ValueAddressInfo : llvm::DenseMapInfo<Value> {
  static unsigned getHashValue(Value v) {
    return static_cast<unsigned>(
        reinterpret_cast<uintptr_t>(v.getAsOpaquePointer()) >> 4);
  }
};

/// Mesh lookups by symbol, cached per parent op: the passes ask once per op.
class MeshCache {
public:
  explicit MeshCache(SymbolTableCollection &tables) : tables(tables) {}
  /// The mesh `ref` names, seen from `op`.
  MeshOp get(Operation *op, FlatSymbolRefAttr ref) {
    auto [it, inserted] = meshes.try_emplace({op->getParentOp(), ref}, MeshOp());
    if (inserted)
      it->second = lookupMesh(op, ref, &tables);
    return it->second;
  }

private:
  SymbolTableCollection &tables;
  DenseMap<std::pair<Operation *, Attribute>, MeshOp> meshes;
};

/// projectFactors and projectResult with a small cache in front: the ops of
/// a program tend to produce the same few shardings over and over, and a hit
/// costs a hash of a few pointers instead of two attribute uniquings.
class ShardingProjector {
public:
  ShardingAttr project(FlatSymbolRefAttr mesh, ArrayRef<ArrayAttr> factors,
                       ArrayRef<int64_t> dims) {
    return get(mesh, nullptr, factors, dims);
  }
  ShardingAttr projectResult(FlatSymbolRefAttr mesh, const ShardingRule &rule,
                             ArrayRef<ArrayAttr> factors,
                             ArrayRef<int64_t> dims) {
    return get(mesh, &rule, factors, dims);
  }

private:
  ShardingAttr get(FlatSymbolRefAttr mesh, const ShardingRule *rule,
                   ArrayRef<ArrayAttr> factors, ArrayRef<int64_t> dims);
  struct Entry {
    SmallVector<const void *, 8> key;
    ShardingAttr value;
  };
  static constexpr unsigned kEntries = 64;
  Entry entries[kEntries];
};

/// The rules of many ops, each distinct rule stored once: a chain of 50,000
/// elementwise ops on one shape has one rule. Ops whose rule follows from
/// their name and types alone (elementwise ops, tensor.empty, linalg.fill,
/// constants) are looked up by those without deriving the rule again.
class ShardingRuleTable {
public:
  /// The index of `op`'s rule, or -1 when it has none.
  int add(Operation *op);
  const ShardingRule &operator[](int index) const { return rules[index]; }

private:
  int intern(FailureOr<ShardingRule> rule);
  std::vector<ShardingRule> rules;
  /// Hash of a rule -> indices of the rules with that hash.
  std::unordered_map<size_t, SmallVector<int, 1>> byHash;
  /// (op name, operand types, result types) -> rule index, for the ops whose
  /// rule depends on nothing else.
  std::map<SmallVector<const void *, 8>, int> bySignature;
};

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_SHARDINGRULES_H
