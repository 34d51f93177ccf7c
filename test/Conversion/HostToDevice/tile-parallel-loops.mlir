// RUN: mesh-opt %s --mesh-gpu-tile-parallel-loops --split-input-file | FileCheck %s
// RUN: mesh-opt %s --mesh-gpu-tile-parallel-loops="tile-sizes=8,32" --split-input-file | FileCheck %s --check-prefix=SIZES
// RUN: mesh-opt %s --mesh-gpu-tile-parallel-loops="threads-per-block=64" --split-input-file | FileCheck %s --check-prefix=SMALLBLOCK
// RUN: not mesh-opt %s --mesh-gpu-tile-parallel-loops="threads-per-block=300" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADT
// RUN: not mesh-opt %s --mesh-gpu-tile-parallel-loops="tile-sizes=64,32" --split-input-file 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: not mesh-opt %s --mesh-gpu-tile-parallel-loops="tile-sizes=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO

// BADT: threads-per-block must be a power of two from 1 to 1024, not 300
// BIG: tile sizes of 2048 threads per block (a GPU block has at most 1024)
// ZERO: tile sizes must be positive, not 0

// Rows of 1024: all 256 threads of a block along a row (threadIdx.x on the
// last dimension, so neighbouring threads touch neighbouring elements), the
// 4096 rows on blockIdx.x.

// CHECK-LABEL: func.func @rows
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[ONE:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %[[C256]] : index
// CHECK: scf.parallel {{.*}} step (%[[ONE]], %[[ROW]])
// CHECK: scf.parallel {{.*}} to (%[[ONE]], %[[ROW]])
// CHECK: memref.load
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_y{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y{{.*}}>]

// The explicit sizes are taken as they are: 8 x 32, the 32 on threadIdx.x.
// SIZES-LABEL: func.func @rows
// SIZES-DAG: %[[C8:.*]] = arith.constant 8 : index
// SIZES-DAG: %[[C32:.*]] = arith.constant 32 : index
// SIZES: %[[A:.*]] = arith.muli %{{.*}}, %[[C8]] : index
// SIZES: %[[B:.*]] = arith.muli %{{.*}}, %[[C32]] : index
// SIZES: scf.parallel {{.*}} step (%[[A]], %[[B]])

// SMALLBLOCK-LABEL: func.func @rows
// SMALLBLOCK: arith.constant 64 : index
// SMALLBLOCK-NOT: arith.constant 256 : index
// SMALLBLOCK: scf.parallel
func.func @rows(%x: memref<4096x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = arith.constant 4096 : index
  %c = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%r, %c) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<4096x1024xf32>
    memref.store %v, %x[%i, %j] : memref<4096x1024xf32>
  }
  return
}

// -----

// Short rows: the 24 columns take 32 threads (a power of two, guarded), the
// rows the other 8.

// CHECK-LABEL: func.func @short_rows
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[A:.*]] = arith.muli %{{.*}}, %[[C8]] : index
// CHECK: %[[B:.*]] = arith.muli %{{.*}}, %[[C32]] : index
// CHECK: scf.parallel {{.*}} step (%[[A]], %[[B]])
// CHECK: scf.parallel {{.*}} to (%[[A]], %[[B]])
// CHECK: scf.if
// CHECK: memref.load
func.func @short_rows(%x: memref<100x24xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = arith.constant 100 : index
  %c = arith.constant 24 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%r, %c) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<100x24xf32>
    memref.store %v, %x[%i, %j] : memref<100x24xf32>
  }
  return
}

// -----

// A dynamic extent takes every thread of the block.

// CHECK-LABEL: func.func @dynamic
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[S:.*]] = arith.muli %{{.*}}, %[[C256]] : index
// CHECK: scf.parallel {{.*}} step (%[[S]])
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x{{.*}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]
func.func @dynamic(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %x[%i] : memref<?xf32>
  }
  return
}

// -----

// Four dimensions: the two outer ones are collapsed into one (divisions
// give their indices back), the two inner ones stay on the threads:
// 1 x 4 x 64 of them (the 64 along the rows, the 8 rows of a plane in two
// blocks of 4).

// CHECK-LABEL: func.func @four_d
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[T1:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[T4:.*]] = arith.muli %{{.*}}, %[[C4]] : index
// CHECK: %[[T64:.*]] = arith.muli %{{.*}}, %[[C64]] : index
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} step (%[[T1]], %[[T4]], %[[T64]])
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) =
// CHECK: arith.remsi
// CHECK: arith.divsi
// CHECK: memref.load
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_z{{.*}}>, #gpu.loop_dim_map<processor = thread_y{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_z{{.*}}>]
func.func @four_d(%x: memref<2x3x8x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%a, %b, %i, %j) = (%c0, %c0, %c0, %c0) to (%c2, %c3, %c8, %c64) step (%c1, %c1, %c1, %c1) {
    %v = memref.load %x[%a, %b, %i, %j] : memref<2x3x8x64xf32>
    memref.store %v, %x[%a, %b, %i, %j] : memref<2x3x8x64xf32>
  }
  return
}

// -----

// A parallel loop nested in another runs sequentially in its thread.

// CHECK-LABEL: func.func @nested
// CHECK: mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x{{.*}}>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]
func.func @nested(%x: memref<16x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      %v = memref.load %x[%i, %j] : memref<16x4xf32>
      memref.store %v, %x[%i, %j] : memref<16x4xf32>
    }
  }
  return
}
