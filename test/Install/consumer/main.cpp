// Host code calling a compiled mesh kernel: each rank passes its world rank,
// the kernel sums over the "shard" groups {0..3} and {4..7}.
#include "meshrt/meshrt.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct Desc1 {
  float *allocated, *aligned;
  int64_t offset, size, stride;
};
extern "C" void _mlir_ciface_sum_over_shard(Desc1 *out, Desc1 *in);
extern "C" void mesh_module_init();
extern "C" void mesh_module_fini();

int main() {
  mesh_module_init();
  int64_t rank = 0;
  meshrt_world_rank(&rank);
  float data[4] = {float(rank), float(rank), float(rank), float(rank)};
  Desc1 in{data, data, 0, 4, 1}, out{};
  _mlir_ciface_sum_over_shard(&out, &in);
  float want = rank < 4 ? 0 + 1 + 2 + 3 : 4 + 5 + 6 + 7;
  int bad = 0;
  for (int i = 0; i < 4; ++i)
    bad += out.aligned[i] != want;
  std::printf("rank %lld: sum over shard = %g (expected %g)\n", (long long)rank,
              out.aligned[0], want);
  std::free(out.allocated);
  mesh_module_fini();
  return bad ? 1 : 0;
}
