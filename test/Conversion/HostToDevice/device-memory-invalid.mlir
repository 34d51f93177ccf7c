// RUN: mesh-opt %s --mesh-gpu-device-memory -verify-diagnostics -o /dev/null

// Without mesh-gpu-device-constants first, a kernel would read the host
// constant: an error, not a fault on the GPU.

module attributes {gpu.container_module} {
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  gpu.module @k {
    gpu.func @k(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @g() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'memref.get_global' op is used on the device by 'gpu.launch_func'; mesh-gpu-device-constants must give it a device copy first}}
    %c = memref.get_global @__constant_4xf32 : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%c : memref<4xf32>)
    return
  }
}
