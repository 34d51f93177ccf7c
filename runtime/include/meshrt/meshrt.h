/*===-- meshrt/meshrt.h - C ABI of the mesh runtime ---------------*- C -*-===*\
|*                                                                            *|
|* The plain C interface of the runtime. Compiled code lowered from the mesh  *|
|* dialect calls it, and so can any C or C++ program. It only uses int64_t    *|
|* counts, void* buffers, 32-bit enums and opaque handles, so that calls      *|
|* lower to LLVM IR without any struct passing.                               *|
|*                                                                            *|
|* Every function that can fail returns a meshrt_status (0 on success). What  *|
|* happens on failure depends on the error policy: MESHRT_ERRORS_ABORT (the   *|
|* default, for compiled code that does not check statuses) prints the error  *|
|* and aborts the whole job; MESHRT_ERRORS_RETURN returns the status and      *|
|* keeps the message for meshrt_last_error(). See docs/runtime.md.            *|
|*                                                                            *|
|* The compiler derives its declarations of the functions compiled code calls *|
|* from this header (include/mesh/Conversion/RuntimeEntryPoints.def lists     *|
|* them), so the two cannot disagree: a changed parameter count breaks the    *|
|* compiler's build, a changed parameter type its tests.                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef MESHRT_MESHRT_H
#define MESHRT_MESHRT_H

#include <stdint.h>

/* The version of mesh (the compiler and this runtime are released together),
 * and of this header. It is the one place the version is written: CMake reads
 * these three lines (runtime/cmake/MeshVersion.cmake) for the projects, the
 * library's file name, the CMake packages and meshrt.pc. Compiled modules
 * need a library of the same major.minor (meshrt_check_version); the patch
 * may differ. Bump the minor for any change of the ABI while the major is 0. */
#define MESHRT_VERSION_MAJOR 0
#define MESHRT_VERSION_MINOR 2
#define MESHRT_VERSION_PATCH 0
#define MESHRT_VERSION_STR_(x) #x
#define MESHRT_VERSION_STR(x) MESHRT_VERSION_STR_(x)
/// "MAJOR.MINOR.PATCH" of this header, e.g. "0.2.0".
// clang-format off
#define MESHRT_VERSION_STRING                                                  \
  MESHRT_VERSION_STR(MESHRT_VERSION_MAJOR) "."                                 \
  MESHRT_VERSION_STR(MESHRT_VERSION_MINOR) "."                                 \
  MESHRT_VERSION_STR(MESHRT_VERSION_PATCH)
// clang-format on

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MESHRT_API __attribute__((visibility("default")))
#else
#define MESHRT_API
#endif

/* Every enum of the ABI is a 32-bit integer (compiled code declares these
 * parameters and the meshrt_status results as i32). Where the language can
 * say so (C++, C23) the enums get the fixed type int32_t, so that any value
 * compiled code passes, valid or not, is well-defined and reported as an
 * invalid argument. Before C23 the compiler picks a type that holds the
 * values: int or unsigned int, 32 bits on every target we support, and
 * checked below for C11 and later (-fshort-enums would break the ABI). */
#if defined(__cplusplus) ||                                                    \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L)
#define MESHRT_ENUM(Name) enum Name : int32_t
#else
#define MESHRT_ENUM(Name) enum Name
#endif

// clang-format off
/// Status returned by the meshrt_* functions.
typedef MESHRT_ENUM(meshrt_status) {
  MESHRT_SUCCESS = 0,
  /// A null pointer, a negative count, an out-of-range axis or root, ...
  MESHRT_ERROR_INVALID_ARGUMENT = 1,
  /// meshrt_init has not been called (or meshrt_finalize already was).
  MESHRT_ERROR_NOT_INITIALIZED = 2,
  /// The mesh shape does not fit the number of processes.
  MESHRT_ERROR_WORLD_SIZE = 3,
  /// An axis name that the mesh does not have.
  MESHRT_ERROR_UNKNOWN_AXIS = 4,
  /// meshrt_mesh_lookup of a name that was never declared.
  MESHRT_ERROR_UNKNOWN_MESH = 5,
  /// The same mesh was declared differently on different ranks, or
  /// redeclared differently on this rank.
  MESHRT_ERROR_MESH_MISMATCH = 6,
  /// A dtype/reduction pair (or a feature) that the backend cannot do.
  MESHRT_ERROR_UNSUPPORTED = 7,
  /// MPI, NCCL or CUDA reported an error.
  MESHRT_ERROR_BACKEND = 8,
  /// A collective did not finish within MESHRT_TIMEOUT_S. The job is aborted
  /// in that case; the code exists for messages and for the exit status.
  MESHRT_ERROR_TIMEOUT = 9,
  /// With MESHRT_CHECK_COLLECTIVES=1: the members of a group called
  /// different collectives, or the same one with different arguments (kind,
  /// count, dtype, reduction, root, offset, communicator).
  MESHRT_ERROR_COLLECTIVE_MISMATCH = 10,
  /// This process is not in the mesh (a mesh over a rank array that does
  /// not list it): it has no coordinate, and its communicator handles on
  /// that mesh take part in no collective.
  MESHRT_ERROR_NOT_MEMBER = 11
} meshrt_status;
// clang-format on

// clang-format off
/// Element types of collective buffers.
typedef MESHRT_ENUM(meshrt_dtype) {
  MESHRT_F16 = 0,  ///< IEEE binary16
  MESHRT_BF16 = 1, ///< bfloat16 (upper half of a binary32)
  MESHRT_F32 = 2,
  MESHRT_F64 = 3,
  MESHRT_I8 = 4,
  MESHRT_I32 = 5,
  MESHRT_I64 = 6,
  MESHRT_U8 = 7
} meshrt_dtype;
// clang-format on

// clang-format off
/// Reductions. MESHRT_AVG is a sum followed by a division by the group size
/// (truncating toward zero for integer types, like ncclAvg). The bitwise
/// reductions exist for integer types only, and on the MPI backend only.
typedef MESHRT_ENUM(meshrt_reduce_op) {
  MESHRT_SUM = 0,
  MESHRT_PROD = 1,
  MESHRT_MIN = 2,
  MESHRT_MAX = 3,
  MESHRT_AVG = 4,
  MESHRT_BAND = 5,
  MESHRT_BOR = 6,
  MESHRT_BXOR = 7
} meshrt_reduce_op;
// clang-format on

// clang-format off
/// Communication backends. MESHRT_BACKEND_AUTO reads the MESHRT_BACKEND
/// environment variable (auto|host|mpi|nccl|gloo); "auto" picks NCCL when
/// the runtime was built with it and a CUDA device is visible, else the host
/// backend. MESHRT_BACKEND_HOST is the job's CPU backend, whatever devices
/// the node has: MPI when an MPI launcher started the job (or none did),
/// gloo when the ranks met through the store (torchrun, RANK/WORLD_SIZE,
/// srun without PMI); MESHRT_BACKEND overrides it too. Programs compiled
/// for --target=host ask for it.
typedef MESHRT_ENUM(meshrt_backend) {
  MESHRT_BACKEND_AUTO = 0,
  MESHRT_BACKEND_MPI = 1,
  MESHRT_BACKEND_NCCL = 2,
  MESHRT_BACKEND_GLOO = 3,
  MESHRT_BACKEND_HOST = 4
} meshrt_backend;
// clang-format on

// clang-format off
/// What a failing meshrt_* call does.
typedef MESHRT_ENUM(meshrt_error_policy) {
  /// Print "meshrt: rank R: <message>" to stderr and abort the whole job
  /// (MPI_Abort with exit code 1). The default.
  MESHRT_ERRORS_ABORT = 0,
  /// Return the status; meshrt_last_error() has the message.
  MESHRT_ERRORS_RETURN = 1
} meshrt_error_policy;
// clang-format on

#if !defined(__cplusplus) && defined(__STDC_VERSION__) &&                      \
    __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(meshrt_status) == 4, "meshrt_status must be 32-bit");
_Static_assert(sizeof(meshrt_dtype) == 4, "meshrt_dtype must be 32-bit");
_Static_assert(sizeof(meshrt_reduce_op) == 4,
               "meshrt_reduce_op must be 32-bit");
_Static_assert(sizeof(meshrt_backend) == 4, "meshrt_backend must be 32-bit");
_Static_assert(sizeof(meshrt_error_policy) == 4,
               "meshrt_error_policy must be 32-bit");
#endif

/// Flags of meshrt_permute.
enum {
  /// Group rank g sends to (g + offset) mod n; without it, ranks whose
  /// destination falls outside [0, n) send nothing.
  MESHRT_PERMUTE_WRAP = 1,
  /// Ranks that receive nothing get a zeroed output; without it their output
  /// buffer is left untouched.
  MESHRT_PERMUTE_ZERO_FILL = 2
};

/// Which side of meshrt_all_to_all_padded holds the padding.
enum {
  /// The dim split into the blocks sent is padded: only the first `valid`
  /// elements of send (its n blocks end to end) hold data, so block j
  /// carries min(count, max(0, valid - j * count)) elements of data to
  /// member j, and every member receives that many, the receiver's own
  /// share, from each.
  MESHRT_PADDED_SPLIT = 0,
  /// The dim the received blocks are concatenated along is padded: member i
  /// holds min(count, max(0, valid - i * count)) elements of data at the
  /// start of each of its blocks, and sends only those; recv's block i holds
  /// them.
  MESHRT_PADDED_CONCAT = 1
};

/// Counters of one runtime context (see meshrt_get_stats).
typedef struct meshrt_stats {
  /// Communicators created by splitting the world (MPI_Comm_split or
  /// ncclCommSplit). Grows with the distinct (mesh, axes) used, never with
  /// the number of groups.
  int64_t splits;
  /// Live communicators, the world of each started backend included.
  int64_t communicators;
  /// Communicator requests (meshrt_comm_get*, get_group, ...).
  int64_t comm_requests;
  /// Requests answered by an existing communicator (cache hits and reuse of
  /// the world).
  int64_t comm_reuses;
  /// Declared meshes.
  int64_t meshes;
  /// Collectives run.
  int64_t collectives;
  /// Host synchronisations of a GPU stream by meshrt_stream_synchronize and
  /// mgpuStreamSynchronize (what compiled code calls once per function and
  /// where the host reads a device result), in this process.
  int64_t stream_synchronizations;
} meshrt_stats;

/// A declared mesh. Valid until meshrt_finalize.
typedef struct meshrt_mesh_opaque *meshrt_mesh_t;
/// A communicator for (mesh, ordered axes). Valid until meshrt_finalize.
typedef struct meshrt_comm_opaque *meshrt_comm_t;

/* ---- Versions ---------------------------------------------------------- */

/// The version of the library that is loaded, "MAJOR.MINOR.PATCH", which can
/// differ from MESHRT_VERSION_STRING of the header a program was compiled
/// with. Stores its parts in `*major`, `*minor` and `*patch` (each may be
/// null). Needs no meshrt_init.
MESHRT_API const char *meshrt_get_version(int32_t *major, int32_t *minor,
                                          int32_t *patch);

/// Checks that this library can run code compiled for libmeshrt
/// `major`.`minor` (the generated start-up function, mesh_module_init, calls
/// it first with the compiler's MESHRT_VERSION_MAJOR and _MINOR): the same
/// major and minor are required, the patch may differ. Otherwise
/// MESHRT_ERROR_UNSUPPORTED, with a message naming both versions and the
/// file of the library loaded. Needs no meshrt_init.
MESHRT_API meshrt_status meshrt_check_version(int32_t major, int32_t minor);

/* ---- Set-up ------------------------------------------------------------ */

/// Initialises the default runtime context: MPI (unless the program already
/// did), the backend, the world communicator and the timeout watchdog.
/// Collective over MPI_COMM_WORLD. Calls nest: each meshrt_init needs one
/// meshrt_finalize; only the outermost pair does work. Every rank must
/// finalize before it exits: a process that exits (exit() or a return from
/// main) with the runtime initialised aborts the whole job with a message,
/// since its peers would wait for it in their next collective.
MESHRT_API meshrt_status meshrt_init(meshrt_backend backend);

/// Frees every communicator and ends the default context. Collective. Prints
/// statistics when MESHRT_STATS=1. If the runtime started MPI, MPI is
/// finalized at exit, after a barrier bounded by MESHRT_TIMEOUT_S.
MESHRT_API meshrt_status meshrt_finalize(void);

/// 1 if the default context is initialised, 0 otherwise.
MESHRT_API int meshrt_is_initialized(void);

/// The backend the default context runs on: its default, chosen by
/// meshrt_init (meshes may ask for the other one, see
/// meshrt_mesh_declare_backends).
MESHRT_API meshrt_status meshrt_get_backend(meshrt_backend *out);

/// This process's rank in the world.
MESHRT_API meshrt_status meshrt_world_rank(int64_t *out);

/// The number of processes.
MESHRT_API meshrt_status meshrt_world_size(int64_t *out);

/// Sets what failing calls do (per process; the default is ABORT unless the
/// MESHRT_ERROR_POLICY environment variable says "return").
MESHRT_API void meshrt_set_error_policy(meshrt_error_policy policy);

/// The current error policy.
MESHRT_API meshrt_error_policy meshrt_get_error_policy(void);

/// The message of the last failing call on this thread ("" if none).
MESHRT_API const char *meshrt_last_error(void);

/// A static name for a status ("MESHRT_ERROR_UNKNOWN_AXIS", ...). Takes any
/// int, so that a status kept in an int can be named; unknown values give
/// "MESHRT_ERROR_?".
MESHRT_API const char *meshrt_status_name(int status);

/// "f16", "bf16", "f32", ...; "?" for an invalid value.
MESHRT_API const char *meshrt_dtype_name(meshrt_dtype dtype);

/// Size in bytes of one element; 0 for an invalid value.
MESHRT_API int64_t meshrt_dtype_size(meshrt_dtype dtype);

/// Counters of the default context.
MESHRT_API meshrt_status meshrt_get_stats(meshrt_stats *out);

/* ---- Meshes ------------------------------------------------------------ */

/// Declares the mesh `name` of `ndims` axes (at most 16). A size of -1 is
/// dynamic and resolved from the world size (at most one per mesh). Axis
/// names must be distinct and non-empty. Collective: the declaration is
/// compared across ranks (a digest), and a mismatch is an error on every
/// rank. Declaring the same name again with the same shape and names returns
/// the existing handle without communicating.
MESHRT_API meshrt_status meshrt_mesh_declare(const char *name, int64_t ndims,
                                             const int64_t *sizes,
                                             const char *const *axis_names,
                                             meshrt_mesh_t *out);

/// Declares the mesh `name` over an explicit list of world ranks, like
/// PyTorch's DeviceMesh(device_type, mesh_tensor): `ranks` (nranks entries,
/// distinct, each in [0, world size)) are the world ranks at the mesh's
/// positions in row-major order, so a mesh may cover part of the world (a
/// pipeline stage) and order its devices in any way. A size of -1 is
/// resolved from nranks. Collective over the world, like
/// meshrt_mesh_declare (the ranks are part of the checked declaration): every
/// rank declares it, members or not. A process not in `ranks` gets the
/// handle too; meshrt_mesh_is_member tells it apart, its coordinates are
/// MESHRT_ERROR_NOT_MEMBER, and its communicators on the mesh (which it must
/// still request, since creating them is collective) run no collective.
MESHRT_API meshrt_status
meshrt_mesh_declare_ranks(const char *name, int64_t ndims, const int64_t *sizes,
                          const char *const *axis_names, int64_t nranks,
                          const int64_t *ranks, meshrt_mesh_t *out);

/// Declares the mesh `name` and chooses its backends, like PyTorch's
/// init_device_mesh(..., backend_override=...). With `ranks` null and
/// `nranks` 0 the mesh covers the world, as with meshrt_mesh_declare;
/// otherwise it is over `ranks`, as with meshrt_mesh_declare_ranks.
/// `backend` is the mesh's (MESHRT_BACKEND_AUTO: the runtime's, see
/// meshrt_get_backend); `axis_backends` is null (every axis on the mesh's
/// backend) or holds one entry per axis (MESHRT_BACKEND_AUTO: the mesh's).
/// The communicator of a group along axes that all have one backend runs on
/// it; any other group (axes on different backends, or naxes 0) on the
/// mesh's. Groupings are shared per backend: the same grouping on MPI and
/// on NCCL is two communicators. The backends are part of the declaration
/// compared across ranks: ranks that disagree get MESHRT_ERROR_MESH_MISMATCH
/// with both declarations. A backend other than the runtime's starts with
/// the first meshrt_comm_get that needs it (collective, as that call is), and
/// is freed by meshrt_finalize; where NCCL cannot start (not built, libnccl
/// or libcudart missing, no device) that call fails on every rank, naming
/// the rank and what it lacks (MESHRT_ERROR_BACKEND; MESHRT_ERROR_UNSUPPORTED
/// when not built).
MESHRT_API meshrt_status meshrt_mesh_declare_backends(
    const char *name, int64_t ndims, const int64_t *sizes,
    const char *const *axis_names, int64_t nranks, const int64_t *ranks,
    meshrt_backend backend, const meshrt_backend *axis_backends,
    meshrt_mesh_t *out);

/// 1 if this process is in the mesh, 0 if not (a mesh over a rank array).
MESHRT_API meshrt_status meshrt_mesh_is_member(meshrt_mesh_t mesh,
                                               int64_t *out);

/// The world rank at row-major position `index` of the mesh (0 <= index <
/// product of the sizes): where a point-to-point transfer to that device of
/// the mesh goes.
MESHRT_API meshrt_status meshrt_mesh_world_rank(meshrt_mesh_t mesh,
                                                int64_t index, int64_t *out);

/// Finds a declared mesh by name.
MESHRT_API meshrt_status meshrt_mesh_lookup(const char *name,
                                            meshrt_mesh_t *out);

/// Number of axes.
MESHRT_API meshrt_status meshrt_mesh_ndims(meshrt_mesh_t mesh, int64_t *out);

/// Index of the axis called `axis_name`.
MESHRT_API meshrt_status meshrt_mesh_axis_index(meshrt_mesh_t mesh,
                                                const char *axis_name,
                                                int64_t *out);

/// Size of axis `axis` (dynamic sizes resolved).
MESHRT_API meshrt_status meshrt_mesh_axis_size(meshrt_mesh_t mesh, int64_t axis,
                                               int64_t *out);

/// This process's coordinate along axis `axis` (MESHRT_ERROR_NOT_MEMBER if
/// the process is not in the mesh).
MESHRT_API meshrt_status meshrt_mesh_coordinate(meshrt_mesh_t mesh,
                                                int64_t axis, int64_t *out);

/* ---- Communicators ----------------------------------------------------- */

/// The communicator of this process's group along the ordered axis list
/// `axes` (indices into the mesh, distinct; naxes may be 0 for a group of
/// one). The rank inside the group is the row-major index of this process's
/// coordinates over `axes` in the order given. The first request of a
/// (mesh, axes) that needs a new communicator is collective over the world
/// (one split); later requests are local and cheap.
MESHRT_API meshrt_status meshrt_comm_get(meshrt_mesh_t mesh, int64_t naxes,
                                         const int64_t *axes,
                                         meshrt_comm_t *out);

/// Same as meshrt_comm_get, with axis names.
MESHRT_API meshrt_status meshrt_comm_get_by_names(meshrt_mesh_t mesh,
                                                  int64_t naxes,
                                                  const char *const *axis_names,
                                                  meshrt_comm_t *out);

/// This process's rank in the group; -1 on a handle of a process that is not
/// in the mesh.
MESHRT_API meshrt_status meshrt_comm_rank(meshrt_comm_t comm, int64_t *out);

/// Number of processes in the group; 0 on a handle of a process that is not
/// in the mesh.
MESHRT_API meshrt_status meshrt_comm_size(meshrt_comm_t comm, int64_t *out);

/// Checks that the group has `expected` members, as the static types of a
/// compiled program assume when its mesh has a `?` axis (resolved only at
/// start-up): MESHRT_ERROR_INVALID_ARGUMENT, with a message naming `what`
/// (the place in the program), the group and both sizes, when it has not.
/// A process outside the mesh passes. Compiled programs call it from their
/// start-up function, once per (group, size) their types assume.
MESHRT_API meshrt_status meshrt_comm_expect_size(meshrt_comm_t comm,
                                                 int64_t expected,
                                                 const char *what);

/// World rank of the member with group rank `group_rank`.
MESHRT_API meshrt_status meshrt_comm_world_rank(meshrt_comm_t comm,
                                                int64_t group_rank,
                                                int64_t *out);

/// The backend the communicator runs on (see meshrt_mesh_declare_backends;
/// without it, the runtime's). Also on a handle of a process outside the
/// mesh, which has no communicator.
MESHRT_API meshrt_status meshrt_comm_backend(meshrt_comm_t comm,
                                             meshrt_backend *out);

/// The backend's own handle: a pointer to the MPI_Comm on the MPI backend,
/// the ncclComm_t on the NCCL backend. Owned by the runtime.
MESHRT_API meshrt_status meshrt_comm_native_handle(meshrt_comm_t comm,
                                                   void **out);

/* ---- Collectives --------------------------------------------------------
 * All are collective over the group, blocking, and take counts in elements.
 * On the NCCL backend buffers must be device memory. Unless stated, send and
 * recv must not overlap. n is the group size, g this process's group rank.
 * ------------------------------------------------------------------------ */

/// recv[i] = op over the group of send[i], count elements. send == recv is
/// allowed (in place).
MESHRT_API meshrt_status meshrt_all_reduce(meshrt_comm_t comm, const void *send,
                                           void *recv, int64_t count,
                                           meshrt_dtype dtype,
                                           meshrt_reduce_op op);

/// recv (n * count elements) is the concatenation of every member's send
/// (count elements) in group-rank order.
MESHRT_API meshrt_status meshrt_all_gather(meshrt_comm_t comm, const void *send,
                                           void *recv, int64_t count,
                                           meshrt_dtype dtype);

/// send has n blocks of count elements; recv (count elements) is the
/// reduction over the group of block g.
MESHRT_API meshrt_status meshrt_reduce_scatter(meshrt_comm_t comm,
                                               const void *send, void *recv,
                                               int64_t count,
                                               meshrt_dtype dtype,
                                               meshrt_reduce_op op);

/// meshrt_all_gather of data with trailing padding: recv's n blocks of count
/// elements hold, in order, the first `valid` elements of the gathered data
/// (0 <= valid <= n * count), so member j sends only the first
/// min(count, max(0, valid - j * count)) elements of its send, and recv's
/// elements from `valid` on (the padding) are set to zero. A padded dim split
/// over the group (ceil(10 / 4) = 3 rows per member, the last holding one)
/// is gathered without moving its padding.
MESHRT_API meshrt_status meshrt_all_gather_padded(meshrt_comm_t comm,
                                                  const void *send, void *recv,
                                                  int64_t count, int64_t valid,
                                                  meshrt_dtype dtype);

/// meshrt_reduce_scatter of data with trailing padding: only the first
/// `valid` elements of send's n blocks of count elements hold data
/// (0 <= valid <= n * count); recv is the reduction over the group of the
/// data of block g, min(count, max(0, valid - g * count)) elements, and its
/// other elements are set to zero. The padding is neither sent nor reduced
/// (MPI_Reduce_scatter with each member's count; on NCCL, which has no
/// reduce-scatter of unequal blocks, one grouped ncclReduce per member).
MESHRT_API meshrt_status meshrt_reduce_scatter_padded(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    int64_t valid, meshrt_dtype dtype, meshrt_reduce_op op);

/// send and recv have n blocks of count elements; block j of send goes to
/// group rank j, where it lands in block g of recv.
MESHRT_API meshrt_status meshrt_all_to_all(meshrt_comm_t comm, const void *send,
                                           void *recv, int64_t count,
                                           meshrt_dtype dtype);

/// meshrt_all_to_all of blocks whose data is a prefix (a dim padded to
/// divide, see MESHRT_PADDED_SPLIT and MESHRT_PADDED_CONCAT for `side`):
/// only the data moves (0 <= valid <= n * count), and the elements of recv's
/// blocks past their data are set to zero.
MESHRT_API meshrt_status meshrt_all_to_all_padded(meshrt_comm_t comm,
                                                  const void *send, void *recv,
                                                  int64_t count, int64_t valid,
                                                  meshrt_dtype dtype,
                                                  int32_t side);

/// buf of group rank `root` is copied to buf of every member (in place).
MESHRT_API meshrt_status meshrt_broadcast(meshrt_comm_t comm, void *buf,
                                          int64_t count, meshrt_dtype dtype,
                                          int64_t root);

/// Group rank g sends send to group rank g + offset (mod n with
/// MESHRT_PERMUTE_WRAP) and receives into recv from g - offset. A rank with
/// no source keeps recv untouched, or zeroed with MESHRT_PERMUTE_ZERO_FILL.
MESHRT_API meshrt_status meshrt_permute(meshrt_comm_t comm, const void *send,
                                        void *recv, int64_t count,
                                        meshrt_dtype dtype, int64_t offset,
                                        int32_t flags);

/// Returns once every member has entered the barrier.
MESHRT_API meshrt_status meshrt_barrier(meshrt_comm_t comm);

/* ---- Point to point ----------------------------------------------------
 * Between two world ranks of the default context, on its world communicator
 * (for transfers between meshes, e.g. pipeline stages). Blocking: send
 * returns when `send` may be reused, recv when the data has arrived. Messages
 * from one rank to another with the same tag arrive in the order sent. The
 * receiver names the sender (no wildcard), and count and dtype must match
 * the sender's. `tag` is in [0, 32767]; the NCCL backend has no tags and
 * accepts only tag 0 (other tags are MESHRT_ERROR_UNSUPPORTED), and needs
 * device buffers. A peer equal to this process's rank is
 * MESHRT_ERROR_INVALID_ARGUMENT (it would wait for itself). A count of 0
 * sends and receives nothing.
 * ------------------------------------------------------------------------ */

/// Sends `count` elements at `send` to world rank `peer`.
MESHRT_API meshrt_status meshrt_send(const void *send, int64_t count,
                                     meshrt_dtype dtype, int64_t peer,
                                     int64_t tag);

/// Receives `count` elements from world rank `peer` into `recv`.
MESHRT_API meshrt_status meshrt_recv(void *recv, int64_t count,
                                     meshrt_dtype dtype, int64_t peer,
                                     int64_t tag);

/* ---- Contractions -------------------------------------------------------
 * Dense products computed by the CBLAS libmeshrt loads (OpenBLAS, with
 * dlopen at the first product), for the contractions of compiled host code
 * (the mesh-linalg-to-blas pass). Needs no meshrt_init. Strides are in
 * elements and may be anything, 0 included: the library reads row-major and
 * column-major operands as they are, and the call copies any other operand into
 * a packed buffer first (thread-local, reused across calls). f16 and bf16 are
 * widened to f32 around an sgemm and the result rounded once. One BLAS thread
 * per process unless MESHRT_BLAS_THREADS=n (or the library's own variable, such
 * as OPENBLAS_NUM_THREADS) says otherwise. A negative size, a null buffer with
 * a non-empty product, or a dtype other than f16/bf16/f32/f64 is an error.
 * ------------------------------------------------------------------------ */

/// For each b < batch: C[b] = A[b] * B[b], plus C[b]'s old value when
/// `accumulate` is non-zero. A[b] is m x k, B[b] k x n, C[b] m x n; element
/// (i, j) of A[b] is at a + b * a_batch_stride + i * a_row_stride +
/// j * a_col_stride, and likewise for B and C.
MESHRT_API meshrt_status meshrt_gemm(
    meshrt_dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
    const void *a, int64_t a_batch_stride, int64_t a_row_stride,
    int64_t a_col_stride, const void *b, int64_t b_batch_stride,
    int64_t b_row_stride, int64_t b_col_stride, void *c, int64_t c_batch_stride,
    int64_t c_row_stride, int64_t c_col_stride, int32_t accumulate);

/// meshrt_gemm with A and B of `in_dtype` and C of a wider `out_dtype`: a
/// mixed-precision product (f16 or bf16 into f32 or f64, f32 into f64: A and
/// B widened exactly, one sgemm or dgemm straight into C, nothing rounded but
/// the library's own sums) or an 8-bit integer one (i8 or u8 into i32 or
/// i64: exact sums through an sgemm or dgemm that holds them, wrapping into
/// C as integer arithmetic does). Equal dtypes are meshrt_gemm; any other
/// pair is an error.
MESHRT_API meshrt_status meshrt_gemm_mixed(
    meshrt_dtype in_dtype, meshrt_dtype out_dtype, int64_t batch, int64_t m,
    int64_t n, int64_t k, const void *a, int64_t a_batch_stride,
    int64_t a_row_stride, int64_t a_col_stride, const void *b,
    int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride, void *c,
    int64_t c_batch_stride, int64_t c_row_stride, int64_t c_col_stride,
    int32_t accumulate);

/// meshrt_gemm followed by what a GPU product's epilogue does: C[b] =
/// act(A[b] * B[b] + (C[b] if `accumulate`) + bias), `bias` null or n
/// contiguous elements added to every row, act a meshrt_epilogue (GELU in
/// its tanh form, computed in double and rounded once to the dtype). On host
/// memory: the gpu-on-host test target's form of meshrt_gpu_gemm.
MESHRT_API meshrt_status meshrt_gemm_epilogue(
    meshrt_dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
    const void *a, int64_t a_batch_stride, int64_t a_row_stride,
    int64_t a_col_stride, const void *b, int64_t b_batch_stride,
    int64_t b_row_stride, int64_t b_col_stride, void *c, int64_t c_batch_stride,
    int64_t c_row_stride, int64_t c_col_stride, int32_t accumulate,
    const void *bias, int32_t epilogue);

/// meshrt_gemm_epilogue of A and B of `in_dtype` into C of `out_dtype`, as
/// meshrt_gemm_mixed widens them (f16 or bf16 into f32 or f64, f32 into
/// f64, i8 or u8 into i32 or i64), then the bias (of `out_dtype`) and the
/// activation (floats only) on C: the gpu-on-host form of
/// meshrt_gpu_gemm_mixed.
MESHRT_API meshrt_status meshrt_gemm_epilogue_mixed(
    meshrt_dtype in_dtype, meshrt_dtype out_dtype, int64_t batch, int64_t m,
    int64_t n, int64_t k, const void *a, int64_t a_batch_stride,
    int64_t a_row_stride, int64_t a_col_stride, const void *b,
    int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride, void *c,
    int64_t c_batch_stride, int64_t c_row_stride, int64_t c_col_stride,
    int32_t accumulate, const void *bias, int32_t epilogue);

/* ---- Contractions on the GPU ---------------------------------------------
 * The products of compiled GPU code (mesh-gpu-linalg-to-cublas), computed by
 * cuBLASLt (libcublasLt.so.13, or MESHRT_CUBLASLT_LIBRARY, loaded with
 * dlopen at the first product; a machine without it runs everything else,
 * and a product there fails naming the library). Operands and strides are
 * meshrt_gemm's, in elements, on device memory; the product is enqueued on
 * `stream` (null: the shared stream, see meshrt_gpu_stream) and the call
 * returns without synchronising. Each matrix needs a unit stride along its
 * rows or its columns (cuBLASLt's layouts); C's columns have a unit stride
 * when there is a bias. Row-major operands are taken by swapping the
 * operands (C^T = B^T A^T, column-major), batches as strided batches.
 * One workspace of 32 MiB per device, from the shared stream's pool.
 * ------------------------------------------------------------------------ */

/// What a GPU product applies to its result, after the bias (cuBLASLt's
/// epilogues): nothing, max(x, 0), or GELU in its tanh form,
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
// clang-format off
typedef MESHRT_ENUM(meshrt_epilogue) {
  MESHRT_EPILOGUE_NONE = 0,
  MESHRT_EPILOGUE_RELU = 1,
  MESHRT_EPILOGUE_GELU = 2
} meshrt_epilogue;
// clang-format on

/// The arithmetic of an f32 GPU product: exact f32 (cuBLAS's
/// CUBLAS_COMPUTE_32F), or inputs rounded to TF32 or BF16 with f32
/// accumulation (CUBLAS_COMPUTE_32F_FAST_TF32 / _FAST_16BF). Other types
/// compute in their own precision (f64) or accumulate in f32 (f16, bf16).
// clang-format off
typedef MESHRT_ENUM(meshrt_matmul_precision) {
  MESHRT_PRECISION_HIGHEST = 0,
  MESHRT_PRECISION_TF32 = 1,
  MESHRT_PRECISION_BF16 = 2
} meshrt_matmul_precision;
// clang-format on

/// For each b < batch: C[b] = act(A[b] * B[b] + (C[b] if `accumulate`) +
/// bias), with A, B, C and their strides as in meshrt_gemm, `bias` null or n
/// contiguous elements of the dtype added to every row of every C[b], and
/// act the `epilogue`. `plan` is the call site's slot: a pointer-sized
/// variable, null at first, where the runtime keeps the plan it made there
/// (layouts, descriptors, the heuristic's algorithm), remade only when the
/// shape, strides or options change, so the host cost of a repeated call is
/// a comparison. A null `plan` makes a plan per call. Arguments are checked
/// before anything is enqueued: a host pointer, a negative size, a matrix
/// without a unit stride or an unknown dtype, epilogue or precision fails
/// with the function's name in the message.
MESHRT_API meshrt_status meshrt_gpu_gemm(
    void **plan, meshrt_dtype dtype, int64_t batch, int64_t m, int64_t n,
    int64_t k, const void *a, int64_t a_batch_stride, int64_t a_row_stride,
    int64_t a_col_stride, const void *b, int64_t b_batch_stride,
    int64_t b_row_stride, int64_t b_col_stride, void *c, int64_t c_batch_stride,
    int64_t c_row_stride, int64_t c_col_stride, int32_t accumulate,
    const void *bias, int32_t epilogue, int32_t precision, void *stream);

/// meshrt_gpu_gemm of A and B of `in_dtype` (f16 or bf16) into C of
/// `out_dtype` (f32), accumulated in f32 (CUBLAS_COMPUTE_32F, the mixed
/// precision products of training): nothing is rounded to the inputs' type.
/// The bias has C's type; `precision` is checked but changes nothing (it
/// rounds f32 inputs, and these are 16-bit already). Other pairs (f32 into
/// f64, integers) fail: cuBLASLt has no such product.
MESHRT_API meshrt_status meshrt_gpu_gemm_mixed(
    void **plan, meshrt_dtype in_dtype, meshrt_dtype out_dtype, int64_t batch,
    int64_t m, int64_t n, int64_t k, const void *a, int64_t a_batch_stride,
    int64_t a_row_stride, int64_t a_col_stride, const void *b,
    int64_t b_batch_stride, int64_t b_row_stride, int64_t b_col_stride, void *c,
    int64_t c_batch_stride, int64_t c_row_stride, int64_t c_col_stride,
    int32_t accumulate, const void *bias, int32_t epilogue, int32_t precision,
    void *stream);

/* ---- Stream-ordered collectives -----------------------------------------
 * The same collectives, ordered on a CUDA stream (a CUstream/cudaStream_t;
 * null means the device's shared stream, see meshrt_gpu_stream). Arguments
 * are checked before anything else happens (a bad comm, count, dtype or
 * reduction fails at once with the function's name in the message). Every
 * member of the group must issue the same stream-ordered collectives in the
 * same order.
 *
 * NCCL backend: buffers must be device memory (a host pointer fails at
 * once). The call enqueues the NCCL operation and returns without
 * synchronising. Work on the buffers is ordered by the stream: kernels
 * launched before the call on the same stream produce the input, kernels
 * launched after it see the result. Errors that happen on the device (NCCL
 * asynchronous errors) and the timeout watchdog are reported by
 * meshrt_stream_synchronize.
 *
 * MPI backend: the call synchronises the stream, copies each device buffer
 * (asked with cuPointerGetAttribute; host buffers are used as they are) to a
 * host staging area, runs the MPI collective there, copies the result back,
 * and returns with the work complete (nothing is left on the stream). In
 * place (send == recv) works as in the blocking call. Correct but not fast:
 * meant for several ranks sharing one GPU (which NCCL refuses) and for
 * machines without NCCL. Without a CUDA driver, host buffers and the null
 * stream still work; a buffer the host cannot read, or a non-null stream, is
 * MESHRT_ERROR_BACKEND. Driver errors name the CUDA call and the collective.
 * ------------------------------------------------------------------------ */

/// meshrt_all_reduce, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_all_reduce_on_stream(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    meshrt_dtype dtype, meshrt_reduce_op op, void *stream);

/// meshrt_all_gather, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_all_gather_on_stream(meshrt_comm_t comm,
                                                     const void *send,
                                                     void *recv, int64_t count,
                                                     meshrt_dtype dtype,
                                                     void *stream);

/// meshrt_reduce_scatter, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_reduce_scatter_on_stream(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    meshrt_dtype dtype, meshrt_reduce_op op, void *stream);

/// meshrt_all_gather_padded, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_all_gather_padded_on_stream(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    int64_t valid, meshrt_dtype dtype, void *stream);

/// meshrt_reduce_scatter_padded, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_reduce_scatter_padded_on_stream(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    int64_t valid, meshrt_dtype dtype, meshrt_reduce_op op, void *stream);

/// meshrt_all_to_all, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_all_to_all_on_stream(meshrt_comm_t comm,
                                                     const void *send,
                                                     void *recv, int64_t count,
                                                     meshrt_dtype dtype,
                                                     void *stream);

/// meshrt_all_to_all_padded, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_all_to_all_padded_on_stream(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    int64_t valid, meshrt_dtype dtype, int32_t side, void *stream);

/// meshrt_broadcast, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_broadcast_on_stream(meshrt_comm_t comm,
                                                    void *buf, int64_t count,
                                                    meshrt_dtype dtype,
                                                    int64_t root, void *stream);

/// meshrt_permute, enqueued on `stream`.
MESHRT_API meshrt_status meshrt_permute_on_stream(
    meshrt_comm_t comm, const void *send, void *recv, int64_t count,
    meshrt_dtype dtype, int64_t offset, int32_t flags, void *stream);

/* ---- The GPU of this process ----------------------------------------------
 * Compiled GPU code (the mgpu* functions MLIR's gpu-to-llvm lowering calls,
 * which libmeshrt implements on the CUDA driver API) and the NCCL backend
 * share one device and one stream per process. These need the CUDA driver
 * (libcuda.so.1, loaded at run time) and a visible device.
 * ------------------------------------------------------------------------ */

/// The number of CUDA devices this process sees (CUDA_VISIBLE_DEVICES
/// applied), without choosing one. Fails with MESHRT_ERROR_BACKEND, naming
/// what is missing, when the driver (libcuda.so.1) cannot be loaded or
/// initialised, and with MESHRT_ERROR_UNSUPPORTED when the runtime was built
/// without CUDA.
MESHRT_API meshrt_status meshrt_gpu_device_count(int64_t *count);

/// Picks this process's CUDA device, (node-local rank) % (device count), makes
/// its primary context current on the calling thread, and returns its ordinal
/// in `*device`. The node-local rank is the NCCL backend's if meshrt_init
/// chose it first, otherwise the launcher's (OMPI_COMM_WORLD_LOCAL_RANK,
/// MPI_LOCALRANKID, SLURM_LOCALID), otherwise 0. The choice is made once per
/// process; later calls return it. Fails with MESHRT_ERROR_BACKEND, naming
/// what is missing, when the driver cannot be loaded or no device is visible.
MESHRT_API meshrt_status meshrt_gpu_select_device(int64_t *device);

/// The stream that kernels, copies, allocations and collectives of this
/// process share (created once, on the selected device; selects the device
/// first if needed). Owned by the runtime.
MESHRT_API meshrt_status meshrt_gpu_stream(void **stream);

/// Waits until everything enqueued on `stream` (null: the shared stream) has
/// finished. While waiting it checks the NCCL communicators for asynchronous
/// errors and runs under the MESHRT_TIMEOUT_S watchdog, so it reports a
/// failed or stuck collective with a message instead of hanging.
MESHRT_API meshrt_status meshrt_stream_synchronize(void *stream);

/// Frees a device buffer that compiled GPU code allocated (mgpuMemAlloc, e.g.
/// a result a compiled function returned to host code). The free is ordered
/// on the shared stream after the work already enqueued there. Null is a
/// no-op.
MESHRT_API meshrt_status meshrt_device_free(void *ptr);

/// Allocates `bytes` of device memory in stream order on the shared stream,
/// as compiled GPU code allocates its results (selects the device first if
/// needed); free it with meshrt_device_free. Zero bytes give null. For
/// bindings and hosts that hand device buffers to compiled functions.
MESHRT_API meshrt_status meshrt_device_alloc(int64_t bytes, void **ptr);

/// Enqueues a copy of `bytes` from `src` to `dst`, each host or device
/// memory, on `stream` (null: the shared stream). Host memory the copy
/// writes is ready after meshrt_stream_synchronize(stream).
MESHRT_API meshrt_status meshrt_device_copy(void *dst, const void *src,
                                            int64_t bytes, void *stream);

/// Makes `stream` (null: the shared stream) wait, on the device, for the
/// work enqueued on `producer` (null: the shared stream) so far: how a
/// buffer made on another stream (__cuda_array_interface__'s stream, a
/// DLPack producer's) is handed to compiled code without a host wait. The
/// same stream twice is a no-op.
MESHRT_API meshrt_status meshrt_stream_wait_stream(void *stream,
                                                   void *producer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MESHRT_MESHRT_H */
