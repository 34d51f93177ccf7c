// RUN: mesh-opt %s --mesh-auto-shard=explain -o %t.mlir 2>&1 | FileCheck %s
// RUN: mesh-opt %t.mlir --mesh-partition | FileCheck %s --check-prefix=PART

// Ops without a sharding rule take part in the plan as propagation has
// them: their tensors whole (replicated), with the warning propagation
// gives. A tensor from outside that their regions use is whole too, and
// the plan pays for gathering it.

mesh.mesh @m(["d" = 8])

// A function with nothing annotated is left alone, and explain says so
// (before any plan: the functions are sorted first).
// CHECK: auto-shard @plain: nothing annotated, left as it is (every device runs all of it)
// CHECK-LABEL: auto-shard @dim on @m
// PART-LABEL: func.func @dim
// PART: mesh.all_gather %arg0 on @m axes = ["d"] gather_dim = 0
// PART: tensor.dim
func.func @dim(%x: tensor<?x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> (tensor<?x16xf32>, index) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %y = math.exp %x : tensor<?x16xf32>
  return %y, %n : tensor<?x16xf32>, index
}

// CHECK-LABEL: auto-shard @extract on @m
// CHECK-SAME: 3584 bytes per device
// CHECK: resharding for 'tensor.extract' {{.*}} operand 0: {{\[\[}}"d"], []] -> replicated, 3584 bytes per device
// PART-LABEL: func.func @extract
// PART: mesh.all_gather
// PART: tensor.extract
// PART: math.exp %arg0 : tensor<8x16xf32>
func.func @extract(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> (tensor<64x16xf32>, f32) {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %x[%c0, %c0] : tensor<64x16xf32>
  %y = math.exp %x : tensor<64x16xf32>
  return %y, %e : tensor<64x16xf32>, f32
}

// The whole copy an op without a rule reads (null: whole) serves a use
// that wants [[], []] too: x is gathered once, not twice.
// CHECK-LABEL: auto-shard @extract_whole on @m
// CHECK-SAME: 3584 bytes per device
// CHECK: resharding for 'math.exp' {{.*}} operand 0: reuses the copy in {{\[\[}}], []] made for an earlier use
// PART-LABEL: func.func @extract_whole
// PART-COUNT-1: mesh.all_gather
// PART-NOT: mesh.all_gather
// PART: return
func.func @extract_whole(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> (tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}, f32) {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %x[%c0, %c0] : tensor<64x16xf32>
  %y = math.exp %x : tensor<64x16xf32>
  return %y, %e : tensor<64x16xf32>, f32
}

// A region on scalars: the generated tensor is whole, and sliced for free.
// CHECK: warning: 'tensor.generate' has no sharding rule; its tensor results are replicated
// CHECK-LABEL: auto-shard @generate on @m
// CHECK-SAME: communication 0.000 us, 0 bytes per device
// PART-LABEL: func.func @generate
// PART: tensor.generate
// PART: mesh.all_slice {{.*}} slice_dim = 0 : tensor<64x16xf32> -> tensor<8x16xf32>
func.func @generate(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<64x16xf32> {
  %g = tensor.generate {
  ^bb0(%i: index, %j: index):
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    tensor.yield %f : f32
  } : tensor<64x16xf32>
  %y = arith.addf %x, %g : tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// A region that reads a tensor from outside (a transpose written as a
// generate): gathered once, priced.
// CHECK: warning: 'tensor.generate' has no sharding rule; its tensor results are replicated
// CHECK-LABEL: auto-shard @captures on @m
// CHECK-SAME: 3584 bytes per device
// CHECK: resharding for 'tensor.generate' {{.*}} captured value 0: {{\[\[}}"d"], []] -> replicated, 3584 bytes per device
// PART-LABEL: func.func @captures
// PART: %[[WHOLE:.*]] = mesh.all_gather %arg0
// PART: tensor.generate
// PART: tensor.extract %[[WHOLE]]
func.func @captures(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<16x64xf32> {
  %g = tensor.generate {
  ^bb0(%i: index, %j: index):
    %f = tensor.extract %x[%j, %i] : tensor<64x16xf32>
    tensor.yield %f : f32
  } : tensor<16x64xf32>
  return %g : tensor<16x64xf32>
}

// PART-LABEL: func.func @plain
// PART-NEXT: math.exp %arg0 : tensor<64x16xf32>
func.func @plain(%x: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %y = math.exp %x : tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}
