/*===- meshrt_device_mesh.h - C ABI of the DeviceMesh view ----------------===*\
|*                                                                            *|
|* The DeviceMesh of meshrt/DeviceMesh.h (PyTorch's init_device_mesh,         *|
|* slicing, flatten, unflatten, from_group) behind a C ABI, for bindings that *|
|* cannot call C++: the Python package (python/mesh) loads it with ctypes.    *|
|* A meshrt_device_mesh_t is an owned copy of a DeviceMesh: free it with      *|
|* meshrt_dm_free. Groups are meshrt_comm_t handles, for the collectives of   *|
|* meshrt.h. Errors are statuses with meshrt_last_error, under the policy     *|
|* of meshrt_set_error_policy, as in meshrt.h.                                *|
|*                                                                            *|
|* Strings are returned by copy: `buf` gets at most `cap` - 1 bytes and a     *|
|* terminating NUL, and `*len` the whole length (call again with a larger     *|
|* buffer when *len >= cap). Lists of names are NUL-separated.                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef MESHRT_DEVICE_MESH_C_H
#define MESHRT_DEVICE_MESH_C_H

#include "meshrt/meshrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct meshrt_device_mesh_s *meshrt_device_mesh_t;

/// init_device_mesh (ranks null, nranks 0: the whole world) or
/// DeviceMesh(device_type, ranks) over `nranks` world ranks, row-major over
/// `shape` (one -1 resolved). `names` null: "dim0", "dim1", ...; `name`
/// null or "": "mesh<N>". `override_dims` (noverride names) run on
/// `override_backends` (PyTorch's backend_override). Collective over the
/// world.
MESHRT_API meshrt_status
meshrt_dm_create(const char *device_type, int64_t ndims, const int64_t *shape,
                 const char *const *names, int64_t nranks, const int64_t *ranks,
                 int64_t noverride, const char *const *override_dims,
                 const meshrt_backend *override_backends, const char *name,
                 meshrt_device_mesh_t *out);

/// Frees the handle (not the mesh's communicators, which the runtime owns).
MESHRT_API void meshrt_dm_free(meshrt_device_mesh_t dm);

/// Number of dimensions.
MESHRT_API meshrt_status meshrt_dm_ndim(meshrt_device_mesh_t dm, int64_t *out);

/// Sizes of the dimensions (ndim entries).
MESHRT_API meshrt_status meshrt_dm_shape(meshrt_device_mesh_t dm, int64_t *out);

/// Names of the dimensions, NUL-separated.
MESHRT_API meshrt_status meshrt_dm_dim_names(meshrt_device_mesh_t dm, char *buf,
                                             int64_t cap, int64_t *len);

/// "cpu" or "cuda".
MESHRT_API meshrt_status meshrt_dm_device_type(meshrt_device_mesh_t dm,
                                               char *buf, int64_t cap,
                                               int64_t *len);

/// PyTorch's repr (DeviceMesh::to_string).
MESHRT_API meshrt_status meshrt_dm_repr(meshrt_device_mesh_t dm, char *buf,
                                        int64_t cap, int64_t *len);

/// The world ranks of the (sub-)mesh, row-major (product of shape entries).
MESHRT_API meshrt_status meshrt_dm_ranks(meshrt_device_mesh_t dm, int64_t *out);

/// 1 if this process is in the mesh; then its coordinates (ndim entries).
MESHRT_API meshrt_status meshrt_dm_coordinate(meshrt_device_mesh_t dm,
                                              int64_t *is_member,
                                              int64_t *coords);

/// This process's coordinate along dimension `dim` (a name).
MESHRT_API meshrt_status meshrt_dm_local_rank(meshrt_device_mesh_t dm,
                                              const char *dim, int64_t *out);

/// The group along the dimensions `dims` together (ndims 0: the 1-D mesh's
/// only dimension).
MESHRT_API meshrt_status meshrt_dm_get_group(meshrt_device_mesh_t dm,
                                             int64_t ndims,
                                             const char *const *dims,
                                             meshrt_comm_t *out);

/// The sub-mesh of dimensions `dims`, in that order.
MESHRT_API meshrt_status meshrt_dm_slice(meshrt_device_mesh_t dm, int64_t ndims,
                                         const char *const *dims,
                                         meshrt_device_mesh_t *out);

/// Merges `dims` (ndims 0: all) into one dimension `name` (null: PyTorch's
/// default name). Collective.
MESHRT_API meshrt_status meshrt_dm_flatten(meshrt_device_mesh_t dm,
                                           const char *name, int64_t ndims,
                                           const char *const *dims,
                                           meshrt_device_mesh_t *out);

/// Splits dimension `dim` into `n` dimensions of `sizes` named `names`.
/// Collective.
MESHRT_API meshrt_status meshrt_dm_unflatten(meshrt_device_mesh_t dm,
                                             const char *dim, int64_t n,
                                             const int64_t *sizes,
                                             const char *const *names,
                                             meshrt_device_mesh_t *out);

/// The dimensions of `n` meshes side by side (PyTorch's _concatenate).
MESHRT_API meshrt_status meshrt_dm_concatenate(
    int64_t n, const meshrt_device_mesh_t *meshes, meshrt_device_mesh_t *out);

/// PyTorch's from_group. With one group, `nranks` 0 and `ndims` 0: a 1-D
/// mesh over its members (local), named `names[0]` if `names` is not null.
/// Otherwise an N-D mesh over `ranks` (row-major over `shape`) whose
/// dimension k uses `groups[k]` (collective over the world; a rank outside
/// the mesh passes no groups).
MESHRT_API meshrt_status meshrt_dm_from_group(
    int64_t ngroups, const meshrt_comm_t *groups, const char *device_type,
    int64_t nranks, const int64_t *ranks, int64_t ndims, const int64_t *shape,
    const char *const *names, meshrt_device_mesh_t *out);

/// 1 if the meshes are equal (PyTorch's __eq__), and a hash that agrees.
MESHRT_API meshrt_status meshrt_dm_equal(meshrt_device_mesh_t a,
                                         meshrt_device_mesh_t b, int64_t *out);
MESHRT_API meshrt_status meshrt_dm_hash(meshrt_device_mesh_t dm, uint64_t *out);

/// The world ranks of a group, in group-rank order (size entries).
MESHRT_API meshrt_status meshrt_comm_members(meshrt_comm_t comm, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MESHRT_DEVICE_MESH_C_H */
