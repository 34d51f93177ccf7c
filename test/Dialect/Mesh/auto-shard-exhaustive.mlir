// mesh-auto-shard is exact: on programs of up to 4 layers, every plan is
// enumerated (verify-exhaustive) and the plan's cost must equal the least
// cost of any plan that fits the budget. Budgets from none to the least
// that fits, so that the unconstrained minimum, the Lagrangian search and
// the branch and bound are each what decides some case. A plan said to be
// optimal that an enumerated plan beats is an error, which fails the run.

// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-FREE
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=4500" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B4500
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=4000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B4000
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=3600" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B3600
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="verify-exhaustive memory-per-device=2900" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B2900
// RUN: not mesh-opt %s -split-input-file --mesh-auto-shard="memory-per-device=1000 verify-exhaustive" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B1000
// RUN: not mesh-opt %s -split-input-file --mesh-auto-shard="memory-per-device=2815 verify-exhaustive" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B2815
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard="memory-per-device=2816 verify-exhaustive" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-B2816

// CHECK-FREE: remark: mesh-auto-shard: exhaustive check: 62208 plans, 62208 fit; the least cost of one that fits is [[C1:[0-9]+]] ps; the plan costs [[C1]] ps
// CHECK-FREE: remark: mesh-auto-shard: exhaustive check: 186624 plans, 186624 fit; the least cost of one that fits is [[C2:[0-9]+]] ps; the plan costs [[C2]] ps
// CHECK-FREE: remark: mesh-auto-shard: exhaustive check: {{[0-9]+}} plans, {{[0-9]+}} fit; the least cost of one that fits is [[C3:[0-9]+]] ps; the plan costs [[C3]] ps
// CHECK-B4500: 62208 plans, 55680 fit; the least cost of one that fits is [[C1:[0-9]+]] ps; the plan costs [[C1]] ps
// CHECK-B4500: the least cost of one that fits is [[C2:[0-9]+]] ps; the plan costs [[C2]] ps
// CHECK-B4500: the least cost of one that fits is [[C3:[0-9]+]] ps; the plan costs [[C3]] ps
// CHECK-B4000: 62208 plans, 38016 fit; the least cost of one that fits is [[C1:[0-9]+]] ps; the plan costs [[C1]] ps
// CHECK-B4000: the least cost of one that fits is [[C2:[0-9]+]] ps; the plan costs [[C2]] ps
// CHECK-B4000: the least cost of one that fits is [[C3:[0-9]+]] ps; the plan costs [[C3]] ps
// CHECK-B3600: 62208 plans, 24576 fit; the least cost of one that fits is [[C1:[0-9]+]] ps; the plan costs [[C1]] ps
// CHECK-B3600: the least cost of one that fits is [[C2:[0-9]+]] ps; the plan costs [[C2]] ps
// CHECK-B3600: the least cost of one that fits is [[C3:[0-9]+]] ps; the plan costs [[C3]] ps
// CHECK-B2900: 62208 plans, 768 fit; the least cost of one that fits is [[C1:[0-9]+]] ps; the plan costs [[C1]] ps
// CHECK-B2900: the least cost of one that fits is [[C2:[0-9]+]] ps; the plan costs [[C2]] ps
// CHECK-B2900: the least cost of one that fits is [[C3:[0-9]+]] ps; the plan costs [[C3]] ps
// No plan fits: the error gives the smallest budget that does (here every
// value's least block is possible at once, so it is exact) and what is live
// at the peak of a plan that holds it; the enumeration's least memory of
// any plan must be that budget (else verify-exhaustive fails the run).
// CHECK-B1000: error: mesh-auto-shard: no plan fits 1000 B (1000 bytes) per device: the smallest budget that fits is 2.75 KiB ([[M1:[0-9]+]] bytes: a plan that holds every value at its least; what is live at its peak follows)
// CHECK-B1000-NEXT: peak memory: 2.75 KiB per device (2816 bytes; 2.25 KiB of arguments, 512 B live at 'linalg.matmul'
// CHECK-B1000-NEXT: 256 B: 'linalg.matmul' at
// CHECK-B1000: remark: mesh-auto-shard: exhaustive check: 62208 plans; the least memory of one is [[M1]] bytes
// CHECK-B1000: smallest budget that fits is 1.62 KiB ([[M2:[0-9]+]] bytes
// CHECK-B1000: remark: mesh-auto-shard: exhaustive check: 186624 plans; the least memory of one is [[M2]] bytes
// CHECK-B1000: smallest budget that fits is 2.50 KiB ([[M3:[0-9]+]] bytes
// CHECK-B1000: remark: mesh-auto-shard: exhaustive check: 139968 plans; the least memory of one is [[M3]] bytes
// One byte less than the first program's smallest budget: no plan fits; at
// that budget, the plan fits and is the cheapest of the 768 that do.
// CHECK-B2815: no plan fits 2.75 KiB (2815 bytes) per device: the smallest budget that fits is 2.75 KiB (2816 bytes
// CHECK-B2816: 62208 plans, 768 fit; the least cost of one that fits is [[C1:[0-9]+]] ps; the plan costs [[C1]] ps

// Four layers, 16 features, batch 8 over "d" = 2.
mesh.mesh @m(["d" = 2])
func.func @chain4(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
    %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>, %w3: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h1 = linalg.matmul ins(%h0, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h2 = linalg.matmul ins(%h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h3 = linalg.matmul ins(%h2, %w3 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %h3 : tensor<8x16xf32>
}

// -----

// Two layers on a 2-D mesh: every axis may take any factor.
mesh.mesh @m(["a" = 2, "b" = 2])
func.func @chain2_2d(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>},
    %w0: tensor<16x32xf32>, %w1: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x32xf32>
  %f0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e1 = tensor.empty() : tensor<8x16xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h1 = linalg.matmul ins(%h0, %w1 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %h1 : tensor<8x16xf32>
}

// -----

// Three layers with ReLUs between, and a training-style tie: the last
// weight is carried to the second result.
mesh.mesh @m(["d" = 2])
func.func @relu3(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
    %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32> {mesh.carried = 1 : i64})
    -> (tensor<8x16xf32>, tensor<16x16xf32>) {
  %c0 = arith.constant 0.0 : f32
  %z = arith.constant dense<0.0> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %a0 = arith.maximumf %h0, %z : tensor<8x16xf32>
  %h1 = linalg.matmul ins(%a0, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %a1 = arith.maximumf %h1, %z : tensor<8x16xf32>
  %h2 = linalg.matmul ins(%a1, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %n = arith.addf %w2, %w2 : tensor<16x16xf32>
  return %h2, %n : tensor<8x16xf32>, tensor<16x16xf32>
}
