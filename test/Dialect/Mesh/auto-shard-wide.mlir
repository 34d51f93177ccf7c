// RUN: mesh-opt %s --mesh-auto-shard=explain --mesh-partition --mesh-report-communication -o /dev/null 2>&1 | FileCheck %s

// A program too wide to solve exactly (skip connections four layers apart
// on rank-3 tensors over three axes: 125 layouts per value) is not refused:
// the widest ops lose their layouts of dearest arithmetic until the
// elimination fits, and the plan is reported as not proven, with a bound
// that counts arithmetic only. The plan partitions, and moves what it
// predicts.
// CHECK: auto-shard @f on @m ("a", "b", "c"): {{.*}} per call (communication {{.*}}, [[BYTES:[0-9]+]] bytes per device; {{.*}}), not proven optimal: at most {{.*}} above the optimum
// CHECK-NEXT: the program is too wide to solve exactly: {{[0-9]+}} layouts of its widest ops (the dearest in arithmetic) were set aside; the bound counts each op's least arithmetic and no communication
// CHECK: total: {{[0-9]+}} collectives, [[BYTES]] bytes per device
mesh.mesh @m(["a" = 2, "b" = 2, "c" = 2])
func.func @f(%x0: tensor<8x8x8xf32> {mesh.sharding = #mesh.sharding<@m, [["a"], [], []]>}, %y: tensor<8x8x8xf32>) -> tensor<8x8x8xf32> {
  %x1 = arith.addf %x0, %y : tensor<8x8x8xf32>
  %t2 = arith.addf %x1, %x0 : tensor<8x8x8xf32>
  %e2 = tensor.empty() : tensor<8x8x8xf32>
  %x2 = linalg.transpose ins(%t2 : tensor<8x8x8xf32>) outs(%e2 : tensor<8x8x8xf32>) permutation = [0, 2, 1]
  %t3 = arith.addf %x2, %x0 : tensor<8x8x8xf32>
  %e3 = tensor.empty() : tensor<8x8x8xf32>
  %x3 = linalg.transpose ins(%t3 : tensor<8x8x8xf32>) outs(%e3 : tensor<8x8x8xf32>) permutation = [1, 2, 0]
  %t4 = arith.addf %x3, %x0 : tensor<8x8x8xf32>
  %e4 = tensor.empty() : tensor<8x8x8xf32>
  %x4 = linalg.transpose ins(%t4 : tensor<8x8x8xf32>) outs(%e4 : tensor<8x8x8xf32>) permutation = [2, 0, 1]
  %t5 = arith.addf %x4, %x1 : tensor<8x8x8xf32>
  %e5 = tensor.empty() : tensor<8x8x8xf32>
  %x5 = linalg.transpose ins(%t5 : tensor<8x8x8xf32>) outs(%e5 : tensor<8x8x8xf32>) permutation = [0, 2, 1]
  %t6 = arith.addf %x5, %x2 : tensor<8x8x8xf32>
  %e6 = tensor.empty() : tensor<8x8x8xf32>
  %x6 = linalg.transpose ins(%t6 : tensor<8x8x8xf32>) outs(%e6 : tensor<8x8x8xf32>) permutation = [1, 2, 0]
  %t7 = arith.addf %x6, %x3 : tensor<8x8x8xf32>
  %e7 = tensor.empty() : tensor<8x8x8xf32>
  %x7 = linalg.transpose ins(%t7 : tensor<8x8x8xf32>) outs(%e7 : tensor<8x8x8xf32>) permutation = [2, 0, 1]
  %t8 = arith.addf %x7, %x4 : tensor<8x8x8xf32>
  %e8 = tensor.empty() : tensor<8x8x8xf32>
  %x8 = linalg.transpose ins(%t8 : tensor<8x8x8xf32>) outs(%e8 : tensor<8x8x8xf32>) permutation = [0, 2, 1]
  %t9 = arith.addf %x8, %x5 : tensor<8x8x8xf32>
  %e9 = tensor.empty() : tensor<8x8x8xf32>
  %x9 = linalg.transpose ins(%t9 : tensor<8x8x8xf32>) outs(%e9 : tensor<8x8x8xf32>) permutation = [1, 2, 0]
  %t10 = arith.addf %x9, %x6 : tensor<8x8x8xf32>
  %e10 = tensor.empty() : tensor<8x8x8xf32>
  %x10 = linalg.transpose ins(%t10 : tensor<8x8x8xf32>) outs(%e10 : tensor<8x8x8xf32>) permutation = [2, 0, 1]
  return %x10 : tensor<8x8x8xf32>
}
