//===- HostBuffers.h - buffers only host code touches -----------*- C++ -*-===//
//
// On the GPU path every buffer moves to device memory, except the ones
// mesh-gpu-host-buffers marks: buffers that no kernel, copy or runtime call
// ever sees, such as the pointer lists the ownership-based deallocation
// builds for its helper. They stay in host memory, and host code reads and
// writes them directly.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_CONVERSION_HOSTBUFFERS_H
#define MESH_CONVERSION_HOSTBUFFERS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace mlir {
namespace mesh {

/// True when `buffer` is (a view of) a buffer marked host-only
/// (MeshDialect::getHostBufferAttrName()).
bool isHostBuffer(Value buffer);

/// True when `op`, with what it nests, could move into a one-thread kernel
/// (mesh-gpu-serial-kernels): no results, not a terminator, and no GPU op,
/// call, allocation, free or copy inside. It does when it also touches a
/// buffer that moves to the device.
bool canRunAsSerialKernel(Operation *op);

} // namespace mesh
} // namespace mlir

#endif // MESH_CONVERSION_HOSTBUFFERS_H
