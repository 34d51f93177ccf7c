//===- loop_buffers_driver.cpp - allocations per loop iteration -----------===//
//
// Runs the loops of loop_buffers.mlir (compiled by mesh-compile -c) under
// `mpirun -n 2` and counts the allocations the process makes on this thread
// while each runs: malloc, calloc, realloc, aligned_alloc, posix_memalign
// and memalign are replaced here (the executable's definitions come first
// for every library, libc's own are called through): the compiled code's
// buffers, the runtime's and MPI's. After a warm-up call of 9 steps (the
// BLAS is loaded, MPI connects the halo's peers and grows its fragment
// pools once), a call of 9 steps must allocate exactly what a call of 1
// step does: nothing per iteration.
// The results are checked against this file's own computation of the same
// steps, exactly (the data are small integers, every value a multiple of
// 4^-9 well inside f32's precision).
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mpi.h>

extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
}

namespace {
thread_local bool counting = false;
thread_local long allocations = 0;
inline void count() {
  if (counting)
    ++allocations;
}
} // namespace

extern "C" {
void *malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void *calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t size) {
  count();
  return __libc_realloc(p, size);
}
void *memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void *aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void **out, size_t alignment, size_t size) {
  count();
  void *p = __libc_memalign(alignment, size);
  if (!p)
    return 12; // ENOMEM
  *out = p;
  return 0;
}
}

namespace {

/// A 2-D memref descriptor as MLIR's C interface passes it.
struct Desc2 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

Desc2 view(std::vector<float> &data, int64_t rows, int64_t cols) {
  return {data.data(), data.data(), 0, {rows, cols}, {cols, 1}};
}

} // namespace

extern "C" {
void mesh_module_init();
void mesh_module_fini();
void _mlir_ciface_jacobi(Desc2 *result, Desc2 *u0, Desc2 *f, int64_t steps);
void _mlir_ciface_mlp(Desc2 *result, Desc2 *x0, Desc2 *w, int64_t steps);
}

namespace {

int rank = 0;
int failures = 0;

/// Calls `run(steps)` counting its allocations on this thread.
template <typename Run> long countedCall(Run run, int64_t steps) {
  allocations = 0;
  counting = true;
  run(steps);
  counting = false;
  return allocations;
}

/// Checks the result of `steps` steps, frees it, and returns nothing.
void expectEqual(const char *name, int64_t steps, const Desc2 &got,
                 const std::vector<float> &want) {
  int bad = 0;
  int64_t cols = got.sizes[1];
  for (int64_t i = 0; i < got.sizes[0]; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float g =
          got.aligned[got.offset + i * got.strides[0] + j * got.strides[1]];
      float w = want[i * cols + j];
      if (g != w && bad++ < 3)
        std::printf(
            "rank %d: %s, %lld steps: [%lld, %lld] is %.9g, expected %.9g\n",
            rank, name, (long long)steps, (long long)i, (long long)j, g, w);
    }
  if (bad)
    ++failures;
  std::free(got.allocated);
}

/// Runs the loop `run(steps)` (which returns its result) after a warm-up at
/// the longer run (the BLAS is loaded, MPI connects the peers and grows its
/// fragment pools to what the traffic needs), then for 1 and for 9 steps:
/// each result must be `reference(steps)`, and both calls must allocate
/// the same.
template <typename Run, typename Reference>
void checkLoop(const char *name, Run run, Reference reference) {
  Desc2 result;
  auto call = [&](int64_t steps) { result = run(steps); };
  long counts[2];
  for (int k = 0; k < 3; ++k) {
    int64_t steps = k == 1 ? 1 : 9;
    long count = countedCall(call, steps);
    if (k)
      counts[k - 1] = count;
    expectEqual(name, steps, result, reference(steps));
  }
  bool same = counts[0] == counts[1];
  std::printf("rank %d: %s: %ld allocations in a call of 1 step, %ld in a "
              "call of 9 steps: %s\n",
              rank, name, counts[0], counts[1],
              same ? "none per step" : "FAIL");
  if (!same)
    ++failures;
}

// The data of both loops, by global position: small integers.
float jacobiU0(int i, int j) { return float((i * j) % 4); }
float jacobiF(int i, int j) { return float((i + 2 * j) % 3); }
float mlpX0(int i, int j) { return float((i + j) % 3); }
float mlpW(int i, int j) { return float((i * 3 + j + i / 2) % 3 - 1); }

/// `rows` x `cols` values of `at` from global row `row0`.
template <typename At>
std::vector<float> fill(int row0, int rows, int cols, At at) {
  std::vector<float> v(rows * cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      v[i * cols + j] = at(row0 + i, j);
  return v;
}

/// The Jacobi of loop_buffers.mlir on the whole 16 x 8 grid; this rank's
/// rows are [8 rank, 8 rank + 8).
std::vector<float> jacobiReference(int64_t steps) {
  const int R = 16, C = 8;
  std::vector<float> u = fill(0, R, C, jacobiU0), f = fill(0, R, C, jacobiF);
  auto at = [&](int i, int j) {
    return i < 0 || i >= R || j < 0 || j >= C ? 0.0f : u[i * C + j];
  };
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<float> next(R * C);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        float ns = at(i - 1, j) + at(i + 1, j);
        float we = at(i, j - 1) + at(i, j + 1);
        next[i * C + j] = (ns + we) * 0.25f + f[i * C + j];
      }
    u = next;
  }
  return std::vector<float>(u.begin() + rank * 8 * C,
                            u.begin() + (rank + 1) * 8 * C);
}

/// The clamped layers of loop_buffers.mlir on the 8 x 8 batch (every rank
/// computes all of it).
std::vector<float> mlpReference(int64_t steps) {
  const int N = 8;
  std::vector<float> x = fill(0, N, N, mlpX0), w = fill(0, N, N, mlpW);
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<float> next(N * N);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        float sum = 0;
        for (int k = 0; k < N; ++k)
          sum += x[i * N + k] * w[k * N + j];
        next[i * N + j] = std::min(std::max(sum, 0.0f), 7.0f);
      }
    x = next;
  }
  return x;
}

} // namespace

int main() {
  mesh_module_init();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  // Jacobi: this rank's 8 x 8 block of u0 and f.
  std::vector<float> u0 = fill(rank * 8, 8, 8, jacobiU0),
                     f = fill(rank * 8, 8, 8, jacobiF);
  checkLoop(
      "jacobi (halo exchange, pad, stencil)",
      [&](int64_t steps) {
        Desc2 result, u = view(u0, 8, 8), fd = view(f, 8, 8);
        _mlir_ciface_jacobi(&result, &u, &fd, steps);
        return result;
      },
      jacobiReference);

  // The layers: x0 and w whole on every rank.
  std::vector<float> x0 = fill(0, 8, 8, mlpX0), w = fill(0, 8, 8, mlpW);
  checkLoop(
      "mlp (product, clamp)",
      [&](int64_t steps) {
        Desc2 result, x = view(x0, 8, 8), wd = view(w, 8, 8);
        _mlir_ciface_mlp(&result, &x, &wd, steps);
        return result;
      },
      mlpReference);

  mesh_module_fini();
  if (failures)
    std::printf("rank %d: %d failures\n", rank, failures);
  return failures ? 1 : 0;
}
