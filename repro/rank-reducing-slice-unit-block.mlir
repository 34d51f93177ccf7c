// Reproducer (gen-shapes branch, found by gen_partition.py's random slices):
// a rank-reducing extract_slice whose kept dim becomes 1 per device.
//   build/bin/mesh-opt repro/rank-reducing-slice-unit-block.mlir --mesh-partition
// fails with
//   error: expected type to be 'tensor<8x1xi32>' or a rank-reduced version. (size mismatch)
//   note: see current operation: "tensor.extract_slice"(...) <{...
//     static_sizes = array<i64: 8, 1>, ...}> : (tensor<1x8xi32>) -> tensor<1xi32>
// instead of the slice [0, 3] [1, 1] [1, 1] : tensor<1x8xi32> to tensor<1xi32>.
// Cause: ExtractSliceRuleModel::updateSizesForLocalTypes (and the insert_slice
// one) in ShardingRuleModels.cpp call getDroppedDims() after partitioning has
// given the op its per-device result type; getDroppedDims() infers the
// dropped dims from the static sizes and that type, scanning from the last
// dim, and with a kept dim of per-device size 1 in front of the dropped unit
// dim it takes the dropped dim for the kept one (sizes [8, 1] against
// tensor<1xi32>: dim 1 "kept", dim 0 "dropped"), so the kept dim's size is
// never rewritten. The dropped dims must be computed from the global types
// (the hook's globalResultTypes for extract_slice; for insert_slice the
// source's global type, or the mask computed before retyping).
// The same with insert_slice: @insert; and with a kept size-1 dim between
// the two (sizes [2, 1, 1] to tensor<2x1xi32>, dim 2 dropped, dim 0 over
// "y" = 2): @extract_between (found by partition-stress, seed 353439).
mesh.mesh @m(["x" = 8])
func.func @extract(%a: tensor<8x8xi32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>})
    -> (tensor<8xi32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) {
  %s = tensor.extract_slice %a[0, 3] [8, 1] [1, 1] {mesh.sharding = #mesh.sharding<@m, [["x"]]>} : tensor<8x8xi32> to tensor<8xi32>
  return %s : tensor<8xi32>
}
func.func @insert(%a: tensor<8x8xi32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>},
                  %r: tensor<8xi32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>})
    -> (tensor<8x8xi32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) {
  %s = tensor.insert_slice %r into %a[0, 3] [8, 1] [1, 1] {mesh.sharding = #mesh.sharding<@m, [["x"], []]>} : tensor<8xi32> into tensor<8x8xi32>
  return %s : tensor<8x8xi32>
}
mesh.mesh @m2(["y" = 2])
func.func @extract_between(%a: tensor<2x2x16xi32> {mesh.sharding = #mesh.sharding<@m2, [["y"], [], []]>})
    -> (tensor<2x1xi32> {mesh.sharding = #mesh.sharding<@m2, [["y"], []]>}) {
  %s = tensor.extract_slice %a[0, 1, 1] [2, 1, 1] [1, 1, 1] {mesh.sharding = #mesh.sharding<@m2, [["y"], []]>} : tensor<2x2x16xi32> to tensor<2x1xi32>
  return %s : tensor<2x1xi32>
}
