/*===- VersionCheck.c - A program built for another libmeshrt -------------===*\
|*                                                                            *|
|* What a program compiled for another major.minor of libmeshrt meets at      *|
|* start-up: the generated mesh_module_init calls meshrt_check_version with   *|
|* the compiler's major.minor before meshrt_init. Plain C, as compiled code   *|
|* calls the C ABI.                                                           *|
|*                                                                            *|
|*   meshrt-version-check return  MESHRT_ERRORS_RETURN: the version, and the  *|
|*                                status and message of a check for the next  *|
|*                                minor; prints "version-check OK"            *|
|*   meshrt-version-check abort   the default policy, as compiled code runs:  *|
|*                                the check for the next minor ends the job   *|
|*                                (expect-failure.sh checks the message)      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include <meshrt/meshrt.h>

#include <stdio.h>
#include <string.h>

static int fail(const char *what, const char *detail) {
  fprintf(stderr, "FAIL: %s: %s\n", what, detail);
  return 1;
}

static int checkReturned(void) {
  meshrt_set_error_policy(MESHRT_ERRORS_RETURN);
  int32_t major = -1, minor = -1, patch = -1;
  const char *version = meshrt_get_version(&major, &minor, &patch);
  if (strcmp(version, MESHRT_VERSION_STRING) != 0 ||
      major != MESHRT_VERSION_MAJOR || minor != MESHRT_VERSION_MINOR ||
      patch != MESHRT_VERSION_PATCH)
    return fail("meshrt_get_version", version);
  if (meshrt_check_version(MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR) !=
      MESHRT_SUCCESS)
    return fail("meshrt_check_version of this version", meshrt_last_error());

  meshrt_status status =
      meshrt_check_version(MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR + 1);
  if (status != MESHRT_ERROR_UNSUPPORTED)
    return fail("meshrt_check_version of the next minor",
                meshrt_status_name(status));
  char want[256];
  snprintf(want, sizeof want,
           "meshrt_check_version: this program was compiled by mesh %d.%d for "
           "libmeshrt %d.%d, but the libmeshrt loaded is %s (",
           MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR + 1, MESHRT_VERSION_MAJOR,
           MESHRT_VERSION_MINOR + 1, MESHRT_VERSION_STRING);
  const char *message = meshrt_last_error();
  if (strncmp(message, want, strlen(want)) != 0 ||
      !strstr(message, "); rebuild the program or use the matching library"))
    return fail("the message", message);
  if (meshrt_is_initialized())
    return fail("meshrt_check_version", "initialized the runtime");
  printf("version-check OK (%s)\n", message);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "return"))
    return checkReturned();
  if (argc == 2 && !strcmp(argv[1], "abort")) {
    meshrt_check_version(MESHRT_VERSION_MAJOR, MESHRT_VERSION_MINOR + 1);
    fprintf(stderr, "meshrt_check_version of the next minor returned\n");
    return 0;
  }
  fprintf(stderr, "usage: %s return|abort\n", argv[0]);
  return 2;
}
