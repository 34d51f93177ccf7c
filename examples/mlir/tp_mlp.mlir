// A Megatron-style tensor-parallel MLP on a (2, 4) mesh ("dp", "tp"):
// the first linear is split by columns, the second by rows, so each device
// computes a partial output and one all_reduce over "tp" completes it. This
// is the per-device program: x is replicated, w1 holds 16 of the 64 columns
// of the global 16x64 weight, w2 16 of its 64 rows.
//
//   mesh-opt examples/mlir/tp_mlp.mlir --canonicalize

mesh.mesh @mesh2d(["dp" = 2, "tp" = 4])

func.func @mlp(%x: tensor<4x16xf32>, %w1: tensor<16x16xf32>,
               %w2: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  // Column-parallel: this device's 16 of the 64 hidden units.
  %h = linalg.matmul ins(%x, %w1 : tensor<4x16xf32>, tensor<16x16xf32>)
                     outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  %relu = arith.maximumf %h, %acc : tensor<4x16xf32>
  // Row-parallel: a partial sum of the output, pending over "tp" (in a
  // global program, #mesh.sharding<@mesh2d, [[], []], partial = sum["tp"]>).
  %y_partial = linalg.matmul
      ins(%relu, %w2 : tensor<4x16xf32>, tensor<16x16xf32>)
      outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = mesh.all_reduce %y_partial on @mesh2d axes = ["tp"] reduction = sum
      : tensor<4x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
