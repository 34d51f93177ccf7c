//===- FakeCudart.cpp - A host-memory stand-in for libcudart --------------===//
//
// Test-only. Implements the few CUDA runtime calls that libmeshrt's NCCL
// backend and the NCCL test binary use, on top of the emulated driver
// (FakeCuda.cpp, libcuda.so.1), so that the backend's own logic (device
// choice, stream polling, pointer checks, zero fill, local copies) runs on
// machines without a GPU. Built as libcudart.so.13 into a private directory
// that the "emulated" tests put first in LD_LIBRARY_PATH.
//
// Device memory comes from the emulated driver's allocation table (shared
// with the mgpu* functions' cuMemAllocAsync) and is not readable from the
// host outside the emulation's own copies. Work is done at once; the
// emulated NCCL marks the stream busy for a few polls, so the caller's
// polling loop is exercised.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
void fakeCudaAccess(int Open);
int fakeCudaIsDevicePointer(const void *P, size_t Bytes);
int fakeCudaCurrentDevice();
int fakeCudaSetDevice(int D);
int fakeCudaStreamReady(const void *S);
int fakeCudaAlloc(void **P, size_t Bytes);
int fakeCudaFree(void *P);
void fakeCudaTrace(const char *Fmt, ...);
}

namespace {

int deviceCount() {
  const char *E = std::getenv("FAKE_CUDA_DEVICES");
  return E ? std::atoi(E) : 8;
}

bool isDevicePointer(const void *P, size_t Bytes = 1) {
  return fakeCudaIsDevicePointer(P, Bytes);
}

std::atomic<long> PointerQueries{0};

} // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int *Count) {
  *Count = deviceCount();
  return *Count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

/// Bus ids as a node's PCI bus gives them: one per emulated device.
cudaError_t cudaDeviceGetPCIBusId(char *Id, int Len, int Device) {
  if (Device < 0 || Device >= deviceCount())
    return cudaErrorInvalidDevice;
  if (Len < 13)
    return cudaErrorInvalidValue;
  std::snprintf(Id, size_t(Len), "0000:%02x:00.0", 0x18 + Device);
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int Device) {
  return fakeCudaSetDevice(Device) ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaMalloc(void **P, size_t Bytes) {
  return fakeCudaAlloc(P, Bytes) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *P) {
  if (!P)
    return cudaSuccess;
  return fakeCudaFree(P) ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaMemcpy(void *Dst, const void *Src, size_t Bytes,
                       enum cudaMemcpyKind) {
  fakeCudaTrace("memcpy %s2%s bytes=%zu sync", isDevicePointer(Src) ? "d" : "h",
                isDevicePointer(Dst) ? "d" : "h", Bytes);
  fakeCudaAccess(1);
  std::memmove(Dst, Src, Bytes);
  fakeCudaAccess(0);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *Dst, const void *Src, size_t Bytes,
                            enum cudaMemcpyKind, cudaStream_t) {
  if (!isDevicePointer(Dst, Bytes) || !isDevicePointer(Src, Bytes))
    return cudaErrorInvalidValue; // The backend only copies device to device.
  fakeCudaTrace("memcpy d2d bytes=%zu", Bytes);
  fakeCudaAccess(1);
  std::memmove(Dst, Src, Bytes);
  fakeCudaAccess(0);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *Dst, int Value, size_t Bytes, cudaStream_t) {
  if (!isDevicePointer(Dst, Bytes))
    return cudaErrorInvalidValue;
  fakeCudaTrace("memset8 count=%zu", Bytes);
  fakeCudaAccess(1);
  std::memset(Dst, Value, Bytes);
  fakeCudaAccess(0);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *S, unsigned int Flags) {
  return cuStreamCreate(reinterpret_cast<CUstream *>(S), Flags) == CUDA_SUCCESS
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaStreamQuery(cudaStream_t S) {
  return fakeCudaStreamReady(S) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaGetDevice(int *Device) {
  *Device = fakeCudaCurrentDevice();
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *Version) {
  *Version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t S) {
  while (!fakeCudaStreamReady(S)) {
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *P, int Device) {
  if (Device < 0 || Device >= deviceCount())
    return cudaErrorInvalidDevice;
  std::memset(P, 0, sizeof(*P));
  std::snprintf(P->name, sizeof(P->name), "emulated device %d", Device);
  P->major = 9;
  P->multiProcessorCount = 1;
  return cudaSuccess;
}

/// Test hook: the number of cudaPointerGetAttributes calls so far.
long fakeCudartPointerQueries() { return PointerQueries.load(); }

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *A, const void *P) {
  PointerQueries.fetch_add(1);
  std::memset(A, 0, sizeof(*A));
  if (isDevicePointer(P)) {
    A->type = cudaMemoryTypeDevice;
    A->device = fakeCudaCurrentDevice();
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
