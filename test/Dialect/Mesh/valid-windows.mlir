// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition --mesh-optimize-collectives -split-input-file 2>/dev/null | FileCheck %s
// RUN: mesh-opt %s --mesh-propagate-sharding -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: not mesh-opt %s --mesh-propagate-sharding=exact-division --mesh-partition -split-input-file 2>&1 | FileCheck %s --check-prefix=EXACT

// A valid convolution (no padding: 16 rows in, 14 out) on an input split
// by rows over 4 devices: the 14 output rows do not divide, so before they
// were computed whole and the input gathered. The output rows are padded
// to the input's blocks (16, blocks of 4, the last holding 2 real rows),
// the input padded after its end to match (18 rows, its padding read only
// by padded outputs), and each device computes its block from its own rows
// and the 2-row halo its neighbour sends: one permute. The result's own
// annotation (14 over 4) pads the signature, and the padded rows are
// returned as they are.

mesh.mesh @m(["x" = 4])

// REMARK: valid-windows.mlir:[[# @LINE + 16]]:8: remark: loop 1 of size 14 reads an input through a window whose dim is split over the 4 devices of axes #mesh<axes["x"]>: padded to 16 (blocks of 4)
// CHECK-LABEL: func.func @valid_conv
// CHECK-SAME: (%[[IN:.*]]: tensor<1x4x8x2xf32>, %{{.*}}: tensor<3x3x2x2xf32>) -> tensor<1x4x6x2xf32>
// CHECK: %[[P:.*]] = tensor.pad %[[IN]] low[0, 0, 0, 0] high[0, 2, 0, 0]
// CHECK: mesh.permute %{{.*}} on @m axes = ["x"] offset = -1 : tensor<1x2x8x2xf32> -> tensor<1x2x8x2xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: %[[O:.*]] = linalg.conv_2d_nhwc_hwcf ins(%{{.*}}, %{{.*}} : tensor<1x6x8x2xf32>, tensor<3x3x2x2xf32>) outs(%{{.*}} : tensor<1x4x6x2xf32>)
// CHECK-NEXT: return %[[O]] : tensor<1x4x6x2xf32>
// With exact-division nothing is padded: the uneven result is an error,
// and the stack below gathers its input, as before.
// EXACT: error: result 0 of @valid_conv of type 'tensor<1x14x6x2xf32>' cannot be sharded as #mesh.sharding<@m, {{\[}}[], ["x"], [], []]>: dim 1 of size 14 does not divide by the 4 devices
func.func @valid_conv(%in: tensor<1x16x8x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}, %f: tensor<3x3x2x2xf32>)
    -> (tensor<1x14x6x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}) {
  %e = tensor.empty() : tensor<1x14x6x2xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf ins(%in, %f : tensor<1x16x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  return %o : tensor<1x14x6x2xf32>
}

// -----

// Two valid convolutions in a row and a sum over the result (a loss): the
// second reads the first's padded output as it is (its padding feeds only
// padded outputs), each exchanges its halo, and the sum masks the padded
// rows before its all_reduce.

mesh.mesh @m(["x" = 4])

// CHECK-LABEL: func.func @stack
// EXACT-LABEL: func.func @stack
// EXACT: mesh.all_gather
// CHECK: mesh.permute %{{.*}} on @m axes = ["x"] offset = -1 : tensor<1x2x8x2xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x4x6x2xf32>)
// CHECK: mesh.permute %{{.*}} on @m axes = ["x"] offset = -1 : tensor<1x2x6x2xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x4x4x2xf32>)
// CHECK: arith.select
// CHECK: linalg.reduce
// CHECK: mesh.all_reduce %{{.*}} on @m axes = ["x"]
// CHECK-NOT: mesh.all_gather
// CHECK: return
func.func @stack(%in: tensor<1x16x8x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}, %f: tensor<3x3x2x2xf32>)
    -> (tensor<f32> {mesh.sharding = #mesh.sharding<@m, []>}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x14x6x2xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf ins(%in, %f : tensor<1x16x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %e2 = tensor.empty() : tensor<1x12x4x2xf32>
  %i2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x12x4x2xf32>) -> tensor<1x12x4x2xf32>
  %o2 = linalg.conv_2d_nhwc_hwcf ins(%o, %f : tensor<1x14x6x2xf32>, tensor<3x3x2x2xf32>) outs(%i2 : tensor<1x12x4x2xf32>) -> tensor<1x12x4x2xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%z : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%o2 : tensor<1x12x4x2xf32>) outs(%s1 : tensor<f32>) dimensions = [0, 1, 2, 3]
    (%a: f32, %b: f32) {
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
    }
  return %s : tensor<f32>
}

// -----

// A 2-tap stencil written as a linalg.generic (x[i + k] * w[k]), 64
// elements over 8 devices, 63 outputs, the result replicated: a one-element
// halo, then the output gathered for the replicated result. Stride 2: 7
// outputs of 16 rows over 4, blocks of 2, the same 2-row halo.

mesh.mesh @m2(["a" = 2, "x" = 4])
mesh.mesh @m(["x" = 4])

#in = affine_map<(i, k) -> (i + k)>
#w = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>
// CHECK-LABEL: func.func @stencil_1d
// CHECK: mesh.permute %{{.*}} on @m2 axes = ["a", "x"] offset = -1 : tensor<1xf32> -> tensor<1xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<9xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<8xf32>)
// The result's 63 rows are gathered, not its padding.
// CHECK: mesh.all_gather %{{.*}} on @m2 axes = ["a", "x"] gather_dim = 0 valid = 63 : tensor<8xf32> -> tensor<64xf32>
func.func @stencil_1d(%x: tensor<64xf32> {mesh.sharding = #mesh.sharding<@m2, [["a", "x"]]>}, %w: tensor<2xf32>) -> tensor<63xf32> {
  %e = tensor.empty() : tensor<63xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<63xf32>) -> tensor<63xf32>
  %o = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<64xf32>, tensor<2xf32>) outs(%i : tensor<63xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<63xf32>
  return %o : tensor<63xf32>
}

// CHECK-LABEL: func.func @strided
// CHECK: mesh.permute %{{.*}} on @m axes = ["x"] offset = -1 : tensor<1x2x8x2xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x2x3x2xf32>)
func.func @strided(%in: tensor<1x16x8x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}, %f: tensor<3x3x2x2xf32>) -> tensor<1x7x3x2xf32> {
  %e = tensor.empty() : tensor<1x7x3x2xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x7x3x2xf32>) -> tensor<1x7x3x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf {strides = dense<2> : tensor<2xi64>} ins(%in, %f : tensor<1x16x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x7x3x2xf32>) -> tensor<1x7x3x2xf32>
  return %o : tensor<1x7x3x2xf32>
}

// -----

// The output rows divide (16 of 18 over 2): the loop is split as it is, in
// its own blocks of 8, which the result's annotation asks for; the input,
// in blocks of 9, is shifted to them: each device sends one row to its
// neighbour each way, nothing gathered.

mesh.mesh @m(["x" = 2])

// REMARK-NOT: loop 1 of size 16 reads
// CHECK-LABEL: func.func @output_divides
// CHECK-NOT: mesh.all_gather
// CHECK: mesh.permute %{{.*}} offset = 1 : tensor<1x1x8x2xf32>
// CHECK: mesh.permute %{{.*}} offset = -1 : tensor<1x1x8x2xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}ins(%{{.*}}, %{{.*}} : tensor<1x10x8x2xf32>, {{.*}}) outs(%{{.*}} : tensor<1x8x6x2xf32>)
func.func @output_divides(%in: tensor<1x18x8x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}, %f: tensor<3x3x2x2xf32>)
    -> (tensor<1x16x6x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}) {
  %e = tensor.empty() : tensor<1x16x6x2xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x6x2xf32>) -> tensor<1x16x6x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf ins(%in, %f : tensor<1x18x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x16x6x2xf32>) -> tensor<1x16x6x2xf32>
  return %o : tensor<1x16x6x2xf32>
}

// -----

// Where padding the window would fail, the window is left as it was (the
// input gathered), never an error: an L1 loss (|x| summed) cannot mask
// padded rows. A stencil whose other input reads the loop backwards
// (62 - i) would read before its start. A prefix the user sliced of a
// larger tensor is not read through (16 rows of 1024 are not padded to
// 1024 outputs).

mesh.mesh @m(["x" = 4])
mesh.mesh @m8(["x" = 8])

// CHECK-LABEL: func.func @l1_loss
// CHECK: mesh.all_gather
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x14x6x2xf32>)
func.func @l1_loss(%in: tensor<1x16x8x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}, %f: tensor<3x3x2x2xf32>)
    -> (tensor<f32> {mesh.sharding = #mesh.sharding<@m, []>}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x14x6x2xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf ins(%in, %f : tensor<1x16x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%z : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> ()>], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%o : tensor<1x14x6x2xf32>) outs(%s1 : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = math.absf %x : f32
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// CHECK-LABEL: func.func @backwards
// CHECK: mesh.all_gather
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<63xf32>)
func.func @backwards(%x: tensor<64xf32> {mesh.sharding = #mesh.sharding<@m8, [["x"]]>}, %y: tensor<63xf32>, %w: tensor<2xf32>) -> tensor<63xf32> {
  %e = tensor.empty() : tensor<63xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<63xf32>) -> tensor<63xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i + k)>, affine_map<(i, k) -> (62 - i)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %y, %w : tensor<64xf32>, tensor<63xf32>, tensor<2xf32>) outs(%i : tensor<63xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %q = arith.addf %p, %b : f32
    %s = arith.addf %acc, %q : f32
    linalg.yield %s : f32
  } -> tensor<63xf32>
  return %o : tensor<63xf32>
}

// CHECK-LABEL: func.func @user_prefix
// CHECK-NOT: tensor<1x1024x6x2xf32>
// CHECK: return
func.func @user_prefix(%in: tensor<1x1024x8x2xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}, %f: tensor<3x3x2x2xf32>) -> tensor<1x14x6x2xf32> {
  %s = tensor.extract_slice %in[0, 0, 0, 0] [1, 16, 8, 2] [1, 1, 1, 1] : tensor<1x1024x8x2xf32> to tensor<1x16x8x2xf32>
  %e = tensor.empty() : tensor<1x14x6x2xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf ins(%s, %f : tensor<1x16x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  return %o : tensor<1x14x6x2xf32>
}

// -----

// H over 2 (14 outputs: blocks of 7, the input's rows shifted to them) beside
// W over 4 (6 outputs of 8: padded, a halo): one permute for W's halo, two of
// one row for H's shift, nothing gathered (before: both dims gathered).

mesh.mesh @m24(["a" = 2, "b" = 4])

// CHECK-LABEL: func.func @shift_beside_padded
// CHECK-NOT: mesh.all_gather
// CHECK-COUNT-3: mesh.permute
// CHECK-NOT: mesh.all_gather
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}ins(%{{.*}}, %{{.*}} : tensor<1x9x4x2xf32>, {{.*}}) outs(%{{.*}} : tensor<1x7x2x2xf32>)
// REMARK: remark: result 0 of @shift_beside_padded: dim 2 of size 6 does not divide by the 4 devices
func.func @shift_beside_padded(%in: tensor<1x16x8x2xf32> {mesh.sharding = #mesh.sharding<@m24, [[], ["a"], ["b"], []]>}, %f: tensor<3x3x2x2xf32>)
    -> (tensor<1x14x6x2xf32> {mesh.sharding = #mesh.sharding<@m24, [[], ["a"], ["b"], []]>}) {
  %e = tensor.empty() : tensor<1x14x6x2xf32>
  %z = arith.constant 0.0 : f32
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  %o = linalg.conv_2d_nhwc_hwcf ins(%in, %f : tensor<1x16x8x2xf32>, tensor<3x3x2x2xf32>) outs(%i : tensor<1x14x6x2xf32>) -> tensor<1x14x6x2xf32>
  return %o : tensor<1x14x6x2xf32>
}
