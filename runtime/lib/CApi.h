//===- CApi.h - What the C ABI's translation units share --------*- C++ -*-===//
//
// Every meshrt_* function runs its body under guardedCall: exceptions become
// a status and a thread-local message (meshrt_last_error), and the error
// policy applies (return, or end the job with the message).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_CAPI_H
#define MESHRT_LIB_CAPI_H

#include "meshrt/Error.h"
#include "meshrt/meshrt.h"

#include <exception>
#include <new>

namespace meshrt {
namespace detail {

/// Records the failure of C ABI function `Fn` (status `S`, message `Msg`)
/// and applies the error policy: returns `S`, or ends the job.
meshrt_status reportCallFailure(const char *Fn, meshrt_status S,
                                const char *Msg);

/// Runs `Body`, mapping its exceptions to statuses for C ABI function `Fn`.
template <typename F> meshrt_status guardedCall(const char *Fn, F &&Body) {
  try {
    Body();
    return MESHRT_SUCCESS;
  } catch (const Error &E) {
    return reportCallFailure(Fn, E.status(), E.what());
  } catch (const std::bad_alloc &) {
    return reportCallFailure(Fn, MESHRT_ERROR_BACKEND, "out of memory");
  } catch (const std::exception &E) {
    return reportCallFailure(Fn, MESHRT_ERROR_BACKEND, E.what());
  }
}

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_CAPI_H
