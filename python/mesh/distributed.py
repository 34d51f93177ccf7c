"""The runtime with PyTorch's names: ``init_device_mesh``, ``DeviceMesh``,
groups and their collectives.

    from mesh.distributed import init_device_mesh, ReduceOp
    m = init_device_mesh("cpu", (2, 4), mesh_dim_names=("replicate", "shard"))
    g = m.get_group("shard")
    g.all_reduce(x, op=ReduceOp.AVG)        # in place, on a numpy array

Names, argument order and defaults follow ``torch.distributed.device_mesh``
and ``torch.distributed``; docs/python.md has the table. Buffers are numpy
arrays, anything with the buffer protocol or ``__array_interface__``, a
DLPack tensor, or device memory (``__cuda_array_interface__``, CUDA DLPack),
which goes to the stream-ordered collectives on the producer's stream.
Errors are exceptions: MeshError (the runtime's message and status) and
TypeError/ValueError for arguments, raised before anything is sent.
"""

import atexit
import ctypes
import enum
import sys

import numpy as np

from . import _buffers, _lib
from ._lib import (BACKENDS, MeshError, MeshTimeoutError, NotMemberError,
                   UnknownDimError, check, int64s, lib, out_string, strings)

__all__ = [
    "DeviceMesh", "Group", "MeshError", "MeshTimeoutError", "NotMemberError",
    "ReduceOp", "UnknownDimError", "all_gather_into_tensor", "all_reduce",
    "all_to_all_single", "barrier", "broadcast", "destroy_process_group",
    "get_backend",
    "get_process_group_ranks", "get_rank", "get_world_size",
    "init_device_mesh", "init_process_group", "is_initialized",
    "reduce_scatter_tensor",
]


class ReduceOp(enum.IntEnum):
    """torch.distributed.ReduceOp's members the runtime has (meshrt_reduce_op
    codes). AVG divides the sum by the group size; the bitwise ones are for
    integers on the CPU backends."""
    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    AVG = 4
    BAND = 5
    BOR = 6
    BXOR = 7


# ---------------------------------------------------------------------------
# The process group: start, identity, end
# ---------------------------------------------------------------------------

def _finalize_at_exit():
    # Finalizing is collective: a process that ends on an uncaught error
    # leaves the runtime initialised, so the job ends with the runtime's
    # message instead of peers waiting in a finalize that never completes.
    if _lib.exiting_on_error:
        return
    runtime = sys.modules.get("mesh.runtime")
    if runtime is not None:
        runtime._close_at_exit()  # Loaded modules first: their shut-downs.
    if lib.meshrt_is_initialized():
        check(lib.meshrt_finalize())


atexit.register(_finalize_at_exit)


def init_process_group(backend=None):
    """Starts the runtime (collective over the world): ``backend`` is "mpi",
    "gloo", "nccl" or None (MESHRT_BACKEND, else NCCL where a GPU is
    visible, else the CPU backend). Starting it twice is an error, as in
    torch."""
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"init_process_group: backend '{backend}' is not "
                         f"one of {sorted(k for k in BACKENDS if k != 'auto')}")
    check(lib.meshrt_init(BACKENDS[backend or "auto"]))
    _ensure_world()


def is_initialized():
    """True once the runtime has started (and until it is finalized)."""
    return bool(lib.meshrt_is_initialized())


def destroy_process_group():
    """Finalizes the runtime (collective): every rank calls it, or none."""
    check(lib.meshrt_finalize())


def _world_int(fn):
    v = ctypes.c_int64()
    check(fn(ctypes.byref(v)))
    return v.value


def get_rank():
    """This process's world rank."""
    return _world_int(lib.meshrt_world_rank)


def get_world_size():
    """The number of processes."""
    return _world_int(lib.meshrt_world_size)


# ---------------------------------------------------------------------------
# Groups and their collectives
# ---------------------------------------------------------------------------

_BACKEND_NAMES = {v: k for k, v in BACKENDS.items()}


def _pair(op, a, a_name, b, b_name):
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: {a_name} is {_buffers.NAMES[a.dtype]} but "
                        f"{b_name} is {_buffers.NAMES[b.dtype]}")
    if a.device != b.device:
        raise ValueError(f"{op}: {a_name} and {b_name} must both be in host "
                         "memory or both on the GPU")


def _blocks(op, whole, whole_name, block, block_name, n):
    """`whole` must hold one `block` per member of a group of `n`."""
    if whole.count != block.count * n:
        raise ValueError(
            f"{op}: {whole_name} has {whole.count} elements; it needs "
            f"{block.count * n} ({block_name}'s {block.count} times the "
            f"group's {n} member{'s' if n != 1 else ''})")


def _stream(op, *bufs):
    streams = {b.stream for b in bufs if b.stream is not None}
    if len(streams) > 1:
        raise ValueError(f"{op}: the buffers name different streams "
                         f"({sorted(streams)}); synchronise them first")
    return streams.pop() if streams else None


class Group:
    """The communicator of a mesh's dimensions (torch's ProcessGroup as
    DeviceMesh.get_group returns it). Collectives are blocking on host
    buffers and stream-ordered on device buffers."""

    __slots__ = ("_handle", "_mesh")

    def __init__(self, handle, mesh=None):
        self._handle = handle
        self._mesh = mesh  # Keeps the mesh (and so its runtime) referenced.

    def _int(self, fn):
        v = ctypes.c_int64()
        check(fn(self._handle, ctypes.byref(v)))
        return v.value

    def rank(self):
        """This process's rank in the group."""
        return self._int(lib.meshrt_comm_rank)

    def size(self):
        """The number of members."""
        return self._int(lib.meshrt_comm_size)

    @property
    def members(self):
        """The members' world ranks, in group-rank order."""
        n = self.size()
        out = (ctypes.c_int64 * max(1, n))()
        check(lib.meshrt_comm_members(self._handle, out))
        return [out[i] for i in range(n)]

    def backend(self):
        """"mpi", "nccl" or "gloo": what the group runs on."""
        v = ctypes.c_int32()
        check(lib.meshrt_comm_backend(self._handle, ctypes.byref(v)))
        return _BACKEND_NAMES.get(v.value, str(v.value))

    @property
    def handle(self):
        """The C ABI's meshrt_comm_t, as an int."""
        return self._handle

    def __repr__(self):
        return f"<mesh.distributed.Group of ranks {self.members}>"

    def __eq__(self, other):
        return isinstance(other, Group) and other._handle == self._handle

    def __hash__(self):
        return hash(self._handle)

    def all_reduce(self, tensor, op=ReduceOp.SUM):
        """Reduces ``tensor`` over the group, in place."""
        b = _buffers.buffer(tensor, "all_reduce", "tensor", writable=True)
        if op.__class__ is not ReduceOp:
            op = ReduceOp(op)
        if b.device:
            check(lib.meshrt_all_reduce_on_stream(
                self._handle, b.ptr, b.ptr, b.count, b.dtype, op, b.stream))
        else:
            check(lib.meshrt_all_reduce(self._handle, b.ptr, b.ptr, b.count,
                                        b.dtype, op))

    def all_gather_into_tensor(self, output_tensor, input_tensor):
        """``output_tensor`` becomes every member's ``input_tensor``,
        concatenated in group-rank order."""
        op = "all_gather_into_tensor"
        o = _buffers.buffer(output_tensor, op, "output_tensor", True)
        i = _buffers.buffer(input_tensor, op, "input_tensor", False)
        _pair(op, o, "output_tensor", i, "input_tensor")
        _blocks(op, o, "output_tensor", i, "input_tensor", self.size())
        if o.device:
            check(lib.meshrt_all_gather_on_stream(
                self._handle, i.ptr, o.ptr, i.count, i.dtype,
                _stream(op, o, i)))
        else:
            check(lib.meshrt_all_gather(self._handle, i.ptr, o.ptr, i.count,
                                        i.dtype))

    def reduce_scatter_tensor(self, output, input, op=ReduceOp.SUM):
        """``output`` becomes the reduction over the group of block g (this
        member's group rank) of ``input``'s equal blocks."""
        name = "reduce_scatter_tensor"
        o = _buffers.buffer(output, name, "output", True)
        i = _buffers.buffer(input, name, "input", False)
        _pair(name, o, "output", i, "input")
        _blocks(name, i, "input", o, "output", self.size())
        op = ReduceOp(op)
        if o.device:
            check(lib.meshrt_reduce_scatter_on_stream(
                self._handle, i.ptr, o.ptr, o.count, o.dtype, op,
                _stream(name, o, i)))
        else:
            check(lib.meshrt_reduce_scatter(self._handle, i.ptr, o.ptr,
                                            o.count, o.dtype, op))

    def all_to_all_single(self, output, input, output_split_sizes=None,
                          input_split_sizes=None):
        """Block j of ``input`` goes to group rank j, where it lands in
        block g of ``output``: equal blocks (split sizes None, or all
        equal)."""
        name = "all_to_all_single"
        o = _buffers.buffer(output, name, "output", True)
        i = _buffers.buffer(input, name, "input", False)
        _pair(name, o, "output", i, "input")
        n = self.size()
        if o.count != i.count:
            raise ValueError(f"{name}: output has {o.count} elements and "
                             f"input {i.count}; they must be equal")
        if i.count % n:
            raise ValueError(f"{name}: input's {i.count} elements do not "
                             f"cut into the group's {n} equal blocks")
        rows = (np.shape(input) or (1,))[0]
        for what, sizes in (("output_split_sizes", output_split_sizes),
                            ("input_split_sizes", input_split_sizes)):
            if sizes is not None and (len(sizes) != n or
                                      len(set(sizes)) != 1 or
                                      sizes[0] * n != rows):
                raise ValueError(
                    f"{name}: {what} {list(sizes)} are not {n} equal parts "
                    f"of the {rows} rows; the runtime moves equal blocks")
        if o.device:
            check(lib.meshrt_all_to_all_on_stream(
                self._handle, i.ptr, o.ptr, i.count // n, i.dtype,
                _stream(name, o, i)))
        else:
            check(lib.meshrt_all_to_all(self._handle, i.ptr, o.ptr,
                                        i.count // n, i.dtype))

    def broadcast(self, tensor, src=None, group_src=None):
        """``tensor`` of the member at world rank ``src`` (or group rank
        ``group_src``, as in torch; exactly one of them) to every member, in
        place."""
        if (src is None) == (group_src is None):
            raise ValueError("broadcast: give exactly one of src (a world "
                             "rank) and group_src (a rank in the group)")
        members = self.members
        if src is not None:
            if src not in members:
                raise ValueError(f"broadcast: src {src} is not a member of "
                                 f"the group (world ranks {members})")
            root = members.index(src)
        else:
            if not 0 <= group_src < len(members):
                raise ValueError(f"broadcast: group_src {group_src} is out "
                                 f"of range for a group of {len(members)}")
            root = group_src
        b = _buffers.buffer(tensor, "broadcast", "tensor", writable=True)
        if b.device:
            check(lib.meshrt_broadcast_on_stream(self._handle, b.ptr, b.count,
                                                 b.dtype, root, b.stream))
        else:
            check(lib.meshrt_broadcast(self._handle, b.ptr, b.count, b.dtype,
                                       root))

    def barrier(self):
        """Returns once every member has entered it."""
        check(lib.meshrt_barrier(self._handle))


# ---------------------------------------------------------------------------
# DeviceMesh
# ---------------------------------------------------------------------------


def _names_tuple(names, what):
    if isinstance(names, str):
        return (names,)
    names = tuple(names)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what}: dimension names are strings, not "
                            f"{type(n).__name__} ({n!r})")
    return names


class DeviceMesh:
    """A mesh of processes with named dimensions (torch's DeviceMesh).

    ``DeviceMesh(device_type, mesh, mesh_dim_names=...)`` builds one over the
    world ranks of ``mesh`` (a nested list or array); ``init_device_mesh``
    over the whole world. Both are collective: every rank calls them."""

    def __init__(self, device_type, mesh, *, mesh_dim_names=None,
                 backend_override=None, _handle=None, _named=True):
        if _handle is not None:
            self._handle, self._named = _handle, _named
            return
        ranks = np.asarray(mesh)
        if ranks.dtype.kind not in "iu":
            raise TypeError("DeviceMesh: mesh holds world ranks (integers), "
                            f"not {ranks.dtype}")
        self._handle = _create(device_type, ranks.shape, mesh_dim_names,
                               [int(r) for r in ranks.reshape(-1)],
                               backend_override, "DeviceMesh")
        self._named = mesh_dim_names is not None

    def __del__(self):
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            lib.meshrt_dm_free(h)

    # -- what it is -------------------------------------------------------
    def _int(self, fn):
        v = ctypes.c_int64()
        check(fn(self._handle, ctypes.byref(v)))
        return v.value

    @property
    def ndim(self):
        return self._int(lib.meshrt_dm_ndim)

    @property
    def shape(self):
        n = self.ndim
        out = (ctypes.c_int64 * max(1, n))()
        check(lib.meshrt_dm_shape(self._handle, out))
        return tuple(out[i] for i in range(n))

    def size(self, mesh_dim=None):
        """The number of processes, or the size of dimension ``mesh_dim``."""
        shape = self.shape
        if mesh_dim is None:
            return int(np.prod(shape, dtype=np.int64))
        return shape[self._dim_index(mesh_dim, "size")]

    @property
    def _dim_names(self):
        names = out_string(lib.meshrt_dm_dim_names, self._handle)
        return tuple(names.split("\0")[:-1]) if names else ()

    @property
    def mesh_dim_names(self):
        """The dimension names, or None for a mesh made without them (as in
        torch; its dimensions still answer to "dim0", "dim1", ...)."""
        return self._dim_names if self._named else None

    @property
    def device_type(self):
        return out_string(lib.meshrt_dm_device_type, self._handle)

    @property
    def mesh(self):
        """The world ranks, as an array of this mesh's shape."""
        shape = self.shape
        n = int(np.prod(shape, dtype=np.int64))
        out = np.empty(n, dtype=np.int64)
        check(lib.meshrt_dm_ranks(
            self._handle, out.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))))
        return out.reshape(shape)

    def __repr__(self):
        return out_string(lib.meshrt_dm_repr, self._handle)

    def __eq__(self, other):
        if not isinstance(other, DeviceMesh):
            return NotImplemented
        v = ctypes.c_int64()
        check(lib.meshrt_dm_equal(self._handle, other._handle,
                                  ctypes.byref(v)))
        return bool(v.value)

    def __hash__(self):
        v = ctypes.c_uint64()
        check(lib.meshrt_dm_hash(self._handle, ctypes.byref(v)))
        return hash(v.value)

    # -- this process -----------------------------------------------------
    def get_rank(self):
        """This process's world rank."""
        return get_rank()

    def get_coordinate(self):
        """This process's coordinates, or None outside the mesh."""
        n = self.ndim
        member = ctypes.c_int64()
        out = (ctypes.c_int64 * max(1, n))()
        check(lib.meshrt_dm_coordinate(self._handle, ctypes.byref(member),
                                       out))
        return [out[i] for i in range(n)] if member.value else None

    def get_local_rank(self, mesh_dim=None):
        """This process's coordinate along ``mesh_dim`` (a name or number;
        None on a 1-D mesh)."""
        name = self._dim_name(mesh_dim, "get_local_rank")
        v = ctypes.c_int64()
        check(lib.meshrt_dm_local_rank(self._handle, name.encode(),
                                       ctypes.byref(v)))
        return v.value

    # -- groups -----------------------------------------------------------
    def _dim_index(self, mesh_dim, op):
        names = self._dim_names
        if isinstance(mesh_dim, (int, np.integer)) and \
                not isinstance(mesh_dim, bool):
            i = int(mesh_dim)
            if not -len(names) <= i < len(names):
                raise IndexError(f"DeviceMesh.{op}: dimension {i} is out of "
                                 f"range for a {len(names)}-D mesh")
            return i % len(names)
        if isinstance(mesh_dim, str):
            if mesh_dim not in names:
                raise UnknownDimError(
                    "MESHRT_ERROR_UNKNOWN_AXIS",
                    f"DeviceMesh.{op}: mesh dimension '{mesh_dim}' does not "
                    f"exist; the mesh has {names}")
            return names.index(mesh_dim)
        raise TypeError(f"DeviceMesh.{op}: a mesh dimension is a name or a "
                        f"number, not {type(mesh_dim).__name__}")

    def _dim_name(self, mesh_dim, op):
        names = self._dim_names
        if mesh_dim is None:
            if len(names) != 1:
                raise RuntimeError(
                    f"DeviceMesh.{op}: the mesh has {len(names)} dimensions; "
                    "name one (mesh_dim)")
            return names[0]
        if isinstance(mesh_dim, str):
            return mesh_dim  # The runtime names unknown ones.
        return names[self._dim_index(mesh_dim, op)]

    def get_group(self, mesh_dim=None):
        """The group along ``mesh_dim`` (a name or number; None on a 1-D
        mesh; a list of names: the group along those dimensions together)."""
        if isinstance(mesh_dim, (list, tuple)):
            dims = [self._dim_name(d, "get_group") for d in mesh_dim]
        else:
            dims = [self._dim_name(mesh_dim, "get_group")]
        h = ctypes.c_void_p()
        check(lib.meshrt_dm_get_group(self._handle, len(dims), strings(dims),
                                      ctypes.byref(h)))
        return Group(h.value, self)

    def get_all_groups(self):
        """One group per dimension, in order."""
        return [self.get_group(i) for i in range(self.ndim)]

    # -- views ------------------------------------------------------------
    def _derived(self, fn, *args):
        h = ctypes.c_void_p()
        check(fn(*args, ctypes.byref(h)))
        return DeviceMesh(None, None, _handle=h.value)

    def __getitem__(self, mesh_dim_names):
        """The sub-mesh of these dimensions, in this order."""
        names = _names_tuple(mesh_dim_names, "DeviceMesh[...]")
        return self._derived(lib.meshrt_dm_slice, self._handle, len(names),
                             strings(names))

    def _flatten(self, mesh_dim_name=None):
        """All dimensions merged into one, named ``mesh_dim_name`` (default:
        the names joined by "_"). Collective."""
        name = mesh_dim_name.encode() if mesh_dim_name is not None else None
        return self._derived(lib.meshrt_dm_flatten, self._handle, name, 0,
                             None)

    flatten = _flatten

    def _unflatten(self, dim, mesh_sizes, mesh_dim_names):
        """Dimension ``dim`` split into dimensions of ``mesh_sizes`` named
        ``mesh_dim_names``, in its place. Collective."""
        name = self._dim_name(dim, "_unflatten")
        sizes = [int(s) for s in mesh_sizes]
        names = _names_tuple(mesh_dim_names, "DeviceMesh._unflatten")
        if len(sizes) != len(names):
            raise ValueError(f"DeviceMesh._unflatten: {len(sizes)} sizes but "
                             f"{len(names)} names")
        return self._derived(lib.meshrt_dm_unflatten, self._handle,
                             name.encode(), len(sizes), int64s(sizes),
                             strings(names))

    unflatten = _unflatten

    @staticmethod
    def _concatenate(device_mesh_list):
        """The dimensions of sub-meshes of one mesh, side by side."""
        meshes = list(device_mesh_list)
        arr = (ctypes.c_void_p * max(1, len(meshes)))(
            *[m._handle for m in meshes])
        h = ctypes.c_void_p()
        check(lib.meshrt_dm_concatenate(len(meshes), arr, ctypes.byref(h)))
        return DeviceMesh(None, None, _handle=h.value)

    @staticmethod
    def from_group(group, device_type, mesh=None, *, mesh_dim_names=None):
        """A mesh from existing groups, as torch's from_group: one group
        makes a 1-D mesh over its members (local; ``mesh``, if given, must
        be its ranks); a list of groups, one per dimension, with ``mesh``
        (the rank array; its shape is the mesh's) makes an N-D mesh
        (collective over the world; a rank outside the mesh passes [])."""
        groups = list(group) if isinstance(group, (list, tuple)) else \
            [group]
        for g in groups:
            if not isinstance(g, Group):
                raise TypeError("DeviceMesh.from_group: groups are "
                                "mesh.distributed.Group, not "
                                f"{type(g).__name__}")
        names = None
        if mesh_dim_names is not None:
            names = _names_tuple(mesh_dim_names, "DeviceMesh.from_group")
        arr = (ctypes.c_void_p * max(1, len(groups)))(
            *[g.handle for g in groups])
        h = ctypes.c_void_p()
        if not isinstance(group, (list, tuple)) or \
                (len(groups) == 1 and mesh is None):
            if names is not None and len(names) != 1:
                raise ValueError("DeviceMesh.from_group: one group makes a "
                                 f"1-D mesh, but {len(names)} names were "
                                 "given")
            if mesh is not None and \
                    list(np.asarray(mesh).reshape(-1)) != groups[0].members:
                raise ValueError(
                    f"DeviceMesh.from_group: mesh "
                    f"{np.asarray(mesh).tolist()} is not the group's ranks "
                    f"{groups[0].members}")
            check(lib.meshrt_dm_from_group(
                1, arr, device_type.encode(), 0, None, 0, None,
                strings(names) if names else None, ctypes.byref(h)))
            return DeviceMesh(None, None, _handle=h.value,
                              _named=names is not None)
        if mesh is None:
            raise ValueError("DeviceMesh.from_group: a list of groups needs "
                             "mesh, the rank array of the mesh they form")
        ranks = np.asarray(mesh)
        if names is not None and len(names) != ranks.ndim:
            raise ValueError(f"DeviceMesh.from_group: mesh has {ranks.ndim} "
                             f"dimensions but {len(names)} names were given")
        flat = [int(r) for r in ranks.reshape(-1)]
        check(lib.meshrt_dm_from_group(
            len(groups), arr, device_type.encode(), len(flat), int64s(flat),
            ranks.ndim, int64s(ranks.shape),
            strings(names) if names else None, ctypes.byref(h)))
        return DeviceMesh(None, None, _handle=h.value,
                          _named=names is not None)


def _create(device_type, shape, mesh_dim_names, ranks, backend_override,
            op):
    if not isinstance(device_type, str):
        raise TypeError(f"{op}: device_type is a string ('cpu', 'cuda'), "
                        f"not {type(device_type).__name__}")
    shape = tuple(shape)
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}: mesh_shape holds integers, not "
                            f"{type(s).__name__} ({s!r})")
    names = None
    if mesh_dim_names is not None:
        names = _names_tuple(mesh_dim_names, op)
        if len(names) != len(shape):
            raise RuntimeError(f"{op}: mesh_shape {shape} and mesh_dim_names "
                               f"{names} should have the same length")
    dims, kinds = [], []
    for dim, backend in (backend_override or {}).items():
        if isinstance(backend, tuple):
            backend = backend[0]
        if backend is None:
            continue
        if backend not in BACKENDS:
            raise ValueError(f"{op}: backend_override[{dim!r}] is "
                             f"'{backend}', not one of "
                             f"{sorted(k for k in BACKENDS if k != 'auto')}")
        if isinstance(dim, (int, np.integer)):
            if not -len(shape) <= dim < len(shape):
                raise IndexError(f"{op}: backend_override dimension {dim} is "
                                 f"out of range for a {len(shape)}-D mesh")
            dim = (names[dim] if names else f"dim{dim % len(shape)}")
        dims.append(dim)
        kinds.append(BACKENDS[backend])
    h = ctypes.c_void_p()
    check(lib.meshrt_dm_create(
        device_type.encode(), len(shape), int64s(shape),
        strings(names) if names else None, len(ranks) if ranks else 0,
        int64s(ranks) if ranks else None, len(dims), strings(dims),
        (ctypes.c_int32 * max(1, len(kinds)))(*kinds), None,
        ctypes.byref(h)))
    _ensure_world()
    return h.value


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None,
                     backend_override=None):
    """A mesh of ``mesh_shape`` over the whole world (one size may be -1),
    like torch's ``init_device_mesh``; starts the runtime on first use.
    ``backend_override`` maps dimensions (names or numbers) to "mpi",
    "gloo" or "nccl". Collective."""
    if isinstance(mesh_shape, (int, np.integer)):
        mesh_shape = (mesh_shape,)
    h = _create(device_type, mesh_shape, mesh_dim_names, None,
                backend_override, "init_device_mesh")
    return DeviceMesh(None, None, _handle=h, _named=mesh_dim_names is not None)


# ---------------------------------------------------------------------------
# torch.distributed's functions, on a group (default: the world)
# ---------------------------------------------------------------------------

_world = None


def _ensure_world():
    """Declares the world mesh of the module-level functions (collective).
    It is made right after every collective start (init_process_group, the
    first mesh), where every rank is, so that a later call on one rank only
    (get_backend()) never waits for the others."""
    global _world
    if _world is None:
        h = ctypes.c_void_p()
        check(lib.meshrt_dm_create(b"auto", 1, int64s([-1]),
                                   strings(["world"]), 0, None, 0, None,
                                   None, b"__python_world",
                                   ctypes.byref(h)))
        _world = DeviceMesh(None, None, _handle=h.value)


def _group(group):
    if group is not None:
        return group
    if _world is None:
        if not is_initialized():
            raise RuntimeError(
                "mesh.distributed: the runtime is not started; call "
                "init_process_group() or init_device_mesh() first")
        _ensure_world()  # The runtime was started outside this package.
    return _world.get_group()


def get_backend(group=None):
    """"mpi", "gloo" or "nccl": what the group (default: the world) runs
    on."""
    return _group(group).backend()


def get_process_group_ranks(group):
    """The group's members' world ranks, in group-rank order."""
    return group.members


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    _group(group).all_reduce(tensor, op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None):
    _group(group).all_gather_into_tensor(output_tensor, input_tensor)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None):
    _group(group).reduce_scatter_tensor(output, input, op)


def all_to_all_single(output, input, output_split_sizes=None,
                      input_split_sizes=None, group=None):
    _group(group).all_to_all_single(output, input, output_split_sizes,
                                    input_split_sizes)


def broadcast(tensor, src=None, group=None, group_src=None):
    _group(group).broadcast(tensor, src=src, group_src=group_src)


def barrier(group=None):
    _group(group).barrier()
