// RUN: mesh-opt %s --mesh-propagate-sharding | FileCheck %s
// RUN: mesh-opt %s --mesh-propagate-sharding --mesh-partition | FileCheck %s --check-prefix=PART

// A reshape's narrow dim is the product of its group's factors: it carries
// their axes, major first, where that is a block sharding of the product
// (every part before the last sharded one split down to one element).

mesh.mesh @m(["dp" = 2, "tp" = 4])
mesh.mesh @m222(["p" = 2, "q" = 2, "r" = 2])

// (batch on "dp", heads on "tp") with one batch row per device: ["dp", "tp"].
// CHECK-LABEL: func.func @collapse_heads
// CHECK: tensor.collapse_shape %{{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[}}["dp", "tp"], [], []]>}
// PART-LABEL: func.func @collapse_heads
// PART-NOT: mesh.all
// PART: tensor.collapse_shape %{{.*}} : tensor<1x2x16x4xf32> into tensor<2x16x4xf32>
func.func @collapse_heads(%q: tensor<2x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>}) -> tensor<16x16x4xf32> {
  %c = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x8x16x4xf32> into tensor<16x16x4xf32>
  return %c : tensor<16x16x4xf32>
}

// Two batch rows per device: the heads' axis cannot follow.
// CHECK-LABEL: func.func @collapse_two_rows
// CHECK: tensor.collapse_shape %{{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[}}["dp"], []]>}
func.func @collapse_two_rows(%q: tensor<4x8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], []]>}) -> tensor<32x16xf32> {
  %c = tensor.collapse_shape %q [[0, 1], [2]] : tensor<4x8x16xf32> into tensor<32x16xf32>
  return %c : tensor<32x16xf32>
}

// A leading dim of size 1 is no obstacle.
// CHECK-LABEL: func.func @collapse_unit
// CHECK: tensor.collapse_shape %{{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[}}["tp"], []]>}
func.func @collapse_unit(%x: tensor<1x16x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], ["tp"], []]>}) -> tensor<16x8xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x16x8xf32> into tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// An expand splits the axes back over the group, major first.
// CHECK-LABEL: func.func @expand_axes
// CHECK: tensor.expand_shape %{{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[}}["dp"], ["tp"], []]>}
// PART-LABEL: func.func @expand_axes
// PART-NOT: mesh.all
// PART: tensor.expand_shape %{{.*}} output_shape [1, 2, 4] : tensor<2x4xf32> into tensor<1x2x4xf32>
func.func @expand_axes(%x: tensor<16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp", "tp"], []]>}) -> tensor<2x8x4xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 8, 4] : tensor<16x4xf32> into tensor<2x8x4xf32>
  return %e : tensor<2x8x4xf32>
}

// CHECK-LABEL: func.func @expand_three
// CHECK: tensor.expand_shape %{{.*}} {mesh.sharding = #mesh.sharding<@m222, {{\[}}["p"], ["q"], ["r"]]>}
func.func @expand_three(%x: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m222, [["p", "q", "r"]]>}) -> tensor<2x2x4xf32> {
  %e = tensor.expand_shape %x [[0, 1, 2]] output_shape [2, 2, 4] : tensor<16xf32> into tensor<2x2x4xf32>
  return %e : tensor<2x2x4xf32>
}

// 4 rows over "dp" (2) leave two rows per device, and ["dp", "tp"] (8)
// does not divide 4: no block sharding of [4, 4] has these blocks.
// CHECK-LABEL: func.func @expand_no_fit
// CHECK: tensor.expand_shape %{{.*}} {mesh.sharding = #mesh.sharding<@m, {{\[}}[], []]>}
// PART-LABEL: func.func @expand_no_fit
// PART: mesh.all_gather %{{.*}} on @m axes = ["dp", "tp"]
func.func @expand_no_fit(%x: tensor<16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp", "tp"]]>}) -> tensor<4x4xf32> {
  %e = tensor.expand_shape %x [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  return %e : tensor<4x4xf32>
}

// Attention as torch-mlir writes it, heads over "tp" and batch over "dp":
// no collective at all (before, q, k and v were gathered over "tp").
// PART-LABEL: func.func @attention
// PART-NOT: mesh.
// PART: linalg.batch_matmul {{.*}} -> tensor<2x16x16xf32>
// PART-NOT: mesh.
// PART: linalg.batch_matmul {{.*}} -> tensor<2x16x4xf32>
// PART-NOT: mesh.
// PART: tensor.expand_shape %{{.*}} output_shape [1, 2, 16, 4] : tensor<2x16x4xf32> into tensor<1x2x16x4xf32>
// PART-NOT: mesh.
// PART: return
func.func @attention(%q: tensor<2x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>},
                %kt: tensor<2x8x4x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>},
                %v: tensor<2x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>})
    -> (tensor<2x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>}) {
  %z = arith.constant 0.0 : f32
  %q2 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x8x16x4xf32> into tensor<16x16x4xf32>
  %k2 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x8x4x16xf32> into tensor<16x4x16xf32>
  %v2 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x8x16x4xf32> into tensor<16x16x4xf32>
  %e = tensor.empty() : tensor<16x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %s = linalg.batch_matmul ins(%q2, %k2 : tensor<16x16x4xf32>, tensor<16x4x16xf32>) outs(%f : tensor<16x16x16xf32>) -> tensor<16x16x16xf32>
  %e2 = tensor.empty() : tensor<16x16x4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x16x4xf32>) -> tensor<16x16x4xf32>
  %o = linalg.batch_matmul ins(%s, %v2 : tensor<16x16x16xf32>, tensor<16x16x4xf32>) outs(%f2 : tensor<16x16x4xf32>) -> tensor<16x16x4xf32>
  %r = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 8, 16, 4] : tensor<16x16x4xf32> into tensor<2x8x16x4xf32>
  return %r : tensor<2x8x16x4xf32>
}

// The same with two batch rows per device (B = 4 over "dp"): a device's
// rows of the merged dim are not one block of it, so the products, the
// scale and the exp between them (arith and math ops on tensors) are
// computed on (batch, heads) unmerged: no collective, each device 2 x 2
// (batch, head) pairs. Before, q, k and v were gathered over "tp".
// CHECK-LABEL: func.func @attention_two_rows
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
// PART-LABEL: func.func @attention_two_rows
// PART-SAME: (%{{.*}}: tensor<2x2x16x4xf32>, %{{.*}}: tensor<2x2x4x16xf32>, %{{.*}}: tensor<2x2x16x4xf32>)
// PART-NOT: mesh.
// PART: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x2x16x4xf32>, tensor<2x2x4x16xf32>) outs(%{{.*}} : tensor<2x2x16x16xf32>)
// PART-NOT: mesh.
// PART: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x2x16x16xf32>, tensor<2x2x16x4xf32>) outs(%{{.*}} : tensor<2x2x16x4xf32>)
// PART-NOT: mesh.
// PART: return %{{.*}} : tensor<2x2x16x4xf32>
func.func @attention_two_rows(%q: tensor<4x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>},
                %kt: tensor<4x8x4x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>},
                %v: tensor<4x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>})
    -> (tensor<4x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>}) {
  %z = arith.constant 0.0 : f32
  %q2 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<4x8x16x4xf32> into tensor<32x16x4xf32>
  %k2 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<4x8x4x16xf32> into tensor<32x4x16xf32>
  %v2 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<4x8x16x4xf32> into tensor<32x16x4xf32>
  %e = tensor.empty() : tensor<32x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s = linalg.batch_matmul ins(%q2, %k2 : tensor<32x16x4xf32>, tensor<32x4x16xf32>) outs(%f : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %c = arith.constant dense<0.5> : tensor<32x16x16xf32>
  %sc = arith.mulf %s, %c : tensor<32x16x16xf32>
  %p = math.exp %sc : tensor<32x16x16xf32>
  %e2 = tensor.empty() : tensor<32x16x4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<32x16x4xf32>) -> tensor<32x16x4xf32>
  %o = linalg.batch_matmul ins(%p, %v2 : tensor<32x16x16xf32>, tensor<32x16x4xf32>) outs(%f2 : tensor<32x16x4xf32>) -> tensor<32x16x4xf32>
  %r = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [4, 8, 16, 4] : tensor<32x16x4xf32> into tensor<4x8x16x4xf32>
  return %r : tensor<4x8x16x4xf32>
}

// The scores' product carries the user's own sharding: it stays as
// written, merged, and so does everything it constrains (q and k are
// gathered over "tp" for it, as asked).
// CHECK-LABEL: func.func @attention_annotated
// CHECK: linalg.batch_matmul {mesh.sharding = #mesh.sharding<@m, {{\[}}["dp"], [], []]>}
// PART-LABEL: func.func @attention_annotated
// PART: mesh.all_gather %{{.*}} on @m axes = ["tp"]
// PART: linalg.batch_matmul {{.*}} -> tensor<16x16x16xf32>
func.func @attention_annotated(%q: tensor<4x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>},
                %kt: tensor<4x8x4x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>})
    -> tensor<32x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %q2 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<4x8x16x4xf32> into tensor<32x16x4xf32>
  %k2 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<4x8x4x16xf32> into tensor<32x4x16xf32>
  %e = tensor.empty() : tensor<32x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s = linalg.batch_matmul {mesh.sharding = #mesh.sharding<@m, [["dp"], [], []]>} ins(%q2, %k2 : tensor<32x16x4xf32>, tensor<32x4x16xf32>) outs(%f : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  return %s : tensor<32x16x16xf32>
}

// Heads over "tp", two batch rows per device, and the merged scores are
// returned as they are: the chain does not close (computed unmerged, the
// scores, 4x the size of q, would be gathered at the end), so it stays as
// written and q and k are gathered before it.
// PART-LABEL: func.func @scores_returned
// PART: mesh.all_gather %{{.*}} on @m axes = ["tp"] gather_dim = 1 : tensor<2x2x16x4xf32> -> tensor<2x8x16x4xf32>
// PART: mesh.all_gather %{{.*}} on @m axes = ["tp"] gather_dim = 1 : tensor<2x2x4x16xf32> -> tensor<2x8x4x16xf32>
// PART: linalg.batch_matmul {{.*}} -> tensor<16x16x16xf32>
// PART-NOT: mesh.
// PART: return
func.func @scores_returned(%q: tensor<4x8x16x4xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>},
                %kt: tensor<4x8x4x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], [], []]>})
    -> tensor<32x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %q2 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<4x8x16x4xf32> into tensor<32x16x4xf32>
  %k2 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<4x8x4x16xf32> into tensor<32x4x16xf32>
  %e = tensor.empty() : tensor<32x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  %s = linalg.batch_matmul ins(%q2, %k2 : tensor<32x16x4xf32>, tensor<32x4x16xf32>) outs(%f : tensor<32x16x16xf32>) -> tensor<32x16x16xf32>
  return %s : tensor<32x16x16xf32>
}

// The expand back loses "tp" (2 batch rows per "dp" device), but the
// matmul before it is also returned merged: it stays as written (computed
// unmerged, its merged result would be gathered over "tp" to be
// returned), and nothing is gathered; the expanded rows are sliced.
// CHECK-LABEL: func.func @producer_escapes
// CHECK: linalg.matmul
// PART-LABEL: func.func @producer_escapes
// PART-NOT: mesh.all_gather
// PART: return
func.func @producer_escapes(%x: tensor<32x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], []]>}, %w: tensor<16x16xf32>)
    -> (tensor<4x8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["dp"], ["tp"], []]>}, tensor<32x16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>
  %h = linalg.matmul ins(%x, %w : tensor<32x16xf32>, tensor<16x16xf32>) outs(%f : tensor<32x16xf32>) -> tensor<32x16xf32>
  %t = math.tanh %h : tensor<32x16xf32>
  %r = tensor.expand_shape %t [[0, 1], [2]] output_shape [4, 8, 16] : tensor<32x16xf32> into tensor<4x8x16xf32>
  return %r, %h : tensor<4x8x16xf32>, tensor<32x16xf32>
}
