// Reproducer (gen-shapes branch, found by gen_partition.py's fixed case
// `expandq` on ["a" = 2, "b" = ?]): propagation puts a `?` axis on a reshape
// dim (or a window) too small for it, so a valid program aborts when
// partitioned.
//   build/bin/mesh-opt repro/dynamic-axis-trust.mlir --mesh-propagate-sharding
// annotates the expand_shape [["a", "b"], [], []]: dim 0 (of size 2) over
// "a" and "b", 2 x 4 = 8 devices on 8 ranks, while the same program on
// ["a" = 2, "b" = 4] gets no such layout. Then
//   build/bin/mesh-compile -O1 repro/dynamic-axis-trust.mlir -o /tmp/r && mpirun -n 8 /tmp/r
// stops on every rank with
//   'tensor.expand_shape' at repro/dynamic-axis-trust.mlir:38:8: dim 0 does not divide by the devices of its mesh axes
// The unpartitioned program is valid (16 divides by 8; nobody asked for the
// size-2 dim to be split). Cause: FactorAssignment::takeDims
// (ShardingSupport.h) takes a factor's axes on trust when a `?` axis makes
// their size unknown; the reshape rule (ShardingRuleModels.cpp,
// getReshapeRule) gives the narrow dim the factor of the group's major dim,
// whose size (2) is smaller than the narrow dim's (16), so the axes of the
// narrow dim, which divide it, are moved onto a dim they cannot divide unless
// "b" = 1. The same happens to any group whose major dim is smaller than the
// `?` axis will be: a leading size-1 dim takes a `?` axis. A possible fix:
// trust a `?` axis only when the known devices leave at least 2 elements of
// the factor (2 / 2 = 1 here: only "b" = 1 would fit), or, in the reshape
// rule, only hand on the axes whose known devices divide the major dim.
// The same with a window: a stride-2 slice of half a dim has no halo, so
// its factor (of 4) is not refused on a `?` axis and @window's slice is
// annotated [[], ["a", "b"]] (8 devices for 4 elements; on ["a" = 2, "b" = 4]
// it gets [[], []]); at run time it stops with 'tensor.extract_slice' ...
// dim 1 does not divide by the devices of its mesh axes (found by
// partition-stress, seed 353439, case rand120).
mesh.mesh @m(["a" = 2, "b" = ?])
func.func @window(%x: tensor<8x8xi32> {mesh.sharding = #mesh.sharding<@m, [[], ["a", "b"]]>})
    -> tensor<8x4xi32> {
  %s = tensor.extract_slice %x[0, 1] [8, 4] [1, 2] : tensor<8x8xi32> to tensor<8x4xi32>
  return %s : tensor<8x4xi32>
}
func.func @expand(%x: tensor<16x4xi32> {mesh.sharding = #mesh.sharding<@m, [["a", "b"], []]>})
    -> (tensor<2x8x4xi32> {mesh.sharding = #mesh.sharding<@m, [["a"], ["b"], []]>}) {
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 8, 4] : tensor<16x4xi32> into tensor<2x8x4xi32>
  return %e : tensor<2x8x4xi32>
}
func.func @main() -> i32 {
  %c = arith.constant dense<1> : tensor<16x4xi32>
  %r = call @expand(%c) : (tensor<16x4xi32>) -> tensor<2x8x4xi32>
  %d = arith.constant dense<1> : tensor<8x8xi32>
  %w = call @window(%d) : (tensor<8x8xi32>) -> tensor<8x4xi32>
  %z = arith.constant 0 : i32
  return %z : i32
}
