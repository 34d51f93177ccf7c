//===- Trace.cpp - The collective trace (MESHRT_TRACE) --------------------===//
//
// One file per process, opened when the first context starts and kept until
// exit (a later context of the same process appends to it), written a line
// at a time under a lock.
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include "meshrt/Error.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace meshrt;
using namespace meshrt::detail;

CollectiveTrace *CollectiveTrace::open(int64_t WorldRank) {
  static std::mutex Mutex;
  static bool Read = false;
  static CollectiveTrace *Trace = nullptr; // Leaked: written until exit.
  std::lock_guard<std::mutex> Lock(Mutex);
  if (Read)
    return Trace;
  Read = true;
  const char *E = std::getenv("MESHRT_TRACE");
  if (!E || !*E)
    return nullptr;
  std::string Path = E;
  std::string Rank = std::to_string(WorldRank);
  size_t At = Path.find("%r");
  if (At == std::string::npos)
    Path += "." + Rank;
  else
    Path.replace(At, 2, Rank);
  std::FILE *F = std::fopen(Path.c_str(), "w");
  if (!F)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "MESHRT_TRACE: cannot create '" + Path +
                    "': " + std::strerror(errno));
  Trace = new CollectiveTrace(F);
  return Trace;
}

void CollectiveTrace::write(const std::string &Line) {
  std::lock_guard<std::mutex> Lock(Mutex);
  std::fwrite(Line.data(), 1, Line.size(), File);
  std::fputc('\n', File);
  std::fflush(File);
}
