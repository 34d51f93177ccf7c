// RUN: mesh-opt %s --convert-mesh-to-runtime -split-input-file -verify-diagnostics

mesh.mesh @m(["x" = 8])
func.func @tensor_form(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mesh.all_reduce' op works on tensors; bufferize the program (one-shot-bufferize) before convert-mesh-to-runtime}}
  %0 = mesh.all_reduce %x on @m axes = ["x"] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

mesh.mesh @m(["x" = 8])
func.func @unpartitioned(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mesh.shard' op must be partitioned away (mesh-partition) before convert-mesh-to-runtime}}
  %0 = mesh.shard %x : tensor<8xf32> to #mesh.sharding<@m, [["x"]]>
  return %0 : tensor<8xf32>
}

// -----

mesh.mesh @m(["x" = 8])
func.func @dtype(%x: memref<8xi16>) -> memref<8xi16> {
  // expected-error @+1 {{'mesh.all_reduce' op has element type 'i16', which the runtime does not support; supported: f16, bf16, f32, f64, i8, ui8, i32, i64, index}}
  %0 = mesh.all_reduce %x on @m axes = ["x"] reduction = sum : memref<8xi16> -> memref<8xi16>
  return %0 : memref<8xi16>
}

// -----

// expected-error @+1 {{convert-mesh-to-runtime: the module already has a symbol named 'mesh_module_init'}}
module {
  mesh.mesh @m(["x" = 8])
  func.func private @mesh_module_init()
  func.func @f() {
    mesh.barrier on @m axes = ["x"]
    return
  }
}
