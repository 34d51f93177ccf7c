// Scenario 5: a Megatron-style tensor-parallel MLP, y = relu(x W1 + b1) W2 + b2.
//
// Mesh (2, 4) named ("dp", "tp"). The first linear is column-parallel: each
// tp rank holds 8 of the 32 columns of W1 (and of b1) and computes its 8
// hidden units with no communication; the second is row-parallel: each holds
// the matching 8 rows of W2, so its product is a partial sum of y, and ONE
// all_reduce over "tp" completes it (the bias b2 is added once, after). The
// batch of 8 tokens is split over "dp": 4 rows per replica.
//
// @shard_parameters turns the full (host-initialised) parameters and batch
// into this device's pieces with all_slice, which is local: block i of the
// input where i is the device's rank in the group (no communication).
//
//   build/bin/mesh-compile -c tp_mlp.mlir -o tp_mlp.o
//
// The host (main.cpp) runs the unsharded MLP on one process and compares.
// See ../README.md.

mesh.mesh @mesh_2d(["dp" = 2, "tp" = 4])

func.func @shard_parameters(%x: tensor<8x8xf32>, %w1: tensor<8x32xf32>,
                            %b1: tensor<32xf32>, %w2: tensor<32x8xf32>)
    -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, index, index)
    attributes {llvm.emit_c_interface} {
  %x_dp = mesh.all_slice %x on @mesh_2d axes = ["dp"] slice_dim = 0
      : tensor<8x8xf32> -> tensor<4x8xf32>
  // Column-parallel W1 (and b1), row-parallel W2.
  %w1_tp = mesh.all_slice %w1 on @mesh_2d axes = ["tp"] slice_dim = 1
      : tensor<8x32xf32> -> tensor<8x8xf32>
  %b1_tp = mesh.all_slice %b1 on @mesh_2d axes = ["tp"] slice_dim = 0
      : tensor<32xf32> -> tensor<8xf32>
  %w2_tp = mesh.all_slice %w2 on @mesh_2d axes = ["tp"] slice_dim = 0
      : tensor<32x8xf32> -> tensor<8x8xf32>
  %dp = mesh.axis_index @mesh_2d "dp" : index
  %tp = mesh.axis_index @mesh_2d "tp" : index
  return %x_dp, %w1_tp, %b1_tp, %w2_tp, %dp, %tp
      : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, index, index
}

func.func @tp_mlp(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %b1: tensor<8xf32>,
                  %w2: tensor<8x8xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32>
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // Column-parallel linear: this device's 8 of the 32 hidden units.
  %xw1 = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x8xf32>)
                       outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.generic {
      indexing_maps = [affine_map<(t, f) -> (t, f)>, affine_map<(t, f) -> (f)>,
                       affine_map<(t, f) -> (t, f)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%xw1, %b1 : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    %relu = arith.maximumf %s, %zero : f32
    linalg.yield %relu : f32
  } -> tensor<4x8xf32>
  // Row-parallel linear: a partial sum of y over the hidden units, i.e.
  // #mesh.sharding<@mesh_2d, [[], []], partial = sum["tp"]>. (The annotation
  // is left off the op: one-shot-bufferize keeps it on the memref form, which
  // has no results, and the verifier then rejects it.)
  %y_partial = linalg.matmul ins(%h, %w2 : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  // The one collective of the layer.
  %y_sum = mesh.all_reduce %y_partial on @mesh_2d axes = ["tp"] reduction = sum
      : tensor<4x8xf32> -> tensor<4x8xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(t, o) -> (t, o)>, affine_map<(t, o) -> (o)>,
                       affine_map<(t, o) -> (t, o)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%y_sum, %b2 : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
