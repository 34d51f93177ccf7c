//===- BackendOverrideTest.cpp - MPI and NCCL groups in one runtime -------===//
//
// Runs under mpirun against the emulated CUDA and NCCL (runtime/test/
// emulated), with MPI as the default backend. Checks PyTorch's
// backend_override: each dimension's group runs on the backend asked for
// (Group::backend, meshrt_comm_backend, and what only that backend does:
// NCCL refuses host buffers and bitwise reductions), the values of
// collectives on both kinds of group (expected members from BruteMesh), a
// group along dimensions on different backends, the communicator cache
// keyed on the backend, the other backend started lazily (and the default
// path starting nothing), the C ABI, and the errors: an unknown dimension,
// ranks that disagree, and NCCL that cannot start on some rank.
//
//===----------------------------------------------------------------------===//

#include "BruteForce.h"
#include "TestBuffers.h"
#include "TestErrors.h"

#include "meshrt/DeviceMesh.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>

using namespace meshrt;
using meshrt::test::BruteMesh;
using meshrt::test::Buffer;
using meshrt::test::contains;
using meshrt::test::errorOf;
using meshrt::test::worldRank;
using meshrt::test::worldSize;

namespace {

/// (dp, tp) for this world: (2, W / 2) from four ranks on, else (1, W).
std::vector<int64_t> dpTpShape() {
  int64_t W = worldSize();
  return W >= 4 ? std::vector<int64_t>{2, W / 2} : std::vector<int64_t>{1, W};
}

Backend otherThan(Backend B) {
  return B == Backend::MPI ? Backend::NCCL : Backend::MPI;
}

/// all_reduce (sum) of one int64 in the memory G's backend needs.
int64_t sumOver(const Group &G, int64_t V) {
  Buffer B(8, G.backend() == Backend::NCCL);
  B.upload(&V);
  G.all_reduce(B.get(), B.get(), 1, DType::I64);
  int64_t Out;
  std::memcpy(&Out, B.download().data(), 8);
  return Out;
}

/// all_gather of one int64 per member, in the memory G's backend needs.
std::vector<int64_t> gatherOver(const Group &G, int64_t V) {
  bool Device = G.backend() == Backend::NCCL;
  Buffer Send(8, Device), Recv(size_t(8 * G.size()), Device);
  Send.upload(&V);
  G.all_gather(Send.get(), Recv.get(), 1, DType::I64);
  std::vector<unsigned char> Bytes = Recv.download();
  std::vector<int64_t> Out(size_t(G.size()));
  std::memcpy(Out.data(), Bytes.data(), Bytes.size());
  return Out;
}

int64_t sum(const std::vector<int64_t> &V) {
  int64_t S = 0;
  for (int64_t X : V)
    S += X;
  return S;
}

/// Checks that G runs on `Want` by what only that backend does, and that
/// its collectives give the right values for members `Members`.
void expectGroupOn(const Group &G, Backend Want,
                   const std::vector<int64_t> &Members) {
  EXPECT_EQ(G.backend(), Want) << G.name();
  meshrt_backend C = MESHRT_BACKEND_AUTO;
  EXPECT_EQ(meshrt_comm_backend(G.handle(), &C), MESHRT_SUCCESS);
  EXPECT_EQ(C, meshrt_backend(Want)) << G.name();
  EXPECT_EQ(G.members(), Members) << G.name();
  int64_t R = worldRank();
  EXPECT_EQ(sumOver(G, R), sum(Members)) << G.name();
  EXPECT_EQ(gatherOver(G, R * 10), [&] {
    std::vector<int64_t> Tens;
    for (int64_t M : Members)
      Tens.push_back(M * 10);
    return Tens;
  }()) << G.name();
  // Only NCCL refuses host buffers and bitwise reductions.
  int64_t Host = 1;
  auto [Code, Msg] = errorOf(
      [&] { G.all_reduce(&Host, &Host, 1, DType::I64, ReduceOp::BitOr); });
  if (Want == Backend::NCCL) {
    EXPECT_EQ(Code, MESHRT_ERROR_UNSUPPORTED) << Msg;
    EXPECT_TRUE(contains(Msg, "not supported by the NCCL backend")) << Msg;
    std::tie(Code, Msg) =
        errorOf([&] { G.all_reduce(&Host, &Host, 1, DType::I64); });
    EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT) << Msg;
    EXPECT_TRUE(contains(Msg, "buffer is host memory; the NCCL backend needs "
                              "device"))
        << Msg;
  } else {
    EXPECT_EQ(Code, MESHRT_SUCCESS) << Msg;
    EXPECT_EQ(Host, 1);
  }
}

/// The world's (dp, tp) groups of this rank, from BruteMesh.
struct Expected {
  std::vector<int64_t> Dp, Tp, Both;
  Expected() {
    BruteMesh B(dpTpShape());
    int64_t R = worldRank();
    Dp = B.members(R, {0});
    Tp = B.members(R, {1});
    Both = B.members(R, {0, 1});
  }
};

TEST(BackendOverride, DefaultPathIsUnchanged) {
  Runtime Rt(Backend::MPI);
  DeviceMesh M = Rt.init_device_mesh("cpu", dpTpShape(), {"dp", "tp"});
  Expected E;
  EXPECT_EQ(M.device_type(), "cpu");
  expectGroupOn(M.get_group("dp"), Backend::MPI, E.Dp);
  expectGroupOn(M.get_group("tp"), Backend::MPI, E.Tp);
  expectGroupOn(M.get_group({"dp", "tp"}), Backend::MPI, E.Both);
  // An empty override is no override. Nothing started NCCL: one world.
  DeviceMesh Same =
      Rt.init_device_mesh("auto", dpTpShape(), {"dp", "tp"}, BackendOverride{});
  EXPECT_EQ(Same.get_group("tp").native_handle(),
            M.get_group("tp").native_handle());
  Stats S = Rt.stats();
  EXPECT_EQ(S.communicators, S.splits + 1);
  EXPECT_NE(M.to_string().find("'cpu'"), std::string::npos) << M.to_string();
  Rt.finalize();
}

TEST(BackendOverride, EachDimensionRunsOnTheBackendAskedFor) {
  Expected E;
  for (Backend Default : {Backend::MPI, Backend::NCCL}) {
    Backend Other = otherThan(Default);
    Runtime Rt(Default);
    // By name, as PyTorch's backend_override={"tp": ...}.
    DeviceMesh M =
        Rt.init_device_mesh("auto", dpTpShape(), {"dp", "tp"}, {{"tp", Other}});
    EXPECT_EQ(M.device_type(), Default == Backend::NCCL ? "cuda" : "cpu");
    expectGroupOn(M.get_group("dp"), Default, E.Dp);
    expectGroupOn(M.get_group("tp"), Other, E.Tp);
    expectGroupOn(M.get_group(1), Other, E.Tp);
    expectGroupOn(M["tp"].get_group(), Other, E.Tp);
    // Dimensions on different backends: the mesh's, for a group along both
    // and for a flattened one.
    expectGroupOn(M.get_group({"tp", "dp"}), Default,
                  BruteMesh(dpTpShape()).members(worldRank(), {1, 0}));
    expectGroupOn(M.flatten("flat").get_group(), Default, E.Both);
    // Both backends' worlds are communicators; the other one started with
    // the first group on it.
    Stats S = Rt.stats();
    EXPECT_EQ(S.communicators, S.splits + 2);
    Rt.finalize();
  }
}

TEST(BackendOverride, ByNumberAndByDeviceType) {
  Expected E;
  Runtime Rt(Backend::MPI);
  // The device type picks the mesh's backend; numbers count from the end.
  DeviceMesh Cuda = Rt.init_device_mesh("cuda", dpTpShape(), {"dp", "tp"});
  EXPECT_EQ(Cuda.device_type(), "cuda");
  expectGroupOn(Cuda.get_group("dp"), Backend::NCCL, E.Dp);
  expectGroupOn(Cuda.get_group("tp"), Backend::NCCL, E.Tp);
  expectGroupOn(Cuda.get_group({"dp", "tp"}), Backend::NCCL, E.Both);
  EXPECT_NE(Cuda.to_string().find("'cuda'"), std::string::npos);
  DeviceMesh Mixed = Rt.init_device_mesh(
      "cuda", dpTpShape(), {"dp", "tp"},
      {{0, Backend::MPI}, {-1, Backend::Auto}}, "by-number");
  expectGroupOn(Mixed.get_group("dp"), Backend::MPI, E.Dp);
  expectGroupOn(Mixed.get_group("tp"), Backend::NCCL, E.Tp);
  // Unflattened dimensions are parts of the axes they came from (a group of
  // one made by unflatten spans no axis and gets the mesh's).
  if (dpTpShape()[0] > 1) {
    DeviceMesh Split = Mixed.unflatten("dp", {dpTpShape()[0], 1}, {"a", "b"});
    expectGroupOn(Split.get_group("a"), Backend::MPI, E.Dp);
    expectGroupOn(Split.get_group("b"), Backend::NCCL, {worldRank()});
  }
  // A mesh over a rank array: the world reversed.
  std::vector<int64_t> Reversed;
  for (int64_t Q = worldSize() - 1; Q >= 0; --Q)
    Reversed.push_back(Q);
  DeviceMesh Rev = Rt.device_mesh("cpu", Reversed, {worldSize()}, {"w"},
                                  {{"w", Backend::NCCL}});
  expectGroupOn(Rev.get_group("w"), Backend::NCCL, Reversed);
  Rt.finalize();
}

TEST(BackendOverride, CacheKeysOnTheBackend) {
  Runtime Rt(Backend::MPI);
  std::vector<int64_t> Shape = dpTpShape();
  DeviceMesh Plain = Rt.init_device_mesh("cpu", Shape, {"dp", "tp"}, "plain");
  int64_t Before = Rt.stats().splits;
  // The same grouping on NCCL is another communicator: one more split for
  // tp unless the world serves it (then the NCCL world), none for dp.
  DeviceMesh A = Rt.init_device_mesh("cpu", Shape, {"dp", "tp"},
                                     {{"tp", Backend::NCCL}}, "a");
  bool TpIsWorld = Shape[0] == 1;
  EXPECT_EQ(Rt.stats().splits, Before + (TpIsWorld ? 0 : 1));
  EXPECT_NE(A.get_group("tp").native_handle(),
            Plain.get_group("tp").native_handle());
  EXPECT_EQ(A.get_group("dp").native_handle(),
            Plain.get_group("dp").native_handle());
  // Another mesh asking for the same: every communicator is reused.
  DeviceMesh B = Rt.init_device_mesh("cpu", Shape, {"dp", "tp"},
                                     {{"tp", Backend::NCCL}}, "b");
  EXPECT_EQ(Rt.stats().splits, Before + (TpIsWorld ? 0 : 1));
  EXPECT_EQ(B.get_group("tp").native_handle(),
            A.get_group("tp").native_handle());
  // On NCCL along both dimensions, its world in world order serves the
  // whole mesh, next to the MPI world.
  DeviceMesh C = Rt.init_device_mesh("cuda", Shape, {"dp", "tp"}, "c");
  EXPECT_EQ(C.get_group({"dp", "tp"}).backend(), Backend::NCCL);
  EXPECT_NE(C.get_group({"dp", "tp"}).native_handle(),
            Plain.get_group({"dp", "tp"}).native_handle());
  EXPECT_EQ(C.get_group("tp").native_handle(),
            A.get_group("tp").native_handle());
  Stats S = Rt.stats();
  EXPECT_EQ(S.communicators, S.splits + 2);
  Rt.finalize();
}

TEST(BackendOverride, CAbiDeclaresBackendsPerAxis) {
  std::vector<int64_t> Shape = dpTpShape();
  const char *Names[] = {"dp", "tp"};
  const meshrt_backend Axes[] = {MESHRT_BACKEND_AUTO, MESHRT_BACKEND_NCCL};
  meshrt_mesh_t M = nullptr;
  ASSERT_EQ(meshrt_mesh_declare_backends("c-mixed", 2, Shape.data(), Names, 0,
                                         nullptr, MESHRT_BACKEND_MPI, Axes, &M),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  Expected E;
  auto Check = [&](std::vector<int64_t> AxisList, meshrt_backend Want,
                   const std::vector<int64_t> &Members) {
    meshrt_comm_t C = nullptr;
    ASSERT_EQ(meshrt_comm_get(M, int64_t(AxisList.size()), AxisList.data(), &C),
              MESHRT_SUCCESS)
        << meshrt_last_error();
    meshrt_backend B = MESHRT_BACKEND_AUTO;
    EXPECT_EQ(meshrt_comm_backend(C, &B), MESHRT_SUCCESS);
    EXPECT_EQ(B, Want);
    int64_t Size = 0;
    meshrt_comm_size(C, &Size);
    Buffer Buf(8, Want == MESHRT_BACKEND_NCCL);
    int64_t R = worldRank();
    Buf.upload(&R);
    EXPECT_EQ(
        meshrt_all_reduce(C, Buf.get(), Buf.get(), 1, MESHRT_I64, MESHRT_SUM),
        MESHRT_SUCCESS)
        << meshrt_last_error();
    int64_t Out;
    std::memcpy(&Out, Buf.download().data(), 8);
    EXPECT_EQ(Out, sum(Members));
    EXPECT_EQ(Size, int64_t(Members.size()));
  };
  Check({0}, MESHRT_BACKEND_MPI, E.Dp);
  Check({1}, MESHRT_BACKEND_NCCL, E.Tp);
  Check({0, 1}, MESHRT_BACKEND_MPI, E.Both);
  Check({}, MESHRT_BACKEND_MPI, {worldRank()});
  // The same declaration again is the same mesh; other backends are not.
  meshrt_mesh_t Again = nullptr;
  EXPECT_EQ(meshrt_mesh_declare_backends("c-mixed", 2, Shape.data(), Names, 0,
                                         nullptr, MESHRT_BACKEND_AUTO, Axes,
                                         &Again),
            MESHRT_SUCCESS);
  EXPECT_EQ(Again, M);
  EXPECT_EQ(meshrt_mesh_declare_backends("c-mixed", 2, Shape.data(), Names, 0,
                                         nullptr, MESHRT_BACKEND_MPI, nullptr,
                                         &Again),
            MESHRT_ERROR_MESH_MISMATCH);
  EXPECT_TRUE(contains(meshrt_last_error(),
                       "is already declared with shape " +
                           MeshLayout::formatShape(Shape) +
                           " and axes (dp, tp) on backend mpi with tp=nccl; "
                           "it cannot be declared again with shape"))
      << meshrt_last_error();
  // Over a rank array, the whole mesh on NCCL.
  std::vector<int64_t> Ranks;
  for (int64_t Q = 0; Q < worldSize(); ++Q)
    Ranks.push_back(Q);
  ASSERT_EQ(meshrt_mesh_declare_backends("c-ranks", 2, Shape.data(), Names,
                                         int64_t(Ranks.size()), Ranks.data(),
                                         MESHRT_BACKEND_NCCL, nullptr, &M),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  Check({1}, MESHRT_BACKEND_NCCL, E.Tp);
  // Not a backend: an error on every rank, naming the axis.
  const meshrt_backend Bad[] = {MESHRT_BACKEND_MPI, meshrt_backend(7)};
  EXPECT_EQ(meshrt_mesh_declare_backends("c-bad", 2, Shape.data(), Names, 0,
                                         nullptr, MESHRT_BACKEND_AUTO, Bad, &M),
            MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(meshrt_last_error(), "invalid backend 7 for axis 'tp'"))
      << meshrt_last_error();
}

TEST(BackendOverride, DeviceBuffersOnAnMpiGroupAreStaged) {
  Runtime Rt(Backend::MPI);
  DeviceMesh M = Rt.init_device_mesh("cpu", dpTpShape(), {"dp", "tp"},
                                     {{"tp", Backend::NCCL}});
  Expected E;
  int64_t R = worldRank();
  // Device buffers on both groups, stream-ordered: NCCL enqueues, MPI stages
  // through host memory; one synchronisation at the end.
  Buffer OnMpi(8, true), OnNccl(8, true);
  OnMpi.upload(&R);
  OnNccl.upload(&R);
  Group Dp = M.get_group("dp"), Tp = M.get_group("tp");
  ASSERT_EQ(meshrt_all_reduce_on_stream(Dp.handle(), OnMpi.get(), OnMpi.get(),
                                        1, MESHRT_I64, MESHRT_SUM, nullptr),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  ASSERT_EQ(meshrt_all_reduce_on_stream(Tp.handle(), OnNccl.get(), OnNccl.get(),
                                        1, MESHRT_I64, MESHRT_SUM, nullptr),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  ASSERT_EQ(meshrt_stream_synchronize(nullptr), MESHRT_SUCCESS)
      << meshrt_last_error();
  int64_t Out;
  std::memcpy(&Out, OnMpi.download().data(), 8);
  EXPECT_EQ(Out, sum(E.Dp));
  std::memcpy(&Out, OnNccl.download().data(), 8);
  EXPECT_EQ(Out, sum(E.Tp));
  Rt.finalize();
}

TEST(BackendOverride, ErrorsAreThrownOnEveryRank) {
  int64_t W = worldSize(), R = worldRank();
  Runtime Rt(Backend::MPI);
  std::vector<int64_t> Shape = dpTpShape();
  auto [Code, Msg] = errorOf([&] {
    Rt.init_device_mesh("cpu", Shape, {"dp", "tp"}, {{"tq", Backend::NCCL}},
                        "unknown");
  });
  EXPECT_EQ(Code, MESHRT_ERROR_UNKNOWN_AXIS);
  EXPECT_TRUE(contains(Msg, "mesh 'unknown': backend_override: the mesh has "
                            "no dimension 'tq'; valid dimensions: dp, tp"))
      << Msg;
  std::tie(Code, Msg) = errorOf([&] {
    Rt.init_device_mesh("cpu", Shape, {"dp", "tp"}, {{2, Backend::NCCL}},
                        "range");
  });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(Msg, "backend_override: dimension 2 is out of range "
                            "for a 2-D mesh (valid: -2 to 1)"))
      << Msg;
  std::tie(Code, Msg) = errorOf([&] {
    Rt.init_device_mesh("cpu", Shape, {"dp", "tp"},
                        {{"tp", Backend::NCCL}, {1, Backend::MPI}}, "twice");
  });
  EXPECT_EQ(Code, MESHRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(Msg, "backend_override: dimension 'tp' is given twice"))
      << Msg;
  // Ranks that disagree on a backend: every rank fails, quoting both.
  if (W >= 2) {
    BackendOverride Mine;
    if (R == W - 1)
      Mine = {{"tp", Backend::NCCL}};
    std::tie(Code, Msg) = errorOf([&] {
      Rt.init_device_mesh("cpu", Shape, {"dp", "tp"}, Mine, "disagree");
    });
    EXPECT_EQ(Code, MESHRT_ERROR_MESH_MISMATCH);
    std::string Decl = "'disagree' with shape " +
                       MeshLayout::formatShape(Shape) + " and axes (dp, tp)";
    EXPECT_TRUE(contains(Msg, "rank 0 declared " + Decl + " but rank " +
                                  std::to_string(W - 1) + " declared " + Decl +
                                  " on backend mpi with tp=nccl"))
        << Msg;
  }
  // The runtime is still usable, and started no NCCL for these.
  Stats S = Rt.stats();
  EXPECT_EQ(S.communicators, S.splits + 1);
  DeviceMesh M = Rt.init_device_mesh("cpu", Shape, {"dp", "tp"},
                                     {{"tp", Backend::NCCL}}, "after");
  expectGroupOn(M.get_group("tp"), Backend::NCCL, Expected().Tp);
  Rt.finalize();
}

/// Run with NCCL missing on some ranks (MESHRT_NCCL_LIBRARY pointing
/// nowhere): excluded from the other runs.
TEST(BackendOverrideNoNccl, NcclThatCannotStartFailsOnEveryRank) {
  int64_t W = worldSize();
  // The first rank that lacks NCCL, as every rank must report it.
  int64_t Mine = cuda_available() ? W : worldRank(), First = W;
  MPI_Allreduce(&Mine, &First, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  ASSERT_LT(First, W) << "run this test with NCCL missing on some rank";
#if MESHRT_TEST_CUDA
  const int Status = MESHRT_ERROR_BACKEND;
  const std::string Why = "no CUDA device is visible: cannot load libnccl "
                          "(MESHRT_NCCL_LIBRARY=/nonexistent/libnccl.so.2: ";
#else
  const int Status = MESHRT_ERROR_UNSUPPORTED;
  const std::string Why = "this meshrt was built without the NCCL backend";
#endif
  std::string On = ": on rank " + std::to_string(First) + ": " + Why;
  Runtime Rt(Backend::MPI);
  std::vector<int64_t> Shape = dpTpShape();
  auto [Code, Msg] = errorOf([&] {
    Rt.init_device_mesh("cpu", Shape, {"dp", "tp"}, {{"tp", Backend::NCCL}},
                        "needs-nccl");
  });
  EXPECT_EQ(Code, Status);
  EXPECT_TRUE(contains(
      Msg,
      "cannot start the nccl backend for mesh 'needs-nccl' axes [tp]" + On))
      << Msg;
  std::tie(Code, Msg) =
      errorOf([&] { Rt.init_device_mesh("cuda", Shape, {"dp", "tp"}, "gpu"); });
  EXPECT_EQ(Code, Status);
  EXPECT_TRUE(contains(
      Msg, "cannot start the nccl backend for mesh 'gpu' axes [dp]" + On))
      << Msg;
  // The C ABI: the communicator request fails, the MPI ones work.
  const char *Names[] = {"dp", "tp"};
  const meshrt_backend Axes[] = {MESHRT_BACKEND_MPI, MESHRT_BACKEND_NCCL};
  meshrt_mesh_t M = nullptr;
  ASSERT_EQ(meshrt_mesh_declare_backends("c-needs-nccl", 2, Shape.data(), Names,
                                         0, nullptr, MESHRT_BACKEND_AUTO, Axes,
                                         &M),
            MESHRT_SUCCESS)
      << meshrt_last_error();
  meshrt_comm_t C = nullptr;
  const int64_t Tp = 1, Dp = 0;
  EXPECT_EQ(meshrt_comm_get(M, 1, &Tp, &C), Status);
  EXPECT_TRUE(contains(meshrt_last_error(),
                       "meshrt_comm_get: cannot start the nccl backend for "
                       "mesh 'c-needs-nccl' axes [tp]" +
                           On))
      << meshrt_last_error();
  ASSERT_EQ(meshrt_comm_get(M, 1, &Dp, &C), MESHRT_SUCCESS);
  int64_t V = 1, Out = 0;
  EXPECT_EQ(meshrt_all_reduce(C, &V, &Out, 1, MESHRT_I64, MESHRT_SUM),
            MESHRT_SUCCESS);
  EXPECT_EQ(Out, Shape[0]);
  // The runtime goes on without NCCL.
  DeviceMesh Cpu = Rt.init_device_mesh("cpu", Shape, {"dp", "tp"}, "cpu");
  expectGroupOn(Cpu.get_group("tp"), Backend::MPI, Expected().Tp);
  Stats S = Rt.stats();
  EXPECT_EQ(S.communicators, S.splits + 1);
  Rt.finalize();
}

} // namespace
