// A global program: the sum of a 16-element tensor sharded over 8 devices
// (partition.test).
mesh.mesh @world(["x" = 8])
func.func @total(%a: tensor<16xf32> {mesh.sharding = #mesh.sharding<@world, [["x"]]>}) -> tensor<f32> {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %s = linalg.reduce ins(%a : tensor<16xf32>) outs(%zero : tensor<f32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
    }
  return %s : tensor<f32>
}
