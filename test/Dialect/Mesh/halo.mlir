// RUN: mesh-opt %s --split-input-file --mesh-propagate-sharding | FileCheck %s --check-prefix=PROP
// RUN: mesh-opt %s --split-input-file --mesh-propagate-sharding --mesh-partition | FileCheck %s

// Halos (issue 13): a padded tensor that windows read keeps the sharding of
// what it pads, with the padding widths as its halo; partitioning fills each
// device's halo from its neighbours with mesh.permute (the devices at the
// ends keep the padding), dim after dim so that corners arrive.

mesh.mesh @m(["x" = 2, "y" = 4])

// A Jacobi step in a loop: the halos move every step, nothing is gathered.
// PROP-LABEL: func.func @jacobi
// PROP: tensor.pad
// PROP: mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], ["y"]], halo = {{\[\[}}1, 1], [1, 1]]>
// PROP: tensor.extract_slice {{.*}}[0, 1] [16, 16] [1, 1] {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], ["y"]]>}
// CHECK-LABEL: func.func @jacobi
// CHECK-SAME: (%[[U0:.*]]: tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: scf.for {{.*}} iter_args(%[[U:.*]] = %[[U0]]) -> (tensor<8x4xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[U]] low[1, 1] high[1, 1]
// CHECK: } : tensor<8x4xf32> to tensor<10x6xf32>
// Low halo of dim 0: the last row of the previous device's block.
// CHECK: %[[X:.*]] = mesh.axis_index @m "x"
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[P]][8, 0] [1, 6] [1, 1]
// CHECK: %[[R0:.*]] = mesh.permute %[[S0]] on @m axes = ["x"] offset = 1 : tensor<1x6xf32> -> tensor<1x6xf32>
// The first device keeps the pad's zeros: the constant, not read back from
// the border (which mesh-pad-in-place then need not fill).
// CHECK: %[[K0:.*]] = arith.constant dense<0.000000e+00> : tensor<1x6xf32>
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[X]], %{{.*}} : index
// CHECK: %[[H0:.*]] = arith.select %[[FIRST]], %[[K0]], %[[R0]] : tensor<1x6xf32>
// CHECK: %[[P1:.*]] = tensor.insert_slice %[[H0]] into %[[P]][0, 0] [1, 6] [1, 1]
// High halo of dim 0: the first row of the next device's block.
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[P1]][1, 0] [1, 6] [1, 1]
// CHECK: mesh.permute %[[S1]] on @m axes = ["x"] offset = -1
// CHECK: %[[P2:.*]] = tensor.insert_slice %{{.*}} into %[[P1]][9, 0] [1, 6] [1, 1]
// Dim 1 moves whole columns of 10, the new rows included: the corners.
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[P2]][0, 4] [10, 1] [1, 1]
// CHECK: mesh.permute %[[S2]] on @m axes = ["y"] offset = 1 : tensor<10x1xf32> -> tensor<10x1xf32>
// CHECK: mesh.permute %{{.*}} on @m axes = ["y"] offset = -1 : tensor<10x1xf32> -> tensor<10x1xf32>
// CHECK: %[[P4:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 5] [10, 1] [1, 1]
// CHECK: tensor.extract_slice %[[P4]][0, 1] [8, 4] [1, 1] : tensor<10x6xf32> to tensor<8x4xf32>
// CHECK: tensor.extract_slice %[[P4]][2, 1] [8, 4] [1, 1]
// CHECK: tensor.extract_slice %[[P4]][1, 0] [8, 4] [1, 1]
// CHECK: tensor.extract_slice %[[P4]][1, 2] [8, 4] [1, 1]
// CHECK: scf.yield %{{.*}} : tensor<8x4xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: return
func.func @jacobi(%u0: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>})
    -> (tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>}) {
  %zero = arith.constant 0.0 : f32
  %quarter = arith.constant dense<0.25> : tensor<16x16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %r = scf.for %i = %c0 to %c100 step %c1 iter_args(%u = %u0) -> (tensor<16x16xf32>) {
    %p = tensor.pad %u low[1, 1] high[1, 1] {
    ^bb0(%a: index, %b: index):
      tensor.yield %zero : f32
    } : tensor<16x16xf32> to tensor<18x18xf32>
    %n = tensor.extract_slice %p[0, 1] [16, 16] [1, 1] : tensor<18x18xf32> to tensor<16x16xf32>
    %s = tensor.extract_slice %p[2, 1] [16, 16] [1, 1] : tensor<18x18xf32> to tensor<16x16xf32>
    %w = tensor.extract_slice %p[1, 0] [16, 16] [1, 1] : tensor<18x18xf32> to tensor<16x16xf32>
    %e = tensor.extract_slice %p[1, 2] [16, 16] [1, 1] : tensor<18x18xf32> to tensor<16x16xf32>
    %ns = arith.addf %n, %s : tensor<16x16xf32>
    %we = arith.addf %w, %e : tensor<16x16xf32>
    %sum = arith.addf %ns, %we : tensor<16x16xf32>
    %next = arith.mulf %sum, %quarter : tensor<16x16xf32>
    scf.yield %next : tensor<16x16xf32>
  }
  return %r : tensor<16x16xf32>
}

// -----

mesh.mesh @m(["x" = 2, "y" = 4])

// A convolution with stride 2 on an input padded by one: H splits over "x"
// (4 output rows, 8 input rows each), W over "y" (2 and 4); the input's
// halo is the padding, [1, 1] on both.
// PROP-LABEL: func.func @conv_s2
// PROP: halo = {{\[\[}}0, 0], [1, 1], [1, 1], [0, 0]]
// CHECK-LABEL: func.func @conv_s2
// CHECK-SAME: (%{{.*}}: tensor<2x8x4x3xf32>, %{{.*}}: tensor<3x3x3x4xf32>) -> tensor<2x4x2x4xf32>
// CHECK: } : tensor<2x8x4x3xf32> to tensor<2x10x6x3xf32>
// CHECK-COUNT-2: mesh.permute %{{.*}} on @m axes = ["x"] offset = {{-?1}} : tensor<2x1x6x3xf32>
// CHECK-COUNT-2: mesh.permute %{{.*}} on @m axes = ["y"] offset = {{-?1}} : tensor<2x10x1x3xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}ins(%{{.*}}, %{{.*}} : tensor<2x10x6x3xf32>, tensor<3x3x3x4xf32>) outs(%{{.*}} : tensor<2x4x2x4xf32>)
func.func @conv_s2(%in: tensor<2x16x16x3xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["x"], ["y"], []]>},
                   %k: tensor<3x3x3x4xf32>) -> tensor<2x8x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %in low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x16x16x3xf32> to tensor<2x18x18x3xf32>
  %e = tensor.empty() : tensor<2x8x8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %k : tensor<2x18x18x3xf32>, tensor<3x3x3x4xf32>) outs(%f : tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  return %c : tensor<2x8x8x4xf32>
}

// -----

mesh.mesh @m(["x" = 8])

// Blocks of 2 rows cannot hold a halo of 3: the padded dim is not split
// (its source is gathered first), as before halos.
// PROP-LABEL: func.func @too_wide
// PROP: tensor.pad
// PROP: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}]]>} : tensor<16xf32> to
// CHECK-LABEL: func.func @too_wide
// CHECK: mesh.all_gather %{{.*}} on @m axes = ["x"] gather_dim = 0 : tensor<2xf32> -> tensor<16xf32>
// CHECK-NOT: mesh.permute
func.func @too_wide(%u: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %u low[3] high[3] {
  ^bb0(%a: index):
    tensor.yield %zero : f32
  } : tensor<16xf32> to tensor<22xf32>
  %l = tensor.extract_slice %p[0] [16] [1] : tensor<22xf32> to tensor<16xf32>
  %r = tensor.extract_slice %p[6] [16] [1] : tensor<22xf32> to tensor<16xf32>
  %s = arith.addf %l, %r : tensor<16xf32>
  return %s : tensor<16xf32>
}

// -----

mesh.mesh @m(["x" = 4])

// A padded dim also read by an op that is not a window keeps no factor.
// PROP-LABEL: func.func @not_only_windows
// PROP: tensor.pad
// PROP: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}]]>} : tensor<16xf32> to
// CHECK-LABEL: func.func @not_only_windows
// CHECK-NOT: mesh.permute
// CHECK: return
func.func @not_only_windows(%u: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) -> (tensor<16xf32>, tensor<18xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %u low[1] high[1] {
  ^bb0(%a: index):
    tensor.yield %zero : f32
  } : tensor<16xf32> to tensor<18xf32>
  %l = tensor.extract_slice %p[0] [16] [1] : tensor<18xf32> to tensor<16xf32>
  %d = arith.addf %p, %p : tensor<18xf32>
  return %l, %d : tensor<16xf32>, tensor<18xf32>
}

// -----

mesh.mesh @m(["x" = 8])

// Two projections that once shared a cache key (a halo [2, 0] on an
// unsplit dim 1, and [1, 2] on dim 0 split over "x"): each pad keeps its
// own layout.
// PROP-LABEL: func.func @halo_on_unsplit_dim
// PROP: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], []]>} : tensor<16x16xf32> to tensor<16x18xf32>
// PROP-LABEL: func.func @halo_on_split_dim
// PROP: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], []], halo = {{\[\[}}1, 2], [0, 0]]>} : tensor<16x16xf32> to tensor<19x16xf32>
// CHECK-LABEL: func.func @halo_on_split_dim
// CHECK: } : tensor<2x16xf32> to tensor<5x16xf32>
func.func @halo_on_unsplit_dim(%u: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %u low[0, 2] high[0, 0] {
  ^bb0(%a: index, %b: index):
    tensor.yield %zero : f32
  } : tensor<16x16xf32> to tensor<16x18xf32>
  %l = tensor.extract_slice %p[0, 0] [16, 16] [1, 1] : tensor<16x18xf32> to tensor<16x16xf32>
  %r = tensor.extract_slice %p[0, 2] [16, 16] [1, 1] : tensor<16x18xf32> to tensor<16x16xf32>
  %s = arith.addf %l, %r : tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}
func.func @halo_on_split_dim(%u: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %u low[1, 0] high[2, 0] {
  ^bb0(%a: index, %b: index):
    tensor.yield %zero : f32
  } : tensor<16x16xf32> to tensor<19x16xf32>
  %l = tensor.extract_slice %p[0, 0] [16, 16] [1, 1] : tensor<19x16xf32> to tensor<16x16xf32>
  %r = tensor.extract_slice %p[3, 0] [16, 16] [1, 1] : tensor<19x16xf32> to tensor<16x16xf32>
  %s = arith.addf %l, %r : tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}

// -----

mesh.mesh @m(["a" = ?, "b" = 4])

// A halo on dim 1 beside a dim 0 split over a `?` axis, whose per-device
// size is dynamic: the slabs exchanged, and those of the halos dropped for
// the slice asked without them, take dim 0's size from the tensor (found by
// gen_partition.py on ["a" = ?, "b" = 4]: they were given no size operand).
// CHECK-LABEL: func.func @halo_beside_unknown_axis
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 2] high[0, 1]
// CHECK: } : tensor<?x4xi32> to tensor<?x7xi32>
// CHECK: %[[D:.*]] = tensor.dim %[[P]], %{{.*}} : tensor<?x7xi32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[P]][0, 4] [%[[D]], 2] [1, 1] : tensor<?x7xi32> to tensor<?x2xi32>
// CHECK: mesh.permute %[[S]] on @m axes = ["b"] offset = 1 : tensor<?x2xi32> -> tensor<?x2xi32>
// CHECK: mesh.permute %{{.*}} on @m axes = ["b"] offset = -1 : tensor<?x1xi32> -> tensor<?x1xi32>
// CHECK: %[[F:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 6] [%{{.*}}, 1] [1, 1] : tensor<?x1xi32> into tensor<?x7xi32>
// CHECK: %[[D2:.*]] = tensor.dim %[[F]], %{{.*}} : tensor<?x7xi32>
// CHECK: %[[B:.*]] = tensor.extract_slice %[[F]][0, 0] [%[[D2]], 4] [1, 1] : tensor<?x7xi32> to tensor<?x4xi32>
// CHECK: mesh.all_gather %[[B]] on @m axes = ["b"] gather_dim = 1 : tensor<?x4xi32> -> tensor<?x16xi32>
// CHECK: mesh.broadcast %{{.*}} on @m axes = ["b"] root = 3 : tensor<?x3xi32> -> tensor<?x3xi32>
func.func @halo_beside_unknown_axis(%x: tensor<8x16xi32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) -> tensor<8x16xi32> {
  %c0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 2] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c0 : i32
  } : tensor<8x16xi32> to tensor<8x19xi32>
  %s = tensor.extract_slice %p[0, 2] [8, 16] [1, 1] : tensor<8x19xi32> to tensor<8x16xi32>
  %t = tensor.extract_slice %p[0, 1] [8, 16] [1, 1] {mesh.sharding = #mesh.sharding<@m, [["a"], []]>} : tensor<8x19xi32> to tensor<8x16xi32>
  %r = arith.addi %s, %t : tensor<8x16xi32>
  return %r : tensor<8x16xi32>
}
