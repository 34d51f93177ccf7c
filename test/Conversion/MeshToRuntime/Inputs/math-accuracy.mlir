// approximate-math.mlir compiles and runs this: the math functions at the
// edges of their ranges, through loops on tensors as a program computes
// them, against values from numpy in f64 (each within 4e-7 relative, or
// equal for infinities).
//   exp(-88.7) = 3.0066355e-39 and exp(-89) = 2.2273636e-39 (subnormal
//     results: the approximation gave 0);
//   log(1e-40) = -92.103409 and log2(2^-149) = -149 (subnormal arguments:
//     it gave log(2^-126));
//   sin(1e20) = 0.65657668 and cos(1e10) = 0.87311962 (the approximation's
//     range reduction gave -inf; libm's is exact);
//   cbrt(inf) = inf (the approximation gave NaN);
//   asinh(2) = 1.4436355 (MathToLLVM cannot lower it);
//   f64 expm1(1e-20) = 1e-20 and log1p(-1e-10) = -1.00000000005e-10
//     (lowered as exp(x) - 1 and log(1 + x) they were 0 and 8e-18 off).
func.func @f32s(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = math.exp %x : tensor<8xf32>
  %l = math.log %x : tensor<8xf32>
  %l2 = math.log2 %x : tensor<8xf32>
  %s = math.sin %x : tensor<8xf32>
  %c = math.cos %x : tensor<8xf32>
  %r = math.cbrt %x : tensor<8xf32>
  %a = math.asinh %x : tensor<8xf32>
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %i3 = arith.constant 3 : index
  %i4 = arith.constant 4 : index
  %i5 = arith.constant 5 : index
  %i6 = arith.constant 6 : index
  %i7 = arith.constant 7 : index
  %v0 = tensor.extract %e[%i0] : tensor<8xf32>
  %v1 = tensor.extract %e[%i1] : tensor<8xf32>
  %v2 = tensor.extract %l[%i2] : tensor<8xf32>
  %v3 = tensor.extract %l2[%i3] : tensor<8xf32>
  %v4 = tensor.extract %s[%i4] : tensor<8xf32>
  %v5 = tensor.extract %c[%i5] : tensor<8xf32>
  %v6 = tensor.extract %r[%i6] : tensor<8xf32>
  %v7 = tensor.extract %a[%i7] : tensor<8xf32>
  %out = tensor.from_elements %v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7 : tensor<8xf32>
  return %out : tensor<8xf32>
}
func.func @f64s(%x: tensor<2xf64>) -> tensor<2xf64> {
  %m = math.expm1 %x : tensor<2xf64>
  %l = math.log1p %x : tensor<2xf64>
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %v0 = tensor.extract %m[%i0] : tensor<2xf64>
  %v1 = tensor.extract %l[%i1] : tensor<2xf64>
  %out = tensor.from_elements %v0, %v1 : tensor<2xf64>
  return %out : tensor<2xf64>
}
func.func @main() -> i32 {
  %x = arith.constant dense<[-88.7, -89.0, 1.0e-40, 1.40129846e-45, 1.0e20, 1.0e10, 0x7F800000, 2.0]> : tensor<8xf32>
  %want = arith.constant dense<[3.0066355e-39, 2.2273636e-39, -92.103409, -149.0, 0.65657668, 0.87311962, 0x7F800000, 1.4436355]> : tensor<8xf32>
  %got = func.call @f32s(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %tol = arith.constant 4.0e-7 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %g = tensor.extract %got[%i] : tensor<8xf32>
    %w = tensor.extract %want[%i] : tensor<8xf32>
    %d = arith.subf %g, %w : f32
    %ad = math.absf %d : f32
    %aw = math.absf %w : f32
    %bound = arith.mulf %aw, %tol : f32
    %close = arith.cmpf ole, %ad, %bound : f32
    %same = arith.cmpf oeq, %g, %w : f32
    %ok = arith.ori %close, %same : i1
    cf.assert %ok, "an f32 math function is off (see the list above)"
  }
  %xd = arith.constant dense<[1.0e-20, -1.0e-10]> : tensor<2xf64>
  %wd = arith.constant dense<[1.0e-20, -1.00000000005e-10]> : tensor<2xf64>
  %gd = func.call @f64s(%xd) : (tensor<2xf64>) -> tensor<2xf64>
  %told = arith.constant 1.0e-15 : f64
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %g = tensor.extract %gd[%i] : tensor<2xf64>
    %w = tensor.extract %wd[%i] : tensor<2xf64>
    %d = arith.subf %g, %w : f64
    %ad = math.absf %d : f64
    %aw = math.absf %w : f64
    %bound = arith.mulf %aw, %told : f64
    %ok = arith.cmpf ole, %ad, %bound : f64
    cf.assert %ok, "f64 expm1 or log1p lost digits for a small argument"
  }
  %rc = arith.constant 0 : i32
  return %rc : i32
}
