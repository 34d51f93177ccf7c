// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition --mesh-optimize-collectives --mesh-report-communication -split-input-file -o /dev/null 2>&1 | FileCheck %s

// Training steps written once on global shapes (issue 30): an MLP
// (x @ W1, ReLU, @ W2), the error against a target, the backward written
// out (W2 used plain forward and transposed for the input's gradient), an
// SGD update; only the arguments are annotated. B = 16, H = 32, F = 64,
// f32: each weight is 2048 elements (8 KiB). In an scf.for over steps the
// parameters are carried by the loop and must keep their sharding: each
// plan is the expert's, per step, to the byte (docs/partitioning.md,
// "Training plans", has the formulas).

// DDP on (8): one bucket with both gradients, all_reduced:
// 2 * 7/8 * 16 KiB = 28672 bytes.
// CHECK-LABEL: communication of @ddp_loop:
// CHECK-NEXT: all_reduce on @m axes ["d"]: 4096 x f32 (16384 bytes), 28672 bytes per device
// CHECK-NEXT: total: 1 collective, 28672 bytes per device
mesh.mesh @m(["d" = 8])

func.func @ddp_loop(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %t: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
    %w1_0: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}, %w2_0: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}, tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %eat = tensor.empty() : tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:2 = scf.for %i = %lb to %ub step %one iter_args(%w1 = %w1_0, %w2 = %w2_0) -> (tensor<32x64xf32>, tensor<64x32xf32>) {

    %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %a = arith.maximumf %h, %zero : tensor<16x64xf32>
    %y = linalg.matmul ins(%a, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %dy = arith.subf %y, %t : tensor<16x32xf32>
    %at = linalg.transpose ins(%a : tensor<16x64xf32>) outs(%eat : tensor<64x16xf32>) permutation = [1, 0]
    %dw2 = linalg.matmul ins(%at, %dy : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
    %da = linalg.matmul ins(%dy, %w2t : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %pos = arith.cmpf ogt, %h, %zero : tensor<16x64xf32>
    %dh = arith.select %pos, %da, %zero : tensor<16x64xi1>, tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %lr1 = tensor.splat %lr : tensor<32x64xf32>
    %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
    %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
    %lr2 = tensor.splat %lr : tensor<64x32xf32>
    %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
    %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
    scf.yield %nw1, %nw2 : tensor<32x64xf32>, tensor<64x32xf32>
  }
  return %r#0, %r#1 : tensor<32x64xf32>, tensor<64x32xf32>
}

// -----

// FSDP on (8): each weight gathered once (W2's transposed use reuses its
// gather) and each gradient reduce_scattered: 4 * 7/8 * 8 KiB.
// CHECK-LABEL: communication of @fsdp_loop:
// CHECK-NEXT: all_gather on @m axes ["d"]: 256 x f32 (1024 bytes), 7168 bytes per device
// CHECK-NEXT: all_gather on @m axes ["d"]: 256 x f32 (1024 bytes), 7168 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["d"]: 2048 x f32 (8192 bytes), 7168 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["d"]: 2048 x f32 (8192 bytes), 7168 bytes per device
// CHECK-NEXT: total: 4 collectives, 28672 bytes per device
mesh.mesh @m(["d" = 8])

func.func @fsdp_loop(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %t: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
    %w1_0: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w2_0: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %eat = tensor.empty() : tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:2 = scf.for %i = %lb to %ub step %one iter_args(%w1 = %w1_0, %w2 = %w2_0) -> (tensor<32x64xf32>, tensor<64x32xf32>) {

    %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %a = arith.maximumf %h, %zero : tensor<16x64xf32>
    %y = linalg.matmul ins(%a, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %dy = arith.subf %y, %t : tensor<16x32xf32>
    %at = linalg.transpose ins(%a : tensor<16x64xf32>) outs(%eat : tensor<64x16xf32>) permutation = [1, 0]
    %dw2 = linalg.matmul ins(%at, %dy : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
    %da = linalg.matmul ins(%dy, %w2t : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %pos = arith.cmpf ogt, %h, %zero : tensor<16x64xf32>
    %dh = arith.select %pos, %da, %zero : tensor<16x64xi1>, tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %lr1 = tensor.splat %lr : tensor<32x64xf32>
    %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
    %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
    %lr2 = tensor.splat %lr : tensor<64x32xf32>
    %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
    %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
    scf.yield %nw1, %nw2 : tensor<32x64xf32>, tensor<64x32xf32>
  }
  return %r#0, %r#1 : tensor<32x64xf32>, tensor<64x32xf32>
}

// -----

// HSDP on (replicate = 2, shard = 4): gathers and reduce_scatters over
// "shard" (4 * 3/4 * 8 KiB), the shards' gradients averaged over
// "replicate" in one bucket (2 * 1/2 * 4 KiB).
// CHECK-LABEL: communication of @hsdp_loop:
// CHECK-NEXT: all_gather on @m axes ["shard"]: 512 x f32 (2048 bytes), 6144 bytes per device
// CHECK-NEXT: all_gather on @m axes ["shard"]: 512 x f32 (2048 bytes), 6144 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["shard"]: 2048 x f32 (8192 bytes), 6144 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["shard"]: 2048 x f32 (8192 bytes), 6144 bytes per device
// CHECK-NEXT: all_reduce on @m axes ["replicate"]: 1024 x f32 (4096 bytes), 4096 bytes per device
// CHECK-NEXT: total: 5 collectives, 28672 bytes per device
mesh.mesh @m(["replicate" = 2, "shard" = 4])

func.func @hsdp_loop(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["replicate", "shard"], []]>}, %t: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["replicate", "shard"], []]>},
    %w1_0: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>}, %w2_0: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>}, tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>}) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %eat = tensor.empty() : tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:2 = scf.for %i = %lb to %ub step %one iter_args(%w1 = %w1_0, %w2 = %w2_0) -> (tensor<32x64xf32>, tensor<64x32xf32>) {

    %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %a = arith.maximumf %h, %zero : tensor<16x64xf32>
    %y = linalg.matmul ins(%a, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %dy = arith.subf %y, %t : tensor<16x32xf32>
    %at = linalg.transpose ins(%a : tensor<16x64xf32>) outs(%eat : tensor<64x16xf32>) permutation = [1, 0]
    %dw2 = linalg.matmul ins(%at, %dy : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
    %da = linalg.matmul ins(%dy, %w2t : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %pos = arith.cmpf ogt, %h, %zero : tensor<16x64xf32>
    %dh = arith.select %pos, %da, %zero : tensor<16x64xi1>, tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %lr1 = tensor.splat %lr : tensor<32x64xf32>
    %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
    %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
    %lr2 = tensor.splat %lr : tensor<64x32xf32>
    %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
    %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
    scf.yield %nw1, %nw2 : tensor<32x64xf32>, tensor<64x32xf32>
  }
  return %r#0, %r#1 : tensor<32x64xf32>, tensor<64x32xf32>
}

// -----

// Megatron TP on (dp = 2, tp = 4): one all_reduce of the output over "tp"
// ([8, 32]: 2 * 3/4 * 1 KiB), the weight shards' gradients over "dp" in
// one bucket (2 * 1/2 * 4 KiB). Nothing gathered, nothing sliced.
// CHECK-LABEL: communication of @tp_loop:
// CHECK-NEXT: all_reduce on @m axes ["tp"]: 256 x f32 (1024 bytes), 1536 bytes per device
// CHECK-NEXT: all_reduce on @m axes ["dp"]: 1024 x f32 (4096 bytes), 4096 bytes per device
// CHECK-NEXT: total: 2 collectives, 5632 bytes per device
mesh.mesh @m(["dp" = 2, "tp" = 4])

func.func @tp_loop(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], []]>}, %t: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], []]>},
    %w1_0: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>}, %w2_0: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>}, tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>}) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %eat = tensor.empty() : tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:2 = scf.for %i = %lb to %ub step %one iter_args(%w1 = %w1_0, %w2 = %w2_0) -> (tensor<32x64xf32>, tensor<64x32xf32>) {

    %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %a = arith.maximumf %h, %zero : tensor<16x64xf32>
    %y = linalg.matmul ins(%a, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %dy = arith.subf %y, %t : tensor<16x32xf32>
    %at = linalg.transpose ins(%a : tensor<16x64xf32>) outs(%eat : tensor<64x16xf32>) permutation = [1, 0]
    %dw2 = linalg.matmul ins(%at, %dy : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
    %da = linalg.matmul ins(%dy, %w2t : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %pos = arith.cmpf ogt, %h, %zero : tensor<16x64xf32>
    %dh = arith.select %pos, %da, %zero : tensor<16x64xi1>, tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %lr1 = tensor.splat %lr : tensor<32x64xf32>
    %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
    %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
    %lr2 = tensor.splat %lr : tensor<64x32xf32>
    %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
    %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
    scf.yield %nw1, %nw2 : tensor<32x64xf32>, tensor<64x32xf32>
  }
  return %r#0, %r#1 : tensor<32x64xf32>, tensor<64x32xf32>
}

// -----

// One step of HSDP, not in a loop: the same collectives.
// CHECK-LABEL: communication of @hsdp_step:
// CHECK-NEXT: all_gather on @m axes ["shard"]: 512 x f32 (2048 bytes), 6144 bytes per device
// CHECK-NEXT: all_gather on @m axes ["shard"]: 512 x f32 (2048 bytes), 6144 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["shard"]: 2048 x f32 (8192 bytes), 6144 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["shard"]: 2048 x f32 (8192 bytes), 6144 bytes per device
// CHECK-NEXT: all_reduce on @m axes ["replicate"]: 1024 x f32 (4096 bytes), 4096 bytes per device
// CHECK-NEXT: total: 5 collectives, 28672 bytes per device
mesh.mesh @m(["replicate" = 2, "shard" = 4])

func.func @hsdp_step(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["replicate", "shard"], []]>}, %t: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["replicate", "shard"], []]>},
    %w1: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>}, %w2: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>}, tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["shard"], []]>}) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %eat = tensor.empty() : tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>

  %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %a = arith.maximumf %h, %zero : tensor<16x64xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dy = arith.subf %y, %t : tensor<16x32xf32>
  %at = linalg.transpose ins(%a : tensor<16x64xf32>) outs(%eat : tensor<64x16xf32>) permutation = [1, 0]
  %dw2 = linalg.matmul ins(%at, %dy : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
  %da = linalg.matmul ins(%dy, %w2t : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %pos = arith.cmpf ogt, %h, %zero : tensor<16x64xf32>
  %dh = arith.select %pos, %da, %zero : tensor<16x64xi1>, tensor<16x64xf32>
  %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
  %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lr1 = tensor.splat %lr : tensor<32x64xf32>
  %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
  %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
  %lr2 = tensor.splat %lr : tensor<64x32xf32>
  %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
  %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
  return %nw1, %nw2 : tensor<32x64xf32>, tensor<64x32xf32>
}

// -----

// Megatron TP in an scf.while: the same plan.
// CHECK-LABEL: communication of @tp_while:
// CHECK-NEXT: all_reduce on @m axes ["tp"]: 256 x f32 (1024 bytes), 1536 bytes per device
// CHECK-NEXT: all_reduce on @m axes ["dp"]: 1024 x f32 (4096 bytes), 4096 bytes per device
// CHECK-NEXT: total: 2 collectives, 5632 bytes per device
mesh.mesh @m(["dp" = 2, "tp" = 4])

func.func @tp_while(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], []]>}, %t: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], []]>},
    %w1_0: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>}, %w2_0: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>}, tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["tp"], []]>}) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %eat = tensor.empty() : tensor<64x16xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:3 = scf.while (%k = %lb, %v1 = %w1_0, %v2 = %w2_0) : (index, tensor<32x64xf32>, tensor<64x32xf32>) -> (index, tensor<32x64xf32>, tensor<64x32xf32>) {
    %c = arith.cmpi slt, %k, %ub : index
    scf.condition(%c) %k, %v1, %v2 : index, tensor<32x64xf32>, tensor<64x32xf32>
  } do {
  ^bb0(%kk: index, %w1: tensor<32x64xf32>, %w2: tensor<64x32xf32>):
    %k1 = arith.addi %kk, %one : index

    %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %a = arith.maximumf %h, %zero : tensor<16x64xf32>
    %y = linalg.matmul ins(%a, %w2 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %dy = arith.subf %y, %t : tensor<16x32xf32>
    %at = linalg.transpose ins(%a : tensor<16x64xf32>) outs(%eat : tensor<64x16xf32>) permutation = [1, 0]
    %dw2 = linalg.matmul ins(%at, %dy : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
    %da = linalg.matmul ins(%dy, %w2t : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %pos = arith.cmpf ogt, %h, %zero : tensor<16x64xf32>
    %dh = arith.select %pos, %da, %zero : tensor<16x64xi1>, tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %lr1 = tensor.splat %lr : tensor<32x64xf32>
    %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
    %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
    %lr2 = tensor.splat %lr : tensor<64x32xf32>
    %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
    %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
    scf.yield %k1, %nw1, %nw2 : index, tensor<32x64xf32>, tensor<64x32xf32>
  }
  return %r#1, %r#2 : tensor<32x64xf32>, tensor<64x32xf32>
}

// -----

// SGD with momentum: the buffer starts as zeros nobody annotated and is
// carried by the loop; it takes its parameter's layout (W1's columns over
// "tp"), so only W1's gradient shard is reduced over "dp" (2 * 1/2 * 2 KiB),
// and nothing is sliced.
// CHECK-LABEL: communication of @mom:
// CHECK-NEXT: all_reduce on @m axes ["dp"]: 512 x f32 (2048 bytes), 2048 bytes per device
// CHECK-NEXT: total: 1 collective, 2048 bytes per device
mesh.mesh @m(["dp" = 2, "tp" = 4])
func.func @mom(%x: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], []]>},
               %w1_0: tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>})
    -> (tensor<32x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"]]>}) {
  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %beta = arith.constant 0.9 : f32
  %e5 = tensor.empty() : tensor<32x64xf32>
  %m0 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %e1 = tensor.empty() : tensor<16x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %ext = tensor.empty() : tensor<32x16xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:2 = scf.for %i = %lb to %ub step %one iter_args(%w1 = %w1_0, %m = %m0) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
    %h = linalg.matmul ins(%x, %w1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<16x32xf32>) outs(%ext : tensor<32x16xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %h : tensor<32x16xf32>, tensor<16x64xf32>) outs(%m0 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %b = tensor.splat %beta : tensor<32x64xf32>
    %bm = arith.mulf %m, %b : tensor<32x64xf32>
    %mn = arith.addf %bm, %dw1 : tensor<32x64xf32>
    %l = tensor.splat %lr : tensor<32x64xf32>
    %s = arith.mulf %mn, %l : tensor<32x64xf32>
    %nw = arith.subf %w1, %s : tensor<32x64xf32>
    scf.yield %nw, %mn : tensor<32x64xf32>, tensor<32x64xf32>
  }
  return %r#0 : tensor<32x64xf32>
}
