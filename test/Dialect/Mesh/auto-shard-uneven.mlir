// RUN: mesh-opt %s --mesh-auto-shard=explain -o %t.mlir 2>&1 | FileCheck %s
// RUN: mesh-opt %t.mlir --mesh-partition | FileCheck %s --check-prefix=PART

// An annotation that splits a dim unevenly (6 rows over 4 devices) is
// padded to divide, as propagation pads it, so that the plan partitions
// straight after: the argument takes 8 rows, blocks of 2, and the gathered
// result is sliced back to its 6 rows (before, the plan priced 1.5 rows per
// device and --mesh-partition refused the argument).

mesh.mesh @m(["d" = 4])

// (The padding runs for every function before any is planned: the remarks
// come first.)
// CHECK: remark: argument 0 of @f: dim 0 of size 6 does not divide by the 4 devices of axes #mesh<axes["d"]>: padded to 8
// CHECK: remark: argument 0 of @contract: dim 0 of size 6 does not divide
// CHECK: auto-shard @f on @m ("d")
// CHECK: argument 0 (tensor<8x10xf32>): {{\[\[}}"d"], []] (annotated)
// PART-LABEL: func.func @f(%arg0: tensor<2x10xf32>) -> tensor<6x10xf32>
// PART: math.exp %arg0 : tensor<2x10xf32>
// PART: mesh.all_gather {{.*}} valid = 6 : tensor<2x10xf32> -> tensor<8x10xf32>
// PART: tensor.extract_slice {{.*}}[0, 0] [6, 10] [1, 1]
func.func @f(%x: tensor<6x10xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<6x10xf32> {
  %y = math.exp %x : tensor<6x10xf32>
  return %y : tensor<6x10xf32>
}

// A contraction over the padded dim: the padding is masked (zeros) before
// the product, so the sum is over the 6 rows only.
// CHECK: auto-shard @contract on @m ("d")
// PART-LABEL: func.func @contract
// PART: arith.constant dense<[true, true, true, true, true, true, false, false]> : tensor<8xi1>
// PART: arith.select
// PART: linalg.matmul
// PART: mesh.all_reduce
func.func @contract(%x: tensor<6x10xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w: tensor<6x3xf32>) -> tensor<10x3xf32> {
  %e = tensor.empty() : tensor<10x6xf32>
  %xt = linalg.transpose ins(%x : tensor<6x10xf32>) outs(%e : tensor<10x6xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<10x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<10x3xf32>) -> tensor<10x3xf32>
  %r = linalg.matmul ins(%xt, %w : tensor<10x6xf32>, tensor<6x3xf32>) outs(%f : tensor<10x3xf32>) -> tensor<10x3xf32>
  return %r : tensor<10x3xf32>
}
