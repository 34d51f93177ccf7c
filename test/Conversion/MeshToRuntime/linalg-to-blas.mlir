// RUN: mesh-opt %s --mesh-linalg-to-blas=report=true -split-input-file -verify-diagnostics -canonicalize | FileCheck %s

// A matmul on buffers: one meshrt_gemm over the row-major operands'
// strides, accumulating into the output (no fill to fold).
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[F32:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[ACC:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[B1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[M:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[N:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[K:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[Z:.*]] = arith.constant 0 : i64
// CHECK: %[[S:.*]] = llvm.call @meshrt_gemm(%[[F32]], %[[B1]], %[[M]], %[[N]], %[[K]], %{{.*}}, %[[Z]], %[[K]], %[[B1]], %{{.*}}, %[[Z]], %[[N]], %[[B1]], %{{.*}}, %[[Z]], %[[N]], %[[B1]], %[[ACC]])
// CHECK: cf.assert %{{.*}}, "mesh runtime: meshrt_gemm for 'linalg.matmul' failed
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<64x128xf32>, %b: memref<128x32xf32>, %c: memref<64x32xf32>) {
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x32xf32>) outs(%c : memref<64x32xf32>)
  return
}

// -----

// A fill of +0.0 into a buffer of the function just before the product is
// folded: the call overwrites (accumulate = 0) and the fill is gone. B is
// read transposed through the indexing map: its strides are passed swapped
// (k stride 1, n stride 128).
// CHECK-LABEL: func.func @fill_folded_transposed
// CHECK-DAG: %[[OVER:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[B1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[K:.*]] = arith.constant 128 : i64
// CHECK-NOT: linalg.fill
// CHECK: llvm.call @meshrt_gemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B1]], %[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OVER]])
// CHECK-NOT: {{^ *}}linalg.
// CHECK: return
func.func @fill_folded_transposed(%a: memref<64x128xf32>, %b: memref<32x128xf32>) -> memref<64x32xf32> {
  %z = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<64x32xf32>
  linalg.fill ins(%z : f32) outs(%c : memref<64x32xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<64x128xf32>, memref<32x128xf32>) outs(%c : memref<64x32xf32>)
  return %c : memref<64x32xf32>
}

// -----

// Work between the fill and the product that reads or writes only the
// function's arguments and other buffers of its own (a convolution's
// im2col copy) does not touch the fill's buffer: the fill is still folded.
// A write to an argument between the two would not touch it either.
// CHECK-LABEL: func.func @fill_folded_across_copies
// CHECK-DAG: %[[OVER:.*]] = arith.constant 0 : i32
// CHECK-NOT: linalg.fill
// CHECK: linalg.copy
// CHECK: memref.store
// CHECK: llvm.call @meshrt_gemm({{.*}}, %[[OVER]])
func.func @fill_folded_across_copies(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %out: memref<8x8xf32>) -> memref<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  %c = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%z : f32) outs(%c : memref<8x8xf32>)
  %cols = memref.alloc() : memref<8x8xf32>
  linalg.copy ins(%a : memref<8x8xf32>) outs(%cols : memref<8x8xf32>)
  memref.store %z, %out[%i, %i] : memref<8x8xf32>
  linalg.matmul ins(%cols, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return %c : memref<8x8xf32>
}

// -----

// A fill of 1.0 is not a zero: it stays, and the call accumulates.
// CHECK-LABEL: func.func @fill_of_one
// CHECK-DAG: %[[ACC:.*]] = arith.constant 1 : i32
// CHECK: linalg.fill
// CHECK: llvm.call @meshrt_gemm({{.*}}, %[[ACC]])
func.func @fill_of_one(%a: memref<8x8xf64>, %b: memref<8x8xf64>) -> memref<8x8xf64> {
  %one = arith.constant 1.0 : f64
  %c = memref.alloc() : memref<8x8xf64>
  linalg.fill ins(%one : f64) outs(%c : memref<8x8xf64>)
  linalg.matmul ins(%a, %b : memref<8x8xf64>, memref<8x8xf64>) outs(%c : memref<8x8xf64>)
  return %c : memref<8x8xf64>
}

// -----

// A fill of an argument stays (the argument may alias an input), and so
// does a fill with a write to the output in between.
// CHECK-LABEL: func.func @fill_not_folded
// CHECK: linalg.fill
// CHECK: llvm.call @meshrt_gemm
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: llvm.call @meshrt_gemm
func.func @fill_not_folded(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) -> memref<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  linalg.fill ins(%z : f32) outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  %d = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%z : f32) outs(%d : memref<8x8xf32>)
  memref.store %z, %d[%i, %i] : memref<8x8xf32>
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%d : memref<8x8xf32>)
  return %d : memref<8x8xf32>
}

// -----

// batch_matmul: the batch strides of each operand; the element type f64.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-DAG: %[[F64:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[B:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[SA:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[SB:.*]] = arith.constant 256 : i64
// CHECK: llvm.call @meshrt_gemm(%[[F64]], %[[B]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SA]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SB]],
func.func @batch_matmul(%a: memref<4x8x16xf64>, %b: memref<4x16x16xf64>, %c: memref<4x8x16xf64>) {
  linalg.batch_matmul ins(%a, %b : memref<4x8x16xf64>, memref<4x16x16xf64>) outs(%c : memref<4x8x16xf64>)
  return
}

// -----

// matvec, vecmat and dot: the absent loops have extent 1 and stride 0.
// CHECK-LABEL: func.func @vectors
// CHECK-COUNT-3: llvm.call @meshrt_gemm
// CHECK-NOT: {{^ *}}linalg.
// CHECK: return
func.func @vectors(%m: memref<16x8xf32>, %x: memref<8xf32>, %y: memref<16xf32>, %u: memref<16xf32>, %v: memref<8xf32>, %d: memref<f32>) {
  linalg.matvec ins(%m, %x : memref<16x8xf32>, memref<8xf32>) outs(%y : memref<16xf32>)
  linalg.vecmat ins(%u, %m : memref<16xf32>, memref<16x8xf32>) outs(%v : memref<8xf32>)
  linalg.dot ins(%x, %v : memref<8xf32>, memref<8xf32>) outs(%d : memref<f32>)
  return
}

// -----

// A generic that is a contraction with a transposed operand and a batch
// dim (the spelling of some frontends), on strided views (a subview with
// an offset): matched like the named ops, its dynamic sizes and strides
// read from the buffers.
// CHECK-LABEL: func.func @generic_batched_transposed
// CHECK: memref.extract_strided_metadata
// CHECK: llvm.call @meshrt_gemm
// CHECK: meshrt_gemm for 'linalg.generic'
// CHECK-NOT: {{^ *}}linalg.generic
// CHECK: return
func.func @generic_batched_transposed(%a: memref<?x?x?xf16, strided<[?, ?, 1], offset: ?>>, %b: memref<?x?x?xf16>, %c: memref<?x?x?xf16>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
    ins(%a, %b : memref<?x?x?xf16, strided<[?, ?, 1], offset: ?>>, memref<?x?x?xf16>) outs(%c : memref<?x?x?xf16>) {
  ^bb0(%x: f16, %y: f16, %o: f16):
    %p = arith.mulf %y, %x : f16
    %s = arith.addf %o, %p : f16
    linalg.yield %s : f16
  }
  return
}

// -----

// Mixed precision: inputs of a narrower float type, widened in the body
// (the named ops' arith.extf), into a wider output: one meshrt_gemm_mixed
// with both dtypes (f16 = 0, bf16 = 1, f32 = 2, f64 = 3). Each operand's
// offset is counted in its own element size: the f16 view's offset of 5 is
// 10 bytes (20 in the output's f32). A generic spelling (f32 into f64, a
// transposed B) is matched like the named ops.
// CHECK-LABEL: func.func @mixed
// CHECK-DAG: %[[F16:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[BF16:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[F64:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[TEN:.*]] = arith.constant 10 : index
// CHECK: %[[A:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: arith.addi %[[A]], %[[TEN]] : index
// CHECK: llvm.call @meshrt_gemm_mixed(%[[F16]], %[[F32]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.matmul' failed
// CHECK: llvm.call @meshrt_gemm_mixed(%[[BF16]], %[[F32]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.batch_matmul' failed
// CHECK: llvm.call @meshrt_gemm_mixed(%[[F32]], %[[F64]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.generic' failed
// CHECK-NOT: {{^ *}}linalg.
// CHECK: return
func.func @mixed(%a: memref<8x16xf16, strided<[32, 1], offset: 5>>, %b: memref<16x4xf16>, %c: memref<8x4xf32>,
                 %ab: memref<2x8x16xbf16>, %bb: memref<2x16x4xbf16>, %cb: memref<2x8x4xf32>,
                 %a32: memref<8x16xf32>, %b32: memref<4x16xf32>, %c64: memref<8x4xf64>) {
  linalg.matmul ins(%a, %b : memref<8x16xf16, strided<[32, 1], offset: 5>>, memref<16x4xf16>) outs(%c : memref<8x4xf32>)
  linalg.batch_matmul ins(%ab, %bb : memref<2x8x16xbf16>, memref<2x16x4xbf16>) outs(%cb : memref<2x8x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a32, %b32 : memref<8x16xf32>, memref<4x16xf32>) outs(%c64 : memref<8x4xf64>) {
  ^bb0(%x: f32, %y: f32, %o: f64):
    %xe = arith.extf %x : f32 to f64
    %ye = arith.extf %y : f32 to f64
    %p = arith.mulf %ye, %xe : f64
    %s = arith.addf %p, %o : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// 8-bit integer products into i32 or i64 (quantized layers): one
// meshrt_gemm_mixed with the input's signedness read from the body's
// widening (extsi: i8 = 4, extui: u8 = 7; i32 = 5, i64 = 6). The runtime
// sums exactly through a float GEMM and wraps as integer arithmetic does.
// CHECK-LABEL: func.func @integers
// CHECK-DAG: %[[I8:.*]] = arith.constant 4 : i32
// CHECK-DAG: %[[I32:.*]] = arith.constant 5 : i32
// CHECK-DAG: %[[I64:.*]] = arith.constant 6 : i32
// CHECK-DAG: %[[U8:.*]] = arith.constant 7 : i32
// CHECK: llvm.call @meshrt_gemm_mixed(%[[I8]], %[[I32]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.matmul' failed
// CHECK: llvm.call @meshrt_gemm_mixed(%[[U8]], %[[I32]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.matmul' failed
// CHECK: llvm.call @meshrt_gemm_mixed(%[[I8]], %[[I64]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.batch_matmul' failed
// CHECK: llvm.call @meshrt_gemm_mixed(%[[U8]], %[[I64]],
// CHECK: "mesh runtime: meshrt_gemm_mixed for 'linalg.generic' failed
// CHECK-NOT: {{^ *}}linalg.
// CHECK: return
func.func @integers(%a: memref<8x16xi8>, %b: memref<16x4xi8>, %c: memref<8x4xi32>,
                    %ab: memref<2x8x16xi8>, %bb: memref<2x16x4xi8>, %cb: memref<2x8x4xi64>, %c64: memref<8x4xi64>) {
  linalg.matmul ins(%a, %b : memref<8x16xi8>, memref<16x4xi8>) outs(%c : memref<8x4xi32>)
  linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %b : memref<8x16xi8>, memref<16x4xi8>) outs(%c : memref<8x4xi32>)
  linalg.batch_matmul ins(%ab, %bb : memref<2x8x16xi8>, memref<2x16x4xi8>) outs(%cb : memref<2x8x4xi64>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a, %b : memref<8x16xi8>, memref<16x4xi8>) outs(%c64 : memref<8x4xi64>) {
  ^bb0(%x: i8, %y: i8, %o: i64):
    %xe = arith.extui %x : i8 to i64
    %ye = arith.extui %y : i8 to i64
    %p = arith.muli %xe, %ye : i64
    %s = arith.addi %o, %p : i64
    linalg.yield %s : i64
  }
  return
}

// -----

// Integer products the runtime cannot sum exactly, or whose inputs are
// widened two ways, stay loops: i32 inputs into i64 (products past 2^53),
// i8 into i16, one input sign-extended and the other zero-extended.
func.func @integers_kept(%a32: memref<4x4xi32>, %c64: memref<4x4xi64>, %a8: memref<4x4xi8>, %c16: memref<4x4xi16>, %c32: memref<4x4xi32>) {
  // expected-remark @below {{kept as loops: mixed element types}}
  linalg.matmul ins(%a32, %a32 : memref<4x4xi32>, memref<4x4xi32>) outs(%c64 : memref<4x4xi64>)
  // expected-remark @below {{kept as loops: mixed element types}}
  linalg.matmul ins(%a8, %a8 : memref<4x4xi8>, memref<4x4xi8>) outs(%c16 : memref<4x4xi16>)
  // expected-remark @below {{kept as loops: the body is not out + ext(a) * ext(b)}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a8, %a8 : memref<4x4xi8>, memref<4x4xi8>) outs(%c32 : memref<4x4xi32>) {
  ^bb0(%x: i8, %y: i8, %o: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extui %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %o, %p : i32
    linalg.yield %s : i32
  }
  return
}
// CHECK-LABEL: func.func @integers_kept
// CHECK-NOT: meshrt_gemm
// CHECK: return

// -----

// What the BLAS cannot take stays, with a remark saying why: integers,
// mixed types that are no exact widening of both inputs (an f16 and an f32
// input, f32 into f16), a widened body that does more,
// a body that does more than multiply-add, two k loops.
func.func @kept(%ai: memref<4x4xi32>, %ci: memref<4x4xi32>, %ah: memref<4x4xf16>, %a: memref<4x4xf32>, %c: memref<4x4xf32>, %a3: memref<2x4x4xf32>, %b3: memref<4x4x4xf32>, %c2: memref<2x4xf32>, %ch: memref<4x4xf16>) {
  // expected-remark @below {{kept as loops: element type i32 (the BLAS takes f16, bf16, f32 and f64; integers only as 8-bit inputs into i32 or i64)}}
  linalg.matmul ins(%ai, %ai : memref<4x4xi32>, memref<4x4xi32>) outs(%ci : memref<4x4xi32>)
  // expected-remark @below {{kept as loops: mixed element types}}
  linalg.matmul ins(%ah, %a : memref<4x4xf16>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  // expected-remark @below {{kept as loops: mixed element types}}
  linalg.matmul ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%ch : memref<4x4xf16>)
  // expected-remark @below {{kept as loops: the body is not out + ext(a) * ext(b)}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%ah, %ah : memref<4x4xf16>, memref<4x4xf16>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f16, %y: f16, %o: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %p = arith.mulf %xe, %ye : f32
    %q = arith.mulf %p, %p : f32
    %s = arith.addf %o, %q : f32
    linalg.yield %s : f32
  }
  // expected-remark @below {{kept as loops: the body is not out + a * b}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %e = math.exp %p : f32
    %s = arith.addf %o, %e : f32
    linalg.yield %s : f32
  }
  // expected-remark @below {{kept as loops: 2 k loops (a GEMM has one)}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k1, k2) -> (m, k1, k2)>, affine_map<(m, n, k1, k2) -> (k1, k2, n)>, affine_map<(m, n, k1, k2) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
    ins(%a3, %b3 : memref<2x4x4xf32>, memref<4x4x4xf32>) outs(%c2 : memref<2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
// CHECK-LABEL: func.func @kept
// CHECK-NOT: meshrt_gemm
// CHECK: return

// -----

// A buffer with a layout that is no strided one (an affine map with a
// modulo) cannot give its strides: kept.
func.func @not_strided(%a: memref<4x4xf32, affine_map<(i, j) -> (i, j mod 2)>>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
  // expected-remark @below {{kept as loops: a buffer whose layout is not strided}}
  linalg.matmul ins(%a, %b : memref<4x4xf32, affine_map<(i, j) -> (i, j mod 2)>>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  return
}
// CHECK-LABEL: func.func @not_strided
// CHECK: linalg.matmul

// -----

// A fill is not folded when a value that may be the output under another
// name (a select of it) is written in between; a reduction loop that also
// indexes the output is an elementwise product, not a GEMM.
// CHECK-LABEL: func.func @aliases_and_k_in_output
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK: llvm.call @meshrt_gemm({{.*}}, %[[ACC:.*]]) :
// CHECK: linalg.generic
func.func @aliases_and_k_in_output(%p: i1, %a: memref<4x4xf32>, %d: memref<4x4xf32>, %v: memref<4xf32>) -> memref<4x4xf32> {
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%z : f32) outs(%c : memref<4x4xf32>)
  %s = arith.select %p, %c, %d : memref<4x4xf32>
  linalg.fill ins(%one : f32) outs(%s : memref<4x4xf32>)
  linalg.matmul ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  // expected-remark @below {{kept as loops: the k loop indexes the output}}
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (k)>, affine_map<(m, k) -> (m, k)>], iterator_types = ["parallel", "reduction"]}
    ins(%a, %v : memref<4x4xf32>, memref<4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return %c : memref<4x4xf32>
}

// -----

// Attention computed on (batch, heads) both, as propagation leaves it when
// each device holds two batch rows: two batch loops. The inner one is the
// call's; the outer one loops around it, each operand's pointer moved by its
// stride of that loop (q by 2 * 16 * 4 elements per batch row, k, read as
// [B, S, heads, d], by 16 * 2 * 4, the scores by 2 * 16 * 16). The inner
// loop (the heads) is the call's batch. The fill is folded: each
// call overwrites its own part of the output.
// CHECK-LABEL: func.func @two_batch_loops
// CHECK-DAG: %[[OVER:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[B2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[QS:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[SS:.*]] = arith.constant 512 : i64
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[B2]] step %{{.*}} : i64 {
// CHECK:   %[[QO:.*]] = arith.muli %[[I]], %[[QS]] : i64
// CHECK:   llvm.getelementptr %{{.*}}[%[[QO]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:   %[[KO:.*]] = arith.muli %[[I]], %[[QS]] : i64
// CHECK:   llvm.getelementptr %{{.*}}[%[[KO]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:   %[[SO:.*]] = arith.muli %[[I]], %[[SS]] : i64
// CHECK:   llvm.getelementptr %{{.*}}[%[[SO]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:   llvm.call @meshrt_gemm(%{{.*}}, %[[B2]], {{.*}}, %[[OVER]])
// CHECK: }
// CHECK-NOT: linalg.generic
func.func @two_batch_loops(%q: memref<2x2x16x4xf32>, %k: memref<2x16x2x4xf32>) -> memref<2x2x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<2x2x16x16xf32>
  linalg.fill ins(%z : f32) outs(%s : memref<2x2x16x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, n, h, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%q, %k : memref<2x2x16x4xf32>, memref<2x16x2x4xf32>) outs(%s : memref<2x2x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %a = arith.addf %o, %p : f32
    linalg.yield %a : f32
  }
  return %s : memref<2x2x16x16xf32>
}

// -----

// A matmul on (batch, rows) of the input against a weight: two m loops.
// The weight is not indexed by the outer loop: its pointer stays.
// CHECK-LABEL: func.func @two_m_loops
// CHECK-DAG: %[[B3:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[XS:.*]] = arith.constant 40 : i64
// CHECK-DAG: %[[YS:.*]] = arith.constant 24 : i64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[B3]] step %{{.*}} : i64 {
// CHECK:   %[[XO:.*]] = arith.muli %[[I]], %[[XS]] : i64
// CHECK:   %[[X:.*]] = llvm.getelementptr %{{.*}}[%[[XO]]]
// CHECK:   %[[YO:.*]] = arith.muli %[[I]], %[[YS]] : i64
// CHECK:   %[[Y:.*]] = llvm.getelementptr %{{.*}}[%[[YO]]]
// CHECK:   llvm.call @meshrt_gemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[X]], {{.*}}, %[[Y]], {{.*}})
// CHECK-NOT: llvm.getelementptr
// CHECK: }
func.func @two_m_loops(%x: memref<3x5x8xf64>, %w: memref<8x6xf64>, %y: memref<3x4x6xf64>) {
  %sub = memref.subview %y[0, 0, 0] [3, 4, 6] [1, 1, 1] : memref<3x4x6xf64> to memref<3x4x6xf64, strided<[24, 6, 1]>>
  %xs = memref.subview %x[0, 0, 0] [3, 4, 8] [1, 1, 1] : memref<3x5x8xf64> to memref<3x4x8xf64, strided<[40, 8, 1]>>
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
    ins(%xs, %w : memref<3x4x8xf64, strided<[40, 8, 1]>>, memref<8x6xf64>) outs(%sub : memref<3x4x6xf64, strided<[24, 6, 1]>>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %o, %p : f64
    linalg.yield %s : f64
  }
  return
}
