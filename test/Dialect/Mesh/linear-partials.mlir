// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition | FileCheck %s

// An elementwise op linear in its operands that are pending sums over the
// same axes runs on the partial values, and its result is reduced once:
// sum_i (p_i - q_i) = P - Q. Partial sums here come from matmuls whose K
// dim is split over "b".

mesh.mesh @m(["a" = 2, "b" = 4])

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>

// partial - partial: one all_reduce of the difference, not one per operand.
// CHECK-LABEL: func.func @sub
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[Q:.*]] = linalg.matmul
// CHECK-NOT: mesh.all_reduce
// CHECK: %[[D:.*]] = arith.subf %[[P]], %[[Q]] : tensor<8x8xf32>
// CHECK: %[[R:.*]] = mesh.all_reduce %[[D]] on @m axes = ["b"] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NOT: mesh.all_reduce
// CHECK: return %[[R]]
func.func @sub(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
               %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = arith.subf %p, %q : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// torch-mlir's aten.sub (a - alpha * b, a generic), a product with a value
// that is not partial, and a sum with a third partial value: one
// reduce_scatter, onto the dim the result is split along.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: %[[C:[^:]*]]: tensor<4x8xf32>) -> tensor<4x2xf32>
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[Q:.*]] = linalg.matmul
// CHECK: %[[S:.*]] = linalg.matmul
// CHECK-NOT: mesh.
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[Q]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: %[[M:.*]] = arith.mulf %[[D]], %[[C]] : tensor<4x8xf32>
// CHECK: %[[A:.*]] = arith.addf %[[M]], %[[S]] : tensor<4x8xf32>
// CHECK: %[[R:.*]] = mesh.reduce_scatter %[[A]] on @m axes = ["b"] scatter_dim = 1 reduction = sum : tensor<4x8xf32> -> tensor<4x2xf32>
// CHECK-NOT: mesh.
// CHECK: return %[[R]]
func.func @chain(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
                 %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>, %w3: tensor<16x8xf32>,
                 %c: tensor<8x8xf32>) -> (tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = linalg.matmul ins(%x, %w3 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %q : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %alpha = arith.constant 1.0 : f32
    %t = arith.mulf %b, %alpha : f32
    %r = arith.subf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %m = arith.mulf %d, %c : tensor<8x8xf32>
  %r = arith.addf %m, %s : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// A partial row broadcast plus a partial matrix: one reduction of the
// matrix, not one of each.
// CHECK-LABEL: func.func @broadcast_plus
// CHECK: %[[V:.*]] = linalg.vecmat
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK-NOT: mesh.
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%[[V]], %[[P]] : tensor<8xf32>, tensor<8x8xf32>)
// CHECK: mesh.all_reduce %[[D]] on @m axes = ["b"] reduction = sum : tensor<8x8xf32>
// CHECK-NOT: mesh.
// CHECK: return
func.func @broadcast_plus(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                          %v: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>},
                          %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %f8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %pv = linalg.vecmat ins(%v, %w : tensor<16xf32>, tensor<16x8xf32>) outs(%f8 : tensor<8xf32>) -> tensor<8xf32>
  %p = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pv, %p : tensor<8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// Used inside a loop: reduced once, right after the op, not every step.
// CHECK-LABEL: func.func @in_loop
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[R:.*]] = mesh.all_reduce %[[D]]
// CHECK: scf.for
// CHECK-NOT: mesh.
// CHECK: arith.addf %{{.*}}, %[[R]]
func.func @in_loop(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                   %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>, %n: index) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = arith.subf %p, %q : tensor<8x8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %f) -> (tensor<8x8xf32>) {
    %a = arith.addf %acc, %d : tensor<8x8xf32>
    scf.yield %a : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}

// Not linear, or not cheaper: the operands are reduced first, as before.

// partial + replicated: every partial value would add the replicated one.
// CHECK-LABEL: func.func @plus_fixed
// CHECK-SAME: %[[C:[^:]*]]: tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[R:.*]] = mesh.all_reduce %[[P]]
// CHECK: arith.addf %[[R]], %[[C]]
func.func @plus_fixed(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                      %w1: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = arith.addf %p, %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// partial * partial.
// CHECK-LABEL: func.func @product
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[Q:.*]] = linalg.matmul
// CHECK: %[[RP:.*]] = mesh.all_reduce %[[P]]
// CHECK: %[[RQ:.*]] = mesh.all_reduce %[[Q]]
// CHECK: arith.mulf %[[RP]], %[[RQ]]
func.func @product(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                   %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = arith.mulf %p, %q : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// An operand also needed whole elsewhere is reduced anyway: reducing the
// difference too would be a third reduction.
// CHECK-LABEL: func.func @used_twice
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[Q:.*]] = linalg.matmul
// CHECK: %[[RP:.*]] = mesh.all_reduce %[[P]]
// CHECK: %[[RQ:.*]] = mesh.all_reduce %[[Q]]
// CHECK: %[[D:.*]] = arith.subf %[[RP]], %[[RQ]]
// CHECK-NOT: mesh.
// CHECK: return %[[D]], %[[RP]]
func.func @used_twice(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                      %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = arith.subf %p, %q : tensor<8x8xf32>
  return %d, %p : tensor<8x8xf32>, tensor<8x8xf32>
}

// A partial row broadcast times a matrix: the result is 8 times the row,
// so the row is reduced, not the product.
// CHECK-LABEL: func.func @broadcast_times
// CHECK: %[[V:.*]] = linalg.vecmat
// CHECK: %[[R:.*]] = mesh.all_reduce %[[V]] on @m axes = ["b"] reduction = sum : tensor<8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[R]], %{{.*}} : tensor<8xf32>, tensor<8x8xf32>)
// CHECK-NOT: mesh.
// CHECK: return
func.func @broadcast_times(%v: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>},
                           %w: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %f8 = linalg.fill ins(%z : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %pv = linalg.vecmat ins(%v, %w : tensor<16xf32>, tensor<16x8xf32>) outs(%f8 : tensor<8xf32>) -> tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pv, %c : tensor<8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// A generic that reads its init is not linear in its inputs alone.
// CHECK-LABEL: func.func @reads_init
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[Q:.*]] = linalg.matmul
// CHECK: mesh.all_reduce %[[P]]
// CHECK: mesh.all_reduce %[[Q]]
// CHECK: linalg.generic
func.func @reads_init(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                      %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = linalg.matmul ins(%x, %w2 : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %q : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.subf %a, %b : f32
    %r = arith.addf %t, %o : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}

// A flat gradient assembled from pending sums (FSDP's flat parameter, as
// scenario 02 keeps it): each piece inserted into zeros, one insert_slice
// after the other. insert_slice is linear in its source with a destination
// of zeros, and the pieces fill the buffer, so the buffer is reduced once,
// scattered, instead of each piece all_reduced whole (issue 30).
// CHECK-LABEL: func.func @flat_gradient
// CHECK-NOT: mesh.all_reduce
// CHECK: tensor.insert_slice
// CHECK: %[[F:.*]] = tensor.insert_slice
// CHECK-NOT: mesh.all_reduce
// CHECK: mesh.reduce_scatter %[[F]] on @m axes = ["b"] scatter_dim = 0 reduction = sum : tensor<16xf32> -> tensor<4xf32>
// CHECK-NOT: mesh.all
func.func @flat_gradient(%x1: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>},
                         %x2: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>})
    -> (tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %g1 = linalg.reduce ins(%x1 : tensor<16x8xf32>) outs(%z : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %g2 = linalg.reduce ins(%x2 : tensor<16x8xf32>) outs(%z : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %ef = tensor.empty() : tensor<16xf32>
  %zf = linalg.fill ins(%c0 : f32) outs(%ef : tensor<16xf32>) -> tensor<16xf32>
  %f1 = tensor.insert_slice %g1 into %zf[0] [8] [1] : tensor<8xf32> into tensor<16xf32>
  %f2 = tensor.insert_slice %g2 into %f1[8] [8] [1] : tensor<8xf32> into tensor<16xf32>
  return %f2 : tensor<16xf32>
}

// Not when the pieces leave most of the buffer empty (a piece of 8 in 32:
// reducing the buffer would move 4x the piece), nor into a destination
// that is not zeros (each partial value would carry it): the pieces are
// reduced.
// CHECK-LABEL: func.func @flat_sparse
// CHECK: mesh.all_reduce %{{.*}} : tensor<8xf32> -> tensor<8xf32>
// CHECK-LABEL: func.func @insert_into_values
// CHECK: mesh.all_reduce %{{.*}} : tensor<8xf32> -> tensor<8xf32>
func.func @flat_sparse(%x1: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>})
    -> (tensor<32xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %g1 = linalg.reduce ins(%x1 : tensor<16x8xf32>) outs(%z : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %ef = tensor.empty() : tensor<32xf32>
  %zf = linalg.fill ins(%c0 : f32) outs(%ef : tensor<32xf32>) -> tensor<32xf32>
  %f1 = tensor.insert_slice %g1 into %zf[0] [8] [1] : tensor<8xf32> into tensor<32xf32>
  return %f1 : tensor<32xf32>
}
func.func @insert_into_values(%x1: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>},
                              %d: tensor<16xf32>)
    -> (tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %g1 = linalg.reduce ins(%x1 : tensor<16x8xf32>) outs(%z : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %f1 = tensor.insert_slice %g1 into %d[0] [8] [1] : tensor<8xf32> into tensor<16xf32>
  return %f1 : tensor<16xf32>
}
