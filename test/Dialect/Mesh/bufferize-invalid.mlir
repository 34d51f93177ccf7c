// RUN: mesh-opt %s -verify-diagnostics -one-shot-bufferize="bufferize-function-boundaries"

// What one-shot bufferization of the collectives rejects. The collective's
// result is a new buffer, not the operand's, so a loop that carries it is not
// equivalent to its iter_arg; one-shot bufferization then needs
// allow-return-allocs-from-loops, which --mesh-to-llvm sets (bufferize.mlir
// shows the loop bufferized with it).
//
// The implementation's own error, "expected a memref buffer for the
// collective's input", is for an operand whose buffer type is not a memref;
// the builtin tensor types mesh-opt has always bufferize to memrefs, so no
// input here reaches it.

mesh.mesh @world(["replicate" = 2, "shard" = 4])

func.func @loop_carries_result(%x: tensor<16xf32>, %n: index) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %y = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<16xf32>) {
    %r = mesh.all_reduce %a on @world axes = ["shard"] reduction = sum : tensor<16xf32> -> tensor<16xf32>
    // expected-error @+1 {{Yield operand #0 is not equivalent to the corresponding iter bbArg}}
    scf.yield %r : tensor<16xf32>
  }
  return %y : tensor<16xf32>
}
