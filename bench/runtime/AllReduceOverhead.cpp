//===- AllReduceOverhead.cpp - meshrt all_reduce vs raw MPI_Allreduce -----===//
//
// Measures what the runtime adds to a collective: meshrt_all_reduce against
// MPI_Allreduce on the very same MPI communicator (the runtime's own, taken
// from meshrt_comm_native_handle), f32 sum, 8 B to 16 MiB. The two are
// interleaved in one run: each round times a batch of K calls of one, then a
// batch of the other (the order alternates between rounds), every batch
// starting after a barrier. A round's time is the slowest rank's. Reported:
// the median per-call time of each over all rounds, and the median of the
// per-round ratio runtime/raw (the overhead) and of the per-round difference.
//
//   mpirun -n 8 meshrt-bench-allreduce [--max-bytes N] [--seconds-per-size S]
//                                      [--control | --check]
//
// --control times MPI_Allreduce against itself (an A/A test): what it
// reports is the noise and bias of the method on this machine.
//
// --check measures the cost of MESHRT_CHECK_COLLECTIVES=1: a second runtime
// context is started with the check on (the default one has it off), and
// each round times three batches, interleaved in rotating order:
// MPI_Allreduce, meshrt_all_reduce on the default context (check off) and
// meshrt_all_reduce on the checked context (the same C ABI call on the
// other context's communicator handle).
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"
#include "meshrt/meshrt.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

void check(int Status, const char *What) {
  if (Status != MESHRT_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", What, meshrt_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  size_t N = V.size();
  return N % 2 ? V[N / 2] : (V[N / 2 - 1] + V[N / 2]) / 2;
}

struct Args {
  int64_t MaxBytes = 16 << 20;
  double SecondsPerSize = 1.0;
  bool Control = false;
  bool Check = false;
  bool Gloo = false;
};

Args parse(int argc, char **argv) {
  Args A;
  for (int I = 1; I < argc; ++I) {
    if (!std::strcmp(argv[I], "--control"))
      A.Control = true;
    else if (!std::strcmp(argv[I], "--check"))
      A.Check = true;
    else if (!std::strcmp(argv[I], "--gloo"))
      A.Gloo = true;
    else if (!std::strcmp(argv[I], "--max-bytes") && I + 1 < argc)
      A.MaxBytes = std::atoll(argv[++I]);
    else if (!std::strcmp(argv[I], "--seconds-per-size") && I + 1 < argc)
      A.SecondsPerSize = std::atof(argv[++I]);
  }
  return A;
}

} // namespace

int main(int argc, char **argv) {
  Args A = parse(argc, argv);
  check(meshrt_init(MESHRT_BACKEND_MPI), "meshrt_init");
  int64_t Rank, Size;
  meshrt_world_rank(&Rank);
  meshrt_world_size(&Size);
  const int64_t Sizes[] = {-1};
  const char *Names[] = {"x"};
  meshrt_mesh_t Mesh;
  meshrt_comm_t Comm;
  check(meshrt_mesh_declare("bench", 1, Sizes, Names, &Mesh), "declare");
  check(meshrt_comm_get_by_names(Mesh, 1, Names, &Comm), "comm_get");
  void *Native;
  check(meshrt_comm_native_handle(Comm, &Native), "native_handle");
  MPI_Comm Raw = *static_cast<MPI_Comm *>(Native);

  // --check: the same mesh on a second context started with the check on.
  meshrt_comm_t Checked = nullptr;
  std::unique_ptr<meshrt::Runtime> CheckedRt;
  std::unique_ptr<meshrt::DeviceMesh> CheckedMesh;
  if (A.Check) {
    setenv("MESHRT_CHECK_COLLECTIVES", "1", 1);
    CheckedRt = std::make_unique<meshrt::Runtime>(meshrt::Backend::MPI);
    unsetenv("MESHRT_CHECK_COLLECTIVES");
    CheckedMesh = std::make_unique<meshrt::DeviceMesh>(
        CheckedRt->init_device_mesh("cpu", {-1}, {"x"}, "bench"));
    Checked = CheckedMesh->get_group("x").handle();
  } else if (A.Gloo) {
    // --gloo: the same mesh on a second context on the gloo backend (its
    // ranks meet at a store rank 0 starts over MPI).
    CheckedRt = std::make_unique<meshrt::Runtime>(meshrt::Backend::Gloo);
    CheckedMesh = std::make_unique<meshrt::DeviceMesh>(
        CheckedRt->init_device_mesh("auto", {-1}, {"x"}, "bench"));
    Checked = CheckedMesh->get_group("x").handle();
  }

  if (Rank == 0 && A.Gloo) {
    std::printf("# all_reduce f32 sum, %lld ranks: meshrt on MPI and on gloo "
                "against MPI_Allreduce\n",
                (long long)Size);
    std::printf("| bytes | MPI_Allreduce (us) | meshrt on mpi (us) | "
                "meshrt on gloo (us) | gloo - mpi (us) | gloo / mpi | "
                "rounds x calls |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  } else if (Rank == 0 && A.Check) {
    std::printf("# all_reduce f32 sum, %lld ranks: MESHRT_CHECK_COLLECTIVES "
                "off and on against MPI_Allreduce\n",
                (long long)Size);
    std::printf("| bytes | MPI_Allreduce (us) | meshrt, check off (us) | "
                "meshrt, check on (us) | on - off (us) | on / off | "
                "rounds x calls |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  } else if (Rank == 0) {
    std::printf("# all_reduce f32 sum, %lld ranks: %s\n", (long long)Size,
                A.Control ? "CONTROL, MPI_Allreduce vs MPI_Allreduce (both "
                            "columns are raw MPI)"
                          : "meshrt vs MPI_Allreduce on the same communicator");
    std::printf("| bytes | MPI_Allreduce (us) | meshrt_all_reduce (us) | "
                "difference (ns) | overhead | rounds x calls |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|\n");
  }

  std::vector<int64_t> Bytes;
  for (int64_t B = 8; B <= A.MaxBytes; B *= 4) {
    Bytes.push_back(B);
    if (B == 32 << 10)
      Bytes.push_back(64 << 10); // The 1% threshold of the target.
  }
  if (Bytes.back() != A.MaxBytes)
    Bytes.push_back(A.MaxBytes);

  for (int64_t B : Bytes) {
    int64_t Count = B / 4;
    std::vector<float> Send(static_cast<size_t>(Count), 1.0f);
    std::vector<float> Recv(static_cast<size_t>(Count));
    auto Raw1 = [&] {
      MPI_Allreduce(Send.data(), Recv.data(), int(Count), MPI_FLOAT, MPI_SUM,
                    Raw);
    };
    auto Rt1 = [&] {
      if (A.Control) // A/A control: the method's own bias and noise.
        MPI_Allreduce(Send.data(), Recv.data(), int(Count), MPI_FLOAT, MPI_SUM,
                      Raw);
      else
        meshrt_all_reduce(Comm, Send.data(), Recv.data(), Count, MESHRT_F32,
                          MESHRT_SUM);
    };
    auto Chk1 = [&] {
      meshrt_all_reduce(Checked, Send.data(), Recv.data(), Count, MESHRT_F32,
                        MESHRT_SUM);
    };
    // Warm up, then double the batch size until a batch of raw calls takes
    // at least 2 ms on the slowest rank (best of three, so that one slow
    // call does not stop the doubling early).
    for (int I = 0; I < 20; ++I) {
      Raw1();
      Rt1();
      if (A.Check || A.Gloo)
        Chk1();
    }
    int64_t K = 1;
    double Batch = 0;
    for (;;) {
      Batch = 1e30;
      for (int Try = 0; Try < 3; ++Try) { // The best of three.
        MPI_Barrier(Raw);
        double T0 = MPI_Wtime();
        for (int64_t I = 0; I < K; ++I)
          Raw1();
        double T = MPI_Wtime() - T0;
        MPI_Allreduce(MPI_IN_PLACE, &T, 1, MPI_DOUBLE, MPI_MAX, Raw);
        Batch = std::min(Batch, T);
      }
      if (Batch >= 2e-3 || K >= (int64_t(1) << 20))
        break;
      K *= 2;
    }
    int64_t Rounds = std::max<int64_t>(
        15, std::min<int64_t>(400, int64_t(A.SecondsPerSize / (2 * Batch))));

    // Variant 0 is raw MPI, 1 the runtime, 2 the checked runtime (--check).
    const int Variants = A.Check || A.Gloo ? 3 : 2;
    std::vector<double> RawT, RtT, ChkT, Ratio, Diff;
    for (int64_t R = 0; R < Rounds; ++R) {
      double T[3] = {0, 0, 0};
      for (int Slot = 0; Slot < Variants; ++Slot) {
        // Two variants alternate their order; three rotate.
        int Which = Variants == 2 ? (Slot == 0) == (R % 2 == 1)
                                  : int((Slot + R) % Variants);
        MPI_Barrier(Raw);
        double Start = MPI_Wtime();
        for (int64_t I = 0; I < K; ++I)
          Which == 0 ? Raw1() : Which == 1 ? Rt1() : Chk1();
        T[Which] = (MPI_Wtime() - Start) / double(K);
      }
      MPI_Allreduce(MPI_IN_PLACE, T, 3, MPI_DOUBLE, MPI_MAX, Raw);
      RawT.push_back(T[0]);
      RtT.push_back(T[1]);
      ChkT.push_back(T[2]);
      // Default mode: runtime against raw; --check: check on against off.
      bool Third = A.Check || A.Gloo;
      double Base = Third ? T[1] : T[0], Cand = Third ? T[2] : T[1];
      Ratio.push_back(Cand / Base);
      Diff.push_back(Cand - Base);
    }
    if (Recv[0] != float(Size)) {
      std::fprintf(stderr, "wrong result %f\n", Recv[0]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (Rank == 0 && (A.Check || A.Gloo))
      std::printf("| %lld | %.3f | %.3f | %.3f | %+.3f | %.2fx | %lld x %lld "
                  "|\n",
                  (long long)B, median(RawT) * 1e6, median(RtT) * 1e6,
                  median(ChkT) * 1e6, median(Diff) * 1e6, median(Ratio),
                  (long long)Rounds, (long long)K);
    else if (Rank == 0)
      std::printf("| %lld | %.3f | %.3f | %+.0f | %+.2f%% | %lld x %lld |\n",
                  (long long)B, median(RawT) * 1e6, median(RtT) * 1e6,
                  median(Diff) * 1e9, (median(Ratio) - 1) * 100,
                  (long long)Rounds, (long long)K);
    std::fflush(stdout);
  }
  CheckedMesh.reset();
  if (CheckedRt)
    CheckedRt->finalize();
  meshrt_finalize();
  return 0;
}
