// RUN: mesh-opt %s --mesh-to-llvm | FileCheck %s --check-prefix=CHECK-BLAS
// RUN: mesh-opt %s --mesh-to-llvm=blas=false | FileCheck %s --check-prefix=CHECK-LOOPS

// --mesh-to-llvm computes a tensor matmul with the runtime's BLAS GEMM, the
// fill of its zero accumulator folded into the call; blas=false keeps the
// loops (and the fill).
// The fill leaves no store behind (the call overwrites), and no loop
// multiplies.
// CHECK-BLAS-LABEL: llvm.func @mm
// CHECK-BLAS-NOT: llvm.store
// CHECK-BLAS: llvm.call @meshrt_gemm
// CHECK-BLAS-NOT: llvm.store
// CHECK-BLAS-NOT: llvm.fmul
// CHECK-LOOPS-LABEL: llvm.func @mm
// CHECK-LOOPS-NOT: meshrt_gemm
// CHECK-LOOPS: llvm.store
// CHECK-LOOPS: llvm.fmul
// CHECK-LOOPS: llvm.fadd
func.func @mm(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// A mixed-precision product (f16 inputs, f32 accumulator, the spelling of a
// named op whose body widens its inputs) is one meshrt_gemm_mixed call with
// the zero fill folded, not the loops of the product and their bf16/f16
// conversions per multiply; blas=false keeps the loops.
// CHECK-BLAS-LABEL: llvm.func @mm_mixed
// CHECK-BLAS-NOT: llvm.store
// CHECK-BLAS: llvm.call @meshrt_gemm_mixed
// CHECK-BLAS-NOT: llvm.fmul
// CHECK-BLAS: llvm.return
// CHECK-LOOPS-LABEL: llvm.func @mm_mixed
// CHECK-LOOPS-NOT: meshrt_gemm
// CHECK-LOOPS: llvm.fpext
// CHECK-LOOPS: llvm.fmul
func.func @mm_mixed(%a: tensor<8x16xf16>, %b: tensor<16x4xf16>) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf16>, tensor<16x4xf16>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// An int8 product into i32 (a quantized layer) is one meshrt_gemm_mixed
// call with the fill of its integer zero folded (no store before it), not
// loops of integer multiplies.
// CHECK-BLAS-LABEL: llvm.func @mm_int8
// CHECK-BLAS-NOT: llvm.store
// CHECK-BLAS: llvm.call @meshrt_gemm_mixed
// CHECK-BLAS-NOT: llvm.mul
// CHECK-BLAS: llvm.return
// CHECK-LOOPS-LABEL: llvm.func @mm_int8
// CHECK-LOOPS-NOT: meshrt_gemm
// CHECK-LOOPS: llvm.mul
func.func @mm_int8(%a: tensor<8x16xi8>, %b: tensor<16x4xi8>) -> tensor<8x4xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x4xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<8x4xi32>) -> tensor<8x4xi32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xi8>, tensor<16x4xi8>) outs(%f : tensor<8x4xi32>) -> tensor<8x4xi32>
  return %m : tensor<8x4xi32>
}
