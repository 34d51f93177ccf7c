// A loop that carries a collective's result, with a barrier and a math call
// (fma, from libm): x = 1, then three all_reduces over "b" (4 members): 64.
mesh.mesh @m(["a" = 2, "b" = 4])
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %x0 = arith.constant dense<1.0> : tensor<4xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %x0) -> tensor<4xf32> {
    %y = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    mesh.barrier on @m axes = ["a", "b"]
    %t = math.fma %y, %y, %y : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %e = tensor.extract %r[%c0] : tensor<4xf32>
  %want = arith.constant 64.0 : f32
  %ok = arith.cmpf oeq, %e, %want : f32
  cf.assert %ok, "loop result"
  %z = arith.constant 0 : i32
  return %z : i32
}
