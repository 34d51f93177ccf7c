//===- GlooBackend.h - The gloo backend, loaded at run time -----*- C++ -*-===//
//
// A CPU backend on gloo's TCP transport, for jobs started without MPI: the
// ranks meet through the key-value store of Store.h. libmeshrt does not link
// gloo; GlooBackend.cpp dlopens libmeshrt_gloo.so (runtime/gloo), which
// does, and calls it through the C table of gloo/GlooPluginApi.h.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_GLOOBACKEND_H
#define MESHRT_LIB_GLOOBACKEND_H

#include "Backend.h"

#include <cstdint>
#include <memory>
#include <string>

namespace meshrt {
namespace detail {

class StoreClient;

/// True if this libmeshrt was built with the gloo plugin (MESHRT_HAVE_GLOO).
bool glooBackendBuilt();

/// True if the gloo plugin and libgloo load in this process. Otherwise sets
/// `Why` to a reason naming the file, the loader's error and what to
/// install.
///
/// The plugin is MESHRT_GLOO_PLUGIN when that is set (and nothing else),
/// else libmeshrt_gloo.so in the directory of libmeshrt itself, else
/// libmeshrt_gloo.so as the loader finds it (LD_LIBRARY_PATH, rpath).
bool glooAvailable(std::string &Why);

/// Creates the gloo backend for rank `Rank` of `Size`. Its communicators meet
/// through `Store` (which must outlive the backend and its communicators'
/// creation) under the key prefix `Prefix`: "<Prefix>/w" for the world,
/// "<Prefix>/s<n>" for the n-th split, so every backend of a run needs its
/// own prefix. `TimeoutSeconds` (0: none) bounds each rendezvous and each
/// operation; a peer that does not arrive, exits or stalls is an error
/// (MESHRT_ERROR_BACKEND) naming the communicator and gloo's reason, never a
/// hang. Throws meshrt::Error: MESHRT_ERROR_BACKEND if the plugin cannot be
/// loaded (see glooAvailable), MESHRT_ERROR_INVALID_ARGUMENT for a rank,
/// size or timeout out of range.
std::unique_ptr<Backend> createGlooBackend(StoreClient &Store,
                                           const std::string &Prefix,
                                           int64_t Rank, int64_t Size,
                                           double TimeoutSeconds);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_GLOOBACKEND_H
