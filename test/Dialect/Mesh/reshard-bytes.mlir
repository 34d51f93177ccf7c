// RUN: mesh-opt %s --mesh-partition | FileCheck %s
// RUN: mesh-opt %s --mesh-partition --mesh-report-communication -o /dev/null 2>&1 | FileCheck %s --check-prefix=BYTES

// The resharding planner takes the plan with the fewest bytes sent per
// device (docs/partitioning.md): a 64x64 f32 tensor is 16384 bytes. The
// greedy planner before it sent the bytes named in each comment.

mesh.mesh @m(["a" = 2, "b" = 4])

// Axes moving between dims are all_to_alls, not a gather of the whole dim
// and slices (before: 14336 bytes).
// CHECK-LABEL: func.func @move_between_dims
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>) -> tensor<16x32xf32>
// CHECK: %[[T:.*]] = mesh.all_to_all %[[X]] on @m axes = ["a", "b"] split_dim = 1 concat_dim = 0 : tensor<8x64xf32> -> tensor<64x8xf32>
// CHECK: %[[U:.*]] = mesh.all_to_all %[[T]] on @m axes = ["b"] split_dim = 0 concat_dim = 1 : tensor<64x8xf32> -> tensor<16x32xf32>
// CHECK-NEXT: return %[[U]]
// BYTES-LABEL: communication of @move_between_dims:
// BYTES-NEXT: all_to_all on @m axes ["a", "b"]: 512 x f32 (2048 bytes), 1792 bytes per device
// BYTES-NEXT: all_to_all on @m axes ["b"]: 512 x f32 (2048 bytes), 1536 bytes per device
// BYTES-NEXT: total: 2 collectives, 3328 bytes per device
func.func @move_between_dims(%x: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], ["a"]]>}) {
  return %x : tensor<64x64xf32>
}

// Axes reordered within a dim pass through the other dim with all_to_alls
// (before: one all_gather of the whole dim, 14336 bytes, and a slice).
// CHECK-LABEL: func.func @reorder_within_dim
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>) -> tensor<8x64xf32>
// CHECK: %[[T:.*]] = mesh.all_to_all %[[X]] on @m axes = ["b"] split_dim = 1 concat_dim = 0 : tensor<8x64xf32> -> tensor<32x16xf32>
// CHECK: %[[U:.*]] = mesh.all_to_all %[[T]] on @m axes = ["a"] split_dim = 1 concat_dim = 0 : tensor<32x16xf32> -> tensor<64x8xf32>
// CHECK: %[[V:.*]] = mesh.all_to_all %[[U]] on @m axes = ["b", "a"] split_dim = 0 concat_dim = 1 : tensor<64x8xf32> -> tensor<8x64xf32>
// CHECK-NEXT: return %[[V]]
// BYTES-LABEL: communication of @reorder_within_dim:
// BYTES: total: 3 collectives, 4352 bytes per device
func.func @reorder_within_dim(%x: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["b", "a"], []]>}) {
  return %x : tensor<64x64xf32>
}

// A partial sum over two axes to a target that splits one dim over each:
// a reduce_scatter per axis, each on the block the last one left (before:
// an all_reduce over both and two slices, 28672 bytes).
// CHECK-LABEL: func.func @partial_to_two_dims
// CHECK-SAME: (%[[X:.*]]: tensor<64x64xf32>) -> tensor<32x16xf32>
// CHECK: %[[R:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["a"] scatter_dim = 0 reduction = sum : tensor<64x64xf32> -> tensor<32x64xf32>
// CHECK: %[[S:.*]] = mesh.reduce_scatter %[[R]] on @m axes = ["b"] scatter_dim = 1 reduction = sum : tensor<32x64xf32> -> tensor<32x16xf32>
// CHECK-NEXT: return %[[S]]
// BYTES-LABEL: communication of @partial_to_two_dims:
// BYTES-NEXT: reduce_scatter on @m axes ["a"]: 4096 x f32 (16384 bytes), 8192 bytes per device
// BYTES-NEXT: reduce_scatter on @m axes ["b"]: 2048 x f32 (8192 bytes), 6144 bytes per device
// BYTES-NEXT: total: 2 collectives, 14336 bytes per device
func.func @partial_to_two_dims(%x: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []], partial = sum["a", "b"]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"]]>}) {
  return %x : tensor<64x64xf32>
}

// Every layout on the way divides the tensor: dim 1, of size 2, cannot
// take "b", so the reorder above goes another way (352 bytes; a gather of
// the whole dim and a slice would send 448).
// CHECK-LABEL: func.func @reorder_narrow
// CHECK-SAME: (%[[X:.*]]: tensor<8x2xf32>) -> tensor<8x2xf32>
// CHECK: %[[G:.*]] = mesh.all_gather %[[X]] on @m axes = ["b"] gather_dim = 0 : tensor<8x2xf32> -> tensor<32x2xf32>
// CHECK: %[[T:.*]] = mesh.all_to_all %[[G]] on @m axes = ["a"] split_dim = 1 concat_dim = 0 : tensor<32x2xf32> -> tensor<64x1xf32>
// CHECK: %[[S:.*]] = mesh.all_slice %[[T]] on @m axes = ["b"] slice_dim = 0 : tensor<64x1xf32> -> tensor<16x1xf32>
// CHECK: %[[U:.*]] = mesh.all_to_all %[[S]] on @m axes = ["a"] split_dim = 0 concat_dim = 1 : tensor<16x1xf32> -> tensor<8x2xf32>
// CHECK-NEXT: return %[[U]]
// BYTES-LABEL: communication of @reorder_narrow:
// BYTES: total: 4 collectives, 352 bytes per device
func.func @reorder_narrow(%x: tensor<64x2xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>})
    -> (tensor<64x2xf32> {mesh.sharding = #mesh.sharding<@m, [["b", "a"], []]>}) {
  return %x : tensor<64x2xf32>
}

// A value wanted in several layouts moves on from the cheapest layout it
// already reached. A partial sum wanted sharded, then replicated: the
// replicated copy gathers the scattered one (before: a reduce_scatter and
// an all_reduce, 36864 bytes).
// CHECK-LABEL: func.func @partial_sharded_and_replicated
// CHECK-SAME: (%[[X:.*]]: tensor<64x64xf32>) -> (tensor<16x64xf32>, tensor<64x64xf32>)
// CHECK: %[[R:.*]] = mesh.reduce_scatter %[[X]] on @m axes = ["b"] scatter_dim = 0 reduction = sum : tensor<64x64xf32> -> tensor<16x64xf32>
// CHECK: %[[G:.*]] = mesh.all_gather %[[R]] on @m axes = ["b"] gather_dim = 0 : tensor<16x64xf32> -> tensor<64x64xf32>
// CHECK-NEXT: return %[[R]], %[[G]]
// BYTES-LABEL: communication of @partial_sharded_and_replicated:
// BYTES: total: 2 collectives, 24576 bytes per device
func.func @partial_sharded_and_replicated(%x: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []], partial = sum["b"]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>},
        tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>}) {
  return %x, %x : tensor<64x64xf32>, tensor<64x64xf32>
}

// Replicated first: one all_reduce, and the sharded copy is a local slice
// of it (before: an all_reduce and a reduce_scatter, 36864 bytes).
// CHECK-LABEL: func.func @partial_replicated_and_sharded
// CHECK-SAME: (%[[X:.*]]: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<16x64xf32>)
// CHECK: %[[R:.*]] = mesh.all_reduce %[[X]] on @m axes = ["b"] reduction = sum : tensor<64x64xf32> -> tensor<64x64xf32>
// CHECK: %[[S:.*]] = mesh.all_slice %[[R]] on @m axes = ["b"] slice_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
// CHECK-NEXT: return %[[R]], %[[S]]
// BYTES-LABEL: communication of @partial_replicated_and_sharded:
// BYTES: total: 2 collectives, 24576 bytes per device
func.func @partial_replicated_and_sharded(%x: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []], partial = sum["b"]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>},
        tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], []]>}) {
  return %x, %x : tensor<64x64xf32>, tensor<64x64xf32>
}

// Four users in four layouts: one all_gather, and every other layout is a
// slice of it (before: 7 collectives, 38400 bytes).
// CHECK-LABEL: func.func @four_layouts
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK: %[[G:.*]] = mesh.all_gather %[[X]] on @m axes = ["a", "b"] gather_dim = 0 : tensor<8x64xf32> -> tensor<64x64xf32>
// CHECK: %[[S0:.*]] = mesh.all_slice %[[G]] on @m axes = ["a"] slice_dim = 0 : tensor<64x64xf32> -> tensor<32x64xf32>
// CHECK: %[[S1:.*]] = mesh.all_slice %[[G]] on @m axes = ["b"] slice_dim = 1 : tensor<64x64xf32> -> tensor<64x16xf32>
// CHECK: %[[S2:.*]] = mesh.all_slice %[[G]] on @m axes = ["b"] slice_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
// CHECK: %[[S3:.*]] = mesh.all_slice %[[S2]] on @m axes = ["a"] slice_dim = 1 : tensor<16x64xf32> -> tensor<16x32xf32>
// CHECK-NEXT: return %[[G]], %[[S0]], %[[S1]], %[[S3]]
// BYTES-LABEL: communication of @four_layouts:
// BYTES: total: 5 collectives, 14336 bytes per device
func.func @four_layouts(%x: tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>})
    -> (tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>},
        tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>},
        tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["b"]]>},
        tensor<64x64xf32> {mesh.sharding = #mesh.sharding<@m, [["b"], ["a"]]>}) {
  return %x, %x, %x, %x : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
