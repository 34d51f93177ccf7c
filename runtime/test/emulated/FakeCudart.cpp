//===- FakeCudart.cpp - A host-memory stand-in for libcudart --------------===//
//
// Test-only. Implements the few CUDA runtime calls that libmeshrt's NCCL
// backend and the NCCL test binary use, on host memory, so that the backend's
// own logic (device choice, stream polling, pointer checks, zero fill, local
// copies) runs on machines without a GPU. Built as libcudart.so.13 into a
// private directory that the "emulated" tests put first in LD_LIBRARY_PATH.
//
// "Device" memory is malloc'ed and remembered, so cudaPointerGetAttributes can
// tell it from host memory. Work is done at once; fakeCudaMarkBusy() makes
// the next cudaStreamQuery calls on a stream report cudaErrorNotReady, so the
// caller's polling loop is exercised.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

struct State {
  std::mutex Mutex;
  std::map<const char *, size_t> Allocations; // Start -> size.
  std::map<cudaStream_t, int> BusyPolls;
  int Device = 0;
};

State &state() {
  static State *S = new State;
  return *S;
}

int deviceCount() {
  const char *E = std::getenv("FAKE_CUDA_DEVICES");
  return E ? std::atoi(E) : 8;
}

bool isDevicePointer(const void *P) {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mutex);
  const char *C = static_cast<const char *>(P);
  auto It = S.Allocations.upper_bound(C);
  if (It == S.Allocations.begin())
    return false;
  --It;
  return C < It->first + It->second;
}

} // namespace

extern "C" {

/// Test hook: the next `Polls` cudaStreamQuery calls on `S` report "not
/// ready".
__attribute__((visibility("default"))) void fakeCudaMarkBusy(cudaStream_t S,
                                                             int Polls) {
  std::lock_guard<std::mutex> Lock(state().Mutex);
  state().BusyPolls[S] = Polls;
}

cudaError_t cudaGetDeviceCount(int *Count) {
  *Count = deviceCount();
  return *Count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int Device) {
  if (Device < 0 || Device >= deviceCount())
    return cudaErrorInvalidDevice;
  state().Device = Device;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **P, size_t Bytes) {
  *P = std::malloc(Bytes ? Bytes : 1);
  if (!*P)
    return cudaErrorMemoryAllocation;
  std::lock_guard<std::mutex> Lock(state().Mutex);
  state().Allocations[static_cast<const char *>(*P)] = Bytes ? Bytes : 1;
  return cudaSuccess;
}

cudaError_t cudaFree(void *P) {
  if (!P)
    return cudaSuccess;
  {
    std::lock_guard<std::mutex> Lock(state().Mutex);
    if (!state().Allocations.erase(static_cast<const char *>(P)))
      return cudaErrorInvalidValue;
  }
  std::free(P);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *Dst, const void *Src, size_t Bytes,
                       enum cudaMemcpyKind) {
  std::memmove(Dst, Src, Bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *Dst, const void *Src, size_t Bytes,
                            enum cudaMemcpyKind, cudaStream_t) {
  if (!isDevicePointer(Dst) || !isDevicePointer(Src))
    return cudaErrorInvalidValue; // The backend only copies device to device.
  std::memmove(Dst, Src, Bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *Dst, int Value, size_t Bytes, cudaStream_t) {
  if (!isDevicePointer(Dst))
    return cudaErrorInvalidValue;
  std::memset(Dst, Value, Bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *S, unsigned int) {
  *S = reinterpret_cast<cudaStream_t>(new int(0));
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t S) {
  delete reinterpret_cast<int *>(S);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t S) {
  std::lock_guard<std::mutex> Lock(state().Mutex);
  int &Polls = state().BusyPolls[S];
  if (Polls > 0) {
    --Polls;
    return cudaErrorNotReady;
  }
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *A, const void *P) {
  std::memset(A, 0, sizeof(*A));
  if (isDevicePointer(P)) {
    A->type = cudaMemoryTypeDevice;
    A->device = state().Device;
    A->devicePointer = const_cast<void *>(P);
  } else {
    A->type = cudaMemoryTypeUnregistered;
  }
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t E) {
  switch (E) {
  case cudaSuccess:
    return "no error (emulated)";
  case cudaErrorNotReady:
    return "device not ready (emulated)";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected (emulated)";
  default:
    return "error (emulated CUDA runtime)";
  }
}

} // extern "C"
