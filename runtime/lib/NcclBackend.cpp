//===- NcclBackend.cpp - Collectives on NCCL communicators ----------------===//
//
// The GPU backend, compiled when CUDA and NCCL headers were found
// (MESHRT_HAVE_NCCL). libcudart and libnccl are loaded with dlopen when the
// backend is first considered, so a binary linked with meshrt starts and runs
// on the MPI backend on machines without a GPU, a driver or NCCL.
//
// Each process picks device (local rank % device count), where the local rank
// comes from the control plane (ControlGroup::nodeLocalRank). The world
// communicator comes from ncclCommInitRankConfig with a unique id broadcast
// over the control plane (MPI, or the store under torchrun and other launchers
// without MPI); groups are ncclCommSplit of it. The device and the stream are
// the process's (Gpu.cpp), shared with compiled kernels. Collectives run on
// device buffers on that stream; a blocking call waits by polling
// cudaStreamQuery and ncclCommGetAsyncError (the watchdog enforces
// MESHRT_TIMEOUT_S meanwhile); a stream-ordered call (meshrt_*_on_stream)
// enqueues on the caller's stream and returns, and synchronizeStream does the
// polling later, for every communicator. all_to_all and permute are grouped
// ncclSend/ncclRecv.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "ControlPlane.h"
#include "DynamicLibrary.h"
#include "Gpu.h"

#include "meshrt/Error.h"

#if MESHRT_HAVE_NCCL

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace meshrt;
using namespace meshrt::detail;

namespace {

//===----------------------------------------------------------------------===//
// Loading libcudart and libnccl
//===----------------------------------------------------------------------===//

struct CudaApi {
  decltype(&::cudaGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&::cudaSetDevice) SetDevice = nullptr;
  decltype(&::cudaDeviceGetPCIBusId) DeviceGetPCIBusId = nullptr;
  decltype(&::cudaStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
  decltype(&::cudaStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cudaStreamQuery) StreamQuery = nullptr;
  decltype(&::cudaMemsetAsync) MemsetAsync = nullptr;
  decltype(&::cudaMemcpyAsync) MemcpyAsync = nullptr;
  cudaError_t (*Malloc)(void **, size_t) = nullptr;
  decltype(&::cudaFree) Free = nullptr;
  decltype(&::cudaGetErrorString) GetErrorString = nullptr;
  decltype(&::cudaPointerGetAttributes) PointerGetAttributes = nullptr;
};

struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommSplit) CommSplit = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommCount) CommCount = nullptr;
  decltype(&::ncclCommUserRank) CommUserRank = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclReduce) Reduce = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
};

struct Libraries {
  CudaApi Cuda;
  NcclApi Nccl;
  bool Loaded = false;
  std::string Error; // Why loading failed.
};

#define MESHRT_STR2(X) #X
#define MESHRT_STR(X) MESHRT_STR2(X)

/// Binds the CUDA runtime entry points the backend uses; appends what is
/// missing to `Err`.
void bindCuda(void *Cudart, CudaApi &C, std::string &Err) {
  bind(Cudart, "cudaGetDeviceCount", C.GetDeviceCount, Err);
  bind(Cudart, "cudaSetDevice", C.SetDevice, Err);
  bind(Cudart, "cudaDeviceGetPCIBusId", C.DeviceGetPCIBusId, Err);
  bind(Cudart, "cudaStreamCreateWithFlags", C.StreamCreateWithFlags, Err);
  bind(Cudart, "cudaStreamDestroy", C.StreamDestroy, Err);
  bind(Cudart, "cudaStreamQuery", C.StreamQuery, Err);
  bind(Cudart, "cudaMemsetAsync", C.MemsetAsync, Err);
  bind(Cudart, "cudaMemcpyAsync", C.MemcpyAsync, Err);
  bind(Cudart, "cudaMalloc", C.Malloc, Err);
  bind(Cudart, "cudaFree", C.Free, Err);
  bind(Cudart, "cudaGetErrorString", C.GetErrorString, Err);
  bind(Cudart, "cudaPointerGetAttributes", C.PointerGetAttributes, Err);
}

/// Binds the NCCL entry points the backend uses; appends what is missing to
/// `Err`.
void bindNccl(void *Nccl, NcclApi &N, std::string &Err) {
  bind(Nccl, "ncclGetVersion", N.GetVersion, Err);
  bind(Nccl, "ncclGetUniqueId", N.GetUniqueId, Err);
  bind(Nccl, "ncclCommInitRankConfig", N.CommInitRankConfig, Err);
  bind(Nccl, "ncclCommSplit", N.CommSplit, Err);
  bind(Nccl, "ncclCommDestroy", N.CommDestroy, Err);
  bind(Nccl, "ncclCommAbort", N.CommAbort, Err);
  bind(Nccl, "ncclCommGetAsyncError", N.CommGetAsyncError, Err);
  bind(Nccl, "ncclCommCount", N.CommCount, Err);
  bind(Nccl, "ncclCommUserRank", N.CommUserRank, Err);
  bind(Nccl, "ncclGetErrorString", N.GetErrorString, Err);
  bind(Nccl, "ncclGetLastError", N.GetLastError, Err);
  bind(Nccl, "ncclAllReduce", N.AllReduce, Err);
  bind(Nccl, "ncclAllGather", N.AllGather, Err);
  bind(Nccl, "ncclReduceScatter", N.ReduceScatter, Err);
  bind(Nccl, "ncclBroadcast", N.Broadcast, Err);
  bind(Nccl, "ncclReduce", N.Reduce, Err);
  bind(Nccl, "ncclSend", N.Send, Err);
  bind(Nccl, "ncclRecv", N.Recv, Err);
  bind(Nccl, "ncclGroupStart", N.GroupStart, Err);
  bind(Nccl, "ncclGroupEnd", N.GroupEnd, Err);
}

/// Opens libcudart and libnccl and binds their entry points into `L`; sets
/// `L.Loaded`, or `L.Error` to why that failed.
void loadLibraries(Libraries &L) {
  std::string Tried;
  std::string CudartSoname =
      "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  void *Cudart = openFirst(
      "MESHRT_CUDART_LIBRARY",
      {MESHRT_CUDART_PATH, CudartSoname.c_str(), "libcudart.so"}, Tried);
  if (!Cudart) {
    L.Error = "cannot load libcudart (" + Tried + ")";
    return;
  }
  void *Nccl =
      openFirst("MESHRT_NCCL_LIBRARY",
                {MESHRT_NCCL_PATH, "libnccl.so.2", "libnccl.so"}, Tried);
  if (!Nccl) {
    L.Error = "cannot load libnccl (" + Tried + ")";
    return;
  }
  std::string Err;
  bindCuda(Cudart, L.Cuda, Err);
  bindNccl(Nccl, L.Nccl, Err);
  if (!Err.empty()) {
    L.Error = "libcudart/libnccl lack what meshrt needs (NCCL >= 2.18): " + Err;
    return;
  }
  L.Loaded = true;
}

/// The libraries once loaded (whether that worked or not): every collective
/// asks, so the answer is one load instead of a call_once.
std::atomic<const Libraries *> LoadedLibraries{nullptr};

/// Loads the libraries (once per process).
[[gnu::noinline]] const Libraries &loadLibrariesOnce() {
  static Libraries L;
  static std::once_flag Once;
  std::call_once(Once, [] {
    loadLibraries(L);
    LoadedLibraries.store(&L, std::memory_order_release);
  });
  return L;
}

/// The libraries, loaded on first use.
inline const Libraries &libraries() {
  if (const Libraries *L = LoadedLibraries.load(std::memory_order_acquire))
    return *L;
  return loadLibrariesOnce();
}

[[noreturn]] void cudaFail(cudaError_t E, const std::string &What) {
  throw Error(MESHRT_ERROR_BACKEND,
              What + " failed: " + libraries().Cuda.GetErrorString(E));
}

void checkCuda(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    cudaFail(E, What);
}

ncclDataType_t ncclType(meshrt_dtype T) {
  switch (T) {
  case MESHRT_F16:
    return ncclFloat16;
  case MESHRT_BF16:
    return ncclBfloat16;
  case MESHRT_F32:
    return ncclFloat32;
  case MESHRT_F64:
    return ncclFloat64;
  case MESHRT_I8:
    return ncclInt8;
  case MESHRT_I32:
    return ncclInt32;
  case MESHRT_I64:
    return ncclInt64;
  case MESHRT_U8:
    return ncclUint8;
  }
  return ncclInt8;
}

ncclRedOp_t ncclOp(meshrt_reduce_op Op) {
  switch (Op) {
  case MESHRT_PROD:
    return ncclProd;
  case MESHRT_MIN:
    return ncclMin;
  case MESHRT_MAX:
    return ncclMax;
  case MESHRT_AVG:
    return ncclAvg;
  default:
    return ncclSum;
  }
}

class NcclBackend;

class NcclComm final : public BackendComm {
public:
  NcclComm(ncclComm_t C, int64_t R, int64_t S, NcclBackend &B,
           std::string Label);
  ~NcclComm() override;

  void allReduce(const void *Send, void *Recv, int64_t Count, meshrt_dtype T,
                 meshrt_reduce_op Op) override;
  void allGather(const void *Send, void *Recv, int64_t Count,
                 meshrt_dtype T) override;
  void reduceScatter(const void *Send, void *Recv, int64_t Count,
                     meshrt_dtype T, meshrt_reduce_op Op) override;
  void allGatherPadded(const void *Send, void *Recv, int64_t Count,
                       int64_t Valid, meshrt_dtype T) override;
  void reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                           int64_t Valid, meshrt_dtype T,
                           meshrt_reduce_op Op) override;
  void allToAll(const void *Send, void *Recv, int64_t Count,
                meshrt_dtype T) override;
  void allToAllPadded(const void *Send, void *Recv, int64_t Count,
                      int64_t Valid, meshrt_dtype T, int32_t Side) override;
  void broadcast(void *Buf, int64_t Count, meshrt_dtype T,
                 int64_t Root) override;
  void sendRecv(const void *Send, int64_t Dest, void *Recv, int64_t Source,
                int64_t Count, meshrt_dtype T, bool ZeroFill) override;
  void send(const void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag) override;
  void recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
            int64_t Tag) override;
  void barrier() override;
  void *nativeHandle() override { return C; }

  /// Throws (and aborts the communicator) if NCCL reports an asynchronous
  /// error on it; `Op` names the waiting operation.
  void checkAsyncError(const char *Op);

  ncclComm_t C;

private:
  void check(ncclResult_t R, const char *What) {
    if (__builtin_expect(R != ncclSuccess, 0))
      fail(R, What);
  }
  [[noreturn]] void fail(ncclResult_t R, const char *What);
  /// Throws unless `P` is device or managed memory and the communicator is
  /// usable; `Which` names the buffer and `Op` the call in the message. A
  /// buffer this thread validated before is not asked about again (see
  /// gpuKnownDeviceMemory in Gpu.h for what that memo can miss).
  void checkDevice(const void *P, const char *Which, const char *Op) const {
    if (__builtin_expect(C && gpuKnownDeviceMemory(P), 1))
      return;
    checkDeviceSlow(P, Which, Op);
  }
  void checkDeviceSlow(const void *P, const char *Which, const char *Op) const;
  void wait(const char *Op);
  /// The stream of this call: the caller's in stream mode, else the shared
  /// one.
  cudaStream_t stream() const;
  /// Waits for the call to finish, unless it is stream-ordered.
  void finish(const char *Op) {
    if (!OnStream)
      wait(Op);
  }
  NcclBackend &B;
  std::string Label; // For messages: "the world", "mesh 'm' axes [x]".
};

class NcclBackend final : public Backend {
public:
  explicit NcclBackend(ControlGroup &Control) : Control(Control) {
    const Libraries &L = libraries();
    if (!L.Loaded)
      throw Error(MESHRT_ERROR_BACKEND, L.Error);
    int64_t LocalRank = Control.nodeLocalRank("NCCL device choice");
    int Count = 0;
    checkCuda(L.Cuda.GetDeviceCount(&Count), "cudaGetDeviceCount");
    if (Count < 1)
      throw Error(MESHRT_ERROR_BACKEND, "no CUDA device is visible");
    Visible = Count;
    // One device per process on the node (NCCL rejects two ranks on one
    // device); with one visible device per process this picks it. The
    // device and its stream are the process's (Gpu.cpp), shared with
    // compiled kernels; if the program selected the device already, that
    // choice stands.
    Device = gpuSelectDevice(LocalRank);
    checkCuda(L.Cuda.SetDevice(Device), "cudaSetDevice");
    Stream = static_cast<cudaStream_t>(gpuSharedStream());
    checkCuda(L.Cuda.Malloc(&Scratch, 64), "cudaMalloc (barrier scratch)");
  }
  ~NcclBackend() override {
    gpuForgetDeviceMemory();
    if (Scratch)
      libraries().Cuda.Free(Scratch);
  }
  meshrt_backend kind() const override { return MESHRT_BACKEND_NCCL; }
  const char *name() const override { return "nccl"; }
  std::string version() const override {
    int V = 0;
    if (libraries().Nccl.GetVersion(&V) != ncclSuccess)
      return "NCCL ?";
    return "NCCL " + std::to_string(V / 10000) + "." +
           std::to_string(V / 100 % 100) + "." + std::to_string(V % 100);
  }
  std::string device() const override {
    return "cuda:" + std::to_string(Device);
  }

  /// Refuses, on every rank alike, a group in which two processes of one
  /// node use one GPU (NCCL cannot run them): each rank's host name and
  /// device PCI bus id are gathered and compared before NCCL starts, and
  /// the error says what to change.
  void checkOneGpuPerProcess() {
    struct Identity {
      char Host[64];
      char BusId[32];
    };
    Identity Mine{};
    gethostname(Mine.Host, sizeof(Mine.Host) - 1);
    checkCuda(libraries().Cuda.DeviceGetPCIBusId(
                  Mine.BusId, sizeof(Mine.BusId) - 1, Device),
              "cudaDeviceGetPCIBusId");
    std::vector<Identity> All(size_t(Control.size()));
    Control.allGather(&Mine, All.data(), sizeof(Identity), "NCCL device check");
    for (size_t A = 0; A < All.size(); ++A)
      for (size_t B = A + 1; B < All.size(); ++B)
        if (!std::strncmp(All[A].Host, All[B].Host, sizeof(Mine.Host)) &&
            !std::strncmp(All[A].BusId, All[B].BusId, sizeof(Mine.BusId)))
          throw Error(
              MESHRT_ERROR_BACKEND,
              "NCCL needs one GPU per process, and this node shows " +
                  std::to_string(Visible) + " to each process: ranks " +
                  std::to_string(A) + " and " + std::to_string(B) +
                  " both use the GPU at PCI bus " + All[A].BusId +
                  " of node '" + All[A].Host +
                  "'; start at most that many processes per node "
                  "(torchrun --nproc_per_node, mpirun -npernode), or give "
                  "each process its own device (CUDA_VISIBLE_DEVICES)");
  }

  std::unique_ptr<BackendComm> createWorld() override {
    const NcclApi &N = libraries().Nccl;
    checkOneGpuPerProcess();
    int Rank = int(Control.rank()), Size = int(Control.size());
    ncclUniqueId Id;
    ncclResult_t R = ncclSuccess;
    if (Rank == 0)
      R = N.GetUniqueId(&Id);
    // Rank 0 shares its status along with the id so nobody waits forever.
    int64_t Failed = R != ncclSuccess;
    Control.broadcast(&Failed, sizeof(Failed), 0, "NCCL unique id");
    if (Failed)
      throw Error(MESHRT_ERROR_BACKEND,
                  std::string("ncclGetUniqueId failed on rank 0") +
                      (Rank == 0 ? std::string(": ") + N.GetErrorString(R)
                                 : std::string()));
    Control.broadcast(&Id, sizeof(Id), 0, "NCCL unique id");
    ncclConfig_t Config = NCCL_CONFIG_INITIALIZER;
    Config.blocking = 1;
    Config.commName = "meshrt-world";
    ncclComm_t C = nullptr;
    R = N.CommInitRankConfig(&C, Size, Id, Rank, &Config);
    if (R != ncclSuccess) {
      std::string Last = N.GetLastError(C);
      std::string Msg = std::string("ncclCommInitRankConfig failed: ") +
                        N.GetErrorString(R) + " (" + Last + ")";
      throw Error(MESHRT_ERROR_BACKEND, Msg);
    }
    return std::make_unique<NcclComm>(C, Rank, Size, *this, "the world");
  }

  std::unique_ptr<BackendComm> split(BackendComm &World, int64_t Color,
                                     int64_t Key,
                                     const std::string &Label) override {
    const NcclApi &N = libraries().Nccl;
    ncclConfig_t Config = NCCL_CONFIG_INITIALIZER;
    Config.blocking = 1;
    std::string Name = "meshrt " + Label;
    Config.commName = Name.c_str();
    ncclComm_t Parent = static_cast<NcclComm &>(World).C;
    ncclComm_t C = nullptr;
    ncclResult_t R =
        N.CommSplit(Parent, Color < 0 ? NCCL_SPLIT_NOCOLOR : int(Color),
                    int(Key), &C, &Config);
    if (R == ncclSuccess && Color < 0)
      return nullptr; // Not in any group: no communicator, as asked.
    if (R != ncclSuccess || !C)
      throw Error(MESHRT_ERROR_BACKEND, "ncclCommSplit for " + Label +
                                            " failed: " + N.GetErrorString(R) +
                                            " (" + N.GetLastError(Parent) +
                                            ")");
    int Rank = 0, Size = 0;
    N.CommUserRank(C, &Rank);
    N.CommCount(C, &Size);
    return std::make_unique<NcclComm>(C, Rank, Size, *this, Label);
  }

  void checkReduction(meshrt_dtype, meshrt_reduce_op Op) const override {
    if (Op == MESHRT_BAND || Op == MESHRT_BOR || Op == MESHRT_BXOR)
      throw Error(MESHRT_ERROR_UNSUPPORTED,
                  std::string("reduction '") + reduceOpName(Op) +
                      "' is not supported by the NCCL backend (NCCL has no "
                      "bitwise reductions); use MESHRT_BACKEND=mpi");
  }

  void synchronizeStream(void *S, const char *Op) override {
    const Libraries &L = libraries();
    cudaStream_t Str = S ? static_cast<cudaStream_t>(S) : Stream;
    // The stream is polled back to back, so that its end is seen at once;
    // NCCL's asynchronous errors are asked about every 64 polls (work that
    // failed may never end) and once when the stream is done.
    for (unsigned Spin = 0;; ++Spin) {
      cudaError_t E = L.Cuda.StreamQuery(Str);
      if (E != cudaSuccess && E != cudaErrorNotReady)
        cudaFail(E, std::string(Op) + ": cudaStreamQuery");
      if (E == cudaSuccess || Spin % 64 == 63)
        for (NcclComm *C : Comms)
          C->checkAsyncError(Op);
      if (E == cudaSuccess)
        return;
      if (Spin > 2000)
        std::this_thread::yield();
    }
  }

  /// The CUDA devices this process sees (cudaGetDeviceCount).
  int Visible = 0;
  /// The shared stream of the device (Gpu.cpp), not owned.
  cudaStream_t Stream = nullptr;
  void *Scratch = nullptr;
  int Device = 0;
  /// Live communicators, for asynchronous error checks at synchronisation.
  std::set<NcclComm *> Comms;

private:
  ControlGroup &Control;
};

//===----------------------------------------------------------------------===//
// NcclComm
//===----------------------------------------------------------------------===//

NcclComm::NcclComm(ncclComm_t C, int64_t R, int64_t S, NcclBackend &B,
                   std::string Label)
    : C(C), B(B), Label(std::move(Label)) {
  Rank = R;
  Size = S;
  B.Comms.insert(this);
}

NcclComm::~NcclComm() {
  gpuForgetDeviceMemory();
  B.Comms.erase(this);
  if (C)
    libraries().Nccl.CommDestroy(C);
}

cudaStream_t NcclComm::stream() const {
  return OnStream && CallStream ? static_cast<cudaStream_t>(CallStream)
                                : B.Stream;
}

void NcclComm::checkAsyncError(const char *Op) {
  if (!C)
    return;
  const NcclApi &N = libraries().Nccl;
  ncclResult_t Async = ncclSuccess;
  N.CommGetAsyncError(C, &Async);
  if (Async == ncclSuccess || Async == ncclInProgress)
    return;
  std::string Msg = std::string(Op) +
                    ": NCCL reported an asynchronous error on " + Label + ": " +
                    N.GetErrorString(Async) + " (" + N.GetLastError(C) + ")";
  N.CommAbort(C);
  C = nullptr;
  gpuForgetDeviceMemory();
  throw Error(MESHRT_ERROR_BACKEND, Msg);
}

void NcclComm::fail(ncclResult_t R, const char *What) {
  const NcclApi &N = libraries().Nccl;
  throw Error(MESHRT_ERROR_BACKEND, std::string(What) +
                                        " failed: " + N.GetErrorString(R) +
                                        " (" + N.GetLastError(C) + ")");
}

void NcclComm::checkDeviceSlow(const void *P, const char *Which,
                               const char *Op) const {
  if (!C)
    throw Error(MESHRT_ERROR_BACKEND,
                std::string(Op) + ": the NCCL communicator was aborted after "
                                  "an earlier error");
  if (gpuKeptForReuse(P))
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Op) + ": the " + Which +
                    " buffer was freed (meshrt_device_free or mgpuMemFree); "
                    "the runtime keeps its memory for reuse");
  cudaPointerAttributes A{};
  cudaError_t E = libraries().Cuda.PointerGetAttributes(&A, P);
  if (E != cudaSuccess)
    cudaFail(E, std::string(Op) + ": cudaPointerGetAttributes(" + Which + ")");
  if (A.type != cudaMemoryTypeDevice && A.type != cudaMemoryTypeManaged)
    throw Error(MESHRT_ERROR_INVALID_ARGUMENT,
                std::string(Op) + ": the " + Which +
                    " buffer is host memory; the NCCL backend needs device "
                    "(cudaMalloc) or managed buffers");
  gpuRememberDeviceMemory(P);
}

void NcclComm::wait(const char *Op) {
  const Libraries &L = libraries();
  for (unsigned Spin = 0;; ++Spin) {
    cudaError_t E = L.Cuda.StreamQuery(B.Stream);
    if (E == cudaSuccess)
      return;
    if (E != cudaErrorNotReady)
      cudaFail(E, std::string(Op) + " (waiting on the stream)");
    ncclResult_t Async = ncclSuccess;
    L.Nccl.CommGetAsyncError(C, &Async);
    if (Async != ncclSuccess && Async != ncclInProgress) {
      std::string Msg = std::string(Op) +
                        ": NCCL reported an asynchronous "
                        "error: " +
                        L.Nccl.GetErrorString(Async) + " (" +
                        L.Nccl.GetLastError(C) + ")";
      L.Nccl.CommAbort(C);
      C = nullptr;
      gpuForgetDeviceMemory();
      throw Error(MESHRT_ERROR_BACKEND, Msg);
    }
    if (Spin > 2000)
      std::this_thread::yield();
  }
}

void NcclComm::allReduce(const void *Send, void *Recv, int64_t Count,
                         meshrt_dtype T, meshrt_reduce_op Op) {
  checkDevice(Send, "send", "all_reduce");
  if (Recv != Send)
    checkDevice(Recv, "recv", "all_reduce");
  check(libraries().Nccl.AllReduce(Send, Recv, size_t(Count), ncclType(T),
                                   ncclOp(Op), C, stream()),
        "ncclAllReduce");
  finish("all_reduce");
}

void NcclComm::allGather(const void *Send, void *Recv, int64_t Count,
                         meshrt_dtype T) {
  checkDevice(Send, "send", "all_gather");
  checkDevice(Recv, "recv", "all_gather");
  check(libraries().Nccl.AllGather(Send, Recv, size_t(Count), ncclType(T), C,
                                   stream()),
        "ncclAllGather");
  finish("all_gather");
}

void NcclComm::reduceScatter(const void *Send, void *Recv, int64_t Count,
                             meshrt_dtype T, meshrt_reduce_op Op) {
  checkDevice(Send, "send", "reduce_scatter");
  checkDevice(Recv, "recv", "reduce_scatter");
  check(libraries().Nccl.ReduceScatter(Send, Recv, size_t(Count), ncclType(T),
                                       ncclOp(Op), C, stream()),
        "ncclReduceScatter");
  finish("reduce_scatter");
}

/// NCCL has no all-gather of unequal blocks: each member's data elements go
/// to every other member by grouped send/receive (as all_to_all), its own
/// block by a copy; the padding after `Valid` is zeroed on the stream.
void NcclComm::allGatherPadded(const void *Send, void *Recv, int64_t Count,
                               int64_t Valid, meshrt_dtype T) {
  checkDevice(Send, "send", "all_gather_padded");
  checkDevice(Recv, "recv", "all_gather_padded");
  const Libraries &L = libraries();
  size_t Elem = size_t(dtypeSize(T));
  char *Out = static_cast<char *>(Recv);
  checkCuda(L.Cuda.MemsetAsync(Out + size_t(Valid) * Elem, 0,
                               size_t(Size * Count - Valid) * Elem, stream()),
            "cudaMemsetAsync");
  size_t Mine = size_t(validIn(Rank, Count, Valid));
  if (Mine != 0)
    checkCuda(L.Cuda.MemcpyAsync(Out + size_t(Rank * Count) * Elem, Send,
                                 Mine * Elem, cudaMemcpyDeviceToDevice,
                                 stream()),
              "cudaMemcpyAsync");
  check(L.Nccl.GroupStart(), "ncclGroupStart");
  ncclResult_t R = ncclSuccess;
  for (int64_t J = 0; J < Size && R == ncclSuccess; ++J) {
    if (J == Rank)
      continue;
    if (Mine != 0)
      R = L.Nccl.Send(Send, Mine, ncclType(T), int(J), C, stream());
    size_t Theirs = size_t(validIn(J, Count, Valid));
    if (R == ncclSuccess && Theirs != 0)
      R = L.Nccl.Recv(Out + size_t(J * Count) * Elem, Theirs, ncclType(T),
                      int(J), C, stream());
  }
  ncclResult_t End = L.Nccl.GroupEnd();
  check(R, "ncclSend/ncclRecv (all_gather_padded)");
  check(End, "ncclGroupEnd (all_gather_padded)");
  finish("all_gather_padded");
}

/// NCCL has no reduce-scatter of unequal blocks: one grouped ncclReduce per
/// member reduces that member's data to it (as PyTorch's NCCL process group
/// does for uneven blocks), so the padding is neither sent nor reduced; this
/// member's padding is zeroed after. A member whose block holds no data has
/// no reduce.
void NcclComm::reduceScatterPadded(const void *Send, void *Recv, int64_t Count,
                                   int64_t Valid, meshrt_dtype T,
                                   meshrt_reduce_op Op) {
  checkDevice(Send, "send", "reduce_scatter_padded");
  checkDevice(Recv, "recv", "reduce_scatter_padded");
  const Libraries &L = libraries();
  size_t Elem = size_t(dtypeSize(T));
  check(L.Nccl.GroupStart(), "ncclGroupStart");
  ncclResult_t R = ncclSuccess;
  for (int64_t J = 0; J < Size && R == ncclSuccess; ++J) {
    size_t Theirs = size_t(validIn(J, Count, Valid));
    if (Theirs != 0)
      R = L.Nccl.Reduce(
          static_cast<const char *>(Send) + size_t(J * Count) * Elem, Recv,
          Theirs, ncclType(T), ncclOp(Op), int(J), C, stream());
  }
  ncclResult_t End = L.Nccl.GroupEnd();
  check(R, "ncclReduce (reduce_scatter_padded)");
  check(End, "ncclGroupEnd (reduce_scatter_padded)");
  size_t Mine = size_t(validIn(Rank, Count, Valid));
  if (Mine != size_t(Count))
    checkCuda(L.Cuda.MemsetAsync(static_cast<char *>(Recv) + Mine * Elem, 0,
                                 (size_t(Count) - Mine) * Elem, stream()),
              "cudaMemsetAsync");
  finish("reduce_scatter_padded");
}

void NcclComm::allToAll(const void *Send, void *Recv, int64_t Count,
                        meshrt_dtype T) {
  checkDevice(Send, "send", "all_to_all");
  checkDevice(Recv, "recv", "all_to_all");
  const NcclApi &N = libraries().Nccl;
  size_t Bytes = size_t(Count * dtypeSize(T));
  check(N.GroupStart(), "ncclGroupStart");
  ncclResult_t R = ncclSuccess;
  for (int64_t J = 0; J < Size && R == ncclSuccess; ++J) {
    R = N.Send(static_cast<const char *>(Send) + J * Bytes, size_t(Count),
               ncclType(T), int(J), C, stream());
    if (R == ncclSuccess)
      R = N.Recv(static_cast<char *>(Recv) + J * Bytes, size_t(Count),
                 ncclType(T), int(J), C, stream());
  }
  ncclResult_t End = N.GroupEnd();
  check(R, "ncclSend/ncclRecv (all_to_all)");
  check(End, "ncclGroupEnd (all_to_all)");
  finish("all_to_all");
}

/// NCCL has no all-to-all of unequal blocks: the padding of recv's blocks is
/// zeroed on the stream (runs of it that touch merged into one memset), this
/// member's own data is copied, and the data of every other block goes by
/// grouped send/receive (as all_to_all, without the empty ones).
void NcclComm::allToAllPadded(const void *Send, void *Recv, int64_t Count,
                              int64_t Valid, meshrt_dtype T, int32_t Side) {
  checkDevice(Send, "send", "all_to_all_padded");
  checkDevice(Recv, "recv", "all_to_all_padded");
  const Libraries &L = libraries();
  const size_t Elem = size_t(dtypeSize(T));
  const char *In = static_cast<const char *>(Send);
  char *Out = static_cast<char *>(Recv);
  const bool Split = Side == MESHRT_PADDED_SPLIT;
  const int64_t Mine = validIn(Rank, Count, Valid);
  // Elements received into block J (from member J).
  auto RecvCount = [&](int64_t J) {
    return Split ? Mine : validIn(J, Count, Valid);
  };
  auto Zero = [&](int64_t Begin, int64_t End) {
    checkCuda(L.Cuda.MemsetAsync(Out + size_t(Begin) * Elem, 0,
                                 size_t(End - Begin) * Elem, stream()),
              "cudaMemsetAsync");
  };
  // The padding of block J is [J * Count + RecvCount(J), (J + 1) * Count);
  // Pad is where the run of padding that reaches block J began (-1: none).
  int64_t Pad = -1;
  for (int64_t J = 0; J < Size; ++J) {
    int64_t Got = RecvCount(J);
    if (Got != 0 && Pad >= 0) {
      Zero(Pad, J * Count);
      Pad = -1;
    }
    if (Got != Count && Pad < 0)
      Pad = J * Count + Got;
  }
  if (Pad >= 0)
    Zero(Pad, Size * Count);
  if (Mine != 0)
    checkCuda(L.Cuda.MemcpyAsync(Out + size_t(Rank * Count) * Elem,
                                 In + size_t(Rank * Count) * Elem,
                                 size_t(Mine) * Elem, cudaMemcpyDeviceToDevice,
                                 stream()),
              "cudaMemcpyAsync");
  check(L.Nccl.GroupStart(), "ncclGroupStart");
  ncclResult_t R = ncclSuccess;
  for (int64_t J = 0; J < Size && R == ncclSuccess; ++J) {
    if (J == Rank)
      continue;
    size_t SendN = size_t(Split ? validIn(J, Count, Valid) : Mine);
    size_t RecvN = size_t(RecvCount(J));
    if (SendN != 0)
      R = L.Nccl.Send(In + size_t(J * Count) * Elem, SendN, ncclType(T), int(J),
                      C, stream());
    if (R == ncclSuccess && RecvN != 0)
      R = L.Nccl.Recv(Out + size_t(J * Count) * Elem, RecvN, ncclType(T),
                      int(J), C, stream());
  }
  ncclResult_t End = L.Nccl.GroupEnd();
  check(R, "ncclSend/ncclRecv (all_to_all_padded)");
  check(End, "ncclGroupEnd (all_to_all_padded)");
  finish("all_to_all_padded");
}

void NcclComm::broadcast(void *Buf, int64_t Count, meshrt_dtype T,
                         int64_t Root) {
  checkDevice(Buf, "data", "broadcast");
  check(libraries().Nccl.Broadcast(Buf, Buf, size_t(Count), ncclType(T),
                                   int(Root), C, stream()),
        "ncclBroadcast");
  finish("broadcast");
}

void NcclComm::sendRecv(const void *Send, int64_t Dest, void *Recv,
                        int64_t Source, int64_t Count, meshrt_dtype T,
                        bool ZeroFill) {
  checkDevice(Send, "send", "permute");
  checkDevice(Recv, "recv", "permute");
  const Libraries &L = libraries();
  size_t Bytes = size_t(Count * dtypeSize(T));
  if (Source < 0 && ZeroFill)
    checkCuda(L.Cuda.MemsetAsync(Recv, 0, Bytes, stream()), "cudaMemsetAsync");
  if (Dest == Rank && Source == Rank) {
    checkCuda(L.Cuda.MemcpyAsync(Recv, Send, Bytes, cudaMemcpyDeviceToDevice,
                                 stream()),
              "cudaMemcpyAsync");
  } else if (Dest >= 0 || Source >= 0) {
    check(L.Nccl.GroupStart(), "ncclGroupStart");
    ncclResult_t R = ncclSuccess;
    if (Dest >= 0)
      R = L.Nccl.Send(Send, size_t(Count), ncclType(T), int(Dest), C, stream());
    if (R == ncclSuccess && Source >= 0)
      R = L.Nccl.Recv(Recv, size_t(Count), ncclType(T), int(Source), C,
                      stream());
    ncclResult_t End = L.Nccl.GroupEnd();
    check(R, "ncclSend/ncclRecv (permute)");
    check(End, "ncclGroupEnd (permute)");
  }
  finish("permute");
}

static void requireTagZero(int64_t Tag, const char *Op) {
  if (Tag != 0)
    throw Error(MESHRT_ERROR_UNSUPPORTED,
                std::string(Op) + ": tag " + std::to_string(Tag) +
                    " on the NCCL backend, which has no tags (messages "
                    "between two ranks arrive in the order sent); use tag 0");
}

void NcclComm::send(const void *Buf, int64_t Count, meshrt_dtype T,
                    int64_t Peer, int64_t Tag) {
  requireTagZero(Tag, "send");
  checkDevice(Buf, "send", "send");
  // Grouped, as every send and receive of this backend.
  const NcclApi &N = libraries().Nccl;
  check(N.GroupStart(), "ncclGroupStart");
  ncclResult_t R =
      N.Send(Buf, size_t(Count), ncclType(T), int(Peer), C, stream());
  ncclResult_t End = N.GroupEnd();
  check(R, "ncclSend");
  check(End, "ncclGroupEnd (send)");
  finish("send");
}

void NcclComm::recv(void *Buf, int64_t Count, meshrt_dtype T, int64_t Peer,
                    int64_t Tag) {
  requireTagZero(Tag, "recv");
  checkDevice(Buf, "recv", "recv");
  // Grouped, as every send and receive of this backend.
  const NcclApi &N = libraries().Nccl;
  check(N.GroupStart(), "ncclGroupStart");
  ncclResult_t R =
      N.Recv(Buf, size_t(Count), ncclType(T), int(Peer), C, stream());
  ncclResult_t End = N.GroupEnd();
  check(R, "ncclRecv");
  check(End, "ncclGroupEnd (recv)");
  finish("recv");
}

void NcclComm::barrier() {
  checkDevice(B.Scratch, "scratch", "barrier");
  check(libraries().Nccl.AllReduce(B.Scratch, B.Scratch, 1, ncclInt32, ncclSum,
                                   C, stream()),
        "ncclAllReduce (barrier)");
  finish("barrier");
}

} // namespace

bool meshrt::detail::ncclBackendBuilt() { return true; }

bool meshrt::detail::cudaDeviceVisible(std::string &Why) {
  const Libraries &L = libraries();
  if (!L.Loaded) {
    Why = L.Error;
    return false;
  }
  int Count = 0;
  cudaError_t E = L.Cuda.GetDeviceCount(&Count);
  if (E != cudaSuccess) {
    Why = std::string("cudaGetDeviceCount: ") + L.Cuda.GetErrorString(E);
    return false;
  }
  if (Count == 0) {
    Why = "cudaGetDeviceCount returned 0 devices";
    return false;
  }
  return true;
}

std::unique_ptr<Backend>
meshrt::detail::createNcclBackend(ControlGroup &Control) {
  return std::make_unique<NcclBackend>(Control);
}

#else // !MESHRT_HAVE_NCCL

using namespace meshrt;
using namespace meshrt::detail;

bool meshrt::detail::ncclBackendBuilt() { return false; }

bool meshrt::detail::cudaDeviceVisible(std::string &Why) {
  Why = "meshrt was built without the NCCL backend";
  return false;
}

std::unique_ptr<Backend> meshrt::detail::createNcclBackend(ControlGroup &) {
  throw Error(MESHRT_ERROR_UNSUPPORTED,
              "meshrt was built without the NCCL backend");
}

#endif // MESHRT_HAVE_NCCL
