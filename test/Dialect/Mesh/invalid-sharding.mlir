// RUN: mesh-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// Diagnostics of #mesh.sharding, mesh.shard and the mesh.sharding attribute
// on functions and ops, which check the constraints (Sn) of docs/MeshSpec.md
// (and (C0) and (C6) where a sharding names a mesh or a partial reduction):
// one case per diagnostic.

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op argument 0 of type 'memref<4xf32>' cannot carry a sharding; it needs a ranked tensor (S7)}}
func.func @memref_arg(%x: memref<4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @shard_rank(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'mesh.shard' op sharding has 1 dims but the tensor 'tensor<4x4xf32>' has rank 2 (S2)}}
  %0 = mesh.shard %x : tensor<4x4xf32> to #mesh.sharding<@world, [["shard"]]>
  return %0 : tensor<4x4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @shard_unknown_axis(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'mesh.shard' op operand: sharding names axis "tp" which mesh @world does not have; its axes are "replicate", "shard" (S1)}}
  %0 = mesh.shard %x : tensor<4x4xf32> to #mesh.sharding<@world, [["tp"], []]>
  return %0 : tensor<4x4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @shard_undefined_mesh(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'mesh.shard' refers to mesh @other, which is not defined (C0)}}
  %0 = mesh.shard %x : tensor<4x4xf32> to #mesh.sharding<@other, [[], []]>
  return %0 : tensor<4x4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{mesh axis "shard" appears more than once in the sharding (S3)}}
func.func @repeated_across_dims(%x: tensor<4x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], ["shard"]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{mesh axis "replicate" appears more than once in the sharding (S3)}}
func.func @sharded_and_partial(%x: tensor<4x4xf32> {mesh.sharding = #mesh.sharding<@world, [["replicate"], []], partial = sum["replicate"]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{sharding axes must be non-empty strings (in dim 0) (S4)}}
func.func @empty_axis_name(%x: tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, [[""]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op argument 0: sharding has 1 dims but the type 'tensor<4x4xf32>' has rank 2 (S2)}}
func.func @arg_rank(%x: tensor<4x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op argument 0: sharding names axis "dp" which mesh @world does not have; its axes are "replicate", "shard" (S1)}}
func.func @arg_unknown_axis(%x: tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, [["dp"]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op result 0: sharding has 0 dims but the type 'tensor<4xf32>' has rank 1 (S2)}}
func.func private @result_rank() -> (tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, []>})

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op argument 0 of type 'index' cannot carry a sharding; it needs a ranked tensor (S7)}}
func.func @not_a_tensor(%i: index {mesh.sharding = #mesh.sharding<@world, []>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op argument 0: partial reduction 'or' is not valid for element type 'f32' (C6)}}
func.func @partial_kind(%x: tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, [[]], partial = or["shard"]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op 'mesh.sharding' on argument 0 must be a #mesh.sharding (S6)}}
func.func @arg_not_sharding(%x: tensor<4xf32> {mesh.sharding = 3 : i64}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op has unknown mesh dialect attribute 'mesh.shardng' on argument 0; the only one is 'mesh.sharding' (S8)}}
func.func @arg_misspelled(%x: tensor<4xf32> {mesh.shardng = #mesh.sharding<@world, [[]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_unknown_attr(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.negf' op has unknown mesh dialect attribute 'mesh.layout'; the only one is 'mesh.sharding' (S8)}}
  %0 = arith.negf %x {mesh.layout = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_sharding_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.negf' op 'mesh.sharding' has 2 entries but the op has 1 results (S6)}}
  %0 = arith.negf %x {mesh.sharding = [#mesh.sharding<@world, [[]]>, #mesh.sharding<@world, [[]]>]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_single_sharding_many_results(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'test.two' op has 2 results, so 'mesh.sharding' must be an array with one #mesh.sharding for each (S6)}}
  %0:2 = "test.two"(%x) {mesh.sharding = #mesh.sharding<@world, [[]]>} : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)
  return %0#0 : tensor<4xi32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_sharding_entry(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.negf' op 'mesh.sharding' entry 0 must be a #mesh.sharding (S6)}}
  %0 = arith.negf %x {mesh.sharding = ["shard"]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_sharding_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.negf' op 'mesh.sharding' must be a #mesh.sharding or an array of them (S6)}}
  %0 = arith.negf %x {mesh.sharding = "shard"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_result_rank(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.negf' op result: sharding has 2 dims but the type 'tensor<4xf32>' has rank 1 (S2)}}
  %0 = arith.negf %x {mesh.sharding = #mesh.sharding<@world, [[], []]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{unknown reduction kind 'mean'; expected one of sum, prod, min, max, avg, and, or, xor (S5)}}
func.func @partial_unknown_kind(%x: tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, [[]], partial = mean["shard"]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{partial needs at least one axis (S5)}}
func.func @partial_no_axes(%x: tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, [[]], partial = sum[]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @shard_to_non_sharding(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %0 = mesh.shard %x : tensor<4xf32> to "shard"
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{sharding axes must be non-empty strings (in partial) (S4)}}
func.func @empty_partial_axis_name(%x: tensor<4xf32> {mesh.sharding = #mesh.sharding<@world, [[]], partial = sum[""]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op 'mesh.sharding' on result 0 must be a #mesh.sharding (S6)}}
func.func private @result_not_sharding() -> (tensor<4xf32> {mesh.sharding = [#mesh.sharding<@world, [[]]>]})

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op has unknown mesh dialect attribute 'mesh.layout' on result 0; the only one is 'mesh.sharding' (S8)}}
func.func private @result_misspelled() -> (tensor<4xf32> {mesh.layout = #mesh.sharding<@world, [[]]>})

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @unit_entry_on_tensor(%x: tensor<4xf32>, %i: index) -> (tensor<4xf32>, index) {
  // expected-error @+1 {{'test.two' op 'mesh.sharding' entry 0 must be a #mesh.sharding (S6)}}
  %0:2 = "test.two"(%x, %i) {mesh.sharding = [unit, unit]} : (tensor<4xf32>, index) -> (tensor<4xf32>, index)
  return %0#0, %0#1 : tensor<4xf32>, index
}

// -----

// mesh.host_buffer (the GPU device stage's mark) is a unit attribute of
// memref.alloc ops and memref function arguments.

func.func @host_buffer_on_other_op(%x: f32) -> f32 {
  // expected-error @+1 {{'arith.negf' op 'mesh.host_buffer' is a unit attribute of memref.alloc ops and memref function arguments (S8)}}
  %y = arith.negf %x {mesh.host_buffer} : f32
  return %y : f32
}

// -----

// expected-error @+1 {{'func.func' op 'mesh.host_buffer' is a unit attribute of memref.alloc ops and memref function arguments (S8)}}
func.func @host_buffer_on_scalar(%x: f32 {mesh.host_buffer}) -> f32 {
  return %x : f32
}

// -----

// Halos (S9, S10).

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{halo has 1 [lo, hi] pairs but the sharding has 2 dims; it needs one pair for each dim (S9)}}
func.func @halo_pairs(%x: tensor<18x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], halo = [[1, 1]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{halo widths of dim 0 must be non-negative, got [-1, 1] (S9)}}
func.func @halo_negative(%x: tensor<16x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], halo = [[-1, 1], [0, 0]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{dim 1 has a halo [1, 0] but no axis splits it (S9)}}
func.func @halo_unsplit(%x: tensor<16x5xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], halo = [[0, 0], [1, 0]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{expected 'halo = [[lo, hi], ...]' or 'partial = kind[axes]' (in that order, each at most once), got 'halo'}}
func.func @halo_after_partial(%x: tensor<16x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], partial = sum["replicate"], halo = [[1, 1], [0, 0]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
// expected-error @+1 {{'func.func' op argument 0: dim 0 of size 17 less its halo [1, 1] does not divide by the 4 devices of its axes (S10)}}
func.func @halo_core(%x: tensor<17x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], halo = [[1, 1], [0, 0]]>}) {
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @halo_wide(%x: tensor<14x4xf32>) -> tensor<14x4xf32> {
  // expected-error @+1 {{'mesh.shard' op operand: the halo [3, 3] of dim 0 is wider than the 2 elements each device owns; a halo comes from the neighbouring devices only (S10)}}
  %0 = mesh.shard %x : tensor<14x4xf32> to #mesh.sharding<@world, [["shard"], []], halo = [[3, 3], [0, 0]]>
  return %0 : tensor<14x4xf32>
}
