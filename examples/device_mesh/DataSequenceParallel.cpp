//===- DataSequenceParallel.cpp - DeepSpeed's (dp, sp) mesh in C++ --------===//
//
// The DeepSpeed Ulysses set-up: a mesh (dp, sp) named ("data_parallel",
// "sequence_parallel") with sp = 4 and dp resolved from the world size (-1).
// ZeRO's world size is the data-parallel size; attention swaps sequence
// shards for head shards with an all_to_all over "sequence_parallel", and
// gradients are averaged over "data_parallel".
//
//   mpirun -n 8 build/bin/mesh-example-dp-sp     (any multiple of 4 ranks)
//
//===----------------------------------------------------------------------===//

#include "PrintInOrder.h"

#include "meshrt/DeviceMesh.h"

#include <cstdio>

using examples::list;

int main() {
  try {
    const int64_t SpSize = 4;
    meshrt::DeviceMesh Mesh = meshrt::init_device_mesh(
        "cpu", {-1, SpSize}, {"data_parallel", "sequence_parallel"});
    meshrt::Group Dp = Mesh.get_group("data_parallel");
    meshrt::Group Sp = Mesh.get_group("sequence_parallel");
    int64_t Rank = Mesh.get_rank();
    if (Rank == 0)
      std::printf("mesh %s: ZeRO world size (data-parallel size) = %lld\n",
                  Mesh.to_string().c_str(),
                  (long long)Mesh.size("data_parallel"));

    // Ulysses: I hold my sequence shard (Sp.rank()) of all SpSize head
    // groups, encoded as 100 * head + shard; after the all_to_all I hold every
    // sequence shard of head group Sp.rank().
    std::vector<int32_t> SeqShard(SpSize);
    for (int64_t Head = 0; Head < SpSize; ++Head)
      SeqShard[size_t(Head)] = int32_t(100 * Head + Sp.rank());
    std::vector<int32_t> HeadShard = Sp.all_to_all(SeqShard);

    // Data parallel: average a gradient over the replicas.
    std::vector<float> Grad = {float(Rank)};
    Dp.all_reduce(Grad, meshrt::ReduceOp::Avg);

    std::vector<int64_t> Heads(HeadShard.begin(), HeadShard.end());
    examples::printInRankOrder(
        Mesh, "rank " + std::to_string(Rank) + ": dp group " +
                  list(Dp.members()) + "  sp group " + list(Sp.members()) +
                  "  after all_to_all " + list(Heads) + "  mean grad over dp " +
                  std::to_string(Grad[0]));
    // Every rank finalizes before it exits; a rank that exits with the
    // runtime initialized aborts the job (docs/runtime.md, "Faults").
    meshrt::finalize();
  } catch (const meshrt::Error &E) {
    std::fprintf(stderr, "mesh-example-dp-sp: %s\n", E.what());
    return 1;
  }
  return 0;
}
