//===- CApiTest.cpp - Life cycle and error reporting of the C ABI ---------===//
//
// A single process (an MPI singleton, no launcher): init/finalize nesting and
// re-initialisation, calls before init and on stale handles, the error
// policy and last-error message, argument checks, names and sizes, the auto
// backend choice, and MESHRT_TIMEOUT_S parsing.
//
//===----------------------------------------------------------------------===//

#include "meshrt/DeviceMesh.h"
#include "meshrt/meshrt.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

bool contains(const char *S, const std::string &Part) {
  return std::string(S).find(Part) != std::string::npos;
}

class CApi : public ::testing::Test {
protected:
  void SetUp() override { meshrt_set_error_policy(MESHRT_ERRORS_RETURN); }
  void TearDown() override {
    while (meshrt_is_initialized())
      meshrt_finalize();
  }
};

TEST_F(CApi, CallsBeforeInitReportNotInitialized) {
  int64_t R = -1;
  EXPECT_EQ(meshrt_world_rank(&R), MESHRT_ERROR_NOT_INITIALIZED);
  EXPECT_TRUE(contains(meshrt_last_error(), "call meshrt_init first"))
      << meshrt_last_error();
  EXPECT_EQ(meshrt_finalize(), MESHRT_ERROR_NOT_INITIALIZED);
  meshrt_mesh_t M;
  EXPECT_EQ(meshrt_mesh_lookup("m", &M), MESHRT_ERROR_NOT_INITIALIZED);
}

TEST_F(CApi, VersionOfTheLibraryIsTheHeaders) {
  int32_t Major = -1, Minor = -1, Patch = -1;
  const char *V = meshrt_get_version(&Major, &Minor, &Patch);
  ASSERT_NE(V, nullptr);
  EXPECT_STREQ(V, MESHRT_VERSION_STRING);
  EXPECT_EQ(Major, MESHRT_VERSION_MAJOR);
  EXPECT_EQ(Minor, MESHRT_VERSION_MINOR);
  EXPECT_EQ(Patch, MESHRT_VERSION_PATCH);
  EXPECT_EQ(std::string(V), std::to_string(Major) + "." +
                                std::to_string(Minor) + "." +
                                std::to_string(Patch));
  // Any pointer may be null; no meshrt_init needed.
  EXPECT_STREQ(meshrt_get_version(nullptr, nullptr, nullptr), V);
  Minor = -1;
  EXPECT_STREQ(meshrt_get_version(nullptr, &Minor, nullptr), V);
  EXPECT_EQ(Minor, MESHRT_VERSION_MINOR);
  EXPECT_EQ(meshrt_is_initialized(), 0);
}

TEST_F(CApi, CheckVersionWantsTheSameMajorAndMinor) {
  // What compiled start-up code calls, before meshrt_init.
  EXPECT_EQ(meshrt_check_version(MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  const std::string Loaded =
      std::string("but the libmeshrt loaded is ") + MESHRT_VERSION_STRING;
  const int32_t Wrong[][2] = {{MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR + 1},
                              {MESHRT_VERSION_MAJOR + 1, MESHRT_VERSION_MINOR},
                              {MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR - 1},
                              {-1, -1}};
  for (const auto &W : Wrong) {
    std::string Wanted = std::to_string(W[0]) + "." + std::to_string(W[1]);
    EXPECT_EQ(meshrt_check_version(W[0], W[1]), MESHRT_ERROR_UNSUPPORTED);
    const char *E = meshrt_last_error();
    EXPECT_TRUE(contains(E, "meshrt_check_version: this program was compiled "
                            "by mesh " +
                                Wanted + " for libmeshrt " + Wanted + ", " +
                                Loaded + " ("))
        << E;
#if MESHRT_TEST_SHARED
    // The file of the library loaded (the shared libmeshrt, by its soname).
    EXPECT_TRUE(contains(E, "/libmeshrt.so." +
                                std::to_string(MESHRT_VERSION_MAJOR) + ")"))
        << E;
#endif
    EXPECT_TRUE(
        contains(E, "); rebuild the program or use the matching library"))
        << E;
  }
  EXPECT_EQ(meshrt_is_initialized(), 0);
}

TEST_F(CApi, InitNestsAndCanRestart) {
  ASSERT_EQ(meshrt_init(MESHRT_BACKEND_MPI), MESHRT_SUCCESS)
      << meshrt_last_error();
  ASSERT_EQ(meshrt_init(MESHRT_BACKEND_AUTO), MESHRT_SUCCESS);
  // A host program's module (MESHRT_BACKEND_HOST) joins the CPU backend
  // that runs.
  ASSERT_EQ(meshrt_init(MESHRT_BACKEND_HOST), MESHRT_SUCCESS)
      << meshrt_last_error();
  EXPECT_EQ(meshrt_finalize(), MESHRT_SUCCESS);
  int64_t R = -1, S = -1;
  EXPECT_EQ(meshrt_world_rank(&R), MESHRT_SUCCESS);
  EXPECT_EQ(meshrt_world_size(&S), MESHRT_SUCCESS);
  EXPECT_EQ(R, 0);
  EXPECT_EQ(S, 1);
  // Asking for another backend while running is an error.
  EXPECT_EQ(meshrt_init(MESHRT_BACKEND_NCCL), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "already runs on the mpi backend"))
      << meshrt_last_error();
  EXPECT_EQ(meshrt_finalize(), MESHRT_SUCCESS);
  EXPECT_EQ(meshrt_is_initialized(), 1) << "inits nest";

  const int64_t Sizes[] = {1};
  const char *Names[] = {"x"};
  meshrt_mesh_t M;
  meshrt_comm_t C;
  ASSERT_EQ(meshrt_mesh_declare("m", 1, Sizes, Names, &M), MESHRT_SUCCESS);
  ASSERT_EQ(meshrt_comm_get_by_names(M, 1, Names, &C), MESHRT_SUCCESS);
  EXPECT_EQ(meshrt_finalize(), MESHRT_SUCCESS);
  EXPECT_EQ(meshrt_is_initialized(), 0);

  // Stale handles report "finalized" rather than touching freed memory.
  float X = 1;
  EXPECT_EQ(meshrt_all_reduce(C, &X, &X, 1, MESHRT_F32, MESHRT_SUM),
            MESHRT_ERROR_NOT_INITIALIZED);
  EXPECT_TRUE(contains(meshrt_last_error(), "finalized"));
  int64_t N;
  EXPECT_EQ(meshrt_mesh_ndims(M, &N), MESHRT_ERROR_NOT_INITIALIZED);
  meshrt_backend B;
  EXPECT_EQ(meshrt_comm_backend(C, &B), MESHRT_ERROR_NOT_INITIALIZED);

  // A new start is a new context: nothing declared, counters at zero.
  ASSERT_EQ(meshrt_init(MESHRT_BACKEND_MPI), MESHRT_SUCCESS);
  EXPECT_EQ(meshrt_mesh_lookup("m", &M), MESHRT_ERROR_UNKNOWN_MESH);
  meshrt_stats St;
  ASSERT_EQ(meshrt_get_stats(&St), MESHRT_SUCCESS);
  EXPECT_EQ(St.meshes, 0);
  EXPECT_EQ(St.communicators, 1);
}

TEST_F(CApi, ErrorPolicyAndMessages) {
  meshrt_set_error_policy(MESHRT_ERRORS_ABORT);
  EXPECT_EQ(meshrt_get_error_policy(), MESHRT_ERRORS_ABORT);
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  EXPECT_EQ(meshrt_get_error_policy(), MESHRT_ERRORS_RETURN);
  EXPECT_STREQ(meshrt_status_name(MESHRT_ERROR_UNKNOWN_AXIS),
               "MESHRT_ERROR_UNKNOWN_AXIS");
  EXPECT_STREQ(meshrt_status_name(MESHRT_SUCCESS), "MESHRT_SUCCESS");
  EXPECT_STREQ(meshrt_status_name(1234), "MESHRT_ERROR_?");
  const char *Names[] = {"f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8"};
  const int64_t Sizes[] = {2, 2, 4, 8, 1, 4, 8, 1};
  for (int T = 0; T < 8; ++T) {
    EXPECT_STREQ(meshrt_dtype_name(meshrt_dtype(T)), Names[T]);
    EXPECT_EQ(meshrt_dtype_size(meshrt_dtype(T)), Sizes[T]);
  }
  EXPECT_EQ(meshrt_dtype_size(meshrt_dtype(8)), 0);
}

TEST_F(CApi, ArgumentChecks) {
  ASSERT_EQ(meshrt_init(MESHRT_BACKEND_MPI), MESHRT_SUCCESS);
  meshrt_mesh_t M = nullptr;
  const int64_t Sizes[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const char *Names[17] = {"a", "b", "c", "d", "e", "f", "g", "h", "i",
                           "j", "k", "l", "m", "n", "o", "p", "q"};
  EXPECT_EQ(meshrt_mesh_declare("big", 17, Sizes, Names, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(meshrt_mesh_declare(nullptr, 1, Sizes, Names, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(meshrt_mesh_declare("m", 1, Sizes, Names, nullptr),
            MESHRT_ERROR_INVALID_ARGUMENT);
  const char *Same[] = {"a", "a"};
  EXPECT_EQ(meshrt_mesh_declare("dup", 2, Sizes, Same, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "axis name 'a' is used twice"))
      << meshrt_last_error();
  const char *Empty[] = {""};
  EXPECT_EQ(meshrt_mesh_declare("empty", 1, Sizes, Empty, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  // 16 axes is the limit and works.
  ASSERT_EQ(meshrt_mesh_declare("wide", 16, Sizes, Names, &M), MESHRT_SUCCESS)
      << meshrt_last_error();
  int64_t Axes[16];
  for (int I = 0; I < 16; ++I)
    Axes[I] = 15 - I;
  meshrt_comm_t C = nullptr;
  ASSERT_EQ(meshrt_comm_get(M, 16, Axes, &C), MESHRT_SUCCESS)
      << meshrt_last_error();
  int64_t Size = 0;
  EXPECT_EQ(meshrt_comm_size(C, &Size), MESHRT_SUCCESS);
  EXPECT_EQ(Size, 1);
  EXPECT_EQ(meshrt_comm_get(M, -1, Axes, &C), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(meshrt_comm_get(nullptr, 0, Axes, &C),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(meshrt_comm_world_rank(C, 1, &Size), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(meshrt_barrier(nullptr), MESHRT_ERROR_INVALID_ARGUMENT);
  void *Native = nullptr;
  EXPECT_EQ(meshrt_comm_native_handle(C, &Native), MESHRT_SUCCESS);
  EXPECT_NE(Native, nullptr);
  meshrt_backend B = MESHRT_BACKEND_AUTO;
  EXPECT_EQ(meshrt_comm_backend(C, &B), MESHRT_SUCCESS);
  EXPECT_EQ(B, MESHRT_BACKEND_MPI);
  EXPECT_EQ(meshrt_comm_backend(C, nullptr), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(meshrt_comm_backend(nullptr, &B), MESHRT_ERROR_INVALID_ARGUMENT);

  // Backends per mesh: AUTO everywhere is meshrt_mesh_declare; a value that
  // is not a backend, or ranks without a count, are errors.
  ASSERT_EQ(meshrt_mesh_declare_backends("auto", 1, Sizes, Names, 0, nullptr,
                                         MESHRT_BACKEND_AUTO, nullptr, &M),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  const int64_t First[] = {0};
  ASSERT_EQ(meshrt_comm_get(M, 1, First, &C), MESHRT_SUCCESS)
      << meshrt_last_error();
  EXPECT_EQ(meshrt_comm_backend(C, &B), MESHRT_SUCCESS);
  EXPECT_EQ(B, MESHRT_BACKEND_MPI);
  EXPECT_EQ(meshrt_mesh_declare_backends("bad", 1, Sizes, Names, 0, nullptr,
                                         meshrt_backend(9), nullptr, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "invalid backend 9 for the mesh"))
      << meshrt_last_error();
  const int64_t Rank0[] = {0};
  EXPECT_EQ(meshrt_mesh_declare_backends("no-count", 1, Sizes, Names, 0, Rank0,
                                         MESHRT_BACKEND_MPI, nullptr, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "nranks 0 is not in [1, 1]"))
      << meshrt_last_error();
  EXPECT_EQ(meshrt_mesh_declare_backends("m", 1, Sizes, Names, 0, nullptr,
                                         MESHRT_BACKEND_MPI, nullptr, nullptr),
            MESHRT_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApi, AutoBackendFollowsTheMachine) {
  ASSERT_EQ(meshrt_init(MESHRT_BACKEND_AUTO), MESHRT_SUCCESS)
      << meshrt_last_error();
  meshrt_backend B;
  ASSERT_EQ(meshrt_get_backend(&B), MESHRT_SUCCESS);
  const char *Env = std::getenv("MESHRT_BACKEND");
  if (!Env || !*Env || std::string(Env) == "auto")
    EXPECT_EQ(B, meshrt::cuda_available() ? MESHRT_BACKEND_NCCL
                                          : MESHRT_BACKEND_MPI);
}

TEST_F(CApi, TimeoutMustBeANumber) {
  setenv("MESHRT_TIMEOUT_S", "soon", 1);
  EXPECT_EQ(meshrt_init(MESHRT_BACKEND_MPI), MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "MESHRT_TIMEOUT_S='soon'"))
      << meshrt_last_error();
  setenv("MESHRT_TIMEOUT_S", "0", 1); // 0 disables the watchdog.
  EXPECT_EQ(meshrt_init(MESHRT_BACKEND_MPI), MESHRT_SUCCESS)
      << meshrt_last_error();
  unsetenv("MESHRT_TIMEOUT_S");
}

} // namespace
