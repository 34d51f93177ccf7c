"""mesh.runtime with GPU modules (mesh-compile --target=cuda --shared) on N
ranks: arguments from numpy (copied to the device for the call) or from
device memory (our DeviceArray, __cuda_array_interface__ with a producer
stream, a CUDA DLPack tensor), results as DeviceArrays that free
themselves, and mesh.distributed's collectives on those device buffers.

Under the emulated CUDA driver, cudart and NCCL (runtime/test/emulated,
MESH_TEST_EMULATED=1) device memory is unreadable from the host, NCCL's
collectives are computed over MPI, and kernels do not run: values are
checked for the functions that launch none. With MESH_TEST_NO_GPU=1 (no
driver to load: MESHRT_CUDA_DRIVER_LIBRARY names a missing one) only the
refusal to load is checked.

    mpirun -n 2 python3 test_compiled_cuda.py
"""

import ctypes
import gc
import os
import tempfile
import unittest

import numpy as np

import mesh.compiler
import mesh.distributed as dist
import mesh.runtime

import linear_layer

WORLD = int(os.environ.get("OMPI_COMM_WORLD_SIZE",
                           os.environ.get("WORLD_SIZE", "1")))
RANK = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
EMULATED = os.environ.get("MESH_TEST_EMULATED") == "1"
NO_GPU = os.environ.get("MESH_TEST_NO_GPU") == "1"
PART = 4  # Elements of the gathered vector on each device.

# gather: an all_gather and nothing else (no kernel); same: its argument;
# ones: a constant; scale: an elementwise kernel; two: two results on one
# argument; linear (linear_layer.py): f16 inputs into f32 with a bias and
# ReLU, one cuBLASLt product with its epilogue (no kernel: it computes
# under the emulation too).
SOURCE = ("""
mesh.mesh @m(["x" = {world}])
func.func @gather(%a: tensor<{n}xf32> {{mesh.sharding = #mesh.sharding<@m, [["x"]]>}})
    -> (tensor<{n}xf32> {{mesh.sharding = #mesh.sharding<@m, [[]]>}})
    attributes {{llvm.emit_c_interface}} {{
  return %a : tensor<{n}xf32>
}}
func.func @same(%a: tensor<{part}xf32>) -> tensor<{part}xf32>
    attributes {{llvm.emit_c_interface}} {{
  return %a : tensor<{part}xf32>
}}
func.func @ones() -> tensor<2x3xf64> attributes {{llvm.emit_c_interface}} {{
  %c = arith.constant dense<1.0> : tensor<2x3xf64>
  return %c : tensor<2x3xf64>
}}
func.func @scale(%a: tensor<{part}xf32>, %s: f32) -> tensor<{part}xf32>
    attributes {{llvm.emit_c_interface}} {{
  %e = tensor.empty() : tensor<{part}xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}}
      ins(%a : tensor<{part}xf32>) outs(%e : tensor<{part}xf32>) {{
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %s : f32
    linalg.yield %m : f32
  }} -> tensor<{part}xf32>
  return %y : tensor<{part}xf32>
}}
func.func @two(%a: tensor<{part}xf32>) -> (tensor<{part}xf32>, tensor<{part}xf32>)
    attributes {{llvm.emit_c_interface}} {{
  return %a, %a : tensor<{part}xf32>, tensor<{part}xf32>
}}
""" + linear_layer.source("f16")).format(
    world=WORLD, n=PART * WORLD, part=PART)


def _compile(directory):
    return mesh.compiler.compile_string(
        SOURCE, target="cuda", output=os.path.join(directory, "gpu.so"))


class Interface:
    """Device memory seen only through __cuda_array_interface__, with the
    producer's stream."""

    def __init__(self, array, stream):
        cai = dict(array.__cuda_array_interface__)
        cai["stream"] = stream
        self.__cuda_array_interface__ = cai
        self.keep = array


class DLPack:
    """Device memory as a CUDA DLPack producer: records the stream the
    consumer asked it to order its work before."""

    class _Tensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16),
                    ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.c_void_p),
                    ("byte_offset", ctypes.c_uint64),
                    ("manager_ctx", ctypes.c_void_p),
                    ("deleter", ctypes.c_void_p)]

    def __init__(self, array, code=2, bits=32):
        self.keep = array
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.tensor = self._Tensor(array.ptr, 2, 0, array.ndim, code, bits, 1,
                                   self.shape, None, 0, None, None)
        self.asked = []

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0.

    def __dlpack__(self, stream=None):
        self.asked.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)


@unittest.skipUnless(NO_GPU, "MESH_TEST_NO_GPU=1: a process without a GPU")
class NoGpu(unittest.TestCase):
    def test_load_refuses_before_start_up(self):
        with tempfile.TemporaryDirectory() as d:
            lib = _compile(d)
            with self.assertRaisesRegex(
                    ImportError, r"built for the GPU \(--target=cuda\), and "
                    r"this process has none: meshrt_gpu_device_count: "
                    r"cannot load the CUDA driver"):
                mesh.runtime.load(lib)


@unittest.skipIf(NO_GPU, "MESH_TEST_NO_GPU=1")
class GpuModule(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.mod = mesh.runtime.load(_compile(cls.dir.name))

    @classmethod
    def tearDownClass(cls):
        cls.mod.close()
        cls.dir.cleanup()

    def part(self):
        return np.arange(PART, dtype=np.float32) + PART * RANK

    def whole(self):
        return np.arange(PART * WORLD, dtype=np.float32)

    def test_signature_is_the_devices(self):
        self.assertTrue(self.mod.device)
        self.assertIsNotNone(self.mod.stream)
        self.assertEqual(repr(self.mod.gather), f"<compiled gather(f32({PART},"
                         f")) -> (f32({PART * WORLD},))>")

    def test_numpy_in_device_array_out(self):
        y = self.mod.gather(self.part())
        self.assertIsInstance(y, mesh.runtime.DeviceArray)
        self.assertEqual((y.shape, y.dtype, y.ndim, y.size, y.nbytes),
                         ((PART * WORLD,), np.float32, 1, PART * WORLD,
                          4 * PART * WORLD))
        cai = y.__cuda_array_interface__
        self.assertEqual(cai["version"], 3)
        self.assertEqual(cai["typestr"], "<f4")
        self.assertEqual(cai["shape"], (PART * WORLD,))
        self.assertEqual(cai["data"], (y.ptr, False))
        self.assertIsNone(cai["strides"])
        self.assertEqual(cai["stream"], self.mod.stream)
        np.testing.assert_array_equal(y.numpy(), self.whole())

    def test_device_arguments(self):
        x = self.mod.same(self.part())  # A device copy of the host part.
        np.testing.assert_array_equal(x.numpy(), self.part())
        np.testing.assert_array_equal(self.mod.gather(x).numpy(),
                                      self.whole())
        # Another producer's stream: the shared stream waits for it.
        for stream in (1, 2, self.mod.stream):
            y = self.mod.gather(Interface(x, stream))
            np.testing.assert_array_equal(y.numpy(), self.whole())
        t = DLPack(x)
        np.testing.assert_array_equal(self.mod.gather(t).numpy(),
                                      self.whole())
        self.assertEqual(t.asked, [self.mod.stream])

    def test_result_that_is_an_argument_is_a_copy(self):
        x = self.mod.same(self.part())
        y = self.mod.same(x)
        self.assertNotEqual(y.ptr, x.ptr)
        del x
        gc.collect()
        np.testing.assert_array_equal(y.numpy(), self.part())
        a, b = self.mod.two(y)
        self.assertNotIn(y.ptr, (a.ptr, b.ptr))
        np.testing.assert_array_equal(a.numpy(), self.part())
        np.testing.assert_array_equal(b.numpy(), self.part())
        # From host data: results on the call's device copy (or copies the
        # compiled code made of it) outlive the call and each other.
        a, b = self.mod.two(self.part())
        gc.collect()
        np.testing.assert_array_equal(a.numpy(), self.part())
        del a
        gc.collect()
        np.testing.assert_array_equal(b.numpy(), self.part())

    def test_constant_and_freeing(self):
        one = self.mod.ones()
        np.testing.assert_array_equal(one.numpy(), np.ones((2, 3)))
        other = self.mod.ones()
        self.assertNotEqual(one.ptr, other.ptr)
        # A freed result's buffer serves the next one of its size (the
        # runtime keeps it for reuse): so it was freed.
        freed = one.ptr
        del one
        gc.collect()
        again = self.mod.ones()
        self.assertEqual(again.ptr, freed)
        np.testing.assert_array_equal(again.numpy(), np.ones((2, 3)))

    def test_kernel(self):
        y = self.mod.scale(self.part(), 3.0)
        self.assertEqual(y.shape, (PART,))
        if not EMULATED:
            np.testing.assert_array_equal(y.numpy(), 3 * self.part())

    def test_mixed_precision_linear(self):
        # f16 inputs, f32 accumulation, bias and ReLU in cuBLASLt's
        # epilogue; the sums match numpy's f32 to rounding.
        a, b, bias, want = linear_layer.mixed_data(self)
        y = self.mod.linear(a, b, bias)
        self.assertEqual((y.shape, y.dtype), ((5, 3), np.float32))
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)

    def test_argument_errors(self):
        x = self.mod.same(self.part())
        with self.assertRaisesRegex(TypeError, "gather: argument 0 has dtype "
                                    "float64; the function takes float32"):
            self.mod.gather(np.zeros(PART))
        with self.assertRaisesRegex(ValueError, r"gather: argument 0 has "
                                    r"shape \(5,\); this device's part is "
                                    r"\(4,\)"):
            self.mod.gather(np.zeros(5, np.float32))
        longer = dict(x.__cuda_array_interface__, shape=(PART + 1,))
        with self.assertRaisesRegex(ValueError, r"has shape \(5,\); this "
                                    r"device's part is \(4,\)"):
            self.mod.gather(type("Longer", (), {
                "__cuda_array_interface__": longer})())
        with self.assertRaisesRegex(TypeError, r"a DLPack dtype \(code 4, "
                                    r"16 bits\); the function takes float32"):
            self.mod.gather(DLPack(x, code=4, bits=16))
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            cai = dict(x.__cuda_array_interface__, shape=(2,), strides=(8,))
            self.mod.same(type("Strided", (), {
                "__cuda_array_interface__": cai})())
        with self.assertRaisesRegex(TypeError, "is a f32 scalar"):
            self.mod.scale(x, x)

    def test_collectives_on_device_arrays(self):
        m = dist.init_device_mesh("cuda", (WORLD,), mesh_dim_names=("x",))
        if EMULATED:
            self.assertEqual(dist.get_backend(m.get_group("x")), "nccl")
        x = self.mod.same(self.part())
        m.get_group("x").all_reduce(x)
        np.testing.assert_array_equal(
            x.numpy(), sum(np.arange(PART, dtype=np.float32) + PART * r
                           for r in range(WORLD)))
        # A DLPack producer is asked to order its work before the legacy
        # default stream, where the collective then runs; a producer
        # stream from __cuda_array_interface__ is the collective's.
        y = self.mod.same(self.part())
        t = DLPack(y)
        m.get_group("x").all_reduce(t, op=dist.ReduceOp.MAX)
        self.assertEqual(t.asked, [1])
        m.get_group("x").all_reduce(Interface(y, 2), op=dist.ReduceOp.MIN)
        np.testing.assert_array_equal(
            y.numpy(), np.arange(PART, dtype=np.float32) + PART * (WORLD - 1))
        out = self.mod.gather(self.part())  # Any device buffer of 4*WORLD.
        m.get_group("x").all_gather_into_tensor(out, self.mod.same(
            self.part()))
        np.testing.assert_array_equal(out.numpy(), self.whole())


if __name__ == "__main__":
    unittest.main(verbosity=2)
