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
