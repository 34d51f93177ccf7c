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


def _from_cuda_interface(obj, op, what, writable):
    cai = obj.__cuda_array_interface__
    version = cai.get("version", 0)
    if version < 2:
        _fail(op, what, f"has __cuda_array_interface__ version {version}; "
              "versions 2 and 3 are read")
    shape = tuple(cai["shape"])
    typestr = cai["typestr"]
    dt = _dtype_of(np.dtype(typestr), op, what)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    strides = cai.get("strides")
    if strides is not None and count > 1:
        want = []
        acc = _SIZES[dt]
        for n in reversed(shape):
            want.append(acc)
            acc *= n
        want.reverse()
        if any(n > 1 and s != w for s, w, n in zip(strides, want, shape)):
            _fail(op, what, "is not contiguous (C order)")
    ptr, readonly = cai["data"]
    if writable and readonly:
        _fail(op, what, "is read-only, and this collective writes it")
    stream = cai.get("stream")
    if stream == 0:
        _fail(op, what, "names stream 0, which __cuda_array_interface__ v3 "
              "forbids (1: the legacy default stream, 2: per-thread)")
    return Buffer(int(ptr or 0), count, dt, True, stream, obj)


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


def _from_dlpack(obj, op, what, device):
    # On the GPU the consumer's stream is the legacy default stream (1): the
    # producer orders its work before it, and the collective is enqueued on
    # it. DLPack has no read-only flag: the memory is the producer's to
    # share, writable (numpy's own from_dlpack would mark it read-only).
    capsule = obj.__dlpack__(stream=1) if device else obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DL_TYPES:
        _fail(op, what, f"has a DLPack dtype (code {t.dtype.code}, "
              f"{t.dtype.bits} bits, {t.dtype.lanes} lanes) the runtime does "
              "not have", TypeError)
    dt = _DL_TYPES[key]
    shape = [t.shape[i] for i in range(t.ndim)]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if t.strides and count > 1:
        acc = 1
        for i in reversed(range(t.ndim)):
            if shape[i] > 1 and t.strides[i] != acc:
                _fail(op, what, "is not contiguous (C order)")
            acc *= shape[i]
    ptr = (t.data or 0) + t.byte_offset
    # The capsule keeps the producer's memory alive for the call.
    return Buffer(ptr, count, dt, device, 1 if device else None,
                  (obj, capsule))


def buffer(obj, op, what, writable):
    """The Buffer of argument `what` of collective `op`."""
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, op, what, writable, obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cuda_interface(obj, op, what, writable)
    if hasattr(obj, "__dlpack_device__"):
        kind, _ = obj.__dlpack_device__()
        if kind in (_DL_CUDA, _DL_CUDA_MANAGED):
            return _from_dlpack(obj, op, what, device=True)
        if kind in (_DL_CPU, _DL_CUDA_HOST):
            return _from_dlpack(obj, op, what, device=False)
        _fail(op, what, f"is on DLPack device type {kind}; the runtime "
              "takes CPU and CUDA memory", TypeError)
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
