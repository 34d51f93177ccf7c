// Scenario 4: DeepSpeed-Ulysses sequence parallelism.
//
// DeepSpeed's (dp, sp) mesh, named ("data_parallel", "sequence_parallel"),
// with the data-parallel size left to run time (`?`): it is the number of
// processes divided by 4 (2 on 8 ranks). Each data-parallel replica works on
// its own sequence of 16 tokens, 4 heads of dimension 8; inside a replica
// the sequence is split over the 4 "sequence_parallel" devices, 4 tokens
// each. Per device:
//   1. q, k, v arrive split on the sequence: [16/4 tokens, 4 heads, 8];
//   2. an all_to_all over "sequence_parallel" trades that for all 16 tokens
//      of 4/4 = 1 head: [16, 1, 8] (split heads, concatenate the sequence);
//   3. ordinary softmax attention, per head, over the whole sequence;
//   4. the inverse all_to_all restores the sequence split: [4, 4, 8];
//   5. an output projection y = o Wo (Wo replicated, [heads, dim, 8]) with
//      loss 0.5 * sum(y^2); the gradient of Wo on this device's tokens is a
//      partial sum over the sequence: all_reduce sum over
//      "sequence_parallel" completes it for the replica, all_reduce avg over
//      "data_parallel" (a group whose size is only known at run time)
//      averages the replicas, as DeepSpeed does for the gradients of
//      non-attention parameters. The loss goes the same way.
//
//   build/bin/mesh-compile -c ulysses.mlir -o ulysses.o
//
// The host (main.cpp) computes the unsharded attention and gradient of every
// replica on one process and compares. See ../README.md.

mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])

func.func @ulysses(%q: tensor<4x4x8xf32>, %k: tensor<4x4x8xf32>,
                   %v: tensor<4x4x8xf32>, %wo: tensor<4x8x8xf32>)
    -> (tensor<4x4x8xf32>, tensor<4x8x8xf32>, tensor<1xf32>, index, index, index)
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339059327373 : f32 // 1/sqrt(8)

  // [seq/4, heads, dim] -> [seq, heads/4, dim]
  %qh = mesh.all_to_all %q on @dpsp axes = ["sequence_parallel"]
      split_dim = 1 concat_dim = 0 : tensor<4x4x8xf32> -> tensor<16x1x8xf32>
  %kh = mesh.all_to_all %k on @dpsp axes = ["sequence_parallel"]
      split_dim = 1 concat_dim = 0 : tensor<4x4x8xf32> -> tensor<16x1x8xf32>
  %vh = mesh.all_to_all %v on @dpsp axes = ["sequence_parallel"]
      split_dim = 1 concat_dim = 0 : tensor<4x4x8xf32> -> tensor<16x1x8xf32>

  // scores[h, i, j] = q[i, h, :] . k[j, h, :] / sqrt(8)
  %es = tensor.empty() : tensor<1x16x16xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x16x16xf32>) -> tensor<1x16x16xf32>
  %scores = linalg.generic {
      indexing_maps = [affine_map<(h, i, j, d) -> (i, h, d)>,
                       affine_map<(h, i, j, d) -> (j, h, d)>,
                       affine_map<(h, i, j, d) -> (h, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%qh, %kh : tensor<16x1x8xf32>, tensor<16x1x8xf32>)
      outs(%zs : tensor<1x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %ms = arith.mulf %m, %scale : f32
    %s = arith.addf %acc, %ms : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16xf32>

  // Softmax over j, with the row maximum subtracted.
  %er = tensor.empty() : tensor<1x16xf32>
  %rmin = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x16xf32>) -> tensor<1x16xf32>
  %rmax = linalg.generic {
      indexing_maps = [affine_map<(h, i, j) -> (h, i, j)>,
                       affine_map<(h, i, j) -> (h, i)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%scores : tensor<1x16x16xf32>) outs(%rmin : tensor<1x16xf32>) {
  ^bb0(%s: f32, %acc: f32):
    %m = arith.maximumf %acc, %s : f32
    linalg.yield %m : f32
  } -> tensor<1x16xf32>
  %ex = linalg.generic {
      indexing_maps = [affine_map<(h, i, j) -> (h, i, j)>,
                       affine_map<(h, i, j) -> (h, i)>,
                       affine_map<(h, i, j) -> (h, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scores, %rmax : tensor<1x16x16xf32>, tensor<1x16xf32>)
      outs(%es : tensor<1x16x16xf32>) {
  ^bb0(%s: f32, %m: f32, %o: f32):
    %d = arith.subf %s, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<1x16x16xf32>
  %rzero = linalg.fill ins(%zero : f32) outs(%er : tensor<1x16xf32>) -> tensor<1x16xf32>
  %rsum = linalg.generic {
      indexing_maps = [affine_map<(h, i, j) -> (h, i, j)>,
                       affine_map<(h, i, j) -> (h, i)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x16x16xf32>) outs(%rzero : tensor<1x16xf32>) {
  ^bb0(%e: f32, %acc: f32):
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  } -> tensor<1x16xf32>
  %probs = linalg.generic {
      indexing_maps = [affine_map<(h, i, j) -> (h, i, j)>,
                       affine_map<(h, i, j) -> (h, i)>,
                       affine_map<(h, i, j) -> (h, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %rsum : tensor<1x16x16xf32>, tensor<1x16xf32>)
      outs(%es : tensor<1x16x16xf32>) {
  ^bb0(%e: f32, %s: f32, %o: f32):
    %p = arith.divf %e, %s : f32
    linalg.yield %p : f32
  } -> tensor<1x16x16xf32>

  // o[i, h, :] = sum_j probs[h, i, j] v[j, h, :]
  %eo = tensor.empty() : tensor<16x1x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<16x1x8xf32>) -> tensor<16x1x8xf32>
  %oh = linalg.generic {
      indexing_maps = [affine_map<(i, h, d, j) -> (h, i, j)>,
                       affine_map<(i, h, d, j) -> (j, h, d)>,
                       affine_map<(i, h, d, j) -> (i, h, d)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %vh : tensor<1x16x16xf32>, tensor<16x1x8xf32>)
      outs(%zo : tensor<16x1x8xf32>) {
  ^bb0(%p: f32, %x: f32, %acc: f32):
    %m = arith.mulf %p, %x : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1x8xf32>

  // [seq, heads/4, dim] -> [seq/4, heads, dim]
  %o = mesh.all_to_all %oh on @dpsp axes = ["sequence_parallel"]
      split_dim = 0 concat_dim = 1 : tensor<16x1x8xf32> -> tensor<4x4x8xf32>

  // y[s, e] = sum_{h, d} o[s, h, d] Wo[h, d, e]; loss = 0.5 sum y^2.
  %ey = tensor.empty() : tensor<4x8xf32>
  %zy = linalg.fill ins(%zero : f32) outs(%ey : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(s, e, h, d) -> (s, h, d)>,
                       affine_map<(s, e, h, d) -> (h, d, e)>,
                       affine_map<(s, e, h, d) -> (s, e)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%o, %wo : tensor<4x4x8xf32>, tensor<4x8x8xf32>)
      outs(%zy : tensor<4x8xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %m = arith.mulf %a, %w : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %half = arith.constant 0.5 : f32
  %el = tensor.empty() : tensor<1xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<1xf32>) -> tensor<1xf32>
  %loss_part = linalg.generic {
      indexing_maps = [affine_map<(s, e) -> (s, e)>, affine_map<(s, e) -> (0)>],
      iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<4x8xf32>) outs(%zl : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %h = arith.mulf %sq, %half : f32
    %s = arith.addf %acc, %h : f32
    linalg.yield %s : f32
  } -> tensor<1xf32>
  // dL/dWo[h, d, e] = sum_s o[s, h, d] y[s, e] (dL/dy = y), over this
  // device's 4 tokens only.
  %eg = tensor.empty() : tensor<4x8x8xf32>
  %zg = linalg.fill ins(%zero : f32) outs(%eg : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %g_part = linalg.generic {
      indexing_maps = [affine_map<(h, d, e, s) -> (s, h, d)>,
                       affine_map<(h, d, e, s) -> (s, e)>,
                       affine_map<(h, d, e, s) -> (h, d, e)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%o, %y : tensor<4x4x8xf32>, tensor<4x8xf32>)
      outs(%zg : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8x8xf32>

  // The whole sequence of the replica, then the mean over replicas.
  %g_seq = mesh.all_reduce %g_part on @dpsp axes = ["sequence_parallel"]
      reduction = sum : tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  %grad = mesh.all_reduce %g_seq on @dpsp axes = ["data_parallel"]
      reduction = avg : tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  %l_seq = mesh.all_reduce %loss_part on @dpsp axes = ["sequence_parallel"]
      reduction = sum : tensor<1xf32> -> tensor<1xf32>
  %loss = mesh.all_reduce %l_seq on @dpsp axes = ["data_parallel"]
      reduction = avg : tensor<1xf32> -> tensor<1xf32>

  %dp = mesh.axis_index @dpsp "data_parallel" : index
  %dp_size = mesh.axis_size @dpsp "data_parallel" : index
  %sp = mesh.axis_index @dpsp "sequence_parallel" : index
  return %o, %grad, %loss, %dp, %dp_size, %sp
      : tensor<4x4x8xf32>, tensor<4x8x8xf32>, tensor<1xf32>, index, index, index
}
