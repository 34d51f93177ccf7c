//===- MeshDialect.h - the mesh dialect -------------------------*- C++ -*-===//
//
// Declares the mesh dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_IR_MESHDIALECT_H
#define MESH_DIALECT_MESH_IR_MESHDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "mesh/Dialect/Mesh/IR/MeshOpsDialect.h.inc"

#endif // MESH_DIALECT_MESH_IR_MESHDIALECT_H
