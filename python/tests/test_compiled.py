"""mesh.compiler and mesh.runtime on N ranks: seed scenario 5's kernel
(a Megatron MLP on a (2, 4) mesh) compiled from Python, called with numpy,
and compared with a numpy reference; results' ownership and the checks of
arguments against the per-device signature.

    mpirun -n 8 python3 test_compiled.py
"""

import os
import unittest

import numpy as np

import mesh.compiler
import mesh.distributed as dist
import mesh.runtime

import linear_layer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TP_MLP = os.path.join(ROOT, "examples", "scenarios", "05_tp_mlp", "tp_mlp.mlir")
WORLD = int(os.environ.get("OMPI_COMM_WORLD_SIZE",
                           os.environ.get("WORLD_SIZE", "1")))

# A module with a global program (partitioned by mesh-compile: each device
# takes 16 / WORLD elements), a scalar argument and result, a result that
# is its argument, and a constant result.
GLOBAL = """
mesh.mesh @m(["x" = {world}])
func.func @scaled_sum(%a: tensor<16xf32> {{mesh.sharding = #mesh.sharding<@m, [["x"]]>}},
                      %s: f32)
    -> (tensor<16xf32> {{mesh.sharding = #mesh.sharding<@m, [[]]>}}, f32)
    attributes {{llvm.emit_c_interface}} {{
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}}
      ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {{
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %s : f32
    linalg.yield %m : f32
  }} -> tensor<16xf32>
  %two = arith.addf %s, %s : f32
  return %y, %two : tensor<16xf32>, f32
}}
func.func @same(%a: tensor<3xi32>) -> tensor<3xi32>
    attributes {{llvm.emit_c_interface}} {{
  return %a : tensor<3xi32>
}}
func.func @dot_plus(%a: tensor<3xf32>, %b: tensor<3xf32>, %c: tensor<f32>)
    -> tensor<f32> attributes {{llvm.emit_c_interface}} {{
  %d = linalg.dot ins(%a, %b : tensor<3xf32>, tensor<3xf32>)
                  outs(%c : tensor<f32>) -> tensor<f32>
  return %d : tensor<f32>
}}
func.func @mixed_mm(%a: tensor<5x7xf16>, %b: tensor<3x7xf16>, %c: tensor<5x3xf32>)
    -> tensor<5x3xf32> attributes {{llvm.emit_c_interface}} {{
  %d = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<5x7xf16>, tensor<3x7xf16>)
      outs(%c : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %d : tensor<5x3xf32>
}}
func.func @int8_mm(%a: tensor<6x1100xi8>, %b: tensor<1100x5xi8>)
    -> tensor<6x5xi32> attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<6x5xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<6x5xi32>) -> tensor<6x5xi32>
  %d = linalg.matmul ins(%a, %b : tensor<6x1100xi8>, tensor<1100x5xi8>)
                     outs(%f : tensor<6x5xi32>) -> tensor<6x5xi32>
  return %d : tensor<6x5xi32>
}}
func.func @ones() -> tensor<2x2xf64> attributes {{llvm.emit_c_interface}} {{
  %c = arith.constant dense<1.0> : tensor<2x2xf64>
  return %c : tensor<2x2xf64>
}}
"""


class TpMlp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if WORLD != 8:
            raise unittest.SkipTest("scenario 5's mesh is (2, 4): 8 ranks")
        # Every rank compiles (the same file, its own temporary directory).
        cls.lib = mesh.compiler.compile_file(TP_MLP, target="host")
        cls.mod = mesh.runtime.load(cls.lib)

    @classmethod
    def tearDownClass(cls):
        cls.mod.close()

    def test_against_numpy(self):
        rng = np.random.default_rng(7)  # The same global data on every rank.
        small = lambda *s: rng.integers(-3, 4, s).astype(np.float32)
        x, w1, b1, w2, b2 = small(8, 8), small(8, 32), small(32), \
            small(32, 8), small(8)
        want = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        xs, w1s, b1s, w2s, dp, tp = self.mod.shard_parameters(x, w1, b1, w2)
        self.assertEqual((xs.shape, w1s.shape, b1s.shape, w2s.shape),
                         ((4, 8), (8, 8), (8,), (8, 8)))
        np.testing.assert_array_equal(xs, x[4 * dp:4 * dp + 4])
        np.testing.assert_array_equal(w1s, w1[:, 8 * tp:8 * tp + 8])
        y = self.mod.tp_mlp(xs, w1s, b1s, w2s, b2)
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_array_equal(y, want[4 * dp:4 * dp + 4])
        # Results own their memory: usable after the inputs are gone.
        del xs, w1s, b1s, w2s
        np.testing.assert_array_equal(y, want[4 * dp:4 * dp + 4])

    def test_argument_checks(self):
        f = self.mod.tp_mlp
        a = np.zeros((4, 8), np.float32)
        w, b = np.zeros((8, 8), np.float32), np.zeros(8, np.float32)
        with self.assertRaisesRegex(ValueError,
                                    r"argument 0 has shape \(8, 8\); this "
                                    r"device's part is \(4, 8\)"):
            f(np.zeros((8, 8), np.float32), w, b, w, b)
        with self.assertRaisesRegex(TypeError, "argument 1 has dtype "
                                    "float64; the function takes float32"):
            f(a, np.zeros((8, 8)), b, w, b)
        with self.assertRaisesRegex(TypeError, "takes 5 arguments, not 4"):
            f(a, w, b, w)
        # A non-contiguous argument is copied, not refused.
        big = np.zeros((4, 16), np.float32)
        f(big[:, ::2], w, b, w, b)
        self.assertIn("tp_mlp(f32(4, 8)", repr(f))


class CompiledGlobal(unittest.TestCase):
    """Loads SOURCE, a global program formatted with the world size,
    compiled for TARGET once for the class (skipped unless each of SIZES
    divides by the world)."""
    SOURCE, NAME, SIZES, TARGET, OPTIONS = None, None, (), "host", ()

    @classmethod
    def setUpClass(cls):
        if any(n % WORLD for n in cls.SIZES):
            raise unittest.SkipTest(f"{cls.SIZES} over the world")
        cls.mod = mesh.runtime.load(mesh.compiler.compile_string(
            cls.SOURCE.format(world=WORLD), name=cls.NAME, target=cls.TARGET,
            options=cls.OPTIONS))

    @classmethod
    def tearDownClass(cls):
        cls.mod.close()


class Global(CompiledGlobal):
    """A global program partitioned by mesh-compile, on any world size."""
    SOURCE, NAME, SIZES = GLOBAL, "global", (16,)

    def test_partitioned_and_scalars(self):
        n = 16 // WORLD
        me = dist.get_rank() if dist.is_initialized() else None
        part = np.arange(n, dtype=np.float32)
        y, two = self.mod.scaled_sum(part, 3.0)
        self.assertEqual(two, 6.0)
        # The replicated result gathers every rank's scaled part.
        np.testing.assert_array_equal(
            y, np.tile(3.0 * np.arange(n, dtype=np.float32), WORLD))
        del me

    def test_aliasing_and_constant_results(self):
        a = np.array([1, 2, 3], np.int32)
        r = self.mod.same(a)
        a[0] = 9  # The result is a copy, not the argument.
        np.testing.assert_array_equal(r, [1, 2, 3])
        np.testing.assert_array_equal(self.mod.ones(), np.ones((2, 2)))
        np.testing.assert_array_equal(self.mod.ones(), np.ones((2, 2)))

    def test_rank_zero_arguments(self):
        # A 0-d array (or a numpy scalar) for a tensor<f32> argument: once
        # made 1-d by numpy.ascontiguousarray and refused.
        a = np.array([1, 2, 3], np.float32)
        b = np.array([4, 5, 6], np.float32)
        for c in (np.array(0.5, np.float32), np.float32(0.5)):
            r = self.mod.dot_plus(a, b, c)
            self.assertEqual(r.shape, ())
            self.assertEqual(r, 32.5)
        with self.assertRaisesRegex(ValueError, r"argument 2 has shape "
                                    r"\(1,\); this device's part is \(\)"):
            self.mod.dot_plus(a, b, np.array([0.5], np.float32))

    def test_mixed_precision_product(self):
        # f16 inputs into an f32 accumulator (one meshrt_gemm_mixed call):
        # the exact product of the widened inputs, in f32; the values make
        # sums that f16 cannot hold, so a product rounded to f16 fails.
        a = (np.arange(35).reshape(5, 7) % 31 - 15).astype(np.float16) * 4
        b = ((np.arange(21).reshape(3, 7) * 11) % 29 - 14).astype(
            np.float16) / 8
        c = np.full((5, 3), 1 / 64, np.float32)
        want = a.astype(np.float32) @ b.astype(np.float32).T + c
        self.assertFalse(np.array_equal(
            want.astype(np.float16).astype(np.float32), want))
        r = self.mod.mixed_mm(a, b, c)
        self.assertEqual(r.dtype, np.float32)
        np.testing.assert_array_equal(r, want)

    def test_argument_layouts(self):
        # A read-only array (its address from the array interface, not the
        # buffer protocol), a strided view (copied first), and the same
        # array twice: each gives the numbers of a plain copy.
        a = np.array([1, 2, 3], np.float32)
        b = np.array([4, 5, 6], np.float32)
        c = np.array(0.5, np.float32)
        ro = a.copy()
        ro.setflags(write=False)
        strided = np.array([1, 9, 2, 9, 3], np.float32)[::2]
        for x in (ro, strided, a):
            self.assertEqual(self.mod.dot_plus(x, b, c), 32.5)
        self.assertEqual(self.mod.dot_plus(a, a, c), 14.5)
        # Results are row-major arrays that own their memory.
        r = self.mod.mixed_mm(np.ones((5, 7), np.float16),
                              np.ones((3, 7), np.float16),
                              np.zeros((5, 3), np.float32))
        self.assertTrue(r.flags.c_contiguous)
        self.assertTrue(r.flags.writeable)
        np.testing.assert_array_equal(r, np.full((5, 3), 7, np.float32))

    def test_int8_product(self):
        # i8 x i8 into i32 (meshrt_gemm_mixed through a float GEMM that
        # holds every sum: k = 1100 needs a double): exact, the extremes
        # included.
        rng = np.random.default_rng(3)
        a = rng.integers(-128, 128, (6, 1100)).astype(np.int8)
        b = rng.integers(-128, 128, (1100, 5)).astype(np.int8)
        a[0, :] = -128
        b[:, 0] = -128
        r = self.mod.int8_mm(a, b)
        self.assertEqual(r.dtype, np.int32)
        np.testing.assert_array_equal(
            r, a.astype(np.int32) @ b.astype(np.int32))
        self.assertEqual(r[0, 0], 1100 * 128 * 128)

    def test_errors(self):
        with self.assertRaisesRegex(TypeError, "argument 1 is a f32 scalar"):
            self.mod.scaled_sum(np.zeros(16 // WORLD, np.float32),
                                np.zeros(2))
        with self.assertRaises(mesh.compiler.CompileError) as e:
            mesh.compiler.compile_string("func.func @f( {", name="broken")
        self.assertIn("mesh-compile failed", str(e.exception))
        with self.assertRaisesRegex(ImportError, "no mesh_module_signature"):
            mesh.runtime.load(mesh.runtime._lib.lib._name)


# Stencil loops (mesh-temporal-blocking runs two steps per iteration; an
# odd last step and a trip count known at run time split the loop): a 2-D
# Jacobi written in the loop, rows over the world, and a one-sided 1-D
# step with a pad of 1.0 and a source term from linalg.index, written as a
# call. Every element is computed in f32 by the same operations as numpy's
# (the products are by powers of two, so a fused multiply-add rounds the
# same): the results must be equal.
STENCILS = """
mesh.mesh @m(["x" = {world}])
func.func @jacobi(%u0: tensor<32x24xf32> {{mesh.sharding = #mesh.sharding<@m, [["x"], []]>}},
                  %f: tensor<32x24xf32> {{mesh.sharding = #mesh.sharding<@m, [["x"], []]>}},
                  %steps: i64)
    -> (tensor<32x24xf32> {{mesh.sharding = #mesh.sharding<@m, [[], []]>}})
    attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.index_cast %steps : i64 to index
  %zero = arith.constant 0.0 : f32
  %q = arith.constant dense<0.25> : tensor<32x24xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<32x24xf32>) {{
    %p = tensor.pad %u low[1, 1] high[1, 1] {{
    ^bb0(%a: index, %b: index):
      tensor.yield %zero : f32
    }} : tensor<32x24xf32> to tensor<34x26xf32>
    %no = tensor.extract_slice %p[0, 1] [32, 24] [1, 1] : tensor<34x26xf32> to tensor<32x24xf32>
    %so = tensor.extract_slice %p[2, 1] [32, 24] [1, 1] : tensor<34x26xf32> to tensor<32x24xf32>
    %we = tensor.extract_slice %p[1, 0] [32, 24] [1, 1] : tensor<34x26xf32> to tensor<32x24xf32>
    %ea = tensor.extract_slice %p[1, 2] [32, 24] [1, 1] : tensor<34x26xf32> to tensor<32x24xf32>
    %a1 = arith.addf %no, %so : tensor<32x24xf32>
    %a2 = arith.addf %we, %ea : tensor<32x24xf32>
    %a3 = arith.addf %a1, %a2 : tensor<32x24xf32>
    %m = arith.mulf %a3, %q : tensor<32x24xf32>
    %v = arith.addf %m, %f : tensor<32x24xf32>
    scf.yield %v : tensor<32x24xf32>
  }}
  return %r : tensor<32x24xf32>
}}
func.func private @up_step(%u: tensor<48xf32>) -> tensor<48xf32> {{
  %one = arith.constant 1.0 : f32
  %p = tensor.pad %u low[2] high[0] {{
  ^bb0(%a: index):
    tensor.yield %one : f32
  }} : tensor<48xf32> to tensor<50xf32>
  %m1 = tensor.extract_slice %p[1] [48] [1] : tensor<50xf32> to tensor<48xf32>
  %m2 = tensor.extract_slice %p[0] [48] [1] : tensor<50xf32> to tensor<48xf32>
  %e = tensor.empty() : tensor<48xf32>
  %v = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}}
      ins(%u, %m1, %m2 : tensor<48xf32>, tensor<48xf32>, tensor<48xf32>)
      outs(%e : tensor<48xf32>) {{
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %i = linalg.index 0 : index
    %c3 = arith.constant 3 : index
    %c0 = arith.constant 0 : index
    %r = arith.remui %i, %c3 : index
    %z = arith.cmpi eq, %r, %c0 : index
    %h = arith.constant 0.5 : f32
    %t = arith.constant 0.125 : f32
    %zero = arith.constant 0.0 : f32
    %d = arith.subf %a, %b : f32
    %d2 = arith.mulf %d, %h : f32
    %x = arith.subf %a, %d2 : f32
    %y = arith.mulf %c, %t : f32
    %w = arith.addf %x, %y : f32
    %s = arith.select %z, %t, %zero : f32
    %w2 = arith.addf %w, %s : f32
    linalg.yield %w2 : f32
  }} -> tensor<48xf32>
  return %v : tensor<48xf32>
}}
func.func @upwind(%u0: tensor<48xf32> {{mesh.sharding = #mesh.sharding<@m, [["x"]]>}},
                  %steps: i64)
    -> (tensor<48xf32> {{mesh.sharding = #mesh.sharding<@m, [[]]>}})
    attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.index_cast %steps : i64 to index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%u = %u0) -> (tensor<48xf32>) {{
    %v = func.call @up_step(%u) : (tensor<48xf32>) -> tensor<48xf32>
    scf.yield %v : tensor<48xf32>
  }}
  return %r : tensor<48xf32>
}}
"""


def jacobi_reference(u, f, steps):
    for _ in range(steps):
        p = np.pad(u, 1)
        u = ((p[:-2, 1:-1] + p[2:, 1:-1]) + (p[1:-1, :-2] + p[1:-1, 2:])) \
            * np.float32(0.25) + f
    return u


def upwind_reference(u, steps):
    source = np.where(np.arange(u.size) % 3 == 0, np.float32(0.125),
                      np.float32(0))
    for _ in range(steps):
        p = np.concatenate([np.ones(2, np.float32), u])
        u = ((u - (u - p[1:-1]) * np.float32(0.5)) +
             p[:-2] * np.float32(0.125)) + source
    return u


class Stencils(CompiledGlobal):
    """Stencil loops, two steps per iteration (mesh-compile's default; the
    lit test temporal-blocking.mlir shows these forms blocked), against
    numpy, for odd and even step counts."""
    SOURCE, NAME, SIZES = STENCILS, "stencils", (32, 48)

    def test_steps(self):
        me = dist.get_rank() if dist.is_initialized() else 0
        rng = np.random.default_rng(5)
        u = rng.standard_normal((32, 24)).astype(np.float32)
        f = rng.standard_normal((32, 24)).astype(np.float32)
        w = rng.standard_normal(48).astype(np.float32)
        rows, part = 32 // WORLD, 48 // WORLD
        mine = slice(me * rows, (me + 1) * rows)
        for steps in (0, 1, 2, 3, 6, 7):
            with self.subTest(steps=steps):
                np.testing.assert_array_equal(
                    self.mod.jacobi(u[mine], f[mine], steps),
                    jacobi_reference(u, f, steps))
                np.testing.assert_array_equal(
                    self.mod.upwind(w[me * part:(me + 1) * part], steps),
                    upwind_reference(w, steps))


# Modules whose functions share a name: "@f" is x + 1 in one and x * 2 in
# the other, a global program over the world (the result is gathered).
TWIN = """
mesh.mesh @m(["x" = {world}])
func.func @f(%a: tensor<16xf32> {{mesh.sharding = #mesh.sharding<@m, [["x"]]>}})
    -> (tensor<16xf32> {{mesh.sharding = #mesh.sharding<@m, [[]]>}})
    attributes {{llvm.emit_c_interface}} {{
  %c = arith.constant dense<{c}> : tensor<16xf32>
  %y = arith.{op} %a, %c : tensor<16xf32>
  return %y : tensor<16xf32>
}}
"""


class GpuOnHostLinear(CompiledGlobal):
    """A linear layer with ReLU compiled for gpu-on-host (one GEMM call with
    its epilogue), f16 inputs into f32 (meshrt_gemm_epilogue_mixed) and all
    f32: against numpy."""
    SOURCE, NAME, TARGET = linear_layer.source("f16"), "linear_f16", \
        "gpu-on-host"

    def test_against_numpy(self):
        a, b, bias, want = linear_layer.mixed_data(self)
        y = self.mod.linear(a, b, bias)
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


class GpuOnHostLinearF32(GpuOnHostLinear):
    SOURCE, NAME = linear_layer.source("f32"), "linear_f32"

    def test_against_numpy(self):
        a = np.arange(35, dtype=np.float32).reshape(5, 7) / 8 - 2
        b = np.arange(21, dtype=np.float32).reshape(7, 3) / 4 - 2.5
        bias = np.array([0.5, -1.0, 2.0], np.float32)
        np.testing.assert_array_equal(self.mod.linear(a, b, bias),
                                      np.maximum(a @ b + bias, 0))


# Elementwise kernels of the cuda target load and store 16 bytes at a time
# when the buffers start on a multiple of 16 bytes (tested on the host
# before the launch) and one element at a time otherwise: gpu-on-host runs
# both forms on the host.
ELEMENTWISE = """
func.func @bias_relu(%x: tensor<8x256xf32>, %b: tensor<256xf32>,
                     %s: tensor<8xf32>) -> tensor<8x256xf32>
    attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%x, %b, %s : tensor<8x256xf32>, tensor<256xf32>, tensor<8xf32>)
      outs(%e : tensor<8x256xf32>) {{
  ^bb0(%v: f32, %bv: f32, %sv: f32, %o: f32):
    %t = arith.addf %v, %bv : f32
    %p = arith.mulf %t, %sv : f32
    %r = arith.maximumf %p, %z : f32
    linalg.yield %r : f32
  }} -> tensor<8x256xf32>
  return %y : tensor<8x256xf32>
}}
func.func @widen(%h: tensor<5x24xf16>) -> tensor<5x24xf32>
    attributes {{llvm.emit_c_interface}} {{
  %w = arith.extf %h : tensor<5x24xf16> to tensor<5x24xf32>
  %two = arith.constant dense<2.0> : tensor<5x24xf32>
  %y = arith.mulf %w, %two : tensor<5x24xf32>
  return %y : tensor<5x24xf32>
}}
"""


def at_offset(a, items):
    """A C-contiguous copy of `a` starting `items` elements after a 64-byte
    boundary."""
    raw = np.zeros(a.size + items + 64 // a.itemsize, a.dtype)
    start = (-raw.ctypes.data % 64) // a.itemsize + items
    view = raw[start:start + a.size].reshape(a.shape)
    view[...] = a
    assert (view.ctypes.data - items * a.itemsize) % 64 == 0
    return view


class GpuOnHostElementwise(CompiledGlobal):
    SOURCE, NAME, TARGET = ELEMENTWISE, "elementwise", "gpu-on-host"

    def test_aligned_and_not(self):
        rng = np.random.default_rng(7)
        x = small_ints(rng, (8, 256), np.float32) / 4
        b = small_ints(rng, (256,), np.float32)
        sc = small_ints(rng, (8,), np.float32)
        want = np.maximum((x + b) * sc[:, None], 0)
        # 5 rows of 6 vectors: blocks of 8 x 8 threads, guarded.
        h = (small_ints(rng, (5, 24), np.float32) / 8).astype(np.float16)
        # Each argument on a 16-byte boundary, and one element past one
        # (which only the scalar kernel may read); the results the same.
        for shift in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)):
            args = [at_offset(a, k) for a, k in zip((x, b, sc), shift)]
            np.testing.assert_array_equal(self.mod.bias_relu(*args), want)
        for k in (0, 1, 3):
            np.testing.assert_array_equal(self.mod.widen(at_offset(h, k)),
                                          h.astype(np.float32) * 2)


# Reductions to one value (mesh-gpu-full-reductions): partial values in
# parallel slots, then a reduction of the slots; gpu-on-host runs both
# steps as loops. 1961 elements make 62 slots of 32, 8 elements one slot.
REDUCTIONS = """
func.func @total(%x: tensor<37x53xf32>) -> tensor<f32>
    attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%x : tensor<37x53xf32>) outs(%f : tensor<f32>)
      dimensions = [0, 1]
    (%a: f32, %b: f32) {{
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }}
  return %r : tensor<f32>
}}
func.func @largest(%x: tensor<3x5x7xi32>, %init: tensor<i32>) -> tensor<i32>
    attributes {{llvm.emit_c_interface}} {{
  %r = linalg.reduce ins(%x : tensor<3x5x7xi32>) outs(%init : tensor<i32>)
      dimensions = [0, 1, 2]
    (%a: i32, %b: i32) {{
      %s = arith.maxsi %a, %b : i32
      linalg.yield %s : i32
    }}
  return %r : tensor<i32>
}}
func.func @short(%x: tensor<8xf64>) -> tensor<f64>
    attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 1.0 : f64
  %e = tensor.empty() : tensor<f64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<f64>) -> tensor<f64>
  %r = linalg.reduce ins(%x : tensor<8xf64>) outs(%f : tensor<f64>)
      dimensions = [0]
    (%a: f64, %b: f64) {{
      %s = arith.mulf %a, %b : f64
      linalg.yield %s : f64
    }}
  return %r : tensor<f64>
}}
"""


class GpuOnHostReductions(CompiledGlobal):
    SOURCE, NAME, TARGET = REDUCTIONS, "reductions", "gpu-on-host"

    def test_against_numpy(self):
        rng = np.random.default_rng(8)
        x = small_ints(rng, (37, 53), np.float32)
        x[36, 52] = 1000  # The last element counts.
        self.assertEqual(self.mod.total(x), x.sum(dtype=np.float64))
        m = rng.integers(-1000, 1000, (3, 5, 7)).astype(np.int32)
        for where in ((0, 0, 0), (2, 4, 6), (1, 2, 3)):
            y = m.copy()
            y[where] = 5000
            self.assertEqual(self.mod.largest(y, np.array(-7, np.int32)),
                             5000)
        self.assertEqual(self.mod.largest(m, np.array(4000, np.int32)), 4000)
        v = np.array([1, 2, 3, 4, 0.5, 0.25, 2, 3], np.float64)
        self.assertEqual(self.mod.short(v), np.prod(v))


# Convolutions, which mesh-convolutions-to-gemm computes as an im2col copy
# and a GEMM: NHWC/HWCF with its output's rows over the world (each device
# computes its rows from its block of input rows and their halo), NCHW/FCHW
# with stride 2, NHWC/FHWC in f64 with stride 2 along the rows only.
CONVOLUTIONS = """
mesh.mesh @m(["x" = {world}])
func.func @nhwc(%x: tensor<2x18x10x3xf32>, %w: tensor<3x3x3x4xf32>)
    -> (tensor<2x16x8x4xf32> {{mesh.sharding = #mesh.sharding<@m, [[], ["x"], [], []]>}})
    attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x8x4xf32>) -> tensor<2x16x8x4xf32>
  %y = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<1> : tensor<2xi64>}}
     ins(%x, %w : tensor<2x18x10x3xf32>, tensor<3x3x3x4xf32>)
     outs(%f : tensor<2x16x8x4xf32>) -> tensor<2x16x8x4xf32>
  return %y : tensor<2x16x8x4xf32>
}}
func.func @nchw(%x: tensor<2x3x11x9xf32>, %w: tensor<5x3x3x3xf32>,
                %o: tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
    attributes {{llvm.emit_c_interface}} {{
  %y = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}}
     ins(%x, %w : tensor<2x3x11x9xf32>, tensor<5x3x3x3xf32>)
     outs(%o : tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  return %y : tensor<2x5x5x4xf32>
}}
func.func @fhwc(%x: tensor<1x8x6x3xf64>, %w: tensor<5x3x3x3xf64>)
    -> tensor<1x3x4x5xf64> attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<1x3x4x5xf64>
  %f = linalg.fill ins(%z : f64) outs(%e : tensor<1x3x4x5xf64>) -> tensor<1x3x4x5xf64>
  %y = linalg.conv_2d_nhwc_fhwc {{dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<[2, 1]> : tensor<2xi64>}}
     ins(%x, %w : tensor<1x8x6x3xf64>, tensor<5x3x3x3xf64>)
     outs(%f : tensor<1x3x4x5xf64>) -> tensor<1x3x4x5xf64>
  return %y : tensor<1x3x4x5xf64>
}}
"""


def conv_nhwc(x, w_hwcf, strides=(1, 1)):
    """The convolution in numpy: x [N, H, W, C], w [KH, KW, C, F]."""
    kh_, kw_ = w_hwcf.shape[:2]
    sh, sw = strides
    oh = (x.shape[1] - kh_) // sh + 1
    ow = (x.shape[2] - kw_) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, w_hwcf.shape[3]), x.dtype)
    for kh in range(kh_):
        for kw in range(kw_):
            out += x[:, kh:kh + sh * (oh - 1) + 1:sh,
                     kw:kw + sw * (ow - 1) + 1:sw, :] @ w_hwcf[kh, kw]
    return out


def small_ints(rng, shape, dtype):
    """Values in [-3, 3]: every sum of products is exact, in any order."""
    return rng.integers(-3, 4, shape).astype(dtype)


def check_strided_convolutions(mod, rng):
    """@nchw (NCHW / FCHW, stride 2, accumulating into %o) and @fhwc (NHWC /
    FHWC, f64, stride 2 along the rows) of CONVOLUTIONS against numpy."""
    x = small_ints(rng, (2, 3, 11, 9), np.float32)
    w = small_ints(rng, (5, 3, 3, 3), np.float32)
    o = small_ints(rng, (2, 5, 5, 4), np.float32)
    want = o + conv_nhwc(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0),
                         (2, 2)).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(mod.nchw(x, w, o), want)
    x = small_ints(rng, (1, 8, 6, 3), np.float64)
    w = small_ints(rng, (5, 3, 3, 3), np.float64)
    np.testing.assert_array_equal(
        mod.fhwc(x, w), conv_nhwc(x, w.transpose(1, 2, 3, 0), (2, 1)))


class Convolutions(CompiledGlobal):
    SOURCE, NAME, SIZES = CONVOLUTIONS, "convolutions", (16,)

    def test_against_numpy(self):
        rng = np.random.default_rng(5)  # The same data on every rank.
        x = small_ints(rng, (2, 18, 10, 3), np.float32)
        w = small_ints(rng, (3, 3, 3, 4), np.float32)
        part = 16 // WORLD
        me = dist.get_rank() if dist.is_initialized() else 0
        want = conv_nhwc(x, w)[:, part * me:part * (me + 1)]
        # Propagation splits the input's rows too: each device's block of
        # input rows with the 2 more its windows read (its halo).
        mine = x[:, part * me:part * me + part + 2]
        np.testing.assert_array_equal(self.mod.nhwc(mine, w), want)
        check_strided_convolutions(self.mod, rng)


class ConvolutionsTiled(CompiledGlobal):
    """@nchw and @fhwc with the im2col matrix bounded to 2,000 bytes: tiled
    over images and output rows (both in tiles of 1 image by 1 row)."""
    SOURCE = CONVOLUTIONS[CONVOLUTIONS.index("func.func @nchw"):]
    NAME = "convolutions_tiled"
    OPTIONS = ("--mesh-opt-args=--mesh-convolutions-to-gemm="
               "max-columns-bytes=2000",)

    def test_against_numpy(self):
        check_strided_convolutions(self.mod, np.random.default_rng(6))


class TwoModules(unittest.TestCase):
    """Modules loaded side by side and one after another run their own
    code (each library's calls of its functions stay in it, although
    mesh.runtime loads them RTLD_GLOBAL), on one runtime that both join,
    and a module loaded after every other one closed starts it again."""

    def test_same_names(self):
        if 16 % WORLD:
            self.skipTest("16 elements over the world")
        plus, times, plus_again = (
            mesh.compiler.compile_string(
                TWIN.format(world=WORLD, c=c, op=op), name=name)
            for c, op, name in ((1.0, "addf", "plus"),
                                (2.0, "mulf", "times"),
                                (1.0, "addf", "plus_again")))
        x = np.arange(16, dtype=np.float32)
        a = mesh.runtime.load(plus)
        b = mesh.runtime.load(times)
        me = dist.get_rank() if dist.is_initialized() else 0
        n = 16 // WORLD
        mine = x[me * n:(me + 1) * n]
        np.testing.assert_array_equal(a.f(mine), x + 1)
        np.testing.assert_array_equal(b.f(mine), x * 2)
        a.close()
        np.testing.assert_array_equal(b.f(mine), x * 2)
        c = mesh.runtime.load(plus_again)
        np.testing.assert_array_equal(c.f(mine), x + 1)
        np.testing.assert_array_equal(b.f(mine), x * 2)
        b.close()
        c.close()
        # Every module closed (the runtime finalized), then one loaded
        # again: the runtime starts anew.
        with mesh.runtime.load(times) as d:
            np.testing.assert_array_equal(d.f(mine), x * 2)


if __name__ == "__main__":
    unittest.main(verbosity=1)
