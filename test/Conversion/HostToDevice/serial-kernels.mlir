// RUN: mesh-opt %s --mesh-gpu-serial-kernels --split-input-file | FileCheck %s

// A full reduction has no parallel dimension: the whole loop nest, with
// nothing of it left on the host, runs as one thread.

// CHECK-LABEL: func.func @sum
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK: scf.for
// CHECK: memref.load
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @sum(%x: memref<64xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %a = memref.load %x[%i] : memref<64xf32>
    %s = memref.load %out[] : memref<f32>
    %t = arith.addf %s, %a : f32
    memref.store %t, %out[] : memref<f32>
  }
  return
}

// -----

// Rank-0 code has no loop: the loads and the arithmetic that feed the store
// move into the kernel with it.

// CHECK-LABEL: func.func @scalar
// CHECK-NOT: memref.load
// CHECK: gpu.launch
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store
// CHECK-NEXT: gpu.terminator
func.func @scalar(%a: memref<f32>, %b: memref<f32>, %out: memref<f32>) {
  %x = memref.load %a[] : memref<f32>
  %y = memref.load %b[] : memref<f32>
  %s = arith.addf %x, %y : f32
  memref.store %s, %out[] : memref<f32>
  return
}

// -----

// Kernels already made, and loops that launch them, stay as they are.

// CHECK-LABEL: func.func @launches
// CHECK: scf.for
// CHECK-NEXT: gpu.launch
// CHECK-NOT: gpu.launch
func.func @launches(%x: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
      %v = memref.load %x[%tx] : memref<8xf32>
      memref.store %v, %x[%tx] : memref<8xf32>
      gpu.terminator
    }
  }
  return
}

// -----

// A load whose value the host needs stays (the verifier reports it).

// CHECK-LABEL: func.func @host_read
// CHECK-NOT: gpu.launch
// CHECK: memref.load
func.func @host_read(%x: memref<f32>) -> f32 {
  %v = memref.load %x[] : memref<f32>
  return %v : f32
}
