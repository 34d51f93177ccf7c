//===- Debug.cpp - MESHRT_DEBUG levels and the start-up line --------------===//
//
// See Debug.h.
//
//===----------------------------------------------------------------------===//

#include "Debug.h"
#include "Abort.h"

#include "meshrt/Error.h"

#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>

using namespace meshrt;
using namespace meshrt::detail;

DebugLevel meshrt::detail::debugLevel() {
  const char *Name = "MESHRT_DEBUG";
  const char *E = std::getenv(Name);
  if (!E || !*E) {
    Name = "TORCH_DISTRIBUTED_DEBUG";
    E = std::getenv(Name);
  }
  if (!E || !*E || !strcasecmp(E, "WARN") || !strcasecmp(E, "OFF"))
    return DebugLevel::Warn;
  if (!strcasecmp(E, "INFO"))
    return DebugLevel::Info;
  if (!strcasecmp(E, "DETAIL"))
    return DebugLevel::Detail;
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
              std::string(Name) + "='" + E +
                  "' is not one of WARN (or OFF), INFO, DETAIL");
}

void meshrt::detail::debugWrite(const std::string &Line, long long Rank) {
  const char *F = std::getenv("MESHRT_DEBUG_FILE");
  if (F && *F) {
    std::string Path;
    for (const char *C = F; *C; ++C) {
      if (*C != '%' || !C[1]) {
        Path += *C;
        continue;
      }
      ++C;
      if (*C == 'h') {
        char Host[256] = {};
        gethostname(Host, sizeof(Host) - 1);
        Path += Host;
      } else if (*C == 'p') {
        Path += std::to_string(getpid());
      } else if (*C == 'r') {
        Path += std::to_string(Rank);
      } else {
        Path += '%';
        Path += *C;
      }
    }
    int Fd =
        ::open(Path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (Fd >= 0) {
      std::string S = Line + "\n";
      ssize_t N = ::write(Fd, S.data(), S.size());
      (void)N;
      ::close(Fd);
      return;
    }
    writeStderr("meshrt: warning: cannot open MESHRT_DEBUG_FILE '" + Path +
                "'; writing to stderr\n");
  }
  writeStderr(Line + "\n");
}
