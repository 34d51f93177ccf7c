"""What a collective's buffer argument is: address, element count, dtype,
and, for device memory, the producer's stream.

Host buffers: numpy arrays and anything numpy views without copying (the
buffer protocol, ``__array_interface__``) or a CPU DLPack tensor. Device
buffers: ``__cuda_array_interface__`` (v3; its ``stream`` is the producer's)
or a CUDA DLPack tensor. Each is checked (C-contiguous, writable where the
collective writes it, a dtype the runtime has) before anything is sent, and
an error names the argument.
"""

import ctypes

import numpy as np

# meshrt_dtype codes.
F16, BF16, F32, F64, I8, I32, I64, U8 = range(8)
NAMES = {F16: "float16", BF16: "bfloat16", F32: "float32", F64: "float64",
         I8: "int8", I32: "int32", I64: "int64", U8: "uint8"}
_NUMPY = {np.dtype(np.float16): F16, np.dtype(np.float32): F32,
          np.dtype(np.float64): F64, np.dtype(np.int8): I8,
          np.dtype(np.int32): I32, np.dtype(np.int64): I64,
          np.dtype(np.uint8): U8}
_SIZES = {F16: 2, BF16: 2, F32: 4, F64: 8, I8: 1, I32: 4, I64: 8, U8: 1}

# DLPack: device types and (code, bits) of the types the runtime has.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_TYPES = {(2, 16): F16, (4, 16): BF16, (2, 32): F32, (2, 64): F64,
             (0, 8): I8, (0, 32): I32, (0, 64): I64, (1, 8): U8}


class Buffer:
    """One argument: `ptr` (int), `count` elements of meshrt dtype `dtype`,
    `device` (True for GPU memory) and `stream` (the producer's, or None)."""

    __slots__ = ("ptr", "count", "dtype", "device", "stream", "owner")

    def __init__(self, ptr, count, dtype, device, stream, owner):
        self.ptr, self.count, self.dtype = ptr, count, dtype
        self.device, self.stream, self.owner = device, stream, owner


def _fail(op, what, why, kind=ValueError):
    raise kind(f"{op}: {what} {why}")


def _dtype_of(np_dtype, op, what):
    dt = _NUMPY.get(np.dtype(np_dtype).newbyteorder("="))
    if dt is None or not np.dtype(np_dtype).isnative:
        _fail(op, what, f"has dtype {np.dtype(np_dtype)}, which the runtime "
              "does not reduce or move (it has float16, bfloat16, float32, "
              "float64, int8, int32, int64 and uint8, in native byte order)",
              TypeError)
    return dt


def _from_numpy(a, op, what, writable, owner):
    flags = a.flags
    if not flags.c_contiguous:
        _fail(op, what, "is not contiguous (C order); pass "
              "numpy.ascontiguousarray(...) and copy the result back")
    if writable and not flags.writeable:
        _fail(op, what, "is read-only, and this collective writes it")
    dt = _NUMPY.get(a.dtype)  # Native byte order hashes as the keys.
    if dt is None or not a.dtype.isnative:
        dt = _dtype_of(a.dtype, op, what)
    if flags.writeable and a.size:
        # The address without building __array_interface__'s dict (a
        # third of the cost of a small collective from Python).
        ptr = ctypes.addressof(ctypes.c_char.from_buffer(a))
    else:
        ptr = a.__array_interface__["data"][0]
    return Buffer(ptr, int(a.size), dt, False, None, owner)


def _check_c_order(shape, strides, unit, op, what):
    """Fails unless `strides` (None: C order) lay `shape` out in C order;
    `unit` is the stride of the last dimension (the item size for strides in
    bytes, 1 for strides in elements)."""
    if strides is None:
        return
    acc = unit
    for n, st in zip(reversed(shape), reversed(strides)):
        if n > 1 and st != acc:
            _fail(op, what, "is not contiguous (C order)")
        acc *= n


class DeviceView:
    """Device memory an object exposes: `ptr`, `shape`, numpy `dtype` (None
    where numpy lacks the type: `dl` then holds DLPack's (code, bits)),
    `readonly`, the producer's `stream` (None: ordered before the consumer's
    stream already) and `owner` (keeps the memory alive)."""

    __slots__ = ("ptr", "shape", "dtype", "dl", "readonly", "stream", "owner")

    def __init__(self, ptr, shape, dtype, dl, readonly, stream, owner):
        self.ptr, self.shape, self.dtype, self.dl = ptr, shape, dtype, dl
        self.readonly, self.stream, self.owner = readonly, stream, owner

    @property
    def count(self):
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


def _from_cuda_interface(obj, op, what):
    cai = obj.__cuda_array_interface__
    version = cai.get("version", 0)
    if version < 2:
        _fail(op, what, f"has __cuda_array_interface__ version {version}; "
              "versions 2 and 3 are read")
    shape = tuple(int(n) for n in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    _check_c_order(shape, cai.get("strides"), dtype.itemsize, op, what)
    ptr, readonly = cai["data"]
    stream = cai.get("stream")
    if stream == 0:
        _fail(op, what, "names stream 0, which __cuda_array_interface__ v3 "
              "forbids (1: the legacy default stream, 2: per-thread)")
    return DeviceView(int(ptr or 0), shape, dtype, None, bool(readonly),
                      stream, obj)


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# DLPack (code, bits) as numpy dtypes: int, uint, float, bool.
_DL_NUMPY = {(0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32,
             (0, 64): np.int64, (1, 8): np.uint8, (1, 16): np.uint16,
             (1, 32): np.uint32, (1, 64): np.uint64, (2, 16): np.float16,
             (2, 32): np.float32, (2, 64): np.float64, (6, 8): np.bool_}


def _from_dlpack(obj, op, what, stream):
    # `stream` is the consumer's: on the GPU the producer orders its work
    # before it. DLPack has no read-only flag: the memory is the producer's
    # to share, writable (numpy's own from_dlpack would mark it read-only).
    capsule = obj.__dlpack__() if stream is None else \
        obj.__dlpack__(stream=stream)
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1:
        _fail(op, what, f"has a DLPack dtype with {t.dtype.lanes} lanes",
              TypeError)
    np_type = _DL_NUMPY.get(key)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        _check_c_order(shape, [t.strides[i] for i in range(t.ndim)], 1, op,
                       what)
    ptr = (t.data or 0) + t.byte_offset
    # The capsule keeps the producer's memory alive for the call; on the GPU
    # the work that made it is ordered before `stream`.
    return DeviceView(ptr, shape, None if np_type is None else
                      np.dtype(np_type), key, False, stream, (obj, capsule))


def _is_cuda_dlpack(obj, op, what):
    kind, _ = obj.__dlpack_device__()
    if kind in (_DL_CUDA, _DL_CUDA_MANAGED):
        return True
    if kind in (_DL_CPU, _DL_CUDA_HOST):
        return False
    _fail(op, what, f"is on DLPack device type {kind}; the runtime takes CPU "
          "and CUDA memory", TypeError)


def device_view(obj, op, what, consumer_stream):
    """The DeviceView of `obj` if it is GPU memory (__cuda_array_interface__
    or a CUDA DLPack tensor, asked to order itself before
    `consumer_stream`), else None."""
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cuda_interface(obj, op, what)
    if hasattr(obj, "__dlpack_device__") and _is_cuda_dlpack(obj, op, what):
        return _from_dlpack(obj, op, what, consumer_stream)
    return None


def _view_buffer(view, op, what, writable, device):
    if writable and view.readonly:
        _fail(op, what, "is read-only, and this collective writes it")
    if view.dtype is not None:
        dt = _dtype_of(view.dtype, op, what)
    elif view.dl in _DL_TYPES:
        dt = _DL_TYPES[view.dl]
    else:
        code, bits = view.dl
        _fail(op, what, f"has a DLPack dtype (code {code}, {bits} bits) the "
              "runtime does not have", TypeError)
    return Buffer(view.ptr, view.count, dt, device, view.stream, view.owner)


def buffer(obj, op, what, writable):
    """The Buffer of argument `what` of collective `op`."""
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, op, what, writable, obj)
    # On the GPU the consumer's stream is the legacy default stream (1): the
    # producer orders its work before it, and the collective is enqueued on
    # it.
    view = device_view(obj, op, what, consumer_stream=1)
    if view is not None:
        return _view_buffer(view, op, what, writable, device=True)
    if hasattr(obj, "__dlpack_device__"):  # CPU memory.
        return _view_buffer(_from_dlpack(obj, op, what, None), op, what,
                            writable, device=False)
    if hasattr(obj, "__array_interface__"):
        return _from_numpy(np.asarray(obj), op, what, writable, obj)
    try:
        view = memoryview(obj)
    except TypeError:
        _fail(op, what, f"is a {type(obj).__name__}, not an array: pass a "
              "numpy array, or an object with the buffer protocol, "
              "__array_interface__, __cuda_array_interface__ or __dlpack__",
              TypeError)
    if writable and view.readonly:
        _fail(op, what, "is read-only, and this collective writes it")
    return _from_numpy(np.asarray(view), op, what, writable, obj)
