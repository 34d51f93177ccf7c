// DeepSpeed-Ulysses sequence parallelism on DeepSpeed's (dp, sp) mesh, named
// ("data_parallel", "sequence_parallel"). The data-parallel size is left to
// run time (`?`): it is the number of processes divided by 4.
//
// Inputs arrive split on the sequence: each device holds 8 of the 32
// positions for all 8 heads. An all_to_all over "sequence_parallel" trades
// that for all 32 positions of 2 heads, attention runs per head, and a second
// all_to_all restores the sequence split. Gradients are then averaged over
// "data_parallel", whose group size is only known when the program starts.
//
//   mesh-opt examples/mlir/ulysses.mlir --canonicalize

mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])

func.func @ulysses(%q: tensor<8x8x16xf32>, %grad: tensor<1024xf32>)
    -> (tensor<8x8x16xf32>, tensor<1024xf32>, index) {
  // [seq/4, heads, dim] -> [seq, heads/4, dim]
  %by_head = mesh.all_to_all %q on @dpsp axes = ["sequence_parallel"]
      split_dim = 1 concat_dim = 0 : tensor<8x8x16xf32> -> tensor<32x2x16xf32>
  %scores = math.tanh %by_head : tensor<32x2x16xf32>
  // [seq, heads/4, dim] -> [seq/4, heads, dim]
  %by_seq = mesh.all_to_all %scores on @dpsp axes = ["sequence_parallel"]
      split_dim = 0 concat_dim = 1 : tensor<32x2x16xf32> -> tensor<8x8x16xf32>
  %g = mesh.all_reduce %grad on @dpsp axes = ["data_parallel"] reduction = avg
      : tensor<1024xf32> -> tensor<1024xf32>
  // The data-parallel world size DeepSpeed's ZeRO uses: dp, not dp * sp.
  %dp = mesh.axis_size @dpsp "data_parallel" : index
  return %by_seq, %g, %dp : tensor<8x8x16xf32>, tensor<1024xf32>, index
}
