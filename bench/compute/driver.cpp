//===- driver.cpp - times one compiled kernel of bench/compute ------------===//
//
// compute-bench NAME CALLS [OUT.bin]: fills the kernel's inputs with the
// pattern peers.py builds too, calls the kernel twice to warm up, then CALLS
// times, and prints "NAME <median seconds per call> <work per second>
// <unit>". With OUT.bin, writes the last result (raw f32) for peers.py to
// check against numpy.
//
// Built with -DMESH_GPU for kernels compiled with mesh-compile --target=cuda
// (bench/compute/gpu_pack.sh): the same inputs are copied once to device
// memory (cudaMalloc), the descriptors hold device pointers, each call's
// result (allocated by the runtime) is freed with meshrt_device_free, and the
// last one is copied back to the host for OUT.bin. Each compiled call
// synchronises once at its end, so the time around it is the GPU's time.
// The output line is the same.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct KernelInfo {
  const char *name;
  std::vector<std::vector<int64_t>> inputs;
  std::vector<int64_t> output;
  double work;
  const char *unit;
  void (*call)(void *out, void **in);
};

#include "kernels.inc"

#if defined(MESH_DIST) && defined(MESH_GPU)
#error "MESH_DIST and MESH_GPU are separate builds"
#endif

#ifdef MESH_GPU
#include "meshrt/meshrt.h"
#include <cuda_runtime_api.h>
// The module's start-up and shut-down, generated only when the module has a
// mesh (bench/compute's kernels have none): called when present.
extern "C" __attribute__((weak)) void mesh_module_init();
extern "C" __attribute__((weak)) void mesh_module_fini();

namespace {
void checkCuda(cudaError_t E, const char *What) {
  if (E != cudaSuccess) {
    std::fprintf(stderr, "compute-bench: %s: %s\n", What,
                 cudaGetErrorString(E));
    std::exit(1);
  }
}
void checkRt(meshrt_status S, const char *What) {
  if (S != MESHRT_SUCCESS) {
    std::fprintf(stderr, "compute-bench: %s: %s\n", What, meshrt_last_error());
    std::exit(1);
  }
}
} // namespace
#endif

#ifdef MESH_DIST
// The 2-rank build (gen_dist.py's kernels): the module's start-up and
// shut-down, and one line of output, from world rank 0.
extern "C" void mesh_module_init();
extern "C" void mesh_module_fini();
#endif

namespace {
int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}
} // namespace

/// The plain C loop peer of the Jacobi step (bench's "c" column): the same
/// step written by hand, output buffer allocated once, compiled with the
/// driver (clang -O3 -march=native).
void jacobiC(const float *X, float *Y, int64_t N) {
  for (int64_t I = 0; I < N; ++I)
    for (int64_t J = 0; J < N; ++J) {
      float Up = I > 0 ? X[(I - 1) * N + J] : 0.0f;
      float Down = I + 1 < N ? X[(I + 1) * N + J] : 0.0f;
      float Left = J > 0 ? X[I * N + J - 1] : 0.0f;
      float Right = J + 1 < N ? X[I * N + J + 1] : 0.0f;
      Y[I * N + J] = (((Up + Down) + Left) + Right) * 0.25f;
    }
}

int main(int argc, char **argv) {
  if (argc == 4 && !std::strcmp(argv[1], "--c-jacobi")) {
    // compute-bench --c-jacobi N CALLS
    int64_t N = std::atoll(argv[2]);
    int Calls = std::atoi(argv[3]);
    std::vector<float> X(N * N), Y(N * N);
    for (size_t I = 0; I < X.size(); ++I)
      X[I] = float(uint32_t(I * 2654435761u) % 1000) / 1000.0f - 0.5f;
    std::vector<double> Times;
    for (int I = 0; I < Calls + 2; ++I) {
      auto T0 = std::chrono::steady_clock::now();
      jacobiC(X.data(), Y.data(), N);
      auto T1 = std::chrono::steady_clock::now();
      if (I >= 2)
        Times.push_back(std::chrono::duration<double>(T1 - T0).count());
    }
    std::sort(Times.begin(), Times.end());
    double Median = Times[Times.size() / 2];
    std::printf("jacobi %.6e %.3f GB/s\n", Median, 8.0 * N * N / Median / 1e9);
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s NAME CALLS [OUT.bin]\n", argv[0]);
    return 2;
  }
  const KernelInfo *k = nullptr;
  for (const KernelInfo &c : kKernels)
    if (!std::strcmp(c.name, argv[1]))
      k = &c;
  if (!k) {
    std::fprintf(stderr, "compute-bench: no kernel '%s'\n", argv[1]);
    return 2;
  }
  int calls = std::atoi(argv[2]);
#ifdef MESH_DIST
  mesh_module_init();
  const char *Rank = std::getenv("OMPI_COMM_WORLD_RANK");
  bool Quiet = Rank && std::strcmp(Rank, "0");
#else
  bool Quiet = false;
#endif
#ifdef MESH_GPU
  if (mesh_module_init)
    mesh_module_init();
  // The runtime's device (by local rank, else 0) for our buffers too.
  int64_t Device = 0;
  checkRt(meshrt_gpu_select_device(&Device), "meshrt_gpu_select_device");
  checkCuda(cudaSetDevice(int(Device)), "cudaSetDevice");
#endif
  std::vector<std::vector<float>> data;
  for (size_t j = 0; j < k->inputs.size(); ++j) {
    std::vector<float> v(count(k->inputs[j]));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] =
          float(uint32_t((i + j * 7919) * 2654435761u) % 1000) / 1000.0f - 0.5f;
    data.push_back(std::move(v));
  }
#ifdef MESH_GPU
  // The inputs in device memory, copied once; the descriptors below point
  // there.
  std::vector<float *> devData;
  for (size_t j = 0; j < data.size(); ++j) {
    float *d = nullptr;
    size_t bytes = data[j].size() * sizeof(float);
    checkCuda(cudaMalloc(reinterpret_cast<void **>(&d), bytes), "cudaMalloc");
    checkCuda(cudaMemcpy(d, data[j].data(), bytes, cudaMemcpyHostToDevice),
              "cudaMemcpy to device");
    devData.push_back(d);
  }
  // A pageable copy may return before its DMA ends: wait for the legacy
  // stream before the runtime's stream reads the inputs.
  checkCuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
#endif
  // Each input's memref descriptor: allocated and aligned pointers, offset,
  // sizes, strides (row-major), as the C interface takes it.
  std::vector<std::vector<int64_t>> raw;
  std::vector<void *> in;
  for (size_t j = 0; j < k->inputs.size(); ++j) {
    const std::vector<int64_t> &shape = k->inputs[j];
    size_t r = shape.size();
    std::vector<int64_t> w(3 + 2 * r);
#ifdef MESH_GPU
    w[0] = w[1] = int64_t(reinterpret_cast<intptr_t>(devData[j]));
#else
    w[0] = w[1] = int64_t(reinterpret_cast<intptr_t>(data[j].data()));
#endif
    w[2] = 0;
    int64_t stride = 1;
    for (size_t i = r; i-- > 0;) {
      w[3 + i] = shape[i];
      w[3 + r + i] = stride;
      stride *= shape[i];
    }
    raw.push_back(std::move(w));
  }
  for (auto &w : raw)
    in.push_back(w.data());
  std::vector<int64_t> out(3 + 2 * k->output.size());
  std::vector<double> times;
  for (int i = 0; i < calls + 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    k->call(out.data(), in.data());
    auto t1 = std::chrono::steady_clock::now();
    if (i >= 2)
      times.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (i + 1 < calls + 2)
#ifdef MESH_GPU
      checkRt(meshrt_device_free(reinterpret_cast<void *>(out[0])),
              "meshrt_device_free");
#else
      std::free(reinterpret_cast<void *>(out[0]));
#endif
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  if (!Quiet)
    std::printf("%s %.6e %.3f %s\n", k->name, median, k->work / median / 1e9,
                k->unit);
  if (argc > 3) {
    FILE *f = std::fopen(argv[3], "wb");
#ifdef MESH_GPU
    std::vector<float> host(count(k->output));
    checkCuda(cudaMemcpy(host.data(),
                         reinterpret_cast<const float *>(out[1]) + out[2],
                         host.size() * sizeof(float), cudaMemcpyDeviceToHost),
              "cudaMemcpy to host");
    const float *res = host.data();
#else
    const float *res = reinterpret_cast<const float *>(out[1]) + out[2];
#endif
    std::fwrite(res, sizeof(float), count(k->output), f);
    std::fclose(f);
  }
#ifdef MESH_GPU
  checkRt(meshrt_device_free(reinterpret_cast<void *>(out[0])),
          "meshrt_device_free");
  for (float *d : devData)
    checkCuda(cudaFree(d), "cudaFree");
  if (mesh_module_fini)
    mesh_module_fini();
#else
  std::free(reinterpret_cast<void *>(out[0]));
#endif
#ifdef MESH_DIST
  mesh_module_fini();
#endif
  return 0;
}
