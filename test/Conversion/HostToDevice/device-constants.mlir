// RUN: mesh-opt %s --mesh-gpu-device-constants --split-input-file -verify-diagnostics | FileCheck %s

// Each constant used by host code gets one copy, made the first time a
// function runs and kept in a pointer global that every function shares;
// each use then reads a descriptor of that copy. The copy is a plain
// allocation and copy: mesh-gpu-device-memory puts it on the device, and
// host kernels (--mesh-to-nvvm{host-kernels}) use it where it is.

// CHECK: llvm.mlir.global internal @__mesh_device___constant_4xf32() {{.*}} : !llvm.ptr
// CHECK-NEXT: llvm.mlir.zero
// CHECK-NEXT: llvm.return
// CHECK-NOT: llvm.mlir.global
memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// CHECK-LABEL: func.func @f
// CHECK: %[[HOST:.*]] = memref.get_global @__constant_4xf32
// CHECK: %[[ADDR:.*]] = llvm.mlir.addressof @__mesh_device___constant_4xf32
// CHECK: %[[OLD:.*]] = llvm.load %[[ADDR]]
// CHECK: %[[NULL:.*]] = llvm.mlir.zero
// CHECK: %[[MISSING:.*]] = llvm.icmp "eq" %[[OLD]], %[[NULL]]
// CHECK: scf.if %[[MISSING]] {
// CHECK-NEXT: %[[COPY:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: memref.copy %[[HOST]], %[[COPY]]
// CHECK-NEXT: %[[INT:.*]] = memref.extract_aligned_pointer_as_index %[[COPY]]
// CHECK-NEXT: %[[I64:.*]] = arith.index_cast %[[INT]]
// CHECK-NEXT: %[[P:.*]] = llvm.inttoptr %[[I64]]
// CHECK-NEXT: llvm.store %[[P]], %[[ADDR]]
// CHECK-NEXT: }
// CHECK: %[[PTR:.*]] = llvm.load %[[ADDR]]
// CHECK: %[[D0:.*]] = llvm.insertvalue %[[PTR]], %{{.*}}[0]
// CHECK: %[[D1:.*]] = llvm.insertvalue %[[PTR]], %[[D0]][1]
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : index) : i64
// CHECK: %[[D2:.*]] = llvm.insertvalue %[[ZERO]], %[[D1]][2]
// CHECK: %[[FOUR:.*]] = llvm.mlir.constant(4 : index) : i64
// CHECK: %[[D3:.*]] = llvm.insertvalue %[[FOUR]], %[[D2]][3, 0]
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK: %[[D4:.*]] = llvm.insertvalue %[[ONE]], %[[D3]][4, 0]
// CHECK: %[[DESC:.*]] = builtin.unrealized_conversion_cast %[[D4]] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<4xf32>
// CHECK: linalg.add ins(%{{.*}}, %[[DESC]] : {{.*}}) outs(%{{.*}} :
func.func @f(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c = memref.get_global @__constant_4xf32 : memref<4xf32>
  linalg.add ins(%x, %c : memref<4xf32>, memref<4xf32>) outs(%y : memref<4xf32>)
  return
}

// A second function shares the pointer global (one copy per program).
// CHECK-LABEL: func.func @g
// CHECK: llvm.mlir.addressof @__mesh_device___constant_4xf32
// CHECK: memref.alloc() : memref<4xf32>
func.func @g(%y: memref<4xf32>) {
  %c = memref.get_global @__constant_4xf32 : memref<4xf32>
  memref.copy %c, %y : memref<4xf32> to memref<4xf32>
  return
}

// Inside a kernel that is not outlined yet, the op is the kernel's own.
// CHECK-LABEL: func.func @in_kernel
// CHECK: gpu.launch
// CHECK-NEXT: memref.get_global @__constant_4xf32
// CHECK-NEXT: gpu.terminator
func.func @in_kernel() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c = memref.get_global @__constant_4xf32 : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

memref.global "private" @state : memref<4xf32> = dense<0.0>

func.func @mutable(%y: memref<4xf32>) {
  // expected-error @+1 {{'memref.get_global' op refers to a mutable host global, which kernels cannot use}}
  %c = memref.get_global @state : memref<4xf32>
  memref.copy %c, %y : memref<4xf32> to memref<4xf32>
  return
}
