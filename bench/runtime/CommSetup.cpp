//===- CommSetup.cpp - Communicator set-up: splits vs one per group -------===//
//
// For the meshes (8), (2,4) and (2,2,2) (or (W) for another world size),
// times getting one communicator per mesh dimension three ways:
//   meshrt      init_device_mesh: declare (one digest allreduce) plus one
//               MPI_Comm_split per dimension (none where the world serves);
//   new_group   what the tutorial's manual code does with torch new_group:
//               every rank calls MPI_Comm_create for every group of every
//               dimension (MPI_Comm_create is collective over the world);
//   create_group every rank calls MPI_Comm_create_group for its own group
//               of each dimension (collective over the group only).
// Each is repeated; a repetition's time is the slowest rank's; the median is
// reported with the number of communicators created.
//
//   mpirun -n 8 meshrt-bench-setup [--reps N]
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"
#include "meshrt/MeshLayout.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  size_t N = V.size();
  return N % 2 ? V[N / 2] : (V[N / 2 - 1] + V[N / 2]) / 2;
}

/// Times `Body` (collective) `Reps` times; the slowest rank counts.
template <typename F> double timeIt(int Reps, F &&Body) {
  std::vector<double> T;
  for (int R = 0; R < Reps; ++R) {
    MPI_Barrier(MPI_COMM_WORLD);
    double Start = MPI_Wtime();
    Body();
    double Mine = MPI_Wtime() - Start, Max;
    MPI_Allreduce(&Mine, &Max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    T.push_back(Max);
  }
  return median(T);
}

std::string shapeName(const std::vector<int64_t> &S) {
  return meshrt::MeshLayout::formatShape(S);
}

} // namespace

int main(int argc, char **argv) {
  int Reps = 20;
  for (int I = 1; I + 1 < argc; I += 2)
    if (!std::strcmp(argv[I], "--reps"))
      Reps = std::atoi(argv[I + 1]);
  // The runtime starts MPI; the baselines use MPI_COMM_WORLD directly.
  meshrt::Runtime Keep(meshrt::Backend::MPI);
  int Rank, W;
  MPI_Comm_rank(MPI_COMM_WORLD, &Rank);
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  std::vector<std::vector<int64_t>> Shapes = {{W}};
  if (W == 8)
    Shapes = {{8}, {2, 4}, {2, 2, 2}};

  if (Rank == 0) {
    std::printf("# communicator set-up, one communicator per mesh dimension, "
                "%d ranks, median of %d\n",
                W, Reps);
    std::printf("| mesh | meshrt: splits | meshrt (ms) | tutorial new_group "
                "(MPI_Comm_create per group): communicators | time (ms) | "
                "MPI_Comm_create_group: calls per rank | time (ms) |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const auto &Shape : Shapes) {
    meshrt::MeshLayout L(Shape);
    std::vector<std::string> Names;
    for (size_t I = 0; I < Shape.size(); ++I)
      Names.push_back("d" + std::to_string(I));

    // meshrt: a fresh runtime each time, timing init_device_mesh only.
    int64_t Splits = 0;
    std::vector<double> Ts;
    for (int R = 0; R < Reps; ++R) {
      meshrt::Runtime Rt(meshrt::Backend::MPI);
      MPI_Barrier(MPI_COMM_WORLD);
      double Start = MPI_Wtime();
      meshrt::DeviceMesh M = Rt.init_device_mesh("cpu", Shape, Names);
      double Mine = MPI_Wtime() - Start, Max;
      MPI_Allreduce(&Mine, &Max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      Ts.push_back(Max);
      Splits = Rt.stats().splits;
      Rt.finalize();
    }
    double Meshrt = median(Ts);

    // The tutorial's way: every group of every dimension, on every rank.
    int64_t Created = 0;
    MPI_Group WorldGroup;
    MPI_Comm_group(MPI_COMM_WORLD, &WorldGroup);
    double NewGroup = timeIt(Reps, [&] {
      std::vector<MPI_Comm> Mine;
      Created = 0;
      for (int64_t D = 0; D < L.ndims(); ++D) {
        // Enumerate the groups along D by their lowest member.
        std::vector<bool> Seen(size_t(W), false);
        for (int64_t First = 0; First < W; ++First) {
          if (Seen[size_t(First)])
            continue;
          std::vector<int64_t> Members = L.groupMembers(First, {D});
          std::vector<int> Ranks(Members.begin(), Members.end());
          for (int64_t M : Members)
            Seen[size_t(M)] = true;
          MPI_Group G;
          MPI_Group_incl(WorldGroup, int(Ranks.size()), Ranks.data(), &G);
          MPI_Comm C;
          MPI_Comm_create(MPI_COMM_WORLD, G, &C);
          MPI_Group_free(&G);
          ++Created;
          if (C != MPI_COMM_NULL)
            Mine.push_back(C);
        }
      }
      for (MPI_Comm &C : Mine)
        MPI_Comm_free(&C);
    });

    // Only my own group per dimension, collective over its members.
    double CreateGroup = timeIt(Reps, [&] {
      std::vector<MPI_Comm> Mine;
      for (int64_t D = 0; D < L.ndims(); ++D) {
        std::vector<int64_t> Members = L.groupMembers(Rank, {D});
        std::vector<int> Ranks(Members.begin(), Members.end());
        MPI_Group G;
        MPI_Group_incl(WorldGroup, int(Ranks.size()), Ranks.data(), &G);
        MPI_Comm C;
        MPI_Comm_create_group(MPI_COMM_WORLD, G, int(D), &C);
        MPI_Group_free(&G);
        Mine.push_back(C);
      }
      for (MPI_Comm &C : Mine)
        MPI_Comm_free(&C);
    });
    MPI_Group_free(&WorldGroup);

    if (Rank == 0)
      std::printf("| %s | %lld | %.3f | %lld | %.3f | %lld | %.3f |\n",
                  shapeName(Shape).c_str(), (long long)Splits, Meshrt * 1e3,
                  (long long)Created, NewGroup * 1e3, (long long)L.ndims(),
                  CreateGroup * 1e3);
    std::fflush(stdout);
  }
  return 0;
}
