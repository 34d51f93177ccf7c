// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition --mesh-report-communication -o /dev/null 2>&1 | FileCheck %s

mesh.mesh @m(["a" = 2, "b" = 4])

// A partitioned plan: a contraction split over "b" is reduced once; the
// function without collectives reports none.
// CHECK-LABEL: communication of @contraction:
// CHECK-NEXT: all_reduce on @m axes ["b"]: 128 x f32 (512 bytes), 768 bytes per device
// CHECK-NEXT: total: 1 collective, 768 bytes per device
func.func @contraction(%a: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                       %w: tensor<32x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>})
    -> (tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %r = linalg.matmul ins(%a, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}
// CHECK-LABEL: communication of @local:
// CHECK-NEXT: total: 0 collectives, 0 bytes per device
func.func @local(%a: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"]]>})
    -> (tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"]]>}) {
  %t = math.tanh %a : tensor<16xf32>
  return %t : tensor<16xf32>
}

