// `explain` per region: a stack of layers is reported layer by layer, and a
// run of identical layers once.
//
// 1. Regions from the ops' location names (torch module paths, JAX scopes):
//    the scope of "layers.1.fc" is "layers.1". Layers 2-4 are laid out and
//    cost alike (layer 1 reads the annotated input), so they are printed
//    once and counted.
// RUN: mesh-opt %s --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-NAMED
// CHECK-NAMED: 4 regions (the scopes of the ops' location names):
// CHECK-NAMED-NEXT: region 1 'layers.0': 3 ops from 'linalg.matmul' at loc("layers.0.fc"); communication 0.000 us (0 bytes per device, 0 reshardings), arithmetic {{[0-9.]+}} us, most live 256 B
// CHECK-NAMED-NEXT: arguments: 0 {{\[\["a"\], \[\]\]}}; 1 {{\[\[\], \[\]\]}};
// CHECK-NAMED-NEXT: runner-up: argument 1 as {{\[\[\], \["b"\]\]}}, +{{[0-9.]+}} us
// CHECK-NAMED-NEXT: region 2 'layers.1': 3 ops from 'linalg.matmul' at loc("layers.1.fc")
// CHECK-NAMED-NEXT: arguments: 2 {{\[\[\], \[\]\]}};
// CHECK-NAMED-NEXT: runner-up: argument 2
// CHECK-NAMED-NEXT: regions 3-4: each as region 2 'layers.1', 2 times more
//
// 2. Without names, the program is cut where one value carries it on (the
//    residual stream), pieces joined until a region has 8 ops: the GPT
//    stack of bench/partition. Each layer is an attention half and an MLP
//    half; past the first layer the pair repeats.
// RUN: python3 %mesh_src_root/bench/partition/gpt.py --plan batch --layers 4 > %t.gpt.mlir
// RUN: mesh-opt %t.gpt.mlir --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-CUTS
// CHECK-CUTS: 10 regions (cut where one value carries the program on):
// CHECK-CUTS-NEXT: region 1: 8 ops from 'linalg.generic'
// CHECK-CUTS-NEXT: arguments: 0 {{\[\["dp"\], \[\], \[\]\]}}; 1 {{\[\[\]\]}}; 2 {{\[\[\]\]}};
// CHECK-CUTS: region 5: 52 ops from 'linalg.generic' at {{.*}}; communication {{[0-9.]+}} us (3072 bytes per device, 1 resharding)
// CHECK-CUTS: region 6: 20 ops
// CHECK-CUTS: regions 7-10: regions 5-6 again, 2 times more
//
// 3. A training step keeps its forward values for the backward: no point
//    carries it alone. Without names it is cut where it repeats: ops alike
//    (name, types, inherent attributes) are one letter, and each run of a
//    repeated block is cut into one region per block, at the shift where
//    the fewest values cross. The MLP's layers alternate 32->64 and 64->32,
//    so a block is two layers: three in the forward (the last two layers
//    differ: no ReLU at the end), three in the backward, then the SGD
//    updates of two weights each.
// RUN: python3 %mesh_src_root/bench/autoshard/mlp_step.py --plan auto --layers 8 --mesh d=8 > %t.mlp.mlir
// RUN: mesh-opt %t.mlp.mlir --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-STEP
// CHECK-STEP: 11 regions (no point where one value carries the program on; cut where it repeats):
// CHECK-STEP-NEXT: region 1: 4 ops from 'linalg.matmul' at loc({{.*}}:7:9);
// CHECK-STEP: region 2: 4 ops from 'linalg.matmul' at loc({{.*}}:17:10);
// CHECK-STEP: region 3: 4 ops from 'linalg.matmul' at loc({{.*}}:27:10);
// CHECK-STEP: region 4: 10 ops from 'linalg.matmul' at loc({{.*}}:37:10);
// CHECK-STEP: region 5: 12 ops from 'linalg.transpose'
// CHECK-STEP: region 6: 12 ops from 'linalg.transpose'
// CHECK-STEP: region 7: 14 ops from 'linalg.transpose'
// CHECK-STEP: region 8: 4 ops from 'arith.mulf'
// CHECK-STEP-NEXT: regions 9-11: each as region 8, 3 times more
//
//    The cuts follow the program, not the plan: under a budget the layers
//    are laid out differently (the annotations the plan writes are not part
//    of an op's letter), and the regions are the same.
// RUN: mesh-opt %t.mlp.mlir --mesh-auto-shard="memory-per-device=80KiB explain" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-BUDGET
// CHECK-BUDGET: 11 regions (no point where one value carries the program on; cut where it repeats):
// CHECK-BUDGET-NEXT: region 1: 4 ops from 'linalg.matmul' at loc({{.*}}:7:9);
// CHECK-BUDGET: region 2: 4 ops from 'linalg.matmul' at loc({{.*}}:17:10);
// CHECK-BUDGET: region 3: 4 ops from 'linalg.matmul' at loc({{.*}}:27:10);
// CHECK-BUDGET: region 4: 10 ops from 'linalg.matmul' at loc({{.*}}:37:10);
// CHECK-BUDGET: region 5: 12 ops from 'linalg.transpose'
// CHECK-BUDGET: region 8: 4 ops from 'arith.mulf'
// CHECK-BUDGET-NEXT: regions 9-10: each as region 8, 2 times more
// CHECK-BUDGET-NEXT: region 11: 4 ops from 'arith.mulf'
//
// 4. A step too short to repeat (two layers) is one region.
// RUN: python3 %mesh_src_root/bench/autoshard/mlp_step.py --plan auto --layers 2 --mesh d=8 > %t.mlp2.mlir
// RUN: mesh-opt %t.mlp2.mlir --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-SHORT
// CHECK-SHORT: 1 region (no point where one value carries the program on, and no repetition):
// CHECK-SHORT-NEXT: region 1: 16 ops from 'linalg.matmul'
//
// 5. A block repeated once is printed as one region like another.
// RUN: mesh-opt %s --mesh-auto-shard=explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-ONCE
// CHECK-ONCE-LABEL: auto-shard @twice
// CHECK-ONCE: 3 regions (the scopes of the ops' location names):
// CHECK-ONCE: region 2 'layers.1': 3 ops
// CHECK-ONCE: region 3: as region 2 'layers.1'{{$}}

mesh.mesh @m(["a" = 2, "b" = 2])
func.func @stack(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>}, %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>, %w3: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %c0 = arith.constant dense<0.0> : tensor<8x16xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.0.fc")
  %r0 = arith.maximumf %m0, %c0 : tensor<8x16xf32> loc("layers.0.act")
  %h0 = arith.addf %r0, %x : tensor<8x16xf32> loc("layers.0.residual")
  %m1 = linalg.matmul ins(%h0, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.1.fc")
  %r1 = arith.maximumf %m1, %c0 : tensor<8x16xf32> loc("layers.1.act")
  %h1 = arith.addf %r1, %h0 : tensor<8x16xf32> loc("layers.1.residual")
  %m2 = linalg.matmul ins(%h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.2.fc")
  %r2 = arith.maximumf %m2, %c0 : tensor<8x16xf32> loc("layers.2.act")
  %h2 = arith.addf %r2, %h1 : tensor<8x16xf32> loc("layers.2.residual")
  %m3 = linalg.matmul ins(%h2, %w3 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.3.fc")
  %r3 = arith.maximumf %m3, %c0 : tensor<8x16xf32> loc("layers.3.act")
  %h3 = arith.addf %r3, %h2 : tensor<8x16xf32> loc("layers.3.residual")
  return %h3 : tensor<8x16xf32>
}

func.func @twice(%x: tensor<8x16xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], []]>}, %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %c0 = arith.constant dense<0.0> : tensor<8x16xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.0.fc")
  %r0 = arith.maximumf %m0, %c0 : tensor<8x16xf32> loc("layers.0.act")
  %h0 = arith.addf %r0, %x : tensor<8x16xf32> loc("layers.0.residual")
  %m1 = linalg.matmul ins(%h0, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.1.fc")
  %r1 = arith.maximumf %m1, %c0 : tensor<8x16xf32> loc("layers.1.act")
  %h1 = arith.addf %r1, %h0 : tensor<8x16xf32> loc("layers.1.residual")
  %m2 = linalg.matmul ins(%h1, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("layers.2.fc")
  %r2 = arith.maximumf %m2, %c0 : tensor<8x16xf32> loc("layers.2.act")
  %h2 = arith.addf %r2, %h1 : tensor<8x16xf32> loc("layers.2.residual")
  return %h2 : tensor<8x16xf32>
}
