// RUN: mesh-opt %s -split-input-file --mesh-auto-shard | FileCheck %s
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard --mesh-partition --mesh-optimize-collectives --mesh-report-communication -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-COMM

// Calls in an annotated function are inlined for the plan, as XLA inlines
// calls before partitioning: the partitioner gives a callee one layout for
// all its calls, and inlined, each call is planned for its own place. A
// private callee no call is left to is erased (as the inliner does); one
// that is public, or called from elsewhere, stays.

// A layer called twice, and a private helper it calls: both inlined and
// erased; each call's ops are laid out for its place (the batch).
// CHECK-LABEL: func.func @net(
// CHECK-NOT: func.call
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: math.tanh {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: math.tanh {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: return
// CHECK-NOT: @layer
// CHECK-NOT: @act
// CHECK-COMM-LABEL: communication of @net:
// CHECK-COMM-NEXT: total: 0 collectives, 0 bytes per device
mesh.mesh @m(["d" = 4])
func.func private @act(%h: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = math.tanh %h : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
func.func private @layer(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = func.call @act(%h) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
func.func @net(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %a = func.call @layer(%x, %w1) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %b = func.call @layer(%a, %w2) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// -----

// A call in a loop of 4 steps, to a public function that an unannotated
// function calls too: inlined in the loop, kept in the module, and left
// alone where it is not inlined. The weight is updated from the batch's
// product (the batch constrained in each step, as a training loop keeps
// each device's part): its gradient is reduce_scattered in each step, the weight kept
// split by rows through the loop (less memory than all_reduce, as fast).
// CHECK-LABEL: func.func @update(
// CHECK: scf.for
// CHECK-NOT: func.call
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[}}], []], partial = sum["d"]>}
// CHECK: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK-LABEL: func.func @grad(
// CHECK-NOT: mesh.sharding
// CHECK-LABEL: func.func @plain(
// CHECK: call @grad
// CHECK-COMM-LABEL: communication of @update:
// CHECK-COMM-NEXT: reduce_scatter on @m axes ["d"]: 256 x f32 (1024 bytes), 768 bytes per device
// CHECK-COMM-NEXT: total: 1 collective, 768 bytes per device
mesh.mesh @m(["d" = 4])
func.func @update(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%w = %w0) -> (tensor<16x16xf32>) {
    %xs = mesh.shard %x : tensor<64x16xf32> to #mesh.sharding<@m, [["d"], []]>
    %g = func.call @grad(%xs) : (tensor<64x16xf32>) -> tensor<16x16xf32>
    %nw = arith.subf %w, %g : tensor<16x16xf32>
    scf.yield %nw : tensor<16x16xf32>
  }
  return %r : tensor<16x16xf32>
}
func.func @grad(%x: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %z = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<16x64xf32>
  %xt = linalg.transpose ins(%x : tensor<64x16xf32>) outs(%et : tensor<16x64xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %g = linalg.matmul ins(%xt, %x : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %g : tensor<16x16xf32>
}
func.func @plain(%x: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %g = func.call @grad(%x) : (tensor<64x16xf32>) -> tensor<16x16xf32>
  return %g : tensor<16x16xf32>
}
