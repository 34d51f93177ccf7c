// RUN: mesh-opt %s --mesh-optimize-collectives -split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-optimize-collectives=combine-threshold=0 -split-input-file | FileCheck %s --check-prefix=NOCOMBINE

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
