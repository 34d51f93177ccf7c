// A per-device program (no annotations): mesh-to-llvm-partition.mlir.
mesh.mesh @m(["x" = 4])
func.func @step(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = mesh.all_reduce %a on @m axes = ["x"] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
