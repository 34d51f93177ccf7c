//===- CApiDeviceMesh.cpp - The meshrt_dm_* C ABI -------------------------===//
//
// meshrt_device_mesh.h: the C++ DeviceMesh behind handles that own a copy
// of one, for bindings that cannot call C++ (the Python package).
//
//===----------------------------------------------------------------------===//

#include "CApi.h"
#include "Context.h"

#include "meshrt/DeviceMesh.h"
#include "meshrt/meshrt_device_mesh.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace meshrt;
using namespace meshrt::detail;

struct meshrt_device_mesh_s {
  DeviceMesh Mesh;
};

namespace {

template <typename T> void need(T *P, const char *What) {
  if (!P)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(What) + " is null");
}

const DeviceMesh &meshOf(meshrt_device_mesh_t DM) {
  need(DM, "mesh");
  return DM->Mesh;
}

void checkCount(int64_t N, const char *What) {
  if (N < 0 || N > 64)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT, std::string(What) + " " +
                                                   std::to_string(N) +
                                                   " is out of range");
}

/// `N` C strings as strings; each must be non-null.
std::vector<std::string> strings(int64_t N, const char *const *S,
                                 const char *What) {
  checkCount(N, What);
  std::vector<std::string> Out;
  if (N > 0)
    need(S, What);
  for (int64_t I = 0; I < N; ++I) {
    need(S[I], What);
    Out.emplace_back(S[I]);
  }
  return Out;
}

/// Copies `S` out as meshrt_device_mesh.h says.
void copyOut(const std::string &S, char *Buf, int64_t Cap, int64_t *Len) {
  need(Len, "len");
  *Len = int64_t(S.size());
  if (Cap <= 0)
    return;
  need(Buf, "buf");
  size_t N = std::min(S.size(), size_t(Cap - 1));
  std::memcpy(Buf, S.data(), N);
  Buf[N] = '\0';
}

void give(DeviceMesh M, meshrt_device_mesh_t *Out) {
  *Out = new meshrt_device_mesh_s{std::move(M)};
}

} // namespace

extern "C" {

meshrt_status meshrt_dm_create(const char *DeviceType, int64_t NDims,
                               const int64_t *Shape, const char *const *Names,
                               int64_t NRanks, const int64_t *Ranks,
                               int64_t NOverride,
                               const char *const *OverrideDims,
                               const meshrt_backend *OverrideBackends,
                               const char *Name, meshrt_device_mesh_t *Out) {
  return guardedCall("meshrt_dm_create", [&] {
    need(Out, "out");
    need(DeviceType, "device_type");
    checkCount(NDims, "ndims");
    if (NDims > 0)
      need(Shape, "shape");
    std::vector<int64_t> S(Shape, Shape + NDims);
    std::vector<std::string> N = Names ? strings(NDims, Names, "mesh_dim_names")
                                       : std::vector<std::string>();
    BackendOverride Override;
    std::vector<std::string> Dims =
        strings(NOverride, OverrideDims, "backend_override dims");
    if (NOverride > 0)
      need(OverrideBackends, "backend_override backends");
    for (int64_t I = 0; I < NOverride; ++I)
      Override.emplace_back(MeshDim(Dims[size_t(I)]),
                            meshrt::Backend(OverrideBackends[I]));
    std::string MeshName = Name ? Name : "";
    if (!Ranks && NRanks == 0) {
      give(init_device_mesh(DeviceType, S, N, Override, MeshName), Out);
      return;
    }
    need(Ranks, "ranks");
    if (NRanks < 0)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "nranks " + std::to_string(NRanks) + " is negative");
    std::vector<int64_t> R(Ranks, Ranks + NRanks);
    give(DeviceMesh(DeviceType, R, S, N, Override, MeshName), Out);
  });
}

void meshrt_dm_free(meshrt_device_mesh_t DM) { delete DM; }

meshrt_status meshrt_dm_ndim(meshrt_device_mesh_t DM, int64_t *Out) {
  return guardedCall("meshrt_dm_ndim", [&] {
    need(Out, "out");
    *Out = meshOf(DM).ndim();
  });
}

meshrt_status meshrt_dm_shape(meshrt_device_mesh_t DM, int64_t *Out) {
  return guardedCall("meshrt_dm_shape", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    std::vector<int64_t> S = M.shape();
    std::copy(S.begin(), S.end(), Out);
  });
}

meshrt_status meshrt_dm_dim_names(meshrt_device_mesh_t DM, char *Buf,
                                  int64_t Cap, int64_t *Len) {
  return guardedCall("meshrt_dm_dim_names", [&] {
    std::string All;
    for (const std::string &N : meshOf(DM).mesh_dim_names()) {
      All += N;
      All += '\0';
    }
    copyOut(All, Buf, Cap, Len);
  });
}

meshrt_status meshrt_dm_device_type(meshrt_device_mesh_t DM, char *Buf,
                                    int64_t Cap, int64_t *Len) {
  return guardedCall("meshrt_dm_device_type",
                     [&] { copyOut(meshOf(DM).device_type(), Buf, Cap, Len); });
}

meshrt_status meshrt_dm_repr(meshrt_device_mesh_t DM, char *Buf, int64_t Cap,
                             int64_t *Len) {
  return guardedCall("meshrt_dm_repr",
                     [&] { copyOut(meshOf(DM).to_string(), Buf, Cap, Len); });
}

meshrt_status meshrt_dm_ranks(meshrt_device_mesh_t DM, int64_t *Out) {
  return guardedCall("meshrt_dm_ranks", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    std::vector<int64_t> R = M.mesh();
    std::copy(R.begin(), R.end(), Out);
  });
}

meshrt_status meshrt_dm_coordinate(meshrt_device_mesh_t DM, int64_t *IsMember,
                                   int64_t *Coords) {
  return guardedCall("meshrt_dm_coordinate", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(IsMember, "is_member");
    std::vector<int64_t> C = M.get_coordinate();
    *IsMember = M.is_member();
    if (*IsMember) {
      need(Coords, "coords");
      std::copy(C.begin(), C.end(), Coords);
    }
  });
}

meshrt_status meshrt_dm_local_rank(meshrt_device_mesh_t DM, const char *Dim,
                                   int64_t *Out) {
  return guardedCall("meshrt_dm_local_rank", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    *Out = M.get_local_rank(Dim);
  });
}

meshrt_status meshrt_dm_get_group(meshrt_device_mesh_t DM, int64_t NDims,
                                  const char *const *Dims, meshrt_comm_t *Out) {
  return guardedCall("meshrt_dm_get_group", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    std::vector<std::string> D = strings(NDims, Dims, "dims");
    *Out = (D.empty() ? M.get_group() : M.get_group(D)).handle();
  });
}

meshrt_status meshrt_dm_slice(meshrt_device_mesh_t DM, int64_t NDims,
                              const char *const *Dims,
                              meshrt_device_mesh_t *Out) {
  return guardedCall("meshrt_dm_slice", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    give(M.slice(strings(NDims, Dims, "dims")), Out);
  });
}

meshrt_status meshrt_dm_flatten(meshrt_device_mesh_t DM, const char *Name,
                                int64_t NDims, const char *const *Dims,
                                meshrt_device_mesh_t *Out) {
  return guardedCall("meshrt_dm_flatten", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    std::vector<std::string> D = strings(NDims, Dims, "dims");
    give(Name ? M.flatten(Name, D) : M.flatten(), Out);
  });
}

meshrt_status meshrt_dm_unflatten(meshrt_device_mesh_t DM, const char *Dim,
                                  int64_t N, const int64_t *Sizes,
                                  const char *const *Names,
                                  meshrt_device_mesh_t *Out) {
  return guardedCall("meshrt_dm_unflatten", [&] {
    const DeviceMesh &M = meshOf(DM);
    need(Out, "out");
    need(Dim, "dim");
    std::vector<std::string> Ns = strings(N, Names, "names");
    if (N > 0)
      need(Sizes, "sizes");
    give(M.unflatten(Dim, std::vector<int64_t>(Sizes, Sizes + N), Ns), Out);
  });
}

meshrt_status meshrt_dm_concatenate(int64_t N,
                                    const meshrt_device_mesh_t *Meshes,
                                    meshrt_device_mesh_t *Out) {
  return guardedCall("meshrt_dm_concatenate", [&] {
    need(Out, "out");
    checkCount(N, "n");
    if (N > 0)
      need(Meshes, "meshes");
    std::vector<DeviceMesh> Ms;
    for (int64_t I = 0; I < N; ++I)
      Ms.push_back(meshOf(Meshes[I]));
    give(DeviceMesh::concatenate(Ms), Out);
  });
}

meshrt_status meshrt_dm_from_group(int64_t NGroups, const meshrt_comm_t *G,
                                   const char *DeviceType, int64_t NRanks,
                                   const int64_t *Ranks, int64_t NDims,
                                   const int64_t *Shape,
                                   const char *const *Names,
                                   meshrt_device_mesh_t *Out) {
  return guardedCall("meshrt_dm_from_group", [&] {
    need(Out, "out");
    need(DeviceType, "device_type");
    checkCount(NGroups, "ngroups");
    checkCount(NDims, "ndims");
    if (NGroups > 0)
      need(G, "groups");
    std::vector<Group> Groups;
    for (int64_t I = 0; I < NGroups; ++I)
      Groups.push_back(Group::from_handle(G[I]));
    if (NGroups == 1 && NRanks == 0 && NDims == 0) {
      std::vector<std::string> N;
      if (Names) {
        need(Names[0], "names");
        N.emplace_back(Names[0]);
      }
      give(DeviceMesh::from_group(Groups[0], DeviceType, N), Out);
      return;
    }
    if (NRanks < 0)
      throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                  "nranks " + std::to_string(NRanks) + " is negative");
    if (NRanks > 0)
      need(Ranks, "ranks");
    if (NDims > 0)
      need(Shape, "shape");
    std::vector<std::string> N =
        Names ? strings(NDims, Names, "names") : std::vector<std::string>();
    give(DeviceMesh::from_group(Groups, DeviceType,
                                std::vector<int64_t>(Ranks, Ranks + NRanks),
                                std::vector<int64_t>(Shape, Shape + NDims), N),
         Out);
  });
}

meshrt_status meshrt_dm_equal(meshrt_device_mesh_t A, meshrt_device_mesh_t B,
                              int64_t *Out) {
  return guardedCall("meshrt_dm_equal", [&] {
    need(Out, "out");
    *Out = meshOf(A) == meshOf(B);
  });
}

meshrt_status meshrt_dm_hash(meshrt_device_mesh_t DM, uint64_t *Out) {
  return guardedCall("meshrt_dm_hash", [&] {
    need(Out, "out");
    *Out = uint64_t(meshOf(DM).hash());
  });
}

meshrt_status meshrt_comm_members(meshrt_comm_t C, int64_t *Out) {
  return guardedCall("meshrt_comm_members", [&] {
    need(Out, "out");
    std::vector<int64_t> M = Group::from_handle(C).members();
    std::copy(M.begin(), M.end(), Out);
  });
}

} // extern "C"
