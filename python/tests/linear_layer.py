"""A linear layer with ReLU that the compiled-module tests share
(test_compiled.py for gpu-on-host, test_compiled_cuda.py for CUDA): its
source and the data that checks it.

@linear computes relu(a @ b + bias) for a 5x7 and b 7x3 of element type T
into f32: one GEMM call with the bias and ReLU in its epilogue
(mesh-gpu-linalg-to-cublas), meshrt_gpu_gemm_mixed / meshrt_gemm_epilogue_mixed
for f16 inputs. The source's braces are doubled for str.format.
"""
import numpy as np

_SOURCE = """
func.func @linear(%a: tensor<5x7xT>, %b: tensor<7x3xT>, %bias: tensor<3xf32>)
    -> tensor<5x3xf32> attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %d = linalg.matmul ins(%a, %b : tensor<5x7xT>, tensor<7x3xT>)
                     outs(%f : tensor<5x3xf32>) -> tensor<5x3xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%d, %bias : tensor<5x3xf32>, tensor<3xf32>)
      outs(%e : tensor<5x3xf32>) {{
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  }} -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}}
"""


def source(element_type):
    """@linear with inputs of `element_type` ("f16", "f32")."""
    return _SOURCE.replace("xT>", "x%s>" % element_type)


def mixed_data(test):
    """(a, b, bias, want) for f16 inputs: products of about 20 bits, so a
    result rounded to f16 is off by more than the 1e-6 the tests allow
    (asserted with `test`), and ReLU both clips and passes."""
    a = (1 + (np.arange(35).reshape(5, 7) * 7 % 13) / 1024).astype(np.float16)
    b = (-1 + (np.arange(21).reshape(7, 3) * 5 % 11) / 512).astype(np.float16)
    bias = np.array([7.5, -1.0, 6.25], np.float32)
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    test.assertGreater(np.abs(want.astype(np.float16) - want).max(), 1e-4)
    test.assertTrue((want == 0).any() and (want > 0).any())
    return a, b, bias, want
