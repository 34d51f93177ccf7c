//===- LaunchTest.cpp - Which launcher started the process ----------------===//
//
// detectLaunch on the environments the launchers make (mpirun, torchrun,
// Kubernetes' PyTorchJob, srun with and without PMI, none), every spelling
// of MESHRT_INIT_METHOD, and each mistake a user can make in them, which
// must be an error naming the variable.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include "meshrt/Error.h"

#include <gtest/gtest.h>

#include <map>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup env(const Vars &V) {
  return [V](const char *Name) -> std::optional<std::string> {
    auto It = V.find(Name);
    if (It == V.end())
      return std::nullopt;
    return It->second;
  };
}

/// detectLaunch's error on `V`, which must throw.
std::string errorOf(const Vars &V) {
  try {
    detectLaunch(env(V));
  } catch (const Error &E) {
    EXPECT_EQ(E.status(), MESHRT_ERROR_INVALID_ARGUMENT);
    return E.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

const Vars Torchrun = {{"RANK", "3"},
                       {"WORLD_SIZE", "8"},
                       {"LOCAL_RANK", "3"},
                       {"LOCAL_WORLD_SIZE", "4"},
                       {"GROUP_RANK", "0"},
                       {"MASTER_ADDR", "node0"},
                       {"MASTER_PORT", "29500"},
                       {"TORCHELASTIC_RUN_ID", "none"}};

TEST(Launch, NoLauncherIsOneProcess) {
  LaunchInfo L = detectLaunch(env({}));
  EXPECT_EQ(L.Method, InitMethod::Single);
  EXPECT_EQ(L.Rank, 0);
  EXPECT_EQ(L.Size, 1);
  EXPECT_EQ(L.describe(), "none, one process (no launcher's variables)");
}

TEST(Launch, MpirunIsMpi) {
  for (const Vars &V :
       {Vars{{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "1"}},
        Vars{{"PMI_SIZE", "8"}, {"PMI_RANK", "1"}},
        Vars{{"PMIX_RANK", "1"}, {"PMIX_NAMESPACE", "slurm.pmix.1.0"}}}) {
    LaunchInfo L = detectLaunch(env(V));
    EXPECT_EQ(L.Method, InitMethod::Mpi) << L.describe();
    EXPECT_EQ(L.Rank, -1); // MPI tells.
  }
  // An MPI launcher wins over RANK/WORLD_SIZE left in the environment.
  Vars Both = Torchrun;
  Both["OMPI_COMM_WORLD_SIZE"] = "8";
  EXPECT_EQ(detectLaunch(env(Both)).Method, InitMethod::Mpi);
}

TEST(Launch, TorchrunMeetsAtMasterPortPlusOne) {
  LaunchInfo L = detectLaunch(env(Torchrun));
  EXPECT_EQ(L.Method, InitMethod::Env);
  EXPECT_EQ(L.Launcher, "torchrun");
  EXPECT_EQ(L.Rank, 3);
  EXPECT_EQ(L.Size, 8);
  EXPECT_EQ(L.LocalRank, 3);
  EXPECT_EQ(L.LocalSize, 4);
  EXPECT_EQ(L.StoreHost, "node0");
  EXPECT_EQ(L.StorePort, 29501); // The agent holds MASTER_PORT.
  EXPECT_EQ(L.describe(), "torchrun, rank 3 of 8, local rank 3, store "
                          "tcp://node0:29501 (detected: RANK/WORLD_SIZE)");
  Vars V = Torchrun;
  V["MESHRT_STORE_PORT"] = "31000";
  EXPECT_EQ(detectLaunch(env(V)).StorePort, 31000);
}

TEST(Launch, KubernetesSetsNoLocalRank) {
  LaunchInfo L = detectLaunch(env({{"RANK", "5"},
                                   {"WORLD_SIZE", "6"},
                                   {"MASTER_ADDR", "job-master-0"},
                                   {"MASTER_PORT", "23456"}}));
  EXPECT_EQ(L.Method, InitMethod::Env);
  EXPECT_EQ(L.Launcher, "env");
  EXPECT_EQ(L.LocalRank, -1); // The store tells.
  EXPECT_EQ(L.StoreHost, "job-master-0");
  EXPECT_EQ(L.StorePort, 23457);
}

TEST(Launch, SrunWithoutPmi) {
  LaunchInfo L =
      detectLaunch(env({{"SLURM_PROCID", "2"},
                        {"SLURM_NTASKS", "4"},
                        {"SLURM_LOCALID", "0"},
                        {"SLURM_JOB_ID", "123456"},
                        {"SLURM_STEP_NODELIST", "gpu[07-09,12],x"}}));
  EXPECT_EQ(L.Method, InitMethod::Env);
  EXPECT_EQ(L.Launcher, "slurm");
  EXPECT_EQ(L.Rank, 2);
  EXPECT_EQ(L.Size, 4);
  EXPECT_EQ(L.LocalRank, 0);
  EXPECT_EQ(L.StoreHost, "gpu07");
  EXPECT_EQ(L.StorePort, 20000 + 123456 % 20000);
}

TEST(Launch, OneRankNeedsNoStore) {
  LaunchInfo L = detectLaunch(env({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  EXPECT_EQ(L.Method, InitMethod::Single);
  EXPECT_EQ(L.Launcher, "env");
}

TEST(Launch, InitMethodSpellings) {
  Vars V = Torchrun;
  V["MESHRT_INIT_METHOD"] = "mpi";
  EXPECT_EQ(detectLaunch(env(V)).Method, InitMethod::Mpi);
  V["MESHRT_INIT_METHOD"] = "env";
  EXPECT_EQ(detectLaunch(env(V)).Method, InitMethod::Env);
  V["MESHRT_INIT_METHOD"] = "tcp://10.1.2.3:4000";
  LaunchInfo T = detectLaunch(env(V));
  EXPECT_EQ(T.Method, InitMethod::Tcp);
  EXPECT_EQ(T.StoreHost, "10.1.2.3");
  EXPECT_EQ(T.StorePort, 4000);
  V["MESHRT_INIT_METHOD"] = "tcp://[fe80::1]:4001";
  T = detectLaunch(env(V));
  EXPECT_EQ(T.StoreHost, "fe80::1");
  EXPECT_EQ(T.StorePort, 4001);
  V["MESHRT_INIT_METHOD"] = "file:///shared/jobs/42";
  LaunchInfo F = detectLaunch(env(V));
  EXPECT_EQ(F.Method, InitMethod::File);
  EXPECT_EQ(F.File, "/shared/jobs/42");
  V["MESHRT_INIT_METHOD"] = "auto";
  EXPECT_EQ(detectLaunch(env(V)).Method, InitMethod::Env);
}

TEST(Launch, MistakesNameTheVariable) {
  auto With =
      [](std::initializer_list<std::pair<const std::string, std::string>>
             Changes,
         std::initializer_list<const char *> Drop = {}) {
        Vars V = Torchrun;
        for (auto &C : Changes)
          V[C.first] = C.second;
        for (const char *D : Drop)
          V.erase(D);
        return V;
      };
  EXPECT_NE(errorOf(With({{"RANK", "three"}}))
                .find("RANK='three' is not an "
                      "integer"),
            std::string::npos);
  EXPECT_NE(errorOf(With({}, {"WORLD_SIZE"}))
                .find("RANK is set but WORLD_SIZE is not"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"RANK", "8"}})).find("rank 8 is outside [0, 8)"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"WORLD_SIZE", "0"}, {"RANK", "0"}}))
                .find("the world size is 0"),
            std::string::npos);
  EXPECT_NE(errorOf(With({}, {"MASTER_ADDR"})).find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(errorOf(With({}, {"MASTER_PORT"})).find("MASTER_PORT is not set"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"MASTER_PORT", "65535"}}))
                .find("MASTER_PORT + 1=65536 is not a TCP port"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"MESHRT_STORE_PORT", "0"}}))
                .find("MESHRT_STORE_PORT=0 is not a TCP port"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"LOCAL_RANK", "4"}}))
                .find("LOCAL_RANK=4 is outside [0, 4)"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"MESHRT_INIT_METHOD", "nccl://x"}}))
                .find("MESHRT_INIT_METHOD='nccl://x' is none of auto, mpi, "
                      "env, tcp://host:port, file:///path"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"MESHRT_INIT_METHOD", "tcp://node0"}}))
                .find("'node0' is not host:port"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"MESHRT_INIT_METHOD", "tcp://node0:99999"}}))
                .find("no host or no port in 1-65535"),
            std::string::npos);
  EXPECT_NE(errorOf(With({{"MESHRT_INIT_METHOD", "file://relative/path"}}))
                .find("must be an absolute path"),
            std::string::npos);
  EXPECT_NE(errorOf({{"MESHRT_INIT_METHOD", "env"}})
                .find("no rank in the environment: set RANK and WORLD_SIZE"),
            std::string::npos);
  EXPECT_NE(errorOf({{"SLURM_PROCID", "1"}, {"MESHRT_INIT_METHOD", "env"}})
                .find("SLURM_PROCID is set but SLURM_NTASKS is not"),
            std::string::npos);
}

} // namespace
