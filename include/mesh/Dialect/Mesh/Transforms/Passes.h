//===- Passes.h - transforms of the mesh dialect ----------------*- C++ -*-===//
//
// Declarations and registration of the passes in Transforms/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_PASSES_H
#define MESH_DIALECT_MESH_TRANSFORMS_PASSES_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mesh {

#define GEN_PASS_DECL
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mesh/Dialect/Mesh/Transforms/Passes.h.inc"

} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_PASSES_H
