//===- Gpu.cpp - CUDA driver state and the mgpu* functions ----------------===//
//
// The host side of compiled GPU code. MLIR's gpu-to-llvm lowering emits calls
// to mgpu* functions (module load, kernel launch, streams, events, memory);
// libmeshrt implements them here on the CUDA driver API, which it loads with
// dlopen("libcuda.so.1") on first use. Differences from a plain wrapper that
// matter for an MPI + NCCL program:
//
//  * Lazy module load. The compiled object's global constructor calls
//    mgpuModuleLoad before main, before MPI and before the device is chosen;
//    here that only records the image, and the first mgpuModuleGetFunction
//    loads it into the context of this process's device.
//  * One stream. mgpuStreamCreate returns the device's shared stream (the one
//    the NCCL backend enqueues on), mgpuStreamDestroy does nothing, so kernels
//    and collectives are ordered on one stream.
//  * Stream-ordered allocation (cuMemAllocAsync / cuMemFreeAsync).
//  * Errors name the CUDA call and its error string and end the job with exit
//    code 1 (MPI_Abort under MPI); no driver or no device is such an error.
//
//===----------------------------------------------------------------------===//

#include "Gpu.h"

#include "Abort.h"
#include "Context.h"
#include "DynamicLibrary.h"

#include "meshrt/Error.h"
#include "meshrt/meshrt.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace meshrt;
using namespace meshrt::detail;

#if MESHRT_HAVE_NCCL

#include <cuda.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

/// Prints `Msg` as a fatal runtime error and ends the job (mgpu* functions
/// have no status to return).
[[noreturn]] void gpuFatal(const std::string &Msg) {
  int64_t Rank = processRank();
  std::fflush(stderr);
  writeStderr("meshrt: rank " + std::to_string(Rank) + ": error: " + Msg +
              "\n");
  abortJob(1);
}

/// Runs `Body`; an exception ends the job with `Fn` and its message.
template <typename F>
auto fatalOnError(const char *Fn, F &&Body) -> decltype(Body()) {
  try {
    return Body();
  } catch (const std::exception &E) {
    gpuFatal(std::string(Fn) + ": " + E.what());
  }
}

int64_t localRankFromEnv() {
  for (const char *V :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "MPI_LOCALRANKID",
        "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"})
    if (const char *E = std::getenv(V); E && *E)
      return std::atoll(E);
  return 0;
}

//===----------------------------------------------------------------------===//
// The driver API, loaded at run time
//===----------------------------------------------------------------------===//

struct DriverApi {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamQuery) StreamQuery = nullptr;
  decltype(&::cuStreamWaitEvent) StreamWaitEvent = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleLoadDataEx) ModuleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuMemAllocAsync) MemAllocAsync = nullptr;
  decltype(&::cuMemFreeAsync) MemFreeAsync = nullptr;
  decltype(&::cuMemAllocManaged) MemAllocManaged = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemcpyAsync) MemcpyAsync = nullptr;
  decltype(&::cuMemsetD32Async) MemsetD32Async = nullptr;
  decltype(&::cuMemsetD16Async) MemsetD16Async = nullptr;
  decltype(&::cuEventCreate) EventCreate = nullptr;
  decltype(&::cuEventRecord) EventRecord = nullptr;
  decltype(&::cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&::cuEventDestroy) EventDestroy = nullptr;
  decltype(&::cuPointerGetAttribute) PointerGetAttribute = nullptr;
  /// Optional (null if absent): only widens the known device memory memo.
  decltype(&::cuMemGetAddressRange) MemGetAddressRange = nullptr;
  /// Optional: keeping freed memory in the stream-ordered pool.
  decltype(&::cuDeviceGetDefaultMemPool) DeviceGetDefaultMemPool = nullptr;
  decltype(&::cuMemPoolSetAttribute) MemPoolSetAttribute = nullptr;
  bool Loaded = false;
  std::string Error;
};

/// Opens the driver (MESHRT_CUDA_DRIVER_LIBRARY overrides the name) and binds
/// the entry points, under the names cuda.h maps them to.
void loadDriver(DriverApi &D) {
  const char *Name = std::getenv("MESHRT_CUDA_DRIVER_LIBRARY");
  if (!Name || !*Name)
    Name = "libcuda.so.1";
  void *Lib = dlopen(Name, RTLD_NOW | RTLD_LOCAL);
  if (!Lib) {
    D.Error = std::string("cannot load the CUDA driver (") + Name +
              "): " + dlerror() +
              "; GPU code needs an NVIDIA driver and a visible GPU";
    return;
  }
  std::string Missing;
  bind(Lib, "cuInit", D.Init, Missing);
  bind(Lib, "cuGetErrorString", D.GetErrorString, Missing);
  bind(Lib, "cuGetErrorName", D.GetErrorName, Missing);
  bind(Lib, "cuDeviceGetCount", D.DeviceGetCount, Missing);
  bind(Lib, "cuDeviceGet", D.DeviceGet, Missing);
  bind(Lib, "cuDevicePrimaryCtxRetain", D.PrimaryCtxRetain, Missing);
  bind(Lib, "cuCtxSetCurrent", D.CtxSetCurrent, Missing);
  bind(Lib, "cuStreamCreate", D.StreamCreate, Missing);
  bind(Lib, "cuStreamQuery", D.StreamQuery, Missing);
  bind(Lib, "cuStreamWaitEvent", D.StreamWaitEvent, Missing);
  bind(Lib, "cuModuleLoadData", D.ModuleLoadData, Missing);
  bind(Lib, "cuModuleLoadDataEx", D.ModuleLoadDataEx, Missing);
  bind(Lib, "cuModuleUnload", D.ModuleUnload, Missing);
  bind(Lib, "cuModuleGetFunction", D.ModuleGetFunction, Missing);
  bind(Lib, "cuLaunchKernel", D.LaunchKernel, Missing);
  bind(Lib, "cuMemAllocAsync", D.MemAllocAsync, Missing);
  bind(Lib, "cuMemFreeAsync", D.MemFreeAsync, Missing);
  bind(Lib, "cuMemAllocManaged", D.MemAllocManaged, Missing);
  bind(Lib, "cuMemFree_v2", D.MemFree, Missing);
  bind(Lib, "cuMemcpyAsync", D.MemcpyAsync, Missing);
  bind(Lib, "cuMemsetD32Async", D.MemsetD32Async, Missing);
  bind(Lib, "cuMemsetD16Async", D.MemsetD16Async, Missing);
  bind(Lib, "cuEventCreate", D.EventCreate, Missing);
  bind(Lib, "cuEventRecord", D.EventRecord, Missing);
  bind(Lib, "cuEventSynchronize", D.EventSynchronize, Missing);
  bind(Lib, "cuEventDestroy_v2", D.EventDestroy, Missing);
  bind(Lib, "cuPointerGetAttribute", D.PointerGetAttribute, Missing);
  std::string Optional;
  bind(Lib, "cuMemGetAddressRange_v2", D.MemGetAddressRange, Optional);
  bind(Lib, "cuDeviceGetDefaultMemPool", D.DeviceGetDefaultMemPool, Optional);
  bind(Lib, "cuMemPoolSetAttribute", D.MemPoolSetAttribute, Optional);
  if (!Missing.empty()) {
    D.Error = std::string("the CUDA driver ") + Name +
              " lacks what meshrt needs (CUDA >= 11.2): " + Missing;
    return;
  }
  D.Loaded = true;
}

/// The driver, loaded on first use. Never destroyed: the compiled object's
/// global destructor (mgpuModuleUnload) may run after libmeshrt's statics.
const DriverApi &driver() {
  static DriverApi *D = new DriverApi;
  static std::once_flag Once;
  std::call_once(Once, [] { loadDriver(*D); });
  if (!D->Loaded)
    throw Error(MESHRT_ERROR_BACKEND, D->Error);
  return *D;
}

/// The driver if it loaded, else null (no exception).
const DriverApi *loadedDriver() {
  try {
    return &driver();
  } catch (const Error &) {
    return nullptr;
  }
}

/// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
[[noreturn]] void driverFail(CUresult R, const std::string &What) {
  const DriverApi &D = driver();
  const char *Name = nullptr, *Str = nullptr;
  D.GetErrorName(R, &Name);
  D.GetErrorString(R, &Str);
  throw Error(MESHRT_ERROR_BACKEND,
              What + " failed: " + (Name ? Name : "CUDA error") + " (" +
                  (Str ? Str : "unknown") + ", code " + std::to_string(R) +
                  ")");
}

inline void check(CUresult R, const char *What) {
  if (R != CUDA_SUCCESS)
    driverFail(R, What);
}

//===----------------------------------------------------------------------===//
// The device of this process
//===----------------------------------------------------------------------===//

struct Device {
  std::mutex Mutex;
  /// A device is selected and the fields below are set (written once, under
  /// Mutex; read without it).
  std::atomic<bool> Ready{false};
  int Ordinal = -1;
  CUcontext Ctx = nullptr;
  CUstream Stream = nullptr;
  std::set<void *> Managed; // Host-shared allocations (cuMemFree, not async).
  std::atomic<size_t> ManagedCount{0}; // Managed.size(), read without Mutex.
};

Device &device() {
  static Device *D = new Device; // Never destroyed: used by exit handlers.
  return *D;
}

thread_local CUcontext CurrentCtx = nullptr;

Device &selected(int64_t LocalRank = -1) {
  Device &Dev = device();
  if (__builtin_expect(!Dev.Ready.load(std::memory_order_acquire), 0)) {
    std::lock_guard<std::mutex> Lock(Dev.Mutex);
    if (!Dev.Ready.load(std::memory_order_relaxed)) {
      const DriverApi &D = driver();
      int Count = gpuDeviceCount();
      if (Count < 1)
        throw Error(MESHRT_ERROR_BACKEND,
                    "no CUDA device is visible (cuDeviceGetCount returned 0; "
                    "check CUDA_VISIBLE_DEVICES)");
      int64_t Local = LocalRank >= 0 ? LocalRank : localRankFromEnv();
      int Ordinal = int(Local % Count);
      CUdevice Handle;
      check(D.DeviceGet(&Handle, Ordinal), "cuDeviceGet");
      check(D.PrimaryCtxRetain(&Dev.Ctx, Handle), "cuDevicePrimaryCtxRetain");
      check(D.CtxSetCurrent(Dev.Ctx), "cuCtxSetCurrent");
      check(D.StreamCreate(&Dev.Stream, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate (the shared stream)");
      // Compiled code allocates and frees a buffer per result on the
      // stream; by default the pool gives memory back to the system at
      // every synchronisation, so each call would map it again. Keep it.
      if (D.DeviceGetDefaultMemPool && D.MemPoolSetAttribute) {
        CUmemoryPool Pool;
        if (D.DeviceGetDefaultMemPool(&Pool, Handle) == CUDA_SUCCESS) {
          cuuint64_t Keep = ~cuuint64_t(0);
          D.MemPoolSetAttribute(Pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &Keep);
        }
      }
      Dev.Ordinal = Ordinal;
      Dev.Ready.store(true, std::memory_order_release);
    }
  }
  if (CurrentCtx != Dev.Ctx) {
    check(driver().CtxSetCurrent(Dev.Ctx), "cuCtxSetCurrent");
    CurrentCtx = Dev.Ctx;
  }
  return Dev;
}

CUstream streamOrShared(void *S) {
  return S ? static_cast<CUstream>(S) : selected().Stream;
}

//===----------------------------------------------------------------------===//
// Known device memory (see Gpu.h)
//===----------------------------------------------------------------------===//

/// Bumped by gpuForgetDeviceMemory; a thread's memo of an older generation
/// is stale.
std::atomic<uint64_t> DeviceMemoryGeneration{1};

/// A thread's memo: a few allocation ranges [Lo, Hi), replaced round-robin.
/// Constant-initialised, so the thread_local needs no construction guard.
struct KnownDeviceMemory {
  static constexpr unsigned kEntries = 32;
  uint64_t Generation = 0;
  uint64_t FreesSeen = 0; // FreedLog::Count when last brought up to date.
  unsigned Next = 0;
  unsigned LastHit = 0; // Looked at first: a chain asks about one buffer.
  uintptr_t Lo[kEntries] = {};
  uintptr_t Hi[kEntries] = {}; // Lo == Hi: an empty entry.
};

thread_local KnownDeviceMemory Known;

/// Buffers of the shared stream kept for reuse. Compiled code allocates a
/// buffer per result and frees it after its last use, all on the shared
/// stream; a buffer freed there and handed out again there is ordered by the
/// stream like cuMemFreeAsync + cuMemAllocAsync, without their cost (about a
/// microsecond each). Exact sizes, most recently freed first, at most
/// kMaxBuffers kept; others go back to the stream-ordered pool.
class ReuseCache {
public:
  /// A kept buffer of exactly `Bytes`, now live again; 0 if none.
  CUdeviceptr take(size_t Bytes) {
    std::lock_guard<std::mutex> Lock(Mutex);
    if (Live.size() == kMaxLive)
      return 0;
    auto It = Free.find(Bytes);
    if (It == Free.end() || It->second.empty())
      return 0;
    uintptr_t P = It->second.back();
    It->second.pop_back();
    --Kept;
    Live.push_back({P, Bytes});
    return CUdeviceptr(P);
  }
  /// Records a new buffer of the shared stream, so that its free can keep it
  /// (unless kMaxLive are tracked: then its free goes to the driver).
  void track(CUdeviceptr P, size_t Bytes) {
    std::lock_guard<std::mutex> Lock(Mutex);
    if (Live.size() < kMaxLive)
      Live.push_back({uintptr_t(P), Bytes});
  }
  /// Keeps the freed buffer `P` if it is tracked and there is room; false
  /// when the caller must give it back to the driver.
  bool keep(CUdeviceptr P) {
    std::lock_guard<std::mutex> Lock(Mutex);
    // Most recent last: compiled code frees what it allocated last first.
    auto It = std::find_if(Live.rbegin(), Live.rend(), [&](const auto &E) {
      return E.first == uintptr_t(P);
    });
    if (It == Live.rend())
      return false;
    size_t Bytes = It->second;
    *It = Live.back();
    Live.pop_back();
    if (Kept == kMaxBuffers)
      return false;
    Free[Bytes].push_back(uintptr_t(P));
    ++Kept;
    return true;
  }
  /// True if `A` points into a kept buffer.
  bool holds(uintptr_t A) {
    std::lock_guard<std::mutex> Lock(Mutex);
    for (auto &[Bytes, Ptrs] : Free)
      for (uintptr_t Base : Ptrs)
        if (A - Base < Bytes)
          return true;
    return false;
  }
  /// Hands every kept buffer to `Release` and forgets it.
  template <typename F> void releaseAll(F &&Release) {
    std::lock_guard<std::mutex> Lock(Mutex);
    for (auto &[Bytes, Ptrs] : Free) {
      for (uintptr_t P : Ptrs)
        Release(CUdeviceptr(P));
      Ptrs.clear();
    }
    Kept = 0;
  }

private:
  static constexpr size_t kMaxBuffers = 256;
  static constexpr size_t kMaxLive = 1024;
  std::mutex Mutex;
  // Allocated here and live, with their sizes: a flat list (no node to
  // allocate per buffer; a compiled function has few buffers live at once).
  std::vector<std::pair<uintptr_t, size_t>> Live;
  std::unordered_map<size_t, std::vector<uintptr_t>> Free;
  size_t Kept = 0;
};

ReuseCache &reuseCache() {
  static ReuseCache *C = new ReuseCache; // Never destroyed: used at exit.
  return *C;
}

/// The device memory the runtime freed, most recent last: a thread's memo
/// drops the ranges that hold these pointers, and only those, when it next
/// looks (a free no longer empties every memo, so compiled code that frees a
/// buffer per result keeps the others).
struct FreedLog {
  static constexpr unsigned kSlots = 64;
  std::mutex Mutex;
  uintptr_t Ptr[kSlots] = {};
  std::atomic<uint64_t> Count{0}; // Frees logged; slot = index % kSlots.
};

FreedLog &freedLog() {
  static FreedLog *L = new FreedLog; // Never destroyed: used at exit.
  return *L;
}

/// Drops the range that holds `A` from `K`.
void forget(KnownDeviceMemory &K, uintptr_t A) {
  for (unsigned I = 0; I < KnownDeviceMemory::kEntries; ++I)
    if (A - K.Lo[I] < K.Hi[I] - K.Lo[I])
      K.Lo[I] = K.Hi[I] = 0;
}

/// Brings this thread's memo up to date: empty after a generation change,
/// without the freed ranges otherwise.
KnownDeviceMemory &currentMemo() {
  KnownDeviceMemory &K = Known;
  uint64_t Generation = DeviceMemoryGeneration.load(std::memory_order_acquire);
  if (__builtin_expect(K.Generation != Generation, 0)) {
    // A communicator went away: start over. Entries recorded after this
    // belong to `Generation`, read before the caller asks the driver, so a
    // change racing with that question empties them again at the next look.
    K = KnownDeviceMemory();
    K.Generation = Generation;
    K.FreesSeen = freedLog().Count.load(std::memory_order_acquire);
    return K;
  }
  FreedLog &L = freedLog();
  if (__builtin_expect(K.FreesSeen != L.Count.load(std::memory_order_acquire),
                       0)) {
    std::lock_guard<std::mutex> Lock(L.Mutex);
    uint64_t Now = L.Count.load(std::memory_order_relaxed);
    if (Now - K.FreesSeen > FreedLog::kSlots) {
      for (unsigned I = 0; I < KnownDeviceMemory::kEntries; ++I)
        K.Lo[I] = K.Hi[I] = 0; // Too many to replay: forget all.
    } else {
      for (uint64_t F = K.FreesSeen; F < Now; ++F)
        forget(K, L.Ptr[F % FreedLog::kSlots]);
    }
    K.FreesSeen = Now;
  }
  return K;
}

void remember(KnownDeviceMemory &K, uintptr_t Lo, uintptr_t Hi) {
  unsigned I = K.Next;
  K.Lo[I] = Lo;
  K.Hi[I] = Hi;
  K.Next = (I + 1) % KnownDeviceMemory::kEntries;
}

//===----------------------------------------------------------------------===//
// Modules, loaded lazily
//===----------------------------------------------------------------------===//

/// What mgpuModuleLoad returns: the image, and the module once loaded.
struct LazyModule {
  LazyModule(const void *Image, bool Jit, int OptLevel)
      : Image(Image), Jit(Jit), OptLevel(OptLevel) {}
  const void *Image;
  bool Jit;
  int OptLevel;
  CUmodule Module = nullptr;
  std::mutex Mutex;
};

CUmodule loaded(LazyModule &M) {
  selected();
  std::lock_guard<std::mutex> Lock(M.Mutex);
  if (M.Module)
    return M.Module;
  const DriverApi &D = driver();
  if (!M.Jit) {
    check(D.ModuleLoadData(&M.Module, M.Image), "cuModuleLoadData");
    return M.Module;
  }
  char Log[8192] = {0};
  CUjit_option Opts[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_OPTIMIZATION_LEVEL};
  void *Vals[] = {Log, reinterpret_cast<void *>(sizeof(Log) - 1),
                  reinterpret_cast<void *>(intptr_t(M.OptLevel))};
  CUresult R = D.ModuleLoadDataEx(&M.Module, M.Image, 3, Opts, Vals);
  if (R != CUDA_SUCCESS)
    driverFail(R, std::string("cuModuleLoadDataEx (PTX JIT: ") + Log + ")");
  return M.Module;
}

} // namespace

//===----------------------------------------------------------------------===//
// meshrt::detail
//===----------------------------------------------------------------------===//

int meshrt::detail::gpuSelectDevice(int64_t LocalRank) {
  return selected(LocalRank).Ordinal;
}

void *meshrt::detail::gpuSharedStream() { return selected().Stream; }

void meshrt::detail::gpuMakeCurrent() { selected(); }

int meshrt::detail::gpuDeviceCount() {
  const DriverApi &D = driver(); // Throws, naming the library, if absent.
  check(D.Init(0), "cuInit");
  int Count = 0;
  check(D.DeviceGetCount(&Count), "cuDeviceGetCount");
  return Count;
}

void meshrt::detail::gpuPollStream(void *Stream, const char *Op,
                                   const char *When) {
  CUstream S = streamOrShared(Stream);
  const DriverApi &D = driver();
  for (unsigned Spin = 0;; ++Spin) {
    CUresult R = D.StreamQuery(S);
    if (R == CUDA_SUCCESS)
      return;
    if (R != CUDA_ERROR_NOT_READY)
      driverFail(R, std::string(Op) +
                        (When ? std::string(" (") + When + ")" : "") +
                        ": cuStreamQuery");
    if (Spin > 2000)
      std::this_thread::yield();
  }
}

void meshrt::detail::gpuFree(void *Ptr, void *Stream, const char *Op) {
  if (!Ptr)
    return;
  {
    FreedLog &L = freedLog();
    uint64_t N;
    {
      std::lock_guard<std::mutex> Lock(L.Mutex);
      N = L.Count.load(std::memory_order_relaxed);
      L.Ptr[N % FreedLog::kSlots] = reinterpret_cast<uintptr_t>(Ptr);
      L.Count.store(N + 1, std::memory_order_release);
    }
    // This thread's memo, if it had seen every earlier free, takes this one
    // now, so that its next look need not replay the log under the lock.
    KnownDeviceMemory &K = Known;
    if (K.FreesSeen == N && K.Generation == DeviceMemoryGeneration.load(
                                                std::memory_order_acquire)) {
      forget(K, reinterpret_cast<uintptr_t>(Ptr));
      K.FreesSeen = N + 1;
    }
  }
  Device &Dev = selected();
  bool Managed = false;
  if (Dev.ManagedCount.load(std::memory_order_acquire) != 0) {
    std::lock_guard<std::mutex> Lock(Dev.Mutex);
    Managed = Dev.Managed.erase(Ptr) != 0;
    Dev.ManagedCount.store(Dev.Managed.size(), std::memory_order_release);
  }
  const DriverApi &D = driver();
  CUdeviceptr P = reinterpret_cast<CUdeviceptr>(Ptr);
  CUstream S = streamOrShared(Stream);
  if (!Managed && S == Dev.Stream && reuseCache().keep(P))
    return;
  CUresult R = Managed ? D.MemFree(P) : D.MemFreeAsync(P, S);
  if (R != CUDA_SUCCESS)
    driverFail(R, std::string(Op) +
                      (Managed ? ": cuMemFree" : ": cuMemFreeAsync"));
}

void meshrt::detail::gpuReleaseKeptBuffers() {
  Device &Dev = device();
  if (!Dev.Ready.load(std::memory_order_acquire))
    return;
  selected();
  reuseCache().releaseAll([&](CUdeviceptr P) {
    check(driver().MemFreeAsync(P, Dev.Stream),
          "cuMemFreeAsync (a buffer kept for reuse)");
  });
}

bool meshrt::detail::gpuKeptForReuse(const void *P) {
  if (!device().Ready.load(std::memory_order_acquire))
    return false;
  return reuseCache().holds(reinterpret_cast<uintptr_t>(P));
}

bool meshrt::detail::gpuTryMakeCurrent(std::string &Why) {
  try {
    selected();
    return true;
  } catch (const Error &E) {
    Why = E.what();
    return false;
  }
}

bool meshrt::detail::gpuIsDeviceMemory(const void *P, const char *Op) {
  unsigned int Type = 0;
  CUresult R =
      driver().PointerGetAttribute(&Type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   reinterpret_cast<CUdeviceptr>(P));
  // Host memory the driver does not know (malloc, the stack) is an invalid
  // value to it.
  if (R == CUDA_ERROR_INVALID_VALUE)
    return false;
  if (R != CUDA_SUCCESS)
    driverFail(R,
               std::string(Op) +
                   ": cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)");
  return Type != CU_MEMORYTYPE_HOST;
}

bool meshrt::detail::gpuKnownDeviceMemory(const void *P) {
  KnownDeviceMemory &K = currentMemo();
  uintptr_t A = reinterpret_cast<uintptr_t>(P);
  unsigned H = K.LastHit;
  if (A - K.Lo[H] < K.Hi[H] - K.Lo[H])
    return true;
  for (unsigned I = 0; I < KnownDeviceMemory::kEntries; ++I)
    if (A - K.Lo[I] < K.Hi[I] - K.Lo[I]) {
      K.LastHit = I;
      return true;
    }
  return false;
}

void meshrt::detail::gpuRememberDeviceMemory(const void *P) {
  KnownDeviceMemory &K = currentMemo();
  uintptr_t Lo = reinterpret_cast<uintptr_t>(P), Hi = Lo + 1;
  const DriverApi *D = loadedDriver();
  if (D && D->MemGetAddressRange) {
    CUdeviceptr Base = 0;
    size_t Bytes = 0;
    if (D->MemGetAddressRange(
            &Base, &Bytes, reinterpret_cast<CUdeviceptr>(P)) == CUDA_SUCCESS &&
        Base <= Lo && Lo - Base < Bytes) {
      Lo = Base;
      Hi = Base + Bytes;
    }
  }
  remember(K, Lo, Hi);
}

void meshrt::detail::gpuForgetDeviceMemory() {
  DeviceMemoryGeneration.fetch_add(1, std::memory_order_acq_rel);
}

void *meshrt::detail::gpuAlloc(size_t Bytes, void *Stream, const char *What) {
  Device &Dev = selected();
  CUdeviceptr P = 0;
  CUstream S = streamOrShared(Stream);
  bool Shared = S == Dev.Stream;
  if (Shared)
    P = reuseCache().take(Bytes);
  if (!P) {
    CUresult R = driver().MemAllocAsync(&P, Bytes, S);
    if (R != CUDA_SUCCESS)
      driverFail(R, What);
    if (Shared)
      reuseCache().track(P, Bytes);
  }
  // Device memory by construction: the collectives that read or write it
  // need not ask the driver.
  remember(currentMemo(), uintptr_t(P), uintptr_t(P) + Bytes);
  return reinterpret_cast<void *>(P);
}

void meshrt::detail::gpuZeroAsync(void *Dst, size_t Bytes, void *Stream,
                                  const char *What) {
  CUdeviceptr P = reinterpret_cast<CUdeviceptr>(Dst);
  CUstream S = streamOrShared(Stream);
  bool Words = Bytes % 4 == 0 && P % 4 == 0;
  CUresult R = Words ? driver().MemsetD32Async(P, 0, Bytes / 4, S)
                     : driver().MemsetD16Async(P, 0, Bytes / 2, S);
  if (R != CUDA_SUCCESS)
    driverFail(R, std::string(What) +
                      (Words ? ": cuMemsetD32Async" : ": cuMemsetD16Async"));
}

void meshrt::detail::gpuCopyAsync(void *Dst, const void *Src, size_t Bytes,
                                  void *Stream, const char *Op,
                                  const char *What) {
  CUresult R = driver().MemcpyAsync(reinterpret_cast<CUdeviceptr>(Dst),
                                    reinterpret_cast<CUdeviceptr>(Src), Bytes,
                                    streamOrShared(Stream));
  if (R != CUDA_SUCCESS)
    driverFail(R, std::string(Op) + ": cuMemcpyAsync (" + What + ")");
}

void meshrt::detail::gpuStreamWaitStream(void *Stream, void *Producer) {
  CUstream Waiter = streamOrShared(Stream);
  CUstream From = streamOrShared(Producer);
  if (Waiter == From)
    return;
  CUevent E = nullptr;
  check(driver().EventCreate(&E, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  CUresult R = driver().EventRecord(E, From);
  if (R == CUDA_SUCCESS)
    R = driver().StreamWaitEvent(Waiter, E, 0);
  // An event destroyed after the wait is enqueued still orders the wait.
  driver().EventDestroy(E);
  check(R, "cuEventRecord/cuStreamWaitEvent");
}

namespace {
std::atomic<int64_t> StreamSynchronizations{0};
} // namespace

int64_t meshrt::detail::gpuStreamSynchronizations() {
  return StreamSynchronizations.load(std::memory_order_relaxed);
}

void meshrt::detail::gpuSynchronize(void *Stream, const char *Op) {
  StreamSynchronizations.fetch_add(1, std::memory_order_relaxed);
  void *S = Stream ? Stream : gpuSharedStream();
  std::shared_ptr<Context> C = defaultContext();
  if (C && C->hasBackend(MESHRT_BACKEND_NCCL)) {
    C->synchronizeStream(S, Op);
    return;
  }
  gpuPollStream(S, Op);
}

//===----------------------------------------------------------------------===//
// The mgpu* functions (C names and types as MLIR 22's gpu-to-llvm emits them)
//===----------------------------------------------------------------------===//

extern "C" {

/// Records the image (cubin, fatbin or PTX) for a lazy load.
MESHRT_API void *mgpuModuleLoad(void *Data, size_t /*Size*/) {
  return new LazyModule(Data, /*Jit=*/false, 0);
}

/// Records a PTX image for a lazy JIT load at `OptLevel`.
MESHRT_API void *mgpuModuleLoadJIT(void *Data, int OptLevel) {
  return new LazyModule(Data, /*Jit=*/true, OptLevel);
}

/// Unloads the module (errors ignored: this runs in a global destructor,
/// possibly after the driver has shut down) and forgets it.
MESHRT_API void mgpuModuleUnload(void *Module) {
  auto *M = static_cast<LazyModule *>(Module);
  if (!M)
    return;
  if (M->Module)
    if (const DriverApi *D = [] {
          try {
            return &driver();
          } catch (...) {
            return static_cast<const DriverApi *>(nullptr);
          }
        }())
      D->ModuleUnload(M->Module);
  delete M;
}

/// Loads the module into this process's device on first use and returns the
/// kernel `Name`.
MESHRT_API CUfunction mgpuModuleGetFunction(void *Module, const char *Name) {
  return fatalOnError("mgpuModuleGetFunction", [&] {
    CUfunction F = nullptr;
    CUresult R = driver().ModuleGetFunction(
        &F, loaded(*static_cast<LazyModule *>(Module)), Name);
    if (R != CUDA_SUCCESS)
      driverFail(R, std::string("cuModuleGetFunction(") + Name + ")");
    return F;
  });
}

/// Launches `F` on `Stream` (null: the shared stream). Empty grids are not
/// launched.
MESHRT_API void mgpuLaunchKernel(CUfunction F, intptr_t GridX, intptr_t GridY,
                                 intptr_t GridZ, intptr_t BlockX,
                                 intptr_t BlockY, intptr_t BlockZ,
                                 int32_t SharedMem, CUstream Stream,
                                 void **Params, void **Extra,
                                 size_t /*NumParams*/) {
  if (GridX * GridY * GridZ == 0 || BlockX * BlockY * BlockZ == 0)
    return;
  fatalOnError("mgpuLaunchKernel", [&] {
    CUstream S = streamOrShared(Stream);
    check(driver().LaunchKernel(F, unsigned(GridX), unsigned(GridY),
                                unsigned(GridZ), unsigned(BlockX),
                                unsigned(BlockY), unsigned(BlockZ),
                                unsigned(SharedMem), S, Params, Extra),
          "cuLaunchKernel");
  });
}

/// The shared stream: compiled code and collectives use one stream.
MESHRT_API CUstream mgpuStreamCreate() {
  return fatalOnError("mgpuStreamCreate",
                      [] { return static_cast<CUstream>(gpuSharedStream()); });
}

/// Does nothing: the shared stream lives as long as the process.
MESHRT_API void mgpuStreamDestroy(CUstream) {}

/// meshrt_stream_synchronize, ending the job on an error.
MESHRT_API void mgpuStreamSynchronize(CUstream Stream) {
  fatalOnError("mgpuStreamSynchronize",
               [&] { gpuSynchronize(Stream, "stream_synchronize"); });
}

/// Makes `Stream` wait for `Event`.
MESHRT_API void mgpuStreamWaitEvent(CUstream Stream, CUevent Event) {
  fatalOnError("mgpuStreamWaitEvent", [&] {
    check(driver().StreamWaitEvent(streamOrShared(Stream), Event, 0),
          "cuStreamWaitEvent");
  });
}

/// A new event without timing.
MESHRT_API CUevent mgpuEventCreate() {
  return fatalOnError("mgpuEventCreate", [] {
    selected();
    CUevent E = nullptr;
    check(driver().EventCreate(&E, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    return E;
  });
}

/// Destroys `Event`.
MESHRT_API void mgpuEventDestroy(CUevent Event) {
  fatalOnError("mgpuEventDestroy",
               [&] { check(driver().EventDestroy(Event), "cuEventDestroy"); });
}

/// Waits on the host for `Event`.
MESHRT_API void mgpuEventSynchronize(CUevent Event) {
  fatalOnError("mgpuEventSynchronize", [&] {
    check(driver().EventSynchronize(Event), "cuEventSynchronize");
  });
}

/// Records `Event` on `Stream`.
MESHRT_API void mgpuEventRecord(CUevent Event, CUstream Stream) {
  fatalOnError("mgpuEventRecord", [&] {
    check(driver().EventRecord(Event, streamOrShared(Stream)), "cuEventRecord");
  });
}

/// Allocates `Bytes` of device memory in stream order on `Stream` (null: the
/// shared stream), or managed memory when `HostShared`. Zero bytes give null.
MESHRT_API void *mgpuMemAlloc(uint64_t Bytes, CUstream Stream,
                              bool HostShared) {
  if (Bytes == 0)
    return nullptr;
  return fatalOnError("mgpuMemAlloc", [&] {
    Device &Dev = selected();
    CUdeviceptr P = 0;
    if (HostShared) {
      check(driver().MemAllocManaged(&P, Bytes, CU_MEM_ATTACH_GLOBAL),
            "cuMemAllocManaged");
      std::lock_guard<std::mutex> Lock(Dev.Mutex);
      Dev.Managed.insert(reinterpret_cast<void *>(P));
      Dev.ManagedCount.store(Dev.Managed.size(), std::memory_order_release);
      return reinterpret_cast<void *>(P);
    }
    return gpuAlloc(Bytes, Stream, "cuMemAllocAsync");
  });
}

/// Frees `Ptr` in stream order on `Stream`.
MESHRT_API void mgpuMemFree(void *Ptr, CUstream Stream) {
  fatalOnError("mgpuMemFree", [&] { gpuFree(Ptr, Stream, "free"); });
}

/// Copies `Bytes` from `Src` to `Dst` (host or device) on `Stream`.
MESHRT_API void mgpuMemcpy(void *Dst, void *Src, size_t Bytes,
                           CUstream Stream) {
  if (Bytes == 0)
    return;
  fatalOnError("mgpuMemcpy", [&] {
    check(driver().MemcpyAsync(reinterpret_cast<CUdeviceptr>(Dst),
                               reinterpret_cast<CUdeviceptr>(Src), Bytes,
                               streamOrShared(Stream)),
          "cuMemcpyAsync");
  });
}

/// Sets `Count` 32-bit words at `Dst` to `Value` on `Stream`.
MESHRT_API void mgpuMemset32(void *Dst, unsigned int Value, size_t Count,
                             CUstream Stream) {
  if (Count == 0)
    return;
  fatalOnError("mgpuMemset32", [&] {
    check(driver().MemsetD32Async(reinterpret_cast<CUdeviceptr>(Dst), Value,
                                  Count, streamOrShared(Stream)),
          "cuMemsetD32Async");
  });
}

/// Sets `Count` 16-bit words at `Dst` to `Value` on `Stream`.
MESHRT_API void mgpuMemset16(void *Dst, unsigned short Value, size_t Count,
                             CUstream Stream) {
  if (Count == 0)
    return;
  fatalOnError("mgpuMemset16", [&] {
    check(driver().MemsetD16Async(reinterpret_cast<CUdeviceptr>(Dst), Value,
                                  Count, streamOrShared(Stream)),
          "cuMemsetD16Async");
  });
}

/// Selects device `Device` if none is selected yet; a different device after
/// the runtime already chose one is an error (one device per process).
MESHRT_API void mgpuSetDefaultDevice(int32_t Ordinal) {
  fatalOnError("mgpuSetDefaultDevice", [&] {
    {
      Device &Dev = device();
      std::lock_guard<std::mutex> Lock(Dev.Mutex);
      if (Dev.Ready.load(std::memory_order_relaxed) && Dev.Ordinal != Ordinal)
        throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                    "mgpuSetDefaultDevice(" + std::to_string(Ordinal) +
                        "): this process already uses device " +
                        std::to_string(Dev.Ordinal) +
                        " (meshrt uses one device per process)");
    }
    selected(Ordinal);
  });
}

} // extern "C"

#else // !MESHRT_HAVE_NCCL

namespace {
[[noreturn]] void noCuda() {
  throw Error(MESHRT_ERROR_UNSUPPORTED,
              "meshrt was built without CUDA (the CUDA toolkit and NCCL were "
              "not found when it was configured)");
}
} // namespace

int meshrt::detail::gpuSelectDevice(int64_t) { noCuda(); }
void *meshrt::detail::gpuSharedStream() { noCuda(); }
void meshrt::detail::gpuMakeCurrent() { noCuda(); }
int meshrt::detail::gpuDeviceCount() { noCuda(); }
void meshrt::detail::gpuPollStream(void *, const char *, const char *) {
  noCuda();
}
void meshrt::detail::gpuReleaseKeptBuffers() {}
bool meshrt::detail::gpuKeptForReuse(const void *) { return false; }
void meshrt::detail::gpuFree(void *Ptr, void *, const char *) {
  if (Ptr)
    noCuda();
}
void meshrt::detail::gpuSynchronize(void *, const char *) { noCuda(); }
int64_t meshrt::detail::gpuStreamSynchronizations() { return 0; }
bool meshrt::detail::gpuTryMakeCurrent(std::string &Why) {
  Why = "meshrt was built without CUDA (the CUDA toolkit and NCCL were not "
        "found when it was configured)";
  return false;
}
bool meshrt::detail::gpuIsDeviceMemory(const void *, const char *) { noCuda(); }
bool meshrt::detail::gpuKnownDeviceMemory(const void *) { return false; }
void meshrt::detail::gpuRememberDeviceMemory(const void *) {}
void meshrt::detail::gpuForgetDeviceMemory() {}
void *meshrt::detail::gpuAlloc(size_t, void *, const char *) { noCuda(); }
void meshrt::detail::gpuZeroAsync(void *, size_t, void *, const char *) {
  noCuda();
}
void meshrt::detail::gpuCopyAsync(void *, const void *, size_t, void *,
                                  const char *, const char *) {
  noCuda();
}
void meshrt::detail::gpuStreamWaitStream(void *, void *) { noCuda(); }

#endif // MESHRT_HAVE_NCCL
