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
