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
import weakref

import numpy as np

from . import _lib  # Loads libmeshrt first (and sets its error policy).

__all__ = ["Module", "load"]

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

    def _argument(self, i, part, value, keep):
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
        if not isinstance(value, np.ndarray):
            if hasattr(value, "__cuda_array_interface__"):
                raise TypeError(f"{what} is device memory; this module runs "
                                "on the host")
            value = np.asarray(value)
            if value.dtype == object:
                raise TypeError(f"{what} is not an array")
        if value.dtype != part.np_dtype:
            raise TypeError(f"{what} has dtype {value.dtype}; the function "
                            f"takes {part.np_dtype} ({part.dtype_name})")
        if value.ndim != len(part.shape) or any(
                w >= 0 and g != w for g, w in zip(value.shape, part.shape)):
            raise ValueError(f"{what} has shape {value.shape}; this device's "
                             f"part is {_shape_str(part.shape)}")
        value = np.ascontiguousarray(value)
        keep.append(value)
        d = part.ctype()
        ptr = value.__array_interface__["data"][0]
        d.allocated = d.aligned = ptr
        d.offset = 0
        stride = 1
        for k in reversed(range(value.ndim)):
            d.sizes[k] = value.shape[k]
            d.strides[k] = stride
            stride *= value.shape[k]
        return ctypes.pointer(d)

    def _result(self, part, d, keep, owners):
        rank = len(part.shape)
        shape = tuple(d.sizes[k] for k in range(rank))
        strides = tuple(d.strides[k] for k in range(rank))
        item = part.np_dtype.itemsize
        n = int(np.prod(shape, dtype=np.int64))
        alloc = d.allocated or 0
        start = (d.aligned or 0) + d.offset * item
        # The extent the strides reach, in elements.
        span = 1 + sum((s - 1) * abs(t) for s, t in zip(shape, strides)) \
            if n else 0
        aliased = alloc == _DEAD_BEEF or any(
            a.__array_interface__["data"][0] <= start <
            a.__array_interface__["data"][0] + a.nbytes for a in keep
            if a.nbytes)
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
        keep = []
        cargs = [self._argument(i, p, v, keep)
                 for i, (p, v) in enumerate(zip(self.args, args))]
        if self._out is None:
            value = self._c(*cargs)
            return value if self.results else None
        out = self._out()
        self._c(ctypes.pointer(out), *cargs)
        owners = {}
        if len(self.results) == 1:
            return self._result(self.results[0], out, keep, owners)
        values = []
        for i, r in enumerate(self.results):
            field = getattr(out, f"r{i}")
            values.append(field if r.shape is None
                          else self._result(r, field, keep, owners))
        return tuple(values)


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
        if self.signature["memory"] != "host":
            raise NotImplementedError(
                f"mesh.runtime: '{path}' was built for the GPU (its buffers "
                "are device memory); loading GPU modules from Python is not "
                "there yet: build with --target=host or gpu-on-host")
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
        if init:
            init()
        self._open = True
        _open_modules.add(self)

    def _entry(self, name):
        try:
            fn = getattr(self._lib, name)
        except AttributeError:
            return None
        fn.restype, fn.argtypes = None, []
        return fn

    def _check_open(self, name):
        if not self._open:
            raise RuntimeError(f"{name}: the module '{self.path}' is closed")

    def close(self):
        """Runs the module's shut-down (collective); later calls raise."""
        if getattr(self, "_open", False):
            self._open = False
            if self._fini:
                self._fini()

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
