// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition | FileCheck %s

// Propagation and partitioning together.

mesh.mesh @m(["a" = 2, "b" = 4])

// A K-split matmul: partial over "b", reduced where the return needs it.
// CHECK-LABEL: func.func @kred
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @kred(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
                %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[F:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<4x8xf32>)
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x4xf32>, tensor<4x8xf32>) outs(%[[F]] : tensor<4x8xf32>)
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // The result keeps the matmul's sharding, including the pending reduction,
  // until someone needs it reduced.
  // CHECK: return %[[M]] : tensor<4x8xf32>
  return %m : tensor<8x8xf32>
}

// A convolution whose spatial dim is sharded: the window would cross device
// boundaries, so the input is gathered on that dim first.
// CHECK-LABEL: func.func @conv
func.func @conv(%in: tensor<1x10x10x3xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["a"], [], []]>},
                %k: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  // CHECK: %[[G:.*]] = mesh.all_gather %{{.*}} on @m axes = ["a"] gather_dim = 1 : tensor<1x5x10x3xf32> -> tensor<1x10x10x3xf32>
  // CHECK: linalg.conv_2d_nhwc_hwcf ins(%[[G]], %{{.*}} : tensor<1x10x10x3xf32>, tensor<3x3x3x8xf32>)
  %c = linalg.conv_2d_nhwc_hwcf ins(%in, %k : tensor<1x10x10x3xf32>, tensor<3x3x3x8xf32>) outs(%f : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %c : tensor<1x8x8x8xf32>
}

// An avg reduction annotated on a value finishes as an all_reduce avg.
// CHECK-LABEL: func.func @avg
func.func @avg(%x: tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [[]], partial = avg["b"]>})
    -> (tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [[]]>}) {
  // CHECK: mesh.all_reduce %{{.*}} on @m axes = ["b"] reduction = avg
  %y = math.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// A loop carries a sharded value; a partial init is reduced before the loop
// (loops carry complete values), and the body stays local.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[X:.*]]: tensor<8x2xf32>, %[[W:.*]]: tensor<2x8xf32>) -> tensor<8x8xf32>
func.func @loop(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["a", "b"]]>},
                %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<8x2xf32>, tensor<2x8xf32>)
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: %[[R:.*]] = mesh.all_reduce %[[M]] on @m axes = ["a", "b"] reduction = sum
  // CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[R]]) -> (tensor<8x8xf32>)
  // CHECK-NEXT: arith.mulf %[[ACC]], %[[ACC]] : tensor<8x8xf32>
  // CHECK-NOT: mesh.
  // CHECK: scf.yield
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %m) -> tensor<8x8xf32> {
    %y = arith.mulf %acc, %acc : tensor<8x8xf32>
    scf.yield %y : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}
