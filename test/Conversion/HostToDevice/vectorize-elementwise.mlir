// RUN: mesh-opt %s --mesh-gpu-vectorize-elementwise --split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-gpu-vectorize-elementwise="vector-bytes=8" --split-input-file | FileCheck %s --check-prefix=EIGHT
// RUN: mesh-opt %s --mesh-gpu-vectorize-elementwise="vector-bytes=1" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: not mesh-opt %s --mesh-gpu-vectorize-elementwise="vector-bytes=32" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: mesh-gpu-vectorize-elementwise: vector-bytes must be 16, 8 or 4 (bytes per access; a GPU's widest is 16), or 1 (scalar accesses), not 32

// A ReLU between two buffers the function allocated (aligned by the
// allocator): the row steps by 4 f32, loaded and stored 16 bytes at a time,
// the zero broadcast; no test at run time.

// CHECK-LABEL: func.func @relu_local
// CHECK-NOT: scf.if
// CHECK-NOT: extract_aligned_pointer
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: scf.parallel (%[[I:.*]], %[[V:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %[[C256]]) step (%[[ONE:.*]], %[[ONE]]) {
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[J:.*]] = arith.muli %[[V]], %[[C4]] : index
// CHECK-NEXT: %[[A:.*]] = vector.load %{{.*}}[%[[I]], %[[J]]] {alignment = 16 : i64} : memref<64x1024xf32>, vector<4xf32>
// CHECK-NEXT: %[[Z:.*]] = vector.broadcast %{{.*}} : f32 to vector<4xf32>
// CHECK-NEXT: %[[R:.*]] = arith.maximumf %[[A]], %[[Z]] : vector<4xf32>
// CHECK-NEXT: vector.store %[[R]], %{{.*}}[%[[I]], %[[J]]] {alignment = 16 : i64} : memref<64x1024xf32>, vector<4xf32>
// CHECK-NOT: memref.load
// EIGHT-LABEL: func.func @relu_local
// EIGHT: vector.load {{.*}} {alignment = 8 : i64} : memref<64x1024xf32>, vector<2xf32>
// OFF-LABEL: func.func @relu_local
// OFF-NOT: vector.
func.func @relu_local() -> memref<64x1024xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<64x1024xf32>
  %y = memref.alloc() : memref<64x1024xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<64x1024xf32>
    %r = arith.maximumf %a, %zero : f32
    memref.store %r, %y[%i, %j] : memref<64x1024xf32>
    scf.reduce
  }
  memref.dealloc %x : memref<64x1024xf32>
  return %y : memref<64x1024xf32>
}

// -----

// The function's arguments may start anywhere (a caller's view): their
// addresses are tested on the host, the vector nest runs when each is a
// multiple of 16, and the scalar nest stays as the other branch. A bias
// along the row is a vector load; a per-row scale is one scalar load,
// broadcast.

// CHECK-LABEL: func.func @args(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8x256xf32>, %[[B:[a-z0-9]+]]: memref<256xf32>, %[[S:[a-z0-9]+]]: memref<8xf32>, %[[Y:[a-z0-9]+]]: memref<8x256xf32>
// CHECK: %[[PX:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK: %[[RX:.*]] = arith.remui %[[PX]], %[[SIXTEEN]]
// CHECK: %[[OKX:.*]] = arith.cmpi eq, %[[RX]]
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: arith.andi %[[OKX]]
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK-NOT: memref.extract_aligned_pointer_as_index %[[S]]
// CHECK: %[[ALL:.*]] = arith.andi
// CHECK: scf.if %[[ALL]] {
// CHECK: scf.parallel (%[[I:.*]], %[[V:.*]]) =
// CHECK: %[[J:.*]] = arith.muli %[[V]]
// CHECK-NEXT: %[[XV:.*]] = vector.load %[[X]][%[[I]], %[[J]]] {alignment = 16 : i64} : memref<8x256xf32>, vector<4xf32>
// CHECK-NEXT: %[[BV:.*]] = vector.load %[[B]][%[[J]]] {alignment = 16 : i64} : memref<256xf32>, vector<4xf32>
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[XV]], %[[BV]] : vector<4xf32>
// CHECK-NEXT: %[[SC:.*]] = memref.load %[[S]][%[[I]]] : memref<8xf32>
// CHECK-NEXT: %[[SCV:.*]] = vector.broadcast %[[SC]] : f32 to vector<4xf32>
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[SUM]], %[[SCV]] : vector<4xf32>
// CHECK-NEXT: vector.store %[[P]], %[[Y]][%[[I]], %[[J]]]
// CHECK: } else {
// CHECK: scf.parallel
// CHECK-NEXT: memref.load %[[X]]
// CHECK-NOT: vector.
// CHECK: return
func.func @args(%x: memref<8x256xf32>, %b: memref<256xf32>, %s: memref<8xf32>, %y: memref<8x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c256) step (%c1, %c1) {
    %a = memref.load %x[%i, %j] : memref<8x256xf32>
    %bb = memref.load %b[%j] : memref<256xf32>
    %t = arith.addf %a, %bb : f32
    %sc = memref.load %s[%i] : memref<8xf32>
    %p = arith.mulf %t, %sc : f32
    memref.store %p, %y[%i, %j] : memref<8x256xf32>
    scf.reduce
  }
  return
}

// -----

// The widest element sets the width: f16 read and widened into f32 moves 4
// elements (8 bytes of f16, aligned to 8; 16 of f32); f64 moves 2, and
// 8-bit integers 16. Casts and math ops work on vectors.

// CHECK-LABEL: func.func @widths
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<4x64xf16>, vector<4xf16>
// CHECK-NEXT: arith.extf {{.*}} : vector<4xf16> to vector<4xf32>
// CHECK-NEXT: math.exp {{.*}} : vector<4xf32>
// CHECK-NEXT: vector.store {{.*}} {alignment = 16 : i64} : memref<4x64xf32>, vector<4xf32>
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<4x64xf64>, vector<2xf64>
// CHECK: arith.negf {{.*}} : vector<2xf64>
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<4x64xi8>, vector<16xi8>
// CHECK: arith.addi {{.*}} : vector<16xi8>
func.func @widths() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1 : i8
  %h = memref.alloc() : memref<4x64xf16>
  %f = memref.alloc() : memref<4x64xf32>
  %d = memref.alloc() : memref<4x64xf64>
  %q = memref.alloc() : memref<4x64xi8>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %a = memref.load %h[%i, %j] : memref<4x64xf16>
    %w = arith.extf %a : f16 to f32
    %e = math.exp %w : f32
    memref.store %e, %f[%i, %j] : memref<4x64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %a = memref.load %d[%i, %j] : memref<4x64xf64>
    %n = arith.negf %a : f64
    memref.store %n, %d[%i, %j] : memref<4x64xf64>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %a = memref.load %q[%i, %j] : memref<4x64xi8>
    %n = arith.addi %a, %one : i8
    memref.store %n, %q[%i, %j] : memref<4x64xi8>
    scf.reduce
  }
  memref.dealloc %h : memref<4x64xf16>
  memref.dealloc %f : memref<4x64xf32>
  memref.dealloc %d : memref<4x64xf64>
  memref.dealloc %q : memref<4x64xi8>
  return
}

// -----

// A view with a static offset that is a multiple of the width (a row of a
// larger local buffer) and a view whose rows are aligned: vectorised, the
// view traced back to its allocation. A view starting at element 2 is not.

// A memref.view at a byte shift known only at run time moves the aligned
// pointer itself: its start is tested on the host.

// CHECK-LABEL: func.func @views
// CHECK-NOT: scf.if
// CHECK: vector.load {{.*}} : memref<4x64xf32, strided<[128, 1], offset: 64>>, vector<4xf32>
// CHECK: scf.parallel
// CHECK-NEXT: memref.load {{.*}} : memref<4x64xf32, strided<[128, 1], offset: 2>>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[V:.*]] : memref<4x64xf32>
// CHECK: scf.if
// CHECK: vector.load %[[V]]
func.func @views(%shift: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %big = memref.alloc() : memref<4x128xf32>
  %v = memref.subview %big[0, 64] [4, 64] [1, 1] : memref<4x128xf32> to memref<4x64xf32, strided<[128, 1], offset: 64>>
  %w = memref.subview %big[0, 2] [4, 64] [1, 1] : memref<4x128xf32> to memref<4x64xf32, strided<[128, 1], offset: 2>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %a = memref.load %v[%i, %j] : memref<4x64xf32, strided<[128, 1], offset: 64>>
    %n = arith.negf %a : f32
    memref.store %n, %v[%i, %j] : memref<4x64xf32, strided<[128, 1], offset: 64>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %a = memref.load %w[%i, %j] : memref<4x64xf32, strided<[128, 1], offset: 2>>
    %n = arith.negf %a : f32
    memref.store %n, %w[%i, %j] : memref<4x64xf32, strided<[128, 1], offset: 2>>
    scf.reduce
  }
  %bytes = memref.alloc() : memref<2048xi8>
  %u = memref.view %bytes[%shift][] : memref<2048xi8> to memref<4x64xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %a = memref.load %u[%i, %j] : memref<4x64xf32>
    %n = arith.negf %a : f32
    memref.store %n, %u[%i, %j] : memref<4x64xf32>
    scf.reduce
  }
  memref.dealloc %bytes : memref<2048xi8>
  memref.dealloc %big : memref<4x128xf32>
  return
}

// -----

// Left alone: a transposed read (the row variable not the last index), a
// shifted read (the variable used by an addition), a row of 1022 f32 (not
// a multiple of 4), a dynamic row, a column stride of 2, a store that does
// not move along the row, a gather (an index loaded from memory), and a
// nest with a loop in it.

// CHECK-LABEL: func.func @kept
// CHECK-NOT: vector.
// CHECK: return
func.func @kept(%n: index, %idx: memref<64xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %c1022 = arith.constant 1022 : index
  %a = memref.alloc() : memref<64x64xf32>
  %b = memref.alloc() : memref<64x64xf32>
  %r = memref.alloc() : memref<4x1022xf32>
  %d = memref.alloc(%n) : memref<4x?xf32>
  %s = memref.subview %a[0, 0] [64, 32] [1, 2] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 2]>>
  %one = memref.alloc() : memref<64xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    %x = memref.load %a[%j, %i] : memref<64x64xf32>
    memref.store %x, %b[%i, %j] : memref<64x64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c63) step (%c1, %c1) {
    %k = arith.addi %j, %c1 : index
    %x = memref.load %a[%i, %k] : memref<64x64xf32>
    memref.store %x, %b[%i, %j] : memref<64x64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c1022) step (%c1, %c1) {
    %x = memref.load %r[%i, %j] : memref<4x1022xf32>
    %y = arith.negf %x : f32
    memref.store %y, %r[%i, %j] : memref<4x1022xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %n) step (%c1, %c1) {
    %x = memref.load %d[%i, %j] : memref<4x?xf32>
    %y = arith.negf %x : f32
    memref.store %y, %d[%i, %j] : memref<4x?xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %x = memref.load %s[%i, %j] : memref<64x32xf32, strided<[64, 2]>>
    %y = arith.negf %x : f32
    memref.store %y, %s[%i, %j] : memref<64x32xf32, strided<[64, 2]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<64x64xf32>
    memref.store %x, %one[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    %t = memref.load %idx[%j] : memref<64xi32>
    %k = arith.index_cast %t : i32 to index
    %x = memref.load %a[%i, %k] : memref<64x64xf32>
    memref.store %x, %b[%i, %j] : memref<64x64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
    scf.for %k = %c0 to %c4 step %c1 {
      %x = memref.load %a[%i, %j] : memref<64x64xf32>
      memref.store %x, %b[%i, %j] : memref<64x64xf32>
    }
    scf.reduce
  }
  memref.dealloc %a : memref<64x64xf32>
  memref.dealloc %b : memref<64x64xf32>
  memref.dealloc %r : memref<4x1022xf32>
  memref.dealloc %d : memref<4x?xf32>
  memref.dealloc %one : memref<64xf32>
  return
}
