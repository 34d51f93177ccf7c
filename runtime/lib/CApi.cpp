//===- CApi.cpp - The meshrt_* C ABI --------------------------------------===//
//
// Thin wrappers over the default Context: unwrap handles, run the C++ code,
// turn exceptions into status codes plus a thread-local message, and apply
// the error policy (abort the job with a clear message, or return).
//
//===----------------------------------------------------------------------===//

#include "CApi.h"
#include "Abort.h"
#include "Blas.h"
#include "Context.h"
#include "Gpu.h"
#include "GpuGemm.h"

#include "meshrt/meshrt.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <strings.h>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

thread_local std::string LastError;

meshrt_error_policy policyFromEnv() {
  const char *E = std::getenv("MESHRT_ERROR_POLICY");
  if (E && !strcasecmp(E, "return"))
    return MESHRT_ERRORS_RETURN;
  return MESHRT_ERRORS_ABORT;
}

std::atomic<int> &policy() {
  static std::atomic<int> P{int(policyFromEnv())};
  return P;
}

Mesh *unwrap(meshrt_mesh_t M) { return reinterpret_cast<Mesh *>(M); }
meshrt_mesh_t wrap(Mesh *M) { return reinterpret_cast<meshrt_mesh_t>(M); }
Comm *unwrap(meshrt_comm_t C) { return reinterpret_cast<Comm *>(C); }
meshrt_comm_t wrap(Comm *C) { return reinterpret_cast<meshrt_comm_t>(C); }

template <typename F> meshrt_status guarded(const char *Fn, F &&Body) {
  return guardedCall(Fn, std::forward<F>(Body));
}

std::shared_ptr<Context> context() {
  std::shared_ptr<Context> C = defaultContext();
  if (!C || C->finalized())
    throw Error(MESHRT_ERROR_NOT_INITIALIZED,
                "the runtime is not initialized (call meshrt_init first)");
  return C;
}

[[noreturn]] void nullArgument(const char *What) {
  throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(What) + " is null");
}

template <typename T> inline void need(T *P, const char *What) {
  if (__builtin_expect(!P, 0))
    nullArgument(What);
}

void nonNegative(int64_t V, const char *What) {
  if (V < 0)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(What) + " is " +
                                                   std::to_string(V) +
                                                   "; it must not be negative");
}

Comm &comm(meshrt_comm_t C) {
  need(C, "comm");
  if (__builtin_expect(!handles::isLive(C), 0))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "comm is not a communicator of this runtime (a garbage handle, "
                "or one whose mesh or runtime is gone)");
  return *unwrap(C);
}

Mesh &mesh(meshrt_mesh_t M) {
  need(M, "mesh");
  if (__builtin_expect(!handles::isLive(M), 0))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "mesh is not a mesh of this runtime (a garbage handle, or one "
                "whose runtime is gone)");
  Mesh &R = *unwrap(M);
  R.context().checkAlive("use a mesh");
  return R;
}

int64_t checkedAxis(Mesh &M, int64_t Axis) {
  if (Axis < 0 || Axis >= M.layout().ndims())
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "axis " + std::to_string(Axis) + " is out of range: mesh '" +
                    M.name() + "' has " + std::to_string(M.layout().ndims()) +
                    " axes");
  return Axis;
}

} // namespace

meshrt_status meshrt::detail::reportCallFailure(const char *Fn, meshrt_status S,
                                                const char *Msg) {
  LastError = std::string(Fn) + ": " + Msg;
  if (policy().load(std::memory_order_relaxed) == MESHRT_ERRORS_RETURN)
    return S;
  int64_t Rank = processRank();
  std::fflush(stderr);
  writeStderr("meshrt: rank " + std::to_string(Rank) + ": error: " + LastError +
              " [" + meshrt_status_name(S) + "]\n");
  abortJob(1);
}

extern "C" {

const char *meshrt_get_version(int32_t *Major, int32_t *Minor, int32_t *Patch) {
  if (Major)
    *Major = MESHRT_VERSION_MAJOR;
  if (Minor)
    *Minor = MESHRT_VERSION_MINOR;
  if (Patch)
    *Patch = MESHRT_VERSION_PATCH;
  return MESHRT_VERSION_STRING;
}

meshrt_status meshrt_check_version(int32_t Major, int32_t Minor) {
  return guarded("meshrt_check_version", [&] {
    if (Major == MESHRT_VERSION_MAJOR && Minor == MESHRT_VERSION_MINOR)
      return;
    // The file this function was loaded from: the library a user must
    // replace (or the executable, for a static libmeshrt).
    Dl_info Info;
    std::string File = "unknown file";
    if (dladdr(reinterpret_cast<void *>(&meshrt_check_version), &Info) &&
        Info.dli_fname && *Info.dli_fname)
      File = Info.dli_fname;
    std::string Wanted = std::to_string(Major) + "." + std::to_string(Minor);
    std::string Loaded = MESHRT_VERSION_STRING " (" + File + ")";
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                "this program was compiled by mesh " + Wanted +
                    " for libmeshrt " + Wanted +
                    ", but the libmeshrt loaded is " + Loaded +
                    "; rebuild the program or use the matching library");
  });
}

meshrt_status meshrt_init(meshrt_backend Backend) {
  return guarded("meshrt_init",
                 [&] { acquireDefaultContext(Backend, /*CountInit=*/true); });
}

meshrt_status meshrt_finalize(void) {
  return guarded("meshrt_finalize", [] {
    if (!defaultContext())
      throw Error(MESHRT_ERROR_NOT_INITIALIZED,
                  "the runtime is not initialized");
    releaseDefaultContext();
  });
}

int meshrt_is_initialized(void) {
  std::shared_ptr<Context> C = defaultContext();
  return C && !C->finalized();
}

meshrt_status meshrt_get_backend(meshrt_backend *Out) {
  return guarded("meshrt_get_backend", [&] {
    need(Out, "out");
    *Out = context()->backendKind();
  });
}

meshrt_status meshrt_world_rank(int64_t *Out) {
  return guarded("meshrt_world_rank", [&] {
    need(Out, "out");
    *Out = context()->worldRank();
  });
}

meshrt_status meshrt_world_size(int64_t *Out) {
  return guarded("meshrt_world_size", [&] {
    need(Out, "out");
    *Out = context()->worldSize();
  });
}

void meshrt_set_error_policy(meshrt_error_policy P) {
  policy().store(P == MESHRT_ERRORS_RETURN ? MESHRT_ERRORS_RETURN
                                           : MESHRT_ERRORS_ABORT);
}

meshrt_error_policy meshrt_get_error_policy(void) {
  return meshrt_error_policy(policy().load());
}

const char *meshrt_last_error(void) { return LastError.c_str(); }

const char *meshrt_status_name(int S) {
  switch (S) {
  case MESHRT_SUCCESS:
    return "MESHRT_SUCCESS";
  case MESHRT_ERROR_INVALID_ARGUMENT:
    return "MESHRT_ERROR_INVALID_ARGUMENT";
  case MESHRT_ERROR_NOT_INITIALIZED:
    return "MESHRT_ERROR_NOT_INITIALIZED";
  case MESHRT_ERROR_WORLD_SIZE:
    return "MESHRT_ERROR_WORLD_SIZE";
  case MESHRT_ERROR_UNKNOWN_AXIS:
    return "MESHRT_ERROR_UNKNOWN_AXIS";
  case MESHRT_ERROR_UNKNOWN_MESH:
    return "MESHRT_ERROR_UNKNOWN_MESH";
  case MESHRT_ERROR_MESH_MISMATCH:
    return "MESHRT_ERROR_MESH_MISMATCH";
  case MESHRT_ERROR_UNSUPPORTED:
    return "MESHRT_ERROR_UNSUPPORTED";
  case MESHRT_ERROR_BACKEND:
    return "MESHRT_ERROR_BACKEND";
  case MESHRT_ERROR_TIMEOUT:
    return "MESHRT_ERROR_TIMEOUT";
  case MESHRT_ERROR_COLLECTIVE_MISMATCH:
    return "MESHRT_ERROR_COLLECTIVE_MISMATCH";
  case MESHRT_ERROR_NOT_MEMBER:
    return "MESHRT_ERROR_NOT_MEMBER";
  default:
    return "MESHRT_ERROR_?";
  }
}

const char *meshrt_dtype_name(meshrt_dtype T) { return dtypeName(T); }

int64_t meshrt_dtype_size(meshrt_dtype T) { return dtypeSize(T); }

meshrt_status meshrt_get_stats(meshrt_stats *Out) {
  return guarded("meshrt_get_stats", [&] {
    need(Out, "out");
    *Out = context()->stats();
  });
}

} // extern "C"

namespace {
/// meshrt_mesh_declare, meshrt_mesh_declare_ranks (`Explicit`) and
/// meshrt_mesh_declare_backends. Arguments that cannot be read are errors on
/// this rank alone (nothing to compare); the rest is checked by the
/// collective declaration.
meshrt_mesh_t declare(const char *Name, int64_t NDims, const int64_t *Sizes,
                      const char *const *AxisNames, bool Explicit,
                      int64_t NRanks, const int64_t *Ranks,
                      const MeshBackends &Backends = {}) {
  need(Name, "name");
  if (NDims < 0 || NDims > MeshLayout::kMaxDims)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "mesh '" + std::string(Name) + "': ndims " +
                    std::to_string(NDims) + " is not in [0, " +
                    std::to_string(MeshLayout::kMaxDims) + "]");
  if (NDims > 0) {
    need(Sizes, "sizes");
    need(AxisNames, "axis_names");
  }
  std::vector<int64_t> S(Sizes, Sizes + NDims);
  std::vector<std::string> A;
  for (int64_t I = 0; I < NDims; ++I)
    A.push_back(AxisNames[I] ? AxisNames[I] : "");
  std::shared_ptr<Context> C = context();
  if (!Explicit)
    return wrap(&C->declareMesh(Name, S, A, nullptr, std::nullopt, Backends));
  // A bad count fails the collective declaration on every rank.
  std::optional<Error> Bad;
  std::vector<int64_t> R;
  if (NRanks < 1 || NRanks > C->worldSize())
    Bad = Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "nranks " + std::to_string(NRanks) + " is not in [1, " +
                    std::to_string(C->worldSize()) + "] (the world size)");
  else {
    need(Ranks, "ranks");
    R.assign(Ranks, Ranks + NRanks);
  }
  if (Bad)
    R.push_back(0); // Any rank: the declaration fails with Bad.
  return wrap(&C->declareMesh(Name, S, A, &R, Bad, Backends));
}
} // namespace

extern "C" {

meshrt_status meshrt_mesh_declare(const char *Name, int64_t NDims,
                                  const int64_t *Sizes,
                                  const char *const *AxisNames,
                                  meshrt_mesh_t *Out) {
  return guarded("meshrt_mesh_declare", [&] {
    need(Out, "out");
    *Out = declare(Name, NDims, Sizes, AxisNames, false, 0, nullptr);
  });
}

meshrt_status meshrt_mesh_declare_ranks(const char *Name, int64_t NDims,
                                        const int64_t *Sizes,
                                        const char *const *AxisNames,
                                        int64_t NRanks, const int64_t *Ranks,
                                        meshrt_mesh_t *Out) {
  return guarded("meshrt_mesh_declare_ranks", [&] {
    need(Out, "out");
    *Out = declare(Name, NDims, Sizes, AxisNames, true, NRanks, Ranks);
  });
}

meshrt_status meshrt_mesh_declare_backends(const char *Name, int64_t NDims,
                                           const int64_t *Sizes,
                                           const char *const *AxisNames,
                                           int64_t NRanks, const int64_t *Ranks,
                                           meshrt_backend Backend,
                                           const meshrt_backend *AxisBackends,
                                           meshrt_mesh_t *Out) {
  return guarded("meshrt_mesh_declare_backends", [&] {
    need(Out, "out");
    MeshBackends B{Backend, {}};
    if (AxisBackends && NDims > 0 && NDims <= MeshLayout::kMaxDims)
      B.Axes.assign(AxisBackends, AxisBackends + NDims);
    *Out = declare(Name, NDims, Sizes, AxisNames, Ranks || NRanks != 0, NRanks,
                   Ranks, B);
  });
}

meshrt_status meshrt_mesh_is_member(meshrt_mesh_t M, int64_t *Out) {
  return guarded("meshrt_mesh_is_member", [&] {
    need(Out, "out");
    *Out = mesh(M).isMember() ? 1 : 0;
  });
}

meshrt_status meshrt_mesh_world_rank(meshrt_mesh_t M, int64_t Index,
                                     int64_t *Out) {
  return guarded("meshrt_mesh_world_rank", [&] {
    need(Out, "out");
    Mesh &R = mesh(M);
    int64_t N = int64_t(R.ranks().size());
    if (Index < 0 || Index >= N)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "index " + std::to_string(Index) +
                      " is out of range: mesh '" + R.name() + "' has " +
                      std::to_string(N) + " positions");
    *Out = R.ranks()[size_t(Index)];
  });
}

meshrt_status meshrt_mesh_lookup(const char *Name, meshrt_mesh_t *Out) {
  return guarded("meshrt_mesh_lookup", [&] {
    need(Name, "name");
    need(Out, "out");
    Mesh *M = context()->findMesh(Name);
    if (!M)
      throw Error(MESHRT_ERROR_UNKNOWN_MESH,
                  "no mesh called '" + std::string(Name) + "' was declared");
    *Out = wrap(M);
  });
}

meshrt_status meshrt_mesh_ndims(meshrt_mesh_t M, int64_t *Out) {
  return guarded("meshrt_mesh_ndims", [&] {
    need(Out, "out");
    *Out = mesh(M).layout().ndims();
  });
}

meshrt_status meshrt_mesh_axis_index(meshrt_mesh_t M, const char *Name,
                                     int64_t *Out) {
  return guarded("meshrt_mesh_axis_index", [&] {
    need(Name, "axis_name");
    need(Out, "out");
    *Out = mesh(M).axisIndex(Name);
  });
}

meshrt_status meshrt_mesh_axis_size(meshrt_mesh_t M, int64_t Axis,
                                    int64_t *Out) {
  return guarded("meshrt_mesh_axis_size", [&] {
    need(Out, "out");
    Mesh &R = mesh(M);
    *Out = R.layout().shape()[size_t(checkedAxis(R, Axis))];
  });
}

meshrt_status meshrt_mesh_coordinate(meshrt_mesh_t M, int64_t Axis,
                                     int64_t *Out) {
  return guarded("meshrt_mesh_coordinate", [&] {
    need(Out, "out");
    Mesh &R = mesh(M);
    int64_t A = checkedAxis(R, Axis);
    if (!R.isMember())
      throw Error(MESHRT_ERROR_NOT_MEMBER,
                  R.notMemberMessage(R.context().worldRank()) +
                      ", so it has no coordinate");
    *Out = R.coordinates()[size_t(A)];
  });
}

meshrt_status meshrt_comm_get(meshrt_mesh_t M, int64_t NAxes,
                              const int64_t *Axes, meshrt_comm_t *Out) {
  return guarded("meshrt_comm_get", [&] {
    need(Out, "out");
    Mesh &R = mesh(M);
    if (NAxes < 0 || NAxes > R.layout().ndims())
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "naxes " + std::to_string(NAxes) + " is not in [0, " +
                      std::to_string(R.layout().ndims()) + "] for mesh '" +
                      R.name() + "'");
    if (NAxes > 0)
      need(Axes, "axes");
    std::vector<int64_t> A(Axes, Axes + NAxes);
    *Out = wrap(&R.context().getComm(R, A));
  });
}

meshrt_status meshrt_comm_get_by_names(meshrt_mesh_t M, int64_t NAxes,
                                       const char *const *Names,
                                       meshrt_comm_t *Out) {
  return guarded("meshrt_comm_get_by_names", [&] {
    need(Out, "out");
    Mesh &R = mesh(M);
    if (NAxes < 0 || NAxes > MeshLayout::kMaxDims)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "naxes " + std::to_string(NAxes) + " is out of range");
    if (NAxes > 0)
      need(Names, "axis_names");
    std::vector<int64_t> A;
    for (int64_t I = 0; I < NAxes; ++I) {
      need(Names[I], "an axis name");
      for (int64_t X : R.resolveName(Names[I]))
        A.push_back(X);
    }
    *Out = wrap(&R.context().getComm(R, A));
  });
}

meshrt_status meshrt_comm_rank(meshrt_comm_t C, int64_t *Out) {
  return guarded("meshrt_comm_rank", [&] {
    need(Out, "out");
    *Out = comm(C).rank();
  });
}

meshrt_status meshrt_comm_size(meshrt_comm_t C, int64_t *Out) {
  return guarded("meshrt_comm_size", [&] {
    need(Out, "out");
    *Out = comm(C).size();
  });
}

meshrt_status meshrt_comm_expect_size(meshrt_comm_t C, int64_t Expected,
                                      const char *What) {
  return guarded("meshrt_comm_expect_size", [&] {
    need(What, "what");
    Comm &G = comm(C);
    int64_t Size = G.size();
    if (Size == 0 || Size == Expected) // 0: this process is not in the mesh.
      return;
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(What) + " was compiled for a group of " +
                    std::to_string(Expected) + " processes along " + G.label() +
                    ", but that group has " + std::to_string(Size) +
                    " in this run; run it on a world that gives the mesh's "
                    "`?` axis the size its types assume, or compile it with "
                    "dynamic sizes");
  });
}

meshrt_status meshrt_comm_world_rank(meshrt_comm_t C, int64_t GroupRank,
                                     int64_t *Out) {
  return guarded("meshrt_comm_world_rank", [&] {
    need(Out, "out");
    Comm &R = comm(C);
    if (GroupRank < 0 || GroupRank >= R.size())
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "group rank " + std::to_string(GroupRank) +
                      " is out of range for " + R.label() + " of size " +
                      std::to_string(R.size()));
    *Out = R.members()[size_t(GroupRank)];
  });
}

meshrt_status meshrt_comm_backend(meshrt_comm_t C, meshrt_backend *Out) {
  return guarded("meshrt_comm_backend", [&] {
    need(Out, "out");
    Comm &R = comm(C);
    R.mesh().context().checkAlive("get a communicator's backend");
    *Out = R.backend();
  });
}

meshrt_status meshrt_comm_native_handle(meshrt_comm_t C, void **Out) {
  return guarded("meshrt_comm_native_handle", [&] {
    need(Out, "out");
    Comm &R = comm(C);
    R.requireUsable("native_handle");
    *Out = R.impl().nativeHandle();
  });
}

meshrt_status meshrt_all_reduce(meshrt_comm_t C, const void *Send, void *Recv,
                                int64_t Count, meshrt_dtype T,
                                meshrt_reduce_op Op) {
  return guarded("meshrt_all_reduce",
                 [&] { comm(C).allReduce(Send, Recv, Count, T, Op); });
}

meshrt_status meshrt_all_gather(meshrt_comm_t C, const void *Send, void *Recv,
                                int64_t Count, meshrt_dtype T) {
  return guarded("meshrt_all_gather",
                 [&] { comm(C).allGather(Send, Recv, Count, T); });
}

meshrt_status meshrt_reduce_scatter(meshrt_comm_t C, const void *Send,
                                    void *Recv, int64_t Count, meshrt_dtype T,
                                    meshrt_reduce_op Op) {
  return guarded("meshrt_reduce_scatter",
                 [&] { comm(C).reduceScatter(Send, Recv, Count, T, Op); });
}

meshrt_status meshrt_all_gather_padded(meshrt_comm_t C, const void *Send,
                                       void *Recv, int64_t Count, int64_t Valid,
                                       meshrt_dtype T) {
  return guarded("meshrt_all_gather_padded",
                 [&] { comm(C).allGatherPadded(Send, Recv, Count, Valid, T); });
}

meshrt_status meshrt_reduce_scatter_padded(meshrt_comm_t C, const void *Send,
                                           void *Recv, int64_t Count,
                                           int64_t Valid, meshrt_dtype T,
                                           meshrt_reduce_op Op) {
  return guarded("meshrt_reduce_scatter_padded", [&] {
    comm(C).reduceScatterPadded(Send, Recv, Count, Valid, T, Op);
  });
}

meshrt_status meshrt_all_to_all(meshrt_comm_t C, const void *Send, void *Recv,
                                int64_t Count, meshrt_dtype T) {
  return guarded("meshrt_all_to_all",
                 [&] { comm(C).allToAll(Send, Recv, Count, T); });
}

meshrt_status meshrt_all_to_all_padded(meshrt_comm_t C, const void *Send,
                                       void *Recv, int64_t Count, int64_t Valid,
                                       meshrt_dtype T, int32_t Side) {
  return guarded("meshrt_all_to_all_padded", [&] {
    comm(C).allToAllPadded(Send, Recv, Count, Valid, T, Side);
  });
}

meshrt_status meshrt_broadcast(meshrt_comm_t C, void *Buf, int64_t Count,
                               meshrt_dtype T, int64_t Root) {
  return guarded("meshrt_broadcast",
                 [&] { comm(C).broadcast(Buf, Count, T, Root); });
}

meshrt_status meshrt_permute(meshrt_comm_t C, const void *Send, void *Recv,
                             int64_t Count, meshrt_dtype T, int64_t Offset,
                             int32_t Flags) {
  return guarded("meshrt_permute",
                 [&] { comm(C).permute(Send, Recv, Count, T, Offset, Flags); });
}

meshrt_status meshrt_barrier(meshrt_comm_t C) {
  return guarded("meshrt_barrier", [&] { comm(C).barrier(); });
}

meshrt_status meshrt_send(const void *Send, int64_t Count, meshrt_dtype T,
                          int64_t Peer, int64_t Tag) {
  return guarded("meshrt_send",
                 [&] { context()->send(Send, Count, T, Peer, Tag); });
}

meshrt_status meshrt_recv(void *Recv, int64_t Count, meshrt_dtype T,
                          int64_t Peer, int64_t Tag) {
  return guarded("meshrt_recv",
                 [&] { context()->recv(Recv, Count, T, Peer, Tag); });
}

/// meshrt_gemm_epilogue and its _mixed form, errors named `Name`.
static meshrt_status
gemmEpilogueNamed(const char *Name, meshrt_dtype In, meshrt_dtype Out,
                  int64_t Batch, int64_t M, int64_t N, int64_t K, const void *A,
                  int64_t ABatch, int64_t ARow, int64_t ACol, const void *B,
                  int64_t BBatch, int64_t BRow, int64_t BCol, void *C,
                  int64_t CBatch, int64_t CRow, int64_t CCol,
                  int32_t Accumulate, const void *Bias, int32_t Epilogue) {
  return guarded(Name, [&] {
    gemmEpilogue(GemmArgs{In,
                          Out,
                          Batch,
                          M,
                          N,
                          K,
                          A,
                          {ABatch, ARow, ACol},
                          B,
                          {BBatch, BRow, BCol},
                          C,
                          {CBatch, CRow, CCol},
                          Accumulate != 0},
                 Bias, Epilogue);
  });
}

meshrt_status meshrt_gemm_epilogue(meshrt_dtype T, int64_t Batch, int64_t M,
                                   int64_t N, int64_t K, const void *A,
                                   int64_t ABatch, int64_t ARow, int64_t ACol,
                                   const void *B, int64_t BBatch, int64_t BRow,
                                   int64_t BCol, void *C, int64_t CBatch,
                                   int64_t CRow, int64_t CCol,
                                   int32_t Accumulate, const void *Bias,
                                   int32_t Epilogue) {
  return gemmEpilogueNamed("meshrt_gemm_epilogue", T, T, Batch, M, N, K, A,
                           ABatch, ARow, ACol, B, BBatch, BRow, BCol, C, CBatch,
                           CRow, CCol, Accumulate, Bias, Epilogue);
}

meshrt_status meshrt_gemm_epilogue_mixed(
    meshrt_dtype In, meshrt_dtype Out, int64_t Batch, int64_t M, int64_t N,
    int64_t K, const void *A, int64_t ABatch, int64_t ARow, int64_t ACol,
    const void *B, int64_t BBatch, int64_t BRow, int64_t BCol, void *C,
    int64_t CBatch, int64_t CRow, int64_t CCol, int32_t Accumulate,
    const void *Bias, int32_t Epilogue) {
  return gemmEpilogueNamed("meshrt_gemm_epilogue_mixed", In, Out, Batch, M, N,
                           K, A, ABatch, ARow, ACol, B, BBatch, BRow, BCol, C,
                           CBatch, CRow, CCol, Accumulate, Bias, Epilogue);
}

meshrt_status meshrt_gemm(meshrt_dtype T, int64_t Batch, int64_t M, int64_t N,
                          int64_t K, const void *A, int64_t ABatch,
                          int64_t ARow, int64_t ACol, const void *B,
                          int64_t BBatch, int64_t BRow, int64_t BCol, void *C,
                          int64_t CBatch, int64_t CRow, int64_t CCol,
                          int32_t Accumulate) {
  return guarded("meshrt_gemm", [&] {
    gemm(GemmArgs{T,
                  T,
                  Batch,
                  M,
                  N,
                  K,
                  A,
                  {ABatch, ARow, ACol},
                  B,
                  {BBatch, BRow, BCol},
                  C,
                  {CBatch, CRow, CCol},
                  Accumulate != 0});
  });
}

meshrt_status meshrt_gemm_mixed(meshrt_dtype In, meshrt_dtype Out,
                                int64_t Batch, int64_t M, int64_t N, int64_t K,
                                const void *A, int64_t ABatch, int64_t ARow,
                                int64_t ACol, const void *B, int64_t BBatch,
                                int64_t BRow, int64_t BCol, void *C,
                                int64_t CBatch, int64_t CRow, int64_t CCol,
                                int32_t Accumulate) {
  return guarded("meshrt_gemm_mixed", [&] {
    gemm(GemmArgs{In,
                  Out,
                  Batch,
                  M,
                  N,
                  K,
                  A,
                  {ABatch, ARow, ACol},
                  B,
                  {BBatch, BRow, BCol},
                  C,
                  {CBatch, CRow, CCol},
                  Accumulate != 0});
  });
}

meshrt_status meshrt_all_reduce_on_stream(meshrt_comm_t C, const void *Send,
                                          void *Recv, int64_t Count,
                                          meshrt_dtype T, meshrt_reduce_op Op,
                                          void *Stream) {
  return guarded("meshrt_all_reduce_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("all_reduce", Stream,
               [&] { R.allReduce(Send, Recv, Count, T, Op); });
  });
}

meshrt_status meshrt_all_gather_on_stream(meshrt_comm_t C, const void *Send,
                                          void *Recv, int64_t Count,
                                          meshrt_dtype T, void *Stream) {
  return guarded("meshrt_all_gather_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("all_gather", Stream,
               [&] { R.allGather(Send, Recv, Count, T); });
  });
}

meshrt_status meshrt_reduce_scatter_on_stream(meshrt_comm_t C, const void *Send,
                                              void *Recv, int64_t Count,
                                              meshrt_dtype T,
                                              meshrt_reduce_op Op,
                                              void *Stream) {
  return guarded("meshrt_reduce_scatter_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("reduce_scatter", Stream,
               [&] { R.reduceScatter(Send, Recv, Count, T, Op); });
  });
}

meshrt_status meshrt_all_gather_padded_on_stream(meshrt_comm_t C,
                                                 const void *Send, void *Recv,
                                                 int64_t Count, int64_t Valid,
                                                 meshrt_dtype T, void *Stream) {
  return guarded("meshrt_all_gather_padded_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("all_gather_padded", Stream,
               [&] { R.allGatherPadded(Send, Recv, Count, Valid, T); });
  });
}

meshrt_status meshrt_reduce_scatter_padded_on_stream(
    meshrt_comm_t C, const void *Send, void *Recv, int64_t Count, int64_t Valid,
    meshrt_dtype T, meshrt_reduce_op Op, void *Stream) {
  return guarded("meshrt_reduce_scatter_padded_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("reduce_scatter_padded", Stream,
               [&] { R.reduceScatterPadded(Send, Recv, Count, Valid, T, Op); });
  });
}

meshrt_status meshrt_all_to_all_on_stream(meshrt_comm_t C, const void *Send,
                                          void *Recv, int64_t Count,
                                          meshrt_dtype T, void *Stream) {
  return guarded("meshrt_all_to_all_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("all_to_all", Stream, [&] { R.allToAll(Send, Recv, Count, T); });
  });
}

meshrt_status meshrt_all_to_all_padded_on_stream(meshrt_comm_t C,
                                                 const void *Send, void *Recv,
                                                 int64_t Count, int64_t Valid,
                                                 meshrt_dtype T, int32_t Side,
                                                 void *Stream) {
  return guarded("meshrt_all_to_all_padded_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("all_to_all_padded", Stream,
               [&] { R.allToAllPadded(Send, Recv, Count, Valid, T, Side); });
  });
}

meshrt_status meshrt_broadcast_on_stream(meshrt_comm_t C, void *Buf,
                                         int64_t Count, meshrt_dtype T,
                                         int64_t Root, void *Stream) {
  return guarded("meshrt_broadcast_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("broadcast", Stream, [&] { R.broadcast(Buf, Count, T, Root); });
  });
}

meshrt_status meshrt_permute_on_stream(meshrt_comm_t C, const void *Send,
                                       void *Recv, int64_t Count,
                                       meshrt_dtype T, int64_t Offset,
                                       int32_t Flags, void *Stream) {
  return guarded("meshrt_permute_on_stream", [&] {
    Comm &R = comm(C);
    R.onStream("permute", Stream,
               [&] { R.permute(Send, Recv, Count, T, Offset, Flags); });
  });
}

meshrt_status meshrt_gpu_device_count(int64_t *Count) {
  return guarded("meshrt_gpu_device_count", [&] {
    need(Count, "count");
    *Count = 0;
    *Count = gpuDeviceCount();
  });
}

meshrt_status meshrt_gpu_select_device(int64_t *Device) {
  return guarded("meshrt_gpu_select_device", [&] {
    need(Device, "device");
    *Device = gpuSelectDevice();
  });
}

meshrt_status meshrt_gpu_stream(void **Stream) {
  return guarded("meshrt_gpu_stream", [&] {
    need(Stream, "stream");
    *Stream = gpuSharedStream();
  });
}

meshrt_status meshrt_stream_synchronize(void *Stream) {
  return guarded("meshrt_stream_synchronize",
                 [&] { gpuSynchronize(Stream, "stream_synchronize"); });
}

meshrt_status meshrt_device_free(void *Ptr) {
  return guarded("meshrt_device_free", [&] { gpuFree(Ptr, nullptr, "free"); });
}

meshrt_status meshrt_device_alloc(int64_t Bytes, void **Ptr) {
  return guarded("meshrt_device_alloc", [&] {
    need(Ptr, "ptr");
    nonNegative(Bytes, "bytes");
    *Ptr = Bytes ? gpuAlloc(size_t(Bytes), nullptr, "meshrt_device_alloc")
                 : nullptr;
  });
}

meshrt_status meshrt_device_copy(void *Dst, const void *Src, int64_t Bytes,
                                 void *Stream) {
  return guarded("meshrt_device_copy", [&] {
    nonNegative(Bytes, "bytes");
    if (!Bytes)
      return;
    need(Dst, "dst");
    need(Src, "src");
    gpuMakeCurrent();
    std::string What = std::to_string(Bytes) + " bytes";
    gpuCopyAsync(Dst, Src, size_t(Bytes), Stream, "meshrt_device_copy",
                 What.c_str());
  });
}

meshrt_status meshrt_stream_wait_stream(void *Stream, void *Producer) {
  return guarded("meshrt_stream_wait_stream",
                 [&] { gpuStreamWaitStream(Stream, Producer); });
}

/// meshrt_gpu_gemm and its _mixed form, errors named `Name`.
static meshrt_status
gpuGemmNamed(const char *Name, void **Plan, meshrt_dtype In, meshrt_dtype Out,
             int64_t Batch, int64_t M, int64_t N, int64_t K, const void *A,
             int64_t ABatch, int64_t ARow, int64_t ACol, const void *B,
             int64_t BBatch, int64_t BRow, int64_t BCol, void *C,
             int64_t CBatch, int64_t CRow, int64_t CCol, int32_t Accumulate,
             const void *Bias, int32_t Epilogue, int32_t Precision,
             void *Stream) {
  return guarded(Name, [&] {
    gpuGemm(GpuGemmArgs{Plan,
                        In,
                        Out,
                        Batch,
                        M,
                        N,
                        K,
                        A,
                        {ABatch, ARow, ACol},
                        B,
                        {BBatch, BRow, BCol},
                        C,
                        {CBatch, CRow, CCol},
                        Accumulate != 0,
                        Bias,
                        Epilogue,
                        Precision,
                        Stream});
  });
}

meshrt_status meshrt_gpu_gemm(void **Plan, meshrt_dtype T, int64_t Batch,
                              int64_t M, int64_t N, int64_t K, const void *A,
                              int64_t ABatch, int64_t ARow, int64_t ACol,
                              const void *B, int64_t BBatch, int64_t BRow,
                              int64_t BCol, void *C, int64_t CBatch,
                              int64_t CRow, int64_t CCol, int32_t Accumulate,
                              const void *Bias, int32_t Epilogue,
                              int32_t Precision, void *Stream) {
  return gpuGemmNamed("meshrt_gpu_gemm", Plan, T, T, Batch, M, N, K, A, ABatch,
                      ARow, ACol, B, BBatch, BRow, BCol, C, CBatch, CRow, CCol,
                      Accumulate, Bias, Epilogue, Precision, Stream);
}

meshrt_status meshrt_gpu_gemm_mixed(
    void **Plan, meshrt_dtype In, meshrt_dtype Out, int64_t Batch, int64_t M,
    int64_t N, int64_t K, const void *A, int64_t ABatch, int64_t ARow,
    int64_t ACol, const void *B, int64_t BBatch, int64_t BRow, int64_t BCol,
    void *C, int64_t CBatch, int64_t CRow, int64_t CCol, int32_t Accumulate,
    const void *Bias, int32_t Epilogue, int32_t Precision, void *Stream) {
  return gpuGemmNamed("meshrt_gpu_gemm_mixed", Plan, In, Out, Batch, M, N, K, A,
                      ABatch, ARow, ACol, B, BBatch, BRow, BCol, C, CBatch,
                      CRow, CCol, Accumulate, Bias, Epilogue, Precision,
                      Stream);
}

} // extern "C"
