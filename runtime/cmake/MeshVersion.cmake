# The version of mesh, read from the one place it is written: the
# MESHRT_VERSION_MAJOR/MINOR/PATCH lines of meshrt/meshrt.h. Included before
# project() by the top-level CMakeLists.txt and by runtime/CMakeLists.txt (so
# that the runtime built on its own has it too); sets MESH_VERSION
# ("MAJOR.MINOR.PATCH"), and CMake configures again when the header changes.
set(_mesh_version_header ${CMAKE_CURRENT_LIST_DIR}/../include/meshrt/meshrt.h)
set(MESH_VERSION)
foreach(_part MAJOR MINOR PATCH)
  file(STRINGS ${_mesh_version_header} _line
    REGEX "^#define MESHRT_VERSION_${_part} [0-9]+$")
  if(NOT _line MATCHES "^#define MESHRT_VERSION_${_part} ([0-9]+)$")
    message(FATAL_ERROR "cannot read MESHRT_VERSION_${_part} from ${_mesh_version_header}")
  endif()
  list(APPEND MESH_VERSION ${CMAKE_MATCH_1})
endforeach()
list(JOIN MESH_VERSION "." MESH_VERSION)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_mesh_version_header})
unset(_mesh_version_header)
unset(_part)
unset(_line)
