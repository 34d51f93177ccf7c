// RUN: mesh-opt %s --mesh-propagate-sharding -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=PART
// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition --mesh-optimize-collectives -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=OPT

// Dims that an annotation splits over devices that do not divide them are
// padded to the next multiple (issue 30), with a remark each; with
// exact-division they are an error (propagate-sharding.mlir).

// The DeviceMesh tutorial's ToyModel, Linear(10, 10), ReLU, Linear(10, 5),
// under HSDP: each weight's 10 rows over the 4 devices of "shard" become 12
// (blocks of 3) in the signature; the dims tied to them (x's features, W1's
// outputs, the hidden activation) are padded with zeros inside; before each
// contraction over a padded dim the padding that is not known to be zeros
// (W1's and W2's rows, whatever the caller passed there; the activation's,
// ReLU of padding) is masked to zero. The result keeps its size.
mesh.mesh @hsdp(["replicate" = 2, "shard" = 4])
// CHECK-LABEL: func.func @toy
// CHECK-SAME: (%[[X:.*]]: tensor<8x10xf32> {{.*}}, %[[W1:.*]]: tensor<12x10xf32> {{.*}}, %[[W2:.*]]: tensor<12x5xf32> {{.*}}) -> (tensor<8x5xf32>
// W2 is read with its padding zeroed by every user, masked where it arrives.
// CHECK: %[[W2M:.*]] = linalg.generic {{.*}} ins(%[[W2]], %{{.*}} : tensor<12x5xf32>, tensor<12xi1>)
// CHECK: %[[XP:.*]] = tensor.pad %[[X]] low[0, 0] high[0, 2]
// CHECK: %[[W1P:.*]] = tensor.pad %[[W1]] low[0, 0] high[0, 2]
// CHECK: %[[MASK:.*]] = arith.constant {{.*}}dense<[true, true, true, true, true, true, true, true, true, true, false, false]> : tensor<12xi1>
// CHECK: %[[W1M:.*]] = linalg.generic {{.*}} ins(%[[W1P]], %[[MASK]] : tensor<12x12xf32>, tensor<12xi1>)
// CHECK: arith.select
// CHECK: %[[H:.*]] = linalg.matmul {{.*}} ins(%[[XP]], %[[W1M]] : tensor<8x12xf32>, tensor<12x12xf32>)
// CHECK: %[[A:.*]] = arith.maximumf %[[H]]
// CHECK: %[[AM:.*]] = linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<8x12xf32>, tensor<12xi1>)
// CHECK: %[[Y:.*]] = linalg.matmul {{.*}} ins(%[[AM]], %[[W2M]] : tensor<8x12xf32>, tensor<12x5xf32>) {{.*}} -> tensor<8x5xf32>
// CHECK: return %[[Y]] : tensor<8x5xf32>
// Each device holds 3 rows of each weight; the gathers move the 10 rows of
// data (the last device sends one row), and W1's 10 columns of data: its
// columns' padding (W2's rows) is cut before the gather and put back after.
// PART-LABEL: func.func @toy
// PART-SAME: (%{{.*}}: tensor<1x10xf32>, %{{.*}}: tensor<3x10xf32>, %{{.*}}: tensor<3x5xf32>) -> tensor<1x5xf32>
// PART: %[[CUT:.*]] = tensor.extract_slice %{{.*}}[0, 0] [3, 10] [1, 1] : tensor<3x12xf32> to tensor<3x10xf32>
// PART: %[[W1G:.*]] = mesh.all_gather %[[CUT]] {{.*}} gather_dim = 0 valid = 10 : tensor<3x10xf32> -> tensor<12x10xf32>
// PART: tensor.pad %[[W1G]] low[0, 0] high[0, 2]
// PART: mesh.all_gather {{.*}} gather_dim = 0 valid = 10 : tensor<3x5xf32> -> tensor<12x5xf32>
// expected-remark @+2 {{argument 1 of @toy: dim 0 of size 10 does not divide by the 4 devices of axes #mesh<axes["shard"]>: padded to 12 (blocks of 3, 2 elements of padding; pass exact-division to make this an error)}}
// expected-remark @+1 {{argument 2 of @toy: dim 0 of size 10 does not divide by the 4 devices of axes #mesh<axes["shard"]>: padded to 12}}
func.func @toy(%x: tensor<8x10xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["replicate", "shard"], []]>},
               %w1: tensor<10x10xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["shard"], []]>},
               %w2: tensor<10x5xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["shard"], []]>})
    -> (tensor<8x5xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["replicate", "shard"], []]>}) {
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x10xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x10xf32>, tensor<10x10xf32>) outs(%f1 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %z = arith.constant dense<0.0> : tensor<8x10xf32>
  %a = arith.maximumf %h, %z : tensor<8x10xf32>
  %e2 = tensor.empty() : tensor<8x5xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x5xf32>) -> tensor<8x5xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<8x10xf32>, tensor<10x5xf32>) outs(%f2 : tensor<8x5xf32>) -> tensor<8x5xf32>
  return %y : tensor<8x5xf32>
}

// -----

// A max over a padded dim masks the padding with -inf. A result split
// unevenly keeps its padded size in the signature, and a caller in the
// module pads what it passes and slices what it gets.
mesh.mesh @m(["x" = 4])
// CHECK-LABEL: func.func @col_max
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32> {{.*}}) -> (tensor<4xf32>
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<8x4xf32>, tensor<8xi1>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: arith.select %{{.*}}, %{{.*}}, %[[NINF]]
// CHECK: linalg.reduce ins(%[[M]] : tensor<8x4xf32>)
// expected-remark @+1 {{argument 0 of @col_max: dim 0 of size 6 does not divide by the 4 devices of axes #mesh<axes["x"]>: padded to 8}}
func.func @col_max(%a: tensor<6x4xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%a : tensor<6x4xf32>) outs(%i : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %x = arith.maximumf %in, %acc : f32
      linalg.yield %x : f32
    }
  return %m : tensor<4xf32>
}
// CHECK-LABEL: func.func @neg
// CHECK-SAME: (%[[B:.*]]: tensor<6xf32> {{.*}}) -> (tensor<8xf32>
// CHECK: %[[BP:.*]] = tensor.pad %[[B]] low[0] high[2]
// CHECK: arith.negf %[[BP]] {{.*}}: tensor<8xf32>
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[C:.*]]: tensor<6xf32> {{.*}}) -> (tensor<6xf32>
// CHECK: %[[R:.*]] = call @neg(%[[C]]) {{.*}}: (tensor<6xf32>) -> tensor<8xf32>
// CHECK: tensor.extract_slice %[[R]][0] [6] [1] {{.*}}: tensor<8xf32> to tensor<6xf32>
// CHECK-LABEL: func.func @caller_of_padded
// CHECK: %[[CP:.*]] = tensor.pad %{{.*}} low[0, 0] high[2, 0]
// CHECK: call @col_max(%[[CP]]) {{.*}}: (tensor<8x4xf32>) -> tensor<4xf32>
// expected-remark @+1 {{result 0 of @neg: dim 0 of size 6 does not divide by the 4 devices of axes #mesh<axes["x"]>: padded to 8}}
func.func @neg(%b: tensor<6xf32>) -> (tensor<6xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) {
  %n = arith.negf %b : tensor<6xf32>
  return %n : tensor<6xf32>
}
func.func @caller(%c: tensor<6xf32>) -> tensor<6xf32> {
  %r = call @neg(%c) : (tensor<6xf32>) -> tensor<6xf32>
  return %r : tensor<6xf32>
}
func.func @caller_of_padded(%c: tensor<6x4xf32>) -> tensor<4xf32> {
  %r = call @col_max(%c) : (tensor<6x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A training loop: the carried parameter keeps its padded size through the
// loop, and a constraint that splits unevenly pads what it constrains.
mesh.mesh @m(["x" = 4])
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[W:.*]]: tensor<8x6xf32> {{.*}}, %[[G:.*]]: tensor<6xf32> {{.*}}) -> (tensor<8x6xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[W]]) -> (tensor<8x6xf32>)
// CHECK: mesh.shard %{{.*}} : tensor<8x6xf32> to #mesh.sharding<@m, {{\[}}["x"], []]>
// CHECK-LABEL: func.func @constraint
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0] high[1, 0]
// CHECK: %[[S:.*]] = mesh.shard %[[P]] : tensor<4x12xf32>
// CHECK: tensor.extract_slice %[[S]][0, 0] [3, 12] [1, 1]
// expected-remark @+2 {{argument 0 of @loop: dim 0 of size 6 does not divide by the 4 devices of axes #mesh<axes["x"]>: padded to 8}}
// expected-remark @+1 {{result 0 of @loop: dim 0 of size 6}}
func.func @loop(%w0: tensor<6x6xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}, %g: tensor<6xf32>)
    -> (tensor<6x6xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<6x6xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%w = %w0) -> tensor<6x6xf32> {
    %gb = linalg.broadcast ins(%g : tensor<6xf32>) outs(%e : tensor<6x6xf32>) dimensions = [0]
    %n = arith.subf %w, %gb : tensor<6x6xf32>
    // expected-remark @+1 {{dim 0 of size 6 does not divide by the 4 devices of axes #mesh<axes["x"]>: padded}}
    %s = mesh.shard %n : tensor<6x6xf32> to #mesh.sharding<@m, [["x"], []]>
    scf.yield %s : tensor<6x6xf32>
  }
  return %r : tensor<6x6xf32>
}
func.func @constraint(%a: tensor<3x12xf32>) -> tensor<3x12xf32> {
  // expected-remark @+1 {{dim 0 of size 3 does not divide by the 4 devices of axes #mesh<axes["x"]>: padded}}
  %s = mesh.shard %a : tensor<3x12xf32> to #mesh.sharding<@m, [["x"], []]>
  return %s : tensor<3x12xf32>
}

// -----

// A reduction over a padded dim whose body is not a plain combination of
// its input cannot mask the padding: an error naming the op.
mesh.mesh @m(["x" = 4])
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
// expected-remark @+1 {{padded to 8}}
func.func @sum_exp(%a: tensor<6xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) -> tensor<f32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{cannot pad the reduction of this op over a dim that its sharding splits unevenly}}
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%a : tensor<6xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %ex = math.exp %x : f32
    %t = arith.addf %ex, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Zeros are not the neutral element of every reduction: a max over a dim
// padded with zeros (an all-negative column would give 0) is masked with
// -inf even where the pass padded it itself.
mesh.mesh @m(["x" = 4])
// CHECK-LABEL: func.func @max_of_zero_padded
// CHECK: %[[P:.*]] = tensor.pad
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<8x4xf32>, tensor<8xi1>)
// CHECK: arith.constant 0xFF800000
// CHECK: linalg.reduce ins(%[[M]]
func.func @max_of_zero_padded(%a: tensor<6x4xf32>) -> (tensor<4xf32>, tensor<6x4xf32>) {
  // expected-remark @+1 {{dim 0 of size 6 does not divide by the 4 devices}}
  %s = mesh.shard %a : tensor<6x4xf32> to #mesh.sharding<@m, [["x"], []]>
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%a : tensor<6x4xf32>) outs(%i : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %x = arith.maximumf %in, %acc : f32
      linalg.yield %x : f32
    }
  return %m, %s : tensor<4xf32>, tensor<6x4xf32>
}

// -----

// Padding an argument that its caller already padded (5 over 4 is 8 in the
// signature; the class is 12, for "y" too) is not zeros past 5: the sum
// masks it.
mesh.mesh @m(["x" = 4, "y" = 3])
// CHECK-LABEL: func.func @caller_padding
// CHECK-SAME: (%[[A:.*]]: tensor<8xf32>
// CHECK: %[[AP:.*]] = tensor.pad %[[A]] low[0] high[4]
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[AP]], %{{.*}} : tensor<12xf32>, tensor<12xi1>)
// CHECK: linalg.reduce ins(%[[M]]
// expected-remark @+2 {{argument 0 of @caller_padding}}
// expected-remark @+1 {{argument 1 of @caller_padding}}
func.func @caller_padding(%a: tensor<5xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>},
                          %b: tensor<5xf32> {mesh.sharding = #mesh.sharding<@m, [["y"]]>}) -> (tensor<f32>, tensor<5xf32>) {
  %c = arith.addf %a, %b : tensor<5xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%a : tensor<5xf32>) outs(%z : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %t = arith.addf %in, %acc : f32
      linalg.yield %t : f32
    }
  return %s, %c : tensor<f32>, tensor<5xf32>
}

// -----

// A dynamic dim beside the padded one: the mask takes its size; a block
// argument of another block is padded where it arrives; a division, which
// would trap on the padding's zeros, sees the real sizes.
mesh.mesh @m(["x" = 4])
// CHECK-LABEL: func.func @dynamic_beside
// CHECK: %[[D:.*]] = tensor.dim
// CHECK: tensor.empty(%[[D]]) {{.*}}: tensor<?x8xf32>
// CHECK-LABEL: func.func @successor
// CHECK: ^bb1(%[[B:.*]]: tensor<6xf32>):
// CHECK: tensor.pad %[[B]]
// CHECK-LABEL: func.func @division
// CHECK: tensor.extract_slice
// CHECK: arith.divsi {{.*}} : tensor<6xi32>
// expected-remark @+1 {{argument 0 of @dynamic_beside}}
func.func @dynamic_beside(%a: tensor<?x6xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"]]>}, %i: tensor<?xf32>) -> tensor<?xf32> {
  %m = linalg.reduce ins(%a : tensor<?x6xf32>) outs(%i : tensor<?xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %x = arith.addf %in, %acc : f32
      linalg.yield %x : f32
    }
  return %m : tensor<?xf32>
}
func.func @successor(%a: tensor<6xf32>) -> tensor<6xf32> {
  cf.br ^bb1(%a : tensor<6xf32>)
^bb1(%b: tensor<6xf32>):
  // expected-remark @+1 {{dim 0 of size 6 does not divide}}
  %s = mesh.shard %b : tensor<6xf32> to #mesh.sharding<@m, [["x"]]>
  return %s : tensor<6xf32>
}
// expected-remark @+1 {{argument 0 of @division}}
func.func @division(%a: tensor<6xi32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}, %b: tensor<6xi32>) -> tensor<6xi32> {
  %q = arith.divsi %b, %a : tensor<6xi32>
  return %q : tensor<6xi32>
}

// -----

// A padded weight read plain (a contraction over its padded rows, which
// needs them zeroed) and transposed (the input's gradient, which does not):
// both users read it zeroed, so the transposed use gathers nothing of its
// own (before: a second all_gather of the transposed weight).
mesh.mesh @hsdp(["replicate" = 2, "shard" = 4])
// OPT-LABEL: func.func @plain_and_transposed
// OPT-COUNT-1: mesh.all_gather
// OPT-NOT: mesh.all_gather
// OPT: return
// expected-remark @+1 {{argument 1 of @plain_and_transposed: dim 0 of size 10 does not divide}}
func.func @plain_and_transposed(
    %a: tensor<8x10xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["replicate", "shard"], []]>},
    %w: tensor<10x5xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["shard"], []]>},
    %g: tensor<8x5xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["replicate", "shard"], []]>})
    -> (tensor<8x5xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["replicate", "shard"], []]>},
        tensor<8x10xf32> {mesh.sharding = #mesh.sharding<@hsdp, [["replicate", "shard"], []]>}) {
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x5xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x5xf32>) -> tensor<8x5xf32>
  %y = linalg.matmul ins(%a, %w : tensor<8x10xf32>, tensor<10x5xf32>) outs(%f1 : tensor<8x5xf32>) -> tensor<8x5xf32>
  %et = tensor.empty() : tensor<5x10xf32>
  %wt = linalg.transpose ins(%w : tensor<10x5xf32>) outs(%et : tensor<5x10xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<8x10xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x10xf32>) -> tensor<8x10xf32>
  %da = linalg.matmul ins(%g, %wt : tensor<8x5xf32>, tensor<5x10xf32>) outs(%f2 : tensor<8x10xf32>) -> tensor<8x10xf32>
  return %y, %da : tensor<8x5xf32>, tensor<8x10xf32>
}

// -----

// all_to_alls of a padded dim move its data only: 10 rows over 4 in blocks
// of 3, the last member's one row. Gathered along the concat dim
// (`concat_valid`: the last member sends its 1 row of data to each), then
// split again along it (`split_valid`: the blocks for the last member carry
// 1 row).
mesh.mesh @m(["x" = 4])
// PART-LABEL: func.func @all_to_all_padded
// PART: mesh.all_to_all %{{.*}} split_dim = 1 concat_dim = 0 concat_valid = 10 : tensor<3x8x4xf32> -> tensor<12x2x4xf32>
// PART: mesh.all_to_all %{{.*}} split_dim = 0 concat_dim = 1 split_valid = 10 : tensor<12x2x4xf32> -> tensor<3x8x4xf32>
// expected-remark @+2 {{argument 0 of @all_to_all_padded: dim 0 of size 10 does not divide}}
// expected-remark @+1 {{result 0 of @all_to_all_padded: dim 0 of size 10 does not divide}}
func.func @all_to_all_padded(%w: tensor<10x8x4xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], [], []]>})
    -> (tensor<10x8x4xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], [], []]>}) {
  %t = mesh.shard %w : tensor<10x8x4xf32> to #mesh.sharding<@m, [[], ["x"], []]>
  %c = arith.constant dense<1.0> : tensor<10x8x4xf32>
  %s = arith.addf %t, %c : tensor<10x8x4xf32>
  return %s : tensor<10x8x4xf32>
}

// -----

// Padding of a whole dim beside an all_to_all's (the 3 features, padded to
// 4 because b's are split over "y") is cut before it and put back after.
mesh.mesh @m(["x" = 4, "y" = 2])
// PART-LABEL: func.func @all_to_all_beside
// PART: %[[CUT:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [3, 8, 3] [1, 1, 1] : tensor<3x8x4xf32> to tensor<3x8x3xf32>
// PART: %[[A:.*]] = mesh.all_to_all %[[CUT]] {{.*}} concat_valid = 10 : tensor<3x8x3xf32> -> tensor<12x2x3xf32>
// PART: tensor.pad %[[A]] low[0, 0, 0] high[0, 0, 1]
// The result's features are cut back to 3 by a slice the pass made; its
// data sizes are known, so the all_to_all back to the rows' split moves
// the data only.
// PART: mesh.all_to_all %{{.*}} split_dim = 0 concat_dim = 1 split_valid = 10 : tensor<12x2x3xf32> -> tensor<3x8x3xf32>
// expected-remark @+3 {{argument 0 of @all_to_all_beside: dim 0 of size 10 does not divide}}
// expected-remark @+2 {{result 0 of @all_to_all_beside: dim 0 of size 10 does not divide}}
// expected-remark @+1 {{argument 1 of @all_to_all_beside: dim 0 of size 3 does not divide by the 2 devices of axes #mesh<axes["y"]>: padded to 4}}
func.func @all_to_all_beside(%w: tensor<10x8x3xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], [], []]>},
                             %b: tensor<3xf32> {mesh.sharding = #mesh.sharding<@m, [["y"]]>})
    -> (tensor<10x8x3xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], [], []]>}) {
  %e = tensor.empty() : tensor<10x8x3xf32>
  %bb = linalg.broadcast ins(%b : tensor<3xf32>) outs(%e : tensor<10x8x3xf32>) dimensions = [0, 1]
  %t = mesh.shard %w : tensor<10x8x3xf32> to #mesh.sharding<@m, [[], ["x"], []]>
  %s = arith.addf %t, %bb : tensor<10x8x3xf32>
  return %s : tensor<10x8x3xf32>
}
