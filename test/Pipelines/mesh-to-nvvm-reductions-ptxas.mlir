// REQUIRES: ptxas
// Row reductions of every width the warp shuffles can carry become one
// block per row through the whole --mesh-to-nvvm pipeline (f16 and bf16
// combined in f32 across the block, f64 shuffled in two halves, i8 in i32),
// and elementwise kernels of f16 and f64 move 16 bytes per access; ptxas
// accepts the PTX.

// RUN: rm -rf %t && mkdir -p %t
// RUN: mesh-opt %s --mesh-to-nvvm="format=isa cuda-path=%cuda_path" > %t/widths.mlir
// RUN: %python %S/Inputs/extract-ptx.py %t/widths.mlir %t/ptx | FileCheck %s --check-prefix=COUNT
// RUN: %ptxas -arch=sm_90 %t/ptx/mesh_kernels.ptx -o /dev/null
// RUN: FileCheck %s --input-file=%t/ptx/mesh_kernels.ptx

// Seven programs, eleven kernels: one per row reduction (no serial
// kernel), two per elementwise program (16-byte accesses when the host
// finds the arguments aligned, one element per access otherwise), three
// for the sum of a whole matrix (the accumulator's zero, partial sums in
// parallel, then one block combining them).
// COUNT: extracted 1 PTX modules, 11 kernels

// Each reduction kernel: the block's tree is butterfly shuffles of 32-bit
// values, twice as many for f64.
// CHECK-LABEL: .entry sum_f16_kernel(
// CHECK: cvt.f32.f16
// CHECK-COUNT-5: shfl.sync.bfly.b32
// CHECK: cvt.rn.f16.f32
// CHECK-LABEL: .entry max_bf16_kernel(
// CHECK-COUNT-5: shfl.sync.bfly.b32
// CHECK-LABEL: .entry sum_f64_kernel(
// CHECK-COUNT-10: shfl.sync.bfly.b32
// CHECK-LABEL: .entry max_i8_kernel(
// CHECK-COUNT-5: shfl.sync.bfly.b32
// Elementwise: 8 halves, and 2 doubles, per 16-byte access.
// CHECK-LABEL: .entry scale_f16_kernel(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK-LABEL: .entry scale_f16_kernel_0(
// CHECK-NOT: .v4
// CHECK-LABEL: .entry neg_f64_kernel(
// CHECK: ld.global.v2.b64
// CHECK: st.global.v2.b64
// The whole matrix: 16384 slots of 32 elements, no shuffle; then a tree.
// CHECK-LABEL: .entry total_f32_kernel_2(
// CHECK-NOT: shfl
// CHECK-LABEL: .entry total_f32_kernel_3(
// CHECK-COUNT-5: shfl.sync.bfly.b32
func.func @sum_f16(%x: tensor<64x1024xf16>) -> tensor<64xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<64xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<64xf16>) -> tensor<64xf16>
  %r = linalg.reduce ins(%x : tensor<64x1024xf16>) outs(%f : tensor<64xf16>) dimensions = [1]
    (%a: f16, %b: f16) { %s = arith.addf %a, %b : f16
      linalg.yield %s : f16 }
  return %r : tensor<64xf16>
}
func.func @max_bf16(%x: tensor<64x1024xbf16>) -> tensor<64xbf16> {
  %z = arith.constant 0xFF80 : bf16
  %e = tensor.empty() : tensor<64xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<64xbf16>) -> tensor<64xbf16>
  %r = linalg.reduce ins(%x : tensor<64x1024xbf16>) outs(%f : tensor<64xbf16>) dimensions = [1]
    (%a: bf16, %b: bf16) { %s = arith.maximumf %a, %b : bf16
      linalg.yield %s : bf16 }
  return %r : tensor<64xbf16>
}
func.func @sum_f64(%x: tensor<64x1024xf64>) -> tensor<64xf64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<64xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<64xf64>) -> tensor<64xf64>
  %r = linalg.reduce ins(%x : tensor<64x1024xf64>) outs(%f : tensor<64xf64>) dimensions = [1]
    (%a: f64, %b: f64) { %s = arith.addf %a, %b : f64
      linalg.yield %s : f64 }
  return %r : tensor<64xf64>
}
func.func @max_i8(%x: tensor<64x1024xi8>) -> tensor<64xi8> {
  %z = arith.constant -128 : i8
  %e = tensor.empty() : tensor<64xi8>
  %f = linalg.fill ins(%z : i8) outs(%e : tensor<64xi8>) -> tensor<64xi8>
  %r = linalg.reduce ins(%x : tensor<64x1024xi8>) outs(%f : tensor<64xi8>) dimensions = [1]
    (%a: i8, %b: i8) { %s = arith.maxsi %a, %b : i8
      linalg.yield %s : i8 }
  return %r : tensor<64xi8>
}
func.func @scale_f16(%x: tensor<64x1024xf16>) -> tensor<64x1024xf16> {
  %two = arith.constant dense<2.0> : tensor<64x1024xf16>
  %y = arith.mulf %x, %two : tensor<64x1024xf16>
  return %y : tensor<64x1024xf16>
}
func.func @neg_f64(%x: tensor<64x1024xf64>) -> tensor<64x1024xf64> {
  %y = arith.negf %x : tensor<64x1024xf64>
  return %y : tensor<64x1024xf64>
}
func.func @total_f32(%x: tensor<512x1024xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%x : tensor<512x1024xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%a: f32, %b: f32) { %s = arith.addf %a, %b : f32
      linalg.yield %s : f32 }
  return %r : tensor<f32>
}
