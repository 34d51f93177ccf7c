// The compiled half of bench/gpu: a chain of eight all_reduces over the
// whole world (a mesh of any size), a matmul followed by an elementwise
// bias + ReLU, and a memory-bound elementwise chain. Compiled with
// `mesh-compile --target=cuda -c`; GpuBench.cpp times them against the same
// work written directly against NCCL, cuBLASLt and cudaMemcpy.
mesh.mesh @world(["x" = ?])

func.func @chain8(%x: tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface} {
  %0 = mesh.all_reduce %x on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %1 = mesh.all_reduce %0 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %2 = mesh.all_reduce %1 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %3 = mesh.all_reduce %2 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %4 = mesh.all_reduce %3 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %5 = mesh.all_reduce %4 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %6 = mesh.all_reduce %5 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  %7 = mesh.all_reduce %6 on @world axes = ["x"] reduction = sum : tensor<?xf32> -> tensor<?xf32>
  return %7 : tensor<?xf32>
}

func.func @matmul_bias_relu(%a: tensor<2048x2048xf32>, %b: tensor<2048x2048xf32>,
                            %bias: tensor<2048xf32>) -> tensor<2048x2048xf32>
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x2048xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<2048x2048xf32>, tensor<2048x2048xf32>)
                      outs(%z : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<2048x2048xf32>, tensor<2048xf32>) outs(%e : tensor<2048x2048xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2048x2048xf32>
  return %r : tensor<2048x2048xf32>
}

// A memory-bound elementwise chain (bench/compute's ew_chain): eight
// operations per element, 8 bytes read and 4 written. GpuBench.cpp's "copy"
// part sets its rate beside a device-to-device copy of the same elements.
func.func @ew_chain(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32>
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x, %y : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t0 = arith.mulf %a, %b : f32
    %t1 = arith.addf %t0, %a : f32
    %t2 = arith.subf %t1, %b : f32
    %t3 = arith.mulf %t2, %half : f32
    %t4 = arith.addf %t3, %one : f32
    %t5 = arith.maximumf %t4, %zero : f32
    %t6 = arith.mulf %t5, %a : f32
    %t7 = arith.addf %t6, %b : f32
    linalg.yield %t7 : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
