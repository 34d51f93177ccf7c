//===- main.cpp - scenario 1: the tutorial's 2-D mesh, checked ------------===//
//
// Host driver of device_mesh_2d.mlir. Every rank passes its MPI world rank to
// the compiled function, which all_gathers it over the mesh axes, and checks
// the groups it gets back against the ones the DeviceMesh tutorial builds by
// hand with dist.new_group:
//
//   shard_rank_lists = list(range(0, 4)), list(range(4, 8))
//   for i in range(4): replicate_group_ranks = list(range(i, 8, 4))
//
// Rank 0 prints every rank's coordinate and groups, then the verdict. Run
// with exactly 8 processes: mpirun -n 8 mesh-scenario-device-mesh-2d
//
//===----------------------------------------------------------------------===//

#include "../common/Scenario.h"

using scenario::MemRef;

namespace {
/// The results of @device_mesh_2d, in order.
struct Groups {
  MemRef<int64_t, 2> shard;      // 1x4
  MemRef<int64_t, 2> replicate;  // 2x1
  MemRef<int64_t, 2> mesh;       // 2x4
  MemRef<int64_t, 2> transposed; // 1x8
  int64_t replicateIndex, shardIndex, replicateSize, shardSize;
};
} // namespace

extern "C" void _mlir_ciface_device_mesh_2d(Groups *result,
                                            MemRef<int64_t, 2> *worldRank);

int main() {
  mesh_module_init();
  int status = 0;
  {
    scenario::World world;
    scenario::Checks check;
    const int64_t rank = world.rank(), n = world.size();
    check.that("8 processes (mpirun -n 8)", n == 8);

    // The tutorial's manual groups (8 devices on one host, 2 x 4).
    std::vector<std::vector<int64_t>> shardLists = {{0, 1, 2, 3}, {4, 5, 6, 7}};
    std::vector<int64_t> myShard, myReplicate;
    for (auto &list : shardLists)
      if (std::find(list.begin(), list.end(), rank) != list.end())
        myShard = list;
    int64_t shardFactor = int64_t(shardLists[0].size());
    for (int64_t i = 0; i < n / 2; ++i) {
      std::vector<int64_t> list;
      for (int64_t r = i; r < n; r += shardFactor)
        list.push_back(r);
      if (std::find(list.begin(), list.end(), rank) != list.end())
        myReplicate = list;
    }
    // init_device_mesh((2, 4)) lays the ranks out as arange(8).view(2, 4).
    std::vector<int64_t> mesh(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r)
      mesh[size_t(r)] = r;
    std::vector<int64_t> transposed; // Column by column.
    for (int64_t s = 0; s < 4; ++s)
      for (int64_t r = 0; r < 2; ++r)
        transposed.push_back(r * 4 + s);

    std::vector<int64_t> me = {rank};
    scenario::Input<int64_t, 2> in(me, {1, 1});
    Groups g;
    check.valuesComputed(scenario::call(
        "device_mesh_2d", [&] { _mlir_ciface_device_mesh_2d(&g, in.get()); }));

    std::vector<int64_t> shard = g.shard.toVector();
    std::vector<int64_t> replicate = g.replicate.toVector();
    if (rank == 0) {
      std::vector<int64_t> all = g.mesh.toVector();
      check.out << "mesh @mesh_2d(replicate=2, shard=4) as gathered: ["
                << check.str(std::vector<int64_t>(all.begin(), all.begin() + 4))
                << ", "
                << check.str(std::vector<int64_t>(all.begin() + 4, all.end()))
                << "]; rows are shard groups, columns replicate groups\n";
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "rank %lld: coordinate (replicate=%lld, shard=%lld); "
                  "shard group %s; replicate group %s\n",
                  (long long)rank, (long long)g.replicateIndex,
                  (long long)g.shardIndex, check.str(shard).c_str(),
                  check.str(replicate).c_str());
    check.out << line;
    check.that("coordinate is (rank / 4, rank % 4)",
               g.replicateIndex == rank / 4 && g.shardIndex == rank % 4);
    check.that("axis sizes are (2, 4)",
               g.replicateSize == 2 && g.shardSize == 4);
    check.exact("shard group (tutorial: new_group(shard_rank_lists[i]))", shard,
                myShard);
    check.exact("replicate group (tutorial: new_group(range(i, 8, 4)))",
                replicate, myReplicate);
    check.exact("whole mesh (gather over shard, then replicate)",
                g.mesh.toVector(), mesh);
    check.exact("axes [shard, replicate] order the group shard-major",
                g.transposed.toVector(), transposed);
    g.shard.release();
    g.replicate.release();
    g.mesh.release();
    g.transposed.release();
    status = scenario::finish(world, check, "scenario 1 (2-D device mesh)");
  }
  mesh_module_fini();
  return status;
}
