//===- FakeCuda.cpp - A host-memory stand-in for the CUDA driver ----------===//
//
// Test-only. Built as libcuda.so.1 next to the emulated libcudart and libnccl,
// which link to it and share its allocation table, so that libmeshrt's GPU
// code (Gpu.cpp: the mgpu* functions and the shared stream) and its NCCL
// backend run on machines without a GPU.
//
// What it checks:
//  * "Device" memory is mapped PROT_NONE: a host load or store of a device
//    pointer faults. The emulation opens every allocation for its own copies,
//    memsets and (in the emulated NCCL) collectives, and closes them again.
//  * Streams, functions and events are the ones it handed out; module images
//    are cubin/fatbin/PTX, or the test format "MESHRT-FAKE-IMAGE\n" followed
//    by one kernel name per line, whose names are then checked.
//  * Launch shapes (no empty or over-sized blocks).
// It cannot run kernels: launches are only recorded. With MESHRT_EMU_TRACE=F
// every call is appended to F (%r in F is replaced by the rank; without %r,
// ".<rank>" is appended): contexts, allocations and frees, copies, launches
// (name, grid, block), collectives (from the emulated NCCL), host
// synchronisations, and at exit the allocations still live.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_API extern "C" __attribute__((visibility("default")))

FAKE_API void fakeCudaAccess(int Open);

struct CUctx_st {
  int Device;
};
struct CUstream_st {
  int Id;
};
struct CUmod_st {
  std::vector<std::string> Names; // Empty: any name (a real image).
  bool Checked;
};
struct CUfunc_st {
  std::string Name;
};
struct CUevent_st {
  int Id;
};

namespace {

struct Allocation {
  size_t Bytes;
  size_t Mapped;
  int Id;
  bool Managed;
};

struct State {
  std::recursive_mutex Mutex;
  std::map<char *, Allocation> Allocs; // Start -> allocation.
  int NextAlloc = 0;
  size_t LiveBytes = 0;
  std::map<const void *, int> BusyPolls; // Stream -> "not ready" answers left.
  std::set<CUstream> Streams;
  std::set<CUevent> Events;
  std::set<CUmodule> Modules;
  int NextStream = 1;
  int NextEvent = 1;
  int Access = 0; // > 0 while the emulation itself touches device memory.
  long Launches = 0;
  CUctx_st Contexts[64];
  FILE *Trace = nullptr;
  bool TraceOpened = false;
};

State &state() {
  static State *S = new State; // Never destroyed: used at exit.
  return *S;
}

thread_local CUcontext Current = nullptr;

int deviceCount() {
  const char *E = std::getenv("FAKE_CUDA_DEVICES");
  int N = E ? std::atoi(E) : 8;
  return N < 0 ? 0 : (N > 64 ? 64 : N);
}

std::string rankString() {
  for (const char *V :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK"})
    if (const char *E = std::getenv(V); E && *E)
      return E;
  return "0";
}

void vtrace(const char *Fmt, va_list Args) {
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  if (!S.TraceOpened) {
    S.TraceOpened = true;
    const char *E = std::getenv("MESHRT_EMU_TRACE");
    if (E && *E) {
      std::string Path = E;
      size_t At = Path.find("%r");
      if (At == std::string::npos)
        Path += "." + rankString();
      else
        Path.replace(At, 2, rankString());
      S.Trace = std::fopen(Path.c_str(), "w");
    }
  }
  if (!S.Trace)
    return;
  std::vfprintf(S.Trace, Fmt, Args);
  std::fputc('\n', S.Trace);
  std::fflush(S.Trace);
}

void trace(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));
void trace(const char *Fmt, ...) {
  va_list Args;
  va_start(Args, Fmt);
  vtrace(Fmt, Args);
  va_end(Args);
}

void protectAll(int Prot) {
  for (auto &[Start, A] : state().Allocs)
    if (!A.Managed)
      mprotect(Start, A.Mapped, Prot);
}

/// The allocation holding [P, P + Bytes), or null.
Allocation *find(const void *P, size_t Bytes = 1) {
  State &S = state();
  char *C = static_cast<char *>(const_cast<void *>(P));
  auto It = S.Allocs.upper_bound(C);
  if (It == S.Allocs.begin())
    return nullptr;
  --It;
  if (C + (Bytes ? Bytes : 1) > It->first + It->second.Bytes)
    return nullptr;
  return &It->second;
}

// The special handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD (what
// __cuda_array_interface__ calls streams 1 and 2), which the driver takes
// wherever it takes a stream. The legacy one is the null stream, s0;
// the per-thread one is traced as s-2.
bool specialStream(const void *S) {
  uintptr_t V = reinterpret_cast<uintptr_t>(S);
  return V == 1 || V == 2;
}

int streamId(const void *S) {
  if (!S || reinterpret_cast<uintptr_t>(S) == 1)
    return 0;
  if (specialStream(S))
    return -2;
  return static_cast<const CUstream_st *>(S)->Id;
}

bool validStream(CUstream S) {
  return !S || specialStream(S) || state().Streams.count(S);
}

CUresult allocate(CUdeviceptr *Out, size_t Bytes, CUstream Stream,
                  bool Managed) {
  if (!Out)
    return CUDA_ERROR_INVALID_VALUE;
  if (!Current)
    return CUDA_ERROR_INVALID_CONTEXT;
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  if (!validStream(Stream))
    return CUDA_ERROR_INVALID_HANDLE;
  size_t Page = size_t(sysconf(_SC_PAGESIZE));
  size_t Mapped = ((Bytes ? Bytes : 1) + Page - 1) / Page * Page;
  int Prot = Managed || S.Access > 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
  void *P = mmap(nullptr, Mapped, Prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (P == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  int Id = S.NextAlloc++;
  S.Allocs[static_cast<char *>(P)] = {Bytes ? Bytes : 1, Mapped, Id, Managed};
  S.LiveBytes += Bytes;
  *Out = reinterpret_cast<CUdeviceptr>(P);
  trace("alloc a%d bytes=%zu %s stream=s%d", Id, Bytes,
        Managed ? "managed" : "device", streamId(Stream));
  return CUDA_SUCCESS;
}

CUresult release(CUdeviceptr Ptr, CUstream Stream, bool Async) {
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  auto It = S.Allocs.find(reinterpret_cast<char *>(Ptr));
  if (It == S.Allocs.end())
    return CUDA_ERROR_INVALID_VALUE;
  if (!validStream(Stream))
    return CUDA_ERROR_INVALID_HANDLE;
  trace("free a%d %s stream=s%d", It->second.Id, Async ? "async" : "sync",
        streamId(Stream));
  S.LiveBytes -= It->second.Bytes;
  // Like the real driver under unified addressing, the freed range stays
  // reserved (inaccessible, its pages dropped): host memory never takes a
  // freed device address while the process lives.
  mmap(It->first, It->second.Mapped, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  S.Allocs.erase(It);
  return CUDA_SUCCESS;
}

const char *where(const void *P) { return find(P) ? "d" : "h"; }

template <typename T>
CUresult fill(CUdeviceptr Dst, T Value, size_t Count, CUstream Str) {
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  if (!validStream(Str))
    return CUDA_ERROR_INVALID_HANDLE;
  T *D = reinterpret_cast<T *>(Dst);
  if (!find(D, Count * sizeof(T)))
    return CUDA_ERROR_INVALID_VALUE;
  trace("memset%zu count=%zu stream=s%d", sizeof(T) * 8, Count, streamId(Str));
  fakeCudaAccess(1);
  for (size_t I = 0; I < Count; ++I)
    D[I] = Value;
  fakeCudaAccess(0);
  return CUDA_SUCCESS;
}

__attribute__((destructor)) void reportAtExit() {
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  trace("exit live_allocations=%zu live_bytes=%zu", S.Allocs.size(),
        S.LiveBytes);
}

} // namespace

//===----------------------------------------------------------------------===//
// Hooks for the emulated libcudart and libnccl
//===----------------------------------------------------------------------===//

/// Appends a line to the trace (printf format).
FAKE_API void fakeCudaTrace(const char *Fmt, ...) {
  va_list Args;
  va_start(Args, Fmt);
  vtrace(Fmt, Args);
  va_end(Args);
}

/// Makes device memory readable (Open != 0) for the emulation's own work, or
/// inaccessible again; calls nest.
FAKE_API void fakeCudaAccess(int Open) {
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  if (Open) {
    if (S.Access++ == 0)
      protectAll(PROT_READ | PROT_WRITE);
  } else if (--S.Access == 0) {
    protectAll(PROT_NONE);
  }
}

/// 1 if [P, P + Bytes) lies in one device allocation.
FAKE_API int fakeCudaIsDevicePointer(const void *P, size_t Bytes) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  return find(P, Bytes) != nullptr;
}

/// 1 if P is in a managed (host-shared) allocation.
FAKE_API int fakeCudaIsManaged(const void *P) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  Allocation *A = find(P);
  return A && A->Managed;
}

/// The device whose context is current on this thread (0 if none).
FAKE_API int fakeCudaCurrentDevice() { return Current ? Current->Device : 0; }

/// Makes device `D`'s context current (cudaSetDevice).
FAKE_API int fakeCudaSetDevice(int D) {
  if (D < 0 || D >= deviceCount())
    return 0;
  Current = &state().Contexts[D];
  Current->Device = D;
  return 1;
}

/// The number of kernel launches so far. Programs under test find it (and
/// fakeCudaTrace, to mark their own steps in the trace) with dlsym: a result
/// that depends on a launched kernel is garbage here, since none runs.
FAKE_API long fakeCudaLaunches() {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  return state().Launches;
}

/// A stream's number in the trace ("s3"); 0 is the null stream.
FAKE_API int fakeCudaStreamId(const void *S) { return streamId(S); }

/// The next `Polls` queries of stream S report "not ready" (-1: forever).
FAKE_API void fakeCudaMarkBusy(const void *S, int Polls) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  state().BusyPolls[S] = Polls;
}

/// One host poll of stream S: 1 when its work is done (traced as a host
/// synchronisation), 0 while it is "busy".
FAKE_API int fakeCudaStreamReady(const void *S) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  int &Polls = state().BusyPolls[S];
  if (Polls != 0) {
    if (Polls > 0)
      --Polls;
    return 0;
  }
  trace("sync stream=s%d", streamId(S));
  return 1;
}

/// cudaMalloc: a device allocation on the current device.
FAKE_API int fakeCudaAlloc(void **P, size_t Bytes) {
  if (!Current)
    fakeCudaSetDevice(0);
  CUdeviceptr D = 0;
  CUresult R = allocate(&D, Bytes, nullptr, false);
  *P = reinterpret_cast<void *>(D);
  return R == CUDA_SUCCESS;
}

/// cudaFree.
FAKE_API int fakeCudaFree(void *P) {
  return release(reinterpret_cast<CUdeviceptr>(P), nullptr, false) ==
         CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// The driver API
//===----------------------------------------------------------------------===//

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags)
    return CUDA_ERROR_INVALID_VALUE;
  return deviceCount() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuGetErrorName(CUresult R, const char **Out) {
  switch (R) {
  case CUDA_SUCCESS:
    *Out = "CUDA_SUCCESS";
    break;
  case CUDA_ERROR_INVALID_VALUE:
    *Out = "CUDA_ERROR_INVALID_VALUE";
    break;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *Out = "CUDA_ERROR_OUT_OF_MEMORY";
    break;
  case CUDA_ERROR_NO_DEVICE:
    *Out = "CUDA_ERROR_NO_DEVICE";
    break;
  case CUDA_ERROR_INVALID_DEVICE:
    *Out = "CUDA_ERROR_INVALID_DEVICE";
    break;
  case CUDA_ERROR_INVALID_IMAGE:
    *Out = "CUDA_ERROR_INVALID_IMAGE";
    break;
  case CUDA_ERROR_INVALID_CONTEXT:
    *Out = "CUDA_ERROR_INVALID_CONTEXT";
    break;
  case CUDA_ERROR_INVALID_HANDLE:
    *Out = "CUDA_ERROR_INVALID_HANDLE";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *Out = "CUDA_ERROR_NOT_FOUND";
    break;
  case CUDA_ERROR_NOT_READY:
    *Out = "CUDA_ERROR_NOT_READY";
    break;
  default:
    *Out = "CUDA_ERROR_UNKNOWN";
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult R, const char **Out) {
  switch (R) {
  case CUDA_ERROR_NO_DEVICE:
    *Out = "no CUDA-capable device is detected (emulated driver)";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *Out = "named symbol not found (emulated driver)";
    break;
  case CUDA_ERROR_INVALID_IMAGE:
    *Out = "device kernel image is invalid (emulated driver)";
    break;
  default:
    *Out = "error (emulated driver)";
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *Count) {
  *Count = deviceCount();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *Out, int Ordinal) {
  if (Ordinal < 0 || Ordinal >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *Out = Ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *Out, CUdevice D) {
  if (D < 0 || D >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  CUcontext C = &state().Contexts[D];
  C->Device = D;
  *Out = C;
  trace("context device=%d", D);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext C) {
  Current = C;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *Out, unsigned int) {
  if (!Current)
    return CUDA_ERROR_INVALID_CONTEXT;
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  CUstream Str = new CUstream_st{S.NextStream++};
  S.Streams.insert(Str);
  *Out = Str;
  trace("stream-create s%d device=%d", Str->Id, Current->Device);
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream Str) {
  if (!validStream(Str))
    return CUDA_ERROR_INVALID_HANDLE;
  return fakeCudaStreamReady(Str) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuStreamWaitEvent(CUstream Str, CUevent E, unsigned int) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!validStream(Str) || !state().Events.count(E))
    return CUDA_ERROR_INVALID_HANDLE;
  trace("stream-wait-event stream=s%d event=e%d", streamId(Str), E->Id);
  return CUDA_SUCCESS;
}

static CUresult loadImage(CUmodule *Out, const void *Image) {
  if (!Current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!Image)
    return CUDA_ERROR_INVALID_VALUE;
  const char *C = static_cast<const char *>(Image);
  static const char Magic[] = "MESHRT-FAKE-IMAGE\n";
  uint32_t Word;
  std::memcpy(&Word, C, 4);
  CUmodule M = new CUmod_st{{}, false};
  if (!std::strncmp(C, Magic, sizeof(Magic) - 1)) {
    M->Checked = true;
    const char *P = C + sizeof(Magic) - 1;
    while (*P && *P != '\n') {
      const char *End = std::strchr(P, '\n');
      if (!End)
        End = P + std::strlen(P);
      M->Names.emplace_back(P, End);
      P = *End ? End + 1 : End;
    }
    trace("module-load kernels=%zu", M->Names.size());
  } else if (Word == 0xBA55ED50u ||
             !std::strncmp(C,
                           "\x7f"
                           "ELF",
                           4) ||
             std::strstr(C, ".version")) {
    trace("module-load image=%s",
          Word == 0xBA55ED50u ? "fatbin" : (C[0] == 0x7f ? "cubin" : "ptx"));
  } else {
    delete M;
    return CUDA_ERROR_INVALID_IMAGE;
  }
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  state().Modules.insert(M);
  *Out = M;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *Out, const void *Image) {
  return loadImage(Out, Image);
}

CUresult cuModuleLoadDataEx(CUmodule *Out, const void *Image, unsigned int,
                            CUjit_option *, void **) {
  return loadImage(Out, Image);
}

CUresult cuModuleUnload(CUmodule M) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!state().Modules.erase(M))
    return CUDA_ERROR_INVALID_HANDLE;
  trace("module-unload");
  delete M;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *Out, CUmodule M, const char *Name) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!state().Modules.count(M))
    return CUDA_ERROR_INVALID_HANDLE;
  if (M->Checked) {
    bool Found = false;
    for (const std::string &N : M->Names)
      Found |= N == Name;
    if (!Found)
      return CUDA_ERROR_NOT_FOUND;
  }
  *Out = new CUfunc_st{Name}; // Leaked, like the handles of a real module.
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction F, unsigned int GX, unsigned int GY,
                        unsigned int GZ, unsigned int BX, unsigned int BY,
                        unsigned int BZ, unsigned int Smem, CUstream Str,
                        void **Params, void **Extra) {
  if (!Current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!F || !validStream(Str))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!GX || !GY || !GZ || !BX || !BY || !BZ || uint64_t(BX) * BY * BZ > 1024 ||
      (Params && Extra))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  ++state().Launches;
  trace("launch %s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=s%d",
        F->Name.c_str(), GX, GY, GZ, BX, BY, BZ, Smem, streamId(Str));
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *Out, size_t Bytes, CUstream Str) {
  return allocate(Out, Bytes, Str, false);
}

CUresult cuMemAllocManaged(CUdeviceptr *Out, size_t Bytes, unsigned int) {
  return allocate(Out, Bytes, nullptr, true);
}

CUresult cuMemAlloc(CUdeviceptr *Out, size_t Bytes) {
  return allocate(Out, Bytes, nullptr, false);
}

CUresult cuMemFreeAsync(CUdeviceptr P, CUstream Str) {
  return release(P, Str, true);
}

CUresult cuMemFree(CUdeviceptr P) { return release(P, nullptr, false); }

CUresult cuMemcpyAsync(CUdeviceptr Dst, CUdeviceptr Src, size_t Bytes,
                       CUstream Str) {
  State &S = state();
  std::lock_guard<std::recursive_mutex> Lock(S.Mutex);
  if (!validStream(Str))
    return CUDA_ERROR_INVALID_HANDLE;
  void *D = reinterpret_cast<void *>(Dst);
  const void *Sr = reinterpret_cast<const void *>(Src);
  // A pointer inside an allocation must have the whole range inside it.
  if ((find(D) && !find(D, Bytes)) || (find(Sr) && !find(Sr, Bytes)))
    return CUDA_ERROR_INVALID_VALUE;
  trace("memcpy %s2%s bytes=%zu stream=s%d", where(Sr), where(D), Bytes,
        streamId(Str));
  fakeCudaAccess(1);
  std::memmove(D, Sr, Bytes);
  fakeCudaAccess(0);
  return CUDA_SUCCESS;
}

/// Device and managed allocations are device memory; any other pointer is
/// host memory the driver does not know (CUDA_ERROR_INVALID_VALUE).
CUresult cuPointerGetAttribute(void *Data, CUpointer_attribute Attr,
                               CUdeviceptr Ptr) {
  if (!Data)
    return CUDA_ERROR_INVALID_VALUE;
  if (Attr != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!find(reinterpret_cast<const void *>(Ptr)))
    return CUDA_ERROR_INVALID_VALUE;
  trace("pointer-attribute memory-type d");
  *static_cast<unsigned int *>(Data) = CU_MEMORYTYPE_DEVICE;
  return CUDA_SUCCESS;
}

/// The allocation holding Ptr: its start and size.
CUresult cuMemGetAddressRange(CUdeviceptr *Base, size_t *Bytes,
                              CUdeviceptr Ptr) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  State &S = state();
  char *C = reinterpret_cast<char *>(Ptr);
  auto It = S.Allocs.upper_bound(C);
  if (It == S.Allocs.begin())
    return CUDA_ERROR_NOT_FOUND;
  --It;
  if (C >= It->first + It->second.Bytes)
    return CUDA_ERROR_NOT_FOUND;
  if (Base)
    *Base = reinterpret_cast<CUdeviceptr>(It->first);
  if (Bytes)
    *Bytes = It->second.Bytes;
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr Dst, unsigned int Value, size_t Count,
                          CUstream Str) {
  return fill<uint32_t>(Dst, Value, Count, Str);
}

CUresult cuMemsetD16Async(CUdeviceptr Dst, unsigned short Value, size_t Count,
                          CUstream Str) {
  return fill<uint16_t>(Dst, Value, Count, Str);
}

CUresult cuEventCreate(CUevent *Out, unsigned int) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  CUevent E = new CUevent_st{state().NextEvent++};
  state().Events.insert(E);
  *Out = E;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent E, CUstream Str) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!state().Events.count(E) || !validStream(Str))
    return CUDA_ERROR_INVALID_HANDLE;
  trace("event-record e%d stream=s%d", E->Id, streamId(Str));
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent E) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!state().Events.count(E))
    return CUDA_ERROR_INVALID_HANDLE;
  trace("sync event=e%d", E->Id);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent E) {
  std::lock_guard<std::recursive_mutex> Lock(state().Mutex);
  if (!state().Events.erase(E))
    return CUDA_ERROR_INVALID_HANDLE;
  delete E;
  return CUDA_SUCCESS;
}

} // extern "C"
