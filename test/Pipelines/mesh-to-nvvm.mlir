// RUN: mesh-opt %s --mesh-to-nvvm=format=isa | FileCheck %s
// RUN: mesh-opt %s --mesh-to-nvvm=format=isa | FileCheck %s --check-prefix=BINARY
// RUN: mesh-opt %s --mesh-to-nvvm=format=isa | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: mesh-opt %s --mesh-to-nvvm=format=isa | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=ONESTREAM
// RUN: mesh-opt %s --mesh-to-nvvm=format=isa --mlir-print-ir-after=mesh-gpu-verify-host-access -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: mesh-opt %s --mesh-to-nvvm="format=isa chip=sm_80 tile-sizes=8,32 vector-bytes=1" --mlir-print-ir-after=mesh-gpu-verify-host-access 2>&1 | FileCheck %s --check-prefix=OPTIONS

// format=isa embeds PTX and runs no CUDA tool, so this test needs no toolkit.
// A kernel, a collective, a fused kernel, a full reduction: four launches
// on the runtime's stream (the first in one of two forms, the reduction
// two) with the collective enqueued between them, and one
// synchronisation, at the end.

mesh.mesh @world(["x" = 4])

// CHECK-LABEL: llvm.func @step
// CHECK: %[[S:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-NOT: meshrt_stream_synchronize
// The sum of the arguments: 16-byte loads when both arguments start on a
// multiple of 16 bytes (tested on the host), one element per load
// otherwise (mesh-gpu-vectorize-elementwise).
// CHECK: llvm.urem
// CHECK: llvm.urem
// CHECK: %[[ALIGNED:.*]] = llvm.and %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: llvm.cond_br %[[ALIGNED]], ^[[VEC:.*]], ^[[SCALAR:[a-z0-9]*]]
// CHECK: ^[[VEC]]:
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @mesh_kernels::@step_kernel blocks in ({{.*}}) threads in ({{.*}})
// CHECK: ^[[SCALAR]]:
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @mesh_kernels::@step_kernel_0 blocks in ({{.*}}) threads in ({{.*}})
// CHECK-NOT: meshrt_stream_synchronize
// The sum dies at the all_reduce, which reduces it in place (one buffer is
// send and receive; mesh-collectives-in-place).
// CHECK: llvm.call @meshrt_all_reduce_on_stream(%{{[^,]*}}, %[[BUF:[^,]*]], %[[BUF]],
// CHECK-NOT: meshrt_stream_synchronize
// The multiply and the tanh, fused (mesh-fuse-elementwise): one kernel, on
// buffers the function allocated (aligned: no test), its constant a vector.
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @mesh_kernels::@step_kernel_1 {{.*}} : vector<4xf32>
// CHECK-NOT: meshrt_stream_synchronize
// The full reduction: 64 partial sums of 32 elements in parallel
// (mesh-gpu-full-reductions), then one block of 256 threads combining them
// (mesh-gpu-row-reductions).
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @mesh_kernels::@step_kernel_2 blocks in (%[[ONE:.*]], %[[ONE]], %[[ONE]]) threads in (%[[T256:.*]], %[[ONE]], %[[ONE]])
// CHECK-NOT: meshrt_stream_synchronize
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @mesh_kernels::@step_kernel_3 blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[T256]], %[[ONE]], %[[ONE]])
// CHECK-NOT: gpu.launch_func
// CHECK: llvm.call @meshrt_stream_synchronize(%[[S]])
// CHECK-NOT: meshrt_stream_synchronize
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @mesh_module_init()
// CHECK: llvm.call @meshrt_check_version
// CHECK: llvm.call @meshrt_init
// CHECK: llvm.call @meshrt_gpu_select_device
// CHECK: llvm.call @meshrt_comm_get

// BINARY-NOT: memref.
// BINARY-NOT: scf.
// BINARY-NOT: linalg.
// BINARY-COUNT-1: gpu.binary @mesh_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">{{.*}}.target sm_90
// BINARY-NOT: gpu.binary

// The collectives and the device stage share one stream fetch per call.
// ONESTREAM-COUNT-1: call i32 @meshrt_gpu_stream(
// ONESTREAM-NOT: call i32 @meshrt_gpu_stream(

// LLVMIR-COUNT-5: call void @mgpuLaunchKernel(
// LLVMIR-NOT: call void @mgpuLaunchKernel(
// LLVMIR-NOT: @mgpuStreamSynchronize(
// LLVMIR-COUNT-1: call i32 @meshrt_stream_synchronize(
// LLVMIR-NOT: call i32 @meshrt_stream_synchronize(

// After the device stage, the host function only allocates, copies,
// launches and calls the runtime: it touches no buffer itself.
// DEVICE-LABEL: func.func @step
// DEVICE-NOT: memref.load
// DEVICE-NOT: memref.store
// DEVICE-NOT: memref.copy
// DEVICE-NOT: memref.alloc
// DEVICE-NOT: memref.dealloc
// DEVICE-NOT: scf.for
// DEVICE-NOT: scf.parallel
// DEVICE-NOT: linalg.
// DEVICE: return
// DEVICE: gpu.module @mesh_kernels

// tile-sizes=8,32 over 64x32 (with one element per access): 8 x 1 blocks
// of 8 x 32 threads, threadIdx.x along the rows (the 32); no test of
// alignment and no vector.
// OPTIONS: gpu.launch_func {{.*}} @mesh_kernels::@step_kernel blocks in (%c8, %c1, %c1) threads in (%c32, %c8, %c1)
// OPTIONS-NOT: vector<
// OPTIONS-NOT: @step_kernel_3
// OPTIONS: gpu.binary @mesh_kernels {{.*}}chip = "sm_80"{{.*}}.target sm_80
func.func @step(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<f32>) attributes {llvm.emit_c_interface} {
  %bias = arith.constant dense<0.5> : tensor<64x32xf32>
  %s = arith.addf %a, %b : tensor<64x32xf32>
  %r = mesh.all_reduce %s on @world axes = ["x"] reduction = sum : tensor<64x32xf32> -> tensor<64x32xf32>
  %m = arith.mulf %r, %bias : tensor<64x32xf32>
  %t = math.tanh %m : tensor<64x32xf32>
  %z = arith.constant dense<0.0> : tensor<f32>
  %sum = linalg.reduce ins(%t : tensor<64x32xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%x: f32, %y: f32) { %q = arith.addf %x, %y : f32
      linalg.yield %q : f32 }
  return %t, %sum : tensor<64x32xf32>, tensor<f32>
}
