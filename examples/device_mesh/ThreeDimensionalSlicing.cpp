//===- ThreeDimensionalSlicing.cpp - The tutorial's 3-D slicing in C++ ----===//
//
// The DeviceMesh tutorial's 3-D example: 8 processes as a (2, 2, 2) mesh
// named ("replicate", "shard", "tp"), sliced into a 2-D HSDP mesh and a 1-D
// TP mesh. Slicing reuses the parent's communicators (the split count does
// not move); flattening (replicate, shard) into "dp" makes exactly one.
//
//   mpirun -n 8 build/bin/mesh-example-3d [cpu|cuda|auto]
//
//===----------------------------------------------------------------------===//

#include "PrintInOrder.h"

#include "meshrt/DeviceMesh.h"

#include <cstdio>

using examples::list;

int main(int argc, char **argv) {
  std::string Device = argc > 1 ? argv[1] : "cpu";
  try {
    meshrt::DeviceMesh Mesh3D = meshrt::init_device_mesh(
        Device, {2, 2, 2}, {"replicate", "shard", "tp"});
    bool Root = Mesh3D.get_rank() == 0;
    int64_t AfterInit = Mesh3D.stats().splits;

    // Slice out sub-meshes for HSDP and tensor parallelism.
    meshrt::DeviceMesh HsdpMesh = Mesh3D[{"replicate", "shard"}];
    meshrt::DeviceMesh TpMesh = Mesh3D["tp"];
    meshrt::Group Replicate = HsdpMesh["replicate"].get_group();
    meshrt::Group Shard = HsdpMesh["shard"].get_group();
    meshrt::Group Tp = TpMesh.get_group();
    int64_t AfterSlicing = Mesh3D.stats().splits;
    bool Reused =
        Replicate.handle() == Mesh3D.get_group("replicate").handle() &&
        Shard.handle() == Mesh3D.get_group("shard").handle() &&
        Tp.handle() == Mesh3D.get_group("tp").handle();

    // Flatten (replicate, shard) into one data-parallel dimension.
    meshrt::DeviceMesh DpMesh = Mesh3D.flatten("dp", {"replicate", "shard"});
    int64_t AfterFlatten = Mesh3D.stats().splits;

    if (Root) {
      std::printf("Parent 3D mesh: %s\n", Mesh3D.to_string().c_str());
      std::printf("HSDP (2D) sub-mesh shape: %s, TP (1D) sub-mesh shape: %s\n",
                  list(HsdpMesh.shape()).c_str(), list(TpMesh.shape()).c_str());
    }
    std::vector<int64_t> C = Mesh3D.get_coordinate();
    examples::printInRankOrder(
        Mesh3D, "rank " + std::to_string(Mesh3D.get_rank()) + ": coordinate " +
                    list(C) + "  hsdp sub-mesh " + list(HsdpMesh.mesh()) +
                    "  replicate " + list(Replicate.members()) + "  shard " +
                    list(Shard.members()) + "  tp " + list(Tp.members()) +
                    "  dp (flattened) " + list(DpMesh.get_group().members()));
    if (Root) {
      std::printf("splits after init_device_mesh: %lld (one per dimension)\n",
                  (long long)AfterInit);
      std::printf("splits after slicing: %lld (sub-meshes reuse the parent's "
                  "communicators: %s)\n",
                  (long long)AfterSlicing, Reused ? "yes" : "NO");
      std::printf("splits after flatten(\"dp\"): %lld (exactly one more)\n",
                  (long long)AfterFlatten);
    }
    // Every rank finalizes before it exits; a rank that exits with the
    // runtime initialized aborts the job (docs/runtime.md, "Faults").
    meshrt::finalize();
    return Reused && AfterSlicing == AfterInit && AfterFlatten == AfterInit + 1
               ? 0
               : 1;
  } catch (const meshrt::Error &E) {
    std::fprintf(stderr, "mesh-example-3d: %s\n", E.what());
    return 1;
  }
}
