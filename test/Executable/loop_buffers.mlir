// Loops whose iterations must not allocate (issue 28): run by
// loop_buffers_driver.cpp under mpirun -n 2, which counts the allocations of
// the process while each function runs 1 and 9 steps.
mesh.mesh @m(["x" = 2])

// One Jacobi step: pad, four neighbours, a source term. Rows over "x":
// partitioned, the pad becomes a halo exchange (mesh.permute).
func.func @step(%u: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>},
                %f: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>})
    -> (tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>}) {
  %zero = arith.constant 0.0 : f32
  %q = arith.constant 0.25 : f32
  %qe = tensor.empty() : tensor<16x8xf32>
  %quarter = linalg.fill ins(%q : f32) outs(%qe : tensor<16x8xf32>) -> tensor<16x8xf32>
  %p = tensor.pad %u low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<16x8xf32> to tensor<18x10xf32>
  %n = tensor.extract_slice %p[0, 1] [16, 8] [1, 1] : tensor<18x10xf32> to tensor<16x8xf32>
  %s = tensor.extract_slice %p[2, 1] [16, 8] [1, 1] : tensor<18x10xf32> to tensor<16x8xf32>
  %w = tensor.extract_slice %p[1, 0] [16, 8] [1, 1] : tensor<18x10xf32> to tensor<16x8xf32>
  %e = tensor.extract_slice %p[1, 2] [16, 8] [1, 1] : tensor<18x10xf32> to tensor<16x8xf32>
  %a1 = arith.addf %n, %s : tensor<16x8xf32>
  %a2 = arith.addf %w, %e : tensor<16x8xf32>
  %a3 = arith.addf %a1, %a2 : tensor<16x8xf32>
  %m = arith.mulf %a3, %quarter : tensor<16x8xf32>
  %next = arith.addf %m, %f : tensor<16x8xf32>
  return %next : tensor<16x8xf32>
}

// %steps Jacobi steps from %u0.
func.func @jacobi(%u0: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>},
                  %f: tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>},
                  %steps: index)
    -> (tensor<16x8xf32> {mesh.sharding = #mesh.sharding<@m, [["x"], []]>})
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %it = %c0 to %steps step %c1 iter_args(%u = %u0) -> (tensor<16x8xf32>) {
    %next = func.call @step(%u, %f) : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
    scf.yield %next : tensor<16x8xf32>
  }
  return %r : tensor<16x8xf32>
}

// %steps layers of x = min(relu(x w), 7), on every device. The product goes
// to the BLAS; its result is a temporary of each iteration, the clamped one
// is carried.
func.func @mlp(%x0: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>},
               %w: tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>},
               %steps: index)
    -> (tensor<8x8xf32> {mesh.sharding = #mesh.sharding<@m, [[], []]>})
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %seven = arith.constant 7.0 : f32
  %r = scf.for %it = %c0 to %steps step %c1 iter_args(%x = %x0) -> (tensor<8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
    %e2 = tensor.empty() : tensor<8x8xf32>
    %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%y : tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r0 = arith.maximumf %v, %zero : f32
      %r1 = arith.minimumf %r0, %seven : f32
      linalg.yield %r1 : f32
    } -> tensor<8x8xf32>
    scf.yield %c : tensor<8x8xf32>
  }
  return %r : tensor<8x8xf32>
}
