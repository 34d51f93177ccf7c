//===- GpuTestSupport.h - Shared pieces of meshrt-gpu-tests ---*- C++ -*-===//
//
// What every mode of meshrt-gpu-tests uses: the mgpu* functions libmeshrt
// exports (as MLIR 22's gpu-to-llvm calls them), the failure count and
// checks, the rank's identity, device upload/download, the world
// communicator, a device-or-host buffer, and marks in the emulator's trace.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_TEST_GPUTESTSUPPORT_H
#define MESHRT_TEST_GPUTESTSUPPORT_H

#include "meshrt/meshrt.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// The mgpu* functions libmeshrt exports, as MLIR 22's gpu-to-llvm calls them.
extern "C" {
void *mgpuModuleLoad(void *Data, size_t Size);
void mgpuModuleUnload(void *Module);
void *mgpuModuleGetFunction(void *Module, const char *Name);
void mgpuLaunchKernel(void *F, intptr_t GX, intptr_t GY, intptr_t GZ,
                      intptr_t BX, intptr_t BY, intptr_t BZ, int32_t Smem,
                      void *Stream, void **Params, void **Extra,
                      size_t NParams);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *Stream);
void mgpuStreamSynchronize(void *Stream);
void mgpuStreamWaitEvent(void *Stream, void *Event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *Event);
void mgpuEventSynchronize(void *Event);
void mgpuEventRecord(void *Event, void *Stream);
void *mgpuMemAlloc(uint64_t Bytes, void *Stream, bool HostShared);
void mgpuMemFree(void *Ptr, void *Stream);
void mgpuMemcpy(void *Dst, void *Src, size_t Bytes, void *Stream);
void mgpuMemset32(void *Dst, unsigned Value, size_t Count, void *Stream);
void mgpuMemset16(void *Dst, unsigned short Value, size_t Count, void *Stream);
}

namespace gputest {

/// Checks failed so far, and this process's world rank and size.
extern int Failures;
extern int64_t Rank, Size;

/// Records a failure (printed as "FAIL: rank R: What") unless `Ok`.
void expect(bool Ok, const std::string &What);
/// Expects status `Want` and a last error that contains `Needle`.
void expectError(meshrt_status S, meshrt_status Want, const char *Needle);
/// Expects success of the call named `What`.
void ok(meshrt_status S, const char *What);
/// Ends a mode: finalizes the runtime, then 1 on any failure, else prints
/// PASS for `Who` (a rank) and 0.
int finish(int64_t Who);

/// Elements per rank in the collective checks.
const int64_t Count = 4;

/// Rank `G`'s send buffer: 10 G + i.
std::vector<float> sendInput(int64_t G);
/// Rank `G`'s all_to_all input over `N` ranks: block j holds 100 G + 10 j + i.
std::vector<float> allToAllInput(int64_t G, int64_t N);
/// `N` floats of device buffer `D`, copied back on stream `S`.
std::vector<float> download(void *D, int64_t N, void *S);
/// A device copy of `H`, made on stream `S`.
void *upload(const std::vector<float> &H, void *S);
/// The communicator of a one-axis mesh over the whole world.
meshrt_comm_t worldComm();

/// Writes `Line` into the emulated driver's trace (MESHRT_EMU_TRACE), where
/// the trace checkers find it; a no-op without the emulated driver.
void traceMark(const std::string &Line);

/// A buffer of `N` elements of T, in device memory (mgpuMemAlloc on the
/// runtime's stream, filled by a host-to-device copy) or in host memory.
template <typename T> class Buf {
public:
  Buf(bool Device, const std::vector<T> &Init, void *S)
      : Device(Device), S(S), Host(Init) {
    if (Device) {
      D = mgpuMemAlloc(Init.size() * sizeof(T), S, false);
      mgpuMemcpy(D, Host.data(), Init.size() * sizeof(T), S);
    }
  }
  Buf(bool Device, int64_t N, T Fill, void *S)
      : Buf(Device, std::vector<T>(size_t(N), Fill), S) {}
  ~Buf() {
    if (D)
      mgpuMemFree(D, S);
  }
  Buf(const Buf &) = delete;
  Buf &operator=(const Buf &) = delete;
  void *ptr() { return Device ? D : static_cast<void *>(Host.data()); }
  /// The contents, read back to the host.
  std::vector<T> get() {
    if (!Device)
      return Host;
    std::vector<T> H(Host.size());
    mgpuMemcpy(H.data(), D, H.size() * sizeof(T), S);
    mgpuStreamSynchronize(S);
    return H;
  }

private:
  bool Device;
  void *S;
  std::vector<T> Host;
  void *D = nullptr;
};

/// Compares `Got` with `Want` element by element, exactly.
template <typename T>
void expectEqual(const std::vector<T> &Got, const std::vector<T> &Want,
                 const std::string &What) {
  bool Same = Got.size() == Want.size();
  for (size_t I = 0; Same && I < Got.size(); ++I)
    Same = Got[I] == Want[I];
  std::string Shown;
  for (size_t I = 0; !Same && I < Got.size() && I < 16; ++I)
    Shown += (I ? ", " : "") + std::to_string(Got[I]);
  expect(Same, What + ": got [" + Shown + "]");
}

/// The modes, by file: GpuStagingTest.cpp and GpuGemmTest.cpp.
int runMpiBackend();
int runMpiBackendNoDriver();
int runGemm();

} // namespace gputest

#endif // MESHRT_TEST_GPUTESTSUPPORT_H
