//===- CalibrateAxes.cpp - mesh-auto-shard's axis costs, measured ---------===//
//
// Measures, for each axis of a mesh, what one collective on it costs on this
// machine, and prints it as mesh-auto-shard's `axis-cost` option:
//
//   mpirun -n 8 meshrt-calibrate-axes dp=2,tp=4
//   axis-cost=dp=21.4us:3.92GB/s,tp=18.7us:4.31GB/s
//
// Every group along the axis runs an f32 sum all_reduce at once (as a
// partitioned program runs them), of 8 bytes and of --bytes (default 4 MiB),
// ROUNDS rounds of a batch of calls each after a barrier; a round's time is
// the slowest rank's, and each size's time the median of its rounds. The
// latency is the time of 8 bytes; the bandwidth is the bytes each device
// sends for the large one, 2 (g - 1) / g of it on a group of g (the count
// mesh-report-communication and the auto-sharder use), over the time it
// takes beyond the latency. Any launcher and backend the runtime supports
// (mpirun, torchrun, srun; MPI, gloo, NCCL with --device cuda).
//
//   meshrt-calibrate-axes SHAPE [--bytes N] [--rounds R] [--device cpu|cuda]
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Args {
  std::vector<std::string> Names;
  std::vector<int64_t> Sizes;
  int64_t Bytes = 4 << 20;
  int Rounds = 15;
  std::string Device = "cpu";
};

[[noreturn]] void usage(const char *Why) {
  std::fprintf(stderr,
               "meshrt-calibrate-axes: %s\nusage: meshrt-calibrate-axes "
               "NAME=SIZE[,NAME=SIZE...] [--bytes N] [--rounds R] "
               "[--device cpu|cuda]\n",
               Why);
  std::exit(2);
}

Args parse(int Argc, char **Argv) {
  Args A;
  for (int I = 1; I < Argc; ++I) {
    std::string S = Argv[I];
    auto Value = [&]() -> std::string {
      if (I + 1 >= Argc)
        usage(("missing the value of " + S).c_str());
      return Argv[++I];
    };
    if (S == "--bytes") {
      A.Bytes = std::atoll(Value().c_str());
      if (A.Bytes < 64)
        usage("--bytes must be at least 64");
    } else if (S == "--rounds") {
      A.Rounds = std::atoi(Value().c_str());
      if (A.Rounds < 1)
        usage("--rounds must be at least 1");
    } else if (S == "--device") {
      A.Device = Value();
    } else if (A.Names.empty() && S.find('=') != std::string::npos) {
      size_t Start = 0;
      while (Start <= S.size()) {
        size_t End = S.find(',', Start);
        std::string Entry =
            S.substr(Start, End == std::string::npos ? End : End - Start);
        size_t Eq = Entry.find('=');
        if (Eq == std::string::npos || Eq == 0)
          usage(("cannot read '" + Entry + "' (expected NAME=SIZE)").c_str());
        A.Names.push_back(Entry.substr(0, Eq));
        A.Sizes.push_back(std::atoll(Entry.c_str() + Eq + 1));
        if (A.Sizes.back() < 1 && A.Sizes.back() != -1)
          usage(("bad size in '" + Entry + "'").c_str());
        if (End == std::string::npos)
          break;
        Start = End + 1;
      }
    } else {
      usage(("unknown argument '" + S + "'").c_str());
    }
  }
  if (A.Names.empty())
    usage("no mesh shape given");
  return A;
}

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  size_t N = V.size();
  return N % 2 ? V[N / 2] : (V[N / 2 - 1] + V[N / 2]) / 2;
}

/// The median over rounds of one call's time (the slowest rank's), for an
/// all_reduce of `Count` floats on `G`.
double timeAllReduce(const meshrt::Group &G, const meshrt::Group &World,
                     int64_t Count, int Rounds) {
  std::vector<float> Data(size_t(Count), 1.0f);
  // Enough calls that a batch takes about a millisecond or more.
  int Calls = Count <= 1024 ? 200 : 5;
  G.all_reduce(Data.data(), Count); // Warm-up.
  std::vector<double> Times;
  for (int R = 0; R < Rounds; ++R) {
    World.barrier();
    auto Start = std::chrono::steady_clock::now();
    for (int C = 0; C < Calls; ++C)
      G.all_reduce(Data.data(), Count);
    double Mine =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
            .count() /
        Calls;
    std::vector<double> Slowest = {Mine};
    World.all_reduce(Slowest, meshrt::ReduceOp::Max);
    Times.push_back(Slowest[0]);
  }
  return median(Times);
}

} // namespace

int main(int Argc, char **Argv) {
  Args A = parse(Argc, Argv);
  try {
    meshrt::DeviceMesh Mesh =
        meshrt::init_device_mesh(A.Device, A.Sizes, A.Names, "calibrate");
    meshrt::DeviceMesh World = Mesh.flatten("calibrate_world", A.Names);
    meshrt::Group WorldGroup = World.get_group("calibrate_world");
    std::string Line = "axis-cost=";
    std::vector<std::string> Details;
    for (size_t I = 0; I < A.Names.size(); ++I) {
      meshrt::Group G = Mesh.get_group(A.Names[I]);
      int64_t N = G.size();
      if (N < 2) {
        Details.push_back(A.Names[I] + ": one device, nothing to measure");
        continue;
      }
      double Small = timeAllReduce(G, WorldGroup, 2, A.Rounds);
      double Large = timeAllReduce(G, WorldGroup, A.Bytes / 4, A.Rounds);
      double Sent = 2.0 * double(N - 1) / double(N) * double(A.Bytes / 4 * 4);
      // Where the large call takes hardly longer than the small one (a
      // loaded machine, or --bytes too small), the difference is noise:
      // the whole time gives a bandwidth no higher than the real one.
      double Beyond = Large - Small;
      if (Beyond < 0.1 * Large) {
        if (Mesh.get_rank() == 0)
          std::fprintf(stderr,
                       "%s: %lld bytes took hardly longer than 8 (%.2f against "
                       "%.2f us): the bandwidth is taken from the whole time; "
                       "raise --bytes or run on a quieter machine\n",
                       A.Names[I].c_str(), static_cast<long long>(A.Bytes),
                       Large * 1e6, Small * 1e6);
        Beyond = Large;
      }
      double Bandwidth = Sent / std::max(Beyond, 1e-9);
      char Entry[128];
      std::snprintf(Entry, sizeof Entry, "%s%s=%.1fus:%.3gGB/s",
                    Line.size() > 10 ? "," : "", A.Names[I].c_str(),
                    Small * 1e6, Bandwidth / 1e9);
      Line += Entry;
      char Detail[256];
      std::snprintf(Detail, sizeof Detail,
                    "%s (groups of %lld): 8 B in %.2f us, %lld B in %.2f us "
                    "(%.0f B sent per device)",
                    A.Names[I].c_str(), static_cast<long long>(N), Small * 1e6,
                    static_cast<long long>(A.Bytes), Large * 1e6, Sent);
      Details.push_back(Detail);
    }
    if (Mesh.get_rank() == 0) {
      for (const std::string &D : Details)
        std::fprintf(stderr, "%s\n", D.c_str());
      std::printf("%s\n", Line.size() > 10 ? Line.c_str() : "");
    }
    meshrt::finalize();
  } catch (const meshrt::Error &E) {
    std::fprintf(stderr, "meshrt-calibrate-axes: %s\n", E.what());
    return 1;
  }
  return 0;
}
