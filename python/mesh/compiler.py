"""Compiling ``.mlir`` files to libraries that ``mesh.runtime`` loads.

    lib = mesh.compiler.compile_file("tp_mlp.mlir", target="host")

runs ``mesh-compile --shared``: the program is partitioned if it carries
sharding annotations, lowered, and linked with libmeshrt into a shared
library that also records each exported function's per-device signature.
``mesh-compile`` is found at ``$MESH_COMPILE``, in the build tree next to
this source tree (``build/bin``, or ``$MESH_BUILD_DIR/bin``), or on PATH.
"""

import os
import shutil
import subprocess
import tempfile

__all__ = ["CompileError", "compile_file", "compile_string", "find_compiler"]


class CompileError(RuntimeError):
    """mesh-compile failed; ``str()`` holds its diagnostics."""


def find_compiler():
    """The path of mesh-compile, or a FileNotFoundError naming where it was
    looked for."""
    env = os.environ.get("MESH_COMPILE")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    tried = []
    builds = [os.environ["MESH_BUILD_DIR"]] if "MESH_BUILD_DIR" in \
        os.environ else []
    builds.append(os.path.join(os.path.dirname(os.path.dirname(here)),
                               "build"))
    for b in builds:
        path = os.path.join(b, "bin", "mesh-compile")
        if os.access(path, os.X_OK):
            return path
        tried.append(path)
    found = shutil.which("mesh-compile")
    if found:
        return found
    raise FileNotFoundError(
        "mesh.compiler: no mesh-compile at " + ", ".join(tried) +
        " or on PATH; build the project (./scripts/main.sh) or set "
        "MESH_COMPILE")


def compile_file(path, target="host", output=None, options=()):
    """Compiles the ``.mlir`` file ``path`` for ``target`` ("host", "cuda"
    or "gpu-on-host") into a shared library and returns its path (default:
    ``lib<name>.so`` in a new temporary directory). ``options`` are more
    mesh-compile flags (``["--cpu=native"]``, ``["-O3"]``). Raises
    CompileError with mesh-compile's diagnostics."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mesh.compiler: no file '{path}'")
    if target not in ("host", "cuda", "gpu-on-host"):
        raise ValueError(f"mesh.compiler: unknown target '{target}' (host, "
                         "cuda or gpu-on-host)")
    if output is None:
        stem = os.path.splitext(os.path.basename(path))[0]
        output = os.path.join(tempfile.mkdtemp(prefix="mesh-"),
                              f"lib{stem}.so")
    cmd = [find_compiler(), "--shared", f"--target={target}", *options,
           path, "-o", output]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        raise CompileError(f"mesh-compile failed on '{path}' (exit "
                           f"{p.returncode}):\n{p.stderr.strip()}")
    return output


def compile_string(source, target="host", output=None, options=(),
                   name="module"):
    """compile_file for MLIR text."""
    d = tempfile.mkdtemp(prefix="mesh-")
    path = os.path.join(d, f"{name}.mlir")
    with open(path, "w") as f:
        f.write(source)
    return compile_file(path, target, output or os.path.join(
        d, f"lib{name}.so"), options)
