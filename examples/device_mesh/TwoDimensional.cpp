//===- TwoDimensional.cpp - The tutorial's 2-D set-up in C++ --------------===//
//
// The DeviceMesh tutorial's hybrid-sharding set-up: 8 processes as a (2, 4)
// mesh named ("replicate", "shard"). Each rank reports its coordinate and the
// members of its "replicate" and "shard" groups; then the example sums the
// world ranks along "shard" to show a collective, and reports how many
// communicators the runtime made (one per dimension, not one per group).
//
//   mpirun -n 8 build/bin/mesh-example-2d [cpu|cuda|auto]
//
//===----------------------------------------------------------------------===//

#include "PrintInOrder.h"

#include "meshrt/DeviceMesh.h"

#include <cstdio>

using examples::list;

int main(int argc, char **argv) {
  std::string Device = argc > 1 ? argv[1] : "cpu";
  try {
    meshrt::DeviceMesh Mesh2D =
        meshrt::init_device_mesh(Device, {2, 4}, {"replicate", "shard"});
    meshrt::Group Replicate = Mesh2D.get_group("replicate");
    meshrt::Group Shard = Mesh2D.get_group("shard");
    if (Mesh2D.get_rank() == 0)
      std::printf("%s\n", Mesh2D.to_string().c_str());

    std::vector<int64_t> C = Mesh2D.get_coordinate();
    std::string Line = "rank " + std::to_string(Mesh2D.get_rank()) +
                       ": coordinate (replicate=" + std::to_string(C[0]) +
                       ", shard=" + std::to_string(C[1]) +
                       ")  replicate group " + list(Replicate.members()) +
                       "  shard group " + list(Shard.members());
    if (Device == "cpu") {
      // A collective along one dimension: the sum of the world ranks of my
      // shard group (0+1+2+3 = 6 or 4+5+6+7 = 22).
      std::vector<int64_t> Sum = {Mesh2D.get_rank()};
      Shard.all_reduce(Sum);
      Line += "  sum over shard " + std::to_string(Sum[0]);
    }
    examples::printInRankOrder(Mesh2D, Line);

    meshrt::Stats S = Mesh2D.stats();
    if (Mesh2D.get_rank() == 0)
      std::printf("communicators: %lld (the world + %lld splits: one per mesh "
                  "dimension, not one per group)\n",
                  (long long)S.communicators, (long long)S.splits);
    // Every rank finalizes before it exits; a rank that exits with the
    // runtime initialized aborts the job (docs/runtime.md, "Faults").
    meshrt::finalize();
  } catch (const meshrt::Error &E) {
    std::fprintf(stderr, "mesh-example-2d: %s\n", E.what());
    return 1;
  }
  return 0;
}
