// HSDP (the DeviceMesh tutorial's hybrid sharding) on a (2, 4) mesh: FSDP
// within a host ("shard"), DDP across hosts ("replicate"), per device.
//
// The tutorial's ToyModel (Linear 10->10, ReLU, Linear 10->5) has 165
// parameters; flattened and padded to 168 they split into 4 shards of 42.
// One step: gather the parameters over "shard" (returned, for the forward
// and backward passes the caller runs), reduce-scatter the gradients over
// "shard" and average them over "replicate", then update this device's
// shard of the parameters.
//
//   mesh-opt examples/mlir/hsdp_step.mlir --canonicalize

mesh.mesh @hsdp(["replicate" = 2, "shard" = 4])

func.func @hsdp_step(%param_shard: tensor<42xf32>, %grads_full: tensor<168xf32>,
                     %lr: f32) -> (tensor<168xf32>, tensor<42xf32>) {
  // Every device of a "shard" group gets all 168 parameters, in group order.
  %params = mesh.all_gather %param_shard on @hsdp axes = ["shard"] gather_dim = 0
      : tensor<42xf32> -> tensor<168xf32>
  // Each device keeps the sum of its shard's gradients over the group ...
  %g_shard = mesh.reduce_scatter %grads_full on @hsdp axes = ["shard"]
      scatter_dim = 0 reduction = sum : tensor<168xf32> -> tensor<42xf32>
  // ... and the replicas of that shard average it across hosts.
  %g = mesh.all_reduce %g_shard on @hsdp axes = ["replicate"] reduction = avg
      : tensor<42xf32> -> tensor<42xf32>
  %lr_t = tensor.splat %lr : tensor<42xf32>
  %step = arith.mulf %g, %lr_t : tensor<42xf32>
  %new = arith.subf %param_shard, %step : tensor<42xf32>
  return %params, %new : tensor<168xf32>, tensor<42xf32>
}
