//===- Trace.h - The collective trace (MESHRT_TRACE) ------------*- C++ -*-===//
//
// With MESHRT_TRACE=FILE every collective a communicator handle runs is
// appended to FILE as one line, whichever backend runs it and whether it was
// called blocking or stream-ordered: its kind, dtype, count, reduction, root
// or permute offset, and the group's members (world ranks in group order).
// Tests compare the traces of two builds of one program (host and CUDA)
// rank by rank: they must be identical. The variable is read once, when the
// first context starts; without it the collectives pay one null test.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_TRACE_H
#define MESHRT_LIB_TRACE_H

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace meshrt {
namespace detail {

/// The process's collective trace file.
class CollectiveTrace {
public:
  /// The trace named by MESHRT_TRACE (opened on the first call, for world
  /// rank `WorldRank`: "%r" in the name is replaced by it, and a name without
  /// "%r" gets ".<rank>" appended), or null when the variable is unset or
  /// empty. Throws meshrt::Error when the file cannot be created.
  static CollectiveTrace *open(int64_t WorldRank);

  /// Appends `Line` and a newline, and flushes (the program may abort next).
  void write(const std::string &Line);

private:
  explicit CollectiveTrace(std::FILE *F) : File(F) {}
  std::mutex Mutex;
  std::FILE *File;
};

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_TRACE_H
