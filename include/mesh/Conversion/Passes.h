//===- Passes.h - conversions out of the mesh dialect -----------*- C++ -*-===//
//
// Declarations and registration of the passes in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_CONVERSION_PASSES_H
#define MESH_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mesh {

#define GEN_PASS_DECL
#include "mesh/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mesh/Conversion/Passes.h.inc"

} // namespace mesh
} // namespace mlir

#endif // MESH_CONVERSION_PASSES_H
