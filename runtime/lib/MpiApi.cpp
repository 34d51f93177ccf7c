//===- MpiApi.cpp - libmpi, loaded at run time ----------------------------===//
//
// See MpiApi.h. The library is opened RTLD_GLOBAL: Open MPI's components,
// which it opens itself, resolve libmpi's symbols through the global scope.
//
//===----------------------------------------------------------------------===//

#include "MpiApi.h"

#include "meshrt/Error.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <dlfcn.h>

#ifndef OPEN_MPI
#error                                                                         \
    "meshrt binds Open MPI's predefined handles by name (MpiApi.cpp); another MPI needs its own table here"
#endif

#ifndef MESHRT_MPI_SONAME
#define MESHRT_MPI_SONAME "libmpi.so.40"
#endif

using namespace meshrt;
using namespace meshrt::detail;

namespace {

struct Loaded {
  std::once_flag Once;
  MpiApi Api;
  std::string Error; // Empty once loaded.
  std::atomic<bool> Ready{false};
};

Loaded &loaded() {
  static Loaded *L = new Loaded; // Never destroyed: exit handlers use it.
  return *L;
}

template <typename T>
void bindFunction(void *Lib, const char *Name, T &Slot, std::string &Missing) {
  Slot = reinterpret_cast<T>(dlsym(Lib, Name));
  if (!Slot)
    Missing += std::string(Missing.empty() ? "" : ", ") + Name;
}

template <typename T>
void bindHandle(void *Lib, const char *Name, T &Slot, std::string &Missing) {
  void *P = dlsym(Lib, Name);
  if (!P)
    Missing += std::string(Missing.empty() ? "" : ", ") + Name;
  Slot = reinterpret_cast<T>(P);
}

void load(Loaded &L) {
  std::string Name = mpiLibraryName();
  void *Lib = dlopen(Name.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!Lib) {
    const char *Why = dlerror();
    L.Error = "cannot load the MPI library (" + Name +
              "): " + (Why ? Why : "unknown error") +
              "; install Open MPI (Debian: libopenmpi3), or point "
              "MESHRT_MPI_LIBRARY at libmpi.so, or start the job without "
              "an MPI launcher (torchrun, RANK/WORLD_SIZE) to run on gloo "
              "or NCCL";
    return;
  }
  std::string Missing;
  MpiApi &A = L.Api;
#define MESHRT_MPI_BIND(Fn) bindFunction(Lib, "MPI_" #Fn, A.Fn, Missing);
  MESHRT_MPI_FUNCTIONS(MESHRT_MPI_BIND)
#undef MESHRT_MPI_BIND
  bindHandle(Lib, "ompi_mpi_comm_world", A.CommWorld, Missing);
  bindHandle(Lib, "ompi_mpi_comm_null", A.CommNull, Missing);
  bindHandle(Lib, "ompi_mpi_byte", A.Byte, Missing);
  bindHandle(Lib, "ompi_mpi_float", A.Float, Missing);
  bindHandle(Lib, "ompi_mpi_double", A.Double, Missing);
  bindHandle(Lib, "ompi_mpi_int8_t", A.Int8, Missing);
  bindHandle(Lib, "ompi_mpi_int32_t", A.Int32, Missing);
  bindHandle(Lib, "ompi_mpi_int64_t", A.Int64, Missing);
  bindHandle(Lib, "ompi_mpi_uint8_t", A.Uint8, Missing);
  bindHandle(Lib, "ompi_mpi_uint16_t", A.Uint16, Missing);
  bindHandle(Lib, "ompi_mpi_datatype_null", A.DatatypeNull, Missing);
  bindHandle(Lib, "ompi_mpi_op_sum", A.Sum, Missing);
  bindHandle(Lib, "ompi_mpi_op_prod", A.Prod, Missing);
  bindHandle(Lib, "ompi_mpi_op_min", A.Min, Missing);
  bindHandle(Lib, "ompi_mpi_op_max", A.Max, Missing);
  bindHandle(Lib, "ompi_mpi_op_band", A.Band, Missing);
  bindHandle(Lib, "ompi_mpi_op_bor", A.Bor, Missing);
  bindHandle(Lib, "ompi_mpi_op_bxor", A.Bxor, Missing);
  bindHandle(Lib, "ompi_mpi_op_null", A.OpNull, Missing);
  bindHandle(Lib, "ompi_mpi_info_null", A.InfoNull, Missing);
  bindHandle(Lib, "ompi_mpi_errors_return", A.ErrorsReturn, Missing);
  if (!Missing.empty()) {
    L.Error = "the MPI library " + Name +
              " lacks what meshrt needs (Open MPI 4 or later): " + Missing;
    return;
  }
  L.Ready.store(true, std::memory_order_release);
}

Loaded &loadOnce() {
  Loaded &L = loaded();
  std::call_once(L.Once, [&] { load(L); });
  return L;
}

} // namespace

std::string meshrt::detail::mpiLibraryName() {
  const char *E = std::getenv("MESHRT_MPI_LIBRARY");
  return E && *E ? E : MESHRT_MPI_SONAME;
}

const MpiApi &meshrt::detail::mpiApi() {
  Loaded &L = loaded();
  if (__builtin_expect(L.Ready.load(std::memory_order_acquire), 1))
    return L.Api;
  loadOnce();
  if (!L.Ready.load(std::memory_order_acquire))
    throw Error(MESHRT_ERROR_BACKEND, L.Error);
  return L.Api;
}

bool meshrt::detail::mpiTryLoad(std::string &Why) {
  Loaded &L = loadOnce();
  if (L.Ready.load(std::memory_order_acquire))
    return true;
  Why = L.Error;
  return false;
}

bool meshrt::detail::mpiLoaded() {
  return loaded().Ready.load(std::memory_order_acquire);
}
