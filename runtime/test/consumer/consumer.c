/* Uses the installed C ABI from plain C: the installed header and library
 * are of one version, then a 1-D mesh over the whole world, one all_reduce,
 * checked. Prints "consumer-c OK (meshrt <version>)" on success. Built with
 * CMake (find_package) and with pkg-config (install-and-consume.sh). */
#include <meshrt/meshrt.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  int32_t major = -1, minor = -1, patch = -1;
  const char *version = meshrt_get_version(&major, &minor, &patch);
  if (strcmp(version, MESHRT_VERSION_STRING) != 0 ||
      major != MESHRT_VERSION_MAJOR || minor != MESHRT_VERSION_MINOR ||
      patch != MESHRT_VERSION_PATCH) {
    fprintf(stderr, "the library is meshrt %s, the header %s\n", version,
            MESHRT_VERSION_STRING);
    return 1;
  }
  if (meshrt_check_version(MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR) !=
      MESHRT_SUCCESS) {
    fprintf(stderr, "meshrt_check_version: %s\n", meshrt_last_error());
    return 1;
  }
  if (meshrt_init(MESHRT_BACKEND_MPI) != MESHRT_SUCCESS) {
    fprintf(stderr, "meshrt_init: %s\n", meshrt_last_error());
    return 1;
  }
  const int64_t sizes[] = {-1};
  const char *names[] = {"x"};
  meshrt_mesh_t mesh;
  meshrt_comm_t comm;
  int64_t size = 0;
  float value = 1.0f;
  if (meshrt_mesh_declare("m", 1, sizes, names, &mesh) ||
      meshrt_comm_get_by_names(mesh, 1, names, &comm) ||
      meshrt_comm_size(comm, &size) ||
      meshrt_all_reduce(comm, &value, &value, 1, MESHRT_F32, MESHRT_SUM)) {
    fprintf(stderr, "error: %s\n", meshrt_last_error());
    return 1;
  }
  meshrt_finalize();
  if (value != (float)size) {
    fprintf(stderr, "all_reduce gave %f, want %lld\n", value, (long long)size);
    return 1;
  }
  printf("consumer-c OK (meshrt %s)\n", version);
  return 0;
}
