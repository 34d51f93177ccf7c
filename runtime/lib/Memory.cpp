//===- Memory.cpp - Large buffers stay mapped between steps ---------------===//
//
// Compiled code allocates its buffers with malloc and frees them when they
// die, so a step of a loop allocates and frees the same sizes again and
// again. glibc serves a block of 32 MiB or more with mmap and gives it back
// with munmap when it is freed, so every step of a Jacobi on a 4096² grid
// faulted in two fresh 64 MiB buffers, page by page: more than half of the
// step's time was the kernel zeroing pages.
//
// When libmeshrt is loaded, it raises glibc's mmap threshold and trim
// threshold to 1 GiB (mallopt), so large blocks come from the heap and a
// freed block stays there for the next step's malloc of the same size: the
// pages are faulted in once, in the first step. MESHRT_MALLOC_CACHE=0 keeps
// glibc's defaults (for a host program that wants memory returned to the
// system at once). The price is that up to 1 GiB freed by the program is
// kept by the process instead of returned, as PyTorch's caching allocators
// keep theirs.
//
//===----------------------------------------------------------------------===//

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

__attribute__((constructor)) void keepLargeBuffersMapped() {
#if defined(__GLIBC__)
  const char *E = std::getenv("MESHRT_MALLOC_CACHE");
  if (E && !std::strcmp(E, "0"))
    return;
  const int kThreshold = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kThreshold);
  mallopt(M_TRIM_THRESHOLD, kThreshold);
#endif
}

} // namespace
