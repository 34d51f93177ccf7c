// RUN: mesh-opt %s --mesh-gpu-device-constants --mesh-gpu-device-memory --split-input-file -verify-diagnostics | FileCheck %s

// Buffers, copies and launches go on the runtime's shared stream; the one
// synchronisation is before the return.

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%x: memref<16xf32>, %y: memref<16xf32>) kernel {
      gpu.return
    }
  }

  // CHECK-LABEL: func.func @f
  // CHECK: %[[SLOT:.*]] = llvm.alloca
  // CHECK: %[[ST:.*]] = llvm.call @meshrt_gpu_stream(%[[SLOT]]) : (!llvm.ptr) -> i32
  // CHECK: cf.assert
  // CHECK: %[[S:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
  // CHECK: %[[T:.*]] = builtin.unrealized_conversion_cast %[[S]] : !llvm.ptr to !gpu.async.token
  // CHECK: %[[A:.*]], %{{.*}} = gpu.alloc async [%[[T]]] () : memref<16xf32>
  // CHECK: gpu.memcpy async [%[[T]]] %[[A]], %arg0
  // CHECK: gpu.launch_func async [%[[T]]] @k::@k
  // CHECK: %[[B:.*]], %{{.*}} = gpu.alloc async [%[[T]]] () : memref<16xf32>
  // CHECK: gpu.launch_func async [%[[T]]] @k::@k
  // CHECK: gpu.dealloc async [%[[T]]] %[[A]]
  // CHECK-NOT: meshrt_stream_synchronize
  // CHECK: %[[SYNC:.*]] = llvm.call @meshrt_stream_synchronize(%[[S]])
  // CHECK-NEXT: llvm.mlir.constant(0 : i32)
  // CHECK-NEXT: llvm.icmp "eq" %[[SYNC]]
  // CHECK-NEXT: cf.assert
  // CHECK-NEXT: return %[[B]]
  // CHECK-NOT: memref.alloc
  // CHECK-NOT: memref.copy
  // CHECK-NOT: memref.dealloc
  func.func @f(%x: memref<16xf32>) -> memref<16xf32> {
    %c1 = arith.constant 1 : index
    %a = memref.alloc() : memref<16xf32>
    memref.copy %x, %a : memref<16xf32> to memref<16xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<16xf32>, %a : memref<16xf32>)
    %b = memref.alloc() : memref<16xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<16xf32>, %b : memref<16xf32>)
    memref.dealloc %a : memref<16xf32>
    return %b : memref<16xf32>
  }

  // No device work: no stream, no synchronisation.
  // CHECK-LABEL: func.func @host_only
  // CHECK-NOT: llvm.call
  // CHECK: return
  func.func @host_only(%n: index) -> index {
    return %n : index
  }
}

// -----

// A constant's copy (mesh-gpu-device-constants) is allocated and filled on
// the device, on the stream; kernels get a descriptor of the device copy.

module attributes {gpu.container_module} {
  // CHECK: llvm.mlir.global internal @__mesh_device___constant_4xf32() {{.*}} : !llvm.ptr
  // CHECK: llvm.mlir.zero
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  gpu.module @k {
    gpu.func @k(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  // CHECK-LABEL: func.func @g
  // CHECK: %[[T:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr to !gpu.async.token
  // CHECK: %[[HOST:.*]] = memref.get_global @__constant_4xf32
  // CHECK: %[[ADDR:.*]] = llvm.mlir.addressof @__mesh_device___constant_4xf32
  // CHECK: %[[OLD:.*]] = llvm.load %[[ADDR]]
  // CHECK: %[[MISSING:.*]] = llvm.icmp "eq" %[[OLD]]
  // CHECK: scf.if %[[MISSING]] {
  // CHECK-NEXT: %[[DEV:.*]], %{{.*}} = gpu.alloc async [%[[T]]] () : memref<4xf32>
  // CHECK-NEXT: gpu.memcpy async [%[[T]]] %[[DEV]], %[[HOST]]
  // CHECK: llvm.store %{{.*}}, %[[ADDR]]
  // CHECK: %[[PTR:.*]] = llvm.load %[[ADDR]]
  // CHECK: llvm.insertvalue %[[PTR]]
  // CHECK: %[[DESC:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<4xf32>
  // CHECK: gpu.launch_func async [%[[T]]] @k::@k {{.*}} args(%[[DESC]] : memref<4xf32>)
  func.func @g() {
    %c1 = arith.constant 1 : index
    %c = memref.get_global @__constant_4xf32 : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%c : memref<4xf32>)
    return
  }
}

// -----

// A stream-ordered collective is device work: the function synchronises
// before it returns.

// CHECK-LABEL: func.func @collective_only
// CHECK: llvm.call @meshrt_all_reduce_on_stream
// CHECK: llvm.call @meshrt_stream_synchronize
// CHECK-NEXT: llvm.mlir.constant
// CHECK-NEXT: llvm.icmp
// CHECK-NEXT: cf.assert
// CHECK-NEXT: return
llvm.func @meshrt_all_reduce_on_stream(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32, !llvm.ptr) -> i32
func.func @collective_only(%c: !llvm.ptr, %s: !llvm.ptr, %r: !llvm.ptr, %n: i64, %d: i32, %st: !llvm.ptr) {
  %0 = llvm.call @meshrt_all_reduce_on_stream(%c, %s, %r, %n, %d, %d, %st) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i32, i32, !llvm.ptr) -> i32
  return
}

// -----

func.func @strided(%x: memref<4x4xf32>, %y: memref<4xf32>) {
  %s = memref.subview %x[0, 1] [4, 1] [1, 1] : memref<4x4xf32> to memref<4xf32, strided<[4], offset: 1>>
  // expected-error @+1 {{'memref.copy' op copies a strided buffer, which has no device lowering; only contiguous copies become gpu.memcpy}}
  memref.copy %s, %y : memref<4xf32, strided<[4], offset: 1>> to memref<4xf32>
  return
}

// -----

// A host read of a device buffer: the element is copied to a host slot on
// the stream, the host waits there, then reads the slot. The slot is made
// once, at entry, even when the read is in a loop.

// CHECK-LABEL: func.func @read
// CHECK: %[[S:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x i64 : (i64) -> !llvm.ptr
// CHECK: scf.for %[[I:[a-z0-9]+]] =
// CHECK:   %{{.*}}, %[[OFF:[a-z0-9_]+]], %{{[a-z0-9_]+}}:2, %[[STR:[a-z0-9_]+]]:2 = memref.extract_strided_metadata %arg0
// CHECK:   %[[M:.*]] = arith.muli %[[I]], %[[STR]]#0
// CHECK:   %[[L0:.*]] = arith.addi %[[OFF]], %[[M]]
// CHECK:   %[[M1:.*]] = arith.muli %{{.*}}, %[[STR]]#1
// CHECK:   %[[L:.*]] = arith.addi %[[L0]], %[[M1]]
// CHECK:   %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK:   %[[PI:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK:   %[[PP:.*]] = llvm.inttoptr %[[PI]]
// CHECK:   %[[LI:.*]] = arith.index_cast %[[L]] : index to i64
// CHECK:   %[[SRC:.*]] = llvm.getelementptr %[[PP]][%[[LI]]] : (!llvm.ptr, i64) -> !llvm.ptr, i64
// CHECK:   %[[N:.*]] = llvm.mlir.constant(8 : i64)
// CHECK:   llvm.call @mgpuMemcpy(%[[SLOT]], %[[SRC]], %[[N]], %[[S]])
// CHECK:   llvm.call @meshrt_stream_synchronize(%[[S]])
// CHECK:   cf.assert
// CHECK:   %[[V:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> i64
// CHECK:   arith.index_cast %[[V]] : i64 to index
// CHECK-NOT: memref.load
func.func @read(%x: memref<4x?xindex>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> index {
    %v = memref.load %x[%i, %c1] : memref<4x?xindex>
    %s = arith.addi %acc, %v : index
    scf.yield %s : index
  }
  return %r : index
}

// -----

func.func @read_vector(%x: memref<4xvector<2xf32>>) -> vector<2xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op reads a device buffer of 'vector<2xf32>' on the host, which has no device-to-host lowering}}
  %v = memref.load %x[%c0] : memref<4xvector<2xf32>>
  return %v : vector<2xf32>
}

// -----

// Host buffers (mesh-gpu-host-buffers) stay in host memory: allocated,
// read and freed on the host, no copy, no synchronisation for the read. A
// private function leaves the synchronisation to its caller; the caller,
// whose only device work is the call, still synchronises before returning.

// CHECK-LABEL: func.func @caller
// CHECK: llvm.call @meshrt_gpu_stream
// CHECK: %[[LIST:.*]] = memref.alloc() {mesh.host_buffer} : memref<2xindex>
// CHECK-NOT: mgpuMemcpy
// CHECK: memref.load %[[LIST]]
// CHECK: call @callee
// CHECK: memref.dealloc %[[LIST]]
// CHECK: llvm.call @meshrt_stream_synchronize
// CHECK: cf.assert
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @callee
// CHECK: gpu.alloc async
// CHECK-NOT: meshrt_stream_synchronize
// CHECK: return
func.func @caller(%p: index) -> index {
  %c0 = arith.constant 0 : index
  %list = memref.alloc() {mesh.host_buffer} : memref<2xindex>
  memref.store %p, %list[%c0] : memref<2xindex>
  %v = memref.load %list[%c0] : memref<2xindex>
  call @callee() : () -> ()
  memref.dealloc %list : memref<2xindex>
  return %v : index
}
func.func private @callee() {
  %b = memref.alloc() : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return
}

// -----

// The runtime's functions have the types meshrt.h declares.
// expected-error @+1 {{mesh-gpu-device-memory: 'meshrt_gpu_stream' is declared as '!llvm.func<i32 ()>', but meshrt.h declares it as '!llvm.func<i32 (ptr)>'}}
llvm.func @meshrt_gpu_stream() -> i32
func.func @f() {
  %0 = memref.alloc() : memref<4xf32>
  memref.dealloc %0 : memref<4xf32>
  return
}
