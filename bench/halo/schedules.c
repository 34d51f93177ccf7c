// bench/halo/schedules.c: how fast one device's Jacobi steps could go under
// other schedules than the one the compiler emits (one sweep over the block
// per step). Not used by the compiler or the tests: it measures what a
// change to the step loop would be worth before anyone builds it
// (docs/performance.md, "Halo exchange", what is left).
//
// One 2048 x 1024 f32 block (a device's block of bench/halo's 4096^2 grid on
// (2, 4)), the source term f, and the 5-point update
//   next = ((n + s) + (w + e)) * 0.25 + f
// of bench/halo/gen.py. The halo ring is not exchanged (there is no
// neighbour): the schedules are compared on their memory traffic, not on
// their values.
//   plain    one sweep per step, into the other buffer (what we emit);
//   stream   the same with non-temporal stores (no read of the line written);
//   fused    two steps per sweep: step 1's row i, then step 2's row i - 1,
//            written back over the input block, step 1 kept in a second
//            full block (ring of depth 2, one exchange per two steps);
//   rolling  the same with step 1's rows in a rolling buffer of 3 rows.
// Usage: cc -O2 -march=x86-64-v3 schedules.c -o schedules
//        ./schedules plain|stream|fused|rolling STEPS
// Run 8 at once on 2 cores to match bench/halo's ranks.
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { R = 2048, C = 1024, W = C + 16 }; // rows padded for alignment

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// One row of the update over columns [j0, j1), rows given by pointers.
static void row(float *restrict o, const float *restrict n,
                const float *restrict c, const float *restrict s,
                const float *restrict f, int j0, int j1) {
  for (int j = j0; j < j1; ++j)
    o[j] = ((n[j] + s[j]) + (c[j - 1] + c[j + 1])) * 0.25f + f[j];
}

static void rowStream(float *o, const float *n, const float *c, const float *s,
                      const float *f) {
  const __m256 q = _mm256_set1_ps(0.25f);
  for (int j = 8; j < C + 8; j += 8) {
    __m256 v = _mm256_add_ps(
        _mm256_add_ps(_mm256_loadu_ps(n + j), _mm256_loadu_ps(s + j)),
        _mm256_add_ps(_mm256_loadu_ps(c + j - 1), _mm256_loadu_ps(c + j + 1)));
    _mm256_stream_ps(
        o + j, _mm256_add_ps(_mm256_mul_ps(v, q), _mm256_loadu_ps(f + j)));
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s plain|stream|fused|rolling STEPS\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  int steps = atoi(argv[2]) & ~1; // fused and rolling take two at a time
  size_t bytes = sizeof(float) * (R + 4) * W;
  float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
  float *f = aligned_alloc(64, bytes), *t = aligned_alloc(64, 3 * W * 4);
  for (size_t i = 0; i < bytes / 4; ++i) {
    a[i] = (i % 7) * 0.1f;
    b[i] = 0;
    f[i] = (i % 5) * 0.01f;
  }
  memset(t, 0, 3 * W * 4);
  // Rows 0..R+3: a ring of two rows and columns 6..7 / C+8..C+9 around
  // the block's rows 2..R+1 and columns 8..C+7.
#define AT(p, i) ((p) + (size_t)(i) * W)
  double t0 = now();
  if (!strcmp(mode, "plain") || !strcmp(mode, "stream")) {
    int nt = !strcmp(mode, "stream");
    for (int s = 0; s < steps; ++s) {
      for (int i = 2; i < R + 2; ++i) {
        if (nt)
          rowStream(AT(b, i), AT(a, i - 1), AT(a, i), AT(a, i + 1), AT(f, i));
        else
          row(AT(b, i), AT(a, i - 1), AT(a, i), AT(a, i + 1), AT(f, i), 8,
              C + 8);
      }
      float *x = a;
      a = b;
      b = x;
    }
  } else if (!strcmp(mode, "fused") || !strcmp(mode, "rolling")) {
    int roll = !strcmp(mode, "rolling");
    for (int s = 0; s < steps; s += 2)
      for (int i = 1; i < R + 3; ++i) {
        // Step 1 on row i over the block and its inner ring.
        float *mid = roll ? t + (size_t)(i % 3) * W : AT(b, i);
        row(mid, AT(a, i - 1), AT(a, i), AT(a, i + 1), AT(f, i), 7, C + 9);
        if (i < 3)
          continue;
        // Step 2 on row k = i - 1, written over the input (its rows above
        // k - 1 are no longer read).
        int k = i - 1;
        const float *up = roll ? t + (size_t)((k - 1) % 3) * W : AT(b, k - 1);
        const float *at = roll ? t + (size_t)(k % 3) * W : AT(b, k);
        const float *dn = roll ? t + (size_t)((k + 1) % 3) * W : AT(b, k + 1);
        row(AT(a, k), up, at, dn, AT(f, k), 8, C + 8);
      }
  } else {
    fprintf(stderr, "unknown schedule '%s'\n", mode);
    return 2;
  }
  double t1 = now();
  double sum = 0;
  for (int i = 2; i < R + 2; ++i)
    for (int j = 8; j < C + 8; ++j)
      sum += AT(a, i)[j];
  printf("%s %.3f ms/step (sum %g)\n", mode, (t1 - t0) * 1e3 / steps, sum);
  return 0;
}
