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


def gpt_torch(B, S, H, N):
    """nanoGPT's Block as bench/partition/gpt.py spells it, in torch."""
    F = torch.nn.functional
    D = H // N

    def block(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b,
              w1, b1, w2, b2):
        a = F.layer_norm(x, (H,), ln1_w, ln1_b, 1e-5)
        q, k, v = (F.linear(a, w, b).view(B, S, N, D).transpose(1, 2)
                   for w, b in ((wq, bq), (wk, bk), (wv, bv)))
        s = (q @ k.transpose(-2, -1)) * (1.0 / D ** 0.5)
        future = torch.ones(S, S, dtype=torch.bool).triu(1)
        s = s.masked_fill(future, -1e9)
        y = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, S, H)
        h = x + F.linear(y, wo, bo)
        m = F.layer_norm(h, (H,), ln2_w, ln2_b, 1e-5)
        return h + F.linear(F.gelu(F.linear(m, w1, b1), approximate="tanh"),
                            w2, b2)
    return block


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

    def jacobi(x):
        p = np.pad(x, 1)
        return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) * np.float32(0.25)

    if name == "jacobi":
        return jacobi
    if name.startswith("matmul") and name.endswith("_bias_relu"):
        return lambda a, b, c: np.maximum(a @ b + c, np.float32(0))
    if name.startswith("matmul") or name.startswith("bmm"):
        return lambda a, b: a @ b
    return {"softmax": softmax, "layernorm": layernorm, "gelu": gelu,
            "ew_chain": chain}[name]


def torch_fn(name, k=None):
    F = torch.nn.functional
    if name.startswith("gpt"):
        B, S, H = k["output"]
        N = {256: 4, 1024: 16}[H]
        return gpt_torch(B, S, H, N)
    if name.startswith("matmul") and name.endswith("_bias_relu"):
        return lambda a, b, c: torch.relu(torch.addmm(c, a, b))
    if name.startswith("matmul"):
        return torch.mm
    if name.startswith("bmm"):
        return torch.bmm
    if name == "jacobi":
        def jacobi(x):
            p = F.pad(x, (1, 1, 1, 1))
            return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) * 0.25
        return jacobi
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
        theirs = torch_fn(name, k)(*[torch.from_numpy(x) for x in xs]).numpy()
        if name.startswith("gpt"):
            # No numpy peer: torch in f64 is the reference.
            ref, peer = "torch-f64", "torch-f32"
            want = torch_fn(name, k)(*[torch.from_numpy(x).double() for x in xs]).numpy()
        else:
            ref, peer = "numpy", "torch"
            want = numpy_fn(name)(*xs).astype(np.float32)
        ours = np.fromfile(sys.argv[4], dtype=np.float32).reshape(want.shape)
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(ours - want).max()) / scale
        terr = float(np.abs(theirs - want).max()) / scale
        # f32 results in another summation order: 1e-4 of the largest value.
        ok = err <= 1e-4
        print(f"{name}: ours vs {ref} {err:.2e}, {peer} vs {ref} {terr:.2e} "
              f"(relative to max |{ref}| = {scale:.3g}): {'ok' if ok else 'MISMATCH'}")
        sys.exit(0 if ok else 1)
    peer, calls = sys.argv[4], int(sys.argv[5])
    if peer == "numpy" and name.startswith("gpt"):
        print(f"{name} - - -")
        return
    if peer == "numpy":
        fn, args = numpy_fn(name), xs
    else:
        fn, args = torch_fn(name, k), [torch.from_numpy(x) for x in xs]
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
