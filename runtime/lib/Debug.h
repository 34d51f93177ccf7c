//===- Debug.h - MESHRT_DEBUG levels and the start-up line ------*- C++ -*-===//
//
// MESHRT_DEBUG=WARN (default) | INFO | DETAIL, like torch's
// TORCH_DISTRIBUTED_DEBUG (OFF | INFO | DETAIL), which is read when
// MESHRT_DEBUG is unset. INFO prints one line per rank when a context
// starts (version, rank, size, local rank, launcher, init method, store,
// backend and its version, device, timeout); DETAIL adds a line per
// communicator made, with its members, and turns on the collective check
// (MESHRT_CHECK_COLLECTIVES). The lines go to stderr, or to
// MESHRT_DEBUG_FILE, in which %h is the host name, %p the process id and %r
// the world rank (appended to).
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_DEBUG_H
#define MESHRT_LIB_DEBUG_H

#include <string>

namespace meshrt {
namespace detail {

enum class DebugLevel { Warn = 0, Info = 1, Detail = 2 };

/// The level from MESHRT_DEBUG (else TORCH_DISTRIBUTED_DEBUG). Throws
/// meshrt::Error naming the variable for a value that is none of them.
DebugLevel debugLevel();

/// Writes `Line` (a newline is added) where the debug output goes, as world
/// rank `Rank`. Never throws: a file that cannot be opened falls back to
/// stderr with a warning.
void debugWrite(const std::string &Line, long long Rank);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_DEBUG_H
