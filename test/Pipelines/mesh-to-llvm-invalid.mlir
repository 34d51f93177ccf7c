// RUN: mesh-opt %s --mesh-to-llvm -split-input-file -verify-diagnostics
// RUN: mesh-opt %s --mesh-to-nvvm -split-input-file -verify-diagnostics

// Inputs the compile pipelines refuse, each with a message of ours that
// names the user's op, never an internal one of a pass further down.

// The pipelines free buffers themselves; a program that frees one would
// otherwise stop in buffer deallocation with "memory free side-effect on
// MemRef value not supported!".
func.func @frees(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %b = memref.alloc() : memref<8xf32>
  memref.copy %a, %b : memref<8xf32> to memref<8xf32>
  %v = memref.load %b[%c0] : memref<8xf32>
  // expected-error @+1 {{'memref.dealloc' op in the input: the compile pipeline frees every buffer itself}}
  memref.dealloc %b : memref<8xf32>
  return %v : f32
}

// -----

// A sharding that does not divide its dim is padded, but a reduction over
// the padded dim whose body is not a plain combination of its input (here
// the sum of exp(x): exp of the padding would add to it) cannot mask the
// padding: the user's op is named, before any collective is made.
mesh.mesh @m(["x" = 4])
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
// expected-remark @+1 {{argument 0 of @result: dim 0 of size 6 does not divide by the 4 devices of axes #mesh<axes["x"]>: padded to 8}}
func.func @result(%a: tensor<6xf32> {mesh.sharding = #mesh.sharding<@m, [["x"]]>}) -> tensor<f32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{cannot pad the reduction of this op over a dim that its sharding splits unevenly}}
  %s = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]}
      ins(%a : tensor<6xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %ex = math.exp %x : f32
    %t = arith.addf %ex, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}
