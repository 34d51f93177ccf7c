// A program that stores bf16 (expand-bf16.mlir compiles and runs it): it
// links, and the truncation rounds to nearest even. 1 + 2^-8 lies halfway
// between 1 and the next bf16 (1 + 2^-7): even gives 1. 1 + 3 * 2^-8 lies
// halfway between 1 + 2^-7 and 1 + 2^-6: even gives 1 + 2^-6. 1 + 5 * 2^-9
// is nearer 1 + 2^-7. The values go through a function on tensors (the
// elementwise loops) and come back with arith.extf.
func.func @round(%a: tensor<3xf32>) -> tensor<3xbf16> {
  %b = arith.truncf %a : tensor<3xf32> to tensor<3xbf16>
  return %b : tensor<3xbf16>
}
func.func @main() -> i32 {
  %a = arith.constant dense<[1.00390625, 1.01171875, 1.009765625]> : tensor<3xf32>
  %b = func.call @round(%a) : (tensor<3xf32>) -> tensor<3xbf16>
  %c = arith.extf %b : tensor<3xbf16> to tensor<3xf32>
  %want = arith.constant dense<[1.0, 1.015625, 1.0078125]> : tensor<3xf32>
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %ok = arith.constant true
  %g0 = tensor.extract %c[%i0] : tensor<3xf32>
  %w0 = tensor.extract %want[%i0] : tensor<3xf32>
  %e0 = arith.cmpf oeq, %g0, %w0 : f32
  cf.assert %e0, "1 + 2^-8 must round to 1"
  %g1 = tensor.extract %c[%i1] : tensor<3xf32>
  %w1 = tensor.extract %want[%i1] : tensor<3xf32>
  %e1 = arith.cmpf oeq, %g1, %w1 : f32
  cf.assert %e1, "1 + 3 * 2^-8 must round to 1 + 2^-6"
  %g2 = tensor.extract %c[%i2] : tensor<3xf32>
  %w2 = tensor.extract %want[%i2] : tensor<3xf32>
  %e2 = arith.cmpf oeq, %g2, %w2 : f32
  cf.assert %e2, "1 + 5 * 2^-9 must round to 1 + 2^-7"
  %rc = arith.constant 0 : i32
  return %rc : i32
}
