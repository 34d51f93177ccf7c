#!/usr/bin/env python3
"""The peers of bench/compute: each kernel of kernels.json in numpy and in
torch, on the inputs the driver builds, one thread each.

  peers.py kernels.json check NAME OURS.bin   checks our result against numpy
                                              (and torch against numpy)
  peers.py kernels.json time NAME numpy|torch CALLS
                                              prints "NAME <median s> <rate> <unit>"
"""
import json
import os
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)


def inputs(k):
    out = []
    for j, shape in enumerate(k["inputs"]):
        n = int(np.prod(shape))
        i = np.arange(n, dtype=np.uint64)
        h = ((i + np.uint64(j * 7919)) * np.uint64(2654435761)) & np.uint64(0xffffffff)
        out.append(((h % np.uint64(1000)).astype(np.float32) / np.float32(1000.0)
                    - np.float32(0.5)).reshape(shape))
    return out


def numpy_fn(name):
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm(x, w, b):
        m = x.mean(axis=1, keepdims=True)
        c = x - m
        v = (c * c).mean(axis=1, keepdims=True)
        return c / np.sqrt(v + np.float32(1e-5)) * w + b

    def gelu(x):
        return np.float32(0.5) * x * (np.float32(1) + np.tanh(
            np.float32(0.797884583) * (x + np.float32(0.044715) * x * x * x)))

    def chain(x, y):
        v = x * y + x - y
        v = np.maximum(v * np.float32(0.5) + np.float32(1), np.float32(0)) * x
        return v + y

    if name.startswith("matmul") and name.endswith("_bias_relu"):
        return lambda a, b, c: np.maximum(a @ b + c, np.float32(0))
    if name.startswith("matmul") or name.startswith("bmm"):
        return lambda a, b: a @ b
    return {"softmax": softmax, "layernorm": layernorm, "gelu": gelu,
            "ew_chain": chain}[name]


def torch_fn(name):
    F = torch.nn.functional
    if name.startswith("matmul") and name.endswith("_bias_relu"):
        return lambda a, b, c: torch.relu(torch.addmm(c, a, b))
    if name.startswith("matmul"):
        return torch.mm
    if name.startswith("bmm"):
        return torch.bmm
    return {
        "softmax": lambda x: torch.softmax(x, dim=1),
        "layernorm": lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5),
        "gelu": lambda x: F.gelu(x, approximate="tanh"),
        "ew_chain": lambda x, y: torch.clamp_min((x * y + x - y) * 0.5 + 1, 0) * x + y,
    }[name]


def main():
    table = {k["name"]: k for k in json.load(open(sys.argv[1]))}
    mode, name = sys.argv[2], sys.argv[3]
    k = table[name]
    xs = inputs(k)
    if mode == "check":
        want = numpy_fn(name)(*xs).astype(np.float32)
        ours = np.fromfile(sys.argv[4], dtype=np.float32).reshape(want.shape)
        theirs = torch_fn(name)(*[torch.from_numpy(x) for x in xs]).numpy()
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(ours - want).max()) / scale
        terr = float(np.abs(theirs - want).max()) / scale
        # f32 results in another summation order: 1e-4 of the largest value.
        ok = err <= 1e-4
        print(f"{name}: ours vs numpy {err:.2e}, torch vs numpy {terr:.2e} "
              f"(relative to max |numpy| = {scale:.3g}): {'ok' if ok else 'MISMATCH'}")
        sys.exit(0 if ok else 1)
    peer, calls = sys.argv[4], int(sys.argv[5])
    if peer == "numpy":
        fn, args = numpy_fn(name), xs
    else:
        fn, args = torch_fn(name), [torch.from_numpy(x) for x in xs]
    times = []
    for i in range(calls + 2):
        t0 = time.perf_counter()
        fn(*args)
        t1 = time.perf_counter()
        if i >= 2:
            times.append(t1 - t0)
    times.sort()
    med = times[len(times) // 2]
    print(f"{name} {med:.6e} {k['work'] / med / 1e9:.3f} {k['unit']}")


if __name__ == "__main__":
    main()
