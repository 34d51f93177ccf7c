// RUN: mesh-opt %s --mesh-gpu-linalg-to-cublas=report -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mesh-opt %s --mesh-gpu-linalg-to-cublas="precision=tf32" -split-input-file | FileCheck %s --check-prefix=TF32
// RUN: mesh-opt %s --mesh-gpu-linalg-to-cublas="host=true" -split-input-file | FileCheck %s --check-prefix=HOST
// RUN: not mesh-opt %s --mesh-gpu-linalg-to-cublas="precision=fp8" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// Contractions on buffers to meshrt_gpu_gemm (cuBLASLt), with the zero fill
// before them and the bias and activation after them folded into the call.
// The last i32 arguments are accumulate, the bias, the epilogue (0 none,
// 1 ReLU, 2 GELU) and the precision (0 highest, 1 tf32, 2 bf16).

// A linear layer: zero fill, matmul, then one generic that adds a bias
// (read as a vector along the columns, the operands in either order) and
// applies ReLU (maximumf with a constant from outside the body). The call
// writes %y where the generic did; the product's buffer is gone.
// CHECK-LABEL: llvm.mlir.global internal @__mesh_gemm_plan_0()
// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[W:.*]]: memref<16x32xf32>, %[[B:.*]]: memref<32xf32>, %[[Y:.*]]: memref<8x32xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: {{^ *linalg\.}}
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[BIAS:.*]] = llvm.inttoptr
// CHECK: %[[DT:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[ACC:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[ACT:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[PREC:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[PLAN:.*]] = llvm.mlir.addressof @__mesh_gemm_plan_0
// CHECK-NEXT: %[[STREAM:.*]] = llvm.mlir.zero
// CHECK-NEXT: llvm.call @meshrt_gpu_gemm(%[[PLAN]], %[[DT]], {{.*}}, %[[ACC]], %[[BIAS]], %[[ACT]], %[[PREC]], %[[STREAM]])
// CHECK: cf.assert
// CHECK-NOT: {{^ *linalg\.}}
// CHECK: return
// TF32: module attributes {mesh.matmul_precision = "tf32"}
// TF32-LABEL: func.func @linear_relu
// TF32: %[[ACT:.*]] = arith.constant 1 : i32
// TF32-NEXT: %[[PREC:.*]] = arith.constant 1 : i32
// TF32: llvm.call @meshrt_gpu_gemm({{.*}}, %[[ACT]], %[[PREC]], %{{.*}})
// HOST-LABEL: func.func @linear_relu
// HOST: %[[ACT:.*]] = arith.constant 1 : i32
// HOST: llvm.call @meshrt_gemm_epilogue({{.*}}, %[[ACT]]) : (i32, i64, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, i32, !llvm.ptr, i32) -> i32
// HOST-NOT: meshrt_gpu_gemm
// BAD: mesh-gpu-linalg-to-cublas: unknown precision 'fp8' (expected highest, tf32 or bf16)
func.func @linear_relu(%x: memref<8x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>, %y: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<8x32xf32>, memref<32xf32>) outs(%y : memref<8x32xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %bv, %v : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<8x32xf32>
  return
}

// -----

// The GPT MLP's first linear as torch-mlir spells it: [B*S, H] x [H, F]
// into zeros, read as [B, S, F] through an expand_shape, the bias broadcast
// into a buffer of its own and added, then GELU (tanh form, f32 constants)
// in a second generic. One call with the bias and GELU writes the last
// buffer, seen as [B*S, F].
// CHECK-LABEL: func.func @gpt_fc1
// CHECK: %[[G:.*]] = memref.alloc() : memref<2x4x32xf32>
// CHECK: %[[D:.*]] = memref.collapse_shape %[[G]] {{\[\[}}0, 1], [2]] : memref<2x4x32xf32> into memref<8x32xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[D]]
// CHECK: %[[ACT:.*]] = arith.constant 2 : i32
// CHECK: llvm.call @meshrt_gpu_gemm({{.*}}, %[[ACT]], %{{.*}}, %{{.*}})
// CHECK-NOT: {{^ *linalg\.}}
// CHECK-NOT: memref.alloc
// CHECK: return %[[G]]
func.func @gpt_fc1(%x: memref<8x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>) -> memref<2x4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %gelu_k = arith.constant 0.797884583 : f32
  %gelu_c = arith.constant 4.471500e-02 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %e = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 32] : memref<8x32xf32> into memref<2x4x32xf32>
  %bb = memref.alloc() : memref<2x4x32xf32>
  linalg.broadcast ins(%b : memref<32xf32>) outs(%bb : memref<2x4x32xf32>) dimensions = [0, 1]
  %t = memref.alloc() : memref<2x4x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %bb : memref<2x4x32xf32>, memref<2x4x32xf32>) outs(%t : memref<2x4x32xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  }
  memref.dealloc %bb : memref<2x4x32xf32>
  memref.dealloc %c : memref<8x32xf32>
  %g = memref.alloc() : memref<2x4x32xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t : memref<2x4x32xf32>) outs(%g : memref<2x4x32xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %x2 = arith.mulf %a0, %a0 : f32
    %x3 = arith.mulf %x2, %a0 : f32
    %t0 = arith.mulf %x3, %gelu_c : f32
    %t1 = arith.addf %a0, %t0 : f32
    %t2 = arith.mulf %t1, %gelu_k : f32
    %t3 = math.tanh %t2 : f32
    %t4 = arith.addf %t3, %one : f32
    %t5 = arith.mulf %a0, %half : f32
    %y = arith.mulf %t5, %t4 : f32
    linalg.yield %y : f32
  }
  memref.dealloc %t : memref<2x4x32xf32>
  return %g : memref<2x4x32xf32>
}

// -----

// GELU written with erf is not cuBLASLt's: the bias add is folded, the erf
// GELU stays a kernel reading the call's output.
// CHECK-LABEL: func.func @erf_gelu
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[T]]
// CHECK: %[[ACT:.*]] = arith.constant 0 : i32
// CHECK-NEXT: arith.constant 0 : i32
// CHECK: llvm.call @meshrt_gpu_gemm({{.*}}, %[[ACT]], %{{.*}}, %{{.*}})
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<4x8xf32>)
// CHECK: math.erf
func.func @erf_gelu(%x: memref<4x6xf32>, %w: memref<6x8xf32>, %b: memref<8xf32>, %y: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.707106769 : f32
  %c = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x8xf32>)
  linalg.matmul ins(%x, %w : memref<4x6xf32>, memref<6x8xf32>) outs(%c : memref<4x8xf32>)
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<4x8xf32>, memref<8xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %u = arith.mulf %a, %rsqrt2 : f32
    %e = math.erf %u : f32
    %e1 = arith.addf %e, %one : f32
    %h = arith.mulf %a, %half : f32
    %r = arith.mulf %h, %e1 : f32
    linalg.yield %r : f32
  }
  memref.dealloc %t : memref<4x8xf32>
  return
}

// -----

// Bodies that agree with ReLU near 0 but are not ReLU: a clamp at 9 (the
// sampling recognition took it for ReLU and dropped the clamp) and a leaky
// ReLU. Neither is folded; the product is called with no epilogue and the
// generics stay kernels.
// CHECK-LABEL: func.func @not_relu
// CHECK: llvm.call @meshrt_gpu_gemm
// CHECK: arith.minimumf
// CHECK: llvm.call @meshrt_gpu_gemm
// CHECK: arith.select
func.func @not_relu(%x: memref<4x6xf32>, %w: memref<6x8xf32>, %b: memref<8xf32>, %y: memref<4x8xf32>, %y2: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %nine = arith.constant 9.0 : f32
  %slope = arith.constant 0.01 : f32
  %c = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x8xf32>)
  // expected-remark @+1 {{epilogue not folded: the elementwise op's body is not a bias add, ReLU or the tanh GELU (cuBLASLt's epilogues)}}
  linalg.matmul ins(%x, %w : memref<4x6xf32>, memref<6x8xf32>) outs(%c : memref<4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<4x8xf32>, memref<8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    %m = arith.maximumf %s, %zero : f32
    %r = arith.minimumf %m, %nine : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<4x8xf32>
  %c2 = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<4x8xf32>)
  // expected-remark @+1 {{epilogue not folded: the elementwise op's body is not a bias add, ReLU or the tanh GELU (cuBLASLt's epilogues)}}
  linalg.matmul ins(%x, %w : memref<4x6xf32>, memref<6x8xf32>) outs(%c2 : memref<4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<4x8xf32>) outs(%y2 : memref<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %pos = arith.cmpf ogt, %v, %zero : f32
    %l = arith.mulf %v, %slope : f32
    %r = arith.select %pos, %v, %l : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c2 : memref<4x8xf32>
  return
}

// -----

// A bias broadcast into the accumulator, then a transposed B (a generic
// whose B map reads [n, k], torch-mlir's F.linear without the transpose):
// the bias goes with the call, accumulate 0, no epilogue after. ReLU as a
// compare and select.
// CHECK-LABEL: func.func @bias_in_accumulator
// CHECK-SAME: (%{{.*}}: memref<4x6xf32>, %[[W:.*]]: memref<8x6xf32>, %[[B:.*]]: memref<8xf32>, %[[Y:.*]]: memref<4x8xf32>)
// CHECK-NOT: {{^ *linalg.broadcast}}
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[ACC:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[ACT:.*]] = arith.constant 1 : i32
// CHECK: llvm.call @meshrt_gpu_gemm({{.*}}, %[[ACC]], %{{.*}}, %[[ACT]], %{{.*}}, %{{.*}})
// CHECK-NOT: {{^ *linalg\.}}
func.func @bias_in_accumulator(%x: memref<4x6xf32>, %w: memref<8x6xf32>, %b: memref<8xf32>, %y: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x8xf32>
  linalg.broadcast ins(%b : memref<8xf32>) outs(%c : memref<4x8xf32>) dimensions = [0]
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x6xf32>, memref<8x6xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %pos, %v, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<4x8xf32>
  return
}

// -----

// A product that accumulates into its output (no fill) takes no epilogue;
// a batch_matmul in f64; a matvec (no n loop).
// CHECK-LABEL: func.func @accumulating
// CHECK: %[[DT:.*]] = arith.constant 3 : i32
// CHECK-NEXT: %[[ACC:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[ACT:.*]] = arith.constant 0 : i32
// CHECK: llvm.call @meshrt_gpu_gemm(%{{.*}}, %[[DT]], {{.*}}, %[[ACC]], %{{.*}}, %[[ACT]], %{{.*}}, %{{.*}})
// CHECK: llvm.call @meshrt_gpu_gemm
// CHECK-NOT: {{^ *linalg.batch_matmul}}
// CHECK-NOT: {{^ *linalg.matvec}}
func.func @accumulating(%a: memref<3x4x5xf64>, %b: memref<3x5x6xf64>, %c: memref<3x4x6xf64>, %m: memref<4x5xf32>, %v: memref<5xf32>, %r: memref<4xf32>) {
  // expected-remark @+1 {{epilogue not folded: the product accumulates into its output (cuBLASLt's epilogue would need another output buffer)}}
  linalg.batch_matmul ins(%a, %b : memref<3x4x5xf64>, memref<3x5x6xf64>) outs(%c : memref<3x4x6xf64>)
  // expected-remark @+1 {{epilogue not folded: the product accumulates}}
  linalg.matvec ins(%m, %v : memref<4x5xf32>, memref<5xf32>) outs(%r : memref<4xf32>)
  return
}

// -----

// Kept as kernels: an integer product, and an operand with no unit stride
// (every other row and column of a bigger matrix).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: meshrt_gpu_gemm
// CHECK: linalg.matmul
// CHECK: linalg.matmul
func.func @kept(%a: memref<4x4xi32>, %b: memref<4x4xi32>, %c: memref<4x4xi32>, %big: memref<8x8xf32>, %w: memref<4x4xf32>, %y: memref<4x4xf32>) {
  // expected-remark @+1 {{kept as kernels: integer element types (only float products go to cuBLASLt)}}
  linalg.matmul ins(%a, %b : memref<4x4xi32>, memref<4x4xi32>) outs(%c : memref<4x4xi32>)
  %s = memref.subview %big[0, 0] [4, 4] [2, 2] : memref<8x8xf32> to memref<4x4xf32, strided<[16, 2]>>
  // expected-remark @+1 {{kept as kernels: operand A has no unit stride along its rows or columns (cuBLASLt's layouts need one)}}
  linalg.matmul ins(%s, %w : memref<4x4xf32, strided<[16, 2]>>, memref<4x4xf32>) outs(%y : memref<4x4xf32>)
  return
}

// -----

// The product's result read twice: no epilogue (its buffer does not die
// at the first reader); a second product after a bias add that is not
// along the columns (a vector along the rows) keeps that generic.
// CHECK-LABEL: func.func @not_folded
// CHECK: llvm.call @meshrt_gpu_gemm
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: llvm.call @meshrt_gpu_gemm
// CHECK: linalg.generic
func.func @not_folded(%x: memref<4x4xf32>, %w: memref<4x4xf32>, %b: memref<4xf32>, %y: memref<4x4xf32>, %z: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  // expected-remark @+1 {{epilogue not folded: the product's result has other users than one elementwise op}}
  linalg.matmul ins(%x, %w : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%y : memref<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%z : memref<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<4x4xf32>
  %d = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%d : memref<4x4xf32>)
  // expected-remark @+1 {{epilogue not folded: the elementwise op's other input is not a bias along the output's columns}}
  linalg.matmul ins(%x, %w : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%d, %b : memref<4x4xf32>, memref<4xf32>) outs(%y : memref<4x4xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  }
  memref.dealloc %d : memref<4x4xf32>
  return
}

// -----

// Several batch loops (attention on (batch, heads), unmerged): an scf.for
// around the call over the outer one.
// CHECK-LABEL: func.func @two_batch_loops
// CHECK: scf.for
// CHECK: llvm.getelementptr
// CHECK: llvm.call @meshrt_gpu_gemm
func.func @two_batch_loops(%q: memref<2x3x4x8xf32>, %k: memref<2x3x8x4xf32>, %s: memref<2x3x4x4xf32>) {
  // expected-remark @+1 {{epilogue not folded: the product accumulates}}
  linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, d, j)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x3x4x8xf32>, memref<2x3x8x4xf32>) outs(%s : memref<2x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// Mixed precision: bf16 inputs into an f32 accumulator (the named op's
// arith.extf), with the zero fill, an f32 bias and GELU folded, is one
// meshrt_gpu_gemm_mixed (bf16 = 1, f32 = 2) writing %y; a generic that
// widens each f16 input (0) in its body, reading a view, is the same
// product, accumulating. f32 into f64 and i8 into i32 stay kernels.
// CHECK-LABEL: func.func @mixed
// CHECK-NOT: {{^ *linalg\.(fill|matmul)}}
// CHECK: memref.extract_aligned_pointer_as_index %arg2 : memref<32xf32>
// CHECK: %[[BIAS:.*]] = llvm.inttoptr
// CHECK: %[[IN:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[OUT:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[ACC:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[ACT:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[PREC:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[PLAN:.*]] = llvm.mlir.addressof @__mesh_gemm_plan_{{[0-9]+}}
// CHECK-NEXT: %[[STREAM:.*]] = llvm.mlir.zero
// CHECK-NEXT: llvm.call @meshrt_gpu_gemm_mixed(%[[PLAN]], %[[IN]], %[[OUT]], {{.*}}, %[[ACC]], %[[BIAS]], %[[ACT]], %[[PREC]], %[[STREAM]]) : (!llvm.ptr, i32, i32, i64, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, i32, !llvm.ptr, i32, i32, !llvm.ptr) -> i32
// CHECK: %[[IN2:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[OUT2:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[ACC2:.*]] = arith.constant 1 : i32
// CHECK: llvm.call @meshrt_gpu_gemm_mixed(%{{.*}}, %[[IN2]], %[[OUT2]], {{.*}}, %[[ACC2]],
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK-NOT: meshrt_gpu_gemm
// CHECK: return
// HOST-LABEL: func.func @mixed
// HOST: llvm.call @meshrt_gemm_epilogue_mixed({{.*}}) : (i32, i32, i64, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, i32, !llvm.ptr, i32) -> i32
// HOST: llvm.call @meshrt_gemm_epilogue_mixed(
// HOST-NOT: meshrt_gpu_gemm
func.func @mixed(%x: memref<8x16xbf16>, %w: memref<16x32xbf16>, %b: memref<32xf32>, %y: memref<8x32xf32>,
                 %big: memref<24x4xf16>, %v: memref<4x6xf16>, %acc: memref<2x6xf32>,
                 %x32: memref<4x4xf32>, %y64: memref<4x4xf64>, %i: memref<4x4xi8>, %o: memref<4x4xi32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xbf16>, memref<16x32xbf16>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<8x32xf32>, memref<32xf32>) outs(%y : memref<8x32xf32>) {
  ^bb0(%e: f32, %bv: f32, %out: f32):
    %s = arith.addf %e, %bv : f32
    %x3 = arith.mulf %s, %s : f32
    %x3b = arith.mulf %x3, %s : f32
    %c0 = arith.constant 0.044715 : f32
    %t0 = arith.mulf %c0, %x3b : f32
    %t1 = arith.addf %s, %t0 : f32
    %c1 = arith.constant 0.7978845608 : f32
    %t2 = arith.mulf %c1, %t1 : f32
    %t3 = math.tanh %t2 : f32
    %one = arith.constant 1.0 : f32
    %t4 = arith.addf %one, %t3 : f32
    %half = arith.constant 0.5 : f32
    %t5 = arith.mulf %half, %s : f32
    %r = arith.mulf %t5, %t4 : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<8x32xf32>
  // A view 8 elements into %big, widened in a generic's body: accumulates.
  %a = memref.subview %big[2, 0] [2, 4] [1, 1] : memref<24x4xf16> to memref<2x4xf16, strided<[4, 1], offset: 8>>
  // expected-remark @+1 {{epilogue not folded: the product accumulates}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %v : memref<2x4xf16, strided<[4, 1], offset: 8>>, memref<4x6xf16>) outs(%acc : memref<2x6xf32>) {
  ^bb0(%p: f16, %q: f16, %r: f32):
    %pe = arith.extf %p : f16 to f32
    %qe = arith.extf %q : f16 to f32
    %m = arith.mulf %pe, %qe : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  // expected-remark @+1 {{kept as kernels: mixed element types f32 into f64 (cuBLASLt takes f16 or bf16 inputs into f32)}}
  linalg.matmul ins(%x32, %x32 : memref<4x4xf32>, memref<4x4xf32>) outs(%y64 : memref<4x4xf64>)
  // expected-remark @+1 {{kept as kernels: integer element types (only float products go to cuBLASLt)}}
  linalg.matmul ins(%i, %i : memref<4x4xi8>, memref<4x4xi8>) outs(%o : memref<4x4xi32>)
  return
}
