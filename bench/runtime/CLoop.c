/*===- CLoop.c - meshrt_all_reduce in a C loop, for the Python benchmark --===*\
|*                                                                            *|
|* bench/runtime/python_call_cost.py loads this with ctypes and times the     *|
|* same call from Python: the difference is the Python package's cost.        *|
\*===----------------------------------------------------------------------===*/

#include "meshrt/meshrt.h"

#include <time.h>

/// Seconds that `iters` calls of meshrt_all_reduce (in place) took; -1 on
/// an error (meshrt_last_error says which).
double meshrt_bench_all_reduce_loop(meshrt_comm_t comm, void *buf,
                                    int64_t count, int32_t dtype, int32_t op,
                                    int64_t iters) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int64_t i = 0; i < iters; ++i)
    if (meshrt_all_reduce(comm, buf, buf, count, (meshrt_dtype)dtype,
                          (meshrt_reduce_op)op) != MESHRT_SUCCESS)
      return -1.0;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}
