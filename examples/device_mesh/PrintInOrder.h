//===- PrintInOrder.h - One line per rank, printed by rank 0 ----*- C++ -*-===//
//
// Helper of the device_mesh examples: every rank formats a line, an
// all_gather over the whole mesh brings them to everyone, and rank 0 prints
// them in rank order, so the output reads the same on every run. On the NCCL
// backend buffers must live on the GPU, so there each rank prints its own
// line instead (order not guaranteed).
//
//===----------------------------------------------------------------------===//

#ifndef MESH_EXAMPLES_PRINTINORDER_H
#define MESH_EXAMPLES_PRINTINORDER_H

#include "meshrt/DeviceMesh.h"

#include <cstdio>
#include <string>
#include <vector>

namespace examples {

/// Formats "[a, b, c]".
inline std::string list(const std::vector<int64_t> &V) {
  std::string S = "[";
  for (size_t I = 0; I < V.size(); ++I)
    S += (I ? ", " : "") + std::to_string(V[I]);
  return S + "]";
}

/// Prints `Line` of every rank of `Mesh` (which must span the world), in
/// world-rank order, from rank 0.
inline void printInRankOrder(const meshrt::DeviceMesh &Mesh,
                             const std::string &Line) {
  if (Mesh.device_type() != "cpu") {
    std::printf("%s\n", Line.c_str());
    std::fflush(stdout);
    return;
  }
  constexpr size_t Width = 256;
  std::vector<uint8_t> Mine(Width, 0);
  for (size_t I = 0; I < Line.size() && I + 1 < Width; ++I)
    Mine[I] = uint8_t(Line[I]);
  // The group of all dimensions in mesh order is the world: no new
  // communicator, and group rank == world rank.
  meshrt::Group All = Mesh.get_group(Mesh.mesh_dim_names());
  std::vector<uint8_t> Lines = All.all_gather(Mine);
  if (Mesh.get_rank() != 0)
    return;
  for (size_t R = 0; R < Lines.size() / Width; ++R)
    std::printf("%s\n", reinterpret_cast<const char *>(&Lines[R * Width]));
  std::fflush(stdout);
}

} // namespace examples

#endif // MESH_EXAMPLES_PRINTINORDER_H
