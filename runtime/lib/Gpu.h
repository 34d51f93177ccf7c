//===- Gpu.h - The CUDA device and stream of this process -------*- C++ -*-===//
//
// One device and one stream per process, shared by compiled kernels (the
// mgpu* functions), copies, stream-ordered allocations and NCCL collectives.
// Implemented on the CUDA driver API, loaded with dlopen("libcuda.so.1") on
// first use so that machines without a driver run everything else.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_GPU_H
#define MESHRT_LIB_GPU_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace meshrt {
namespace detail {

/// Selects this process's device once: (`LocalRank` % device count), or, when
/// `LocalRank` < 0, the launcher's node-local rank from the environment (0 if
/// none is set). Makes its primary context current on the calling thread and
/// returns the ordinal. Later calls return the first choice. Throws
/// meshrt::Error (MESHRT_ERROR_BACKEND) when there is no driver or device.
int gpuSelectDevice(int64_t LocalRank = -1);

/// The shared stream of the selected device (selects it first if needed).
void *gpuSharedStream();

/// Makes the selected device's context current on the calling thread.
void gpuMakeCurrent();

/// Waits for `Stream` (null: the shared stream) on the driver API, polling so
/// that the caller's watchdog stays in charge. Throws on a CUDA error, with
/// `Op` and the CUDA call's name in the message.
void gpuPollStream(void *Stream, const char *Op);

/// Frees `Ptr` (from mgpuMemAlloc) in stream order on `Stream` (null: the
/// shared stream). Throws meshrt::Error with `Op` in the message.
void gpuFree(void *Ptr, void *Stream, const char *Op);

/// meshrt_stream_synchronize: polls `Stream` with NCCL error checks and the
/// watchdog when the default context runs on NCCL, on the driver otherwise.
void gpuSynchronize(void *Stream, const char *Op);

// Staging for the MPI backend's stream-ordered collectives (MpiBackend.cpp).

/// Selects this process's device (see gpuSelectDevice) and makes it current;
/// false, with the reason in `Why`, when there is no driver or no device (or
/// the runtime was built without CUDA). Never throws for those reasons.
bool gpuTryMakeCurrent(std::string &Why);

/// True if `P` is memory of the CUDA driver (device or managed memory, asked
/// with cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)); false for
/// host memory (pageable or pinned). Needs gpuTryMakeCurrent() first. Throws
/// on an unexpected driver error, with `Op` in the message.
bool gpuIsDeviceMemory(const void *P, const char *Op);

/// Enqueues a copy of `Bytes` from `Src` to `Dst` (host or device) on
/// `Stream` (null: the shared stream); wait with gpuPollStream. Throws on a
/// driver error, with `What` in the message.
void gpuCopyAsync(void *Dst, const void *Src, size_t Bytes, void *Stream,
                  const std::string &What);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_GPU_H
