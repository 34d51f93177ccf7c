"""mesh: named device meshes, their communicators and compiled sharded code.

``mesh.distributed`` is the runtime (libmeshrt) with PyTorch's names:
``init_device_mesh``, ``DeviceMesh``, groups and their collectives on numpy
arrays and other buffers. The package is pure Python over the runtime's C
ABI (ctypes), so it needs nothing but numpy; see docs/python.md.
"""

__all__ = ["distributed"]
