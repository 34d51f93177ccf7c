// RUN: mesh-opt %s --mesh-gpu-row-reductions --split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-gpu-row-reductions="threads-per-block=1024" --split-input-file | FileCheck %s --check-prefix=WIDE
// RUN: not mesh-opt %s --mesh-gpu-row-reductions="threads-per-block=48" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: threads-per-block must be a power of two from 32 to 1024, not 48

// A row maximum with its fill fused in front (what softmax's first step
// becomes): one block per row, the fill by thread 0 then a barrier, each
// thread folding the elements tid, tid + 256, ... from -inf, a block-wide
// all_reduce, and thread 0 combining it into the accumulator.

// CHECK-LABEL: func.func @row_max
// CHECK: %[[T:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %{{.*}}, {{.*}} = %{{.*}}) threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %[[T]],
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]]
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[ROW]]]
// CHECK: gpu.barrier
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PART:.*]] = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[P:.*]] = %[[NINF]]) -> (f32) {
// CHECK-NEXT: %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[J]]]
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[X]], %[[P]] : f32
// CHECK-NEXT: scf.yield %[[M]]
// CHECK: %[[ALL:.*]] = gpu.all_reduce maximumf %[[PART]] uniform
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[OLD:.*]] = memref.load %{{.*}}[%[[ROW]]]
// CHECK-NEXT: %[[NEW:.*]] = arith.maximumf %[[ALL]], %[[OLD]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %{{.*}}[%[[ROW]]]
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel

// WIDE-LABEL: func.func @row_max
// WIDE: arith.constant 1024 : index
// WIDE: gpu.launch
func.func @row_max(%x: memref<64x1000xf32>, %m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1000 = arith.constant 1000 : index
  %ninf = arith.constant 0xFF800000 : f32
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %ninf, %m[%i] : memref<64xf32>
    scf.for %j = %c0 to %c1000 step %c1 {
      %a = memref.load %x[%i, %j] : memref<64x1000xf32>
      %o = memref.load %m[%i] : memref<64xf32>
      %r = arith.maximumf %a, %o : f32
      memref.store %r, %m[%i] : memref<64xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A short static row takes fewer threads (the power of two above it, at
// least 32), a sum starts from 0, and what the row does after the reduction
// (a mean) runs in thread 0 after it, reading the sum thread 0 stored.

// CHECK-LABEL: func.func @row_mean
// CHECK: %[[T:.*]] = arith.constant 64 : index
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %[[T]],
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
// CHECK: gpu.all_reduce add
// CHECK: scf.if
// CHECK: arith.addf
// CHECK: gpu.barrier
// CHECK: memref.load %[[SUM:.*]][%{{.*}}]
// CHECK: arith.divf
// CHECK: scf.if
// CHECK-NEXT: memref.store
// CHECK: gpu.barrier
func.func @row_mean(%x: memref<8x40xf32>, %s: memref<8xf32>, %mean: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c40 = arith.constant 40 : index
  %n = arith.constant 40.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c40 step %c1 {
      %a = memref.load %x[%i, %j] : memref<8x40xf32>
      %o = memref.load %s[%i] : memref<8xf32>
      %r = arith.addf %a, %o : f32
      memref.store %r, %s[%i] : memref<8xf32>
    }
    %t = memref.load %s[%i] : memref<8xf32>
    %q = arith.divf %t, %n : f32
    memref.store %q, %mean[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Two parallel dimensions (batch x heads rows of attention scores) are one
// grid of 4 x 8 blocks on blockIdx.x (y and z stop at 65535 blocks), the
// row's coordinates taken back from the block id, heads fastest; an integer
// maximum starts from the smallest integer.

// CHECK-LABEL: func.func @rows_2d
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[T:.*]] = arith.constant 128 : index
// CHECK-NEXT: gpu.launch blocks(%[[BX:[a-z0-9]+]], %{{.*}}, %{{.*}}) in ({{.*}} = %[[ROWS]], {{.*}} = %[[ONE:[a-z0-9_]+]], {{.*}} = %[[ONE]])
// CHECK: %[[H:.*]] = arith.remui %[[BX]], %{{.*}} : index
// CHECK: %[[B:.*]] = arith.divui %[[BX]], %{{.*}} : index
// CHECK: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[MIN]]) -> (i32)
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x8x128xi32>
// CHECK: gpu.all_reduce maxsi
func.func @rows_2d(%x: memref<4x8x128xi32>, %m: memref<4x8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%b, %h) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    scf.for %j = %c0 to %c128 step %c1 {
      %a = memref.load %x[%b, %h, %j] : memref<4x8x128xi32>
      %o = memref.load %m[%b, %h] : memref<4x8xi32>
      %r = arith.maxsi %o, %a : i32
      memref.store %r, %m[%b, %h] : memref<4x8xi32>
    }
    scf.reduce
  }
  return
}

// -----

// Left alone: a matmul's k loop reads B[k, j] (the loop's variable not the
// last index: threads along k would not read neighbours), a column sum
// (the same), and an accumulation that is not a combining op.

// CHECK-LABEL: func.func @kept
// CHECK-NOT: gpu.launch
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: gpu.launch
func.func @kept(%a: memref<8x16xf32>, %b: memref<16x8xf32>, %c: memref<8x8xf32>, %cols: memref<16xf32>, %d: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    scf.for %k = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %k] : memref<8x16xf32>
      %y = memref.load %b[%k, %j] : memref<16x8xf32>
      %o = memref.load %c[%i, %j] : memref<8x8xf32>
      %p = arith.mulf %x, %y : f32
      %r = arith.addf %o, %p : f32
      memref.store %r, %c[%i, %j] : memref<8x8xf32>
    }
    scf.reduce
  }
  scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
    scf.for %i = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<8x16xf32>
      %o = memref.load %cols[%j] : memref<16xf32>
      %r = arith.addf %o, %x : f32
      memref.store %r, %cols[%j] : memref<16xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %k] : memref<8x16xf32>
      %o = memref.load %d[%i] : memref<8xf32>
      %r = arith.subf %o, %x : f32
      memref.store %r, %d[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Other widths: an f64 sum is shuffled as it is (two 32-bit halves, by
// the lowering); an f16 sum folds each thread's share in f16 and combines
// the partial values in f32, rounded back once; i8 signed minima are
// combined sign-extended, i16 unsigned maxima and an i1 "any" (ori)
// zero-extended to i32, then truncated: exact.

// CHECK-LABEL: func.func @widths
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK-NEXT: } : (f64) -> f64
// CHECK: gpu.launch
// CHECK: %[[H:.*]] = scf.for {{.*}} -> (f16) {
// CHECK: arith.addf %{{.*}}, %{{.*}} : f16
// CHECK: %[[HW:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT: %[[HS:.*]] = gpu.all_reduce add %[[HW]] uniform
// CHECK-NEXT: } : (f32) -> f32
// CHECK-NEXT: arith.truncf %[[HS]] : f32 to f16
// CHECK: gpu.launch
// CHECK: %[[Q:.*]] = scf.for {{.*}} -> (i8) {
// CHECK: %[[QW:.*]] = arith.extsi %[[Q]] : i8 to i32
// CHECK-NEXT: %[[QM:.*]] = gpu.all_reduce minsi %[[QW]] uniform
// CHECK-NEXT: } : (i32) -> i32
// CHECK-NEXT: arith.trunci %[[QM]] : i32 to i8
// CHECK: gpu.launch
// CHECK: %[[U:.*]] = scf.for {{.*}} -> (i16) {
// CHECK: %[[UW:.*]] = arith.extui %[[U]] : i16 to i32
// CHECK-NEXT: gpu.all_reduce maxui %[[UW]]
// CHECK: gpu.launch
// CHECK: %[[B:.*]] = scf.for {{.*}} -> (i1) {
// CHECK: %[[BW:.*]] = arith.extui %[[B]] : i1 to i32
// CHECK-NEXT: %[[BO:.*]] = gpu.all_reduce or %[[BW]]
// CHECK-NEXT: } : (i32) -> i32
// CHECK-NEXT: arith.trunci %[[BO]] : i32 to i1
// CHECK-NOT: scf.parallel
func.func @widths(%y: memref<8x64xf64>, %s: memref<8xf64>, %h: memref<8x64xf16>, %hs: memref<8xf16>,
                  %q: memref<8x64xi8>, %qm: memref<8xi8>, %u: memref<8x64xi16>, %um: memref<8xi16>,
                  %x: memref<8x64xi1>, %any: memref<8xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %y[%i, %j] : memref<8x64xf64>
      %o = memref.load %s[%i] : memref<8xf64>
      %r = arith.addf %a, %o : f64
      memref.store %r, %s[%i] : memref<8xf64>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %h[%i, %j] : memref<8x64xf16>
      %o = memref.load %hs[%i] : memref<8xf16>
      %r = arith.addf %a, %o : f16
      memref.store %r, %hs[%i] : memref<8xf16>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %q[%i, %j] : memref<8x64xi8>
      %o = memref.load %qm[%i] : memref<8xi8>
      %r = arith.minsi %a, %o : i8
      memref.store %r, %qm[%i] : memref<8xi8>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %u[%i, %j] : memref<8x64xi16>
      %o = memref.load %um[%i] : memref<8xi16>
      %r = arith.maxui %a, %o : i16
      memref.store %r, %um[%i] : memref<8xi16>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %j] : memref<8x64xi1>
      %o = memref.load %any[%i] : memref<8xi1>
      %r = arith.ori %a, %o : i1
      memref.store %r, %any[%i] : memref<8xi1>
    }
    scf.reduce
  }
  return
}

// -----

// Left alone: an i128 sum (wider than the 64 bits the shuffles move in two
// halves) and an f8 maximum (no infinity to start from).

// CHECK-LABEL: func.func @unshuffled
// CHECK-NOT: gpu.launch
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @unshuffled(%x: memref<8x64xi128>, %s: memref<8xi128>, %y: memref<8x64xf8E4M3FN>, %m: memref<8xf8E4M3FN>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %j] : memref<8x64xi128>
      %o = memref.load %s[%i] : memref<8xi128>
      %r = arith.addi %a, %o : i128
      memref.store %r, %s[%i] : memref<8xi128>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %y[%i, %j] : memref<8x64xf8E4M3FN>
      %o = memref.load %m[%i] : memref<8xf8E4M3FN>
      %r = arith.maximumf %a, %o : f8E4M3FN
      memref.store %r, %m[%i] : memref<8xf8E4M3FN>
    }
    scf.reduce
  }
  return
}
