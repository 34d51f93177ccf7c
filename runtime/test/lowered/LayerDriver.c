/*===- LayerDriver.c - Host program for layer_stream_ordered.ll -----------===*\
|*                                                                            *|
|* Calls the lowered function the way host code would: runtime set-up, device *|
|* inputs from mgpuMemAlloc, the compiled function, then the result freed     *|
|* with meshrt_device_free. Run against the emulated driver, which does not   *|
|* run the kernels: the ctest driver checks the trace, not numbers.           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "meshrt/meshrt.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  float *Alloc, *Aligned;
  int64_t Offset, Sizes[2], Strides[2];
} MemRef2;
typedef struct {
  float *Alloc, *Aligned;
  int64_t Offset, Sizes[1], Strides[1];
} MemRef1;

void *mgpuMemAlloc(uint64_t Bytes, void *Stream, bool HostShared);
void mgpuMemFree(void *Ptr, void *Stream);
void *mgpuStreamCreate(void);
void _mlir_ciface_layer(MemRef2 *Result, MemRef2 *X, MemRef2 *W, MemRef1 *B);

/// The communicator the lowered code passes to the collective.
void *__mesh_comm_0;

int main(void) {
  int64_t Sizes[] = {-1}, Axes[] = {0};
  const char *Names[] = {"x"};
  meshrt_mesh_t Mesh;
  meshrt_init(MESHRT_BACKEND_NCCL); /* Aborts on error (default policy). */
  meshrt_mesh_declare("m", 1, Sizes, Names, &Mesh);
  meshrt_comm_get(Mesh, 1, Axes, (meshrt_comm_t *)&__mesh_comm_0);
  void *S = mgpuStreamCreate();
  float *X = mgpuMemAlloc(64 * 32 * 4, S, false);
  float *W = mgpuMemAlloc(32 * 16 * 4, S, false);
  float *B = mgpuMemAlloc(16 * 4, S, false);
  MemRef2 XM = {X, X, 0, {64, 32}, {32, 1}}, WM = {W, W, 0, {32, 16}, {16, 1}};
  MemRef2 Y;
  MemRef1 BM = {B, B, 0, {16}, {1}};
  _mlir_ciface_layer(&Y, &XM, &WM, &BM);
  meshrt_device_free(Y.Alloc);
  mgpuMemFree(X, S);
  mgpuMemFree(W, S);
  mgpuMemFree(B, S);
  meshrt_stream_synchronize(S);
  meshrt_finalize();
  puts("PASS");
  return 0;
}
