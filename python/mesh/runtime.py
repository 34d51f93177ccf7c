"""Loading libraries made by ``mesh-compile --shared`` and calling their
functions with numpy arrays.

    mod = mesh.runtime.load(lib)     # collective: the module's start-up
    y = mod.tp_mlp(x, w1, b1, w2, b2)
    mod.close()                      # collective: its shut-down

Each exported function (``llvm.emit_c_interface``) becomes a method that
takes numpy arrays (or anything numpy reads without copying) and scalars,
checks each against the per-device signature the library records (element
type and shape; a dynamic size takes any), builds the memref descriptors,
calls ``_mlir_ciface_<name>``, and returns numpy arrays that own their
memory (freed with the C library's free when the array goes; a result that
aliases an argument or a constant is copied). Several results come back as
a tuple. A call with a wrong dtype or shape raises before anything runs.
"""

import atexit
import ctypes
import json
import math
import sys
import weakref

import numpy as np

from . import _buffers, _lib  # Loads libmeshrt first (sets its error policy).

__all__ = ["DeviceArray", "Module", "load"]

_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None

# The element types a signature names: numpy dtype and ctypes scalar type.
_TYPES = {
    "f16": (np.float16, None), "f32": (np.float32, ctypes.c_float),
    "f64": (np.float64, ctypes.c_double), "i1": (np.bool_, ctypes.c_bool),
    "i8": (np.int8, ctypes.c_int8), "i16": (np.int16, ctypes.c_int16),
    "i32": (np.int32, ctypes.c_int32), "i64": (np.int64, ctypes.c_int64),
    "u8": (np.uint8, ctypes.c_uint8), "u16": (np.uint16, ctypes.c_uint16),
    "u32": (np.uint32, ctypes.c_uint32), "u64": (np.uint64, ctypes.c_uint64),
    "index": (np.int64, ctypes.c_int64),
}
# memref.get_global's allocated pointer: the buffer is a constant.
_DEAD_BEEF = 0xDEADBEEF


def _descriptor_type(rank, _cache={}):
    """The ctypes struct of a rank-`rank` memref descriptor."""
    if rank not in _cache:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_int64)]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank),
                       ("strides", ctypes.c_int64 * rank)]
        _cache[rank] = type(f"MemRef{rank}", (ctypes.Structure,),
                            {"_fields_": fields})
    return _cache[rank]


def _row_major_strides(shape):
    """The strides, in elements, of a row-major array of `shape`."""
    strides, stride = [0] * len(shape), 1
    for k in reversed(range(len(shape))):
        strides[k] = stride
        stride *= shape[k]
    return tuple(strides)


def _descriptor_layout(shape, strides):
    """A descriptor's sizes and strides, as the ctypes arrays it holds."""
    array = ctypes.c_int64 * len(shape)
    return array(*shape), array(*strides)


def _address(array):
    """The address of a numpy array's first element: through the buffer
    protocol where the array is writable (0.4 us), else its array
    interface (a dict built per access, 2 us)."""
    if array.flags.writeable and array.nbytes:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    return array.__array_interface__["data"][0]


def _shape_str(shape):
    return "(" + ", ".join("?" if d < 0 else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


class _Part:
    """One argument or result of a signature."""

    def __init__(self, desc, fn, what):
        self.dtype_name = desc["dtype"]
        if self.dtype_name not in _TYPES:
            raise TypeError(f"{fn}: {what} has element type "
                            f"{self.dtype_name}, which numpy does not have")
        self.np_dtype = np.dtype(_TYPES[self.dtype_name][0])
        self.scalar_type = _TYPES[self.dtype_name][1]
        self.shape = None if desc["shape"] is None else tuple(desc["shape"])
        self.ctype = (self.scalar_type if self.shape is None
                      else _descriptor_type(len(self.shape)))
        # A static shape's row-major strides and descriptor layout, built
        # once (a call copies the layout into its descriptor).
        self.static_strides = self.static_layout = None
        if self.shape is not None and all(d >= 0 for d in self.shape):
            self.static_strides = _row_major_strides(self.shape)
            self.static_layout = _descriptor_layout(self.shape,
                                                    self.static_strides)
        if self.ctype is None:
            raise TypeError(f"{fn}: {what} is a {self.dtype_name} scalar, "
                            "which ctypes does not have")


class Function:
    """A compiled function of a loaded module."""

    def __init__(self, module, desc):
        self.__name__ = self.name = desc["name"]
        self._module = module
        self.unsupported = desc.get("unsupported")
        if self.unsupported:
            return
        self.args = [_Part(a, self.name, f"argument {i}")
                     for i, a in enumerate(desc["args"])]
        self.results = [_Part(r, self.name, f"result {i}")
                        for i, r in enumerate(desc["results"])]
        self._c = getattr(module._lib, "_mlir_ciface_" + self.name)
        argtypes = [ctypes.POINTER(a.ctype) if a.shape is not None
                    else a.ctype for a in self.args]
        self._out = None
        if len(self.results) == 1 and self.results[0].shape is None:
            self._c.restype = self.results[0].ctype
        else:
            self._c.restype = None
            if len(self.results) == 1:
                self._out = self.results[0].ctype
            elif self.results:
                self._out = type(f"{self.name}_results", (ctypes.Structure,),
                                 {"_fields_": [(f"r{i}", r.ctype) for i, r in
                                               enumerate(self.results)]})
            if self._out is not None:
                argtypes = [ctypes.POINTER(self._out)] + argtypes
        self._c.argtypes = argtypes

    def __repr__(self):
        if self.unsupported:
            return f"<compiled {self.name}: not callable ({self.unsupported})>"
        sig = ", ".join(
            f"{a.dtype_name}{'' if a.shape is None else _shape_str(a.shape)}"
            for a in self.args)
        res = ", ".join(
            f"{r.dtype_name}{'' if r.shape is None else _shape_str(r.shape)}"
            for r in self.results)
        return f"<compiled {self.name}({sig}) -> ({res})>"

    def _check(self, what, part, dtype, shape):
        if dtype != part.np_dtype:
            raise TypeError(f"{what} has dtype {dtype}; the function takes "
                            f"{part.np_dtype} ({part.dtype_name})")
        if len(shape) != len(part.shape) or any(
                w >= 0 and g != w for g, w in zip(shape, part.shape)):
            raise ValueError(f"{what} has shape {tuple(shape)}; this "
                             f"device's part is {_shape_str(part.shape)}")

    def _host_array(self, what, part, value):
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
            if value.dtype == object:
                raise TypeError(f"{what} is not an array")
        self._check(what, part, value.dtype, value.shape)
        if value.flags.c_contiguous:
            return value
        # np.ascontiguousarray would make a 0-d array 1-d.
        return np.require(value, requirements="C")

    def _argument(self, i, part, value, call):
        what = f"{self.name}: argument {i}"
        if part.shape is None:
            if isinstance(value, np.ndarray) and value.ndim:
                raise TypeError(f"{what} is a {part.dtype_name} scalar, not "
                                f"an array of shape {value.shape}")
            try:
                return part.ctype(value.item() if hasattr(value, "item")
                                  else value)
            except TypeError:
                raise TypeError(f"{what} is a {part.dtype_name} scalar, not "
                                f"{type(value).__name__}") from None
        if self._module.device:
            ptr, shape = call.device_argument(self, i, part, value)
        else:
            if hasattr(value, "__cuda_array_interface__"):
                raise TypeError(f"{what} is device memory; this module runs "
                                "on the host")
            value = self._host_array(what, part, value)
            call.keep.append(value)
            ptr, shape = _address(value), value.shape
            call.ranges.append((ptr, value.nbytes))
        if not shape:
            return ctypes.pointer(part.ctype(ptr, ptr, 0))
        sizes, strides = part.static_layout or _descriptor_layout(
            shape, _row_major_strides(shape))
        return ctypes.pointer(part.ctype(ptr, ptr, 0, sizes, strides))

    def _result(self, part, d, call):
        shape = tuple(d.sizes) if part.shape else ()
        strides = tuple(d.strides) if part.shape else ()
        item = part.np_dtype.itemsize
        n = math.prod(shape)
        alloc = d.allocated or 0
        start = (d.aligned or 0) + d.offset * item
        # The extent the strides reach, in elements.
        span = 1 + sum((s - 1) * abs(t) for s, t in zip(shape, strides)) \
            if n else 0
        if self._module.device:
            return call.device_result(part, shape, strides, n, alloc, start,
                                      span)
        owners = call.owners
        aliased = alloc == _DEAD_BEEF or any(
            p <= start < p + size for p, size in call.ranges)
        if n == 0 or aliased:
            out = np.empty(shape, part.np_dtype)
            if n:
                view = np.lib.stride_tricks.as_strided(
                    np.frombuffer((ctypes.c_char * (span * item)).from_address(
                        start), part.np_dtype),
                    shape, tuple(t * item for t in strides))
                out[...] = view
            if not aliased and alloc and alloc not in owners:
                _libc.free(alloc)
                owners[alloc] = None
            return out
        if alloc in owners and owners[alloc] is not None:
            base = owners[alloc]
        else:
            # The buffer from `alloc` on, freed with it.
            base = (ctypes.c_char * (start - alloc + span * item)
                    ).from_address(alloc)
            weakref.finalize(base, _libc.free, alloc)
            owners[alloc] = base
        if strides == (part.static_strides if shape == part.shape
                       else _row_major_strides(shape)):
            # Row-major, as compiled code returns its buffers.
            return np.frombuffer(base, part.np_dtype, count=n,
                                 offset=start - alloc).reshape(shape)
        flat = np.frombuffer(base, np.uint8)
        return np.lib.stride_tricks.as_strided(
            flat[start - alloc:].view(part.np_dtype), shape,
            tuple(t * item for t in strides))

    def __call__(self, *args):
        if self.unsupported:
            raise TypeError(f"{self.name} cannot be called from Python: "
                            f"{self.unsupported}")
        self._module._check_open(self.name)
        if len(args) != len(self.args):
            raise TypeError(f"{self.name} takes {len(self.args)} arguments, "
                            f"not {len(args)}: {self!r}")
        call = _Call(self._module)
        try:
            cargs = [self._argument(i, p, v, call)
                     for i, (p, v) in enumerate(zip(self.args, args))]
            if self._out is None:
                value = _lib.call_compiled(self._c, *cargs)
                return value if self.results else None
            out = self._out()
            _lib.call_compiled(self._c, ctypes.pointer(out), *cargs)
            if len(self.results) == 1:
                return self._result(self.results[0], out, call)
            values = []
            for i, r in enumerate(self.results):
                field = getattr(out, f"r{i}")
                values.append(field if r.shape is None
                              else self._result(r, field, call))
            return tuple(values)
        finally:
            call.release()


def _device_free(ptr):
    # In stream order after the work that used it. A finaliser cannot
    # raise: a failure is reported on stderr.
    if _lib.lib.meshrt_device_free(ptr):
        msg = _lib.lib.meshrt_last_error()
        sys.stderr.write(f"mesh.runtime: freeing device memory at {ptr:#x} "
                         f"failed: {msg.decode('utf-8', 'replace')}\n")


def _device_alloc(nbytes):
    p = ctypes.c_void_p()
    _lib.check(_lib.lib.meshrt_device_alloc(nbytes, ctypes.byref(p)))
    return p.value or 0


class _DeviceAllocation:
    """A device buffer freed (meshrt_device_free) when the last DeviceArray
    on it goes."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr):
        self.ptr = ptr
        weakref.finalize(self, _device_free, ptr)


class DeviceArray:
    """A result of a GPU module's function: memory on this process's GPU,
    freed when the last array on it goes. Hand it to another compiled
    function as is, to CuPy, Numba or torch (``torch.as_tensor(a,
    device="cuda")``) through ``__cuda_array_interface__`` (version 3, on
    the runtime's shared stream), or copy it to the host with ``numpy()``.
    """

    def __init__(self, allocation, ptr, shape, strides, dtype, stream):
        self._allocation = allocation  # Keeps the buffer alive.
        self.ptr, self.shape, self.dtype = ptr, shape, np.dtype(dtype)
        self._strides = strides  # In elements.
        self._stream = stream

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    @property
    def strides(self):
        """In bytes, as numpy's."""
        return tuple(t * self.dtype.itemsize for t in self._strides)

    def _contiguous(self):
        acc = 1
        for n, t in zip(reversed(self.shape), reversed(self._strides)):
            if n > 1 and t != acc:
                return False
            acc *= n
        return True

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str,
                "data": (self.ptr, False), "version": 3,
                "strides": None if self._contiguous() else self.strides,
                "stream": self._stream}

    def numpy(self):
        """A host copy (waits for the device)."""
        out = np.empty(self.shape, self.dtype)
        if not self.size:
            return out
        span = 1 + sum((n - 1) * abs(t)
                       for n, t in zip(self.shape, self._strides))
        host = out if self._contiguous() else np.empty(span, self.dtype)
        _lib.check(_lib.lib.meshrt_device_copy(
            host.ctypes.data, self.ptr, span * self.dtype.itemsize, None))
        _lib.check(_lib.lib.meshrt_stream_synchronize(None))
        if host is not out:
            out[...] = np.lib.stride_tricks.as_strided(host, self.shape,
                                                       self.strides)
        return out

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self):
        return (f"DeviceArray(shape={self.shape}, dtype={self.dtype}, "
                f"device memory at {self.ptr:#x})")


class _Call:
    """What one call holds: host arrays and device views kept alive for it,
    the device ranges it was handed, the device copies it made of host
    arguments (freed after it unless a result is one), and the
    allocations its results share."""

    def __init__(self, module):
        self.module = module
        self.keep = []
        self.ranges = []   # (ptr, nbytes) of the host arrays handed over.
        self.given = []    # (ptr, nbytes): device memory the caller owns.
        self.temps = {}    # ptr -> nbytes: device copies of host arguments.
        self.owners = {}   # allocated pointer -> its owner.

    def device_argument(self, fn, i, part, value):
        what = f"{fn.name}: argument {i}"
        stream = self.module.stream
        view = _buffers.device_view(value, fn.name, f"argument {i}",
                                    consumer_stream=stream)
        if view is None:
            # Host data: copied to the device for the call.
            host = fn._host_array(what, part, value)
            self.keep.append(host)
            ptr = _device_alloc(host.nbytes) if host.nbytes else 0
            if ptr:
                self.temps[ptr] = host.nbytes
                _lib.check(_lib.lib.meshrt_device_copy(
                    ptr, host.ctypes.data, host.nbytes, None))
            return ptr, host.shape
        if view.dtype is None:
            code, bits = view.dl
            raise TypeError(f"{what} has a DLPack dtype (code {code}, {bits} "
                            f"bits); the function takes {part.np_dtype} "
                            f"({part.dtype_name})")
        fn._check(what, part, view.dtype, view.shape)
        self.keep.append(view.owner)
        if view.stream is not None and view.stream != stream:
            _lib.check(_lib.lib.meshrt_stream_wait_stream(None, view.stream))
        self.given.append((view.ptr, view.count * view.dtype.itemsize))
        return view.ptr, view.shape

    def device_result(self, part, shape, strides, n, alloc, start, span):
        item = part.np_dtype.itemsize
        stream = self.module.stream
        if n == 0:
            if alloc and alloc not in self.owners and alloc not in \
                    self.temps and not self._given(alloc):
                self.owners[alloc] = _DeviceAllocation(alloc)
            return DeviceArray(None, 0, shape, strides, part.np_dtype, stream)
        if alloc == _DEAD_BEEF or self._given(start):
            # A constant, or the caller's own buffer: a copy of its own.
            ptr = _device_alloc(span * item)
            _lib.check(_lib.lib.meshrt_device_copy(ptr, start, span * item,
                                                   None))
            return DeviceArray(_DeviceAllocation(ptr), ptr, shape, strides,
                               part.np_dtype, stream)
        owner = self.owners.get(alloc)
        if owner is None:
            # Compiled code's allocation, or a device copy of a host
            # argument that the result is: the array owns it now.
            self.temps.pop(alloc, None)
            owner = self.owners[alloc] = _DeviceAllocation(alloc)
        return DeviceArray(owner, start, shape, strides, part.np_dtype,
                           stream)

    def _given(self, p):
        return any(b <= p < b + size for b, size in self.given if size)

    def release(self):
        for ptr in self.temps:
            _device_free(ptr)
        self.temps.clear()


_open_modules = weakref.WeakSet()


def _close_at_exit():
    # Shut-downs are collective: not when the process ends on an error.
    if not _lib.exiting_on_error:
        for m in list(_open_modules):
            m.close()


atexit.register(_close_at_exit)


class Module:
    """A loaded library: its functions as attributes (``functions`` maps
    their names to them). Loading runs the module's start-up and ``close``
    its shut-down; both are collective (every rank calls them)."""

    def __init__(self, path):
        try:
            self._lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise ImportError(f"mesh.runtime: cannot load '{path}': {e}") \
                from None
        try:
            raw = ctypes.c_char.in_dll(self._lib, "mesh_module_signature")
        except ValueError:
            raise ImportError(
                f"mesh.runtime: '{path}' has no mesh_module_signature; build "
                "it with mesh-compile --shared") from None
        self.signature = json.loads(
            ctypes.string_at(ctypes.addressof(raw)).decode())
        if self.signature.get("version") != 1:
            raise ImportError(f"mesh.runtime: '{path}' has signature version "
                              f"{self.signature.get('version')}; this "
                              "package reads version 1")
        self.device = self.signature["memory"] == "device"
        self.stream = None
        self.path = path
        self.functions = {}
        for desc in self.signature["functions"]:
            fn = Function(self, desc)
            self.functions[fn.name] = fn
            if not hasattr(self, fn.name):
                setattr(self, fn.name, fn)
        # A module without meshes has no start-up or shut-down to run.
        init = self._entry(self.signature["init"])
        self._fini = self._entry(self.signature["fini"])
        if self.device:
            self._need_gpu()
        if init:
            _lib.call_compiled(init)
        if self.device:
            self.stream = self._gpu_stream()
        self._open = True
        _open_modules.add(self)

    def _entry(self, name):
        try:
            fn = getattr(self._lib, name)
        except AttributeError:
            return None
        fn.restype, fn.argtypes = None, []
        return fn

    def _need_gpu(self):
        """Raises, before the start-up (which would end the job), where this
        process has no GPU."""
        count = ctypes.c_int64()
        status = _lib.lib.meshrt_gpu_device_count(ctypes.byref(count))
        why = None
        if status:
            msg = _lib.lib.meshrt_last_error()
            why = msg.decode("utf-8", "replace") if msg else f"status {status}"
        elif count.value < 1:
            why = ("the CUDA driver shows no device (check "
                   "CUDA_VISIBLE_DEVICES)")
        if why:
            raise ImportError(
                f"mesh.runtime: '{self.path}' was built for the GPU "
                f"(--target=cuda), and this process has none: {why}")

    def _gpu_stream(self):
        """The runtime's shared stream, which compiled GPU code runs on (the
        device chosen by the start-up's NCCL backend, else by the
        launcher's node-local rank)."""
        dev = ctypes.c_int64()
        stream = ctypes.c_void_p()
        try:
            _lib.check(_lib.lib.meshrt_gpu_select_device(ctypes.byref(dev)))
            _lib.check(_lib.lib.meshrt_gpu_stream(ctypes.byref(stream)))
        except _lib.MeshError as e:
            raise ImportError(
                f"mesh.runtime: '{self.path}' was built for the GPU "
                f"(--target=cuda), and this process has none: {e}") from None
        return stream.value

    def _check_open(self, name):
        if not self._open:
            raise RuntimeError(f"{name}: the module '{self.path}' is closed")

    def close(self):
        """Runs the module's shut-down (collective); later calls raise."""
        if getattr(self, "_open", False):
            self._open = False
            if self._fini:
                _lib.call_compiled(self._fini)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"<mesh.runtime.Module '{self.path}': "
                f"{', '.join(self.functions)}>")


def load(path):
    """Loads the library at ``path`` (from ``mesh-compile --shared`` or
    ``mesh.compiler.compile_file``) and runs its start-up (collective)."""
    return Module(path)
