//===- InitMesh.h - what mesh-opt and friends register ----------*- C++ -*-===//
//
// One place that lists the dialects, extensions and passes the tools register:
// ours plus the upstream ones a user's pipeline from tensors to LLVM needs.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_INITMESH_H
#define MESH_INITMESH_H

namespace mlir {
class DialectRegistry;

namespace mesh {

/// Adds the mesh dialect, the upstream dialects a sharded program uses (func,
/// arith, math, tensor, linalg, memref, scf, cf, affine, index, ub,
/// bufferization, LLVM) and the interface extensions bufferization and the
/// LLVM lowering need.
void registerMeshToolDialects(DialectRegistry &registry);

/// Registers the mesh passes and the upstream passes of a tensor-to-LLVM
/// pipeline (canonicalize, cse, inliner, symbol-dce, one-shot bufferization,
/// linalg to loops, and the standard conversions to the LLVM dialect).
void registerMeshToolPasses();

/// Makes `--version` print "<toolName> (mesh MAJOR.MINOR.PATCH)", the runtime
/// version compiled code needs, then LLVM's version message. Call before the
/// command line is parsed.
void registerMeshVersionPrinter(const char *toolName);

} // namespace mesh
} // namespace mlir

#endif // MESH_INITMESH_H
