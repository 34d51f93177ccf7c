// RUN: mesh-opt %s -split-input-file --mesh-auto-shard | FileCheck %s
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard > %t.1 && mesh-opt %s -split-input-file --mesh-auto-shard > %t.2 && diff %t.1 %t.2

// mesh-auto-shard writes a sharding on every argument, result and op result
// of a function the user annotated, and leaves the others alone. The same
// input gives the same output (the second RUN).

// The batch decides an elementwise chain: every value is split as x is,
// and y, free, is split alike (of plans that cost the same, the one that
// holds less memory).
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}, %{{.*}}: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}) -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>})
// CHECK: arith.addf {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: arith.mulf {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: math.exp {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK-LABEL: func.func @untouched(%{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} : tensor<8x16xf32>
mesh.mesh @m(["d" = 4])
func.func @chain(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = arith.addf %x, %y : tensor<8x16xf32>
  %b = arith.mulf %a, %a : tensor<8x16xf32>
  %c = math.exp %b : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}
func.func @untouched(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = arith.addf %x, %x : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}

// -----

// A sum over the split dim: each device sums its rows (a partial sum,
// reduce-scattered into the layout the user gave the negation); the result
// takes that layout. Values that need no data (the fill) are left to
// propagation, and a user's annotation on an op is kept.
// CHECK-LABEL: func.func @rowsum(
// CHECK-SAME: -> (tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"]]>})
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8xf32>) -> tensor<8xf32>
// CHECK: %[[S:.*]] = linalg.reduce {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}]], partial = sum["d"]>}
// CHECK: arith.negf %[[S]] {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"]]>}
mesh.mesh @m(["d" = 4])
func.func @rowsum(%x: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.reduce ins(%x : tensor<16x8xf32>) outs(%f : tensor<8xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %n = arith.negf %s {mesh.sharding = #mesh.sharding<@m, [["d"]]>} : tensor<8xf32>
  return %n : tensor<8xf32>
}
