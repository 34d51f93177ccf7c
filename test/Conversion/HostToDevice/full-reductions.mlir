// RUN: mesh-opt %s --mesh-gpu-full-reductions --split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-gpu-full-reductions="elements-per-thread=4 max-partials=8" --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: mesh-opt %s --mesh-gpu-full-reductions --mesh-gpu-row-reductions --split-input-file | FileCheck %s --check-prefix=ROWS
// RUN: not mesh-opt %s --mesh-gpu-full-reductions="max-partials=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: mesh-gpu-full-reductions: elements-per-thread and max-partials must be positive, not 32 and 0

// A sum of a 64x1000 matrix into a scalar: P = 64000 / 32 = 2000 partial
// slots in parallel, slot g folding the elements g, g + P, ... (each
// one's row and column taken back from its position, the column fastest)
// from 0, then the slots summed into the accumulator as a one-row
// reduction, which mesh-gpu-row-reductions makes one block.

// CHECK-LABEL: func.func @sum_all
// CHECK-NOT: scf.for %{{.*}} = %c0 to %c64
// CHECK: %[[PER:.*]] = arith.constant 32 : index
// CHECK: %[[MOST:.*]] = arith.constant 65536 : index
// CHECK: %[[D:.*]] = arith.ceildivui %[[N:.*]], %[[PER]]
// CHECK: %[[M:.*]] = arith.minui %[[D]], %[[MOST]]
// CHECK: %[[P:.*]] = arith.maxui %[[M]], %{{.*}}
// CHECK: %[[BUF:.*]] = memref.alloc(%[[P]]) : memref<?xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.parallel (%[[G:.*]]) = (%{{.*}}) to (%[[P]]) step (%{{.*}}) {
// CHECK-NEXT: %[[V:.*]] = scf.for %[[K:.*]] = %[[G]] to %[[N]] step %[[P]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT: %[[J:.*]] = arith.remui %[[K]], %{{.*}} : index
// CHECK-NEXT: %[[I:.*]] = arith.divui %[[K]], %{{.*}} : index
// CHECK: %[[X:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<64x1000xf32>
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[ACC]] : f32
// CHECK-NEXT: scf.yield %[[S]] : f32
// CHECK: memref.store %[[V]], %[[BUF]][%[[G]]] : memref<?xf32>
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[ONE:.*]]) step (%[[ONE]]) {
// CHECK-NEXT: scf.for %[[Q:.*]] = %{{.*}} to %[[P]] step %{{.*}} {
// CHECK-NEXT: %[[PART:.*]] = memref.load %[[BUF]][%[[Q]]] : memref<?xf32>
// CHECK-NEXT: %[[OLD:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT: %[[NEW:.*]] = arith.addf %[[PART]], %[[OLD]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %{{.*}}[] : memref<f32>
// CHECK: memref.dealloc %[[BUF]] : memref<?xf32>
// SMALL-LABEL: func.func @sum_all
// SMALL: arith.constant 4 : index
// SMALL: arith.constant 8 : index
// ROWS-LABEL: func.func @sum_all
// ROWS: scf.parallel
// ROWS: scf.for
// ROWS: gpu.launch
// ROWS: gpu.all_reduce add
// ROWS-NOT: scf.parallel
// ROWS: return
func.func @sum_all(%x: memref<64x1000xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1000 = arith.constant 1000 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c1000 step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x1000xf32>
      %o = memref.load %s[] : memref<f32>
      %r = arith.addf %a, %o : f32
      memref.store %r, %s[] : memref<f32>
    }
  }
  return
}

// -----

// A maximum of a vector of dynamic length inside a training loop (which is
// looked into): one loop, its trip count from the run-time bound, the
// accumulator at an index from outside the nest; the element computed from
// the load (an absolute value) is computed in the slots.

// CHECK-LABEL: func.func @max_in_loop
// CHECK: scf.for %[[STEP:.*]] =
// CHECK: memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} -> (i32)
// CHECK: math.absi
// CHECK: arith.maxsi
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}[%[[STEP]]] : memref<10xi32>
// CHECK: arith.maxsi
func.func @max_in_loop(%x: memref<?xi32>, %n: index, %m: memref<10xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  scf.for %t = %c0 to %c10 step %c1 {
    scf.for %i = %c0 to %n step %c1 {
      %a = memref.load %x[%i] : memref<?xi32>
      %b = math.absi %a : i32
      %o = memref.load %m[%t] : memref<10xi32>
      %r = arith.maxsi %o, %b : i32
      memref.store %r, %m[%t] : memref<10xi32>
    }
  }
  return
}

// -----

// A triangular nest (the inner bound is the outer variable) and a nest
// with work between its loops are no nests the pass takes whole: each
// outer iteration's inner loop is a reduction of its own, made parallel
// there.

// CHECK-LABEL: func.func @inner_only
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: arith.subi %[[I]], %{{.*}} : index
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: }
// CHECK: scf.for %[[I2:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[I2]]]
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @inner_only(%x: memref<64x64xf32>, %s: memref<f32>, %v: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %i step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x64xf32>
      %o = memref.load %s[] : memref<f32>
      %r = arith.addf %a, %o : f32
      memref.store %r, %s[] : memref<f32>
    }
  }
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %z, %v[%i] : memref<64xf32>
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x64xf32>
      %o = memref.load %v[%i] : memref<64xf32>
      %r = arith.addf %a, %o : f32
      memref.store %r, %v[%i] : memref<64xf32>
    }
  }
  return
}

// -----

// Left alone: a loop carrying a value, a loop inside a parallel loop (a
// row reduction's), and an accumulator indexed by the loop (a prefix, not
// a reduction).

// CHECK-LABEL: func.func @kept
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @kept(%x: memref<64x64xf32>, %v: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %t = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %z) -> (f32) {
    %a = memref.load %v[%i] : memref<64xf32>
    %r = arith.addf %a, %acc : f32
    scf.yield %r : f32
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x64xf32>
      %o = memref.load %v[%i] : memref<64xf32>
      %r = arith.addf %a, %o : f32
      memref.store %r, %v[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.for %i = %c1 to %c64 step %c1 {
    %a = memref.load %x[%i, %c0] : memref<64x64xf32>
    %o = memref.load %v[%i] : memref<64xf32>
    %r = arith.addf %a, %o : f32
    memref.store %r, %v[%i] : memref<64xf32>
  }
  return %t : f32
}
