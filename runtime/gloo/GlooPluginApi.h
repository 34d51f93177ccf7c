/*===- GlooPluginApi.h - The C table of the gloo plugin -----------*- C -*-===*\
|*                                                                            *|
|* libmeshrt does not link gloo: its gloo backend (lib/GlooBackend.cpp)       *|
|* dlopens libmeshrt_gloo.so (gloo/GlooPlugin.cpp, which links libgloo),      *|
|* asks its one exported symbol, MESHRT_GLOO_PLUGIN_ENTRY, for this table of  *|
|* C function pointers, and calls gloo only through it. Plain C on purpose:   *|
|* nothing of C++ (no exception, no std::string, no allocation freed on the   *|
|* other side) crosses between the two libraries.                             *|
|*                                                                            *|
|* Conventions:                                                               *|
|*  - Every call that can fail returns a meshrt_status; on failure the        *|
|*    message is the plugin's LastError() on the calling thread (valid until  *|
|*    that thread's next call into the plugin).                               *|
|*  - Counts, dtypes, reductions, roots and peers follow BackendComm          *|
|*    (lib/Backend.h): the host calls with arguments already checked.         *|
|*  - Byte strings coming back (a store value, an error message) are handed   *|
|*    to a MeshrtGlooSink, which copies them; the caller owns nothing of the  *|
|*    callee's.                                                               *|
|*  - The store callbacks are the host's; the plugin calls them only while    *|
|*    CreateWorld or Split runs, on the calling thread, and keeps no pointer  *|
|*    to them afterwards.                                                     *|
|*                                                                            *|
|* Versions: the entry's name carries the ABI generation (v1): a change that  *|
|* is not an addition at the end of MeshrtGlooPluginApi gets a new name.      *|
|* Additions bump MESHRT_GLOO_PLUGIN_API_VERSION; the table's StructSize      *|
|* tells the host how much of it the plugin filled.                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef MESHRT_GLOO_GLOOPLUGINAPI_H
#define MESHRT_GLOO_GLOOPLUGINAPI_H

#include "meshrt/meshrt.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The version of the table below (additions at its end bump it).
#define MESHRT_GLOO_PLUGIN_API_VERSION 1
/// The one symbol the plugin exports (a MeshrtGlooPluginEntry).
#define MESHRT_GLOO_PLUGIN_ENTRY "meshrt_gloo_plugin_v1"
/// The plugin's file name, looked up next to libmeshrt, then by the loader.
#define MESHRT_GLOO_PLUGIN_FILE "libmeshrt_gloo.so"

/// A communicator of the plugin: the world or one group of a split (opaque).
typedef struct MeshrtGlooComm MeshrtGlooComm;

/// Receives bytes from the other side of a call: `Put` copies `Size` bytes
/// at `Data` (not null-terminated) and may be called at most once per call.
typedef struct MeshrtGlooSink {
  void *Ctx;
  void (*Put)(void *Ctx, const void *Data, size_t Size);
} MeshrtGlooSink;

/// The host's key-value store, through which the members of a communicator
/// exchange their addresses (gloo's rendezvous::Store). Keys are
/// null-terminated and already carry the communicator's prefix. On failure a
/// callback returns the status and puts its message into `Err`.
typedef struct MeshrtGlooStore {
  void *Ctx;
  /// Sets `Key` to the `Size` bytes at `Data`.
  meshrt_status (*Set)(void *Ctx, const char *Key, const void *Data,
                       size_t Size, MeshrtGlooSink *Err);
  /// Puts the value of `Key` into `Value`, waiting up to `TimeoutSeconds`
  /// for it to be set.
  meshrt_status (*Get)(void *Ctx, const char *Key, double TimeoutSeconds,
                       MeshrtGlooSink *Value, MeshrtGlooSink *Err);
  /// Waits up to `TimeoutSeconds` until all `NumKeys` keys are set.
  meshrt_status (*Wait)(void *Ctx, const char *const *Keys, size_t NumKeys,
                        double TimeoutSeconds, MeshrtGlooSink *Err);
  /// Sets `Exists[i]` to 1 if `Keys[i]` is set, else 0, without waiting
  /// (for messages naming the ranks that did not arrive).
  meshrt_status (*Check)(void *Ctx, const char *const *Keys, size_t NumKeys,
                         uint8_t *Exists, MeshrtGlooSink *Err);
} MeshrtGlooStore;

/// The table of the plugin's entry points.
typedef struct MeshrtGlooPluginApi {
  /// sizeof(MeshrtGlooPluginApi) in the plugin: how much of it is filled.
  uint32_t StructSize;
  /// MESHRT_GLOO_PLUGIN_API_VERSION of the plugin.
  uint32_t Version;
  /// The gloo the plugin was built against ("0.5.0").
  const char *GlooVersion;

  /// The message of the last failed call on this thread ("" if none).
  const char *(*LastError)(void);

  /// Connects the world: rank `Rank` of `Size` meets the others under the
  /// key prefix `Prefix` of `Store` and connects a gloo full mesh over TCP.
  /// `TimeoutSeconds` (0: none) bounds the rendezvous and every later
  /// operation of the communicator and of its splits; `Label` names it in
  /// messages. Collective over the `Size` processes.
  meshrt_status (*CreateWorld)(const MeshrtGlooStore *Store, const char *Prefix,
                               int64_t Rank, int64_t Size,
                               double TimeoutSeconds, const char *Label,
                               MeshrtGlooComm **Out);
  /// Splits `World` (collective over it): members with the same `Color`
  /// form a group ordered by (`Key`, rank in `World`), which connects its own
  /// full mesh under "<Prefix>/<Color>" (so `Prefix` must differ between
  /// splits). A negative `Color` takes part and gets *Out = NULL.
  meshrt_status (*Split)(MeshrtGlooComm *World, const MeshrtGlooStore *Store,
                         const char *Prefix, int64_t Color, int64_t Key,
                         const char *Label, MeshrtGlooComm **Out);
  /// Closes the communicator's connections and frees it (NULL: nothing).
  void (*Destroy)(MeshrtGlooComm *Comm);
  /// This process's rank in `Comm`.
  int64_t (*Rank)(const MeshrtGlooComm *Comm);
  /// The number of members of `Comm`.
  int64_t (*Size)(const MeshrtGlooComm *Comm);

  /// See BackendComm::allReduce (Send == Recv: in place).
  meshrt_status (*AllReduce)(MeshrtGlooComm *Comm, const void *Send, void *Recv,
                             int64_t Count, meshrt_dtype Type,
                             meshrt_reduce_op Op);
  /// See BackendComm::allGather.
  meshrt_status (*AllGather)(MeshrtGlooComm *Comm, const void *Send, void *Recv,
                             int64_t Count, meshrt_dtype Type);
  /// See BackendComm::reduceScatter.
  meshrt_status (*ReduceScatter)(MeshrtGlooComm *Comm, const void *Send,
                                 void *Recv, int64_t Count, meshrt_dtype Type,
                                 meshrt_reduce_op Op);
  /// See BackendComm::allGatherPadded.
  meshrt_status (*AllGatherPadded)(MeshrtGlooComm *Comm, const void *Send,
                                   void *Recv, int64_t Count, int64_t Valid,
                                   meshrt_dtype Type);
  /// See BackendComm::reduceScatterPadded.
  meshrt_status (*ReduceScatterPadded)(MeshrtGlooComm *Comm, const void *Send,
                                       void *Recv, int64_t Count, int64_t Valid,
                                       meshrt_dtype Type, meshrt_reduce_op Op);
  /// See BackendComm::allToAll.
  meshrt_status (*AllToAll)(MeshrtGlooComm *Comm, const void *Send, void *Recv,
                            int64_t Count, meshrt_dtype Type);
  /// See BackendComm::allToAllPadded.
  meshrt_status (*AllToAllPadded)(MeshrtGlooComm *Comm, const void *Send,
                                  void *Recv, int64_t Count, int64_t Valid,
                                  meshrt_dtype Type, int32_t Side);
  /// See BackendComm::broadcast.
  meshrt_status (*Broadcast)(MeshrtGlooComm *Comm, void *Buf, int64_t Count,
                             meshrt_dtype Type, int64_t Root);
  /// See BackendComm::sendRecv (ZeroFill: 0 or 1).
  meshrt_status (*SendRecv)(MeshrtGlooComm *Comm, const void *Send,
                            int64_t Dest, void *Recv, int64_t Source,
                            int64_t Count, meshrt_dtype Type, int32_t ZeroFill);
  /// See BackendComm::send.
  meshrt_status (*Send)(MeshrtGlooComm *Comm, const void *Buf, int64_t Count,
                        meshrt_dtype Type, int64_t Peer, int64_t Tag);
  /// See BackendComm::recv.
  meshrt_status (*Recv)(MeshrtGlooComm *Comm, void *Buf, int64_t Count,
                        meshrt_dtype Type, int64_t Peer, int64_t Tag);
  /// See BackendComm::barrier.
  meshrt_status (*Barrier)(MeshrtGlooComm *Comm);
  /// The communicator's gloo::Context* (a gloo::rendezvous::Context, owned
  /// by `Comm` and valid while it lives).
  void *(*NativeHandle)(MeshrtGlooComm *Comm);
} MeshrtGlooPluginApi;

/// The entry point: fills the first `OutSize` bytes of `*Out` (at most the
/// plugin's whole table) and returns MESHRT_SUCCESS. Never fails for a
/// non-null `Out`; the host checks Version and StructSize.
typedef meshrt_status (*MeshrtGlooPluginEntry)(MeshrtGlooPluginApi *Out,
                                               size_t OutSize);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* MESHRT_GLOO_GLOOPLUGINAPI_H */
