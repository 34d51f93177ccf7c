//===- ErrorCases.cpp - Programs that must fail clearly -------------------===//
//
// Each case is a small SPMD program that goes wrong in one way; the ctest
// driver (expect-failure.sh) runs it under mpirun and checks that the job
// exits non-zero, in bounded time, with a message that names what and where.
// C ABI cases use the default error policy (print and abort the job), as
// compiled code does; C++ cases let the meshrt::Error escape.
//
// The fault cases (runFault) are one SPMD step, an all_reduce over the whole
// mesh, in which rank 1 misbehaves: it leaves (exit, return, SIGKILL),
// stalls, skips a communicator, or calls the collective with other
// arguments (for MESHRT_CHECK_COLLECTIVES=1); "no-fault" is the same step
// with nobody misbehaving. They run on the backend MESHRT_BACKEND names, with
// device buffers on NCCL.
//
//   meshrt-error-cases <case>
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"
#include "meshrt/meshrt.h"

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
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

meshrt_comm_t wholeMeshComm(meshrt_mesh_t M) {
  const int64_t Both[] = {0, 1};
  meshrt_comm_t C = nullptr;
  meshrt_comm_get(M, 2, Both, &C);
  return C;
}

/// Room for `Count` elements of 8 bytes that the backend can use: host
/// memory on MPI, device memory from libmeshrt's mgpuMemAlloc on NCCL
/// (looked up at run time: a build without CUDA has no mgpu* functions).
void *buffer(int64_t Count) {
  size_t Bytes = size_t(Count) * 8;
  meshrt_backend B = MESHRT_BACKEND_MPI;
  meshrt_get_backend(&B);
  if (B != MESHRT_BACKEND_NCCL)
    return std::calloc(Bytes, 1);
  using AllocFn = void *(*)(uint64_t, void *, bool);
  auto Alloc = reinterpret_cast<AllocFn>(dlsym(RTLD_DEFAULT, "mgpuMemAlloc"));
  void *Stream = nullptr;
  if (!Alloc || meshrt_gpu_stream(&Stream) != MESHRT_SUCCESS) {
    std::fprintf(stderr, "no device memory for the NCCL backend\n");
    std::exit(2);
  }
  return Alloc(Bytes, Stream, false);
}

/// Runs fault case `Case` and returns the exit code of main; -1 if `Case`
/// is not a fault case.
int runFault(const std::string &Case) {
  static const char *const Faults[] = {
      "exit-0",      "exit-1",       "return",
      "sigkill",     "stall",        "stall-others-finalized",
      "skip-comm",   "check-root",   "check-reduction",
      "check-count", "check-dtype",  "check-collective",
      "no-fault",    "all-return-0", "all-return-3"};
  bool Known = false;
  for (const char *F : Faults)
    Known |= Case == F;
  if (!Known)
    return -1;
  meshrt_init(MESHRT_BACKEND_AUTO); // MESHRT_BACKEND picks mpi or nccl.
  meshrt_mesh_t M = declare("m", 2, -1);
  meshrt_comm_t All = wholeMeshComm(M);
  const bool Odd = rank() == 1; // The rank that misbehaves.
  void *X = buffer(8);
  int64_t Count = 4;
  meshrt_dtype Type = MESHRT_F32;
  meshrt_reduce_op Op = MESHRT_SUM;
  if (Odd) {
    if (Case == "exit-0" || Case == "exit-1")
      std::exit(Case == "exit-0" ? 0 : 1);
    if (Case == "return")
      return 0; // From main, with the runtime initialized.
    if (Case == "sigkill")
      raise(SIGKILL);
    if (Case == "stall" || Case == "stall-others-finalized") {
      sleep(600);
      return 0;
    }
    if (Case == "check-reduction")
      Op = MESHRT_MAX;
    if (Case == "check-dtype")
      Type = MESHRT_F64;
  }
  if (Case == "stall-others-finalized") {
    // Some ranks are done: they finalize and wait at exit for the others
    // (the second half of the world; on 2 ranks, rank 0).
    int64_t Size = 1;
    meshrt_world_size(&Size);
    if (Size == 2 ? rank() == 0 : rank() >= Size / 2) {
      meshrt_finalize();
      return 0;
    }
  }
  // Creating a communicator is collective over the world; here rank 1 skips
  // it and goes on to the all_reduce.
  if (Case == "skip-comm" && !Odd)
    shardComm(M);
  if (Case == "check-root") {
    meshrt_broadcast(All, X, Count, Type, Odd ? 1 : 0);
  } else if (Case == "check-count") {
    // The receivers ask for more than the root sends.
    meshrt_broadcast(All, X, rank() == 0 ? Count : 2 * Count, Type, 0);
  } else if (Case == "check-collective" && Odd) {
    meshrt_broadcast(All, X, Count, Type, 0);
  } else {
    meshrt_all_reduce(All, X, X, Count, Type, Op);
  }
  if (Case == "no-fault") { // The same step without a fault: a baseline.
    meshrt_finalize();
    return 0;
  }
  // Every rank returns from main without finalizing (as torch programs that
  // skip destroy_process_group): not a fault; the exit fence sees them all,
  // the runtime finalizes with a warning and each exits with its status.
  if (Case == "all-return-0" || Case == "all-return-3")
    return Case == "all-return-0" ? 0 : 3;
  std::fprintf(stderr, "rank %lld: case '%s' did not fail\n", (long long)rank(),
               Case.c_str());
  meshrt_finalize();
  return 0;
}

int run(const std::string &Case) {
  int Fault = runFault(Case);
  if (Fault >= 0)
    return Fault;
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
