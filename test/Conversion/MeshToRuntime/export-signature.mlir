// RUN: mesh-opt %s --split-input-file --mesh-export-signature --verify-diagnostics | FileCheck %s
// RUN: mesh-opt %s --mesh-export-signature="symbol=sig init-symbol=start fini-symbol=stop device-buffers=true" | FileCheck %s --check-prefix=OPTS
// RUN: mesh-opt %S/../../../examples/scenarios/05_tp_mlp/tp_mlp.mlir --mesh-to-llvm=signature-symbol=sig | FileCheck %s --check-prefix=PIPELINE

// Exported functions (public, with a C interface) and their per-device
// types: tensors and memrefs with their shapes (-1 dynamic), scalars with
// a null shape; private functions and functions without a C interface are
// not listed.
// CHECK: llvm.mlir.global external constant @mesh_module_signature("{\22fini\22:\22mesh_module_fini\22,\22functions\22:[
// CHECK-SAME: {\22args\22:[{\22dtype\22:\22f32\22,\22shape\22:[4,8]},{\22dtype\22:\22index\22,\22shape\22:null},{\22dtype\22:\22i32\22,\22shape\22:[-1,2]},{\22dtype\22:\22bf16\22,\22shape\22:[3]}],\22name\22:\22f\22,\22results\22:[{\22dtype\22:\22f64\22,\22shape\22:[]},{\22dtype\22:\22i1\22,\22shape\22:null}]},
// CHECK-SAME: {\22name\22:\22g\22,\22unsupported\22:\22argument 0 is a memref with a non-identity layout\22}
// CHECK-SAME: ],\22init\22:\22mesh_module_init\22,\22memory\22:\22host\22,\22version\22:1}\00")
// CHECK-NOT: \22name\22:\22hidden\22
// CHECK-NOT: \22name\22:\22plain\22

// OPTS: llvm.mlir.global external constant @sig("{\22fini\22:\22stop\22,
// OPTS-SAME: \22init\22:\22start\22,\22memory\22:\22device\22,

// The pipeline records the shapes after partitioning: one device's.
// PIPELINE: llvm.mlir.global external constant @sig(
// PIPELINE-SAME: \22name\22:\22tp_mlp\22,\22results\22:[{\22dtype\22:\22f32\22,\22shape\22:[4,8]}]

func.func @f(%a: tensor<4x8xf32>, %n: index, %b: memref<?x2xi32>,
             %c: tensor<3xbf16>) -> (tensor<f64>, i1)
    attributes {llvm.emit_c_interface} {
  %z = arith.constant dense<0.0> : tensor<f64>
  %t = arith.constant true
  return %z, %t : tensor<f64>, i1
}
func.func @g(%a: memref<4xf32, strided<[2]>>) attributes {llvm.emit_c_interface} {
  return
}
func.func private @hidden(%a: tensor<4xf32>) attributes {llvm.emit_c_interface} {
  return
}
func.func @plain(%a: tensor<4xf32>) {
  return
}

// -----

// A symbol of the global's name already in the module is an error.
// expected-error @below {{mesh-export-signature: the module already has a symbol 'mesh_module_signature'}}
func.func @mesh_module_signature() {
  return
}
