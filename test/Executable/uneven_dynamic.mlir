// A global program with a dynamic dim of 12 sharded over 8 devices: the
// partitioned tensor.empty must stop the program ("does not divide"), never
// give each rank a silently truncated block (issue 14). even_dynamic.mlir is
// the same with 16, which divides and sums to 16.
mesh.mesh @world(["x" = 8])
func.func private @twelve() -> index {
  %c = arith.constant 12 : index
  return %c : index
}
func.func @main() -> i32 {
  %n = call @twelve() : () -> index
  %e = tensor.empty(%n) : tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %s = mesh.shard %f : tensor<?xf32> to #mesh.sharding<@world, [["x"]]>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %r = linalg.reduce ins(%s : tensor<?xf32>) outs(%zero : tensor<f32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  %v = tensor.extract %r[] : tensor<f32>
  %want = arith.constant 12.0 : f32
  %ok = arith.cmpf oeq, %v, %want : f32
  cf.assert %ok, "the sum of twelve ones"
  %z = arith.constant 0 : i32
  return %z : i32
}
