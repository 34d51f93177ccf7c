// RUN: mesh-opt %s --mesh-propagate-sharding=exact-division -split-input-file -verify-diagnostics -allow-unregistered-dialect | FileCheck %s

mesh.mesh @m(["a" = 2, "b" = 4])

// Forward through elementwise ops and tensor.empty/linalg.fill nobody
// annotated; the contraction's sharded K makes the matmul partial; the weight
// takes the K sharding backward.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], ["b"]]>}
// CHECK-SAME: %{{.*}}: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"b"], []]>}
func.func @mlp(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>},
               %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  // CHECK: math.tanh {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], ["b"]]>}
  %y = math.tanh %x : tensor<8x16xf32>
  %z = arith.constant 0.0 : f32
  // CHECK: tensor.empty() {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], []]>}
  %e = tensor.empty() : tensor<8x8xf32>
  // CHECK: linalg.fill {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], []]>}
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], []], partial = sum["b"]>}
  %m = linalg.matmul ins(%y, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %m : tensor<8x8xf32>
}

// Backward: a result annotation reaches the unannotated arguments.
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%{{.*}}: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[\], \["b"\]\]}}>}, %{{.*}}: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, {{\[\[\], \["b"\]\]}}>})
func.func @backward(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>)
    -> (tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>}) {
  %s = arith.addf %x, %y : tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// Conflict: both operands shard different dims on the same axis; the first
// operand wins and the second operand's axis is not reused.
// CHECK-LABEL: func.func @conflict
func.func @conflict(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>},
                    %y: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>}) -> tensor<8x8xf32> {
  // CHECK: arith.mulf {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"b"], []]>}
  %s = arith.mulf %x, %y : tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// A factor whose size does not divide by the axes is left unsharded.
// CHECK-LABEL: func.func @not_divisible
func.func @not_divisible(%x: tensor<8x6xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>},
                         %y: tensor<8x6xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}) -> tensor<8x6xf32> {
  // CHECK: arith.addf {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], []]>}
  %s = arith.addf %x, %y : tensor<8x6xf32>
  return %s : tensor<8x6xf32>
}

// An unknown op is replicated, with a warning that names it.
func.func @no_rule(%x: tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) -> tensor<8xf32> {
  // expected-warning @+1 {{'test.opaque' has no sharding rule; its tensor results are replicated}}
  %y = "test.opaque"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])

// A max reduction over a sharded dim is partial max; an accumulator that is
// not a neutral fill keeps a sum reduction from being split.
// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                      %acc: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK: linalg.reduce {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[\]\]}}, partial = max["b"]>}
  %mx = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%acc : tensor<8xf32>) dimensions = [1]
    (%in: f32, %out: f32) {
      %r = arith.maximumf %in, %out : f32
      linalg.yield %r : f32
    }
  // CHECK: linalg.reduce {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[\]\]}}>}
  %sm = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%acc : tensor<8xf32>) dimensions = [1]
    (%in: f32, %out: f32) {
      %r = arith.addf %in, %out : f32
      linalg.yield %r : f32
    }
  return %mx, %sm : tensor<8xf32>, tensor<8xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])

// Named linalg ops of one name, types and properties share one derived
// rule; what the rule reads of the accumulators is part of the key: a
// matmul into a fill of zero splits K (partial sum), into a fill of one or
// an argument not; a matmul whose indexing_maps transpose x (a property;
// the types are the same) splits M instead. The accumulator of one is seen
// first, so a cached rule that ignored it would split K there too.
// CHECK-LABEL: func.func @named_rule_sharing
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[\], \[\]\]}}>} ins(%arg0, %arg1 : {{.*}}) outs(%[[F1:.*]] :
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[\], \[\]\]}}, partial = sum["b"]>}
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[\], \[\]\]}}>} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 :
// CHECK: linalg.matmul indexing_maps = {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\["b"\], \[\]\]}}>}
func.func @named_rule_sharing(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
                              %w: tensor<8x8xf32>, %acc: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %f1 = linalg.fill ins(%one : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m1 = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m0 = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m2 = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m3 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %m0, %m1, %m2, %m3 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])

// explain says where each sharding came from.
func.func @explain(%x: tensor<8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"]]>}) -> tensor<8xf32> {
  %y = math.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

mesh.mesh @d(["a" = ?, "b" = 4])

// An axis of unknown size still propagates where its sharding says it
// divides: onto dims of the size it was found on, or multiples of it.
// CHECK-LABEL: func.func @dynamic_axis
// CHECK: math.tanh {{.*}} {mesh.sharding = #mesh.sharding<@d, {{\[\[}}"a"], []]>}
func.func @dynamic_axis(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@d, [["a"], []]>}) -> tensor<8x16xf32> {
  %y = math.tanh %x : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// Not onto a smaller dim: a stride-2 slice of half a dim over ["b", "a"]
// (4 * ? divides 16, not necessarily 8) is replicated, and the slice taken
// from the whole dim. With "a" = 4 the dim would be 8 elements over 16
// devices; gen_partition.py found it on 8 ranks.
// CHECK-LABEL: func.func @dynamic_axis_window
// CHECK: tensor.extract_slice {{.*}} {mesh.sharding = #mesh.sharding<@d, {{\[\[}}], []]>}
func.func @dynamic_axis_window(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@d, [[], ["b", "a"]]>}) -> tensor<8x8xf32> {
  %s = tensor.extract_slice %x[0, 1] [8, 8] [1, 2] : tensor<8x16xf32> to tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// Through a reshape, a `?` axis goes to the part that what it shards is
// left in: [32] over ["b", "a"] expanded to [4, 8] is ["b"] on the 4 (split
// down to one) and ["a"] on the 8, which ? divides as it divides 32 / 4.
// CHECK-LABEL: func.func @dynamic_axis_expand
// CHECK: tensor.expand_shape {{.*}} {mesh.sharding = #mesh.sharding<@d, {{\[\[}}"b"], ["a"], []]>}
func.func @dynamic_axis_expand(%x: tensor<32x4xf32> {mesh.sharding = #mesh.sharding<@d, [["b", "a"], []]>}) -> tensor<4x8x4xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [4, 8, 4] : tensor<32x4xf32> into tensor<4x8x4xf32>
  return %e : tensor<4x8x4xf32>
}

// Not the whole list onto the major dim: [32] expanded to [2, 16] cannot
// give ["b", "a"] to the 2, nor split it down to one with "b" = 4 first.
// CHECK-LABEL: func.func @dynamic_axis_expand_small
// CHECK: tensor.expand_shape {{.*}} {mesh.sharding = #mesh.sharding<@d, {{\[\[}}], [], []]>}
func.func @dynamic_axis_expand_small(%x: tensor<32x4xf32> {mesh.sharding = #mesh.sharding<@d, [["b", "a"], []]>}) -> tensor<2x16x4xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 16, 4] : tensor<32x4xf32> into tensor<2x16x4xf32>
  return %e : tensor<2x16x4xf32>
}

// -----

// A loop with a counter beside its tensor: the counter's entry is `unit`, so
// the loop still carries its tensor's sharding.
mesh.mesh @m(["x" = 4])
// CHECK-LABEL: func.func @while_with_counter
// CHECK: scf.while
// CHECK: } attributes {mesh.sharding = [#mesh.sharding<@m, {{\[\["x"\], \[\]\]}}>, unit]}
func.func @while_with_counter(%a: tensor<8x4xi32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}, %n: i32) -> tensor<8x4xi32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r:2 = scf.while (%v = %a, %i = %c0) : (tensor<8x4xi32>, i32) -> (tensor<8x4xi32>, i32) {
    %go = arith.cmpi slt, %i, %n : i32
    scf.condition(%go) %v, %i : tensor<8x4xi32>, i32
  } do {
  ^bb0(%w: tensor<8x4xi32>, %j: i32):
    %d = arith.addi %w, %w : tensor<8x4xi32>
    %k = arith.addi %j, %c1 : i32
    scf.yield %d, %k : tensor<8x4xi32>, i32
  }
  return %r#0 : tensor<8x4xi32>
}

// -----

// With exact-division, an annotation that does not divide its tensor is the
// user's to fix: it is named before propagation spreads it to other values
// (by default the dim is padded: pad-to-divide.mlir).
mesh.mesh @m(["a" = 2, "b" = 4])
// expected-error @+1 {{argument 0 of @odd_arg of type 'tensor<6x8xf32>' cannot be sharded as #mesh.sharding<@m, [["b"], []]>: dim 0 of size 6 does not divide by the 4 devices of axes ["b"]}}
func.func @odd_arg(%x: tensor<6x8xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])
// expected-error @+1 {{result 0 of @odd_result of type 'tensor<8x1xf32>' cannot be sharded as #mesh.sharding<@m, [[], ["a"]]>: dim 1 of size 1 does not divide by the 2 devices of axes ["a"]}}
func.func @odd_result(%x: tensor<8x1xf32>) -> (tensor<8x1xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["a"]]>}) {
  return %x : tensor<8x1xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])
func.func @odd_constraints(%x: tensor<12x8xf32>) -> tensor<12x8xf32> {
  // expected-error @+1 {{the mesh.shard operand of type 'tensor<12x8xf32>' cannot be sharded as #mesh.sharding<@m, [["a", "b"], []]>: dim 0 of size 12 does not divide by the 8 devices of axes ["a", "b"]}}
  %0 = mesh.shard %x : tensor<12x8xf32> to #mesh.sharding<@m, [["a", "b"], []]>
  return %0 : tensor<12x8xf32>
}

// -----

mesh.mesh @m(["a" = 2, "b" = 4])
func.func @odd_op(%x: tensor<12x8xf32>) -> tensor<12x8xf32> {
  // expected-error @+1 {{result 0 of 'arith.negf' of type 'tensor<12x8xf32>' cannot be sharded as #mesh.sharding<@m, [["b", "a"], []]>: dim 0 of size 12 does not divide by the 8 devices of axes ["b", "a"]}}
  %0 = arith.negf %x {mesh.sharding = #mesh.sharding<@m, [["b", "a"], []]>} : tensor<12x8xf32>
  return %0 : tensor<12x8xf32>
}

// -----

// A `?` axis or a `?` dim is checked when the program runs, not here.
mesh.mesh @d(["x" = ?])
// CHECK-LABEL: func.func @dynamic_fits
func.func @dynamic_fits(%x: tensor<6x?xf32> {mesh.sharding = #mesh.sharding<@d, [["x"], []]>}) -> (tensor<6x?xf32> {mesh.sharding = #mesh.sharding<@m2, [[], ["y"]]>}) {
  return %x : tensor<6x?xf32>
}
mesh.mesh @m2(["y" = 4])

// -----

// torch-mlir's aten.max.dim with its index unused: the index result goes
// before propagation, with the linalg.index and select that only it needed,
// and the maximum is a max reduction that may split its reduced dim.
mesh.mesh @m(["a" = 2, "b" = 4])
#in = affine_map<(i, k) -> (i, k)>
#out = affine_map<(i, k) -> (i)>
// CHECK-LABEL: func.func @max_dim_unused_index
// CHECK: %[[M:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<16x16xf32>) outs(%{{.*}} : tensor<16xf32>) attrs = {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"]], partial = max["b"]>}
// CHECK-NOT: linalg.index
// CHECK-NOT: arith.select
// CHECK: } -> tensor<16xf32>
// CHECK: return %[[M]]
func.func @max_dim_unused_index(%x: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) -> tensor<16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<16xf32>
  %v = linalg.fill ins(%ninf : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %ei = tensor.empty() : tensor<16xi64>
  %i = linalg.fill ins(%zero : i64) outs(%ei : tensor<16xi64>) -> tensor<16xi64>
  %r:2 = linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x16xf32>) outs(%v, %i : tensor<16xf32>, tensor<16xi64>) {
  ^bb0(%in: f32, %acc: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %m = arith.maximumf %in, %acc : f32
    %c = arith.cmpf ogt, %in, %acc : f32
    %s = arith.select %c, %ki, %idx : i64
    linalg.yield %m, %s : f32, i64
  } -> (tensor<16xf32>, tensor<16xi64>)
  return %r#0 : tensor<16xf32>
}

// -----

// The same op annotated: every result carries an entry, a user's
// constraint, so the unused index stays, with the index read.
mesh.mesh @m(["a" = 2, "b" = 4])
#in = affine_map<(i, k) -> (i, k)>
#out = affine_map<(i, k) -> (i)>
// CHECK-LABEL: func.func @max_dim_annotated
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16xi64>) attrs = {mesh.sharding = [#mesh.sharding<@m, {{\[\[}}"a"]]>, #mesh.sharding<@m, {{\[\[}}"a"]]>]}
// CHECK: linalg.index 1
// CHECK: arith.select
// CHECK: return %[[R]]#0
func.func @max_dim_annotated(%x: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}, %v: tensor<16xf32>, %i: tensor<16xi64>) -> tensor<16xf32> {
  %r:2 = linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x16xf32>) outs(%v, %i : tensor<16xf32>, tensor<16xi64>) attrs = {mesh.sharding = [#mesh.sharding<@m, [["a"]]>, #mesh.sharding<@m, [["a"]]>]} {
  ^bb0(%in: f32, %acc: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %m = arith.maximumf %in, %acc : f32
    %c = arith.cmpf ogt, %in, %acc : f32
    %s = arith.select %c, %ki, %idx : i64
    linalg.yield %m, %s : f32, i64
  } -> (tensor<16xf32>, tensor<16xi64>)
  return %r#0 : tensor<16xf32>
}

// -----

// The index used: both results stay; the reduced loop, whose index the
// body reads, stays whole, and the rows keep their split.
mesh.mesh @m(["a" = 2, "b" = 4])
#in = affine_map<(i, k) -> (i, k)>
#out = affine_map<(i, k) -> (i)>
// CHECK-LABEL: func.func @max_dim_used_index
// CHECK: linalg.generic {{.*}} attrs = {mesh.sharding = [#mesh.sharding<@m, {{\[\[}}"a"]]>, #mesh.sharding<@m, {{\[\[}}"a"]]>]}
// CHECK: linalg.index 1
func.func @max_dim_used_index(%x: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}, %v: tensor<16xf32>, %i: tensor<16xi64>) -> (tensor<16xf32>, tensor<16xi64>) {
  %r:2 = linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x16xf32>) outs(%v, %i : tensor<16xf32>, tensor<16xi64>) {
  ^bb0(%in: f32, %acc: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %m = arith.maximumf %in, %acc : f32
    %c = arith.cmpf ogt, %in, %acc : f32
    %s = arith.select %c, %ki, %idx : i64
    linalg.yield %m, %s : f32, i64
  } -> (tensor<16xf32>, tensor<16xi64>)
  return %r#0, %r#1 : tensor<16xf32>, tensor<16xi64>
}

// -----

// A parallel loop whose index the body reads splits (partitioning adds the
// block's start to the index); its neighbour keeps the argument's split.
mesh.mesh @m(["a" = 2, "b" = 4])
#id = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @parallel_index
// CHECK: linalg.generic {{.*}} attrs = {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a"], ["b"]]>}
func.func @parallel_index(%x: tensor<16x8xi32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}, %o: tensor<16x8xi32>) -> tensor<16x8xi32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x8xi32>) outs(%o : tensor<16x8xi32>) {
  ^bb0(%in: i32, %out: i32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ij = arith.addi %i, %j : index
    %c = arith.index_cast %ij : index to i32
    %s = arith.addi %in, %c : i32
    linalg.yield %s : i32
  } -> tensor<16x8xi32>
  return %r : tensor<16x8xi32>
}
