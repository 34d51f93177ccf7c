#!/usr/bin/env python3
"""Mixed-precision products (f16 inputs, f32 accumulator) compiled by us
against what a user of numpy or torch on a CPU does instead: widen the
inputs to f32 and multiply in f32 (numpy: a.astype(f32) @ b.astype(f32);
torch 1.13: a.float() @ b.float(), its CPU matmul takes no f16). One thread
each (OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)).

Ours: `linalg.matmul ins(f16, f16) outs(f32)` after a zero fill, compiled by
mesh-compile --shared (mesh-linalg-to-blas: one meshrt_gemm_mixed call, the
inputs widened in the runtime, one sgemm) and called through mesh.runtime.

Each result is checked against numpy's first (exact: the inputs are
multiples of 1/8 with sums f32 holds). Then ROUNDS rounds, each timing ours,
numpy and torch in a rotated order, each the median of CALLS calls; prints
per size the median over rounds of each one's GFLOP/s and of the per-round
ratio ours / best peer.

    PYTHONPATH=python /usr/bin/python3 bench/compute/mixed.py [N...]
    (env: ROUNDS=5 CALLS=5)
"""
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import mesh.compiler  # noqa: E402
import mesh.runtime  # noqa: E402

KERNEL = """
func.func @mixed{n}(%a: tensor<{n}x{n}xf16>, %b: tensor<{n}x{n}xf16>)
    -> tensor<{n}x{n}xf32> attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{n}x{n}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  %m = linalg.matmul ins(%a, %b : tensor<{n}x{n}xf16>, tensor<{n}x{n}xf16>)
                     outs(%f : tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  return %m : tensor<{n}x{n}xf32>
}}
"""


def median_seconds(f, calls):
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [256, 512, 1024]
    rounds = int(os.environ.get("ROUNDS", "5"))
    calls = int(os.environ.get("CALLS", "5"))
    torch.set_num_threads(1)
    mod = mesh.runtime.load(mesh.compiler.compile_string(
        "\n".join(KERNEL.format(n=n) for n in sizes), name="mixed"))
    print(f"== f16 x f16 -> f32 matmul, 1 thread, {rounds} rounds of "
          f"{calls} calls; numpy {np.__version__}, torch {torch.__version__}")
    for n in sizes:
        a = ((np.arange(n * n) * 7 % 31 - 15) / 8).astype(np.float16)
        b = ((np.arange(n * n) * 11 % 29 - 14) / 8).astype(np.float16)
        a, b = a.reshape(n, n), b.reshape(n, n)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        ours = getattr(mod, f"mixed{n}")
        runs = {
            "ours": lambda: ours(a, b),
            "numpy": lambda: a.astype(np.float32) @ b.astype(np.float32),
            "torch": lambda: ta.float() @ tb.float(),
        }
        want = runs["numpy"]()
        np.testing.assert_array_equal(runs["ours"](), want)
        np.testing.assert_array_equal(runs["torch"]().numpy(), want)
        rates = {k: [] for k in runs}
        ratios = []
        names = list(runs)
        for r in range(rounds):
            order = names[r % 3:] + names[:r % 3]
            got = {k: 2 * n ** 3 / median_seconds(runs[k], calls) / 1e9
                   for k in order}
            for k, v in got.items():
                rates[k].append(v)
            ratios.append(got["ours"] / max(got["numpy"], got["torch"]))
        line = ", ".join(f"{k} {statistics.median(v):.1f}"
                         for k, v in rates.items())
        print(f"n={n}: GFLOP/s {line}; ours / best peer "
              f"{statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})")
    mod.close()


if __name__ == "__main__":
    main()
