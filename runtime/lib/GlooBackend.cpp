//===- GlooBackend.cpp - The gloo backend's side in libmeshrt -------------===//
//
// The Backend and BackendComm of the gloo backend, as thin wrappers of the C
// table that libmeshrt_gloo.so (runtime/gloo/GlooPlugin.cpp) exports. The
// plugin is loaded with dlopen on first use, so that libmeshrt loads and
// runs its other backends where gloo is not installed; a missing plugin or
// libgloo is an error with a message (MESHRT_ERROR_BACKEND), never a crash.
// A plugin that loads stays loaded for the life of the process.
//
// The plugin's communicators meet through the host's key-value store: this
// file gives it the store as C callbacks (set, get, wait, check) on a
// StoreClient, and picks the key prefix of each communicator: "<prefix>/w"
// for the world, "<prefix>/s<n>" for the n-th split (splits are collective
// over the world, so every rank counts them alike).
//
// The gloo backend moves host memory only: stream-ordered calls
// (meshrt_*_on_stream) are MESHRT_ERROR_UNSUPPORTED on it.
//
//===----------------------------------------------------------------------===//

#include "GlooBackend.h"
#include "DynamicLibrary.h"
#include "GlooPluginApi.h"
#include "Store.h"

#include "meshrt/Error.h"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

//===----------------------------------------------------------------------===//
// Loading the plugin
//===----------------------------------------------------------------------===//

/// A loaded plugin: its file and its table.
struct GlooPlugin {
  std::string Path;
  MeshrtGlooPluginApi Api;
};

/// The directory of the file this code was loaded from (libmeshrt, or the
/// executable it is linked into), with a trailing '/'; "" if unknown.
std::string ownDirectory() {
  Dl_info Info;
  if (!dladdr(reinterpret_cast<void *>(&glooAvailable), &Info) ||
      !Info.dli_fname)
    return "";
  std::string File = Info.dli_fname;
  size_t Slash = File.rfind('/');
  return Slash == std::string::npos ? "" : File.substr(0, Slash + 1);
}

/// The reason every failure to load ends with.
constexpr const char *InstallHint =
    "the gloo backend needs libmeshrt_gloo.so (built next to libmeshrt when "
    "gloo is found at configure time; MESHRT_GLOO_PLUGIN names another) and "
    "libgloo.so.0 (Debian package libgloo0: apt-get install libgloo0)";

/// Loads the plugin (see glooAvailable for where it is looked for) or sets
/// `Why`. Plugins that loaded are kept, one per file, and never unloaded
/// (nor freed at exit: a communicator destroyed by another static's
/// destructor still calls into its plugin).
const GlooPlugin *loadPlugin(std::string &Why) {
  static std::mutex Mutex;
  static auto &Loaded = *new std::map<void *, std::unique_ptr<GlooPlugin>>;
  std::lock_guard<std::mutex> Lock(Mutex);
#if !MESHRT_HAVE_GLOO
  if (const char *Env = std::getenv("MESHRT_GLOO_PLUGIN"); !Env || !*Env) {
    Why = "this libmeshrt was built without gloo (configure it with "
          "libgloo-dev installed, or MESHRT_ENABLE_GLOO=ON), and "
          "MESHRT_GLOO_PLUGIN names no plugin";
    return nullptr;
  }
#endif
  std::string Beside = ownDirectory();
  if (!Beside.empty())
    Beside += MESHRT_GLOO_PLUGIN_FILE;
  std::string Tried;
  void *Handle = openFirst("MESHRT_GLOO_PLUGIN",
                           {Beside.c_str(), MESHRT_GLOO_PLUGIN_FILE}, Tried);
  if (!Handle) {
    while (!Tried.empty() && (Tried.back() == ' ' || Tried.back() == ';'))
      Tried.pop_back();
    Why = "cannot load the gloo plugin (" + Tried + "): " + InstallHint;
    return nullptr;
  }
  if (auto It = Loaded.find(Handle); It != Loaded.end()) {
    dlclose(Handle); // Balances this dlopen; the first one keeps it loaded.
    return It->second.get();
  }
  std::string Path = "?";
  link_map *Map = nullptr;
  if (dlinfo(Handle, RTLD_DI_LINKMAP, &Map) == 0 && Map && Map->l_name)
    Path = Map->l_name;
  MeshrtGlooPluginEntry Entry = nullptr;
  std::string Missing;
  if (!bind(Handle, MESHRT_GLOO_PLUGIN_ENTRY, Entry, Missing)) {
    dlclose(Handle);
    Why = "the library loaded as the gloo plugin, " + Path +
          ", is not one (it has no symbol " MESHRT_GLOO_PLUGIN_ENTRY "): " +
          InstallHint;
    return nullptr;
  }
  auto P = std::make_unique<GlooPlugin>();
  P->Path = Path;
  std::memset(&P->Api, 0, sizeof(P->Api));
  if (Entry(&P->Api, sizeof(P->Api)) != MESHRT_SUCCESS ||
      P->Api.Version != MESHRT_GLOO_PLUGIN_API_VERSION ||
      P->Api.StructSize < sizeof(P->Api)) {
    dlclose(Handle);
    Why = "the gloo plugin " + Path + " speaks version " +
          std::to_string(P->Api.Version) + " of the plugin interface (" +
          std::to_string(P->Api.StructSize) + "-byte table), this libmeshrt " +
          std::to_string(MESHRT_GLOO_PLUGIN_API_VERSION) + " (" +
          std::to_string(sizeof(P->Api)) +
          " bytes): use the plugin built with this libmeshrt";
    return nullptr;
  }
  return (Loaded[Handle] = std::move(P)).get();
}

/// The plugin, or throws MESHRT_ERROR_BACKEND saying why it does not load.
const GlooPlugin &requirePlugin() {
  std::string Why;
  if (const GlooPlugin *P = loadPlugin(Why))
    return *P;
  throw Error(MESHRT_ERROR_BACKEND, Why);
}

//===----------------------------------------------------------------------===//
// The store, as the plugin's callbacks
//===----------------------------------------------------------------------===//

void put(MeshrtGlooSink *Sink, const std::string &Bytes) {
  if (Sink && Sink->Put)
    Sink->Put(Sink->Ctx, Bytes.data(), Bytes.size());
}

/// Runs `Body` for a callback: what it throws becomes a status and a message
/// in `Err` (nothing crosses into the plugin).
template <typename F>
meshrt_status callback(MeshrtGlooSink *Err, F &&Body) noexcept {
  try {
    Body();
    return MESHRT_SUCCESS;
  } catch (const Error &E) {
    put(Err, E.what());
    return E.status();
  } catch (const std::exception &E) {
    put(Err, std::string("store: ") + E.what());
    return MESHRT_ERROR_BACKEND;
  } catch (...) {
    put(Err, "store: an unknown exception");
    return MESHRT_ERROR_BACKEND;
  }
}

StoreClient &client(void *Ctx) { return *static_cast<StoreClient *>(Ctx); }

std::vector<std::string> keyList(const char *const *Keys, size_t N) {
  return std::vector<std::string>(Keys, Keys + N);
}

meshrt_status storeSet(void *Ctx, const char *Key, const void *Data,
                       size_t Size, MeshrtGlooSink *Err) {
  return callback(Err, [&] {
    client(Ctx).set(Key, std::string(static_cast<const char *>(Data), Size));
  });
}

meshrt_status storeGet(void *Ctx, const char *Key, double TimeoutSeconds,
                       MeshrtGlooSink *Value, MeshrtGlooSink *Err) {
  return callback(Err,
                  [&] { put(Value, client(Ctx).get(Key, TimeoutSeconds)); });
}

meshrt_status storeWait(void *Ctx, const char *const *Keys, size_t NumKeys,
                        double TimeoutSeconds, MeshrtGlooSink *Err) {
  return callback(
      Err, [&] { client(Ctx).wait(keyList(Keys, NumKeys), TimeoutSeconds); });
}

meshrt_status storeCheck(void *Ctx, const char *const *Keys, size_t NumKeys,
                         uint8_t *Exists, MeshrtGlooSink *Err) {
  return callback(Err, [&] {
    std::vector<std::string> Missing =
        client(Ctx).missing(keyList(Keys, NumKeys));
    for (size_t I = 0, J = 0; I < NumKeys; ++I) {
      bool Absent = J < Missing.size() && Missing[J] == Keys[I];
      J += Absent;
      Exists[I] = !Absent;
    }
  });
}

MeshrtGlooStore storeCallbacks(StoreClient &S) {
  return {&S, &storeSet, &storeGet, &storeWait, &storeCheck};
}

//===----------------------------------------------------------------------===//
// Communicators and the backend
//===----------------------------------------------------------------------===//

/// Throws the plugin's last error if `S` is not MESHRT_SUCCESS.
void check(const GlooPlugin &P, meshrt_status S) {
  if (__builtin_expect(S != MESHRT_SUCCESS, 0))
    throw Error(S, P.Api.LastError());
}

class GlooComm final : public BackendComm {
public:
  GlooComm(const GlooPlugin &P, MeshrtGlooComm *C) : C(C), P(P) {
    Rank = P.Api.Rank(C);
    Size = P.Api.Size(C);
  }
  ~GlooComm() override { P.Api.Destroy(C); }
  GlooComm(const GlooComm &) = delete;
  GlooComm &operator=(const GlooComm &) = delete;

  void allReduce(const void *Send, void *Recv, int64_t Count, meshrt_dtype T,
                 meshrt_reduce_op Op) override {
    hostOnly("all_reduce");
    check(P, P.Api.AllReduce(C, Send, Recv, Count, T, Op));
  }
  void allGather(const void *Send, void *Recv, int64_t Count,
                 meshrt_dtype T) override {
    hostOnly("all_gather");
    check(P, P.Api.AllGather(C, Send, Recv, Count, T));
  }
  void reduceScatter(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T, meshrt_reduce_op Op) override {
    hostOnly("reduce_scatter");
    check(P, P.Api.ReduceScatter(C, Send, Recv, Count, T, Op));
  }
  void allGatherPadded(const void *Send, void *Recv, int64_t Count,
                       int64_t Valid, meshrt_dtype T) override {
    hostOnly("all_gather_padded");
    check(P, P.Api.AllGatherPadded(C, Send, Recv, Count, Valid, T));
  }
  void reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                           int64_t Valid, meshrt_dtype T,
                           meshrt_reduce_op Op) override {
    hostOnly("reduce_scatter_padded");
    check(P, P.Api.ReduceScatterPadded(C, Send, Recv, Count, Valid, T, Op));
  }
  void allToAll(const void *Send, void *Recv, int64_t Count,
                meshrt_dtype T) override {
    hostOnly("all_to_all");
    check(P, P.Api.AllToAll(C, Send, Recv, Count, T));
  }
  void allToAllPadded(const void *Send, void *Recv, int64_t Count,
                      int64_t Valid, meshrt_dtype T, int32_t Side) override {
    hostOnly("all_to_all_padded");
    check(P, P.Api.AllToAllPadded(C, Send, Recv, Count, Valid, T, Side));
  }
  void broadcast(void *Buf, int64_t Count, meshrt_dtype T,
                 int64_t Root) override {
    hostOnly("broadcast");
    check(P, P.Api.Broadcast(C, Buf, Count, T, Root));
  }
  void sendRecv(const void *Send, int64_t Dest, void *Recv, int64_t Source,
                int64_t Count, meshrt_dtype T, bool ZeroFill) override {
    hostOnly("permute");
    check(P, P.Api.SendRecv(C, Send, Dest, Recv, Source, Count, T,
                            ZeroFill ? 1 : 0));
  }
  void send(const void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag) override {
    hostOnly("send");
    check(P, P.Api.Send(C, Buf, Count, T, Peer, Tag));
  }
  void recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag) override {
    hostOnly("recv");
    check(P, P.Api.Recv(C, Buf, Count, T, Peer, Tag));
  }
  void barrier() override { check(P, P.Api.Barrier(C)); }
  /// A gloo::Context* (gloo::rendezvous::Context), owned by this
  /// communicator and valid while it lives. gloo's collectives take a
  /// std::shared_ptr<gloo::Context>: wrap it in one with a no-op deleter.
  /// Only code built against the same gloo may use it.
  void *nativeHandle() override { return P.Api.NativeHandle(C); }

  /// The plugin's communicator.
  MeshrtGlooComm *C;

private:
  /// Throws MESHRT_ERROR_UNSUPPORTED for a stream-ordered call.
  void hostOnly(const char *Op) const {
    if (__builtin_expect(OnStream, 0))
      throw Error(MESHRT_ERROR_UNSUPPORTED,
                  std::string(Op) +
                      ": stream-ordered collectives are not supported on the "
                      "gloo backend (it moves host memory only); use the "
                      "NCCL or MPI backend for them");
  }

  const GlooPlugin &P;
};

class GlooBackend final : public Backend {
public:
  GlooBackend(const GlooPlugin &P, StoreClient &Store, std::string Prefix,
              int64_t Rank, int64_t Size, double TimeoutSeconds)
      : P(P), Store(Store), Prefix(std::move(Prefix)), Rank(Rank), Size(Size),
        TimeoutSeconds(TimeoutSeconds) {}

  meshrt_backend kind() const override { return MESHRT_BACKEND_GLOO; }
  const char *name() const override { return "gloo"; }
  std::string version() const override {
    return std::string("gloo ") + (P.Api.GlooVersion ? P.Api.GlooVersion : "?");
  }

  std::unique_ptr<BackendComm> createWorld() override {
    std::string Key = Prefix + "/w" + (Worlds ? std::to_string(Worlds) : "");
    ++Worlds;
    MeshrtGlooStore S = storeCallbacks(Store);
    MeshrtGlooComm *C = nullptr;
    check(P, P.Api.CreateWorld(&S, Key.c_str(), Rank, Size, TimeoutSeconds,
                               "world", &C));
    return std::make_unique<GlooComm>(P, C);
  }

  std::unique_ptr<BackendComm> split(BackendComm &World, int64_t Color,
                                     int64_t Key,
                                     const std::string &Label) override {
    std::string Sub = Prefix + "/s" + std::to_string(Splits++);
    MeshrtGlooStore S = storeCallbacks(Store);
    MeshrtGlooComm *C = nullptr;
    check(P, P.Api.Split(static_cast<GlooComm &>(World).C, &S, Sub.c_str(),
                         Color, Key, Label.c_str(), &C));
    if (!C)
      return nullptr; // A negative color: no group, as asked.
    return std::make_unique<GlooComm>(P, C);
  }

  // Every reduction runs (bitwise ones on integers, as the generic checks
  // require): checkReduction keeps the default.

private:
  const GlooPlugin &P;
  StoreClient &Store;
  std::string Prefix;
  int64_t Rank, Size;
  double TimeoutSeconds;
  /// Worlds and splits made so far (their key prefixes).
  uint64_t Worlds = 0, Splits = 0;
};

} // namespace

bool meshrt::detail::glooBackendBuilt() {
#if MESHRT_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

bool meshrt::detail::glooAvailable(std::string &Why) {
  return loadPlugin(Why) != nullptr;
}

std::unique_ptr<Backend>
meshrt::detail::createGlooBackend(StoreClient &Store, const std::string &Prefix,
                                  int64_t Rank, int64_t Size,
                                  double TimeoutSeconds) {
  if (Size < 1 || Size > INT_MAX || Rank < 0 || Rank >= Size)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "gloo backend: rank " + std::to_string(Rank) + " of " +
                    std::to_string(Size) +
                    " is out of range (gloo takes up "
                    "to 2^31-1 ranks)");
  if (!(TimeoutSeconds >= 0) || std::isinf(TimeoutSeconds))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                "gloo backend: the timeout must be a number of seconds >= 0 "
                "(0: none)");
  return std::make_unique<GlooBackend>(requirePlugin(), Store, Prefix, Rank,
                                       Size, TimeoutSeconds);
}
