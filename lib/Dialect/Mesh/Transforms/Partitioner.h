//===- Partitioner.h - the per-function partitioner ------------*- C++ -*-===//
//
// Private to the partition pass: the class that partitions one function,
// shared by Partition.cpp (resharding, ops, the pass) and PartitionHalos.cpp
// (halo exchanges).
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_DIALECT_MESH_TRANSFORMS_PARTITIONER_H
#define MESH_LIB_DIALECT_MESH_TRANSFORMS_PARTITIONER_H

#include "Linearity.h"
#include "ShardingSupport.h"

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/Transforms/Resharding.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace mesh {
namespace partition_detail {

inline bool hasTensors(Operation *op) {
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTensor) ||
         llvm::any_of(op->getResultTypes(), isTensor);
}

/// The shardings of a function's arguments and results, read before any
/// function is partitioned (partitioning removes them).
struct Signature {
  SmallVector<ShardingAttr> args, results;
};

/// The rule of an op, when it has one.
struct RuleOf {
  Operation *op;
  std::optional<unsigned> rule;
};

class FunctionPartitioner {
public:
  FunctionPartitioner(FunctionOpInterface fn, SymbolTableCollection &tables,
                      const DenseMap<Operation *, Signature> &signatures)
      : fn(fn), tables(tables), signatures(signatures),
        shardingName(StringAttr::get(fn->getContext(),
                                     MeshDialect::getShardingAttrName())),
        noAttrs(DictionaryAttr::get(fn->getContext())) {}

  /// Partitions the body, then the signature.
  LogicalResult run();

private:
  // Values and their per-device types.
  LogicalResult place(Value v, ShardingAttr s, Operation *where,
                      const Twine &what);
  FailureOr<RankedTensorType> localType(Operation *where,
                                        RankedTensorType global, ShardingAttr s,
                                        const Twine &what);
  /// The sharding `v` has now (null: replicated, on no mesh).
  ShardingAttr placedOf(Value v) { return placed.lookup(v); }
  bool fillsWithPendingSums(Operation *op);
  MeshOp meshFor(Operation *op, FlatSymbolRefAttr ref) {
    return meshCache.get(op, ref);
  }

  // Resharding.
  FailureOr<Value> reshard(Value v, ShardingAttr target, FlatSymbolRefAttr mesh,
                           Operation *where, const Twine &what);
  /// reshard's steps: the mesh both layouts are on (an error when they are
  /// on two, or none is known); of `v` and its reshards visible at `at`,
  /// the one whose plan to `target` sends the fewest bytes, with that plan
  /// (`plan`, the plan from `v`, is replaced when another wins); and the
  /// record of `out` as `v` resharded to `target`.
  MeshOp reshardMesh(ShardingAttr from, FlatSymbolRefAttr mesh,
                     Operation *where, const Twine &what);
  Value cheapestSource(Value v, ShardingAttr from, ShardingAttr target,
                       RankedTensorType global, MeshOp meshOp, Operation *at,
                       FailureOr<ArrayRef<ReshardStep>> &plan);
  void noteReshard(Value v, Attribute targetKey, ShardingAttr target,
                   Value out);
  LogicalResult reshardOperand(OpOperand &operand, ShardingAttr target,
                               FlatSymbolRefAttr mesh, Operation *where,
                               const Twine &what);
  Value findReshard(Value v, Attribute targetKey, Operation *where);
  Value remake(Value v, ShardingAttr target, Operation *where);
  RankedTensorType globalTypeOf(Value v, ShardingAttr from, MeshOp mesh);
  /// Remembers the global type of `v` when its per-device type `local` has
  /// a dynamic dim that is static in `global` (split over a `?` axis).
  void noteDynamicLocal(Value v, RankedTensorType global,
                        RankedTensorType local) {
    for (int64_t d = 0; d < global.getRank(); ++d)
      if (local.isDynamicDim(d) && !global.isDynamicDim(d)) {
        staticGlobals[v] = global;
        return;
      }
  }
  /// True when `op` says its one result needs no data.
  bool isRemakeable(Operation *op) {
    return op->getNumResults() == 1 && classifier.hasRuleInterface(op) &&
           cast<ShardingRuleOpInterface>(op).needsNoData();
  }
  /// `global` is the tensor's global type, whose static dims every layout
  /// on the way must divide; null, its dims are taken as dynamic.
  FailureOr<ArrayRef<ReshardStep>> getPlan(MeshOp mesh, ShardingAttr from,
                                           ShardingAttr target, unsigned rank,
                                           Operation *where, const Twine &what,
                                           RankedTensorType global = {});
  /// getPlan without a diagnostic: the reason goes to `whyNot`.
  FailureOr<ArrayRef<ReshardStep>> findPlan(MeshOp mesh, ShardingAttr from,
                                            ShardingAttr target, unsigned rank,
                                            RankedTensorType global,
                                            std::string &whyNot);
  static Value shiftToHalos(OpBuilder &b, Location loc, MeshOp mesh, Value v,
                            ShardingAttr from, ShardingAttr target);
  FailureOr<Value> reshardHalos(Value v, ShardingAttr from, ShardingAttr target,
                                MeshOp mesh, Operation *where,
                                const Twine &what);
  FailureOr<Value> fillHalos(OpBuilder &b, Operation *op, Value local,
                             ShardingAttr s, MeshOp mesh);

  // Ops, by role.
  LogicalResult partitionBlock(Block &block);
  LogicalResult partition(Operation *op);
  LogicalResult partitionShard(ShardOp shard);
  LogicalResult partitionCall(CallOpInterface call);
  LogicalResult partitionReturn(Operation *ret);
  LogicalResult partitionRegionBranch(RegionBranchOpInterface op,
                                      ArrayRef<TiedGroup> groups);
  LogicalResult placeResults(Operation *op);
  LogicalResult partitionRuleOp(Operation *op);
  LogicalResult replicateRegions(Operation *op);

  // The steps of partitionRuleOp.
  const ShardingRule *ruleOf(Operation *op);
  FactorAssignment assignFactors(Operation *op, const ShardingRule &rule);
  std::optional<LinearPartial>
  getLinearPartial(Operation *op, const ShardingRule &rule,
                   const FactorAssignment &assignment);
  LogicalResult reshardOperands(Operation *op, const ShardingRule *rule,
                                const FactorAssignment *assignment,
                                const LinearPartial *linear);
  LogicalResult typeResults(Operation *op, const ShardingRule *rule,
                            const FactorAssignment *assignment,
                            const LinearPartial *linear);
  void updateSizes(Operation *op, TypeRange globalResultTypes,
                   const ShardingRule &rule,
                   const FactorAssignment &assignment);
  void localizeLoopIndices(linalg::LinalgOp op,
                           const FactorAssignment &assignment);
  static Value groupSize(OpBuilder &b, Location loc, MeshOp mesh,
                         ArrayRef<StringRef> axes);
  static Value groupIndex(OpBuilder &b, Location loc, MeshOp mesh,
                          ArrayRef<StringRef> axes);

  FunctionOpInterface fn;
  SymbolTableCollection &tables;
  const DenseMap<Operation *, Signature> &signatures;
  StringAttr shardingName;
  DictionaryAttr noAttrs;
  /// Drops `op`'s sharding annotation; most ops carry nothing else beside
  /// their properties, and then no new dictionary is built.
  void dropSharding(Operation *op) {
    DictionaryAttr attrs = op->getRawDictionaryAttrs();
    if (attrs.size() == 1 && attrs.begin()->getName() == shardingName)
      op->setDiscardableAttrs(noAttrs);
    else
      op->removeDiscardableAttr(shardingName);
  }
  /// The sharding of each per-device value (absent or null: replicated).
  DenseMap<Value, ShardingAttr, ValueAddressInfo> placed;
  ShardingRuleTable rules;
  /// Each op with a rule role, in pre-order, with its rule, and a cursor:
  /// partitioning reaches the ops in that order.
  SmallVector<RuleOf> rulesInOrder;
  size_t ruleCursor = 0;
  /// The tied values of each region-branch op, read before types change.
  DenseMap<Operation *, SmallVector<TiedGroup>> tiedGroups;
  ShardingProjector projector;
  OpClassifier classifier;
  MeshCache meshCache{tables};
  /// (source, target, mesh, rank, global type) -> the plan between them.
  using PlanKey = std::tuple<Attribute, Attribute, Operation *, unsigned, Type>;
  DenseMap<PlanKey, SmallVector<ReshardStep>> plans;
  DenseMap<std::pair<Type, Attribute>, RankedTensorType> localTypes;
  /// The global types of the values remake can make again.
  DenseMap<Value, RankedTensorType> globalTypes;
  /// The static global types of values a `?` axis made dynamic.
  DenseMap<Value, RankedTensorType> staticGlobals;
  /// (value, target sharding) -> the value resharded there.
  DenseMap<std::pair<Value, Attribute>, Value> reshardCache;
  /// Each value -> the values plans resharded it to, in order.
  DenseMap<Value, SmallVector<Value, 2>> reshardsOf;
};

} // namespace partition_detail
} // namespace mesh
} // namespace mlir

#endif // MESH_LIB_DIALECT_MESH_TRANSFORMS_PARTITIONER_H
