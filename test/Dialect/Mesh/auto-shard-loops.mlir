// RUN: mesh-opt %s -split-input-file --mesh-auto-shard | FileCheck %s
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard --mesh-partition --mesh-optimize-collectives --mesh-report-communication -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-COMM
// RUN: mesh-opt %s -split-input-file --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-EXPLAIN

// Loops and branches in mesh-auto-shard's plan space. Each group of values
// an scf.for, scf.while or scf.if ties together (the value passed in, the
// region arguments, the values yielded, the result) is one layout, written
// on the op's results as the partitioner reads it; the ops inside are
// planned like any other and priced once per iteration (the trip count
// when it is constant).

// A training loop (issue 30's MLP step, B 64, in an scf.for of 5 steps
// carrying the weights), only the batch annotated, and constrained in each step
// (each device keeps its part: the same batch in every step could be
// gathered once before the loop instead): DDP, the weights replicated
// through the loop, one bucket of both gradients all_reduced per step:
// 2 * 7/8 * 16 KiB = 28672 bytes, as training-loops.mlir's hand plan. The
// explanation prices the gradients' reductions five times.
// CHECK-LABEL: func.func @train_loop(
// CHECK: scf.for
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: scf.yield
// CHECK-NEXT: } {mesh.sharding = [#mesh.sharding<@m, {{\[\[}}], []]>, #mesh.sharding<@m, {{\[\[}}], []]>]}
// CHECK-COMM-LABEL: communication of @train_loop:
// CHECK-COMM-NEXT: all_reduce on @m axes ["d"]: 4096 x f32 (16384 bytes), 28672 bytes per device
// CHECK-COMM-NEXT: total: 1 collective, 28672 bytes per device
// CHECK-EXPLAIN-LABEL: auto-shard @train_loop on @m ("d"): {{.*}}143360 bytes per device{{.*}}proven optimal
// CHECK-EXPLAIN: resharding for 'arith.mulf' {{.*}}: {{\[\[}}], []] partial(d) -> {{\[\[}}], []], 14336 bytes per device, {{.*}}, 5 times per call (all_reduce [d])
// CHECK-EXPLAIN: resharding for 'arith.mulf' {{.*}}: {{\[\[}}], []] partial(d) -> {{\[\[}}], []], 14336 bytes per device, {{.*}}, 5 times per call (all_reduce [d])
mesh.mesh @m(["d" = 8])

func.func @train_loop(%x: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %t: tensor<64x32xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
    %w1_0: tensor<32x64xf32>, %w2_0: tensor<64x32xf32>)
    -> (tensor<32x64xf32>, tensor<64x32xf32>) {

  %c0 = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %e1 = tensor.empty() : tensor<64x64xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e2 = tensor.empty() : tensor<64x32xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %eat = tensor.empty() : tensor<64x64xf32>
  %e3 = tensor.empty() : tensor<64x32xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %ew2t = tensor.empty() : tensor<32x64xf32>
  %ext = tensor.empty() : tensor<32x64xf32>
  %e5 = tensor.empty() : tensor<32x64xf32>
  %f5 = linalg.fill ins(%c0 : f32) outs(%e5 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %one = arith.constant 1 : index
  %r:2 = scf.for %i = %lb to %ub step %one iter_args(%w1 = %w1_0, %w2 = %w2_0) -> (tensor<32x64xf32>, tensor<64x32xf32>) {
    // Each device keeps its part of the batch in every step.
    %xs = mesh.shard %x : tensor<64x32xf32> to #mesh.sharding<@m, [["d"], []]>
    %ts = mesh.shard %t : tensor<64x32xf32> to #mesh.sharding<@m, [["d"], []]>

    %h = linalg.matmul ins(%xs, %w1 : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %a = arith.maximumf %h, %zero : tensor<64x64xf32>
    %y = linalg.matmul ins(%a, %w2 : tensor<64x64xf32>, tensor<64x32xf32>) outs(%f2 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %dy = arith.subf %y, %ts : tensor<64x32xf32>
    %at = linalg.transpose ins(%a : tensor<64x64xf32>) outs(%eat : tensor<64x64xf32>) permutation = [1, 0]
    %dw2 = linalg.matmul ins(%at, %dy : tensor<64x64xf32>, tensor<64x32xf32>) outs(%f3 : tensor<64x32xf32>) -> tensor<64x32xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x32xf32>) outs(%ew2t : tensor<32x64xf32>) permutation = [1, 0]
    %da = linalg.matmul ins(%dy, %w2t : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f1 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %pos = arith.cmpf ogt, %h, %zero : tensor<64x64xf32>
    %dh = arith.select %pos, %da, %zero : tensor<64x64xi1>, tensor<64x64xf32>
    %xt = linalg.transpose ins(%xs : tensor<64x32xf32>) outs(%ext : tensor<32x64xf32>) permutation = [1, 0]
    %dw1 = linalg.matmul ins(%xt, %dh : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f5 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %lr1 = tensor.splat %lr : tensor<32x64xf32>
    %s1 = arith.mulf %dw1, %lr1 : tensor<32x64xf32>
    %nw1 = arith.subf %w1, %s1 : tensor<32x64xf32>
    %lr2 = tensor.splat %lr : tensor<64x32xf32>
    %s2 = arith.mulf %dw2, %lr2 : tensor<64x32xf32>
    %nw2 = arith.subf %w2, %s2 : tensor<64x32xf32>
    scf.yield %nw1, %nw2 : tensor<32x64xf32>, tensor<64x32xf32>
  }
  return %r#0, %r#1 : tensor<32x64xf32>, tensor<64x32xf32>
}


// -----

// A weight split by rows, prepared outside a loop of 100 steps that needs
// it whole: the partitioner puts the gather before the loop (a value from
// outside a loop is resharded once, not in every step), and the plan
// prices it once. The mulf keeps the weight split (less memory).
// CHECK-LABEL: func.func @hoist(
// CHECK: arith.mulf {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: scf.for
// CHECK-COMM-LABEL: communication of @hoist:
// CHECK-COMM-NEXT: all_gather on @m axes ["d"]: 64 x f32 (256 bytes), 768 bytes per device
// CHECK-COMM-NEXT: total: 1 collective, 768 bytes per device
// CHECK-EXPLAIN-LABEL: auto-shard @hoist on @m ("d"): {{.*}}768 bytes per device
// CHECK-EXPLAIN: resharding for 'linalg.matmul' {{.*}} operand 1: {{\[\[}}"d"], []] -> {{\[\[}}], []], 768 bytes per device, {{[0-9.]+}} us (all_gather [d])
// CHECK-EXPLAIN-NOT: times per call
mesh.mesh @m(["d" = 4])
func.func @hoist(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
                 %w: tensor<16x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x16xf32> {
  %z = arith.constant 0.0 : f32
  %lb = arith.constant 0 : index
  %ub = arith.constant 100 : index
  %one = arith.constant 1 : index
  %w2 = arith.mulf %w, %w : tensor<16x16xf32>
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    %h = linalg.matmul ins(%a, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
    scf.yield %h : tensor<8x16xf32>
  }
  return %r : tensor<8x16xf32>
}

// -----

// A value carried by a loop of 100 steps and constrained by columns in
// every step, passed in and returned by rows. Carried by columns, it moves
// once before the loop and once after (the two results share the move);
// carried by rows, it would move twice in every step. With the trip count
// unknown (priced as one step) the two cost the same once and the loop
// keeps the rows.
// CHECK-LABEL: func.func @carried(
// CHECK: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}], ["d"]]>}
// CHECK-LABEL: func.func @carried_dynamic(
// CHECK: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK-EXPLAIN-LABEL: auto-shard @carried on @m ("d"):
// CHECK-EXPLAIN: resharding for 'scf.for' {{.*}} carried value 0 operand 0: {{\[\[}}"d"], []] -> {{\[\[}}], ["d"]], 96 bytes per device, {{[0-9.]+}} us (all_to_all [d])
// CHECK-EXPLAIN-NOT: times per call
// CHECK-EXPLAIN-LABEL: auto-shard @carried_dynamic on @m ("d"):
// CHECK-EXPLAIN: resharding for 'mesh.shard' {{.*}} operand 0: {{\[\[}}"d"], []] -> {{\[\[}}], ["d"]]
// CHECK-EXPLAIN: resharding for 'scf.for' {{.*}} carried value 0 operand 0: {{\[\[}}], ["d"]] -> {{\[\[}}"d"], []]
mesh.mesh @m(["d" = 4])
func.func @carried(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>})
    -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 100 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %e = math.exp %a : tensor<8x16xf32>
    %s = mesh.shard %e : tensor<8x16xf32> to #mesh.sharding<@m, [[], ["d"]]>
    scf.yield %s : tensor<8x16xf32>
  }
  return %r, %r : tensor<8x16xf32>, tensor<8x16xf32>
}
func.func @carried_dynamic(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %n: index)
    -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) {
  %lb = arith.constant 0 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %n step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %e = math.exp %a : tensor<8x16xf32>
    %s = mesh.shard %e : tensor<8x16xf32> to #mesh.sharding<@m, [[], ["d"]]>
    scf.yield %s : tensor<8x16xf32>
  }
  return %r, %r : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// An scf.while: the before-region's arguments, which no result carries,
// take the layout of the value passed in (as the partitioner lays them
// out); the condition's group is written on the results (`unit` for the
// index). The update's reduction over the batch is the one collective.
// CHECK-LABEL: func.func @whileloop(
// CHECK: scf.while
// CHECK: linalg.matmul {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: } attributes {mesh.sharding = [unit, #mesh.sharding<@m, {{\[\[}}], []]>]}
// CHECK-COMM-LABEL: communication of @whileloop:
// CHECK-COMM-NEXT: all_reduce on @m axes ["d"]: 256 x f32 (1024 bytes), 1536 bytes per device
// CHECK-COMM-NEXT: total: 1 collective, 1536 bytes per device
mesh.mesh @m(["d" = 4])
func.func @whileloop(%x: tensor<64x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %w: tensor<16x16xf32>, %n: index) -> tensor<16x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r:2 = scf.while (%i = %c0, %acc = %w) : (index, tensor<16x16xf32>) -> (index, tensor<16x16xf32>) {
    %go = arith.cmpi slt, %i, %n : index
    scf.condition(%go) %i, %acc : index, tensor<16x16xf32>
  } do {
  ^bb0(%j: index, %a: tensor<16x16xf32>):
    %e = tensor.empty() : tensor<64x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
    %h = linalg.matmul ins(%x, %a : tensor<64x16xf32>, tensor<16x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
    %et = tensor.empty() : tensor<16x64xf32>
    %xt = linalg.transpose ins(%x : tensor<64x16xf32>) outs(%et : tensor<16x64xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<16x16xf32>
    %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %g = linalg.matmul ins(%xt, %h : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %na = arith.subf %a, %g : tensor<16x16xf32>
    %j1 = arith.addi %j, %c1 : index
    scf.yield %j1, %na : index, tensor<16x16xf32>
  }
  return %r#1 : tensor<16x16xf32>
}

// -----

// An scf.if: both branches follow the batch; nothing moves.
// CHECK-LABEL: func.func @branch(
// CHECK: math.exp {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: arith.addf {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"d"], []]>}
// CHECK-COMM-LABEL: communication of @branch:
// CHECK-COMM-NEXT: total: 0 collectives, 0 bytes per device
mesh.mesh @m(["d" = 4])
func.func @branch(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}, %c: i1) -> tensor<8x16xf32> {
  %r = scf.if %c -> tensor<8x16xf32> {
    %a = math.exp %x : tensor<8x16xf32>
    scf.yield %a : tensor<8x16xf32>
  } else {
    %b = arith.addf %x, %x : tensor<8x16xf32>
    scf.yield %b : tensor<8x16xf32>
  }
  %s = arith.mulf %r, %x : tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

// A loop whose result the user annotated keeps it: the loop carries x by
// columns, so the body works by columns and the batch is moved into that
// layout once, before the loop.
// CHECK-LABEL: func.func @pinned(
// CHECK: scf.for
// CHECK: math.exp {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}], ["d"]]>}
// CHECK: } {mesh.sharding = #mesh.sharding<@m, {{\[\[}}], ["d"]]>}
// CHECK-COMM-LABEL: communication of @pinned:
// CHECK-COMM-NEXT: all_to_all on @m axes ["d"]
// CHECK-COMM-NEXT: total: 1 collective
mesh.mesh @m(["d" = 4])
func.func @pinned(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["d"]]>}) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %b = math.exp %a : tensor<8x16xf32>
    scf.yield %b : tensor<8x16xf32>
  } {mesh.sharding = #mesh.sharding<@m, [[], ["d"]]>}
  return %r : tensor<8x16xf32>
}

// -----

// An scf.while the user annotated keeps its annotation (its before-region
// group, which no result carries, writes nothing); the body follows it.
// CHECK-LABEL: func.func @while_annotated(
// CHECK: arith.addi {{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a", "b"], []]>}
// CHECK: } attributes {mesh.sharding = #mesh.sharding<@m, {{\[\[}}"a", "b"], []]>}
// CHECK-COMM-LABEL: communication of @while_annotated:
// CHECK-COMM-NEXT: total: 0 collectives, 0 bytes per device
mesh.mesh @m(["a" = 2, "b" = 4])
func.func @while_annotated(%x: tensor<8x4xi32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>}, %go: i1) -> tensor<8x4xi32> {
  %r = scf.while (%v = %x) : (tensor<8x4xi32>) -> tensor<8x4xi32> {
    scf.condition(%go) %v : tensor<8x4xi32>
  } do {
  ^bb0(%w: tensor<8x4xi32>):
    %d = arith.addi %w, %w : tensor<8x4xi32>
    scf.yield %d : tensor<8x4xi32>
  } attributes {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>}
  return %r : tensor<8x4xi32>
}
