//===- MpiControl.h - The control plane over MPI ----------------*- C++ -*-===//
//
// The ControlGroup of a job that an MPI launcher started: a duplicate of
// MPI_COMM_WORLD (and its splits) with errors returned, not fatal.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_MPICONTROL_H
#define MESHRT_LIB_MPICONTROL_H

#include "ControlPlane.h"

#include "MpiApi.h"

namespace meshrt {
namespace detail {

/// A control group over a duplicate of `Parent` (collective over it).
std::unique_ptr<ControlGroup> makeMpiControl(MPI_Comm Parent, const char *What);

/// The MPI communicator of `G` if it is an MPI control group, else
/// MPI_COMM_NULL (the MPI backend starts from it).
MPI_Comm mpiCommOf(ControlGroup &G);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_MPICONTROL_H
