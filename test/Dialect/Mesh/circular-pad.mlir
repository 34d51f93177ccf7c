// RUN: mesh-opt %s --split-input-file --mesh-propagate-sharding | FileCheck %s --check-prefix=PROP
// RUN: mesh-opt %s --split-input-file --mesh-propagate-sharding --mesh-partition | FileCheck %s
// RUN: mesh-opt %s --split-input-file --mesh-propagate-sharding --mesh-partition --mesh-prepare-for-bufferization | FileCheck %s --check-prefix=LOWER

// Periodic halos (issue 13): mesh.circular_pad pads with the other end of
// each dim. Sharded on a padded dim that windows read, each device's halos
// come from its neighbours with mesh.permute ... rotate: the first and last
// devices are neighbours, and no device keeps what it made.

mesh.mesh @m(["x" = 2, "y" = 4])

// A Jacobi step on a torus, in a loop: halos move every step, nothing is
// gathered, no device is an edge.
// PROP-LABEL: func.func @torus
// PROP: mesh.circular_pad {{.*}} low = [1, 1] high = [1, 1] {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], ["y"]], halo = {{\[\[}}1, 1], [1, 1]]>}
// CHECK-LABEL: func.func @torus
// CHECK-SAME: (%[[U0:.*]]: tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: scf.for {{.*}} iter_args(%[[U:.*]] = %[[U0]]) -> (tensor<8x4xf32>)
// CHECK: %[[P:.*]] = mesh.circular_pad %[[U]] low = [1, 1] high = [1, 1] : tensor<8x4xf32> -> tensor<10x6xf32>
// CHECK-NOT: arith.select
// Low halo of dim 0: the last row of the previous device's block; device 0
// takes the last device's.
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[P]][8, 0] [1, 6] [1, 1]
// CHECK: %[[R0:.*]] = mesh.permute %[[S0]] on @m axes = ["x"] offset = 1 rotate : tensor<1x6xf32> -> tensor<1x6xf32>
// CHECK: %[[P1:.*]] = tensor.insert_slice %[[R0]] into %[[P]][0, 0] [1, 6] [1, 1]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[P1]][1, 0] [1, 6] [1, 1]
// CHECK: %[[R1:.*]] = mesh.permute %[[S1]] on @m axes = ["x"] offset = -1 rotate
// CHECK: %[[P2:.*]] = tensor.insert_slice %[[R1]] into %[[P1]][9, 0] [1, 6] [1, 1]
// Dim 1 moves whole columns, the new rows included: the corners.
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[P2]][0, 4] [10, 1] [1, 1]
// CHECK: mesh.permute %[[S2]] on @m axes = ["y"] offset = 1 rotate : tensor<10x1xf32> -> tensor<10x1xf32>
// CHECK: mesh.permute %{{.*}} on @m axes = ["y"] offset = -1 rotate : tensor<10x1xf32> -> tensor<10x1xf32>
// CHECK-NOT: arith.select
// CHECK: scf.yield %{{.*}} : tensor<8x4xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: return
// After partitioning, each device's circular_pad is slices and concats.
// LOWER-LABEL: func.func @torus
// LOWER-NOT: mesh.circular_pad
// LOWER: tensor.extract_slice %{{.*}}[7, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<1x4xf32>
// LOWER: tensor.extract_slice %{{.*}}[0, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<1x4xf32>
// LOWER: tensor.concat dim(0) {{.*}} : (tensor<1x4xf32>, tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<10x4xf32>
// LOWER: tensor.concat dim(1) {{.*}} -> tensor<10x6xf32>
// LOWER: mesh.permute {{.*}} rotate
func.func @torus(%u0: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>})
    -> (tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>}) {
  %quarter = arith.constant dense<0.25> : tensor<16x16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %r = scf.for %i = %c0 to %c100 step %c1 iter_args(%u = %u0) -> (tensor<16x16xf32>) {
    %p = mesh.circular_pad %u low = [1, 1] high = [1, 1] : tensor<16x16xf32> -> tensor<18x18xf32>
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

// Periodic on dim 1 only, sharded on both: dim 0 keeps no halo (it is not
// padded), dim 1 wraps over "y" with widths [2, 1], as a window of 4
// columns starting two to the left needs.
// PROP-LABEL: func.func @ring_rows
// PROP: mesh.circular_pad {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], ["y"]], halo = {{\[\[}}0, 0], [2, 1]]>}
// CHECK-LABEL: func.func @ring_rows
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xi32>) -> tensor<4x8xi32>
// CHECK: %[[P:.*]] = mesh.circular_pad %[[A]] low = [0, 2] high = [0, 1] : tensor<4x8xi32> -> tensor<4x11xi32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[P]][0, 8] [4, 2] [1, 1]
// CHECK: mesh.permute %[[S0]] on @m axes = ["y"] offset = 1 rotate : tensor<4x2xi32> -> tensor<4x2xi32>
// CHECK: mesh.permute %{{.*}} on @m axes = ["y"] offset = -1 rotate : tensor<4x1xi32> -> tensor<4x1xi32>
// CHECK-NOT: mesh.permute
// CHECK-NOT: mesh.all_gather
// CHECK: return
func.func @ring_rows(%a: tensor<8x32xi32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>})
    -> (tensor<8x32xi32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>}) {
  %p = mesh.circular_pad %a low = [0, 2] high = [0, 1] : tensor<8x32xi32> -> tensor<8x35xi32>
  %a0 = tensor.extract_slice %p[0, 0] [8, 32] [1, 1] : tensor<8x35xi32> to tensor<8x32xi32>
  %a1 = tensor.extract_slice %p[0, 1] [8, 32] [1, 1] : tensor<8x35xi32> to tensor<8x32xi32>
  %a3 = tensor.extract_slice %p[0, 3] [8, 32] [1, 1] : tensor<8x35xi32> to tensor<8x32xi32>
  %s0 = arith.addi %a0, %a1 : tensor<8x32xi32>
  %s1 = arith.addi %s0, %a3 : tensor<8x32xi32>
  return %s1 : tensor<8x32xi32>
}

// -----

mesh.mesh @m(["x" = 8])

// Read whole (not through windows), the padded dim keeps no factor: the pad
// runs on whole rows, which are gathered first; never a wrong halo.
// PROP-LABEL: func.func @read_whole
// PROP: mesh.circular_pad {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}]]>}
// CHECK-LABEL: func.func @read_whole
// CHECK: mesh.all_gather
// CHECK: mesh.circular_pad %{{.*}} low = [3] high = [0] : tensor<64xf32> -> tensor<67xf32>
// CHECK-NOT: mesh.permute
func.func @read_whole(%a: tensor<64xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) -> tensor<67xf32> {
  %p = mesh.circular_pad %a low = [3] high = [0] : tensor<64xf32> -> tensor<67xf32>
  return %p : tensor<67xf32>
}

// -----

mesh.mesh @m(["x" = 2, "y" = 4])

// The torch-mlir spelling of pad(mode="circular") on two dims: per dim, a
// concat of the last rows, the tensor and the first rows, each end an
// extract_slice. Propagation raises the two concats to one circular_pad,
// whose halos wrap; nothing is gathered.
// PROP-LABEL: func.func @torch_spelling
// PROP-NOT: tensor.concat
// PROP: mesh.circular_pad %{{.*}} low = [1, 2] high = [1, 1] {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"x"], ["y"]], halo = {{\[\[}}1, 1], [2, 1]]>} : tensor<16x32xf32> -> tensor<18x35xf32>
// PROP-NOT: tensor.concat
// CHECK-LABEL: func.func @torch_spelling
// CHECK-NOT: mesh.all_gather
// CHECK: mesh.circular_pad %{{.*}} low = [1, 2] high = [1, 1] : tensor<8x8xf32> -> tensor<10x11xf32>
// CHECK-COUNT-4: mesh.permute {{.*}} rotate
// CHECK-NOT: mesh.all_gather
// CHECK: return
func.func @torch_spelling(%u: tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>})
    -> (tensor<16x32xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], ["y"]]>}) {
  %top = tensor.extract_slice %u[15, 0] [1, 32] [1, 1] : tensor<16x32xf32> to tensor<1x32xf32>
  %bottom = tensor.extract_slice %u[0, 0] [1, 32] [1, 1] : tensor<16x32xf32> to tensor<1x32xf32>
  %rows = tensor.concat dim(0) %top, %u, %bottom : (tensor<1x32xf32>, tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<18x32xf32>
  %left = tensor.extract_slice %rows[0, 30] [18, 2] [1, 1] : tensor<18x32xf32> to tensor<18x2xf32>
  %right = tensor.extract_slice %rows[0, 0] [18, 1] [1, 1] : tensor<18x32xf32> to tensor<18x1xf32>
  %p = tensor.concat dim(1) %left, %rows, %right : (tensor<18x2xf32>, tensor<18x32xf32>, tensor<18x1xf32>) -> tensor<18x35xf32>
  %n = tensor.extract_slice %p[0, 2] [16, 32] [1, 1] : tensor<18x35xf32> to tensor<16x32xf32>
  %s = tensor.extract_slice %p[2, 2] [16, 32] [1, 1] : tensor<18x35xf32> to tensor<16x32xf32>
  %w = tensor.extract_slice %p[1, 0] [16, 32] [1, 1] : tensor<18x35xf32> to tensor<16x32xf32>
  %e = tensor.extract_slice %p[1, 3] [16, 32] [1, 1] : tensor<18x35xf32> to tensor<16x32xf32>
  %a = arith.addf %n, %s : tensor<16x32xf32>
  %b = arith.addf %w, %e : tensor<16x32xf32>
  %r = arith.addf %a, %b : tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

mesh.mesh @m(["x" = 8])

// Not a circular pad: the slice takes the wrong rows (the first, before the
// tensor). The concat stays, with its own rule.
// PROP-LABEL: func.func @not_circular
// PROP: tensor.concat dim(0)
// PROP-NOT: mesh.circular_pad
func.func @not_circular(%u: tensor<64xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) -> tensor<65xf32> {
  %first = tensor.extract_slice %u[0] [1] [1] : tensor<64xf32> to tensor<1xf32>
  %c = tensor.concat dim(0) %first, %u : (tensor<1xf32>, tensor<64xf32>) -> tensor<65xf32>
  return %c : tensor<65xf32>
}
