//===- TestBuffers.h - Host or device buffers for tests ---------*- C++ -*-===//
//
// The same collective tests run on the MPI backend (host memory) and on the
// NCCL backend (device memory). A Buffer holds `Bytes` bytes where the active
// backend wants them and copies to and from host vectors. Device memory is
// used only in the CUDA build of the tests (MESHRT_TEST_CUDA) and only when
// the runtime runs on NCCL, so that binary also runs the MPI path on machines
// without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_TEST_TESTBUFFERS_H
#define MESHRT_TEST_TESTBUFFERS_H

#include "meshrt/meshrt.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if MESHRT_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

namespace meshrt {
namespace test {

/// This process's rank in the default context's world.
inline int64_t worldRank() {
  int64_t R = 0;
  meshrt_world_rank(&R);
  return R;
}

/// The number of processes in the default context's world.
inline int64_t worldSize() {
  int64_t S = 0;
  meshrt_world_size(&S);
  return S;
}

/// Set by the test main: true when the runtime runs on NCCL.
inline bool &useDeviceMemory() {
  static bool Device = false;
  return Device;
}

#if MESHRT_TEST_CUDA
inline void cudaCheck(cudaError_t E, const char *What) {
  if (E != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", What, cudaGetErrorString(E));
    std::abort();
  }
}
#endif

/// A buffer in host or device memory.
class Buffer {
public:
  explicit Buffer(size_t Bytes) : Buffer(Bytes, useDeviceMemory()) {}
  /// A buffer in device memory if `Device` (CUDA build only), else host.
  Buffer(size_t Bytes, bool Device) : Bytes(Bytes), Device(Device) {
    size_t N = Bytes ? Bytes : 1;
#if MESHRT_TEST_CUDA
    if (Device) {
      cudaCheck(cudaMalloc(&Ptr, N), "cudaMalloc");
      return;
    }
#endif
    Host.assign(N, 0);
    Ptr = Host.data();
  }
  ~Buffer() {
#if MESHRT_TEST_CUDA
    if (Device)
      cudaFree(Ptr);
#endif
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  /// The pointer to pass to the runtime.
  void *get() const { return Ptr; }

  /// Copies `Bytes` bytes from `Src` into the buffer.
  void upload(const void *Src) {
#if MESHRT_TEST_CUDA
    if (Device) {
      cudaCheck(cudaMemcpy(Ptr, Src, Bytes, cudaMemcpyHostToDevice),
                "cudaMemcpy");
      return;
    }
#endif
    std::memcpy(Ptr, Src, Bytes);
  }

  /// Returns the buffer's bytes.
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> Out(Bytes);
#if MESHRT_TEST_CUDA
    if (Device) {
      cudaCheck(cudaMemcpy(Out.data(), Ptr, Bytes, cudaMemcpyDeviceToHost),
                "cudaMemcpy");
      return Out;
    }
#endif
    std::memcpy(Out.data(), Ptr, Bytes);
    return Out;
  }

private:
  size_t Bytes;
  bool Device;
  void *Ptr = nullptr;
  std::vector<unsigned char> Host;
};

} // namespace test
} // namespace meshrt

#endif // MESHRT_TEST_TESTBUFFERS_H
