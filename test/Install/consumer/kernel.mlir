// Sums a vector over the "shard" axis of a (2, 4) mesh.
mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @sum_over_shard(%x: tensor<4xf32>) -> tensor<4xf32> attributes {llvm.emit_c_interface} {
  %r = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
