// RUN: mesh-opt %s --mesh-prepare-for-bufferization | FileCheck %s
// RUN: mesh-opt %s --mesh-prepare-for-bufferization=writable-arguments=true | FileCheck %s --check-prefix=WRITABLE
// RUN: mesh-opt %s --mesh-to-llvm | FileCheck %s --check-prefix=LOWERED

mesh.mesh @m(["dp" = 2, "tp" = 4])

// Public tensor arguments become read-only for bufferization, private ones
// and non-tensors stay as they are. (Annotations left are an error:
// prepare-for-bufferization-invalid.mlir.)
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32> {bufferization.writable = false}, %{{.*}}: index)
// CHECK-SAME: -> tensor<4x8xf32> {
// WRITABLE-LABEL: func.func @kernel
// WRITABLE-SAME: (%{{.*}}: tensor<4x8xf32>, %{{.*}}: index)
func.func @kernel(%x: tensor<4x8xf32>, %i: index) -> tensor<4x8xf32> {
  // CHECK: arith.negf %{{.*}} : tensor<4x8xf32>
  %y = arith.negf %x : tensor<4x8xf32>
  // CHECK: mesh.all_reduce
  %r = mesh.all_reduce %y on @m axes = ["tp"] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{.*}}: tensor<4xf32>)
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// The lowered kernel writes its negation into a fresh buffer, not into the
// caller's argument.
// LOWERED-LABEL: llvm.func @kernel
// LOWERED: llvm.call @malloc
// LOWERED: llvm.fneg

// Masks move as i8 through collectives: sign-extended (true is -1, false
// 0), truncated after (the low bit). On those values "or" is the signed
// min, "and" the signed max and "xor" the sum (its low bit is the parity),
// reductions NCCL has; the other kinds stay.
// CHECK-LABEL: func.func @mask
// CHECK: %[[W:.*]] = arith.extsi %{{.*}} : tensor<8xi1> to tensor<8xi8>
// CHECK: %[[R:.*]] = mesh.all_reduce %[[W]] on @m axes = ["tp"] reduction = min : tensor<8xi8> -> tensor<8xi8>
// CHECK: %[[N:.*]] = arith.trunci %[[R]] : tensor<8xi8> to tensor<8xi1>
// CHECK: mesh.all_reduce %{{.*}} reduction = max : tensor<8xi8> -> tensor<8xi8>
// CHECK: mesh.all_reduce %{{.*}} reduction = sum : tensor<8xi8> -> tensor<8xi8>
// CHECK: mesh.reduce_scatter %{{.*}} reduction = min : tensor<8xi8> -> tensor<2xi8>
// CHECK: mesh.all_reduce %{{.*}} reduction = max : tensor<8xi8> -> tensor<8xi8>
// CHECK: return %[[N]]
// LOWERED-LABEL: llvm.func @mask
// LOWERED: llvm.call @meshrt_all_reduce
func.func @mask(%m: tensor<8xi1>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>, tensor<2xi1>, tensor<8xi1>) {
  %r = mesh.all_reduce %m on @m axes = ["tp"] reduction = or : tensor<8xi1> -> tensor<8xi1>
  %a = mesh.all_reduce %m on @m axes = ["tp"] reduction = and : tensor<8xi1> -> tensor<8xi1>
  %x = mesh.all_reduce %m on @m axes = ["tp"] reduction = xor : tensor<8xi1> -> tensor<8xi1>
  %s = mesh.reduce_scatter %m on @m axes = ["tp"] scatter_dim = 0 reduction = or : tensor<8xi1> -> tensor<2xi1>
  %k = mesh.all_reduce %m on @m axes = ["tp"] reduction = max : tensor<8xi1> -> tensor<8xi1>
  return %r, %a, %x, %s, %k : tensor<8xi1>, tensor<8xi1>, tensor<8xi1>, tensor<2xi1>, tensor<8xi1>
}

// linalg.softmax, which the lowering has no pattern for, becomes the linalg
// ops it aggregates (max, exp of the difference, sum, division).
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.softmax
// CHECK: linalg.generic
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: arith.divf
// LOWERED-LABEL: llvm.func @softmax
// LOWERED-NOT: linalg.softmax
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %e = tensor.empty() : tensor<2x8xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// Rank-reducing slices keep their rank and reshape: MLIR 22's
// expand-strided-metadata crashed (memref::SubViewOp::getDroppedDims) on the
// subviews these bufferized to, a stride of 2 on a dropped unit dim, and two
// unit dims of equal strides beside a stride of 2 (both found by
// gen_partition.py's random slices). Slices that keep their rank stay.
// CHECK-LABEL: func.func @unit_dim_strides
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[1, 3] [1, 1] [2, 1] : tensor<4x8xi32> to tensor<1x1xi32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0, 1]] : tensor<1x1xi32> into tensor<1xi32>
// CHECK: tensor.extract_slice %{{.*}}[0, 2] [2, 4] [2, 1] : tensor<4x8xi32> to tensor<2x4xi32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1]] output_shape [1, 1] : tensor<1xi32> into tensor<1x1xi32>
// CHECK: tensor.insert_slice %[[E]] into %{{.*}}[2, 0] [1, 1] [3, 2] : tensor<1x1xi32> into tensor<4x8xi32>
// LOWERED-LABEL: llvm.func @unit_dim_strides
func.func @unit_dim_strides(%x: tensor<4x8xi32>) -> (tensor<1xi32>, tensor<2x4xi32>, tensor<4x8xi32>) {
  %y = arith.addi %x, %x : tensor<4x8xi32>
  %s = tensor.extract_slice %y[1, 3] [1, 1] [2, 1] : tensor<4x8xi32> to tensor<1xi32>
  // A slice that keeps its rank stays.
  %t = tensor.extract_slice %y[0, 2] [2, 4] [2, 1] : tensor<4x8xi32> to tensor<2x4xi32>
  %u = tensor.insert_slice %s into %y[2, 0] [1, 1] [3, 2] : tensor<1xi32> into tensor<4x8xi32>
  return %s, %t, %u : tensor<1xi32>, tensor<2x4xi32>, tensor<4x8xi32>
}

// CHECK-LABEL: func.func @equal_unit_strides
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0] [4, 1, 1, 16] [2, 1, 1, 1] : tensor<8x1x1x16xi32> to tensor<4x1x1x16xi32>
// CHECK: tensor.collapse_shape %[[S]] {{\[\[}}0], [1], [2, 3]] : tensor<4x1x1x16xi32> into tensor<4x1x16xi32>
// A slice to rank 0: a collapse with no groups.
// CHECK: %[[Z:.*]] = tensor.extract_slice %{{.*}}[1, 0, 0, 3] [1, 1, 1, 1] [1, 1, 1, 1] : tensor<8x1x1x16xi32> to tensor<1x1x1x1xi32>
// CHECK: tensor.collapse_shape %[[Z]] [] : tensor<1x1x1x1xi32> into tensor<i32>
// LOWERED-LABEL: llvm.func @equal_unit_strides
func.func @equal_unit_strides(%a: tensor<8x1x1x16xi32>) -> (tensor<4x1x16xi32>, tensor<i32>) {
  %s = tensor.extract_slice %a[0, 0, 0, 0] [4, 1, 1, 16] [2, 1, 1, 1] : tensor<8x1x1x16xi32> to tensor<4x1x16xi32>
  %z = tensor.extract_slice %a[1, 0, 0, 3] [1, 1, 1, 1] [1, 1, 1, 1] : tensor<8x1x1x16xi32> to tensor<i32>
  return %s, %z : tensor<4x1x16xi32>, tensor<i32>
}
