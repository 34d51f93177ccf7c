// A program that stores bf16 (expand-bf16.mlir compiles and runs it): it
// links, and the truncation rounds to nearest even. 1 + 2^-8 lies halfway
// between 1 and the next bf16 (1 + 2^-7): even gives 1. 1 + 3 * 2^-8 lies
// halfway between 1 + 2^-7 and 1 + 2^-6: even gives 1 + 2^-6. 1 + 5 * 2^-9
// is nearer 1 + 2^-7. The values go through a function on tensors (the
// elementwise loops) and come back with arith.extf.
// @ops computes on bf16 (an add, a division, a square root) and on f16:
// each op in f32, rounded to bf16 to nearest even. (1 + 2^-7) + 2^-8 is
// the second tie above, 1 + 2^-6; 1 / 3 is
// 0x3EAAAAAB in f32, rounded up to 0x3EAB = 0.333984375; sqrt(2) is
// 0x3FB504F3, rounded down to 0x3FB5 = 1.4140625. In f16, sqrt(2) * 2 is
// 2.828125.
func.func @round(%a: tensor<3xf32>) -> tensor<3xbf16> {
  %b = arith.truncf %a : tensor<3xf32> to tensor<3xbf16>
  return %b : tensor<3xbf16>
}
func.func @ops(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %x = arith.truncf %a : tensor<4xf32> to tensor<4xbf16>
  %y = arith.truncf %b : tensor<4xf32> to tensor<4xbf16>
  %s = arith.addf %x, %y : tensor<4xbf16>
  %q = arith.divf %x, %y : tensor<4xbf16>
  %r = math.sqrt %y : tensor<4xbf16>
  %h = arith.truncf %b : tensor<4xf32> to tensor<4xf16>
  %hr = math.sqrt %h : tensor<4xf16>
  %hm = arith.mulf %hr, %h : tensor<4xf16>
  %s32 = arith.extf %s : tensor<4xbf16> to tensor<4xf32>
  %q32 = arith.extf %q : tensor<4xbf16> to tensor<4xf32>
  %r32 = arith.extf %r : tensor<4xbf16> to tensor<4xf32>
  %h32 = arith.extf %hm : tensor<4xf16> to tensor<4xf32>
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %i3 = arith.constant 3 : index
  %e1 = tensor.extract %s32[%i1] : tensor<4xf32>
  %e2 = tensor.extract %q32[%i2] : tensor<4xf32>
  %e3 = tensor.extract %r32[%i3] : tensor<4xf32>
  %e4 = tensor.extract %h32[%i3] : tensor<4xf32>
  %picked = tensor.from_elements %e1, %e2, %e3, %e4 : tensor<4xf32>
  return %picked : tensor<4xf32>
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
  %oa = arith.constant dense<[1.0078125, 1.0078125, 1.0, 1.0]> : tensor<4xf32>
  %ob = arith.constant dense<[0.00390625, 0.00390625, 3.0, 2.0]> : tensor<4xf32>
  %o = func.call @ops(%oa, %ob) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %owant = arith.constant dense<[1.015625, 0.333984375, 1.4140625, 2.828125]> : tensor<4xf32>
  %oeq = arith.cmpf oeq, %o, %owant : tensor<4xf32>
  %oeq0 = tensor.extract %oeq[%i0] : tensor<4xi1>
  cf.assert %oeq0, "bf16 (1 + 2^-7) + 2^-8 must round to 1 + 2^-6"
  %oeq1 = tensor.extract %oeq[%i1] : tensor<4xi1>
  cf.assert %oeq1, "bf16 1 / 3 must be 0.333984375"
  %oeq2 = tensor.extract %oeq[%i2] : tensor<4xi1>
  cf.assert %oeq2, "bf16 sqrt(2) must be 1.4140625"
  %i3 = arith.constant 3 : index
  %oeq3 = tensor.extract %oeq[%i3] : tensor<4xi1>
  cf.assert %oeq3, "f16 sqrt(2) * 2 must be 2.828125"
  %rc = arith.constant 0 : i32
  return %rc : i32
}
