// RUN: mesh-opt %s --convert-mesh-to-runtime=on-stream=true | FileCheck %s
// RUN: mesh-opt %s --convert-mesh-to-runtime | FileCheck %s --check-prefix=HOST

// On the GPU path every collective is enqueued on the runtime's shared
// stream: the arguments of meshrt_<op>, plus the stream last. Start-up
// selects the GPU right after meshrt_init, before any communicator exists.

mesh.mesh @world(["replicate" = 2, "shard" = 4])

// CHECK-DAG: llvm.func @meshrt_all_reduce_on_stream(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_all_gather_on_stream(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_reduce_scatter_on_stream(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_all_to_all_on_stream(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_broadcast_on_stream(!llvm.ptr, !llvm.ptr, i64, i32, i64, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_permute_on_stream(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i64, i32, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_gpu_stream(!llvm.ptr) -> i32
// CHECK-DAG: llvm.func @meshrt_gpu_select_device(!llvm.ptr) -> i32
// HOST-NOT: on_stream
// HOST-NOT: meshrt_gpu

// The stream is fetched once, at the function's entry, and every collective
// of the function takes it.
// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: memref<8x16xf32>) -> (memref<8x16xf32>, memref<32x16xf32>, memref<2x16xf32>, memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>) {
  // CHECK: %[[SLOT:.*]] = llvm.alloca
  // CHECK-NEXT: %[[ST:.*]] = llvm.call @meshrt_gpu_stream(%[[SLOT]]) :
  // CHECK: llvm.icmp "eq" %[[ST]]
  // CHECK: cf.assert
  // CHECK: %[[S:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: llvm.call @meshrt_all_reduce_on_stream({{.*}}, %[[S]]) :
  %0 = mesh.all_reduce %x on @world axes = ["shard"] reduction = sum : memref<8x16xf32> -> memref<8x16xf32>
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: llvm.call @meshrt_all_gather_on_stream({{.*}}, %[[S]]) :
  %1 = mesh.all_gather %x on @world axes = ["shard"] gather_dim = 0 : memref<8x16xf32> -> memref<32x16xf32>
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: llvm.call @meshrt_reduce_scatter_on_stream({{.*}}, %[[S]]) :
  %2 = mesh.reduce_scatter %x on @world axes = ["shard"] scatter_dim = 0 reduction = sum : memref<8x16xf32> -> memref<2x16xf32>
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: llvm.call @meshrt_all_to_all_on_stream({{.*}}, %[[S]]) :
  %3 = mesh.all_to_all %x on @world axes = ["shard"] split_dim = 0 concat_dim = 0 : memref<8x16xf32> -> memref<8x16xf32>
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: llvm.call @meshrt_broadcast_on_stream({{.*}}, %[[S]]) :
  %4 = mesh.broadcast %x on @world axes = ["shard"] root = 0 : memref<8x16xf32> -> memref<8x16xf32>
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: llvm.call @meshrt_permute_on_stream({{.*}}, %[[S]]) :
  // CHECK-NOT: meshrt_gpu_stream
  // CHECK: return
  %5 = mesh.permute %x on @world axes = ["shard"] offset = 1 : memref<8x16xf32> -> memref<8x16xf32>
  return %0, %1, %2, %3, %4, %5 : memref<8x16xf32>, memref<32x16xf32>, memref<2x16xf32>, memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>
}

// CHECK-LABEL: llvm.func @mesh_module_init()
// CHECK: llvm.call @meshrt_check_version
// CHECK: cf.assert
// A device program: NCCL where a device is visible (MESHRT_BACKEND_AUTO).
// CHECK-NEXT: %[[AUTO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.call @meshrt_init(%[[AUTO]])
// CHECK: cf.assert
// CHECK: %[[DEV:.*]] = llvm.alloca
// CHECK: llvm.call @meshrt_gpu_select_device(%[[DEV]])
// CHECK: cf.assert
// CHECK: llvm.call @meshrt_mesh_declare
// CHECK: llvm.call @meshrt_comm_get
