// RUN: mesh-opt %s --pass-pipeline='builtin.module(func.func(mesh-reduction-loops))' -split-input-file | FileCheck %s

// A row sum into a buffer of the function: the parallel loop outside, the
// output loaded once, the reduction loop carrying it, one store; the add
// may be reassociated.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[INIT:.*]] = memref.load %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK: %[[R:.*]] = scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[X:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<64x128xf32>
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[ACC]] fastmath<reassoc> : f32
// CHECK: scf.yield %[[S]] : f32
// CHECK: memref.store %[[R]], %{{.*}}[%[[I]]] : memref<64xf32>
// CHECK-NOT: linalg.generic
func.func @row_sum(%x: memref<64x128xf32>) -> memref<64xf32> {
  %sum = memref.alloc() : memref<64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%sum : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return %sum : memref<64xf32>
}

// -----

// A mixed-precision product (f16 inputs, f32 accumulator: the library call
// takes one type, so it stays loops): the conversions keep their (absent)
// fast-math flags, the product and sum get `reassoc` (it crashed reading
// arith.extf's absent flags).
// CHECK-LABEL: func.func @mixed_matmul
// CHECK: scf.for
// CHECK: iter_args
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.mulf {{.*}} fastmath<reassoc> : f32
// CHECK: arith.addf {{.*}} fastmath<reassoc> : f32
func.func @mixed_matmul(%a: memref<5x3xf16>, %b: memref<3x7xf16>) -> memref<5x7xf32> {
  %c = memref.alloc() : memref<5x7xf32>
  linalg.matmul ins(%a, %b : memref<5x3xf16>, memref<3x7xf16>) outs(%c : memref<5x7xf32>)
  return %c : memref<5x7xf32>
}

// -----

// Two outputs (softmax's max with its argmax, as torch-mlir writes
// aten.max.dim), linalg.index read as the loop's index, two reduction
// loops nested, each yielding the inner one's values; integer ops keep
// their (exact) semantics.
// CHECK-LABEL: func.func @max_argmax
// CHECK: scf.for %[[B:[^ ]*]] =
// CHECK: memref.load %{{.*}}[%[[B]]] : memref<4xf32>
// CHECK: memref.load %{{.*}}[%[[B]]] : memref<4xi64>
// CHECK: %[[O:.*]]:2 = scf.for %[[I:[^ ]*]] = {{.*}} iter_args
// CHECK: %[[N:.*]]:2 = scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: arith.index_cast %[[J]] : index to i64
// CHECK: arith.cmpf ogt, {{.*}} fastmath<reassoc>
// CHECK: scf.yield
// CHECK: scf.yield %[[N]]#0, %[[N]]#1
// CHECK: memref.store %[[O]]#0
// CHECK: memref.store %[[O]]#1
func.func @max_argmax(%x: memref<4x8x16xf32>) -> (memref<4xf32>, memref<4xi64>) {
  %mx = memref.alloc() : memref<4xf32>
  %am = memref.alloca() : memref<4xi64>
  linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b)>, affine_map<(b, i, j) -> (b)>], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<4x8x16xf32>) outs(%mx, %am : memref<4xf32>, memref<4xi64>) {
  ^bb0(%a: f32, %m: f32, %k: i64):
    %j = linalg.index 2 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %a, %m : f32
    %nm = arith.select %gt, %a, %m : f32
    %nk = arith.select %gt, %ji, %k : i64
    linalg.yield %nm, %nk : f32, i64
  }
  return %mx, %am : memref<4xf32>, memref<4xi64>
}

// -----

// Stay for convert-linalg-to-loops: a column sum (the innermost loop
// parallel), a convolution (its maps are not projected permutations), an
// output that is an argument (an input may alias it), an input that is a
// view of the output, and an output indexed by the reduction loop.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.generic
// CHECK: linalg.conv_1d
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: scf.for
func.func @kept(%x: memref<64x128xf32>, %sum: memref<128xf32>, %s: memref<10xf32>, %w: memref<3xf32>, %o: memref<8xf32>, %rows: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x128xf32>) outs(%sum : memref<128xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  linalg.conv_1d ins(%s, %w : memref<10xf32>, memref<3xf32>) outs(%o : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%rows : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  %y = memref.alloc() : memref<8x8xf32>
  %d = memref.subview %y[0, 0] [8, 1] [1, 1] : memref<8x8xf32> to memref<8xf32, strided<[8]>>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "reduction"]}
      ins(%d : memref<8xf32, strided<[8]>>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  %z = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["reduction"]}
      ins(%z : memref<8xf32>) outs(%z : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  return
}
