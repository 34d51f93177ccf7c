// A loop that carries a collective's result, with a barrier and a math call
// (fma, from libm): x = 1, then three all_reduces over "b" (4 members): 64.
// Then @in_place: an all_reduce and a broadcast of buffers computed here,
// which die at the collectives and are overwritten in place
// (mesh-collectives-in-place).
mesh.mesh @m(["a" = 2, "b" = 4])

/// `x` as f32.
func.func private @f32(%x: index) -> f32 {
  %i = arith.index_cast %x : index to i64
  %f = arith.sitofp %i : i64 to f32
  return %f : f32
}

/// Member (a, b) holds v = 10 * (a + 1) + b + 1 in 8 elements. The sum over
/// "b" is 40 * (a + 1) + 10; a broadcast over "b" from root 2 of 2 * v gives
/// 2 * (10 * (a + 1) + 3).
func.func private @in_place() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c10 = arith.constant 10 : index
  %c40 = arith.constant 40 : index
  %a = mesh.axis_index @m "a" : index
  %b = mesh.axis_index @m "b" : index
  %a1 = arith.addi %a, %c1 : index
  %a10 = arith.muli %a1, %c10 : index
  %ab = arith.addi %a10, %b : index
  %v = arith.addi %ab, %c1 : index
  %vf = func.call @f32(%v) : (index) -> f32
  %e = tensor.empty() : tensor<8xf32>
  %own = linalg.fill ins(%vf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %twice = arith.addf %own, %own : tensor<8xf32>
  %sum = mesh.all_reduce %own on @m axes = ["b"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %got_sum = tensor.extract %sum[%c7] : tensor<8xf32>
  %a40 = arith.muli %a1, %c40 : index
  %want_sum_i = arith.addi %a40, %c10 : index
  %want_sum = func.call @f32(%want_sum_i) : (index) -> f32
  %ok_sum = arith.cmpf oeq, %got_sum, %want_sum : f32
  cf.assert %ok_sum, "in-place all_reduce result"

  %bc = mesh.broadcast %twice on @m axes = ["b"] root = 2 : tensor<8xf32> -> tensor<8xf32>
  %got_bc = tensor.extract %bc[%c5] : tensor<8xf32>
  %root = arith.addi %a10, %c3 : index
  %want_bc_i = arith.muli %root, %c2 : index
  %want_bc = func.call @f32(%want_bc_i) : (index) -> f32
  %ok_bc = arith.cmpf oeq, %got_bc, %want_bc : f32
  cf.assert %ok_bc, "in-place broadcast result"
  return
}

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
  func.call @in_place() : () -> ()
  %z = arith.constant 0 : i32
  return %z : i32
}
