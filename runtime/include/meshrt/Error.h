//===- meshrt/Error.h - Exceptions of the C++ API ---------------*- C++ -*-===//
//
// The C++ API (DeviceMesh.h) and the pure rank math (MeshLayout.h) report
// errors by throwing meshrt::Error, which carries the same status code the C
// ABI returns. The C ABI catches these at its boundary.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_ERROR_H
#define MESHRT_ERROR_H

#include "meshrt/meshrt.h"

#include <stdexcept>
#include <string>

namespace meshrt {

/// An error of the runtime: a status code of the C ABI and a message that
/// names what failed and where.
class MESHRT_API Error : public std::runtime_error {
public:
  /// Creates an error with status `status` and message `message`.
  Error(meshrt_status status, const std::string &message)
      : std::runtime_error(message), Status(status) {}

  /// The C ABI status code of this error.
  meshrt_status status() const { return Status; }

private:
  meshrt_status Status;
};

} // namespace meshrt

#endif // MESHRT_ERROR_H
