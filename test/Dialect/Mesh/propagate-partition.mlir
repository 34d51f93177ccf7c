// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition | FileCheck %s

// Propagation and partitioning together.

mesh.mesh @m(["a" = 2, "b" = 4])

// A K-split matmul: partial over "b", reduced where the return needs it.
// CHECK-LABEL: func.func @kred
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @kred(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
                %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
  // CHECK: %[[F:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<4x8xf32>)
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x4xf32>, tensor<4x8xf32>) outs(%[[F]] : tensor<4x8xf32>)
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // The result keeps the matmul's layout, but complete: the pending
  // reduction is finished before the return, so a caller (host code above
  // all) gets the sum, not per-device pieces of it. A result annotated with
  // `partial = sum[...]` would keep it pending (@kred_pending).
  // CHECK: %[[R:.*]] = mesh.all_reduce %[[M]] on @m axes = ["b"] reduction = sum
  // CHECK: return %[[R]] : tensor<4x8xf32>
  return %m : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @kred_pending
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK-NOT: mesh.all_reduce
// CHECK: return %[[M]] : tensor<4x8xf32>
func.func @kred_pending(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
                        %w: tensor<16x8xf32>)
    -> (tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []], partial = sum["b"]>}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %m : tensor<8x8xf32>
}

// A convolution without padding whose spatial dim is sharded: the output
// rows split over "a" (4 each), and each device needs its 4 * 1 input rows
// and the 2 its window reaches past them. Blocks of 5 input rows do not line
// up with that: device 0 needs rows [0, 6), one of device 1's; device 1
// needs [4, 10), one of device 0's. Each sends its last row to the next
// device and its first to the previous (two permutes of one row), puts them
// around its block, [-1, 6) or [4, 11), and slices its window at 1 - k
// (halo.mlir has the padded case).
// CHECK-LABEL: func.func @conv
func.func @conv(%in: tensor<1x10x10x3xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["a"], [], []]>},
                %k: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  // CHECK-NOT: mesh.all_gather
  // CHECK: %[[LAST:.*]] = tensor.extract_slice %[[IN:.*]][0, 4, 0, 0] [1, 1, 10, 3]
  // CHECK: %[[PREV:.*]] = mesh.permute %[[LAST]] on @m axes = ["a"] offset = 1 : tensor<1x1x10x3xf32>
  // CHECK: %[[FIRST:.*]] = tensor.extract_slice %[[IN]][0, 0, 0, 0] [1, 1, 10, 3]
  // CHECK: %[[NEXT:.*]] = mesh.permute %[[FIRST]] on @m axes = ["a"] offset = -1 : tensor<1x1x10x3xf32>
  // CHECK: %[[ALL:.*]] = tensor.concat dim(1) %[[PREV]], %[[IN]], %[[NEXT]] : {{.*}} -> tensor<1x7x10x3xf32>
  // CHECK: %[[K:.*]] = mesh.axis_index @m "a"
  // CHECK: %[[OFF:.*]] = arith.subi %{{.*}}, %{{.*}} : index
  // CHECK: %[[S:.*]] = tensor.extract_slice %[[ALL]][0, %[[OFF]], 0, 0] [1, 6, 10, 3] [1, 1, 1, 1]
  // CHECK: linalg.conv_2d_nhwc_hwcf ins(%[[S]], %{{.*}} : tensor<1x6x10x3xf32>, tensor<3x3x3x8xf32>) outs(%{{.*}} : tensor<1x4x8x8xf32>)
  %c = linalg.conv_2d_nhwc_hwcf ins(%in, %k : tensor<1x10x10x3xf32>, tensor<3x3x3x8xf32>) outs(%f : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %c : tensor<1x8x8x8xf32>
}

// An avg reduction annotated on a value finishes as an all_reduce avg.
// CHECK-LABEL: func.func @avg
func.func @avg(%x: tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [[]], partial = avg["b"]>})
    -> (tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [[]]>}) {
  // CHECK: mesh.all_reduce %{{.*}} on @m axes = ["b"] reduction = avg
  %y = math.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// A loop carries a sharded value; a partial init is reduced before the loop
// (loops carry complete values), and the body stays local.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[X:.*]]: tensor<8x2xf32>, %[[W:.*]]: tensor<2x8xf32>) -> tensor<8x8xf32>
func.func @loop(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["a", "b"]]>},
                %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<8x2xf32>, tensor<2x8xf32>)
  %m = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: %[[R:.*]] = mesh.all_reduce %[[M]] on @m axes = ["a", "b"] reduction = sum
  // CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[R]]) -> (tensor<8x8xf32>)
  // CHECK-NEXT: arith.mulf %[[ACC]], %[[ACC]] : tensor<8x8xf32>
  // CHECK-NOT: mesh.
  // CHECK: scf.yield
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %m) -> tensor<8x8xf32> {
    %y = arith.mulf %acc, %acc : tensor<8x8xf32>
    scf.yield %y : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}

// A declaration that is not a func.func and carries no sharding (a C
// function the program calls) is left as it is; partitioning used to crash
// on it.
// CHECK: llvm.func @printf(!llvm.ptr, ...) -> i32
llvm.func @printf(!llvm.ptr, ...) -> i32

// linalg.softmax along dim 1: rows split, the normalised dim stays whole.
// CHECK-LABEL: func.func @softmax_rows
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NOT: mesh.all_gather
// CHECK: linalg.softmax dimension(1) ins(%[[X]] : tensor<2x8xf32>)
func.func @softmax_rows(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>}) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// Split along the normalised dim, the rows are gathered first.
// CHECK-LABEL: func.func @softmax_cols
// CHECK: mesh.all_gather %{{.*}} on @m axes = ["b"] gather_dim = 1 : tensor<8x2xf32> -> tensor<8x8xf32>
// CHECK: linalg.softmax dimension(1)
func.func @softmax_cols(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>}) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// Rank-reducing slices: the dims they keep keep their factors (the row's
// columns stay split over "b"); the dim a row is taken from stays whole.
// CHECK-LABEL: func.func @row_of_split
// CHECK-SAME: (%[[A:.*]]: tensor<4x4xf32>) -> tensor<4xf32>
// CHECK: %[[G:.*]] = mesh.all_gather %[[A]] on @m axes = ["a"] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: tensor.extract_slice %[[G]][2, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<4xf32>
func.func @row_of_split(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) -> tensor<16xf32> {
  %r = tensor.extract_slice %x[2, 0] [1, 16] [1, 1] : tensor<8x16xf32> to tensor<16xf32>
  return %r : tensor<16xf32>
}

// CHECK-LABEL: func.func @row_into_split
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32>, %[[R:.*]]: tensor<4xf32>) -> tensor<8x4xf32>
// CHECK: tensor.insert_slice %[[R]] into %[[A]][2, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<8x4xf32>
func.func @row_into_split(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                          %r: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) -> tensor<8x16xf32> {
  %y = tensor.insert_slice %r into %x[2, 0] [1, 16] [1, 1] : tensor<16xf32> into tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// A splat constant used split is made again at the per-device shape, not
// sliced out of the whole one (nor gathered where it is used whole).
// CHECK-LABEL: func.func @splat_split
// CHECK-NOT: mesh.all_slice
// CHECK: %[[C:.*]] = arith.constant dense<2.500000e-01> : tensor<4x4xf32>
// CHECK-NOT: mesh.all_slice
// CHECK: arith.mulf %{{.*}}, %[[C]] : tensor<4x4xf32>
func.func @splat_split(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) -> tensor<8x16xf32> {
  %q = arith.constant dense<0.25> : tensor<8x16xf32>
  %y = arith.mulf %x, %q : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// A softmax's first step as torch-mlir writes it (aten.max.dim: the
// maximum and its unused index), on scores split by rows and columns. The
// index goes before propagation, so the reduced loop splits: a partial
// maximum per device and one all_reduce of the 4 row maxima, where keeping
// the index gathered the scores (4x4 into 4x16) for the reduction.
// CHECK-LABEL: func.func @max_dim_scores
// CHECK-SAME: (%[[S:.*]]: tensor<4x4xf32>)
// CHECK-NOT: mesh.all_gather
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4x4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: linalg.index
// CHECK: %[[R:.*]] = mesh.all_reduce %[[M]] on @m axes = ["b"] reduction = max : tensor<4xf32> -> tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[S]], %[[R]] : tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NOT: mesh.all_gather
// CHECK: return
func.func @max_dim_scores(%s: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) -> tensor<8x16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<8xf32>
  %fv = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %ei = tensor.empty() : tensor<8xi64>
  %fi = linalg.fill ins(%zero : i64) outs(%ei : tensor<8xi64>) -> tensor<8xi64>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<8x16xf32>) outs(%fv, %fi : tensor<8xf32>, tensor<8xi64>) {
  ^bb0(%in: f32, %acc: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %m = arith.maximumf %in, %acc : f32
    %c = arith.cmpf ogt, %in, %acc : f32
    %sel = arith.select %c, %ki, %idx : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<8xf32>, tensor<8xi64>)
  %eo = tensor.empty() : tensor<8x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>, affine_map<(i, k) -> (i, k)>], iterator_types = ["parallel", "parallel"]}
      ins(%s, %r#0 : tensor<8x16xf32>, tensor<8xf32>) outs(%eo : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<8x16xf32>
  return %x : tensor<8x16xf32>
}

// A collapse whose group's major dim (6) divides by "a" (2) but not then by
// "b" (4): the dim is not split at all, the collapse runs on whole rows and
// its result is sliced over both axes.
// CHECK-LABEL: func.func @collapse_partly_divisible
// CHECK-SAME: (%[[A:.*]]: tensor<6x8xf32>) -> tensor<6xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1]] : tensor<6x8xf32> into tensor<48xf32>
// CHECK: mesh.all_slice %[[C]] on @m axes = ["a", "b"] slice_dim = 0 : tensor<48xf32> -> tensor<6xf32>
func.func @collapse_partly_divisible(%a: tensor<6x8xf32>) -> (tensor<48xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"]]>}) {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<6x8xf32> into tensor<48xf32>
  return %c : tensor<48xf32>
}

// The expand back: the 48 elements split over both axes are gathered (6 rows
// do not split by 8) before the expand, then the rows sliced over "a".
// CHECK-LABEL: func.func @expand_partly_divisible
// CHECK-SAME: (%[[A:.*]]: tensor<6xf32>) -> tensor<3x8xf32>
// CHECK: %[[G:.*]] = mesh.all_gather %[[A]] on @m axes = ["a", "b"] gather_dim = 0 : tensor<6xf32> -> tensor<48xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[G]] {{\[\[}}0, 1]] output_shape [6, 8] : tensor<48xf32> into tensor<6x8xf32>
// CHECK: mesh.all_slice %[[E]] on @m axes = ["a"] slice_dim = 0 : tensor<6x8xf32> -> tensor<3x8xf32>
func.func @expand_partly_divisible(%a: tensor<48xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"]]>}) -> (tensor<6x8xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>}) {
  %c = tensor.expand_shape %a [[0, 1]] output_shape [6, 8] : tensor<48xf32> into tensor<6x8xf32>
  return %c : tensor<6x8xf32>
}

// A read row index on rows of dynamic size split over "a": the block's start
// is the device's index along "a" times its number of rows, read from the
// init it writes.
// CHECK-LABEL: func.func @dynamic_row_index
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xi32>, %[[O:.*]]: tensor<?x8xi32>)
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[O]], %{{.*}} : tensor<?x8xi32>
// CHECK-DAG: %[[A:.*]] = mesh.axis_index @m "a" : index
// CHECK: %[[START:.*]] = arith.muli %[[A]], %[[N]] : index
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.addi %[[I]], %[[START]] : index
func.func @dynamic_row_index(%x: tensor<?x8xi32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>}, %o: tensor<?x8xi32>) -> tensor<?x8xi32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xi32>) outs(%o : tensor<?x8xi32>) {
  ^bb0(%in: i32, %out: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %s = arith.addi %in, %c : i32
    linalg.yield %s : i32
  } -> tensor<?x8xi32>
  return %r : tensor<?x8xi32>
}

// The branches of an scf.if yield different layouts, and the function's
// result wants the else branch's: the result takes the layout its user
// wants, so the then path moves once (an all_to_all) and the else path not at
// all (taking the then branch's layout cost the else path two all_to_alls).
// CHECK-LABEL: func.func @if_branch_layouts
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<8x2xf32>, %{{.*}}: i1) -> tensor<8x2xf32>
// CHECK: scf.if
// CHECK-NEXT: %[[T:.*]] = mesh.all_to_all %[[A]] on @m axes = ["b"] split_dim = 1 concat_dim = 0 : tensor<2x8xf32> -> tensor<8x2xf32>
// CHECK-NEXT: scf.yield %[[T]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[B]]
// CHECK-NOT: mesh.
// CHECK: return
func.func @if_branch_layouts(%a: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>},
                             %b: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                             %c: i1) -> (tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>}) {
  %r = scf.if %c -> tensor<8x8xf32> {
    scf.yield %a : tensor<8x8xf32>
  } else {
    scf.yield %b : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}

// A loop starts from one layout and its body yields another: the loop
// carries the body's layout, and its initial value moves once, before the
// loop, not on every iteration.
// CHECK-LABEL: func.func @loop_body_layout
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<8x2xf32>
// CHECK: %[[I:.*]] = mesh.all_to_all %[[A]] on @m axes = ["b"] split_dim = 1 concat_dim = 0
// CHECK-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %[[I]]) -> (tensor<8x2xf32>)
// CHECK-NOT: mesh.
// CHECK: scf.yield
func.func @loop_body_layout(%a: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>},
                            %b: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                            %n: index) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> tensor<8x8xf32> {
    %y = arith.mulf %b, %b : tensor<8x8xf32>
    scf.yield %y : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}

// A bias broadcast over the batch (issue 30): the broadcast's input says
// nothing of the batch dim, so the add's layout (the batch's) decides it.
// An FSDP-sharded bias is gathered (its 32 elements), not broadcast to the
// whole batch and moved with an all_to_all; a replicated one is broadcast
// over this device's rows only, not over the whole batch and sliced.
// CHECK-LABEL: func.func @bias_sharded
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[G:.*]] = mesh.all_gather %[[B]] on @m axes = ["b"] gather_dim = 0 : tensor<4xf32> -> tensor<16xf32>
// CHECK-NOT: mesh.
// CHECK: linalg.broadcast ins(%[[G]] : tensor<16xf32>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK-NOT: mesh.
// CHECK: return
func.func @bias_sharded(%x: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>},
                        %b: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>})
    -> (tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>}) {
  %e = tensor.empty() : tensor<16x16xf32>
  %bb = linalg.broadcast ins(%b : tensor<16xf32>) outs(%e : tensor<16x16xf32>) dimensions = [0]
  %y = arith.addf %x, %bb : tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
// CHECK-LABEL: func.func @bias_replicated
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NOT: mesh.
// CHECK: linalg.broadcast ins(%[[B]] : tensor<16xf32>) outs(%{{.*}} : tensor<2x16xf32>)
// CHECK-NOT: mesh.
// CHECK: return
func.func @bias_replicated(%x: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>},
                           %b: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [[]]>})
    -> (tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>}) {
  %e = tensor.empty() : tensor<16x16xf32>
  %bb = linalg.broadcast ins(%b : tensor<16xf32>) outs(%e : tensor<16x16xf32>) dimensions = [0]
  %y = arith.addf %x, %bb : tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
// With nothing else to decide it, the broadcast keeps its input's layout
// along the other dims.
// CHECK-LABEL: func.func @bias_alone
// CHECK-SAME: (%[[B:.*]]: tensor<4xf32>) -> tensor<16x4xf32>
// CHECK-NOT: mesh.
// CHECK: linalg.broadcast ins(%[[B]] : tensor<4xf32>) outs(%{{.*}} : tensor<16x4xf32>)
func.func @bias_alone(%b: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %bb = linalg.broadcast ins(%b : tensor<16xf32>) outs(%e : tensor<16x16xf32>) dimensions = [0]
  return %bb : tensor<16x16xf32>
}
