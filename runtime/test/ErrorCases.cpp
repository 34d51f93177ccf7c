//===- ErrorCases.cpp - Programs that must fail clearly -------------------===//
//
// Each case is a small SPMD program that goes wrong in one way; the ctest
// driver (expect-failure.sh) runs it under mpirun and checks that the job
// exits non-zero, in bounded time, with a message that names what and where.
// C ABI cases use the default error policy (print and abort the job), as
// compiled code does; C++ cases let the meshrt::Error escape.
//
//   meshrt-error-cases <case>
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"
#include "meshrt/meshrt.h"

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace meshrt;

namespace {

int64_t rank() {
  int64_t R = 0;
  meshrt_world_rank(&R);
  return R;
}

meshrt_mesh_t declare(const char *Name, int64_t D0, int64_t D1) {
  const int64_t Sizes[] = {D0, D1};
  const char *Names[] = {"replicate", "shard"};
  meshrt_mesh_t M = nullptr;
  meshrt_mesh_declare(Name, 2, Sizes, Names, &M); // Aborts on error.
  return M;
}

meshrt_comm_t shardComm(meshrt_mesh_t M) {
  const char *Names[] = {"shard"};
  meshrt_comm_t C = nullptr;
  meshrt_comm_get_by_names(M, 1, Names, &C);
  return C;
}

int run(const std::string &Case) {
  if (Case == "world-size") {
    meshrt_init(MESHRT_BACKEND_MPI);
    declare("m", 3, 3);
  } else if (Case == "dynamic-not-divisible") {
    meshrt_init(MESHRT_BACKEND_MPI);
    declare("m", 3, -1);
  } else if (Case == "unknown-axis") {
    DeviceMesh Mesh = init_device_mesh("cpu", {2, 4}, {"replicate", "shard"});
    Mesh.get_group("tp"); // Throws; nobody catches it.
  } else if (Case == "unknown-axis-c") {
    meshrt_init(MESHRT_BACKEND_MPI);
    meshrt_mesh_t M = declare("m", 2, -1);
    const char *Names[] = {"tp"};
    meshrt_comm_t C;
    meshrt_comm_get_by_names(M, 1, Names, &C);
  } else if (Case == "garbage-comm") {
    // A handle the runtime never gave out: refused, not dereferenced.
    meshrt_init(MESHRT_BACKEND_MPI);
    float X[4] = {};
    meshrt_comm_t Garbage = reinterpret_cast<meshrt_comm_t>(uintptr_t(0x1234));
    meshrt_all_reduce(Garbage, X, X, 4, MESHRT_F32, MESHRT_SUM);
  } else if (Case == "mesh-mismatch") {
    meshrt_init(MESHRT_BACKEND_MPI);
    if (rank() == 3)
      declare("m", 4, 2);
    else
      declare("m", 2, 4);
  } else if (Case == "timeout") {
    // Rank 1 never joins its shard group's all_reduce.
    meshrt_init(MESHRT_BACKEND_MPI);
    meshrt_comm_t C = shardComm(declare("m", 2, 4));
    float X[4] = {1, 2, 3, 4};
    if (rank() == 1) {
      sleep(120);
      return 0;
    }
    meshrt_all_reduce(C, X, X, 4, MESHRT_F32, MESHRT_SUM);
    // The other shard group goes on to a world barrier and waits there.
    meshrt_mesh_t M = nullptr;
    meshrt_mesh_lookup("m", &M);
    const int64_t All[] = {0, 1};
    meshrt_comm_t World;
    meshrt_comm_get(M, 2, All, &World);
    meshrt_barrier(World);
  } else if (Case == "rank-death") {
    // Rank 1 dies; the others must not wait for it forever.
    meshrt_init(MESHRT_BACKEND_MPI);
    meshrt_comm_t C = shardComm(declare("m", 2, 4));
    float X[4] = {1, 2, 3, 4};
    if (rank() == 1)
      raise(SIGKILL);
    for (int I = 0; I < 1000; ++I)
      meshrt_all_reduce(C, X, X, 4, MESHRT_F32, MESHRT_SUM);
  } else if (Case == "unsupported") {
    meshrt_init(MESHRT_BACKEND_MPI);
    meshrt_comm_t C = shardComm(declare("m", 1, -1));
    float X[4] = {1, 2, 3, 4};
    meshrt_all_reduce(C, X, X, 4, MESHRT_F32, MESHRT_BXOR);
  } else if (Case == "unchecked-status") {
    // Compiled code ignores statuses: a bad call still stops the job.
    meshrt_init(MESHRT_BACKEND_MPI);
    meshrt_comm_t C = shardComm(declare("m", 1, -1));
    float X[4] = {1, 2, 3, 4};
    meshrt_broadcast(C, X, 4, MESHRT_F32, 99);
  } else if (Case == "bad-backend-env") {
    meshrt_init(MESHRT_BACKEND_AUTO);
  } else if (Case == "nccl-without-gpu") {
    if (cuda_available()) {
      std::printf("SKIP: a CUDA device is visible here\n");
      return 77;
    }
    meshrt_init(MESHRT_BACKEND_AUTO); // With MESHRT_BACKEND=nccl.
  } else {
    std::fprintf(stderr, "unknown case '%s'\n", Case.c_str());
    return 2;
  }
  std::fprintf(stderr, "case '%s' did not fail\n", Case.c_str());
  meshrt_finalize();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  return run(argv[1]);
}
