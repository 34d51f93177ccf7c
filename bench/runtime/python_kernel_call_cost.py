#!/usr/bin/env python3
"""What calling a compiled function from Python costs (mesh.runtime).

One kernel, `add` (two f32 vectors of N elements, one result), compiled by
mesh-compile --shared and loaded with mesh.runtime. Each round times, in
alternating order, batches of K calls of:
  mesh.runtime   mod.add(a, b): the argument checks, the memref descriptors,
                 the ctypes call, the result wrapped as a numpy array that
                 owns its buffer;
  ctypes floor   the same _mlir_ciface_add through ctypes with descriptors
                 built once and the result freed at once: what the call
                 itself costs from Python;
  numpy          a + b, the peer a user would otherwise call.
Prints per N the median per-call time of each over the rounds.

    PYTHONPATH=python /usr/bin/python3 bench/runtime/python_kernel_call_cost.py
    (env: ROUNDS=7 K=20000 SIZES="4 4096")
"""
import ctypes
import os
import statistics
import time

import numpy as np

import mesh.compiler
import mesh.runtime

KERNEL = """
func.func @add{n}(%a: tensor<{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{n}xf32>
    attributes {{llvm.emit_c_interface}} {{
  %r = arith.addf %a, %b : tensor<{n}xf32>
  return %r : tensor<{n}xf32>
}}
"""


class MemRef1(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * 1),
                ("strides", ctypes.c_int64 * 1)]


def floor_call(lib, n, a, b):
    """A call of _mlir_ciface_add<n> with descriptors built once."""
    fn = getattr(lib, f"_mlir_ciface_add{n}")
    fn.argtypes = [ctypes.POINTER(MemRef1)] * 3
    fn.restype = None
    da = MemRef1(a.ctypes.data, a.ctypes.data, 0, (n,), (1,))
    db = MemRef1(b.ctypes.data, b.ctypes.data, 0, (n,), (1,))
    out = MemRef1()
    pa, pb, po = ctypes.pointer(da), ctypes.pointer(db), ctypes.pointer(out)
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]

    def call():
        fn(po, pa, pb)
        free(out.allocated)
    return call


def main():
    rounds = int(os.environ.get("ROUNDS", "7"))
    k = int(os.environ.get("K", "20000"))
    sizes = [int(s) for s in os.environ.get("SIZES", "4 4096").split()]
    path = mesh.compiler.compile_string(
        "\n".join(KERNEL.format(n=n) for n in sizes), name="calls")
    mod = mesh.runtime.load(path)
    lib = ctypes.CDLL(path)
    print(f"== a compiled call from Python: {rounds} rounds of {k} calls, "
          "median us per call")
    for n in sizes:
        a = np.arange(n, dtype=np.float32)
        b = np.ones(n, np.float32)
        ours = getattr(mod, f"add{n}")
        np.testing.assert_array_equal(ours(a, b), a + b)
        runs = {"mesh.runtime": lambda: ours(a, b),
                "ctypes floor": floor_call(lib, n, a, b),
                "numpy": lambda: a + b}
        times = {name: [] for name in runs}
        names = list(runs)
        for r in range(rounds):
            for name in names[r % 3:] + names[:r % 3]:
                f = runs[name]
                t = time.perf_counter()
                for _ in range(k):
                    f()
                times[name].append((time.perf_counter() - t) / k * 1e6)
        line = ", ".join(f"{name} {statistics.median(v):.2f}"
                         for name, v in times.items())
        print(f"n={n}: {line}")
    mod.close()


if __name__ == "__main__":
    main()
