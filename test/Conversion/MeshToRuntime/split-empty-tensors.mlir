// RUN: mesh-opt %s --pass-pipeline='builtin.module(func.func(mesh-split-empty-tensors))' | FileCheck %s

// Each use of a shared tensor.empty gets its own, right before the user
// (dynamic sizes included, in a region too), and the shared one is gone; a
// single-use one is left alone.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: (%[[N:[^:]*]]: index
// CHECK-NEXT: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT: %[[A:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?xf32>)
// CHECK-NEXT: %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT: %[[B:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<?xf32>)
// CHECK: scf.if
// CHECK-NEXT: %[[E2:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<?xf32>)
// CHECK: %[[S:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NOT: tensor.empty
// CHECK: return
func.func @shared(%n: index, %x: f32, %y: f32, %c: i1) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<4xf32>) {
  %e = tensor.empty(%n) : tensor<?xf32>
  %a = linalg.fill ins(%x : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %b = linalg.fill ins(%y : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = scf.if %c -> tensor<?xf32> {
    %f = linalg.fill ins(%x : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    scf.yield %f : tensor<?xf32>
  } else {
    scf.yield %a : tensor<?xf32>
  }
  %s = tensor.empty() : tensor<4xf32>
  %t = linalg.fill ins(%x : f32) outs(%s : tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %r, %t : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<4xf32>
}
