"""What a collective costs from Python against the same call from C.

Each round times a batch of K calls of ``g.all_reduce(x)`` from Python
(mesh.distributed: argument checks, buffer lookup, the ctypes call) and a
batch of K calls of meshrt_all_reduce in a C loop (libmeshrt-bench-cloop)
on the same communicator and buffer, in alternating order, each batch after
a barrier; a round's time is the slowest rank's. Reported per size: the
median per-call time of each, and the medians of the per-round difference
and ratio.

    mpirun -n R python3 bench/runtime/python_call_cost.py [SECONDS_PER_SIZE]

(bench/runtime/run.sh runs it with PYTHON_RANKS, default "1 2".)
"""

import ctypes
import os
import sys
import time

import numpy as np

import mesh.distributed as dist
from mesh import _lib

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
here = os.path.dirname(_lib.lib._name)
cloop = ctypes.CDLL(os.environ.get(
    "MESHRT_BENCH_CLOOP", os.path.join(here, "libmeshrt-bench-cloop.so")))
loop = cloop.meshrt_bench_all_reduce_loop
loop.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                 ctypes.c_int32, ctypes.c_int32, ctypes.c_int64]
loop.restype = ctypes.c_double

m = dist.init_device_mesh("cpu", (-1,), mesh_dim_names=("world",))
g = m.get_group()
slowest = np.zeros(2)


def slowest_of(a, b):
    slowest[:] = (a, b)
    g.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return slowest[0], slowest[1]


def python_batch(x, k):
    g.barrier()
    t = time.perf_counter()
    for _ in range(k):
        g.all_reduce(x)
    return time.perf_counter() - t


def c_batch(x, k):
    g.barrier()
    s = loop(g.handle, x.ctypes.data, x.size, 2, 0, k)
    if s < 0:
        raise RuntimeError(_lib.lib.meshrt_last_error().decode())
    return s


if g.rank() == 0:
    print(f"ranks {g.size()}, {seconds:g} s per size, backend "
          f"{dist.get_backend()}")
    print("| bytes | Python (us/call) | C (us/call) | Python - C (us) | "
          "Python / C |")
    print("|---:|---:|---:|---:|---:|")
for nbytes in (8, 1024, 65536, 1 << 20):
    x = np.zeros(nbytes // 4, np.float32)
    # Batches of about 5 ms.
    k = 1
    while True:
        t = c_batch(x, k)
        t, _ = slowest_of(t, 0)
        if t > 5e-3 or k >= 1 << 20:
            break
        k *= 2
    py, c, diff, ratio = [], [], [], []
    end = time.perf_counter() + seconds
    r = 0
    while True:
        if r % 2:
            a = python_batch(x, k)
            b = c_batch(x, k)
        else:
            b = c_batch(x, k)
            a = python_batch(x, k)
        a, b = slowest_of(a, b)
        py.append(a / k)
        c.append(b / k)
        diff.append((a - b) / k)
        ratio.append(a / b)
        r += 1
        # Every rank stops after the same round: rank 0 decides.
        done = np.array([float(time.perf_counter() > end and r >= 6)])
        g.broadcast(done, group_src=0)
        if done[0]:
            break
    if g.rank() == 0:
        med = lambda v: float(np.median(v))
        print(f"| {nbytes} | {med(py) * 1e6:.2f} | {med(c) * 1e6:.2f} | "
              f"{med(diff) * 1e6:.2f} | {med(ratio):.2f}x |")
