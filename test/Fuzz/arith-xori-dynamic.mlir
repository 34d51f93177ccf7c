// A record of an upstream LLVM 22 bug (test/Fuzz/upstream/README.md), run
// on mlir-opt itself: arith's folder turns xori(x, x) on a dynamically
// shaped tensor into a constant of that dynamic type, which prints but does
// not parse. When this test fails, upstream has fixed it: drop the record.
// RUN: mlir-opt %s --canonicalize | FileCheck %s
// RUN: mlir-opt %s --canonicalize | not mlir-opt 2>&1 | FileCheck %s --check-prefix=REPARSE

// CHECK: arith.constant dense<0> : tensor<?xi32>
// REPARSE: error: elements literal type must have static shape
func.func @x(%a: tensor<?xi32>) -> tensor<?xi32> {
  %0 = arith.xori %a, %a : tensor<?xi32>
  return %0 : tensor<?xi32>
}
