//===- Resharding.h - moving a tensor between shardings ---------*- C++ -*-===//
//
// A resharding plan takes a tensor from one sharding to another on the same
// mesh as a short list of collectives: pending reductions are finished
// (all_reduce, or reduce_scatter onto a dim), axes move between dims with
// all_to_all, axes leave a dim with all_gather and join one with all_slice.
// The planner returns a plan that moves the fewest bytes per device.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_RESHARDING_H
#define MESH_DIALECT_MESH_TRANSFORMS_RESHARDING_H

#include "mesh/Dialect/Mesh/IR/MeshOps.h"

#include <string>

namespace mlir {
namespace mesh {

/// One collective of a resharding plan.
struct ReshardStep {
  enum class Kind { AllReduce, ReduceScatter, AllGather, AllSlice, AllToAll };
  Kind kind;
  /// The group's axes, in group order.
  SmallVector<std::string> axes;
  /// gather_dim, slice_dim, scatter_dim, or all_to_all's split_dim.
  int64_t dim = -1;
  /// all_to_all's concat_dim.
  int64_t concatDim = -1;
  /// For AllReduce and ReduceScatter.
  ReductionKind reduction = ReductionKind::Sum;
};

/// The axes of a sharding, as plain strings (dims then partial), and its
/// halo widths (flattened lo, hi pairs; empty: none). Plans move layouts
/// without halos; the partitioner removes and adds halos around them.
struct ShardingLayout {
  SmallVector<SmallVector<std::string>> dims;
  SmallVector<std::string> partial;
  ReductionKind partialKind = ReductionKind::Sum;
  SmallVector<int64_t> halo;

  static ShardingLayout get(ShardingAttr sharding);
  /// The replicated layout of a rank-`rank` tensor.
  static ShardingLayout replicated(unsigned rank);
  ShardingAttr toAttr(FlatSymbolRefAttr mesh) const;
};

/// Shardings as uniqued attributes are what the passes pass around: equal
/// layouts are then equal pointers. A null ShardingAttr stands for
/// "replicated, on no mesh in particular".

/// True when `a` and `b` lay a tensor out alike (meshes aside): the same axes
/// on each dim, the same pending reduction, and halos of the same total
/// width on each dim (how it splits into lo and hi does not change which
/// elements a device holds). Null is replicated.
bool sameLayout(ShardingAttr a, ShardingAttr b);

/// `s` without its pending reduction.
ShardingAttr withoutPartial(ShardingAttr s);

/// `s` without its halos.
ShardingAttr withoutHalo(ShardingAttr s);

/// The layout of `s`, or the replicated layout of rank `rank` when null.
ShardingLayout layoutOf(ShardingAttr s, unsigned rank);

/// The bytes one element of `element` takes in memory and on the wire:
/// whole bytes (an i1 takes one), an index 8, a complex number twice its
/// part; 1 for any other type.
int64_t getElementBytes(Type element);

/// The bytes each device sends for one step of `kind` on a per-device input
/// of `inputBytes` bytes in a group of `groupSize` devices, under the usual
/// bandwidth-optimal (ring) algorithms: all_reduce 2(g-1)/g B, reduce_scatter
/// and all_to_all (g-1)/g B, all_gather (g-1) B, all_slice 0. The planner
/// prices its steps with it and `--mesh-report-communication` its
/// collectives, so the two agree.
int64_t getStepBytesPerDevice(ReshardStep::Kind kind, int64_t inputBytes,
                              int64_t groupSize);

/// The bytes each device sends running `steps` (getStepBytesPerDevice of
/// each step, on the block it starts from) on a tensor of `tensorBytes`
/// bytes laid out as `src`; `axisSize` gives the size of each axis, all
/// known.
int64_t getPlanBytes(const ShardingLayout &src, ArrayRef<ReshardStep> steps,
                     int64_t tensorBytes,
                     function_ref<int64_t(StringRef)> axisSize);

/// Plans the collectives that take a tensor of global dim sizes `shape`
/// (ShapedType::kDynamic where unknown) from `src` to `dst`, with the fewest
/// bytes sent per device (getStepBytesPerDevice), then the fewest steps.
/// `axisSize` gives the size of each axis the layouts name (kDynamic for
/// `?`). Every layout the plan passes through divides `shape`; where a size
/// is unknown, a dim only takes axes that its source or its target splits it
/// over. Fails, with a reason in `whyNot`, when the ranks differ or the
/// target adds a pending reduction that the source does not have.
FailureOr<SmallVector<ReshardStep>>
planResharding(const ShardingLayout &src, const ShardingLayout &dst,
               ArrayRef<int64_t> shape,
               function_ref<int64_t(StringRef)> axisSize, std::string &whyNot);

/// The per-device type of a tensor of global type `global` laid out as
/// `layout`. Fails, with a reason in `whyNot`, when a static dim (less its
/// halo) does not divide by the product of its axes' sizes, or a halo is
/// wider than a device's block.
FailureOr<RankedTensorType> getLocalType(MeshOp mesh, RankedTensorType global,
                                         const ShardingLayout &layout,
                                         std::string &whyNot);

/// Emits `steps` on `local`, a per-device value laid out as `from`; returns
/// the resharded per-device value. `dataSizes`, where given, are the sizes of
/// the global value's dims without their padding (a dim of 10 padded to 12
/// to split over 4 devices): a gather that makes such a dim whole, and a
/// reduce-scatter that splits a whole one, move only the data (`valid`).
Value emitResharding(OpBuilder &builder, Location loc, MeshOp mesh, Value local,
                     ArrayRef<ReshardStep> steps, ShardingAttr from = {},
                     ArrayRef<int64_t> dataSizes = {});

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_RESHARDING_H
