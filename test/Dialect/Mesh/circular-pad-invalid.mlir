// RUN: mesh-opt %s --split-input-file --verify-diagnostics

// mesh.circular_pad's constraints (W1-W3), each with its message.

func.func @widths_per_dim(%a: tensor<8x8xf32>) -> tensor<10x8xf32> {
  // expected-error @+1 {{'mesh.circular_pad' op has 1 low and 1 high widths for a tensor of rank 2 (W1)}}
  %p = mesh.circular_pad %a low = [1] high = [1] : tensor<8x8xf32> -> tensor<10x8xf32>
  return %p : tensor<10x8xf32>
}

// -----

func.func @negative(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mesh.circular_pad' op dim 0 has a negative width [-1, 1] (W1)}}
  %p = mesh.circular_pad %a low = [-1] high = [1] : tensor<8xf32> -> tensor<8xf32>
  return %p : tensor<8xf32>
}

// -----

func.func @wider_than_dim(%a: tensor<4xf32>) -> tensor<9xf32> {
  // expected-error @+1 {{'mesh.circular_pad' op dim 0 of size 4 cannot wrap widths [5, 0]: a padded dim is static and at least as long as its widths (W2)}}
  %p = mesh.circular_pad %a low = [5] high = [0] : tensor<4xf32> -> tensor<9xf32>
  return %p : tensor<9xf32>
}

// -----

func.func @dynamic_padded(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'mesh.circular_pad' op dim 0 of size ? cannot wrap widths [1, 1]: a padded dim is static and at least as long as its widths (W2)}}
  %p = mesh.circular_pad %a low = [1] high = [1] : tensor<?xf32> -> tensor<?xf32>
  return %p : tensor<?xf32>
}

// -----

func.func @wrong_size(%a: tensor<8x?xf32>) -> tensor<9x?xf32> {
  // expected-error @+1 {{'mesh.circular_pad' op result 'tensor<9x?xf32>' has dim 0 of size 9, expected 10 (W3)}}
  %p = mesh.circular_pad %a low = [1, 0] high = [1, 0] : tensor<8x?xf32> -> tensor<9x?xf32>
  return %p : tensor<9x?xf32>
}

// -----

func.func @element_type(%a: tensor<8xf32>) -> tensor<10xi32> {
  // expected-error @+1 {{'mesh.circular_pad' op result 'tensor<10xi32>' is not the source's rank and element type 'tensor<8xf32>' (W3)}}
  %p = mesh.circular_pad %a low = [1] high = [1] : tensor<8xf32> -> tensor<10xi32>
  return %p : tensor<10xi32>
}
