//===- BlockSize.h - Checks of a GPU block's thread count -------*- C++ -*-===//
//
// The device passes that choose blocks of threads share one check of their
// threads-per-block option.
//
//===----------------------------------------------------------------------===//

#ifndef MESH_LIB_CONVERSION_HOSTTODEVICE_BLOCKSIZE_H
#define MESH_LIB_CONVERSION_HOSTTODEVICE_BLOCKSIZE_H

#include "mlir/IR/Operation.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::mesh {

/// The most threads a GPU block has.
constexpr int64_t kMaxThreadsPerBlock = 1024;

/// Succeeds when `threads` is a power of two from `min` to
/// kMaxThreadsPerBlock; otherwise emits on `op` an error that names `pass`
/// and the range.
inline LogicalResult verifyThreadsPerBlock(Operation *op, StringRef pass,
                                           int64_t threads, int64_t min) {
  if (threads >= min && threads <= kMaxThreadsPerBlock &&
      llvm::isPowerOf2_64(uint64_t(threads)))
    return success();
  return op->emitError() << pass
                         << ": threads-per-block must be a power of two from "
                         << min << " to " << kMaxThreadsPerBlock << ", not "
                         << threads;
}

} // namespace mlir::mesh

#endif // MESH_LIB_CONVERSION_HOSTTODEVICE_BLOCKSIZE_H
