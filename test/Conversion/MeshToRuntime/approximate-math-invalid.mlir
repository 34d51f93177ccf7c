// RUN: mesh-opt %s --pass-pipeline="builtin.module(func.func(mesh-approximate-math))" -verify-diagnostics

// Math on tensors is refused with a message (MLIR's approximations built
// invalid IR for it: a compare of a tensor with a scalar constant).
func.func @on_tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'math.exp' op is on tensors: mesh-approximate-math takes math on scalars and vectors}}
  %e = math.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}
