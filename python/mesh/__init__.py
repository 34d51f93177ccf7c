"""mesh: named device meshes, their communicators and compiled sharded code.

``mesh.distributed`` is the runtime (libmeshrt) with PyTorch's names:
``init_device_mesh``, ``DeviceMesh``, groups and their collectives on numpy
arrays and other buffers. ``mesh.compiler`` compiles ``.mlir`` files with
``mesh-compile --shared``; ``mesh.runtime`` loads the libraries and calls
their functions with numpy arrays. The package is pure Python over the runtime's C
ABI (ctypes), so it needs nothing but numpy; see docs/python.md.
"""

__all__ = ["compiler", "distributed", "runtime"]
