// RUN: mesh-opt %s --mesh-gpu-copy-kernels | FileCheck %s

// A copy into or out of a strided view becomes linalg.copy (a kernel later);
// a contiguous copy stays a memref.copy (one gpu.memcpy later).

// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[X:.*]]: memref<4x4xf32>, %[[Y:.*]]: memref<4xf32>, %[[Z:.*]]: memref<4xf32>)
// CHECK: %[[S:.*]] = memref.subview %[[X]]
// CHECK-NEXT: linalg.copy ins(%[[S]] : memref<4xf32, strided<[4], offset: 1>>) outs(%[[Y]] : memref<4xf32>)
// CHECK-NEXT: linalg.copy ins(%[[Y]] : memref<4xf32>) outs(%[[S]] : memref<4xf32, strided<[4], offset: 1>>)
// CHECK-NEXT: memref.copy %[[Y]], %[[Z]] : memref<4xf32> to memref<4xf32>
// CHECK-NOT: memref.copy
func.func @copies(%x: memref<4x4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
  %s = memref.subview %x[0, 1] [4, 1] [1, 1] : memref<4x4xf32> to memref<4xf32, strided<[4], offset: 1>>
  memref.copy %s, %y : memref<4xf32, strided<[4], offset: 1>> to memref<4xf32>
  memref.copy %y, %s : memref<4xf32> to memref<4xf32, strided<[4], offset: 1>>
  memref.copy %y, %z : memref<4xf32> to memref<4xf32>
  return
}
