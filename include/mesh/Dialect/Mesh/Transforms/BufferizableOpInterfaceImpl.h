//===- BufferizableOpInterfaceImpl.h - bufferizing collectives --*- C++ -*-===//
//
// One-shot bufferization of the tensor collectives: each becomes the memref
// form of the same op, which reads its input buffer and allocates its result.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_DIALECT_MESH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define MESH_DIALECT_MESH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace mesh {
/// Attaches the BufferizableOpInterface to every mesh collective.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace mesh
} // namespace mlir

#endif // MESH_DIALECT_MESH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
