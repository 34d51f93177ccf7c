// RUN: mesh-opt %s --mesh-collectives-in-place -split-input-file | FileCheck %s

// A buffer all_reduce or broadcast writes into its input when the input dies
// there; anything that could still see the old contents keeps a fresh result.

// The argument is not the collective's to overwrite; the first result is,
// and it carries the chain.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:.*]]: memref<8xf32>)
// CHECK: %[[R0:.*]] = mesh.all_reduce %[[A]] on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
// CHECK: mesh.all_reduce %[[R0]] on @m axes = ["x"] reduction = sum in_place
// CHECK: mesh.all_reduce %[[R0]] on @m axes = ["x"] reduction = max in_place
// CHECK-NOT: memref.dealloc
// CHECK: return %[[R0]]
mesh.mesh @m(["x" = 4])
func.func @chain(%a: memref<8xf32>) -> memref<8xf32> {
  %0 = mesh.all_reduce %a on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  %1 = mesh.all_reduce %0 on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  %2 = mesh.all_reduce %1 on @m axes = ["x"] reduction = max : memref<8xf32> -> memref<8xf32>
  memref.dealloc %0 : memref<8xf32>
  memref.dealloc %1 : memref<8xf32>
  return %2 : memref<8xf32>
}

// -----

// Written by kernels first, then reduced and broadcast in place: one buffer,
// freed once.
// CHECK-LABEL: func.func @written_then_reduced
// CHECK: %[[G:.*]] = memref.alloc()
// CHECK: linalg.fill {{.*}} outs(%[[G]]
// CHECK: linalg.add {{.*}} outs(%[[G]]
// CHECK: mesh.all_reduce %[[G]] {{.*}} in_place
// CHECK: mesh.broadcast %[[G]] {{.*}} root = 2 in_place
// CHECK: memref.load %[[G]]
// CHECK: memref.dealloc %[[G]]
// CHECK-NOT: memref.dealloc
// CHECK: return
mesh.mesh @m(["x" = 4])
func.func @written_then_reduced(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %g = memref.alloc() : memref<8xf32>
  linalg.fill ins(%z : f32) outs(%g : memref<8xf32>)
  linalg.add ins(%a, %a : memref<8xf32>, memref<8xf32>) outs(%g : memref<8xf32>)
  %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  %b = mesh.broadcast %r on @m axes = ["x"] root = 2 : memref<8xf32> -> memref<8xf32>
  %v = memref.load %b[%c0] : memref<8xf32>
  memref.dealloc %g : memref<8xf32>
  memref.dealloc %r : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  return %v : f32
}

// -----

// A result type with ? sizes gets the input through a cast.
// CHECK-LABEL: func.func @to_dynamic
// CHECK: %[[G:.*]] = memref.alloc() : memref<8xf32>
// CHECK: mesh.all_reduce %[[G]] {{.*}} in_place : memref<8xf32> -> memref<?xf32>
// CHECK: %[[C:.*]] = memref.cast %[[G]] : memref<8xf32> to memref<?xf32>
// CHECK-NOT: memref.dealloc
// CHECK: return %[[C]]
mesh.mesh @m(["x" = 4])
func.func @to_dynamic(%n: index) -> memref<?xf32> {
  %g = memref.alloc() : memref<8xf32>
  %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<?xf32>
  memref.dealloc %g : memref<8xf32>
  return %r : memref<?xf32>
}

// -----

// The input is read after the collective.
// CHECK-LABEL: func.func @read_after
// CHECK-NOT: in_place
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @read_after(%a: memref<8xf32>) -> memref<8xf32> {
  %g = memref.alloc() : memref<8xf32>
  %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  linalg.add ins(%g, %r : memref<8xf32>, memref<8xf32>) outs(%a : memref<8xf32>)
  memref.dealloc %g : memref<8xf32>
  return %r : memref<8xf32>
}

// -----

// A view of the input, taken before, is read after.
// CHECK-LABEL: func.func @view_read_after
// CHECK-NOT: in_place
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @view_read_after(%a: memref<4xf32>) -> memref<8xf32> {
  %g = memref.alloc() : memref<8xf32>
  %v = memref.subview %g[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  memref.copy %v, %a : memref<4xf32, strided<[1]>> to memref<4xf32>
  memref.dealloc %g : memref<8xf32>
  return %r : memref<8xf32>
}

// -----

// The input is a cast of a buffer that is read after.
// CHECK-LABEL: func.func @cast_alias
// CHECK-NOT: in_place
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @cast_alias(%a: memref<?xf32>) -> memref<?xf32> {
  %g = memref.alloc() : memref<8xf32>
  %c = memref.cast %g : memref<8xf32> to memref<?xf32>
  %r = mesh.all_reduce %c on @m axes = ["x"] reduction = sum : memref<?xf32> -> memref<?xf32>
  memref.copy %g, %a : memref<8xf32> to memref<?xf32>
  memref.dealloc %c : memref<?xf32>
  return %r : memref<?xf32>
}

// -----

// Freed only on one path: the buffer may belong to someone else.
// CHECK-LABEL: func.func @conditional_dealloc
// CHECK-NOT: in_place
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @conditional_dealloc(%c: i1) -> memref<8xf32> {
  %g = memref.alloc() : memref<8xf32>
  %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  scf.if %c {
    memref.dealloc %g : memref<8xf32>
  }
  return %r : memref<8xf32>
}

// -----

// Not made by an allocation here.
// CHECK-LABEL: func.func @argument
// CHECK-NOT: in_place
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @argument(%a: memref<8xf32>) -> memref<8xf32> {
  %r = mesh.all_reduce %a on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return %r : memref<8xf32>
}

// -----

// Allocated and freed in the loop body: in place there.
// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for
// CHECK: %[[G:.*]] = memref.alloc()
// CHECK: mesh.all_reduce %[[G]] {{.*}} in_place
// CHECK: memref.copy %[[G]]
// CHECK: memref.dealloc %[[G]]
// CHECK-NOT: memref.dealloc
// CHECK: }
mesh.mesh @m(["x" = 4])
func.func @in_loop(%a: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %g = memref.alloc() : memref<8xf32>
    memref.copy %a, %g : memref<8xf32> to memref<8xf32>
    %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
    memref.copy %r, %a : memref<8xf32> to memref<8xf32>
    memref.dealloc %g : memref<8xf32>
    memref.dealloc %r : memref<8xf32>
  }
  return
}

// -----

// Allocated outside the loop, reduced in every iteration: each iteration
// needs the original contents.
// CHECK-LABEL: func.func @outside_loop
// CHECK-NOT: in_place
// CHECK: memref.dealloc
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @outside_loop(%a: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %g = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %n step %c1 {
    %r = mesh.all_reduce %g on @m axes = ["x"] reduction = sum : memref<8xf32> -> memref<8xf32>
    memref.copy %r, %a : memref<8xf32> to memref<8xf32>
    memref.dealloc %r : memref<8xf32>
  }
  memref.dealloc %g : memref<8xf32>
  return
}

// -----

// permute has no in-place form.
// CHECK-LABEL: func.func @other_collectives
// CHECK: mesh.permute
// CHECK-NOT: in_place
// CHECK: memref.dealloc
mesh.mesh @m(["x" = 4])
func.func @other_collectives(%a: memref<8xf32>) -> memref<8xf32> {
  %g = memref.alloc() : memref<8xf32>
  %r = mesh.permute %g on @m axes = ["x"] offset = 1 : memref<8xf32> -> memref<8xf32>
  memref.dealloc %g : memref<8xf32>
  return %r : memref<8xf32>
}
