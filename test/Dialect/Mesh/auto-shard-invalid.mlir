// RUN: mesh-opt %s -split-input-file --mesh-auto-shard -verify-diagnostics

// What mesh-auto-shard refuses, each with the place named.

mesh.mesh @m(["d" = 4])
// Loops and branches are in the plan space (auto-shard-loops.mlir), but
// not one whose region arguments take values its interface does not name.
func.func @forall(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{mesh-auto-shard: 'scf.forall' has a tensor region argument or result that receives no value it passes on (RegionBranchOpInterface): not in the plan space}}
  %r = scf.forall (%i) in (8) shared_outs(%o = %x) -> (tensor<8x8xf32>) {
    %s = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<1x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<8x8xf32>
    }
  }
  return %r : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
func.func private @callee(tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @call(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{mesh-auto-shard: @callee is a declaration: its body is not in the plan space (define it, or annotate its caller's values by hand)}}
  %r = func.call @callee(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Calls are inlined for the plan (auto-shard-calls.mlir), but not a
// recursion, nor a callee whose own annotations would be lost.
mesh.mesh @m(["d" = 4])
func.func private @down(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{mesh-auto-shard: the call to @down recurses: not in the plan space}}
  %r = func.call @down(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
func.func @recurse(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x8xf32> {
  %r = func.call @down(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
func.func private @split(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["d"]]>}) -> tensor<8x8xf32> {
  %r = math.exp %x : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
func.func @annotated_callee(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{mesh-auto-shard: @split is annotated: inlining it for the plan would drop its annotations (annotate the call's operands with mesh.shard instead)}}
  %r = func.call @split(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
mesh.mesh @n(["e" = 2])
// expected-error @+2 {{mesh-auto-shard: annotations on two meshes in one function (@m and @n)}}
// expected-note @+1 {{the first here}}
func.func @two(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
               %y: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@n, [["e"], []]>}) -> tensor<8x8xf32> {
  %r = arith.addf %x, %y : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
// expected-error @+1 {{'mesh.carried' on argument 1 must be the number of a function result of the argument's type (S8)}}
func.func @carried(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
                   %w: tensor<8x4xf32> {mesh.carried = 0 : i64}) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
// expected-error @+1 {{mesh-auto-shard: two arguments are carried to result 0}}
func.func @carried_twice(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>, mesh.carried = 0 : i64},
                         %w: tensor<8x8xf32> {mesh.carried = 0 : i64}) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
// expected-error @+1 {{mesh-auto-shard: result 0 is carried from argument 1 (mesh.carried) but annotated otherwise}}
func.func @carried_other(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>},
                         %w: tensor<8x8xf32> {mesh.carried = 0 : i64})
    -> (tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["d"]]>}) {
  %r = arith.addf %x, %w : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

mesh.mesh @m(["d" = 4])
func.func @per_device(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{mesh-auto-shard: the function is already per device (it has collectives)}}
  %r = mesh.all_reduce %x on @m axes = ["d"] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Bytes per device need every axis's size.
mesh.mesh @m(["a" = ?, "b" = 4])
// expected-error @+1 {{mesh-auto-shard: axis 'a' of @m has no static size: the plan prices bytes per device, which need every size (declare it)}}
func.func @unknown_axis(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) -> tensor<8x16xf32> {
  %y = math.exp %x : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A constraint no layout of its operand reaches: the error names it.
mesh.mesh @m(["d" = 4])
func.func @unreachable(%x: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["d"], []]>}) -> tensor<8x8xf32> {
  %a = math.exp %x : tensor<8x8xf32>
  // expected-error-re @+1 {{mesh-auto-shard: no plan is possible: 'mesh.shard' at {{.*}} operand 0 must be {{\[\[}}], []] partial(d), and no layout of 'math.exp' at {{.*}} result 0 reaches it (a pending reduction comes from a contraction or a reduction over a split dim, not from resharding)}}
  %s = mesh.shard %a : tensor<8x8xf32> to #mesh.sharding<@m, [[], []], partial = sum["d"]>
  %b = math.sin %s : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}
