//===- Reductions.h - reductions the device passes recognise ----*- C++ -*-===//
//
// The loops mesh-gpu-row-reductions and mesh-gpu-full-reductions rewrite:
// an scf.for that loads an accumulator at a place that does not move,
// combines it with an element, and stores it back.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_CONVERSION_HOSTTODEVICE_REDUCTIONS_H
#define MESH_LIB_CONVERSION_HOSTTODEVICE_REDUCTIONS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

namespace mlir::mesh {

/// One scf.for that accumulates into a location that does not move with
/// its induction variable: load, combine, store back.
struct Reduction {
  scf::ForOp loop;
  memref::LoadOp accLoad;
  Operation *combiner;
  memref::StoreOp accStore;
  Value element; // the combiner's other operand
  gpu::AllReduceOperation kind;
};

/// The all_reduce kind of a combining op, if it is one.
std::optional<gpu::AllReduceOperation> reductionKind(Operation *op);

/// The neutral element of `kind` for `type` (null if it has none).
TypedAttr reductionIdentity(gpu::AllReduceOperation kind, Type type);

/// `v` is defined outside `op` (not in its region or below).
bool definedOutside(Value v, Operation *op);

/// The reduction `loop` performs, if it is one the device passes rewrite: a
/// body of region-free ops, one store (into the accumulator, at indices
/// defined outside `scope`, of a combining op of the loaded accumulator and
/// a value that does not depend on it) of an element type the warp
/// shuffles carry, and, with `alongRows`, loads whose last index is the
/// induction variable (or that do not use it), so that consecutive threads
/// read consecutive elements.
std::optional<Reduction> matchReduction(scf::ForOp loop, Operation *scope,
                                        bool alongRows);

/// `value` combined across the block by `kind` (gpu.all_reduce); values
/// narrower than 32 bits are combined as 32-bit values and brought back.
Value allReduceInBlock(OpBuilder &b, Location loc, Value value,
                       gpu::AllReduceOperation kind);

} // namespace mlir::mesh

#endif // MESH_LIB_CONVERSION_HOSTTODEVICE_REDUCTIONS_H
