// RUN: mesh-opt %s --mesh-optimize-collectives -split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-optimize-collectives=combine-threshold=0 -split-input-file | FileCheck %s --check-prefix=NOCOMBINE
// RUN: mesh-opt %s --mesh-optimize-collectives -split-input-file | FileCheck %s --check-prefix=BUCKET
// RUN: mesh-opt %s --mesh-optimize-collectives=combine-threshold=128 -split-input-file | FileCheck %s --check-prefix=SMALL

mesh.mesh @m(["one" = 1, "a" = 2, "b" = 4])

// all_reduce then all_slice over the same axes: one reduce_scatter.
// CHECK-LABEL: func.func @reduce_then_slice
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
func.func @reduce_then_slice(%x: tensor<8x16xf32>) -> tensor<2x16xf32> {
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 0 reduction = max : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK-NEXT: return %[[S]]
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
  %s = mesh.all_slice %r on @m axes = ["b"] slice_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// The reduction has another user, or the axes differ: no rewrite.
// CHECK-LABEL: func.func @not_rewritten
func.func @not_rewritten(%x: tensor<8x16xf32>) -> (tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x4xf32>) {
  // CHECK: mesh.all_reduce
  // CHECK: mesh.all_slice
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<8x16xf32> -> tensor<8x16xf32>
  %s = mesh.all_slice %r on @m axes = ["b"] slice_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  // CHECK: mesh.all_reduce %{{.*}} axes = ["a", "b"]
  // CHECK: mesh.all_slice %{{.*}} axes = ["b"]
  %q = mesh.all_reduce %x on @m axes = ["a", "b"] reduction = sum : tensor<8x16xf32> -> tensor<8x16xf32>
  %t = mesh.all_slice %q on @m axes = ["b"] slice_dim = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %s, %r, %t : tensor<2x16xf32>, tensor<8x16xf32>, tensor<8x4xf32>
}

// Size-1 axes leave the axis list; a group of one folds away.
// CHECK-LABEL: func.func @unit_axes
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
func.func @unit_axes(%x: tensor<8xf32>) -> (tensor<16xf32>, tensor<8xf32>) {
  // CHECK: mesh.all_gather %[[X]] on @m axes = ["a"] gather_dim = 0
  %g = mesh.all_gather %x on @m axes = ["one", "a"] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
  // CHECK-NOT: mesh.all_reduce
  %r = mesh.all_reduce %x on @m axes = ["one"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  // CHECK: return %{{.*}}, %[[X]]
  return %g, %r : tensor<16xf32>, tensor<8xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])

// Independent small all_reduces on the same group, kind and type: one.
// CHECK-LABEL: func.func @combine
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<16xf32>, %[[Z:.*]]: tensor<4xf32>)
// NOCOMBINE-LABEL: func.func @combine
// NOCOMBINE-COUNT-3: mesh.all_reduce
func.func @combine(%x: tensor<4x8xf32>, %y: tensor<16xf32>, %z: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<16xf32>, tensor<4xf32>) {
  // A different reduction kind is not combined.
  // CHECK: mesh.all_reduce %[[Z]] on @m axes = ["b"] reduction = max
  // CHECK: %[[FX:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  // CHECK: %[[J:.*]] = tensor.concat dim(0) %[[FX]], %[[Y]] : (tensor<32xf32>, tensor<16xf32>) -> tensor<48xf32>
  // CHECK: %[[R:.*]] = mesh.all_reduce %[[J]] on @m axes = ["b"] reduction = sum : tensor<48xf32> -> tensor<48xf32>
  // CHECK: %[[PX:.*]] = tensor.extract_slice %[[R]][0] [32] [1]
  // CHECK: tensor.expand_shape %[[PX]] {{\[\[}}0, 1]] output_shape [4, 8]
  // CHECK: %[[PY:.*]] = tensor.extract_slice %[[R]][32] [16] [1]
  // CHECK: return %{{.*}}, %[[PY]], %{{.*}}
  %rx = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %ry = mesh.all_reduce %y on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %rz = mesh.all_reduce %z on @m axes = ["b"] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %rx, %ry, %rz : tensor<4x8xf32>, tensor<16xf32>, tensor<4xf32>
}

// A reduction whose input needs the other's result is not combined with it.
// CHECK-LABEL: func.func @dependent
func.func @dependent(%x: tensor<16xf32>) -> tensor<16xf32> {
  // CHECK: %[[A:.*]] = mesh.all_reduce %{{.*}} : tensor<16xf32> -> tensor<16xf32>
  // CHECK: %[[E:.*]] = math.exp %[[A]]
  // CHECK: mesh.all_reduce %[[E]] on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %a = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %e = math.exp %a : tensor<16xf32>
  %b = mesh.all_reduce %e on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  return %b : tensor<16xf32>
}

// Buckets (issue 30): each gradient's all_reduce sits before its own
// update, after its scaling by the learning rate; the second one, and the
// scaling it needs, move up to the first, and one all_reduce carries both.
// BUCKET-LABEL: func.func @bucket_gradients
// BUCKET-SAME: (%[[W1:.*]]: tensor<4x8xf32>, %[[W2:.*]]: tensor<8xf32>, %[[G1:.*]]: tensor<4x8xf32>, %[[G2:.*]]: tensor<8xf32>, %[[LR:.*]]: tensor<8xf32>)
// BUCKET: %[[S1:.*]] = arith.mulf %[[G1]], %{{.*}}
// BUCKET: %[[S2:.*]] = arith.mulf %[[G2]], %[[LR]]
// BUCKET: %[[F1:.*]] = tensor.collapse_shape %[[S1]]
// BUCKET: %[[J:.*]] = tensor.concat dim(0) %[[F1]], %[[S2]] : (tensor<32xf32>, tensor<8xf32>) -> tensor<40xf32>
// BUCKET: %[[R:.*]] = mesh.all_reduce %[[J]] on @m axes = ["b"] reduction = sum : tensor<40xf32> -> tensor<40xf32>
// BUCKET-NOT: mesh.all_reduce
// BUCKET: arith.subf %[[W1]]
// BUCKET: arith.subf %[[W2]]
// A bucket of at most 128 bytes holds one of them (the 4x8 one alone).
// SMALL-LABEL: func.func @bucket_gradients
// SMALL-COUNT-2: mesh.all_reduce
// SMALL-NOT: mesh.all_reduce
// NOCOMBINE-LABEL: func.func @bucket_gradients
// NOCOMBINE-COUNT-2: mesh.all_reduce
func.func @bucket_gradients(%w1: tensor<4x8xf32>, %w2: tensor<8xf32>,
                            %g1: tensor<4x8xf32>, %g2: tensor<8xf32>,
                            %lr: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %lr1 = arith.constant dense<0.5> : tensor<4x8xf32>
  %s1 = arith.mulf %g1, %lr1 : tensor<4x8xf32>
  %r1 = mesh.all_reduce %s1 on @m axes = ["b"] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %n1 = arith.subf %w1, %r1 : tensor<4x8xf32>
  %s2 = arith.mulf %g2, %lr : tensor<8xf32>
  %r2 = mesh.all_reduce %s2 on @m axes = ["b"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %n2 = arith.subf %w2, %r2 : tensor<8xf32>
  return %n1, %n2 : tensor<4x8xf32>, tensor<8xf32>
}

// An input computed from a bucket's own result cannot join it (%b reduces
// %a again, %c is computed from the op that needs %a); they form the next
// bucket.
// BUCKET-LABEL: func.func @bucket_dependent
// SMALL-LABEL: func.func @bucket_dependent
// BUCKET-SAME: (%[[X:.*]]: tensor<16xf32>)
// BUCKET: %[[A:.*]] = mesh.all_reduce %[[X]] on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
// BUCKET: %[[E:.*]] = math.exp %[[A]]
// BUCKET: %[[N:.*]] = math.absf %[[E]]
// BUCKET: tensor.concat dim(0) %[[A]], %[[N]]
// BUCKET: mesh.all_reduce %{{.*}} : tensor<32xf32> -> tensor<32xf32>
// BUCKET-NOT: mesh.all_reduce
// BUCKET: return
func.func @bucket_dependent(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %a = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %e = math.exp %a : tensor<16xf32>
  %b = mesh.all_reduce %a on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %n = math.absf %e : tensor<16xf32>
  %c = mesh.all_reduce %n on @m axes = ["b"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  return %b, %c, %e : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// An op moved up with a joining reduction's input must not read a
// reduction still pending in another group (over "a" here): that group is
// emitted at its first use, which would then come after the moved op.
// BUCKET-LABEL: func.func @bucket_other_pending
// BUCKET: %[[RA:.*]] = mesh.all_reduce %{{.*}} on @m axes = ["a"] {{.*}} : tensor<16xf32> -> tensor<16xf32>
// BUCKET: arith.negf
// BUCKET: mesh.all_reduce %{{.*}} on @m axes = ["b"]
func.func @bucket_other_pending(%x: tensor<8xf32>, %y: tensor<8xf32>, %y2: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %ry = mesh.all_reduce %y on @m axes = ["a"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %ry2 = mesh.all_reduce %y2 on @m axes = ["a"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %r1 = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %u = arith.addf %r1, %ry : tensor<8xf32>
  %p = arith.negf %ry2 : tensor<8xf32>
  %r3 = mesh.all_reduce %p on @m axes = ["b"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %u, %r3 : tensor<8xf32>, tensor<8xf32>
}

// -----

// An all_slice moves up through elementwise ops, broadcasts, transposes and
// reshapes to the all_reduce whose result it slices: one reduce_scatter.

mesh.mesh @m(["a" = 2, "b" = 4])

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A bias broadcast along the sliced dim is taken whole; the init, an empty
// tensor, is made again at the per-device size.
// CHECK-LABEL: func.func @through_bias
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @through_bias(%x: tensor<16x8xf32>, %bias: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK-NOT: mesh.all_reduce
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 0 reduction = sum : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
  // CHECK-NOT: mesh.all_slice
  // CHECK: return %[[Y]]
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %bias : tensor<16x8xf32>, tensor<8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  %s = mesh.all_slice %y on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// A bias along the sliced dim is sliced too (no communication).
// CHECK-LABEL: func.func @column_bias
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<16xf32>)
func.func @column_bias(%x: tensor<16x8xf32>, %bias: tensor<16xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 0
  // CHECK: %[[SB:.*]] = mesh.all_slice %[[B]] on @m axes = ["b"] slice_dim = 0 : tensor<16xf32> -> tensor<4xf32>
  // CHECK: linalg.generic {{.*}} ins(%[[S]], %[[SB]] : tensor<4x8xf32>, tensor<4xf32>)
  // CHECK-NOT: mesh.all_reduce
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %bias : tensor<16x8xf32>, tensor<16xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  %s = mesh.all_slice %y on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// Through a collapse (its group's major dim divides by the 4 devices),
// elementwise arith ops whose other operands are sliced, and an expand
// whose sliced dim comes after dims of size 1 only.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x4x8xf32>, %[[Y:.*]]: tensor<16x8xf32>, %[[Z:.*]]: tensor<1x16x8xf32>)
func.func @chain(%x: tensor<4x4x8xf32>, %y: tensor<16x8xf32>, %z: tensor<1x16x8xf32>) -> tensor<1x4x8xf32> {
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 0 reduction = sum : tensor<4x4x8xf32> -> tensor<1x4x8xf32>
  // CHECK: %[[C:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  // CHECK: %[[N:.*]] = arith.negf %[[C]] : tensor<4x8xf32>
  // CHECK: %[[SY:.*]] = mesh.all_slice %[[Y]] on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[T:.*]] = arith.addf %[[N]], %[[SY]] : tensor<4x8xf32>
  // CHECK: %[[X3:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  // CHECK: %[[SZ:.*]] = mesh.all_slice %[[Z]] on @m axes = ["b"] slice_dim = 1 : tensor<1x16x8xf32> -> tensor<1x4x8xf32>
  // CHECK: %[[W:.*]] = arith.mulf %[[X3]], %[[SZ]] : tensor<1x4x8xf32>
  // CHECK: return %[[W]]
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
  %c = tensor.collapse_shape %r [[0, 1], [2]] : tensor<4x4x8xf32> into tensor<16x8xf32>
  %n = arith.negf %c : tensor<16x8xf32>
  %t = arith.addf %n, %y : tensor<16x8xf32>
  %x3 = tensor.expand_shape %t [[0, 1], [2]] output_shape [1, 16, 8] : tensor<16x8xf32> into tensor<1x16x8xf32>
  %w = arith.mulf %x3, %z : tensor<1x16x8xf32>
  %s = mesh.all_slice %w on @m axes = ["b"] slice_dim = 1 : tensor<1x16x8xf32> -> tensor<1x4x8xf32>
  return %s : tensor<1x4x8xf32>
}

// A collapse of one group of three dims, the first of size 1: the slice
// takes the group's first dim of size other than 1 (gen_partition.py's
// seed 1, rand28, crashed the pass here).
// CHECK-LABEL: func.func @collapse_three
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x2xf32>)
func.func @collapse_three(%x: tensor<1x8x2xf32>) -> tensor<4xf32> {
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 1 reduction = sum : tensor<1x8x2xf32> -> tensor<1x2x2xf32>
  // CHECK: %[[M:.*]] = arith.addf %[[S]], %[[S]] : tensor<1x2x2xf32>
  // CHECK: %[[C:.*]] = tensor.collapse_shape %[[M]] {{\[\[}}0, 1, 2]] : tensor<1x2x2xf32> into tensor<4xf32>
  // CHECK: return %[[C]]
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<1x8x2xf32> -> tensor<1x8x2xf32>
  %m = arith.addf %r, %r : tensor<1x8x2xf32>
  %c = tensor.collapse_shape %m [[0, 1, 2]] : tensor<1x8x2xf32> into tensor<16xf32>
  %s = mesh.all_slice %c on @m axes = ["b"] slice_dim = 0 : tensor<16xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// A transpose: the slice of dim 0 is a slice of its input's dim 1.
// CHECK-LABEL: func.func @transposed
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
func.func @transposed(%x: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 1 reduction = max : tensor<8x16xf32> -> tensor<8x4xf32>
  // CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<4x8xf32>) permutation = [1, 0]
  // CHECK: return %[[T]]
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%r : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %s = mesh.all_slice %t on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// An expand whose sliced dim comes after a dim of size 2 (two rows of
// batch per device, the sequence split): each device's block is two pieces
// of the input's rows, so the reduction and the other operands are viewed
// as [2, 16, 8], sliced along the sequence, and collapsed back.
// CHECK-LABEL: func.func @expand_minor_dim
// CHECK-SAME: (%[[X:.*]]: tensor<32x8xf32>, %[[Y:.*]]: tensor<32x8xf32>)
func.func @expand_minor_dim(%x: tensor<32x8xf32>, %y: tensor<32x8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: %[[XE:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0, 1], [2]] output_shape [2, 16, 8] : tensor<32x8xf32> into tensor<2x16x8xf32>
  // CHECK: %[[S:.*]] = mesh.reduce_scatter %[[XE]] on @m axes = ["b"] scatter_dim = 1 reduction = sum : tensor<2x16x8xf32> -> tensor<2x4x8xf32>
  // CHECK: %[[SC:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  // CHECK: %[[YE:.*]] = tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2]] output_shape [2, 16, 8] : tensor<32x8xf32> into tensor<2x16x8xf32>
  // CHECK: %[[YS:.*]] = mesh.all_slice %[[YE]] on @m axes = ["b"] slice_dim = 1 : tensor<2x16x8xf32> -> tensor<2x4x8xf32>
  // CHECK: %[[YC:.*]] = tensor.collapse_shape %[[YS]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  // CHECK: %[[A:.*]] = arith.addf %[[SC]], %[[YC]] : tensor<8x8xf32>
  // CHECK: %[[E:.*]] = tensor.expand_shape %[[A]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  // CHECK-NOT: mesh.all_reduce
  // CHECK: return %[[E]]
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<32x8xf32> -> tensor<32x8xf32>
  %a = arith.addf %r, %y : tensor<32x8xf32>
  %e = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 16, 8] : tensor<32x8xf32> into tensor<2x16x8xf32>
  %s = mesh.all_slice %e on @m axes = ["b"] slice_dim = 1 : tensor<2x16x8xf32> -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// Every reduction the slice reaches becomes a reduce_scatter; a value read
// twice is sliced once.
// CHECK-LABEL: func.func @two_reductions
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>, %[[Y:.*]]: tensor<16x8xf32>)
func.func @two_reductions(%x: tensor<16x8xf32>, %y: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[SX:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 0
  // CHECK: %[[SY:.*]] = mesh.reduce_scatter %[[Y]] on @m axes = ["b"] scatter_dim = 0
  // CHECK: %[[D:.*]] = arith.subf %[[SX]], %[[SY]] : tensor<4x8xf32>
  // CHECK: %[[DD:.*]] = arith.addf %[[D]], %[[D]] : tensor<4x8xf32>
  // CHECK-NOT: mesh.
  // CHECK: return %[[DD]]
  %rx = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %ry = mesh.all_reduce %y on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %d = arith.subf %rx, %ry : tensor<16x8xf32>
  %dd = arith.addf %d, %d : tensor<16x8xf32>
  %s = mesh.all_slice %dd on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// Where the slice may not move, nothing changes: an all_reduce and an
// all_slice stay in each function.

mesh.mesh @m(["a" = 2, "b" = 4])

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A reduction between them (the rows' sums: a row block of the sums is the
// sums of a row block, but reductions are not moved through).
// CHECK-LABEL: func.func @reduction_between
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: linalg.reduce
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @reduction_between(%x: tensor<16x8xf32>) -> tensor<4xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %z = arith.constant dense<0.0> : tensor<16xf32>
  %sum = linalg.reduce ins(%r : tensor<16x8xf32>) outs(%z : tensor<16xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %s = mesh.all_slice %sum on @m axes = ["b"] slice_dim = 0 : tensor<16xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// A value on the way has another user, which needs it whole.
// CHECK-LABEL: func.func @other_user
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: arith.negf {{.*}} : tensor<16x8xf32>
// CHECK: math.exp {{.*}} : tensor<16x8xf32>
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @other_user(%x: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %n = arith.negf %r : tensor<16x8xf32>
  %e = math.exp %n : tensor<16x8xf32>
  %s = mesh.all_slice %e on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s, %n : tensor<4x8xf32>, tensor<16x8xf32>
}

// An op that is not elementwise (a matmul).
// CHECK-LABEL: func.func @not_elementwise
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: linalg.matmul {{.*}} -> tensor<16x8xf32>
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @not_elementwise(%x: tensor<16x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %z = arith.constant dense<0.0> : tensor<16x8xf32>
  %m = linalg.matmul ins(%r, %w : tensor<16x8xf32>, tensor<8x8xf32>) outs(%z : tensor<16x8xf32>) -> tensor<16x8xf32>
  %s = mesh.all_slice %m on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// An expand's minor dim is followed with a view of its group (see
// @expand_minor_dim); a view that meets a second reshape on the way is not
// followed further.
// CHECK-LABEL: func.func @view_then_reshape
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: tensor.collapse_shape
// CHECK: tensor.expand_shape
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @view_then_reshape(%x: tensor<2x16x2x4xf32>) -> tensor<2x4x8xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<2x16x2x4xf32> -> tensor<2x16x2x4xf32>
  %c = tensor.collapse_shape %r [[0, 1], [2, 3]] : tensor<2x16x2x4xf32> into tensor<32x8xf32>
  %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 16, 8] : tensor<32x8xf32> into tensor<2x16x8xf32>
  %s = mesh.all_slice %e on @m axes = ["b"] slice_dim = 1 : tensor<2x16x8xf32> -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// A collapse whose group's major dim (2) does not divide by the 4 devices.
// CHECK-LABEL: func.func @collapse_not_divisible
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: tensor.collapse_shape
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @collapse_not_divisible(%x: tensor<2x8x8xf32>) -> tensor<4x8xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %c = tensor.collapse_shape %r [[0, 1], [2]] : tensor<2x8x8xf32> into tensor<16x8xf32>
  %s = mesh.all_slice %c on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// A body that reads its row index: each row's value depends on where it is.
// CHECK-LABEL: func.func @reads_index
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: linalg.index
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @reads_index(%x: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  %s = mesh.all_slice %y on @m axes = ["b"] slice_dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// x + x^T: the reduction would have to be sliced along both dims.
// CHECK-LABEL: func.func @plus_transpose
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce
// CHECK: linalg.generic
// CHECK: mesh.all_slice
// CHECK-NOT: mesh.reduce_scatter
func.func @plus_transpose(%x: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x16xf32> -> tensor<16x16xf32>
  %e = tensor.empty() : tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %r : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %s = mesh.all_slice %y on @m axes = ["b"] slice_dim = 0 : tensor<16x16xf32> -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// The slice is over other axes than the reduction.
// CHECK-LABEL: func.func @other_axes
// CHECK-NOT: mesh.reduce_scatter
// CHECK: mesh.all_reduce {{.*}} axes = ["b"]
// CHECK: arith.negf {{.*}} : tensor<16x8xf32>
// CHECK: mesh.all_slice {{.*}} axes = ["a"]
// CHECK-NOT: mesh.reduce_scatter
func.func @other_axes(%x: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %n = arith.negf %r : tensor<16x8xf32>
  %s = mesh.all_slice %n on @m axes = ["a"] slice_dim = 0 : tensor<16x8xf32> -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// A weight gathered plain for the forward pass and transposed for the
// input's gradient crosses the network once (issue 30): the transposed
// gather becomes a transpose of the plain one, which moves up to it.
mesh.mesh @m(["d" = 8])

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-LABEL: func.func @gather_once
// CHECK-SAME: (%[[W:.*]]: tensor<2x16xf32>
// CHECK: %[[G:.*]] = mesh.all_gather %[[W]] on @m axes = ["d"] gather_dim = 0 : tensor<2x16xf32> -> tensor<16x16xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: linalg.transpose ins(%[[G]] : tensor<16x16xf32>) outs(%{{.*}} : tensor<16x16xf32>) permutation = [1, 0]
// CHECK-NOT: mesh.all_gather
// CHECK: return
func.func @gather_once(%w: tensor<2x16xf32>, %x: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %e = tensor.empty() : tensor<16x2xf32>
  %t = linalg.transpose ins(%w : tensor<2x16xf32>) outs(%e : tensor<16x2xf32>) permutation = [1, 0]
  %gt = mesh.all_gather %t on @m axes = ["d"] gather_dim = 1 : tensor<16x2xf32> -> tensor<16x16xf32>
  %g = mesh.all_gather %w on @m axes = ["d"] gather_dim = 0 : tensor<2x16xf32> -> tensor<16x16xf32>
  %a = arith.addf %gt, %x : tensor<16x16xf32>
  %b = arith.addf %g, %x : tensor<16x16xf32>
  return %a, %b : tensor<16x16xf32>, tensor<16x16xf32>
}

// The same through a generic that only permutes (torch-mlir's spelling).
// CHECK-LABEL: func.func @gather_once_generic
// CHECK-SAME: (%[[W:.*]]: tensor<2x16xf32>
// CHECK: %[[G:.*]] = mesh.all_gather %[[W]] on @m axes = ["d"] gather_dim = 0
// CHECK-NOT: mesh.all_gather
// CHECK: linalg.transpose ins(%[[G]]
func.func @gather_once_generic(%w: tensor<2x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %g = mesh.all_gather %w on @m axes = ["d"] gather_dim = 0 : tensor<2x16xf32> -> tensor<16x16xf32>
  %e = tensor.empty() : tensor<16x2xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<2x16xf32>) outs(%e : tensor<16x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x2xf32>
  %gt = mesh.all_gather %t on @m axes = ["d"] gather_dim = 1 : tensor<16x2xf32> -> tensor<16x16xf32>
  return %g, %gt : tensor<16x16xf32>, tensor<16x16xf32>
}

// Not for a dynamic shape (left as it is).
// CHECK-LABEL: func.func @gather_dynamic
// CHECK-COUNT-2: mesh.all_gather
func.func @gather_dynamic(%w: tensor<2x?xf32>) -> (tensor<16x?xf32>, tensor<?x16xf32>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %w, %c1 : tensor<2x?xf32>
  %g = mesh.all_gather %w on @m axes = ["d"] gather_dim = 0 : tensor<2x?xf32> -> tensor<16x?xf32>
  %e = tensor.empty(%n) : tensor<?x2xf32>
  %t = linalg.transpose ins(%w : tensor<2x?xf32>) outs(%e : tensor<?x2xf32>) permutation = [1, 0]
  %gt = mesh.all_gather %t on @m axes = ["d"] gather_dim = 1 : tensor<?x2xf32> -> tensor<?x16xf32>
  return %g, %gt : tensor<16x?xf32>, tensor<?x16xf32>
}

// Not when the other gather is along another dim (the transposed gather
// along dim 0 is the weight's dim 1, which nothing gathers), nor when the
// generic computes something.
// CHECK-LABEL: func.func @gather_twice
// CHECK-COUNT-3: mesh.all_gather
// CHECK-NOT: mesh.all_gather
func.func @gather_twice(%w: tensor<16x16xf32>) -> (tensor<128x16xf32>, tensor<128x16xf32>, tensor<128x16xf32>) {
  %g = mesh.all_gather %w on @m axes = ["d"] gather_dim = 0 : tensor<16x16xf32> -> tensor<128x16xf32>
  %e = tensor.empty() : tensor<16x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) permutation = [1, 0]
  %gt = mesh.all_gather %t on @m axes = ["d"] gather_dim = 0 : tensor<16x16xf32> -> tensor<128x16xf32>
  %n = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.negf %in : f32
    linalg.yield %m : f32
  } -> tensor<16x16xf32>
  %gn = mesh.all_gather %n on @m axes = ["d"] gather_dim = 1 : tensor<16x16xf32> -> tensor<16x128xf32>
  %e2 = tensor.empty() : tensor<128x16xf32>
  %gnt = linalg.transpose ins(%gn : tensor<16x128xf32>) outs(%e2 : tensor<128x16xf32>) permutation = [1, 0]
  return %g, %gt, %gnt : tensor<128x16xf32>, tensor<128x16xf32>, tensor<128x16xf32>
}
