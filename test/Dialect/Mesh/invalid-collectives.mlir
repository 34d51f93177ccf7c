// RUN: mesh-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the collectives, mesh.barrier and the axis queries, which
// check the constraints (Cn) of docs/MeshSpec.md: one case per diagnostic.

mesh.mesh @m(["a" = 4])
func.func @gather_overflow(%x: tensor<4611686018427387904xi8>) -> tensor<?xi8> {
  // expected-error @+1 {{'mesh.all_gather' op gather_dim 0 of size 4611686018427387904 times the group size 4 overflows a 64-bit size (C5)}}
  %0 = mesh.all_gather %x on @m axes = ["a"] gather_dim = 0 : tensor<4611686018427387904xi8> -> tensor<?xi8>
  return %0 : tensor<?xi8>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @undefined_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' refers to mesh @nope, which is not defined (C0)}}
  %0 = mesh.all_reduce %x on @nope axes = ["shard"] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @not_a_mesh()
func.func @symbol_is_not_a_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.all_gather' refers to @not_a_mesh, which is a 'func.func', not a 'mesh.mesh' (C0)}}
  %0 = mesh.all_gather %x on @not_a_mesh axes = [] gather_dim = 0 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op names axis "shrad" which mesh @world does not have; its axes are "replicate", "shard" (C1)}}
  %0 = mesh.all_reduce %x on @world axes = ["shrad"] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @repeated_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op axis "shard" appears more than once in axes (C2)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard", "shard"] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @dim_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'mesh.all_gather' op gather_dim 2 is out of range for rank 2 (C3)}}
  %0 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @negative_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op concat_dim -1 is out of range for rank 2 (C3)}}
  %0 = mesh.all_to_all %x on @world axes = ["shard"] split_dim = 0 concat_dim = -1 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @tensor_to_memref(%x: tensor<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op input 'tensor<4xf32>' and result 'memref<4xf32>' must both be tensors or both memrefs (C4)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum : tensor<4xf32> -> memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @element_type_changes(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'mesh.broadcast' op result element type 'f16' differs from input element type 'f32' (C4)}}
  %0 = mesh.broadcast %x on @world axes = ["shard"] root = 0 : tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @rank_changes(%x: tensor<4xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'mesh.permute' op result rank 2 differs from input rank 1 (C4)}}
  %0 = mesh.permute %x on @world axes = ["shard"] offset = 1 : tensor<4xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @gather_shape(%x: tensor<16x128xf32>) -> tensor<32x128xf32> {
  // expected-error @+1 {{'mesh.all_gather' op result dim 0 is 32 but 64 is expected: input dim 0 (16) multiplied by the group size (4) (C5)}}
  %0 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0 : tensor<16x128xf32> -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @reduce_shape(%x: tensor<16x128xf32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op result dim 1 is 64 but 128 is expected: the op keeps input dim 1 (128) (C5)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum : tensor<16x128xf32> -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @bitwise_on_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op reduction 'xor' is not valid for element type 'f32'; bitwise reductions need integers (C6)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = xor : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @reduce_complex(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  // expected-error @+1 {{'mesh.all_reduce' op reduction 'max' is not valid for element type 'complex<f32>'; reductions need integer or float elements (C6)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = max : tensor<4xcomplex<f32>> -> tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @scatter_not_divisible(%x: tensor<6x8xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{'mesh.reduce_scatter' op scatter_dim 0 has size 6, which does not divide by the group size 4 (C7)}}
  %0 = mesh.reduce_scatter %x on @world axes = ["shard"] scatter_dim = 0 reduction = sum : tensor<6x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @slice_not_divisible(%x: tensor<6x12xf32>) -> tensor<6x1xf32> {
  // expected-error @+1 {{'mesh.all_slice' op slice_dim 1 has size 12, which does not divide by the group size 8 (C7)}}
  %0 = mesh.all_slice %x on @world axes = ["replicate", "shard"] slice_dim = 1 : tensor<6x12xf32> -> tensor<6x1xf32>
  return %0 : tensor<6x1xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @all_to_all_not_divisible(%x: tensor<8x6xf32>) -> tensor<32x1xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op split_dim 1 has size 6, which does not divide by the group size 4 (C7)}}
  %0 = mesh.all_to_all %x on @world axes = ["shard"] split_dim = 1 concat_dim = 0 : tensor<8x6xf32> -> tensor<32x1xf32>
  return %0 : tensor<32x1xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @negative_root(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.broadcast' op root -1 must not be negative (C8)}}
  %0 = mesh.broadcast %x on @world axes = ["shard"] root = -1 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @root_outside_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.broadcast' op root 4 is not a member of a group of 4 (C8)}}
  %0 = mesh.broadcast %x on @world axes = ["shard"] root = 4 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @zero_offset(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.permute' op offset must not be 0; a zero shift is a copy (C9)}}
  %0 = mesh.permute %x on @world axes = ["shard"] offset = 0 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @query_unknown_axis() -> index {
  // expected-error @+1 {{'mesh.axis_index' op names axis "tp" which mesh @world does not have; its axes are "replicate", "shard" (C1)}}
  %0 = mesh.axis_index @world "tp" : index
  return %0 : index
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @barrier_repeated_axis() {
  // expected-error @+1 {{'mesh.barrier' op axis "replicate" appears more than once in axes (C2)}}
  mesh.barrier on @world axes = ["replicate", "replicate"]
  return
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @op_unknown_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown reduction kind 'mean'; expected one of sum, prod, min, max, avg, and, or, xor (C10)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = mean : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @in_place_tensor(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op is 'in_place', which applies to buffers only (C11)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum in_place : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @in_place_strided(%x: memref<4xf32, strided<[2]>>) -> memref<4xf32> {
  // expected-error @+1 {{'mesh.broadcast' op is 'in_place' on input 'memref<4xf32, strided<[2]>>', which must have an identity layout (C11)}}
  %0 = mesh.broadcast %x on @world axes = ["shard"] root = 0 in_place : memref<4xf32, strided<[2]>> -> memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

mesh.mesh @world(["replicate" = 2, "shard" = 4])
func.func @in_place_other_space(%x: memref<4xf32, 1>) -> memref<4xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op is 'in_place', so its result 'memref<4xf32>' must be its input buffer 'memref<4xf32, 1>' (same shape and memory space) (C11)}}
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum in_place : memref<4xf32, 1> -> memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @valid_too_large(%x: tensor<3x5xf32>) -> tensor<12x5xf32> {
  // expected-error @+1 {{'mesh.all_gather' op 'valid' 13 is outside [0, 12], the size of dim 0 (C12)}}
  %0 = mesh.all_gather %x on @m axes = ["a"] gather_dim = 0 valid = 13 : tensor<3x5xf32> -> tensor<12x5xf32>
  return %0 : tensor<12x5xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @valid_not_a_prefix(%x: tensor<2x3xf32>) -> tensor<2x12xf32> {
  // expected-error @+1 {{'mesh.all_gather' op with 'valid' needs dims of size 1 before dim 1, so that each member's data is a prefix of its block; dim 0 has size 2 (C12)}}
  %0 = mesh.all_gather %x on @m axes = ["a"] gather_dim = 1 valid = 10 : tensor<2x3xf32> -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @valid_dynamic(%x: tensor<?x5xf32>) -> tensor<?x5xf32> {
  // expected-error @+1 {{'mesh.reduce_scatter' op with 'valid' needs static shapes (C12)}}
  %0 = mesh.reduce_scatter %x on @m axes = ["a"] scatter_dim = 0 reduction = sum valid = 10 : tensor<?x5xf32> -> tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @valid_negative(%x: tensor<12x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'mesh.reduce_scatter' op 'valid' -1 is outside [0, 12], the size of dim 0 (C12)}}
  %0 = mesh.reduce_scatter %x on @m axes = ["a"] scatter_dim = 0 reduction = sum valid = -1 : tensor<12x5xf32> -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @a2a_both_valid(%x: tensor<3x8xf32>) -> tensor<12x2xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op takes 'split_valid' or 'concat_valid', not both (C12)}}
  %0 = mesh.all_to_all %x on @m axes = ["a"] split_dim = 1 concat_dim = 0 split_valid = 8 concat_valid = 10 : tensor<3x8xf32> -> tensor<12x2xf32>
  return %0 : tensor<12x2xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @a2a_split_valid_too_large(%x: tensor<12x2xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op 'split_valid' 13 is outside [0, 12], the size of dim 0 (C12)}}
  %0 = mesh.all_to_all %x on @m axes = ["a"] split_dim = 0 concat_dim = 1 split_valid = 13 : tensor<12x2xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @a2a_concat_valid_not_a_prefix(%x: tensor<8x3xf32>) -> tensor<2x12xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op with 'concat_valid' needs dims of size 1 before dim 1, so that each member's data is a prefix of its block; dim 0 has size 2 (C12)}}
  %0 = mesh.all_to_all %x on @m axes = ["a"] split_dim = 0 concat_dim = 1 concat_valid = 10 : tensor<8x3xf32> -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @a2a_valid_same_dim(%x: tensor<12x2xf32>) -> tensor<12x2xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op with 'split_valid' needs split_dim and concat_dim distinct (C12)}}
  %0 = mesh.all_to_all %x on @m axes = ["a"] split_dim = 0 concat_dim = 0 split_valid = 10 : tensor<12x2xf32> -> tensor<12x2xf32>
  return %0 : tensor<12x2xf32>
}

// -----

mesh.mesh @m(["a" = 4])
func.func @a2a_valid_dynamic(%x: tensor<?x8xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{'mesh.all_to_all' op with 'concat_valid' needs static shapes (C12)}}
  %0 = mesh.all_to_all %x on @m axes = ["a"] split_dim = 1 concat_dim = 0 concat_valid = 10 : tensor<?x8xf32> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}
