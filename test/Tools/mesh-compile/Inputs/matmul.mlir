// A 2x2 product of ones through the BLAS; main prints the sum of its
// elements (8).
func.func private @printI64(i64)
func.func private @printNewline()
func.func @main() -> i32 {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %a = linalg.fill ins(%one : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = linalg.matmul ins(%a, %a : tensor<2x2xf32>, tensor<2x2xf32>) outs(%c : tensor<2x2xf32>) -> tensor<2x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v00 = tensor.extract %m[%c0, %c0] : tensor<2x2xf32>
  %v01 = tensor.extract %m[%c0, %c1] : tensor<2x2xf32>
  %v10 = tensor.extract %m[%c1, %c0] : tensor<2x2xf32>
  %v11 = tensor.extract %m[%c1, %c1] : tensor<2x2xf32>
  %s0 = arith.addf %v00, %v01 : f32
  %s1 = arith.addf %v10, %v11 : f32
  %s = arith.addf %s0, %s1 : f32
  %i = arith.fptosi %s : f32 to i64
  func.call @printI64(%i) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %r = arith.constant 0 : i32
  return %r : i32
}
