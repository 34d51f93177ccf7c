// RUN: mesh-opt %s --mesh-gpu-device-constants --split-input-file | FileCheck %s --check-prefixes=CHECK,DEVICE
// RUN: mesh-opt %s --mesh-gpu-device-constants=host-memory=true --split-input-file | FileCheck %s --check-prefixes=CHECK,HOST
// RUN: mesh-opt %s --mesh-gpu-device-constants=fini-symbol=my_fini --split-input-file | FileCheck %s --check-prefix=RENAMED

// The module's shut-down frees each copy before it finalizes the runtime,
// and clears its pointer, so that a start-up after it copies again: on the
// device with mgpuMemFree (on the shared stream, null), in host memory
// (host kernels) with free. Both take a null pointer (a constant no call
// used yet).

// DEVICE: llvm.func @mgpuMemFree(!llvm.ptr, !llvm.ptr)
// HOST: llvm.func @free(!llvm.ptr)
// CHECK-LABEL: llvm.func @mesh_module_fini()
// CHECK-NEXT: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[A:.*]] = llvm.mlir.addressof @__mesh_device___constant_4xf32
// CHECK-NEXT: %[[PA:.*]] = llvm.load %[[A]] : !llvm.ptr -> !llvm.ptr
// DEVICE-NEXT: llvm.call @mgpuMemFree(%[[PA]], %[[NULL]])
// HOST-NEXT: llvm.call @free(%[[PA]])
// CHECK-NEXT: llvm.store %[[NULL]], %[[A]]
// CHECK-NEXT: %[[B:.*]] = llvm.mlir.addressof @__mesh_device___constant_2xi32
// CHECK-NEXT: %[[PB:.*]] = llvm.load %[[B]] : !llvm.ptr -> !llvm.ptr
// DEVICE-NEXT: llvm.call @mgpuMemFree(%[[PB]], %[[NULL]])
// HOST-NEXT: llvm.call @free(%[[PB]])
// CHECK-NEXT: llvm.store %[[NULL]], %[[B]]
// CHECK-NEXT: llvm.call @meshrt_finalize()
// CHECK-NOT: mgpuMemFree
// With another name for the shut-down, this one is left alone.
// RENAMED-LABEL: llvm.func @mesh_module_fini()
// RENAMED-NEXT: llvm.call @meshrt_finalize()
memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" constant @__constant_2xi32 : memref<2xi32> = dense<[1, 2]>
llvm.func @meshrt_finalize()
llvm.func @mesh_module_fini() {
  llvm.call @meshrt_finalize() : () -> ()
  llvm.return
}
func.func @f(%y: memref<4xf32>, %z: memref<2xi32>) {
  %c = memref.get_global @__constant_4xf32 : memref<4xf32>
  memref.copy %c, %y : memref<4xf32> to memref<4xf32>
  %d = memref.get_global @__constant_2xi32 : memref<2xi32>
  memref.copy %d, %z : memref<2xi32> to memref<2xi32>
  %e = memref.get_global @__constant_4xf32 : memref<4xf32>
  memref.copy %e, %y : memref<4xf32> to memref<4xf32>
  return
}

// -----

// No shut-down (a module without meshes): nothing frees the copies, which
// live as long as the process.
// CHECK-LABEL: func.func @no_fini
// CHECK-NOT: mgpuMemFree
// CHECK-NOT: llvm.call @free
memref.global "private" constant @__constant_1xf32 : memref<1xf32> = dense<[1.0]>
func.func @no_fini(%y: memref<1xf32>) {
  %c = memref.get_global @__constant_1xf32 : memref<1xf32>
  memref.copy %c, %y : memref<1xf32> to memref<1xf32>
  return
}
