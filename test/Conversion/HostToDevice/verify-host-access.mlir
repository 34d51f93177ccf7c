// RUN: mesh-opt %s --mesh-gpu-verify-host-access --split-input-file -verify-diagnostics

// Each pitfall of a GPU lowering is an error naming the op.

func.func @host_load(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op reads a device buffer on the host}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

func.func @host_loop(%x: memref<4xf32>, %f: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{'memref.store' op writes a device buffer on the host}}
    memref.store %f, %x[%i] : memref<4xf32>
  }
  return
}

// -----

func.func @host_copy(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'memref.copy' op reads a device buffer on the host}}
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return
}

// -----

func.func @host_alloc() -> memref<4xf32> {
  // expected-error @+1 {{'memref.alloc' op allocates a buffer in host memory (the device stage allocates with gpu.alloc)}}
  %0 = memref.alloc() : memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

func.func @host_free(%x: memref<4xf32>) {
  // expected-error @+1 {{'memref.dealloc' op frees a buffer with the host allocator (the device stage frees with gpu.dealloc)}}
  memref.dealloc %x : memref<4xf32>
  return
}

// -----

func.func @host_linalg(%x: memref<4xf32>, %f: f32) {
  // expected-error @+1 {{'linalg.fill' op writes a device buffer on the host}}
  linalg.fill ins(%f : f32) outs(%x : memref<4xf32>)
  return
}

// -----

// GPU ops, kernels, and taking an address are how the host may touch
// device memory: no error.

module attributes {gpu.container_module} {
gpu.module @k {
  gpu.func @k(%x: memref<4xf32>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    memref.store %v, %x[%c0] : memref<4xf32>
    gpu.return
  }
}

func.func @device_ok(%x: memref<4xf32>, %t: !gpu.async.token) -> index {
  %c1 = arith.constant 1 : index
  %m, %t1 = gpu.alloc async [%t] () : memref<4xf32>
  %t2 = gpu.memcpy async [%t] %m, %x : memref<4xf32>, memref<4xf32>
  %t3 = gpu.launch_func async [%t] @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    memref.store %v, %m[%c0] : memref<4xf32>
    gpu.terminator
  }
  %t4 = gpu.dealloc async [%t] %m : memref<4xf32>
  %p = memref.extract_aligned_pointer_as_index %x : memref<4xf32> -> index
  return %p : index
}
}
