//===- MpiApi.h - libmpi, loaded at run time --------------------*- C++ -*-===//
//
// libmeshrt does not link libmpi: a process that never uses MPI (a torchrun
// job on gloo or NCCL, a machine without Open MPI) never loads it. The MPI
// functions and predefined handles the runtime uses are bound on first use
// from the library MESHRT_MPI_LIBRARY names, else the one the build found
// (by its soname). Code under runtime/lib includes this header instead of
// <mpi.h>: it includes <mpi.h> for the types and constants, then redirects
// each function and each handle that is the address of a library global
// (Open MPI's MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) to the loaded table,
// so the call sites read as plain MPI. Constants that are plain values
// (MPI_IN_PLACE, MPI_UNDEFINED, MPI_PROC_NULL, ...) stay as mpi.h has them.
//
// The handle names are Open MPI's (the MPI of the project's dependencies);
// with an MPI whose handles are integer constants (MPICH) the table takes
// them from mpi.h as they are.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_MPIAPI_H
#define MESHRT_LIB_MPIAPI_H

#include <mpi.h>

#include <string>

namespace meshrt {
namespace detail {

#define MESHRT_MPI_FUNCTIONS(X)                                                \
  X(Abort)                                                                     \
  X(Allgather)                                                                 \
  X(Allgatherv)                                                                \
  X(Allreduce)                                                                 \
  X(Alltoall)                                                                  \
  X(Alltoallv)                                                                 \
  X(Barrier)                                                                   \
  X(Bcast)                                                                     \
  X(Comm_dup)                                                                  \
  X(Comm_free)                                                                 \
  X(Comm_rank)                                                                 \
  X(Comm_set_errhandler)                                                       \
  X(Comm_size)                                                                 \
  X(Comm_split)                                                                \
  X(Comm_split_type)                                                           \
  X(Error_string)                                                              \
  X(Finalize)                                                                  \
  X(Finalized)                                                                 \
  X(Get_count)                                                                 \
  X(Get_library_version)                                                       \
  X(Ibarrier)                                                                  \
  X(Init_thread)                                                               \
  X(Initialized)                                                               \
  X(Op_create)                                                                 \
  X(Op_free)                                                                   \
  X(Recv)                                                                      \
  X(Reduce_scatter)                                                            \
  X(Reduce_scatter_block)                                                      \
  X(Send)                                                                      \
  X(Sendrecv)                                                                  \
  X(Test)

/// The bound functions and handles.
struct MpiApi {
#define MESHRT_MPI_MEMBER(Name) decltype(&::MPI_##Name) Name = nullptr;
  MESHRT_MPI_FUNCTIONS(MESHRT_MPI_MEMBER)
#undef MESHRT_MPI_MEMBER
  MPI_Comm CommWorld{}, CommNull{};
  MPI_Datatype Byte{}, Float{}, Double{}, Int8{}, Int32{}, Int64{}, Uint8{},
      Uint16{}, DatatypeNull{};
  MPI_Op Sum{}, Prod{}, Min{}, Max{}, Band{}, Bor{}, Bxor{}, OpNull{};
  MPI_Info InfoNull{};
  MPI_Errhandler ErrorsReturn{};
};

/// libmpi's table, loading it on first use. Throws meshrt::Error
/// (MESHRT_ERROR_BACKEND) naming the library and what is missing when it
/// cannot be loaded.
const MpiApi &mpiApi();

/// Loads libmpi if it is not yet; false, with the reason in `Why`, when it
/// cannot be.
bool mpiTryLoad(std::string &Why);

/// Whether libmpi is loaded in this process (false until something used
/// MPI): what "is MPI initialised?" asks first, so that a job without MPI
/// never loads it.
bool mpiLoaded();

/// The library mpiApi loads: MESHRT_MPI_LIBRARY, else the build's.
std::string mpiLibraryName();

} // namespace detail
} // namespace meshrt

// Redirect the handles that are library globals, and the functions, to the
// table.
#undef MPI_COMM_WORLD
#define MPI_COMM_WORLD (::meshrt::detail::mpiApi().CommWorld)
#undef MPI_COMM_NULL
#define MPI_COMM_NULL (::meshrt::detail::mpiApi().CommNull)
#undef MPI_BYTE
#define MPI_BYTE (::meshrt::detail::mpiApi().Byte)
#undef MPI_FLOAT
#define MPI_FLOAT (::meshrt::detail::mpiApi().Float)
#undef MPI_DOUBLE
#define MPI_DOUBLE (::meshrt::detail::mpiApi().Double)
#undef MPI_INT8_T
#define MPI_INT8_T (::meshrt::detail::mpiApi().Int8)
#undef MPI_INT32_T
#define MPI_INT32_T (::meshrt::detail::mpiApi().Int32)
#undef MPI_INT64_T
#define MPI_INT64_T (::meshrt::detail::mpiApi().Int64)
#undef MPI_UINT8_T
#define MPI_UINT8_T (::meshrt::detail::mpiApi().Uint8)
#undef MPI_UINT16_T
#define MPI_UINT16_T (::meshrt::detail::mpiApi().Uint16)
#undef MPI_DATATYPE_NULL
#define MPI_DATATYPE_NULL (::meshrt::detail::mpiApi().DatatypeNull)
#undef MPI_SUM
#define MPI_SUM (::meshrt::detail::mpiApi().Sum)
#undef MPI_PROD
#define MPI_PROD (::meshrt::detail::mpiApi().Prod)
#undef MPI_MIN
#define MPI_MIN (::meshrt::detail::mpiApi().Min)
#undef MPI_MAX
#define MPI_MAX (::meshrt::detail::mpiApi().Max)
#undef MPI_BAND
#define MPI_BAND (::meshrt::detail::mpiApi().Band)
#undef MPI_BOR
#define MPI_BOR (::meshrt::detail::mpiApi().Bor)
#undef MPI_BXOR
#define MPI_BXOR (::meshrt::detail::mpiApi().Bxor)
#undef MPI_OP_NULL
#define MPI_OP_NULL (::meshrt::detail::mpiApi().OpNull)
#undef MPI_INFO_NULL
#define MPI_INFO_NULL (::meshrt::detail::mpiApi().InfoNull)
#undef MPI_ERRORS_RETURN
#define MPI_ERRORS_RETURN (::meshrt::detail::mpiApi().ErrorsReturn)

#define MPI_Abort (::meshrt::detail::mpiApi().Abort)
#define MPI_Allgather (::meshrt::detail::mpiApi().Allgather)
#define MPI_Allgatherv (::meshrt::detail::mpiApi().Allgatherv)
#define MPI_Allreduce (::meshrt::detail::mpiApi().Allreduce)
#define MPI_Alltoall (::meshrt::detail::mpiApi().Alltoall)
#define MPI_Alltoallv (::meshrt::detail::mpiApi().Alltoallv)
#define MPI_Barrier (::meshrt::detail::mpiApi().Barrier)
#define MPI_Bcast (::meshrt::detail::mpiApi().Bcast)
#define MPI_Comm_dup (::meshrt::detail::mpiApi().Comm_dup)
#define MPI_Comm_free (::meshrt::detail::mpiApi().Comm_free)
#define MPI_Comm_rank (::meshrt::detail::mpiApi().Comm_rank)
#define MPI_Comm_set_errhandler (::meshrt::detail::mpiApi().Comm_set_errhandler)
#define MPI_Comm_size (::meshrt::detail::mpiApi().Comm_size)
#define MPI_Comm_split (::meshrt::detail::mpiApi().Comm_split)
#define MPI_Comm_split_type (::meshrt::detail::mpiApi().Comm_split_type)
#define MPI_Error_string (::meshrt::detail::mpiApi().Error_string)
#define MPI_Finalize (::meshrt::detail::mpiApi().Finalize)
#define MPI_Finalized (::meshrt::detail::mpiApi().Finalized)
#define MPI_Get_count (::meshrt::detail::mpiApi().Get_count)
#define MPI_Get_library_version (::meshrt::detail::mpiApi().Get_library_version)
#define MPI_Ibarrier (::meshrt::detail::mpiApi().Ibarrier)
#define MPI_Init_thread (::meshrt::detail::mpiApi().Init_thread)
#define MPI_Initialized (::meshrt::detail::mpiApi().Initialized)
#define MPI_Op_create (::meshrt::detail::mpiApi().Op_create)
#define MPI_Op_free (::meshrt::detail::mpiApi().Op_free)
#define MPI_Recv (::meshrt::detail::mpiApi().Recv)
#define MPI_Reduce_scatter (::meshrt::detail::mpiApi().Reduce_scatter)
#define MPI_Reduce_scatter_block                                               \
  (::meshrt::detail::mpiApi().Reduce_scatter_block)
#define MPI_Send (::meshrt::detail::mpiApi().Send)
#define MPI_Sendrecv (::meshrt::detail::mpiApi().Sendrecv)
#define MPI_Test (::meshrt::detail::mpiApi().Test)

#endif // MESHRT_LIB_MPIAPI_H
