// Scenario 1: the DeviceMesh tutorial's 2-D set-up, as compiled code.
//
// PyTorch's recipe builds the groups of a (2, 4) mesh named ("replicate",
// "shard") by hand with dist.new_group -- shard groups {0,1,2,3} and
// {4,5,6,7}, replicate groups {0,4}, {1,5}, {2,6}, {3,7} -- and then shows
// that init_device_mesh((2, 4), ("replicate", "shard")) gives the same.
// Here the mesh is a mesh.mesh, and the groups are observed from the data:
// every device contributes its world rank (passed in by the host, which reads
// it from MPI), and all_gathers over each axis return the members of its
// group in group order. The host (main.cpp) compares them with the groups
// the tutorial's new_group code builds.
//
//   build/bin/mesh-compile -c device_mesh_2d.mlir -o device_mesh_2d.o
//
// See README.md in this directory's parent for building the host and running.

mesh.mesh @mesh_2d(["replicate" = 2, "shard" = 4])

func.func @device_mesh_2d(%world_rank: tensor<1x1xi64>)
    -> (tensor<1x4xi64>, tensor<2x1xi64>, tensor<2x4xi64>, tensor<1x8xi64>,
        index, index, index, index)
    attributes {llvm.emit_c_interface} {
  // The members of this device's "shard" group: a row of the mesh.
  %shard = mesh.all_gather %world_rank on @mesh_2d axes = ["shard"]
      gather_dim = 1 : tensor<1x1xi64> -> tensor<1x4xi64>
  // The members of its "replicate" group: a column of the mesh.
  %replicate = mesh.all_gather %world_rank on @mesh_2d axes = ["replicate"]
      gather_dim = 0 : tensor<1x1xi64> -> tensor<2x1xi64>
  // Rows stacked over "replicate": the whole mesh, as DeviceMesh prints it.
  %mesh = mesh.all_gather %shard on @mesh_2d axes = ["replicate"]
      gather_dim = 0 : tensor<1x4xi64> -> tensor<2x4xi64>
  // Both axes, "shard" major: the order of the axis list is the group order
  // (the transpose of the mesh, read row by row).
  %transposed = mesh.all_gather %world_rank on @mesh_2d
      axes = ["shard", "replicate"] gather_dim = 1
      : tensor<1x1xi64> -> tensor<1x8xi64>
  %r = mesh.axis_index @mesh_2d "replicate" : index
  %s = mesh.axis_index @mesh_2d "shard" : index
  %nr = mesh.axis_size @mesh_2d "replicate" : index
  %ns = mesh.axis_size @mesh_2d "shard" : index
  return %shard, %replicate, %mesh, %transposed, %r, %s, %nr, %ns
      : tensor<1x4xi64>, tensor<2x1xi64>, tensor<2x4xi64>, tensor<1x8xi64>,
        index, index, index, index
}
