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

#include <cstdint>

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

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_GPU_H
