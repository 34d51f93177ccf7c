//===- EmulatedDriver.h - Test hooks of the emulated driver -----*- C++ -*-===//
//
// Test hooks for programs compiled with --target=cuda whose runs are checked
// against the emulated CUDA driver (FakeCuda.cpp): they mark their own steps
// in its trace (MESHRT_EMU_TRACE), so that a checker can tell the
// synchronisations of a compiled function from the program's own, and ask
// how many kernels were launched, since a result that depends on a kernel is
// not computed there. The hooks are found with dlsym in the libcuda.so.1
// that libmeshrt loaded; on a real driver they are absent and these
// functions do nothing (launches() is -1). Call them after mesh_module_init,
// which loads the driver.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_TEST_EMULATED_EMULATEDDRIVER_H
#define MESHRT_TEST_EMULATED_EMULATEDDRIVER_H

#include <dlfcn.h>

namespace emulated {

/// The hook `Name` of the loaded emulated driver, or null.
inline void *hook(const char *Name) {
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!Lib)
    return nullptr;
  void *F = dlsym(Lib, Name);
  dlclose(Lib); // Only drops the reference NOLOAD took.
  return F;
}

/// Kernel launches so far under the emulated driver; -1 on a real one.
inline long launches() {
  using Fn = long (*)();
  static const Fn F = reinterpret_cast<Fn>(hook("fakeCudaLaunches"));
  return F ? F() : -1;
}

/// Appends "mark <Text>" to the emulated driver's trace.
inline void mark(const char *Text) {
  using Fn = void (*)(const char *, ...);
  static const Fn F = reinterpret_cast<Fn>(hook("fakeCudaTrace"));
  if (F)
    F("mark %s", Text);
}

} // namespace emulated

#endif // MESHRT_TEST_EMULATED_EMULATEDDRIVER_H
