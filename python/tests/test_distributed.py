"""mesh.distributed on N ranks (run under mpirun -n 8, or torchrun).

Every rank runs every test in the same order (the calls are collective).
The oracle is independent of the runtime: a group along dimensions D of a
mesh over row-major ranks holds the ranks whose coordinates differ from
this process's only along D, in row-major order over D; the collectives'
numbers are computed here from those members.
"""

import array
import itertools
import os
import unittest

import numpy as np

import mesh.distributed as dist
from mesh.distributed import DeviceMesh, ReduceOp, init_device_mesh

WORLD = int(os.environ.get("OMPI_COMM_WORLD_SIZE",
                           os.environ.get("WORLD_SIZE", "1")))
# The replicate size of the 2-D meshes: 2 where the world divides.
REP = 2 if WORLD % 2 == 0 else 1


def setUpModule():
    # Like torch: the process group first (init_device_mesh would start it
    # too), here so that every test class may run first.
    if not dist.is_initialized():
        dist.init_process_group()


def expected_members(ranks, coord, dims):
    """World ranks of the group along `dims` (indices, in order) through
    `coord`, in group-rank order."""
    out = []
    for idx in itertools.product(*[range(ranks.shape[d]) for d in dims]):
        c = list(coord)
        for d, i in zip(dims, idx):
            c[d] = i
        out.append(int(ranks[tuple(c)]))
    return out


def value(world_rank, n=4, dtype=np.float32):
    """Rank r's input: 100 r + i."""
    return (100 * world_rank + np.arange(n)).astype(dtype)


class Scenarios(unittest.TestCase):
    """The seed scenarios' meshes: every grouping checked against the
    oracle, and each collective's numbers."""

    def check_mesh(self, m, names):
        rank = dist.get_rank()
        ranks = m.mesh
        self.assertEqual(tuple(ranks.shape), m.shape)
        coord = m.get_coordinate()
        self.assertEqual(int(ranks[tuple(coord)]), rank)
        for k in range(1, len(names) + 1):
            for dims in itertools.permutations(range(len(names)), k):
                want = expected_members(ranks, coord, dims)
                g = m.get_group([names[d] for d in dims])
                self.assertEqual(g.members, want, [names[d] for d in dims])
                self.assertEqual(g.size(), len(want))
                self.assertEqual(g.rank(), want.index(rank))
        for i, name in enumerate(names):
            self.assertEqual(m.get_local_rank(name), coord[i])
            self.assertEqual(m.get_local_rank(i), coord[i])
            self.assertEqual(m.get_group(i).members,
                             m.get_group(name).members)
        return ranks, coord

    def check_collectives(self, g):
        me, members, n = dist.get_rank(), g.members, g.size()
        x = value(me)
        g.all_reduce(x)
        np.testing.assert_array_equal(x, sum(value(r) for r in members))
        x = value(me)
        g.all_reduce(x, op=ReduceOp.AVG)
        np.testing.assert_allclose(
            x, sum(value(r, dtype=np.float64) for r in members) / n,
            rtol=1e-6)
        x = value(me, dtype=np.int64)
        g.all_reduce(x, op=ReduceOp.MAX)
        np.testing.assert_array_equal(x, value(max(members), dtype=np.int64))
        out = np.zeros(4 * n, np.float32)
        g.all_gather_into_tensor(out, value(me))
        np.testing.assert_array_equal(
            out, np.concatenate([value(r) for r in members]))
        out = np.zeros(4, np.float32)
        g.reduce_scatter_tensor(out, value(me, 4 * n))
        np.testing.assert_array_equal(
            out, sum(value(r, 4 * n) for r in members)[4 * g.rank():
                                                       4 * g.rank() + 4])
        inp = value(me, 2 * n).reshape(n, 2)
        out = np.zeros_like(inp)
        g.all_to_all_single(out, inp)
        np.testing.assert_array_equal(
            out, np.stack([value(r, 2 * n).reshape(n, 2)[g.rank()]
                           for r in members]))
        x = value(me)
        g.broadcast(x, src=members[-1])
        np.testing.assert_array_equal(x, value(members[-1]))
        x = value(me)
        g.broadcast(x, group_src=0)
        np.testing.assert_array_equal(x, value(members[0]))
        g.barrier()

    def test_1_device_mesh_2d(self):
        names = ("replicate", "shard")
        m = init_device_mesh("cpu", (REP, WORLD // REP), mesh_dim_names=names)
        self.assertEqual(m.mesh_dim_names, names)
        self.assertEqual(m.device_type, "cpu")
        self.check_mesh(m, names)
        if WORLD == 8:
            me = dist.get_rank()
            self.assertEqual(m.get_group("shard").members,
                             [0, 1, 2, 3] if me < 4 else [4, 5, 6, 7])
            self.assertEqual(m.get_group("replicate").members,
                             [me % 4, me % 4 + 4])
            self.assertEqual(
                repr(m), "DeviceMesh((replicate=2, shard=4), 'cpu', "
                "stride=(4, 1))")
        self.check_collectives(m.get_group("shard"))
        self.check_collectives(m.get_group("replicate"))
        self.check_collectives(m["shard"].get_group())

    def test_2_hsdp(self):
        names = ("replicate", "shard")
        m = init_device_mesh("cpu", (REP, -1), mesh_dim_names=names)
        self.assertEqual(m.shape, (REP, WORLD // REP))
        self.check_mesh(m, names)
        # HSDP's gradient step: reduce-scatter over the shard group, then
        # all_reduce over replicate (the sum over the world, scattered).
        shard, rep = m.get_group("shard"), m.get_group("replicate")
        grad = value(dist.get_rank(), 4 * shard.size())
        part = np.zeros(4, np.float32)
        shard.reduce_scatter_tensor(part, grad)
        rep.all_reduce(part)
        total = sum(value(r, 4 * shard.size()) for r in range(WORLD))
        np.testing.assert_array_equal(
            part, total[4 * shard.rank():4 * shard.rank() + 4])

    def test_3_slicing_3d(self):
        if WORLD != 8:
            self.skipTest("a (2, 2, 2) mesh needs 8 ranks")
        names = ("replicate", "shard", "tp")
        m = init_device_mesh("cpu", (2, 2, 2), mesh_dim_names=names)
        ranks, coord = self.check_mesh(m, names)
        hsdp = m["replicate", "shard"]
        self.assertEqual(hsdp.mesh_dim_names, ("replicate", "shard"))
        self.assertEqual(hsdp.shape, (2, 2))
        np.testing.assert_array_equal(hsdp.mesh, ranks[:, :, coord[2]])
        self.assertEqual(hsdp.get_group("shard").members,
                         m.get_group("shard").members)
        self.check_collectives(hsdp.get_group("replicate"))
        flat = m["replicate", "shard"]._flatten("dp")
        self.assertEqual(flat.shape, (4,))
        self.assertEqual(flat.get_group().members,
                         expected_members(ranks, coord, (0, 1)))
        self.check_collectives(flat.get_group())
        self.assertEqual(m["tp"], m["tp"])
        self.assertEqual(hash(m["tp"]), hash(m["tp"]))
        self.assertNotEqual(m["tp"], m["shard"])
        both = DeviceMesh._concatenate([m["replicate"], m["tp"]])
        self.assertEqual(both.mesh_dim_names, ("replicate", "tp"))

    def test_4_ulysses(self):
        names = ("data_parallel", "sequence_parallel")
        sp = 4 if WORLD % 4 == 0 else 1
        m = init_device_mesh("cpu", (-1, sp), mesh_dim_names=names)
        self.assertEqual(m.shape, (WORLD // sp, sp))
        self.check_mesh(m, names)
        self.check_collectives(m.get_group("sequence_parallel"))
        un = m._unflatten("sequence_parallel", (sp, 1), ("a", "b"))
        self.assertEqual(un.shape, (WORLD // sp, sp, 1))
        self.assertEqual(un.get_group("a").members,
                         m.get_group("sequence_parallel").members)

    def test_5_tp_mlp_over_ranks(self):
        # A mesh over an explicit rank array, in reverse order (torch's
        # DeviceMesh(device_type, mesh)).
        ranks = np.arange(WORLD)[::-1].reshape(-1, 2 if WORLD % 2 == 0
                                               else 1)
        m = DeviceMesh("cpu", ranks.tolist(), mesh_dim_names=("dp", "tp"))
        np.testing.assert_array_equal(m.mesh, ranks)
        self.check_mesh(m, ("dp", "tp"))
        one = DeviceMesh.from_group(m.get_group("tp"), "cpu",
                                    mesh_dim_names=("tp",))
        self.assertEqual(one.get_group().members, m.get_group("tp").members)
        # The N-D form: a mesh from one group per dimension and the ranks.
        two = DeviceMesh.from_group([m.get_group("dp"), m.get_group("tp")],
                                    "cpu", ranks.tolist(),
                                    mesh_dim_names=("a", "b"))
        self.assertEqual(two.shape, m.shape)
        self.assertEqual(two.get_group("a").members,
                         m.get_group("dp").members)
        self.assertEqual(two.get_group("b").members,
                         m.get_group("tp").members)
        with self.assertRaisesRegex(ValueError, "needs mesh"):
            DeviceMesh.from_group([m.get_group("dp"), m.get_group("tp")],
                                  "cpu")


class Buffers(unittest.TestCase):
    """Every kind of buffer the package reads, and the world group of
    torch's module-level functions."""

    def test_buffer_kinds(self):
        me, n = dist.get_rank(), dist.get_world_size()
        want = float(sum(range(n)))
        b = bytearray(np.full(2, me, np.float32).tobytes())
        # The buffer protocol gives bytes: reduce them as uint8.
        x = array.array("i", [me, me])
        dist.all_reduce(x)
        self.assertEqual(list(x), [int(want)] * 2)

        class Iface:
            def __init__(self, a):
                self.a = a
                self.__array_interface__ = a.__array_interface__

        a = np.full(3, me, np.float64)
        dist.all_reduce(Iface(a))
        np.testing.assert_array_equal(a, want)

        class DL:
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        a = np.full(3, me, np.float32)
        dist.all_reduce(DL(a))
        np.testing.assert_array_equal(a, want)
        del b

    def test_device_interface_routes_to_stream_calls(self):
        # __cuda_array_interface__ over host memory: on the CPU backend the
        # stream-ordered call stages "device" buffers through the host, so
        # the numbers are right, and a named stream needs the CUDA driver.
        me, n = dist.get_rank(), dist.get_world_size()
        a = np.full(4, me, np.float32)

        class Cai:
            def __init__(self, a, stream=None):
                self.a = a
                self.__cuda_array_interface__ = {
                    "version": 3, "shape": a.shape, "typestr": "<f4",
                    "data": (a.ctypes.data, False), "strides": None,
                    "stream": stream}

        if dist.get_backend() == "gloo":
            # gloo moves host memory only: the stream-ordered calls say so.
            with self.assertRaisesRegex(dist.MeshError, "gloo backend"):
                dist.all_reduce(Cai(a))
            return
        dist.all_reduce(Cai(a))
        np.testing.assert_array_equal(a, float(sum(range(n))))
        with self.assertRaises(dist.MeshError) as e:
            dist.all_reduce(Cai(a, stream=7))
        self.assertIn("stream", str(e.exception))
        with self.assertRaises(ValueError) as e:
            dist.all_reduce(Cai(a, stream=0))
        self.assertIn("stream 0", str(e.exception))


class Errors(unittest.TestCase):
    """Bad arguments raise before anything is sent, naming the argument;
    the runtime's errors are MeshError with its message and status."""

    @classmethod
    def setUpClass(cls):
        cls.m = init_device_mesh("cpu", (REP, WORLD // REP),
                                 mesh_dim_names=("replicate", "shard"))
        cls.g = cls.m.get_group("shard")

    def test_unknown_dimension(self):
        for call in (lambda: self.m.get_group("shrd"),
                     lambda: self.m["shrd"],
                     lambda: self.m.get_local_rank("shrd")):
            with self.assertRaises(KeyError) as e:
                call()
            self.assertIn("shrd", str(e.exception))
            self.assertIsInstance(e.exception, dist.UnknownDimError)
        with self.assertRaises(IndexError):
            self.m.get_group(2)
        with self.assertRaises(RuntimeError):
            self.m.get_group()

    def test_bad_buffers(self):
        g = self.g
        with self.assertRaisesRegex(ValueError, "tensor is not contiguous"):
            g.all_reduce(np.zeros((4, 4), np.float32)[:, 1])
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        with self.assertRaisesRegex(ValueError, "tensor is read-only"):
            g.all_reduce(ro)
        with self.assertRaisesRegex(ValueError, "tensor is read-only"):
            g.all_reduce(b"abcd")
        with self.assertRaisesRegex(TypeError, "complex128"):
            g.all_reduce(np.zeros(2, np.complex128))
        with self.assertRaisesRegex(TypeError, "tensor is a list"):
            g.all_reduce([1.0, 2.0])
        with self.assertRaisesRegex(ValueError,
                                    "output_tensor has 3 elements"):
            g.all_gather_into_tensor(np.zeros(3, np.float32),
                                     np.zeros(2, np.float32))
        with self.assertRaisesRegex(TypeError, "output_tensor is float64"):
            g.all_gather_into_tensor(np.zeros(2 * g.size()),
                                     np.zeros(2, np.float32))
        with self.assertRaisesRegex(ValueError, "input has 3 elements"):
            g.reduce_scatter_tensor(np.zeros(1, np.float32),
                                    np.zeros(3, np.float32))
        with self.assertRaisesRegex(ValueError, "src 99 is not a member"):
            g.broadcast(np.zeros(2), src=99)
        with self.assertRaisesRegex(ValueError, "exactly one"):
            g.broadcast(np.zeros(2))
        with self.assertRaises(ValueError):
            g.all_reduce(np.zeros(2), op=42)

    def test_runtime_errors(self):
        with self.assertRaises(dist.MeshError) as e:
            init_device_mesh("cpu", (WORLD + 1,), mesh_dim_names=("x",))
        self.assertEqual(e.exception.status, "MESHRT_ERROR_WORLD_SIZE")
        self.assertIn("mpirun", str(e.exception))
        with self.assertRaisesRegex(RuntimeError, "same length"):
            init_device_mesh("cpu", (WORLD,), mesh_dim_names=("a", "b"))
        with self.assertRaises(dist.MeshError) as e:
            self.m._unflatten("shard", (3, 5), ("a", "b"))
        self.assertEqual(e.exception.status, "MESHRT_ERROR_INVALID_ARGUMENT")
        with self.assertRaisesRegex(TypeError, "mesh_shape holds integers"):
            init_device_mesh("cpu", (2.0,))
        with self.assertRaisesRegex(ValueError, "backend_override"):
            init_device_mesh("cpu", (WORLD,), mesh_dim_names=("x",),
                             backend_override={"x": "tpu"})


if __name__ == "__main__":
    unittest.main(verbosity=1)
