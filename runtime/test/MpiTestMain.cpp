//===- MpiTestMain.cpp - GoogleTest main for tests under mpirun -----------===//
//
// Every rank runs the same tests in the same order (they are collective).
// Rank 0 prints GoogleTest's usual report; other ranks print only their
// failures, prefixed with their rank. The exit code is non-zero on every rank
// if any rank failed.
//
// Options (before GoogleTest's):
//   --gpu-probe=N  exit 0 if at least N CUDA devices are visible, else print
//                  "SKIP: ..." and exit 77; no MPI (used to skip NCCL tests).
// The backend is MESHRT_BACKEND if set, else the build's default (MPI, or
// NCCL for the CUDA build of the tests).
//
//===----------------------------------------------------------------------===//

#include "TestBuffers.h"

#include "meshrt/meshrt.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int64_t Rank) : Rank(Rank) {}
  void OnTestStart(const ::testing::TestInfo &T) override {
    Current = std::string(T.test_suite_name()) + "." + T.name();
  }
  // Called with GoogleTest's lock held: must not call back into UnitTest.
  void OnTestPartResult(const ::testing::TestPartResult &R) override {
    if (!R.failed())
      return;
    std::fprintf(stderr, "[rank %lld] %s: %s:%d: %s\n", (long long)Rank,
                 Current.c_str(), R.file_name() ? R.file_name() : "?",
                 R.line_number(), R.message());
  }

private:
  int64_t Rank;
  std::string Current;
};

int probeGpus(int Wanted) {
#if MESHRT_TEST_CUDA
  int Count = 0;
  cudaError_t E = cudaGetDeviceCount(&Count);
  if (E != cudaSuccess) {
    std::printf("SKIP: no CUDA device is visible (cudaGetDeviceCount: %s)\n",
                cudaGetErrorString(E));
    return 77;
  }
  if (Count < Wanted) {
    std::printf("SKIP: this test needs %d CUDA devices (one per rank), %d "
                "visible\n",
                Wanted, Count);
    return 77;
  }
  return 0;
#else
  (void)Wanted;
  std::printf("SKIP: the tests were built without CUDA\n");
  return 77;
#endif
}

} // namespace

int main(int argc, char **argv) {
  for (int I = 1; I < argc; ++I)
    if (!std::strncmp(argv[I], "--gpu-probe=", 12))
      return probeGpus(std::atoi(argv[I] + 12));

  ::testing::InitGoogleTest(&argc, argv);
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  const char *Env = std::getenv("MESHRT_BACKEND");
  meshrt_backend Wanted =
      (Env && *Env) ? MESHRT_BACKEND_AUTO : meshrt_backend(MESHRT_TEST_BACKEND);
  if (meshrt_init(Wanted) != MESHRT_SUCCESS) {
    std::fprintf(stderr, "meshrt_init failed: %s\n", meshrt_last_error());
    return 1;
  }
  meshrt_backend Backend;
  meshrt_get_backend(&Backend);
  meshrt::test::useDeviceMemory() = Backend == MESHRT_BACKEND_NCCL;
  int64_t Rank = 0, Size = 1;
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  if (Rank == 0)
    std::printf("meshrt tests: %lld ranks, backend %s\n", (long long)Size,
                Backend == MESHRT_BACKEND_NCCL   ? "nccl"
                : Backend == MESHRT_BACKEND_GLOO ? "gloo"
                                                 : "mpi");
  auto &Listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (Rank != 0) {
    delete Listeners.Release(Listeners.default_result_printer());
    Listeners.Append(new RankFailurePrinter(Rank));
  }
  int Rc = RUN_ALL_TESTS();
  // Every rank's verdict, through the runtime itself (these tests also run
  // without MPI: under torchrun, on gloo).
  int32_t Any = Rc;
  meshrt::test::Buffer Verdict(sizeof(Any)); // Device memory on NCCL.
  Verdict.upload(&Any);
  meshrt_mesh_t World;
  meshrt_comm_t All;
  int64_t Dyn = -1;
  const char *Axis = "all";
  if (meshrt_mesh_declare("__test_verdict", 1, &Dyn, &Axis, &World) !=
          MESHRT_SUCCESS ||
      meshrt_comm_get(World, 1, std::array<int64_t, 1>{0}.data(), &All) !=
          MESHRT_SUCCESS ||
      meshrt_all_reduce(All, Verdict.get(), Verdict.get(), 1, MESHRT_I32,
                        MESHRT_MAX) != MESHRT_SUCCESS) {
    std::fprintf(stderr, "rank %lld: cannot gather the verdicts: %s\n",
                 (long long)Rank, meshrt_last_error());
    Any = 1;
  } else {
    std::vector<unsigned char> Got = Verdict.download();
    std::memcpy(&Any, Got.data(), sizeof(Any));
  }
  meshrt_stats Stats;
  meshrt_get_stats(&Stats);
  if (Rank == 0)
    std::printf("meshrt tests: %s on all %lld ranks (default context: %lld "
                "collectives, %lld splits)\n",
                Any ? "FAILED" : "PASSED", (long long)Size,
                (long long)Stats.collectives, (long long)Stats.splits);
  std::fflush(stdout);
  meshrt_finalize();
  return Any ? 1 : 0;
}
