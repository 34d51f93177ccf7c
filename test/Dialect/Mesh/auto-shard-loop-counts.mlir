// RUN: mesh-opt %s --split-input-file --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s

// A loop of 2^32 steps or more is counted 2^32 times, not once: the value
// it carries takes the layout its steps want (columns, for the mesh.shard
// in the step) and moves once before and once after the loop, as with 100
// steps. (Counted once, the loop carried rows and moved twice per step.)
// CHECK-LABEL: auto-shard @long on @m
// CHECK-SAME: communication 20.038 us, 192 bytes per device
// CHECK: carried value 0 operand 0: {{\[\[}}"d"], []] -> {{\[\[}}], ["d"]], 96 bytes per device
// CHECK: result 0 operand 0: {{\[\[}}], ["d"]] -> {{\[\[}}"d"], []], 96 bytes per device
mesh.mesh @m(["d" = 4])
func.func @long(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>})
    -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 4294967296 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %e = math.exp %a : tensor<8x16xf32>
    %s = mesh.shard %e : tensor<8x16xf32> to #mesh.sharding<@m, [[], ["d"]]>
    scf.yield %s : tensor<8x16xf32>
  }
  return %r : tensor<8x16xf32>
}

// -----

// Three nested loops of 2^22 steps (2^66 in all, which wraps to 0 in 64
// bits): counted 2^32 times, the moves still priced.
// CHECK-LABEL: auto-shard @nested on @m
// CHECK-SAME: communication 20.038 us, 192 bytes per device
mesh.mesh @m(["d" = 4])
func.func @nested(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>})
    -> (tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 4194304 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%a = %x) -> (tensor<8x16xf32>) {
    %r1 = scf.for %j = %lb to %ub step %one iter_args(%b = %a) -> (tensor<8x16xf32>) {
      %r2 = scf.for %k = %lb to %ub step %one iter_args(%c = %b) -> (tensor<8x16xf32>) {
        %e = math.exp %c : tensor<8x16xf32>
        %s = mesh.shard %e : tensor<8x16xf32> to #mesh.sharding<@m, [[], ["d"]]>
        scf.yield %s : tensor<8x16xf32>
      }
      scf.yield %r2 : tensor<8x16xf32>
    }
    scf.yield %r1 : tensor<8x16xf32>
  }
  return %r : tensor<8x16xf32>
}
