//===- DynamicLibrary.h - libraries loaded at run time ----------*- C++ -*-===//
//
// The optional libraries the runtime uses (libcudart and libnccl, a BLAS) are
// opened with dlopen when first needed, so that libmeshrt loads where they
// are not installed. These are the two steps every such loader takes.
//
//===----------------------------------------------------------------------===//

#ifndef MESHRT_LIB_DYNAMICLIBRARY_H
#define MESHRT_LIB_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace meshrt {
namespace detail {

/// Opens the library the environment variable `EnvVar` names when it is set
/// and not empty (only that one), else the first of `Names` that opens.
/// Each failure is appended to `Tried` ("name: dlerror; ").
inline void *openFirst(const char *EnvVar,
                       std::initializer_list<const char *> Names,
                       std::string &Tried) {
  if (const char *E = std::getenv(EnvVar); E && *E) {
    if (void *H = dlopen(E, RTLD_NOW | RTLD_LOCAL))
      return H;
    Tried += std::string(EnvVar) + "=" + E + ": " + dlerror() + "; ";
    return nullptr;
  }
  for (const char *N : Names) {
    if (!N || !*N)
      continue;
    if (void *H = dlopen(N, RTLD_NOW | RTLD_LOCAL))
      return H;
    Tried += std::string(N) + ": " + dlerror() + "; ";
  }
  return nullptr;
}

/// Binds `Out` to the symbol `Name` of `Lib`; appends "missing symbol Name; "
/// to `Err` when there is none.
template <typename Fn>
bool bind(void *Lib, const char *Name, Fn &Out, std::string &Err) {
  Out = reinterpret_cast<Fn>(dlsym(Lib, Name));
  if (!Out)
    Err += std::string("missing symbol ") + Name + "; ";
  return Out != nullptr;
}

} // namespace detail
} // namespace meshrt

#endif // MESHRT_LIB_DYNAMICLIBRARY_H
