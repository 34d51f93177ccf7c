"""Loading libmeshrt and declaring the C ABI calls the package makes.

The library is looked up, in order, at ``$MESHRT_LIBRARY``, in the build
tree next to this source tree (``build/lib``, or ``$MESH_BUILD_DIR/lib``),
then by the dynamic loader (an installed ``libmeshrt.so.0``). Every status
the runtime returns becomes a Python exception carrying the runtime's
message: errors are returned, never an abort of the interpreter, except
where the runtime must end the job (a peer gone).
"""

import ctypes
import os
import sys

# meshrt.h's statuses, by code.
STATUS_NAMES = {
    0: "MESHRT_SUCCESS",
    1: "MESHRT_ERROR_INVALID_ARGUMENT",
    2: "MESHRT_ERROR_NOT_INITIALIZED",
    3: "MESHRT_ERROR_WORLD_SIZE",
    4: "MESHRT_ERROR_UNKNOWN_AXIS",
    5: "MESHRT_ERROR_UNKNOWN_MESH",
    6: "MESHRT_ERROR_MESH_MISMATCH",
    7: "MESHRT_ERROR_UNSUPPORTED",
    8: "MESHRT_ERROR_BACKEND",
    9: "MESHRT_ERROR_TIMEOUT",
    10: "MESHRT_ERROR_COLLECTIVE_MISMATCH",
    11: "MESHRT_ERROR_NOT_MEMBER",
}
ERRORS_ABORT, ERRORS_RETURN = 0, 1

BACKENDS = {"auto": 0, "mpi": 1, "nccl": 2, "gloo": 3}


class MeshError(RuntimeError):
    """A runtime error: ``status`` is meshrt.h's name for it
    (``"MESHRT_ERROR_UNKNOWN_AXIS"``), ``str()`` the runtime's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message

    def __str__(self):
        return self.message


class UnknownDimError(MeshError, KeyError):
    """A mesh dimension that does not exist (PyTorch raises KeyError)."""


class NotMemberError(MeshError):
    """This process is not in the mesh the call needs."""


class MeshTimeoutError(MeshError, TimeoutError):
    """A collective or the start-up did not complete in time."""


_KINDS = {4: UnknownDimError, 11: NotMemberError, 9: MeshTimeoutError}


def _candidates():
    env = os.environ.get("MESHRT_LIBRARY")
    if env:
        return [env]
    out = []
    build = os.environ.get("MESH_BUILD_DIR")
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    for d in ([build] if build else []) + [os.path.join(root, "build")]:
        out.append(os.path.join(d, "lib", "libmeshrt.so"))
    out.append("libmeshrt.so.0")
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            # Global: Open MPI's plugins, which libmeshrt loads through
            # libmpi, resolve libmpi's symbols from the global scope.
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "mesh: cannot load libmeshrt; tried " + "; ".join(tried) +
        ". Build the project (./scripts/main.sh), or set MESHRT_LIBRARY to "
        "the library's path")


lib = _load()

_i64 = ctypes.c_int64
_p64 = ctypes.POINTER(ctypes.c_int64)
_vp = ctypes.c_void_p
_cp = ctypes.c_char_p
_cpp = ctypes.POINTER(ctypes.c_char_p)
_i32 = ctypes.c_int32


def _declare(name, args, restype=ctypes.c_int32):
    fn = getattr(lib, name)
    fn.argtypes = args
    fn.restype = restype
    return fn


_declare("meshrt_set_error_policy", [_i32], None)
_declare("meshrt_last_error", [], _cp)
_declare("meshrt_init", [_i32])
_declare("meshrt_finalize", [])
_declare("meshrt_is_initialized", [], ctypes.c_int)
_declare("meshrt_world_rank", [_p64])
_declare("meshrt_world_size", [_p64])
_declare("meshrt_get_backend", [ctypes.POINTER(_i32)])
_declare("meshrt_dtype_size", [_i32], _i64)
_declare("meshrt_dm_create", [_cp, _i64, _p64, _cpp, _i64, _p64, _i64, _cpp,
                              ctypes.POINTER(_i32), _cp,
                              ctypes.POINTER(_vp)])
_declare("meshrt_dm_free", [_vp], None)
_declare("meshrt_dm_ndim", [_vp, _p64])
_declare("meshrt_dm_shape", [_vp, _p64])
for _name in ("meshrt_dm_dim_names", "meshrt_dm_device_type",
              "meshrt_dm_repr"):
    _declare(_name, [_vp, ctypes.c_char_p, _i64, _p64])
_declare("meshrt_dm_ranks", [_vp, _p64])
_declare("meshrt_dm_coordinate", [_vp, _p64, _p64])
_declare("meshrt_dm_local_rank", [_vp, _cp, _p64])
_declare("meshrt_dm_get_group", [_vp, _i64, _cpp, ctypes.POINTER(_vp)])
_declare("meshrt_dm_slice", [_vp, _i64, _cpp, ctypes.POINTER(_vp)])
_declare("meshrt_dm_flatten", [_vp, _cp, _i64, _cpp, ctypes.POINTER(_vp)])
_declare("meshrt_dm_unflatten", [_vp, _cp, _i64, _p64, _cpp,
                                 ctypes.POINTER(_vp)])
_declare("meshrt_dm_concatenate", [_i64, ctypes.POINTER(_vp),
                                   ctypes.POINTER(_vp)])
_declare("meshrt_dm_from_group", [_i64, ctypes.POINTER(_vp), _cp, _i64, _p64,
                                  _i64, _p64, _cpp, ctypes.POINTER(_vp)])
_declare("meshrt_dm_equal", [_vp, _vp, _p64])
_declare("meshrt_dm_hash", [_vp, ctypes.POINTER(ctypes.c_uint64)])
_declare("meshrt_comm_members", [_vp, _p64])
_declare("meshrt_comm_rank", [_vp, _p64])
_declare("meshrt_comm_size", [_vp, _p64])
_declare("meshrt_comm_backend", [_vp, ctypes.POINTER(_i32)])
_declare("meshrt_all_reduce", [_vp, _vp, _vp, _i64, _i32, _i32])
_declare("meshrt_all_gather", [_vp, _vp, _vp, _i64, _i32])
_declare("meshrt_reduce_scatter", [_vp, _vp, _vp, _i64, _i32, _i32])
_declare("meshrt_all_to_all", [_vp, _vp, _vp, _i64, _i32])
_declare("meshrt_broadcast", [_vp, _vp, _i64, _i32, _i64])
_declare("meshrt_barrier", [_vp])
_declare("meshrt_all_reduce_on_stream", [_vp, _vp, _vp, _i64, _i32, _i32, _vp])
_declare("meshrt_all_gather_on_stream", [_vp, _vp, _vp, _i64, _i32, _vp])
_declare("meshrt_reduce_scatter_on_stream",
         [_vp, _vp, _vp, _i64, _i32, _i32, _vp])
_declare("meshrt_all_to_all_on_stream", [_vp, _vp, _vp, _i64, _i32, _vp])
_declare("meshrt_broadcast_on_stream", [_vp, _vp, _i64, _i32, _i64, _vp])
_declare("meshrt_gpu_select_device", [_p64])
_declare("meshrt_gpu_stream", [ctypes.POINTER(_vp)])
_declare("meshrt_stream_synchronize", [_vp])
_declare("meshrt_stream_wait_stream", [_vp, _vp])
_declare("meshrt_device_alloc", [_i64, ctypes.POINTER(_vp)])
_declare("meshrt_device_copy", [_vp, _vp, _i64, _vp])
_declare("meshrt_device_free", [_vp])

_declare("meshrt_gpu_device_count", [_p64])
lib.meshrt_set_error_policy(ERRORS_RETURN)


def call_compiled(fn, *args):
    """Calls compiled code (a module's function, start-up or shut-down)
    under the ABORT policy: it cannot take a status back, so a runtime error
    inside it must print the runtime's message (meshrt_last_error's text)
    and end the job, rather than fail the code's own check with none. The
    policy is the process's: a collective another thread makes meanwhile
    ends the job on an error too."""
    lib.meshrt_set_error_policy(ERRORS_ABORT)
    try:
        return fn(*args)
    finally:
        lib.meshrt_set_error_policy(ERRORS_RETURN)

# Whether the interpreter is ending on an uncaught exception: then nothing
# collective runs at exit (the module shut-downs, the runtime's finalize),
# since the peers are not there; the process exits with the runtime
# initialised, and the runtime ends the job with its message.
exiting_on_error = False


def _note_uncaught(kind, value, tb, _previous=sys.excepthook):
    global exiting_on_error
    exiting_on_error = True
    _previous(kind, value, tb)


sys.excepthook = _note_uncaught


def check(status):
    """Raises the runtime's error for a non-zero status."""
    if status == 0:
        return
    msg = lib.meshrt_last_error()
    msg = msg.decode("utf-8", "replace") if msg else "(no message)"
    kind = _KINDS.get(status, MeshError)
    raise kind(STATUS_NAMES.get(status, f"MESHRT_ERROR_{status}"), msg)


def out_string(fn, handle):
    """A string the C ABI copies out (meshrt_device_mesh.h's convention)."""
    cap = 256
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = ctypes.c_int64()
        check(fn(handle, buf, cap, ctypes.byref(n)))
        if n.value < cap:
            return buf.raw[:n.value].decode()
        cap = n.value + 1


def int64s(values):
    arr = (ctypes.c_int64 * max(1, len(values)))(*values)
    return arr


def strings(values):
    enc = [v.encode() for v in values]
    return (ctypes.c_char_p * max(1, len(enc)))(*enc)
