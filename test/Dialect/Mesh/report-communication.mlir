// RUN: mesh-opt %s --mesh-report-communication -o /dev/null 2>&1 | FileCheck %s
// RUN: not mesh-opt %s --mesh-report-communication=output=%t.missing/report -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: mesh-opt %s --mesh-report-communication=output=%t.report -o /dev/null && FileCheck %s < %t.report

// The bytes each device sends: all_reduce 2(n-1)/n B, all_gather (n-1) B,
// reduce_scatter and all_to_all (n-1)/n B, broadcast and permute B,
// all_slice 0; a dynamic size or a ? axis is unknown.

mesh.mesh @m(["a" = 2, "b" = 4])
mesh.mesh @d(["x" = ?])

// CHECK-LABEL: communication of @collectives:
// CHECK-NEXT: all_reduce on @m axes ["b"]: 128 x f32 (512 bytes), 768 bytes per device
// CHECK-NEXT: all_gather on @m axes ["a"]: 128 x f32 (512 bytes), 512 bytes per device
// CHECK-NEXT: reduce_scatter on @m axes ["a", "b"]: 256 x f32 (1024 bytes), 896 bytes per device
// CHECK-NEXT: all_to_all on @m axes ["b"]: 32 x f32 (128 bytes), 96 bytes per device
// CHECK-NEXT: broadcast on @m axes ["b"]: 32 x f32 (128 bytes), 128 bytes per device
// CHECK-NEXT: permute on @m axes ["b"]: 32 x f32 (128 bytes), 128 bytes per device
// CHECK-NEXT: all_slice on @m axes ["a"]: 32 x f32 (128 bytes), 0 bytes per device
// CHECK-NEXT: all_reduce on @m axes ["b"]: 16 x i1 (16 bytes), 24 bytes per device
// CHECK-NEXT: all_reduce on @d axes ["x"]: ? x i32 (? bytes), ? bytes per device
// CHECK-NEXT: all_reduce on @d axes ["x"]: 8 x i32 (32 bytes), ? bytes per device
// CHECK-NEXT: total: 10 collectives, 2552 bytes per device (2 of unknown size not counted)
func.func @collectives(%x: tensor<16x8xf32>, %y: tensor<?x8xi32>, %z: tensor<8xi32>, %m: tensor<16xi1>) -> tensor<16x8xf32> {
  %r = mesh.all_reduce %x on @m axes = ["b"] reduction = sum : tensor<16x8xf32> -> tensor<16x8xf32>
  %g = mesh.all_gather %r on @m axes = ["a"] gather_dim = 0 : tensor<16x8xf32> -> tensor<32x8xf32>
  %s = mesh.reduce_scatter %g on @m axes = ["a", "b"] scatter_dim = 0 reduction = sum : tensor<32x8xf32> -> tensor<4x8xf32>
  %t = mesh.all_to_all %s on @m axes = ["b"] split_dim = 1 concat_dim = 0 : tensor<4x8xf32> -> tensor<16x2xf32>
  %b = mesh.broadcast %s on @m axes = ["b"] root = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %p = mesh.permute %b on @m axes = ["b"] offset = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %l = mesh.all_slice %p on @m axes = ["a"] slice_dim = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  %k = mesh.all_reduce %m on @m axes = ["b"] reduction = or : tensor<16xi1> -> tensor<16xi1>
  %q = mesh.all_reduce %y on @d axes = ["x"] reduction = sum : tensor<?x8xi32> -> tensor<?x8xi32>
  %w = mesh.all_reduce %z on @d axes = ["x"] reduction = sum : tensor<8xi32> -> tensor<8xi32>
  return %r : tensor<16x8xf32>
}

// An index takes 8 bytes (the host's 64-bit integer), a complex number
// twice its part.
// CHECK-LABEL: communication of @element_sizes:
// CHECK-NEXT: all_gather on @m axes ["b"]: 64 x index (512 bytes), 1536 bytes per device
// CHECK-NEXT: all_gather on @m axes ["b"]: 64 x complex<f32> (512 bytes), 1536 bytes per device
// CHECK-NEXT: total: 2 collectives, 3072 bytes per device
func.func @element_sizes(%i: tensor<16x4xindex>, %c: tensor<16x4xcomplex<f32>>) -> (tensor<64x4xindex>, tensor<64x4xcomplex<f32>>) {
  %gi = mesh.all_gather %i on @m axes = ["b"] gather_dim = 0 : tensor<16x4xindex> -> tensor<64x4xindex>
  %gc = mesh.all_gather %c on @m axes = ["b"] gather_dim = 0 : tensor<16x4xcomplex<f32>> -> tensor<64x4xcomplex<f32>>
  return %gi, %gc : tensor<64x4xindex>, tensor<64x4xcomplex<f32>>
}

// ERR: error: cannot write the communication report: cannot open output file
