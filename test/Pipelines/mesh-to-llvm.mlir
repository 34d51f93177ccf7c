// RUN: mesh-opt %s --mesh-to-llvm | FileCheck %s
// RUN: mesh-opt %s --mesh-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// A per-device tensor program goes all the way to the LLVM dialect: nothing
// of mesh, tensor, memref, linalg or scf is left, and mlir-translate takes it.

mesh.mesh @world(["replicate" = 2, "shard" = 4])

// CHECK-NOT: mesh.
// CHECK-NOT: memref.
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK-LABEL: llvm.func @step
// CHECK: llvm.call @meshrt_reduce_scatter
// CHECK: llvm.call @meshrt_all_reduce
// CHECK: llvm.call @meshrt_all_gather
// CHECK: llvm.call @free
// CHECK-LABEL: llvm.func @main
// CHECK: llvm.call @setvbuf(
// CHECK-NEXT: llvm.call @mesh_module_init()
// CHECK: llvm.call @mesh_module_fini()
// CHECK-LABEL: llvm.func @mesh_module_init()
func.func @step(%g: tensor<64x8xf32>, %p: tensor<16x8xf32>) -> tensor<64x8xf32> attributes {llvm.emit_c_interface} {
  %s = mesh.reduce_scatter %g on @world axes = ["shard"] scatter_dim = 0 reduction = sum : tensor<64x8xf32> -> tensor<16x8xf32>
  %a = mesh.all_reduce %s on @world axes = ["replicate"] reduction = avg : tensor<16x8xf32> -> tensor<16x8xf32>
  %n = arith.subf %p, %a : tensor<16x8xf32>
  %t = math.tanh %n : tensor<16x8xf32>
  %full = mesh.all_gather %t on @world axes = ["shard"] gather_dim = 0 : tensor<16x8xf32> -> tensor<64x8xf32>
  return %full : tensor<64x8xf32>
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : i32
  return %c0 : i32
}

// LLVMIR-DAG: define void @_mlir_ciface_step(
// LLVMIR-DAG: call i32 @meshrt_reduce_scatter(
// LLVMIR-DAG: define void @mesh_module_init()
