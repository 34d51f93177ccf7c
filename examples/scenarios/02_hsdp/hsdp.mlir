// Scenario 2: HSDP, one SGD step of the DeviceMesh tutorial's ToyModel.
//
//   class ToyModel(nn.Module):        # net1 = Linear(10, 10), relu,
//       def forward(self, x):         # net2 = Linear(10, 5)
//           return self.net2(self.relu(self.net1(x)))
//   mesh_2d = init_device_mesh("cuda", (2, 4), mesh_dim_names=("replicate", "shard"))
//   model = FSDP(ToyModel(), device_mesh=mesh_2d,
//                sharding_strategy=ShardingStrategy.HYBRID_SHARD)
//
// Hybrid sharding, per device: the 165 parameters (W1 10x10, b1 10, W2 5x10,
// b2 5, in that order, torch's [out, in] weights) are flattened, padded to
// 168 and split into 4 shards of 42 over "shard"; the 2 "replicate" groups
// hold the same shards. One step:
//   1. all_gather the parameters over "shard" (FSDP's unshard);
//   2. forward and backward on this device's 4 samples (MSE loss, written
//      out by hand below);
//   3. reduce_scatter the flat gradient over "shard" (avg), then all_reduce
//      it over "replicate" (avg): every device now has its shard of the
//      gradient averaged over all 8 devices, i.e. the gradient of the loss
//      on the global batch of 32;
//   4. SGD on the shard: p -= lr * g, and all_gather the new parameters
//      over "shard" so that the host can compare them.
// The loss is averaged over the whole ("replicate", "shard") mesh.
//
//   build/bin/mesh-compile -c hsdp.mlir -o hsdp.o
//
// The host (main.cpp) computes the same step on the global batch on one
// process and compares. See ../README.md.

mesh.mesh @mesh_2d(["replicate" = 2, "shard" = 4])

#x_k = affine_map<(i, o, k) -> (i, k)>
#w_ok = affine_map<(i, o, k) -> (o, k)>
#out_io = affine_map<(i, o, k) -> (i, o)>
#id2 = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>

// out[i, o] = b[o] + sum_k x[i, k] * w[o, k]   (torch's Linear)
func.func private @linear(%x: tensor<4x10xf32>, %w: tensor<?x10xf32>,
                          %b: tensor<?xf32>) -> tensor<4x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %w, %c0 : tensor<?x10xf32>
  %e = tensor.empty(%n) : tensor<4x?xf32>
  %init = linalg.generic {indexing_maps = [#col, #id2],
                          iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<?xf32>) outs(%e : tensor<4x?xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x?xf32>
  %y = linalg.generic {indexing_maps = [#x_k, #w_ok, #out_io],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x10xf32>, tensor<?x10xf32>)
      outs(%init : tensor<4x?xf32>) {
  ^bb0(%a: f32, %b2: f32, %acc: f32):
    %m = arith.mulf %a, %b2 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// dW[o, k] = sum_i dy[i, o] * x[i, k];  db[o] = sum_i dy[i, o]
func.func private @linear_grads(%dy: tensor<4x?xf32>, %x: tensor<4x10xf32>)
    -> (tensor<?x10xf32>, tensor<?xf32>) {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %dy, %c1 : tensor<4x?xf32>
  %ew = tensor.empty(%n) : tensor<?x10xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<?x10xf32>) -> tensor<?x10xf32>
  %dw = linalg.generic {
      indexing_maps = [affine_map<(o, k, i) -> (i, o)>,
                       affine_map<(o, k, i) -> (i, k)>,
                       affine_map<(o, k, i) -> (o, k)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %x : tensor<4x?xf32>, tensor<4x10xf32>)
      outs(%zw : tensor<?x10xf32>) {
  ^bb0(%g: f32, %a: f32, %acc: f32):
    %m = arith.mulf %g, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x10xf32>
  %eb = tensor.empty(%n) : tensor<?xf32>
  %zb = linalg.fill ins(%zero : f32) outs(%eb : tensor<?xf32>) -> tensor<?xf32>
  %db = linalg.generic {
      indexing_maps = [affine_map<(o, i) -> (i, o)>, affine_map<(o, i) -> (o)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%dy : tensor<4x?xf32>) outs(%zb : tensor<?xf32>) {
  ^bb0(%g: f32, %acc: f32):
    %s = arith.addf %acc, %g : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %dw, %db : tensor<?x10xf32>, tensor<?xf32>
}

func.func @hsdp_step(%p_shard: tensor<42xf32>, %x: tensor<4x10xf32>,
                     %target: tensor<4x5xf32>, %lr: f32)
    -> (tensor<42xf32>, tensor<168xf32>, tensor<1xf32>)
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  // 1. Unshard: all 168 parameters, in "shard" group order.
  %p = mesh.all_gather %p_shard on @mesh_2d axes = ["shard"] gather_dim = 0
      : tensor<42xf32> -> tensor<168xf32>
  %w1_flat = tensor.extract_slice %p[0] [100] [1] : tensor<168xf32> to tensor<100xf32>
  %w1 = tensor.expand_shape %w1_flat [[0, 1]] output_shape [10, 10]
      : tensor<100xf32> into tensor<10x10xf32>
  %b1 = tensor.extract_slice %p[100] [10] [1] : tensor<168xf32> to tensor<10xf32>
  %w2_flat = tensor.extract_slice %p[110] [50] [1] : tensor<168xf32> to tensor<50xf32>
  %w2 = tensor.expand_shape %w2_flat [[0, 1]] output_shape [5, 10]
      : tensor<50xf32> into tensor<5x10xf32>
  %b2 = tensor.extract_slice %p[160] [5] [1] : tensor<168xf32> to tensor<5xf32>

  // 2. Forward: h = x W1^T + b1, a = relu(h), y = a W2^T + b2.
  %w1d = tensor.cast %w1 : tensor<10x10xf32> to tensor<?x10xf32>
  %b1d = tensor.cast %b1 : tensor<10xf32> to tensor<?xf32>
  %w2d = tensor.cast %w2 : tensor<5x10xf32> to tensor<?x10xf32>
  %b2d = tensor.cast %b2 : tensor<5xf32> to tensor<?xf32>
  %h_d = func.call @linear(%x, %w1d, %b1d)
      : (tensor<4x10xf32>, tensor<?x10xf32>, tensor<?xf32>) -> tensor<4x?xf32>
  %h = tensor.cast %h_d : tensor<4x?xf32> to tensor<4x10xf32>
  %e10 = tensor.empty() : tensor<4x10xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x10xf32>) outs(%e10 : tensor<4x10xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x10xf32>
  %y_d = func.call @linear(%a, %w2d, %b2d)
      : (tensor<4x10xf32>, tensor<?x10xf32>, tensor<?xf32>) -> tensor<4x?xf32>
  %y = tensor.cast %y_d : tensor<4x?xf32> to tensor<4x5xf32>

  // Loss = mean over this device's 4x5 outputs of (y - target)^2, and
  // dL/dy = 2 (y - target) / 20.
  %scale = arith.constant 0.1 : f32
  %inv20 = arith.constant 0.05 : f32
  %e5 = tensor.empty() : tensor<4x5xf32>
  %dy = linalg.generic {indexing_maps = [#id2, #id2, #id2],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %target : tensor<4x5xf32>, tensor<4x5xf32>)
      outs(%e5 : tensor<4x5xf32>) {
  ^bb0(%v: f32, %t: f32, %o: f32):
    %d = arith.subf %v, %t : f32
    %g = arith.mulf %d, %scale : f32
    linalg.yield %g : f32
  } -> tensor<4x5xf32>
  %l0 = tensor.empty() : tensor<1xf32>
  %lz = linalg.fill ins(%zero : f32) outs(%l0 : tensor<1xf32>) -> tensor<1xf32>
  %sq = linalg.generic {
      indexing_maps = [affine_map<(i, o) -> (i, o)>, affine_map<(i, o) -> (i, o)>,
                       affine_map<(i, o) -> (0)>],
      iterator_types = ["reduction", "reduction"]}
      ins(%y, %target : tensor<4x5xf32>, tensor<4x5xf32>)
      outs(%lz : tensor<1xf32>) {
  ^bb0(%v: f32, %t: f32, %acc: f32):
    %d = arith.subf %v, %t : f32
    %d2 = arith.mulf %d, %d : f32
    %w = arith.mulf %d2, %inv20 : f32
    %s = arith.addf %acc, %w : f32
    linalg.yield %s : f32
  } -> tensor<1xf32>

  // Backward.
  %dy_d = tensor.cast %dy : tensor<4x5xf32> to tensor<4x?xf32>
  %dw2, %db2 = func.call @linear_grads(%dy_d, %a)
      : (tensor<4x?xf32>, tensor<4x10xf32>) -> (tensor<?x10xf32>, tensor<?xf32>)
  // da[i, k] = sum_o dy[i, o] W2[o, k], masked by relu'(h).
  %za = linalg.fill ins(%zero : f32) outs(%e10 : tensor<4x10xf32>) -> tensor<4x10xf32>
  %da = linalg.generic {
      indexing_maps = [affine_map<(i, k, o) -> (i, o)>,
                       affine_map<(i, k, o) -> (o, k)>,
                       affine_map<(i, k, o) -> (i, k)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %w2 : tensor<4x5xf32>, tensor<5x10xf32>)
      outs(%za : tensor<4x10xf32>) {
  ^bb0(%g: f32, %w: f32, %acc: f32):
    %m = arith.mulf %g, %w : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x10xf32>
  %dh = linalg.generic {indexing_maps = [#id2, #id2, #id2],
                        iterator_types = ["parallel", "parallel"]}
      ins(%da, %h : tensor<4x10xf32>, tensor<4x10xf32>)
      outs(%e10 : tensor<4x10xf32>) {
  ^bb0(%g: f32, %v: f32, %o: f32):
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %pos, %g, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x10xf32>
  %dh_d = tensor.cast %dh : tensor<4x10xf32> to tensor<4x?xf32>
  %dw1, %db1 = func.call @linear_grads(%dh_d, %x)
      : (tensor<4x?xf32>, tensor<4x10xf32>) -> (tensor<?x10xf32>, tensor<?xf32>)

  // The flat gradient, laid out like the parameters (padding stays 0).
  %ge = tensor.empty() : tensor<168xf32>
  %g0 = linalg.fill ins(%zero : f32) outs(%ge : tensor<168xf32>) -> tensor<168xf32>
  %dw1s = tensor.cast %dw1 : tensor<?x10xf32> to tensor<10x10xf32>
  %dw1f = tensor.collapse_shape %dw1s [[0, 1]] : tensor<10x10xf32> into tensor<100xf32>
  %g1 = tensor.insert_slice %dw1f into %g0[0] [100] [1] : tensor<100xf32> into tensor<168xf32>
  %db1s = tensor.cast %db1 : tensor<?xf32> to tensor<10xf32>
  %g2 = tensor.insert_slice %db1s into %g1[100] [10] [1] : tensor<10xf32> into tensor<168xf32>
  %dw2s = tensor.cast %dw2 : tensor<?x10xf32> to tensor<5x10xf32>
  %dw2f = tensor.collapse_shape %dw2s [[0, 1]] : tensor<5x10xf32> into tensor<50xf32>
  %g3 = tensor.insert_slice %dw2f into %g2[110] [50] [1] : tensor<50xf32> into tensor<168xf32>
  %db2s = tensor.cast %db2 : tensor<?xf32> to tensor<5xf32>
  %grad = tensor.insert_slice %db2s into %g3[160] [5] [1] : tensor<5xf32> into tensor<168xf32>

  // 3. FSDP: each device keeps its shard of the gradient, averaged over the
  // "shard" group; DDP: the replicas average it over "replicate".
  %g_shard = mesh.reduce_scatter %grad on @mesh_2d axes = ["shard"]
      scatter_dim = 0 reduction = avg : tensor<168xf32> -> tensor<42xf32>
  %g_avg = mesh.all_reduce %g_shard on @mesh_2d axes = ["replicate"]
      reduction = avg : tensor<42xf32> -> tensor<42xf32>

  // 4. SGD on this device's shard, then the full new parameters. (Written
  // as a linalg.generic into a new tensor rather than as `arith.subf` on
  // tensors: convert-elementwise-to-linalg would make %p_shard the
  // destination, and since one-shot-bufferize treats function arguments as
  // writable, the step would overwrite the caller's buffer in place.)
  %e42 = tensor.empty() : tensor<42xf32>
  %new_shard = linalg.generic {
      indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> (j)>,
                       affine_map<(j) -> (j)>],
      iterator_types = ["parallel"]}
      ins(%p_shard, %g_avg : tensor<42xf32>, tensor<42xf32>)
      outs(%e42 : tensor<42xf32>) {
  ^bb0(%w: f32, %g: f32, %o: f32):
    %step = arith.mulf %g, %lr : f32
    %nw = arith.subf %w, %step : f32
    linalg.yield %nw : f32
  } -> tensor<42xf32>
  %new_full = mesh.all_gather %new_shard on @mesh_2d axes = ["shard"]
      gather_dim = 0 : tensor<42xf32> -> tensor<168xf32>
  %loss = mesh.all_reduce %sq on @mesh_2d axes = ["replicate", "shard"]
      reduction = avg : tensor<1xf32> -> tensor<1xf32>
  return %new_shard, %new_full, %loss
      : tensor<42xf32>, tensor<168xf32>, tensor<1xf32>
}

// This device's shard of the initial parameters (all_slice: no
// communication, block i of 4 for the device with "shard" index i).
func.func @shard_parameters(%full: tensor<168xf32>) -> tensor<42xf32>
    attributes {llvm.emit_c_interface} {
  %s = mesh.all_slice %full on @mesh_2d axes = ["shard"] slice_dim = 0
      : tensor<168xf32> -> tensor<42xf32>
  return %s : tensor<42xf32>
}
