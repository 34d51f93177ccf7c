// mesh-auto-shard is exact with loops in the plan: every plan of three
// programs is enumerated (verify-exhaustive) and the plan's cost must equal
// the least cost of any plan that fits. A weight gathered for a loop of
// 100 steps (the partitioner puts the gather before the loop: priced
// once); a weight carried through a loop of 10 steps and updated from the
// batch: kept whole with no budget, its gradient reduced in each step under
// 6000 bytes, and split, gathered in every step, under 4500 (ten times a
// step's cost); an scf.while.

// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-FREE
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=6000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B6000
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=4500" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B4500
// RUN: not mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=100" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-NOFIT
// With no plan that fits, the smallest budget the error gives is the least
// memory of any enumerated plan.
// CHECK-NOFIT: the smallest budget that fits is {{.*}} ([[M1:[0-9]+]] bytes: a plan that holds every value at its least
// CHECK-NOFIT: exhaustive check: 108 plans; the least memory of one is [[M1]] bytes
// CHECK-NOFIT: the smallest budget that fits is {{.*}} ([[M2:[0-9]+]] bytes: a plan that holds every value at its least
// CHECK-NOFIT: exhaustive check: 3888 plans; the least memory of one is [[M2]] bytes
// CHECK-NOFIT: the smallest budget that fits is {{.*}} ([[M3:[0-9]+]] bytes: a plan that holds every value at its least
// CHECK-NOFIT: exhaustive check: 11664 plans; the least memory of one is [[M3]] bytes

// CHECK-FREE: exhaustive check: 108 plans, 108 fit; the least cost of one that fits is 11178240 ps; the plan costs 11178240 ps
// CHECK-FREE: exhaustive check: 3888 plans, 3888 fit; the least cost of one that fits is 12361600 ps; the plan costs 12361600 ps
// CHECK-FREE: exhaustive check: 11664 plans, 3888 fit; the least cost of one that fits is 10476160 ps; the plan costs 10476160 ps
// CHECK-B6000: exhaustive check: 108 plans, 108 fit; the least cost of one that fits is 11178240 ps; the plan costs 11178240 ps
// CHECK-B6000: exhaustive check: 3888 plans, 1224 fit; the least cost of one that fits is 114915200 ps; the plan costs 114915200 ps
// CHECK-B6000: exhaustive check: 11664 plans, 1224 fit; the least cost of one that fits is 20474240 ps; the plan costs 20474240 ps
// CHECK-B4500: exhaustive check: 108 plans, 108 fit; the least cost of one that fits is 11178240 ps; the plan costs 11178240 ps
// CHECK-B4500: exhaustive check: 3888 plans, 288 fit; the least cost of one that fits is 118428800 ps; the plan costs 118428800 ps
// CHECK-B4500: exhaustive check: 11664 plans, 288 fit; the least cost of one that fits is 21395840 ps; the plan costs 21395840 ps

mesh.mesh @m(["d" = 4])
func.func @hoist(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
                 %w: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x16xf32> {
  %z = arith.constant 0.0 : f32
  %lb = arith.constant 0 : index
  %ub = arith.constant 100 : index
  %one = arith.constant 1 : index
  %w2 = arith.mulf %w, %w : tensor<16x16xf32>
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h = linalg.matmul ins(%a, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
    scf.yield %h : tensor<8x16xf32>
  }
  return %r : tensor<8x16xf32>
}

// -----

mesh.mesh @m(["d" = 4])
func.func @forloop(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 10 : index
  %one = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %w0) -> (tensor<16x16xf32>) {
    %e = tensor.empty() : tensor<64x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
    %h = linalg.matmul ins(%x, %a : tensor<64x16xf32>, tensor<16x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
    %et = tensor.empty() : tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<64x16xf32>) outs(%et : tensor<16x64xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<16x16xf32>
    %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %g = linalg.matmul ins(%xt, %h : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %na = arith.subf %a, %g : tensor<16x16xf32>
    scf.yield %na : tensor<16x16xf32>
  }
  return %r : tensor<16x16xf32>
}

// -----

mesh.mesh @m(["d" = 4])
func.func @whileloop(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w: tensor<16x16xf32>, %n: index) -> tensor<16x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %acc = %w) : (index, tensor<16x16xf32>) -> (index, tensor<16x16xf32>) {
    %go = arith.cmpi slt, %i, %n : index
    scf.condition(%go) %i, %acc : index, tensor<16x16xf32>
  } do {
  ^bb0(%j: index, %a: tensor<16x16xf32>):
    %e = tensor.empty() : tensor<64x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
    %h = linalg.matmul ins(%x, %a : tensor<64x16xf32>, tensor<16x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
    %et = tensor.empty() : tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<64x16xf32>) outs(%et : tensor<16x64xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<16x16xf32>
    %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %g = linalg.matmul ins(%xt, %h : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %na = arith.subf %a, %g : tensor<16x16xf32>
    %j1 = arith.addi %j, %c1 : index
    scf.yield %j1, %na : index, tensor<16x16xf32>
  }
  return %r#1 : tensor<16x16xf32>
}
