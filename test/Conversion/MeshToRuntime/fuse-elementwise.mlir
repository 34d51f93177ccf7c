// RUN: mesh-opt %s --pass-pipeline='builtin.module(func.func(mesh-fuse-elementwise))' -split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-to-llvm -split-input-file | FileCheck %s --check-prefix=LOWERED

// Elementwise chains fuse as with linalg-fuse-elementwise-ops: one loop
// nest.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: arith.addi
// CHECK: arith.muli
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(i) -> (i)>
func.func @chain(%x: tensor<8xi32>) -> tensor<8xi32> {
  %e = tensor.empty() : tensor<8xi32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xi32>) outs(%e : tensor<8xi32>) {
  ^bb0(%in: i32, %out: i32):
    %s = arith.addi %in, %in : i32
    linalg.yield %s : i32
  } -> tensor<8xi32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<8xi32>) outs(%e : tensor<8xi32>) {
  ^bb0(%in: i32, %out: i32):
    %p = arith.muli %in, %in : i32
    linalg.yield %p : i32
  } -> tensor<8xi32>
  return %m : tensor<8xi32>
}

// -----

// An expand_shape of a pad with static sizes still moves above the pad.
// CHECK-LABEL: func.func @static_expand_of_pad
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [8, 1, 16] : tensor<8x16xi32> into tensor<8x1x16xi32>
// CHECK: tensor.pad %[[E]] low[0, 0, 1] high[0, 0, 1]
func.func @static_expand_of_pad(%x: tensor<8x16xi32>) -> tensor<8x1x18xi32> {
  %c0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c0 : i32
  } : tensor<8x16xi32> to tensor<8x18xi32>
  %e = tensor.expand_shape %p [[0, 1], [2]] output_shape [8, 1, 18] : tensor<8x18xi32> into tensor<8x1x18xi32>
  return %e : tensor<8x1x18xi32>
}

// -----

// With a size computed after the pad (as partitioning computes a dim's size
// split over a `?` axis), the expand_shape stays after the pad: MLIR 22's
// fold built the new expand_shape above the size ("operand #1 does not
// dominate this use"; found by gen_partition.py on ["a" = 2, "b" = ?]).
// CHECK-LABEL: func.func @dynamic_expand_of_pad
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 1] high[0, 1]
// CHECK: %[[N:.*]] = arith.divui
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [%[[N]], 1, 18] : tensor<?x18xi32> into tensor<?x1x18xi32>
// LOWERED-LABEL: llvm.func @dynamic_expand_of_pad
func.func @dynamic_expand_of_pad(%x: tensor<?x16xi32>, %devices: index) -> tensor<?x1x18xi32> {
  %c0 = arith.constant 0 : i32
  %c8 = arith.constant 8 : index
  %p = tensor.pad %x low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c0 : i32
  } : tensor<?x16xi32> to tensor<?x18xi32>
  %n = arith.divui %c8, %devices : index
  %e = tensor.expand_shape %p [[0, 1], [2]] output_shape [%n, 1, 18] : tensor<?x18xi32> into tensor<?x1x18xi32>
  return %e : tensor<?x1x18xi32>
}

// -----

// A producer read through a broadcast is not fused: it would be computed
// again for each element it is broadcast to (layer norm's rsqrt once per
// hidden column). Read once per element, it fuses.
// CHECK-LABEL: func.func @no_fusion_through_broadcast
// CHECK: linalg.generic
// CHECK: math.rsqrt
// CHECK: linalg.generic
// CHECK-NOT: math.rsqrt
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
#row = affine_map<(i, j) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
#id1 = affine_map<(i) -> (i)>
func.func @no_fusion_through_broadcast(%x: tensor<8x16xf32>, %v: tensor<8xf32>) -> tensor<8x16xf32> {
  %e1 = tensor.empty() : tensor<8xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%v : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.rsqrt %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %r : tensor<8x16xf32>, tensor<8xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<8x16xf32>
  %n = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %p = arith.addf %a, %a : f32
    linalg.yield %p : f32
  } -> tensor<8x16xf32>
  return %n : tensor<8x16xf32>
}

// -----

// Nothing fuses into a contraction (GELU's tanh would be computed once per
// output column), no reshape folds into it by expansion, and a transposed
// weight (torch-mlir's F.linear) is read through the product's indexing
// map instead of copied: the matmul becomes a generic on the weight itself.
// CHECK-LABEL: func.func @linear_after_gelu
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: math.tanh
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[G]]
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[C]], %{{.*}} : tensor<16x32xf32>, tensor<8x32xf32>)
// CHECK-NOT: math.tanh
// CHECK: tensor.expand_shape
// LOWERED-LABEL: llvm.func @linear_after_gelu
// LOWERED: llvm.call @meshrt_gemm
func.func @linear_after_gelu(%x: tensor<2x8x32xf32>, %w: tensor<8x32xf32>) -> tensor<2x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<2x8x32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x8x32xf32>) outs(%e3 : tensor<2x8x32xf32>) {
  ^bb0(%a: f32, %out: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2x8x32xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<2x8x32xf32> into tensor<16x32xf32>
  %et = tensor.empty() : tensor<32x8xf32>
  %wt = linalg.transpose ins(%w : tensor<8x32xf32>) outs(%et : tensor<32x8xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %m = linalg.matmul ins(%c, %wt : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 8, 8] : tensor<16x8xf32> into tensor<2x8x8xf32>
  return %r : tensor<2x8x8xf32>
}
