// RUN: mesh-opt %s --mesh-convolutions-to-gemm=report -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mesh-opt %s --mesh-convolutions-to-gemm="max-columns-bytes=4000" -split-input-file | FileCheck %s --check-prefix=TILED
// RUN: mesh-opt %s --mesh-to-llvm -split-input-file | FileCheck %s --check-prefix=LLVM
// RUN: mesh-opt %s --mesh-to-llvm="blas=false" -split-input-file | FileCheck %s --check-prefix=NOBLAS

// NHWC with an HWCF filter: the windows copied into [N, OH, OW, KH, KW, C]
// (each index the input's plus the window's offset: no division), seen as
// a [N, OH*OW, KH*KW*C] matrix, one contraction with the [KH*KW*C, F]
// filter into [N, OH*OW, F].
// Its columns need 2 * 8 * 8 * 27 * 4 = 13,824 bytes, 864 per output row;
// within 4,000 bytes the convolution runs per image, 4 output rows (the
// largest divisor of 8 within 4,000 / 864) at a time, on 6 input rows.
// Through --mesh-to-llvm it is one GEMM call (over the images) that
// overwrites the output: the zero fill is folded across the copy.
// CHECK: #[[$WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 + d3, d2 + d4, d5)>
// CHECK-LABEL: func.func @nhwc
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] : tensor<3x3x3x4xf32> into tensor<27x4xf32>
// CHECK-NOT: tensor<2x64x27xf32>
// CHECK: %[[WIN:.*]] = linalg.generic {indexing_maps = [#[[$WINDOW]], {{.*}} ins(%{{.*}} : tensor<2x10x10x3xf32>) outs(%{{.*}} : tensor<2x8x8x3x3x3xf32>)
// CHECK: %[[COLS:.*]] = tensor.collapse_shape %[[WIN]] {{\[\[}}0], [1, 2], [3, 4, 5]] : tensor<2x8x8x3x3x3xf32> into tensor<2x64x27xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[COLS]], %{{.*}} : tensor<2x64x27xf32>, tensor<27x4xf32>) outs(%{{.*}} : tensor<2x64x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.expand_shape {{.*}} into tensor<2x8x8x4xf32>
// CHECK-NOT: linalg.conv
// TILED-LABEL: func.func @nhwc
// TILED: scf.for %{{.*}} = %c0 to %c2 step %c1
// TILED: scf.for %{{.*}} = %c0{{.*}} to %c8 step %c4
// TILED: tensor.extract_slice %{{.*}} [1, 6, 10, 3] [1, 1, 1, 1] : tensor<2x10x10x3xf32> to tensor<1x6x10x3xf32>
// TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x8x3x3x3xf32>)
// TILED: tensor.collapse_shape {{.*}} into tensor<1x32x27xf32>
// TILED: tensor.insert_slice
// LLVM-LABEL: llvm.func @nhwc
// LLVM: %[[F32:.*]] = llvm.mlir.constant(2 : i32) : i32
// LLVM-NEXT: %[[OVERWRITE:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM: llvm.call @meshrt_gemm(%[[F32]], {{.*}}, %[[OVERWRITE]]) :
// LLVM-NOT: llvm.call @meshrt_gemm(
// LLVM: llvm.return
// NOBLAS-LABEL: llvm.func @nhwc
// NOBLAS-NOT: meshrt_gemm
func.func @nhwc(%x: tensor<2x10x10x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<2x8x8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  // expected-remark @+1 {{as an im2col copy and a contraction}}
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%x, %w : tensor<2x10x10x3xf32>, tensor<3x3x3x4xf32>) outs(%f : tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  return %y : tensor<2x8x8x4xf32>
}

// -----

// NCHW with an FCHW filter, stride 2; NHWC with an FHWC filter, stride 2
// in rows only (f64). Both become a copy and a contraction.
// CHECK-DAG: #[[$NCHW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-DAG: #[[$NHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 + d4, d5)>
// CHECK-LABEL: func.func @nchw_and_fhwc
// CHECK: linalg.generic {indexing_maps = [#[[$NCHW]], {{.*}} outs(%{{.*}} : tensor<1x3x3x3x4x4xf32>)
// CHECK: tensor.collapse_shape {{.*}} {{\[\[}}0], [1, 2, 3], [4, 5]] : tensor<1x3x3x3x4x4xf32> into tensor<1x27x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$NHWC]], {{.*}} outs(%{{.*}} : tensor<1x3x4x3x3x3xf64>)
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x12x27xf64>
// CHECK-NOT: linalg.conv
func.func @nchw_and_fhwc(%x: tensor<1x3x9x9xf32>, %w: tensor<2x3x3x3xf32>, %o: tensor<1x2x4x4xf32>,
                         %x2: tensor<1x8x6x3xf64>, %w2: tensor<5x3x3x3xf64>, %o2: tensor<1x3x4x5xf64>)
    -> (tensor<1x2x4x4xf32>, tensor<1x3x4x5xf64>) {
  // expected-remark @+1 {{as an im2col copy and a contraction}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
     ins(%x, %w : tensor<1x3x9x9xf32>, tensor<2x3x3x3xf32>) outs(%o : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  // expected-remark @+1 {{as an im2col copy and a contraction}}
  %y2 = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}
     ins(%x2, %w2 : tensor<1x8x6x3xf64>, tensor<5x3x3x3xf64>) outs(%o2 : tensor<1x3x4x5xf64>) -> tensor<1x3x4x5xf64>
  return %y, %y2 : tensor<1x2x4x4xf32>, tensor<1x3x4x5xf64>
}

// -----

// Left as they are: integers (the BLAS has no integer GEMM of these),
// mixed element types, a dynamic batch, a dilation of 2, and a depthwise
// convolution (not one this pass rewrites: no remark).
// CHECK-LABEL: func.func @kept
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x6x6x2xi32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x6x6x2xf16>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<?x6x6x2xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x2x2x2xf32>
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
func.func @kept(%xi: tensor<1x6x6x2xi32>, %wi: tensor<3x3x2x2xi32>, %oi: tensor<1x4x4x2xi32>,
                %xh: tensor<1x6x6x2xf16>, %wh: tensor<3x3x2x2xf16>, %oh: tensor<1x4x4x2xf32>,
                %xd: tensor<?x6x6x2xf32>, %wd: tensor<3x3x2x2xf32>, %od: tensor<?x4x4x2xf32>,
                %wdw: tensor<3x3x2xf32>, %odw: tensor<1x4x4x2xf32>, %xs: tensor<1x6x6x2xf32>,
                %og: tensor<1x2x2x2xf32>) {
  // expected-remark @+1 {{kept as a convolution: element type i32 (the GEMM takes f16, bf16, f32 and f64)}}
  %a = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%xi, %wi : tensor<1x6x6x2xi32>, tensor<3x3x2x2xi32>) outs(%oi : tensor<1x4x4x2xi32>) -> tensor<1x4x4x2xi32>
  // expected-remark @+1 {{kept as a convolution: mixed element types}}
  %b = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%xh, %wh : tensor<1x6x6x2xf16>, tensor<3x3x2x2xf16>) outs(%oh : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  // expected-remark @+1 {{kept as a convolution: a dynamic shape}}
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%xd, %wd : tensor<?x6x6x2xf32>, tensor<3x3x2x2xf32>) outs(%od : tensor<?x4x4x2xf32>) -> tensor<?x4x4x2xf32>
  // expected-remark @+1 {{kept as a convolution: a dilation other than 1 (MLIR's im2col takes unit dilations)}}
  %g = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%xs, %wd : tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) outs(%og : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%xs, %wdw : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%odw : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  return
}
