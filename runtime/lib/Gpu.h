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

/// The number of CUDA devices the driver shows this process, without
/// selecting one. Throws meshrt::Error (MESHRT_ERROR_BACKEND) when the driver
/// cannot be loaded or initialised.
int gpuDeviceCount();

/// The shared stream of the selected device (selects it first if needed).
void *gpuSharedStream();

/// Makes the selected device's context current on the calling thread.
void gpuMakeCurrent();

/// Waits for `Stream` (null: the shared stream) on the driver API, polling so
/// that the caller's watchdog stays in charge. Throws on a CUDA error, with
/// `Op`, `When` (if given, in parentheses) and the CUDA call's name in the
/// message, which is built only then.
void gpuPollStream(void *Stream, const char *Op, const char *When = nullptr);

/// Frees `Ptr` (from mgpuMemAlloc) in stream order on `Stream` (null: the
/// shared stream). Throws meshrt::Error with `Op` in the message.
void gpuFree(void *Ptr, void *Stream, const char *Op);

/// Gives the buffers kept for reuse on the shared stream (see gpuFree) back
/// to the driver, in stream order. Called when a context is finalized; a
/// no-op when no device was selected.
void gpuReleaseKeptBuffers();

/// True if `P` points into a buffer that was freed and is kept for reuse
/// (a use after free). Takes a lock: for slow paths only.
bool gpuKeptForReuse(const void *P);

/// meshrt_stream_synchronize: polls `Stream` with NCCL error checks and the
/// watchdog when the default context runs on NCCL, on the driver otherwise.
void gpuSynchronize(void *Stream, const char *Op);

/// How many times gpuSynchronize ran in this process (meshrt_stats'
/// stream_synchronizations).
int64_t gpuStreamSynchronizations();

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

// A per-thread memo of pointers found to be device or managed memory, so
// that a collective on the same buffers does not ask the driver again (the
// NCCL backend's check costs a cudaPointerGetAttributes per buffer, which is
// a noticeable part of a small stream-ordered collective). Each entry is the
// driver's allocation range (cuMemGetAddressRange), so views into a buffer
// hit too; the exact pointer when the driver cannot say.
//
// It is emptied, in every thread, whenever the runtime frees device memory
// (gpuFree: mgpuMemFree, meshrt_device_free) and when a communicator is
// destroyed or aborted (gpuForgetDeviceMemory).
//
// What it can miss: a buffer the program frees itself (cudaFree, cuMemFree)
// and then passes again. Without the memo that use after free is reported as
// host memory; with it, it reaches NCCL, which faults on the stream. No host
// memory can take the freed address meanwhile: under CUDA's unified
// addressing the driver reserves the device virtual address range in the
// process for the life of the context (and the runtime retains the primary
// context until exit), so malloc, mmap and the stack never return an address
// in it. Only pinned host memory (cudaMallocHost, cuMemHostAlloc), which the
// driver maps in that range, could; the device can access it under unified
// addressing, so NCCL still works on it (at host-memory speed).

/// True if this thread validated `P` (or a pointer into the same allocation)
/// as device or managed memory since the last gpuForgetDeviceMemory.
bool gpuKnownDeviceMemory(const void *P);
/// Records that `P` was just validated as device or managed memory (after a
/// gpuKnownDeviceMemory miss on this thread).
void gpuRememberDeviceMemory(const void *P);
/// Empties every thread's memo (device memory was freed, or a communicator
/// went away).
void gpuForgetDeviceMemory();

/// Allocates `Bytes` (> 0) of device memory in stream order on `Stream`
/// (null: the shared stream), as mgpuMemAlloc does: on the shared stream a
/// buffer kept for reuse of that size is taken first, and the new buffer is
/// known device memory. Throws meshrt::Error (MESHRT_ERROR_BACKEND) on a
/// driver error, with `What` (the purpose) in the message.
void *gpuAlloc(size_t Bytes, void *Stream, const char *What);

/// Enqueues zeroing `Bytes` (even) at device address `Dst` (2-byte aligned)
/// on `Stream` (null: the shared stream). Throws on a driver error, with
/// `What` in the message.
void gpuZeroAsync(void *Dst, size_t Bytes, void *Stream, const char *What);

/// Enqueues a copy of `Bytes` from `Src` to `Dst` (host or device) on
/// `Stream` (null: the shared stream); wait with gpuPollStream. Throws on a
/// driver error, with `Op` and `What` in the message.
void gpuCopyAsync(void *Dst, const void *Src, size_t Bytes, void *Stream,
                  const char *Op, const char *What);

/// Makes `Stream` wait on the device for the work enqueued on `Producer` so
/// far (each null: the shared stream), through an event. Throws on a driver
/// error.
void gpuStreamWaitStream(void *Stream, void *Producer);

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_GPU_H
