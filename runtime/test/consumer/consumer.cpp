// Uses the installed C++ API: a DeviceMesh over the whole world, one
// all_reduce, checked. Prints "consumer-cxx OK" on success.
#include <meshrt/DeviceMesh.h>

#include <cstdio>

int main() {
  meshrt::DeviceMesh Mesh = meshrt::init_device_mesh("cpu", {-1}, {"x"});
  std::vector<int64_t> V = {1};
  Mesh.get_group("x").all_reduce(V);
  if (V[0] != Mesh.size()) {
    std::fprintf(stderr, "all_reduce gave %lld\n", (long long)V[0]);
    return 1;
  }
  std::printf("consumer-cxx OK (%s)\n", Mesh.to_string().c_str());
  meshrt::finalize();
  return 0;
}
