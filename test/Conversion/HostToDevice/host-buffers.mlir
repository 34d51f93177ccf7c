// RUN: mesh-opt %s --mesh-gpu-host-buffers --split-input-file | FileCheck %s

// Buffer deallocation's pointer lists: filled and read by host code and
// passed to a private helper that only compares what they hold. They and
// the helper's parameters stay on the host; the buffer a kernel fills does
// not.

// CHECK-LABEL: func.func @lists
// CHECK: memref.alloc() {mesh.host_buffer} : memref<2xindex>
// CHECK: memref.alloc() {mesh.host_buffer} : memref<2xi1>
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: func.func private @helper(%{{.*}}: memref<?xindex> {mesh.host_buffer}, %{{.*}}: memref<?xi1> {mesh.host_buffer})
func.func @lists(%a: memref<8xf32>, %b: memref<8xf32>) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ptrs = memref.alloc() : memref<2xindex>
  %flags = memref.alloc() : memref<2xi1>
  %data = memref.alloc() : memref<8xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%data : memref<8xf32>)
  %pa = memref.extract_aligned_pointer_as_index %a : memref<8xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<8xf32> -> index
  memref.store %pa, %ptrs[%c0] : memref<2xindex>
  memref.store %pb, %ptrs[%c1] : memref<2xindex>
  %p = memref.cast %ptrs : memref<2xindex> to memref<?xindex>
  %f = memref.cast %flags : memref<2xi1> to memref<?xi1>
  call @helper(%p, %f) : (memref<?xindex>, memref<?xi1>) -> ()
  %r = memref.load %flags[%c0] : memref<2xi1>
  memref.dealloc %ptrs : memref<2xindex>
  memref.dealloc %flags : memref<2xi1>
  memref.dealloc %data : memref<8xf32>
  return %r : i1
}
func.func private @helper(%p: memref<?xindex>, %f: memref<?xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %x = memref.load %p[%i] : memref<?xindex>
    %y = memref.load %p[%c0] : memref<?xindex>
    %same = arith.cmpi eq, %x, %y : index
    memref.store %same, %f[%i] : memref<?xi1>
  }
  return
}

// -----

// A buffer whose address is taken (a runtime call, a kernel argument), one
// returned, and one a linalg op reads all move to the device.

// CHECK-LABEL: func.func @device
// CHECK-NOT: mesh.host_buffer
// CHECK: return
func.func @device(%x: memref<4xf32>) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  %b = memref.alloc() : memref<4xf32>
  linalg.copy ins(%b : memref<4xf32>) outs(%x : memref<4xf32>)
  %c = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return %c : memref<4xf32>
}

// -----

// A loop that would become a one-thread kernel because it also touches a
// device buffer: the buffer it reads moves to the device with it.

// CHECK-LABEL: func.func @mixed
// CHECK-NOT: mesh.host_buffer
// CHECK: return
func.func @mixed(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %scale = memref.alloc() : memref<1xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %s = memref.load %scale[%c0] : memref<1xf32>
    %v = memref.load %x[%i] : memref<4xf32>
    %w = arith.mulf %s, %v : f32
    memref.store %w, %x[%i] : memref<4xf32>
  }
  memref.dealloc %scale : memref<1xf32>
  return
}

// -----

// A private function also called with a device buffer: its parameter, and
// the host list passed to it elsewhere, move to the device.

// CHECK-LABEL: func.func @callers
// CHECK-NOT: mesh.host_buffer
// CHECK: func.func private @first(%{{.*}}: memref<2xf32>) -> f32
func.func @callers(%x: memref<2xf32>) -> f32 {
  %list = memref.alloc() : memref<2xf32>
  %a = call @first(%list) : (memref<2xf32>) -> f32
  %b = call @first(%x) : (memref<2xf32>) -> f32
  memref.dealloc %list : memref<2xf32>
  %s = arith.addf %a, %b : f32
  return %s : f32
}
func.func private @first(%l: memref<2xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %l[%c0] : memref<2xf32>
  return %v : f32
}
