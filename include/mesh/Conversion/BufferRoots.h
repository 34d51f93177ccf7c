//===- BufferRoots.h - what a buffer is a view of ---------------*- C++ -*-===//
//
// The questions the buffer rewrites ask about aliasing: which buffer a view
// chain starts from, and whether that buffer is one the function allocates
// (nothing made before its allocation can alias it).
//
//===----------------------------------------------------------------------===//

#ifndef MESH_CONVERSION_BUFFERROOTS_H
#define MESH_CONVERSION_BUFFERROOTS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace mesh {

/// The buffer a chain of views (subview, cast, reshape, ...) starts from.
inline Value getViewRoot(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewLikeOpInterface>())
    buffer = view.getViewSource();
  return buffer;
}

/// Whether `buffer` is a memref.alloc or memref.alloca of the function.
inline bool isAllocation(Value buffer) {
  return buffer.getDefiningOp<memref::AllocOp>() ||
         buffer.getDefiningOp<memref::AllocaOp>();
}

} // namespace mesh
} // namespace mlir

#endif // MESH_CONVERSION_BUFFERROOTS_H
