// RUN: mesh-opt %s | mesh-opt | FileCheck %s
// RUN: mesh-opt %s --mlir-print-op-generic | mesh-opt | FileCheck %s
// RUN: mesh-opt %s --emit-bytecode | mesh-opt | FileCheck %s

// Round trip of every op and attribute form of the mesh dialect.

// CHECK: mesh.mesh @world(["replicate" = 2, "shard" = 4])
mesh.mesh @world(["replicate" = 2, "shard" = 4])
// CHECK: mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])
mesh.mesh @dpsp(["data_parallel" = ?, "sequence_parallel" = 4])
// CHECK: mesh.mesh @cube(["replicate" = 2, "shard" = 2, "tp" = 2])
mesh.mesh @cube(["replicate" = 2, "shard" = 2, "tp" = 2])
// CHECK: mesh.mesh @line(["x" = 1])
mesh.mesh @line(["x" = 1])
// Meshes over part of the world, their devices listed row-major.
// CHECK: mesh.mesh @stage0(["dp" = 2, "tp" = 2]) devices = [0, 1, 2, 3]
mesh.mesh @stage0(["dp" = 2, "tp" = 2]) devices = [0, 1, 2, 3]
// CHECK: mesh.mesh @stage1(["dp" = 2, "tp" = 2]) devices = [7, 5, 6, 4]
mesh.mesh @stage1(["dp" = 2, "tp" = 2]) devices = [7, 5, 6, 4]
// Names are printed escaped, so they parse back.
// CHECK: mesh.mesh @odd(["a\22b" = 2, "c d" = 2])
mesh.mesh @odd(["a\22b" = 2, "c d" = 2])

// CHECK-LABEL: func.func @shardings
// CHECK-SAME: {mesh.sharding = #mesh.sharding<@world, {{\[\[}}"shard"], []]>}
// CHECK-SAME: -> (tensor<64x128xf32> {mesh.sharding = #mesh.sharding<@world, {{\[\[}}], []], partial = max["replicate"]>})
func.func @shardings(%x: tensor<64x128xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []]>})
    -> (tensor<64x128xf32> {mesh.sharding = #mesh.sharding<@world, [[], []], partial = max["replicate"]>}) {
  // CHECK: mesh.shard %{{.*}} : tensor<64x128xf32> to #mesh.sharding<@world, {{\[\[}}"replicate", "shard"], []]>
  %y = mesh.shard %x : tensor<64x128xf32> to #mesh.sharding<@world, [["replicate", "shard"], []]>
  // CHECK: mesh.shard %{{.*}} : tensor<64x128xf32> to #mesh.sharding<@world, {{\[\[}}"shard"], ["replicate"]]>
  %z = mesh.shard %y : tensor<64x128xf32> to #mesh.sharding<@world, [["shard"], ["replicate"]]>
  // CHECK: arith.addf {{.*}} {mesh.sharding = #mesh.sharding<@world, {{\[\[}}], []], partial = sum["shard"]>}
  %p = arith.addf %z, %z {mesh.sharding = #mesh.sharding<@world, [[], []], partial = sum["shard"]>} : tensor<64x128xf32>
  // CHECK: arith.addf {{.*}} {mesh.sharding = [#mesh.sharding<@world, {{\[\[}}], ["shard"]], partial = avg["replicate"]>]}
  %q = arith.addf %p, %p {mesh.sharding = [#mesh.sharding<@world, [[], ["shard"]], partial = avg["replicate"]>]} : tensor<64x128xf32>
  return %q : tensor<64x128xf32>
}

// CHECK-LABEL: func.func @scalar_and_3d
func.func @scalar_and_3d(%s: tensor<f32> {mesh.sharding = #mesh.sharding<@cube, []>},
                         %t: tensor<4x4x4xi32> {mesh.sharding = #mesh.sharding<@cube, [["tp"], ["shard"], []], partial = xor["replicate"]>}) {
  // CHECK-SAME: #mesh.sharding<@cube, []>
  // CHECK-SAME: #mesh.sharding<@cube, {{\[\[}}"tp"], ["shard"], []], partial = xor["replicate"]>
  return
}

// Halos: each device also holds its neighbours' edge elements. All-zero
// widths are no halo and print as none.
// CHECK-LABEL: func.func @halos
// CHECK-SAME: #mesh.sharding<@world, {{\[\[}}"replicate"], ["shard"]], halo = {{\[\[}}1, 1], [0, 2]]>
// CHECK-SAME: #mesh.sharding<@world, {{\[\[}}"shard"], []], halo = {{\[\[}}2, 0], [0, 0]], partial = sum["replicate"]>
// CHECK-SAME: #mesh.sharding<@world, {{\[\[}}"shard"], []]>
func.func @halos(%a: tensor<18x18xf32> {mesh.sharding = #mesh.sharding<@world, [["replicate"], ["shard"]], halo = [[1, 1], [0, 2]]>},
                 %b: tensor<10x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], halo = [[2, 0], [0, 0]], partial = sum["replicate"]>},
                 %c: tensor<8x4xf32> {mesh.sharding = #mesh.sharding<@world, [["shard"], []], halo = [[0, 0], [0, 0]]>}) {
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%v: tensor<16x128xf32>, %w: tensor<8x64xf32>, %i: tensor<8xi32>, %d: tensor<?x128xf32>, %w3: tensor<3x8xf32>) {
  // CHECK: mesh.all_reduce %{{.*}} on @world axes = ["shard"] reduction = sum : tensor<16x128xf32> -> tensor<16x128xf32>
  %0 = mesh.all_reduce %v on @world axes = ["shard"] reduction = sum : tensor<16x128xf32> -> tensor<16x128xf32>
  // CHECK: mesh.all_reduce %{{.*}} on @world axes = ["shard", "replicate"] reduction = avg
  %1 = mesh.all_reduce %v on @world axes = ["shard", "replicate"] reduction = avg : tensor<16x128xf32> -> tensor<16x128xf32>
  // CHECK: reduction = prod
  %2 = mesh.all_reduce %i on @world axes = ["replicate"] reduction = prod : tensor<8xi32> -> tensor<8xi32>
  // CHECK: reduction = min
  %3 = mesh.all_reduce %i on @world axes = ["replicate"] reduction = min : tensor<8xi32> -> tensor<8xi32>
  // CHECK: reduction = max
  %4 = mesh.all_reduce %i on @world axes = ["replicate"] reduction = max : tensor<8xi32> -> tensor<8xi32>
  // CHECK: reduction = and
  %5 = mesh.all_reduce %i on @world axes = ["replicate"] reduction = and : tensor<8xi32> -> tensor<8xi32>
  // CHECK: reduction = or
  %6 = mesh.all_reduce %i on @world axes = ["replicate"] reduction = or : tensor<8xi32> -> tensor<8xi32>
  // CHECK: reduction = xor
  %7 = mesh.all_reduce %i on @world axes = ["replicate"] reduction = xor : tensor<8xi32> -> tensor<8xi32>
  // CHECK: mesh.all_gather %{{.*}} on @world axes = ["shard"] gather_dim = 0 : tensor<16x128xf32> -> tensor<64x128xf32>
  %8 = mesh.all_gather %v on @world axes = ["shard"] gather_dim = 0 : tensor<16x128xf32> -> tensor<64x128xf32>
  // CHECK: mesh.all_gather %{{.*}} on @world axes = ["replicate", "shard"] gather_dim = 1 : tensor<16x128xf32> -> tensor<16x1024xf32>
  %9 = mesh.all_gather %v on @world axes = ["replicate", "shard"] gather_dim = 1 : tensor<16x128xf32> -> tensor<16x1024xf32>
  // CHECK: mesh.reduce_scatter %{{.*}} on @world axes = ["shard"] scatter_dim = 0 reduction = sum : tensor<16x128xf32> -> tensor<4x128xf32>
  %10 = mesh.reduce_scatter %v on @world axes = ["shard"] scatter_dim = 0 reduction = sum : tensor<16x128xf32> -> tensor<4x128xf32>
  // Padded: 10 of the 16 rows hold data.
  // CHECK: mesh.all_gather %{{.*}} on @world axes = ["shard"] gather_dim = 0 valid = 10 : tensor<4x128xf32> -> tensor<16x128xf32>
  %pg = mesh.all_gather %10 on @world axes = ["shard"] gather_dim = 0 valid = 10 : tensor<4x128xf32> -> tensor<16x128xf32>
  // CHECK: mesh.reduce_scatter %{{.*}} on @world axes = ["shard"] scatter_dim = 0 reduction = sum valid = 10 : tensor<16x128xf32> -> tensor<4x128xf32>
  %ps = mesh.reduce_scatter %v on @world axes = ["shard"] scatter_dim = 0 reduction = sum valid = 10 : tensor<16x128xf32> -> tensor<4x128xf32>
  // CHECK: mesh.all_to_all %{{.*}} on @dpsp axes = ["sequence_parallel"] split_dim = 1 concat_dim = 0 : tensor<8x64xf32> -> tensor<32x16xf32>
  %11 = mesh.all_to_all %w on @dpsp axes = ["sequence_parallel"] split_dim = 1 concat_dim = 0 : tensor<8x64xf32> -> tensor<32x16xf32>
  // CHECK: mesh.all_to_all %{{.*}} on @world axes = ["shard"] split_dim = 1 concat_dim = 1 : tensor<8x64xf32> -> tensor<8x64xf32>
  %12 = mesh.all_to_all %w on @world axes = ["shard"] split_dim = 1 concat_dim = 1 : tensor<8x64xf32> -> tensor<8x64xf32>
  // Padded all_to_alls: 10 of 12 rows of the concat dim, 10 of 12 of the split dim.
  // CHECK: mesh.all_to_all %{{.*}} on @world axes = ["shard"] split_dim = 1 concat_dim = 0 concat_valid = 10 : tensor<3x8xf32> -> tensor<12x2xf32>
  %pa = mesh.all_to_all %w3 on @world axes = ["shard"] split_dim = 1 concat_dim = 0 concat_valid = 10 : tensor<3x8xf32> -> tensor<12x2xf32>
  // CHECK: mesh.all_to_all %{{.*}} on @world axes = ["shard"] split_dim = 0 concat_dim = 1 split_valid = 10 : tensor<12x2xf32> -> tensor<3x8xf32>
  %pb = mesh.all_to_all %pa on @world axes = ["shard"] split_dim = 0 concat_dim = 1 split_valid = 10 : tensor<12x2xf32> -> tensor<3x8xf32>
  // CHECK: mesh.all_slice %{{.*}} on @world axes = ["shard"] slice_dim = 1 : tensor<16x128xf32> -> tensor<16x32xf32>
  %13 = mesh.all_slice %v on @world axes = ["shard"] slice_dim = 1 : tensor<16x128xf32> -> tensor<16x32xf32>
  // CHECK: mesh.broadcast %{{.*}} on @world axes = ["shard"] root = 3 : tensor<16x128xf32> -> tensor<16x128xf32>
  %14 = mesh.broadcast %v on @world axes = ["shard"] root = 3 : tensor<16x128xf32> -> tensor<16x128xf32>
  // CHECK: mesh.permute %{{.*}} on @world axes = ["shard"] offset = 1 rotate : tensor<16x128xf32> -> tensor<16x128xf32>
  %15 = mesh.permute %v on @world axes = ["shard"] offset = 1 rotate : tensor<16x128xf32> -> tensor<16x128xf32>
  // CHECK: mesh.permute %{{.*}} on @world axes = ["shard"] offset = -2 : tensor<16x128xf32> -> tensor<16x128xf32>
  %16 = mesh.permute %v on @world axes = ["shard"] offset = -2 : tensor<16x128xf32> -> tensor<16x128xf32>
  // A `?` axis leaves gathered sizes to run time.
  // CHECK: mesh.all_gather %{{.*}} on @dpsp axes = ["data_parallel"] gather_dim = 0 : tensor<16x128xf32> -> tensor<?x128xf32>
  %17 = mesh.all_gather %v on @dpsp axes = ["data_parallel"] gather_dim = 0 : tensor<16x128xf32> -> tensor<?x128xf32>
  // CHECK: mesh.all_gather %{{.*}} on @world axes = ["shard"] gather_dim = 0 : tensor<?x128xf32> -> tensor<?x128xf32>
  %18 = mesh.all_gather %d on @world axes = ["shard"] gather_dim = 0 : tensor<?x128xf32> -> tensor<?x128xf32>
  // CHECK: mesh.all_reduce %{{.*}} on @world axes = [] reduction = sum
  %19 = mesh.all_reduce %v on @world axes = [] reduction = sum : tensor<16x128xf32> -> tensor<16x128xf32>
  // CHECK: mesh.barrier on @world axes = ["replicate", "shard"]
  mesh.barrier on @world axes = ["replicate", "shard"]
  // CHECK: mesh.barrier on @world axes = []
  mesh.barrier on @world axes = []
  return
}

// CHECK-LABEL: func.func @memref_forms
func.func @memref_forms(%m: memref<16x128xf32>, %b: memref<8xbf16>) {
  // CHECK: mesh.all_reduce %{{.*}} on @world axes = ["shard"] reduction = max : memref<16x128xf32> -> memref<16x128xf32>
  %0 = mesh.all_reduce %m on @world axes = ["shard"] reduction = max : memref<16x128xf32> -> memref<16x128xf32>
  // CHECK: mesh.all_gather %{{.*}} : memref<16x128xf32> -> memref<64x128xf32>
  %1 = mesh.all_gather %m on @world axes = ["shard"] gather_dim = 0 : memref<16x128xf32> -> memref<64x128xf32>
  // CHECK: mesh.reduce_scatter %{{.*}} : memref<16x128xf32> -> memref<16x32xf32>
  %2 = mesh.reduce_scatter %m on @world axes = ["shard"] scatter_dim = 1 reduction = sum : memref<16x128xf32> -> memref<16x32xf32>
  // CHECK: mesh.all_to_all %{{.*}} : memref<16x128xf32> -> memref<64x32xf32>
  %3 = mesh.all_to_all %m on @world axes = ["shard"] split_dim = 1 concat_dim = 0 : memref<16x128xf32> -> memref<64x32xf32>
  // CHECK: mesh.all_slice %{{.*}} : memref<16x128xf32> -> memref<8x128xf32>
  %4 = mesh.all_slice %m on @world axes = ["replicate"] slice_dim = 0 : memref<16x128xf32> -> memref<8x128xf32>
  // CHECK: mesh.broadcast %{{.*}} : memref<8xbf16> -> memref<8xbf16>
  %5 = mesh.broadcast %b on @world axes = ["replicate", "shard"] root = 7 : memref<8xbf16> -> memref<8xbf16>
  // CHECK: mesh.permute %{{.*}} : memref<8xbf16> -> memref<8xbf16>
  %6 = mesh.permute %b on @world axes = ["replicate"] offset = 1 : memref<8xbf16> -> memref<8xbf16>
  // CHECK: mesh.all_reduce %{{.*}} reduction = sum in_place : memref<16x128xf32> -> memref<16x128xf32>
  %7 = mesh.all_reduce %m on @world axes = ["shard"] reduction = sum in_place : memref<16x128xf32> -> memref<16x128xf32>
  // CHECK: mesh.broadcast %{{.*}} root = 7 in_place : memref<8xbf16> -> memref<?xbf16>
  %8 = mesh.broadcast %b on @world axes = ["replicate", "shard"] root = 7 in_place : memref<8xbf16> -> memref<?xbf16>
  return
}

// CHECK-LABEL: func.func @queries
func.func @queries() -> (index, index, index) {
  // CHECK: mesh.axis_index @world "shard" : index
  %i = mesh.axis_index @world "shard" : index
  // CHECK: mesh.axis_size @world "replicate" : index
  %n = mesh.axis_size @world "replicate" : index
  // CHECK: mesh.axis_size @dpsp "data_parallel" : index
  %d = mesh.axis_size @dpsp "data_parallel" : index
  return %i, %n, %d : index, index, index
}

// Transfers between meshes, the default tag left out, and membership.
// CHECK-LABEL: func.func @point_to_point
func.func @point_to_point(%x: tensor<4x8xf32>, %m: memref<4x8xf32>) -> (tensor<4x8xf32>, memref<4x8xf32>, i1) {
  // CHECK: mesh.send %{{.*}} on @stage0 to @stage1 : tensor<4x8xf32>
  mesh.send %x on @stage0 to @stage1 : tensor<4x8xf32>
  // CHECK: mesh.send %{{.*}} on @stage0 to @stage1 tag = 7 : memref<4x8xf32>
  mesh.send %m on @stage0 to @stage1 tag = 7 : memref<4x8xf32>
  // CHECK: mesh.recv on @stage1 from @stage0 : tensor<4x8xf32>
  %t = mesh.recv on @stage1 from @stage0 tag = 0 : tensor<4x8xf32>
  // CHECK: mesh.recv on @stage1 from @stage0 tag = 7 : memref<4x8xf32>
  %b = mesh.recv on @stage1 from @stage0 tag = 7 : memref<4x8xf32>
  // CHECK: mesh.is_member @stage1 : i1
  %in = mesh.is_member @stage1 : i1
  return %t, %b, %in : tensor<4x8xf32>, memref<4x8xf32>, i1
}
