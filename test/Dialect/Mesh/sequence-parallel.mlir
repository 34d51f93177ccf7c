// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition --mesh-optimize-collectives -split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition -split-input-file | FileCheck %s --check-prefix=PARTITIONED

// Megatron-style sequence parallelism (issue 11), as torch-mlir spells it:
// activations split on the sequence over "tp" outside the MLP; a constraint
// gathers them before W1 (columns over "tp"); GELU; W2 (rows over "tp")
// leaves a partial sum; a bias add (a broadcast linalg.generic); a residual
// add; the result split on the sequence again. The optimum is one
// all_gather before and one reduce_scatter after. W2's pending sum decides
// nothing in the forward sweep (it can be reduced into any layout), so the
// bias add takes the residual add's layout and partitioning alone reduces
// with a reduce_scatter. Where a reshape stands between (the expand_shape
// back to [B, S, H]), partitioning reduces W2's partial sum for the bias
// add whole and slices it for the residual add: an all_reduce and an
// all_slice with the bias add between them; the optimiser moves the slice
// up through the bias add and the expand_shape and makes the pair one
// reduce_scatter.

mesh.mesh @m(["dp" = 2, "tp" = 4])

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// x: [S, H].
// CHECK-LABEL: func.func @sp_mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16x16xf32>, %[[B2:.*]]: tensor<16xf32>)
// CHECK-COUNT-1: mesh.all_gather %[[X]] on @m axes = ["tp"] gather_dim = 0 : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: linalg.matmul
// CHECK: %[[Y:.*]] = linalg.matmul {{.*}} -> tensor<32x16xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: %[[S:.*]] = mesh.reduce_scatter %[[Y]] on @m axes = ["tp"] scatter_dim = 0 reduction = sum : tensor<32x16xf32> -> tensor<8x16xf32>
// CHECK: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[B2]] : tensor<8x16xf32>, tensor<16xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[YB]], %[[X]] : tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK-NOT: mesh.
// CHECK: return %[[R]] : tensor<8x16xf32>
// PARTITIONED-LABEL: func.func @sp_mlp
// PARTITIONED: mesh.all_gather
// PARTITIONED-NOT: mesh.all_reduce
// PARTITIONED: mesh.reduce_scatter {{.*}} : tensor<32x16xf32> -> tensor<8x16xf32>
// PARTITIONED-NOT: mesh.all_slice
// PARTITIONED: linalg.generic
func.func @sp_mlp(%x: tensor<32x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                  %w1: tensor<16x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>},
                  %b1: tensor<64xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"]]>},
                  %w2: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                  %b2: tensor<16xf32>)
    -> (tensor<32x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>}) {
  %zero = arith.constant 0.0 : f32
  %xg = mesh.shard %x : tensor<32x16xf32> to #mesh.sharding<@m, [[], []]>
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %h = linalg.matmul ins(%xg, %w1 : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %hb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<32x64xf32>, tensor<64xf32>) outs(%e1 : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  // GELU, tanh form: 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3))).
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hb : tensor<32x64xf32>) outs(%e1 : tensor<32x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c05 = arith.constant 0.5 : f32
    %c1 = arith.constant 1.0 : f32
    %ck = arith.constant 0.7978845608 : f32
    %cc = arith.constant 0.044715 : f32
    %a2 = arith.mulf %a, %a : f32
    %a3 = arith.mulf %a2, %a : f32
    %t0 = arith.mulf %a3, %cc : f32
    %t1 = arith.addf %a, %t0 : f32
    %t2 = arith.mulf %t1, %ck : f32
    %t3 = math.tanh %t2 : f32
    %t4 = arith.addf %t3, %c1 : f32
    %t5 = arith.mulf %a, %c05 : f32
    %t6 = arith.mulf %t5, %t4 : f32
    linalg.yield %t6 : f32
  } -> tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b2 : tensor<32x16xf32>, tensor<16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%yb, %x : tensor<32x16xf32>, tensor<32x16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  return %r : tensor<32x16xf32>
}

// x: [B, S, H], batch over "dp", collapsed to [B*S, H] for the matmuls and
// expanded back for the residual add. Each device has one row of batch:
// the sequence is its expand group's first dim of size other than 1.
// CHECK-LABEL: func.func @sp_mlp_expand
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<1x4x16xf32> into tensor<4x16xf32>
// CHECK: mesh.all_gather %[[C]] on @m axes = ["tp"] gather_dim = 0 : tensor<4x16xf32> -> tensor<16x16xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: %[[S:.*]] = mesh.reduce_scatter %{{.*}} on @m axes = ["tp"] scatter_dim = 0 reduction = sum : tensor<16x16xf32> -> tensor<4x16xf32>
// CHECK: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[S]], %{{.*}} : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[YB]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 16] : tensor<4x16xf32> into tensor<1x4x16xf32>
// CHECK: %[[R:.*]] = arith.addf %[[E]], %[[X]] : tensor<1x4x16xf32>
// CHECK-NOT: mesh.
// CHECK: return %[[R]]
// PARTITIONED-LABEL: func.func @sp_mlp_expand
// PARTITIONED: mesh.all_gather
// PARTITIONED: mesh.all_reduce
// PARTITIONED: tensor.expand_shape
// PARTITIONED: mesh.all_slice
func.func @sp_mlp_expand(%x3: tensor<2x16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], []]>},
                         %w1: tensor<16x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>},
                         %w2: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                         %b2: tensor<16xf32>)
    -> (tensor<2x16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], []]>}) {
  %zero = arith.constant 0.0 : f32
  %x = tensor.collapse_shape %x3 [[0, 1], [2]] : tensor<2x16x16xf32> into tensor<32x16xf32>
  %xg = mesh.shard %x : tensor<32x16xf32> to #mesh.sharding<@m, [["dp"], []]>
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %h = linalg.matmul ins(%xg, %w1 : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %g = math.tanh %h : tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b2 : tensor<32x16xf32>, tensor<16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  %y3 = tensor.expand_shape %yb [[0, 1], [2]] output_shape [2, 16, 16] : tensor<32x16xf32> into tensor<2x16x16xf32>
  %r = arith.addf %y3, %x3 : tensor<2x16x16xf32>
  return %r : tensor<2x16x16xf32>
}

// -----

// On (tp = 8) with two rows of batch per device, block k of the sequence
// is two pieces of the [B*S] rows: the expand back to [B, S, H] would lose
// "tp", so the whole chain back to the gathered input (both products, the
// tanh, the bias add) is computed on (B, S) unmerged (generics with two m
// loops), reduce-scattered along S: no reshape left.

mesh.mesh @m(["tp" = 8])

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @sp_mlp_batch2
// CHECK-SAME: (%[[X:.*]]: tensor<2x2x16xf32>
// CHECK: mesh.all_gather %[[X]] on @m axes = ["tp"] gather_dim = 1 : tensor<2x2x16xf32> -> tensor<2x16x16xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x16x16xf32>, tensor<16x8xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x16x8xf32>, tensor<8x16xf32>) outs(%{{.*}} : tensor<2x16x16xf32>)
// CHECK: %[[S:.*]] = mesh.reduce_scatter %[[Y]] on @m axes = ["tp"] scatter_dim = 1 reduction = sum : tensor<2x16x16xf32> -> tensor<2x2x16xf32>
// CHECK: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[S]], %{{.*}} : tensor<2x2x16xf32>, tensor<16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[YB]], %[[X]] : tensor<2x2x16xf32>, tensor<2x2x16xf32>)
// CHECK-NOT: mesh.
// CHECK: return
func.func @sp_mlp_batch2(%x3: tensor<2x16x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"], []]>},
                         %w1: tensor<16x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>},
                         %w2: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                         %b2: tensor<16xf32>)
    -> (tensor<2x16x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"], []]>}) {
  %zero = arith.constant 0.0 : f32
  %x = tensor.collapse_shape %x3 [[0, 1], [2]] : tensor<2x16x16xf32> into tensor<32x16xf32>
  %xg = mesh.shard %x : tensor<32x16xf32> to #mesh.sharding<@m, [[], []]>
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %h = linalg.matmul ins(%xg, %w1 : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %g = math.tanh %h : tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b2 : tensor<32x16xf32>, tensor<16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  %y3 = tensor.expand_shape %yb [[0, 1], [2]] output_shape [2, 16, 16] : tensor<32x16xf32> into tensor<2x16x16xf32>
  %r = arith.addf %y3, %x3 : tensor<2x16x16xf32>
  return %r : tensor<2x16x16xf32>
}

// Two such halves in a row (the MLP twice, standing in for attention and
// the MLP of one transformer block): two all_gathers, two reduce_scatters.
// CHECK-LABEL: func.func @sp_two_halves
// CHECK-NOT: mesh.all_reduce
// CHECK-NOT: mesh.all_slice
// CHECK: mesh.all_gather
// CHECK-NOT: mesh.all_reduce
// CHECK-NOT: mesh.all_slice
// CHECK: mesh.reduce_scatter
// CHECK-NOT: mesh.all_reduce
// CHECK-NOT: mesh.all_slice
// CHECK: mesh.all_gather
// CHECK-NOT: mesh.all_reduce
// CHECK-NOT: mesh.all_slice
// CHECK: mesh.reduce_scatter
// CHECK-NOT: mesh.
// CHECK: return
func.func @sp_two_halves(%x: tensor<32x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                         %w1: tensor<16x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>},
                         %w2: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                         %w3: tensor<16x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>},
                         %w4: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>},
                         %b2: tensor<16xf32>, %b4: tensor<16xf32>)
    -> (tensor<32x16xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  // First half.
  %xg = mesh.shard %x : tensor<32x16xf32> to #mesh.sharding<@m, [[], []]>
  %h = linalg.matmul ins(%xg, %w1 : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %g = math.tanh %h : tensor<32x64xf32>
  %y = linalg.matmul ins(%g, %w2 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b2 : tensor<32x16xf32>, tensor<16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  %r = arith.addf %yb, %x : tensor<32x16xf32>
  // Second half, on the first one's output.
  %rg = mesh.shard %r : tensor<32x16xf32> to #mesh.sharding<@m, [[], []]>
  %h2 = linalg.matmul ins(%rg, %w3 : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %g2 = math.tanh %h2 : tensor<32x64xf32>
  %y2 = linalg.matmul ins(%g2, %w4 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %yb2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y2, %b4 : tensor<32x16xf32>, tensor<16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<32x16xf32>
  %r2 = arith.addf %yb2, %r : tensor<32x16xf32>
  return %r2 : tensor<32x16xf32>
}
