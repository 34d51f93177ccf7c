#!/usr/bin/env python3
"""Mixed-type products compiled by us against what a user of numpy or torch
on a CPU does instead, one thread each (OPENBLAS_NUM_THREADS=1,
torch.set_num_threads(1)):
  f16   f16 inputs into an f32 accumulator; the peers widen the inputs and
        multiply in f32 (numpy: a.astype(f32) @ b.astype(f32); torch 1.13:
        a.float() @ b.float(), its CPU matmul takes no f16);
  int8  i8 inputs into i32 (a quantized layer); the peers multiply in int32
        (numpy: a.astype(int32) @ b.astype(int32); torch: a.int() @ b.int()).

Ours: `linalg.matmul ins(f16, f16) outs(f32)` (or i8 into i32) after a zero
fill, compiled by mesh-compile --shared (mesh-linalg-to-blas: one
meshrt_gemm_mixed call: the inputs widened in the runtime, one sgemm; for
i8, an sgemm or dgemm that holds every sum exactly) and called through
mesh.runtime. In this Python process numpy loads OpenBLAS first: set
OPENBLAS_CORETYPE where the library does not know the CPU (libmeshrt warns).

Each result is checked against numpy's first (exact: the f16 inputs are
multiples of 1/8 with sums f32 holds; integers). Then ROUNDS rounds, each timing ours,
numpy and torch in a rotated order, each the median of CALLS calls; prints
per size the median over rounds of each one's GFLOP/s and of the per-round
ratio ours / best peer.

    PYTHONPATH=python /usr/bin/python3 bench/compute/mixed.py [N...]
    (env: ROUNDS=5 CALLS=5 KINDS="f16 int8")
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
func.func @{kind}{n}(%a: tensor<{n}x{n}x{a}>, %b: tensor<{n}x{n}x{a}>)
    -> tensor<{n}x{n}x{c}> attributes {{llvm.emit_c_interface}} {{
  %z = arith.constant {zero} : {c}
  %e = tensor.empty() : tensor<{n}x{n}x{c}>
  %f = linalg.fill ins(%z : {c}) outs(%e : tensor<{n}x{n}x{c}>) -> tensor<{n}x{n}x{c}>
  %m = linalg.matmul ins(%a, %b : tensor<{n}x{n}x{a}>, tensor<{n}x{n}x{a}>)
                     outs(%f : tensor<{n}x{n}x{c}>) -> tensor<{n}x{n}x{c}>
  return %m : tensor<{n}x{n}x{c}>
}}
"""
TYPES = {"f16": dict(a="f16", c="f32", zero="0.0"),
         "int8": dict(a="i8", c="i32", zero="0")}


def operands(kind, n):
    """The inputs of `kind` at size n, and the peers' calls on them."""
    i = np.arange(n * n)
    if kind == "f16":
        a = ((i * 7 % 31 - 15) / 8).astype(np.float16).reshape(n, n)
        b = ((i * 11 % 29 - 14) / 8).astype(np.float16).reshape(n, n)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        return a, b, {
            "numpy": lambda: a.astype(np.float32) @ b.astype(np.float32),
            "torch": lambda: ta.float() @ tb.float()}
    a = (i * 37 % 255 - 127).astype(np.int8).reshape(n, n)
    b = (i * 53 % 255 - 127).astype(np.int8).reshape(n, n)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    return a, b, {"numpy": lambda: a.astype(np.int32) @ b.astype(np.int32),
                  "torch": lambda: ta.int() @ tb.int()}


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
    kinds = os.environ.get("KINDS", "f16 int8").split()
    torch.set_num_threads(1)
    mod = mesh.runtime.load(mesh.compiler.compile_string(
        "\n".join(KERNEL.format(kind=k, n=n, **TYPES[k])
                  for k in kinds for n in sizes), name="mixed"))
    print(f"== mixed-type matmuls, 1 thread, {rounds} rounds of {calls} "
          f"calls; numpy {np.__version__}, torch {torch.__version__}")
    for kind in kinds:
        for n in sizes:
            a, b, peers = operands(kind, n)
            ours = getattr(mod, f"{kind}{n}")
            runs = dict(ours=lambda: ours(a, b), **peers)
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
            print(f"{kind} n={n}: G(FL)OP/s {line}; ours / best peer "
                  f"{statistics.median(ratios):.2f} "
                  f"({min(ratios):.2f}-{max(ratios):.2f})")
    mod.close()


if __name__ == "__main__":
    main()
