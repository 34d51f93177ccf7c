// RUN: mesh-opt %s --mesh-propagate-sharding=explain -verify-diagnostics -o /dev/null

mesh.mesh @m(["a" = 2, "b" = 4])

// expected-remark @+1 {{argument 0: #mesh.sharding<@m, [["b"]]> (from the annotation)}}
func.func @explain(%x: tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}, %unused: tensor<4xf32>) -> tensor<8xf32> {
  // expected-remark @-1 {{argument 1: #mesh.sharding<@m, [[]]> (replicated: nothing constrains it)}}
  // expected-remark @+1 {{result 0: #mesh.sharding<@m, [["b"]]> (propagated forward through 'math.exp'}}
  %y = math.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}
