//===- Linearity.h - ops linear in some of their operands -------*- C++ -*-===//
//
// Private to the partitioner: which elementwise ops may run on partial sums.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_DIALECT_MESH_TRANSFORMS_LINEARITY_H
#define MESH_LIB_DIALECT_MESH_TRANSFORMS_LINEARITY_H

#include "mesh/Dialect/Mesh/IR/MeshOps.h"
#include "mesh/Dialect/Mesh/IR/ShardingRule.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir {
namespace mesh {

/// True when the one result of `op` is linear in the operands `linear`
/// marks, the others held fixed: f(x + y, c) = f(x, c) + f(y, c) for each
/// marked operand taken as x + y (the marked operands all split the same
/// way). Then `op` may run on the partial values of a pending `sum`
/// reduction over its marked operands, and its result is a partial value of
/// that reduction: sum_i (p_i - q_i) = P - Q, sum_i (p_i * c) = P * c.
///
/// `op` is an elementwise op on tensors (the Elementwise trait, no regions)
/// or a linalg op whose loops are all parallel, whose body reads neither its
/// indices nor its init, and whose operands are read through projections.
/// Linear are: add and sub of two linear values, neg of one, mul of a linear
/// value by a fixed one, a float div of a linear value by a fixed one, a
/// select between two linear values by a fixed condition; fixed are
/// constants, values defined outside a body, and any op of fixed values. The
/// sum of a linear and a fixed value is not linear (every partial value
/// would add the fixed one). Integer division is never linear (it rounds).
/// A `tensor.insert_slice` is linear in its source and destination
/// together, and in its source alone when the destination is zeros (a flat
/// gradient assembled from the pieces' pending sums).
bool isLinearIn(Operation *op, ArrayRef<bool> linear);

/// Whether `op` is a `tensor.insert_slice` into zeros (a zero constant or a
/// fill of zero).
bool isInsertIntoZeros(Operation *op);

/// How an op linear in its partial operands runs on them: its result is
/// then a pending sum too, reduced once instead of once per operand.
struct LinearPartial {
  /// The axes of the pending sum.
  AxisListAttr axes;
  /// Each operand: true when it is taken partial.
  SmallVector<bool> partial;
  /// The op's factors, less those axes (a value cannot be split over an
  /// axis it is pending over).
  SmallVector<AxisListAttr> factors;
};

/// The LinearPartial of `op` (whose rule is `rule`, its factors `factors`
/// on `mesh`), when its tensor operands that are partial (`placed` gives
/// each value's sharding) are pending sums over the same axes of `mesh`,
/// each used by `op` alone (a value also needed whole elsewhere is reduced
/// anyway, and reducing the result too would cost one reduction more), one
/// of them as large as the result (`asLargeAsResult`: reducing a broadcast
/// result would move more than its operands), no value of `op` has a halo,
/// and `op` is linear in them.
std::optional<LinearPartial>
findLinearPartial(Operation *op, const ShardingRule &rule,
                  ArrayRef<AxisListAttr> factors, FlatSymbolRefAttr mesh,
                  function_ref<ShardingAttr(Value)> placed,
                  function_ref<bool(Value)> asLargeAsResult);

} // namespace mesh
} // namespace mlir

#endif // MESH_LIB_DIALECT_MESH_TRANSFORMS_LINEARITY_H
