// RUN: mesh-opt %s --mesh-gpu-merge-kernel-modules --split-input-file | FileCheck %s

// Kernels of modules that hold only kernels move into one module, named
// after the module they came from; launches follow them. A module holding
// anything else stays.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @mesh_kernels {
// CHECK-NEXT: gpu.func @f_kernel(%{{.*}}: memref<4xf32>) kernel
// CHECK: gpu.func @f_kernel_0(%{{.*}}: memref<8xf32>) kernel
// CHECK: gpu.func @g_kernel_a(
// CHECK: gpu.func @g_kernel_b(
// CHECK: gpu.module @h_kernel {
// CHECK-NEXT: gpu.func @h_kernel
// CHECK: memref.global
// CHECK-NOT: gpu.module @f_kernel
// CHECK: func.func @f
// CHECK: gpu.launch_func @mesh_kernels::@f_kernel blocks
// CHECK: gpu.launch_func @mesh_kernels::@f_kernel_0 blocks
// CHECK: gpu.launch_func @mesh_kernels::@g_kernel_b blocks
// CHECK: gpu.launch_func @h_kernel::@h_kernel blocks
module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    gpu.func @f_kernel(%x: memref<4xf32>) kernel { gpu.return }
  }
  gpu.module @f_kernel_0 {
    gpu.func @f_kernel(%x: memref<8xf32>) kernel { gpu.return }
  }
  gpu.module @g_kernel {
    gpu.func @a(%x: memref<4xf32>) kernel { gpu.return }
    gpu.func @b(%x: memref<4xf32>) kernel { gpu.return }
  }
  gpu.module @h_kernel {
    gpu.func @h_kernel(%x: memref<4xf32>) kernel { gpu.return }
    memref.global "private" constant @c : memref<4xf32> = dense<1.0>
  }
  func.func @f(%a: memref<4xf32>, %b: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<8xf32>)
    gpu.launch_func @g_kernel::@b blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @h_kernel::@h_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    return
  }
}

// -----

// One module: nothing to merge.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @k {
// CHECK-NOT: mesh_kernels
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%x: memref<4xf32>) kernel { gpu.return }
  }
}
