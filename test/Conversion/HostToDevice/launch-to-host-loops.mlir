// RUN: mesh-opt %s --mesh-gpu-launch-to-host-loops --split-input-file --verify-diagnostics | FileCheck %s

// Blocks outside, threads inside, x innermost; the ids become the loop
// variables, the sizes the launch's operands, and the body is copied once.

// CHECK-LABEL: func.func @scale
// CHECK-SAME: (%[[X:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: scf.for %[[BZ:.*]] = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK-NEXT: scf.for %[[BY:.*]] = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK-NEXT: scf.for %[[BX:.*]] = %[[C0]] to %[[N]] step %[[C1]]
// CHECK-NEXT: scf.for %[[TZ:.*]] = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK-NEXT: scf.for %[[TY:.*]] = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK-NEXT: scf.for %[[TX:.*]] = %[[C0]] to %[[C16]] step %[[C1]]
// CHECK-NEXT: %[[BASE:.*]] = arith.muli %[[BX]], %[[C16]] : index
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK-NEXT: %[[OK:.*]] = arith.cmpi slt, %[[I]], %[[N]] : index
// CHECK-NEXT: scf.if %[[OK]]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[X]][%[[I]]]
// CHECK-NEXT: %[[W:.*]] = arith.addf %[[V]], %[[V]]
// CHECK-NEXT: memref.store %[[W]], %[[X]][%[[I]]]
// CHECK-NOT: gpu.
// CHECK: return
func.func @scale(%x: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %ok = arith.cmpi slt, %i, %n : index
    scf.if %ok {
      %v = memref.load %x[%i] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %x[%i] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}

// -----

// Id and size queries inside the body, nested in regions too, take the
// loops' values: thread_id y is the fifth loop's variable, grid_dim x the
// launch's grid size.

// CHECK-LABEL: func.func @queries
// CHECK-SAME: (%[[X:.*]]: memref<4x4xindex>, %[[G:.*]]: index,
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for %[[TY:.*]] =
// CHECK-NEXT: scf.for %[[TX:.*]] =
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.store %[[G]], %[[X]][%[[TY]], %[[TX]]]
// CHECK-NOT: gpu.
func.func @queries(%x: memref<4x4xindex>, %g: index, %p: i1) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c4, %sz = %c1) {
    scf.if %p {
      %i = gpu.thread_id y
      %j = gpu.thread_id x
      %n = gpu.grid_dim x
      memref.store %n, %x[%i, %j] : memref<4x4xindex>
    }
    gpu.terminator
  }
  return
}

// -----

// Threads that synchronise cannot run one after another.

func.func @barrier(%x: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'gpu.barrier' op mesh-gpu-launch-to-host-loops: threads of a kernel that run this op cannot be emulated by independent host loops}}
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

// Workgroup memory is shared by a block's threads.

func.func @workgroup(%x: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{'gpu.launch' op mesh-gpu-launch-to-host-loops: workgroup, private or dynamic shared memory cannot be emulated by host loops}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%w : memref<32xf32, #gpu.address_space<workgroup>>) {
    gpu.terminator
  }
  return
}

// -----

// An asynchronous launch is ordered by tokens the host loops would drop.

func.func @async(%x: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %t = gpu.wait async
  // expected-error @+1 {{'gpu.launch' op mesh-gpu-launch-to-host-loops: asynchronous launches are not supported}}
  %u = gpu.launch async [%t] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
