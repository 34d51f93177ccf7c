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
                 const std::vector<float> &want, int64_t rows, int64_t cols) {
  int bad = 0;
  for (int64_t i = 0; i < rows; ++i)
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

void checkCounts(const char *name, long one, long nine) {
  std::printf("rank %d: %s: %ld allocations in a call of 1 step, %ld in a call "
              "of 9 steps: "
              "%s\n",
              rank, name, one, nine, one == nine ? "none per step" : "FAIL");
  if (one != nine)
    ++failures;
}

/// The Jacobi of loop_buffers.mlir on the whole 16 x 8 grid; this rank's
/// rows are [8 rank, 8 rank + 8).
std::vector<float> jacobiReference(int64_t steps) {
  const int R = 16, C = 8;
  std::vector<float> u(R * C), f(R * C);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      u[i * C + j] = float((i * j) % 4);
      f[i * C + j] = float((i + 2 * j) % 3);
    }
  auto at = [&](const std::vector<float> &g, int i, int j) {
    return i < 0 || i >= R || j < 0 || j >= C ? 0.0f : g[i * C + j];
  };
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<float> next(R * C);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        float ns = at(u, i - 1, j) + at(u, i + 1, j);
        float we = at(u, i, j - 1) + at(u, i, j + 1);
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
  std::vector<float> x(N * N), w(N * N);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      x[i * N + j] = float((i + j) % 3);
      w[i * N + j] = float((i * 3 + j + i / 2) % 3 - 1);
    }
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
  std::vector<float> u0(64), f(64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      int gi = rank * 8 + i;
      u0[i * 8 + j] = float((gi * j) % 4);
      f[i * 8 + j] = float((gi + 2 * j) % 3);
    }
  std::vector<std::vector<float>> jacobiWant = {jacobiReference(1),
                                                jacobiReference(9)};
  Desc2 jacobiResult;
  auto jacobi = [&](int64_t steps) {
    Desc2 u = view(u0, 8, 8), fd = view(f, 8, 8);
    _mlir_ciface_jacobi(&jacobiResult, &u, &fd, steps);
  };
  // Warm-up at the longer run: the BLAS is loaded, MPI connects the peers
  // and grows its fragment pools to what the halo traffic needs.
  countedCall(jacobi, 9);
  expectEqual("jacobi", 9, jacobiResult, jacobiWant[1], 8, 8);
  long one = countedCall(jacobi, 1);
  expectEqual("jacobi", 1, jacobiResult, jacobiWant[0], 8, 8);
  long nine = countedCall(jacobi, 9);
  expectEqual("jacobi", 9, jacobiResult, jacobiWant[1], 8, 8);
  checkCounts("jacobi (halo exchange, pad, stencil)", one, nine);

  // The layers: x0 and w whole on every rank.
  std::vector<float> x0(64), w(64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      x0[i * 8 + j] = float((i + j) % 3);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      w[i * 8 + j] = float((i * 3 + j + i / 2) % 3 - 1);
  std::vector<std::vector<float>> mlpWant = {mlpReference(1), mlpReference(9)};
  Desc2 mlpResult;
  auto mlp = [&](int64_t steps) {
    Desc2 x = view(x0, 8, 8), wd = view(w, 8, 8);
    _mlir_ciface_mlp(&mlpResult, &x, &wd, steps);
  };
  countedCall(mlp, 9);
  expectEqual("mlp", 9, mlpResult, mlpWant[1], 8, 8);
  one = countedCall(mlp, 1);
  expectEqual("mlp", 1, mlpResult, mlpWant[0], 8, 8);
  nine = countedCall(mlp, 9);
  expectEqual("mlp", 9, mlpResult, mlpWant[1], 8, 8);
  checkCounts("mlp (product, clamp)", one, nine);

  mesh_module_fini();
  if (failures)
    std::printf("rank %d: %d failures\n", rank, failures);
  return failures ? 1 : 0;
}
