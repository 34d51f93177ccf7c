// RUN: mesh-opt %s --mesh-to-llvm --mlir-print-ir-after=mesh-partition-if-annotated -o /dev/null 2>&1 | FileCheck %s
// RUN: not mesh-opt %s --mesh-to-llvm=partition=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not mesh-opt %s --mesh-to-nvvm="format=isa partition=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NVVM-REFUSED
// RUN: mesh-opt %S/Inputs/per-device.mlir --mesh-to-llvm --mlir-print-ir-after=mesh-partition-if-annotated -o /dev/null 2>&1 | FileCheck %s --check-prefix=PERDEVICE

// A global program given to the compile pipeline is partitioned first: each
// device gets its quarter of the sharded argument, never the whole program.
// CHECK-LABEL: IR Dump After PartitionIfAnnotated
// CHECK: func.func @scale(%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: mesh.sharding
// CHECK: arith.mulf {{.*}} : tensor<4x8xf32>

// With partition=false the annotation is an error that says what to run.
// REFUSED: error: 'func.func' op @scale has argument 0 with a 'mesh.sharding' annotation: the program is not partitioned; run --mesh-propagate-sharding --mesh-partition first

// NVVM-REFUSED: error: 'func.func' op @scale has argument 0 with a 'mesh.sharding' annotation: the program is not partitioned

// A per-device program has nothing to partition and is left as written.
// PERDEVICE-LABEL: IR Dump After PartitionIfAnnotated
// PERDEVICE: func.func @step(%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32>
// PERDEVICE: mesh.all_reduce %{{.*}} on @m axes = ["x"] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>

mesh.mesh @m(["x" = 4])
func.func @scale(%a: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>})
    -> (tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) {
  %0 = arith.mulf %a, %a : tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}
