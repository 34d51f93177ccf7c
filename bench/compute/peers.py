#!/usr/bin/env python3
"""The peers of bench/compute: each kernel of kernels.json in numpy and in
torch, on the inputs the driver builds, one thread each.

  peers.py kernels.json check NAME OURS.bin   checks our result against numpy
                                              (and torch against numpy)
  peers.py kernels.json time NAME numpy|torch CALLS
                                              prints "NAME <median s> <rate> <unit>"

With PEER_DEVICE set (cuda, cuda:1, or cpu to try this path on a machine
without a GPU: bench/compute/run_gpu.sh), torch runs on that device: the same
inputs built there once, TF32 off (f32 products exact, as ours with
--matmul-precision=highest), torch.cuda.synchronize() after each call inside
the timed region. `check` then compares against torch in float64 on the
device, with the same tolerance. There both modes also take several kernels
in one process (starting torch on a GPU takes seconds):
  check NAME OURS.bin [NAME OURS.bin ...]     one line each; exit 1 if any fails
  time NAME,NAME,... torch CALLS              one line each ("NAME FAIL - -" if
                                              one raises; exit 1 then)
"""
import json
import os
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)

# "" (unset): the one-thread CPU bench of run.sh, exactly as before.
DEVICE = os.environ.get("PEER_DEVICE", "")


def inputs(k):
    out = []
    for j, shape in enumerate(k["inputs"]):
        n = int(np.prod(shape))
        i = np.arange(n, dtype=np.uint64)
        h = ((i + np.uint64(j * 7919)) * np.uint64(2654435761)) & np.uint64(0xffffffff)
        out.append(((h % np.uint64(1000)).astype(np.float32) / np.float32(1000.0)
                    - np.float32(0.5)).reshape(shape))
    return out


def device_inputs(k, dev):
    """inputs(k) built on `dev` with torch: the same bits (the pattern's
    integer m in [0, 1000) over 1000 in f64, rounded to f32: m / 1000 is never
    within f64's error of an f32 rounding boundary, so this is the f32
    quotient; then - 0.5 in f32)."""
    out = []
    for j, shape in enumerate(k["inputs"]):
        n = 1
        for s in shape:
            n *= s
        i = torch.arange(n, dtype=torch.int64, device=dev)
        h = ((i + j * 7919) * 2654435761) & 0xffffffff
        m = (h % 1000).to(torch.float64)
        del i, h
        out.append(((m / 1000.0).to(torch.float32) - 0.5).reshape(shape))
    return out


def check_inputs(k, xs):
    """The first 4096 elements of each device input against inputs()' bits."""
    for j, (shape, x) in enumerate(zip(k["inputs"], xs)):
        n = min(4096, x.numel())
        i = np.arange(n, dtype=np.uint64)
        h = ((i + np.uint64(j * 7919)) * np.uint64(2654435761)) & np.uint64(0xffffffff)
        want = (h % np.uint64(1000)).astype(np.float32) / np.float32(1000.0) - np.float32(0.5)
        got = x.reshape(-1)[:n].cpu().numpy()
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            raise RuntimeError(f"input {j} built on {x.device} differs from "
                               "the driver's pattern")


def setup_device():
    """The torch.device of PEER_DEVICE, with f32 products exact (no TF32)."""
    dev = torch.device(DEVICE)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit(f"peers.py: PEER_DEVICE={DEVICE}, but this torch "
                             f"({torch.__version__}) sees no CUDA device "
                             "(PEER_DEVICE=cpu runs the same path on the CPU)")
        if dev.index is not None:
            torch.cuda.set_device(dev)
    mm = torch.backends.cuda.matmul
    try:  # torch 1.13's module raises AssertionError for a name it lacks
        new_api = isinstance(mm.fp32_precision, str)
    except (AttributeError, AssertionError):
        new_api = False
    if new_api:
        # torch >= 2.9: the new switches only (mixing them with allow_tf32 is
        # refused by some versions).
        mm.fp32_precision = "ieee"
        conv = getattr(torch.backends.cudnn, "conv", None)
        if conv is not None and hasattr(conv, "fp32_precision"):
            conv.fp32_precision = "ieee"
    else:
        mm.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return dev


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


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
        future = torch.ones(S, S, dtype=torch.bool, device=x.device).triu(1)
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

    def conv_3x3(x, w):
        # NHWC input, HWCF filter: the windows as a view, then one
        # tensordot (a copy and a GEMM).
        win = np.lib.stride_tricks.sliding_window_view(x, w.shape[:2], (1, 2))
        return np.tensordot(win, w, axes=([3, 4, 5], [2, 0, 1]))

    def conv_stem(x, w):
        # NCHW input, FCHW filter, stride 2.
        win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], (2, 3))
        return np.tensordot(win[:, :, ::2, ::2], w,
                            axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)

    if name == "jacobi":
        return jacobi
    if name == "conv_3x3":
        return conv_3x3
    if name == "conv_stem":
        return conv_stem
    if name.startswith("matmul") and name.endswith("_bias_relu"):
        return lambda a, b, c: np.maximum(a @ b + c, np.float32(0))
    if name.startswith("matmul") or name.startswith("bmm"):
        return lambda a, b: a @ b
    return {"softmax": softmax, "layernorm": layernorm, "gelu": gelu,
            "ew_chain": chain, "sum_all": lambda x: x.sum()}[name]


def torch_fn(name, k=None):
    F = torch.nn.functional
    if name.startswith("gpt"):
        B, S, H = k["output"]
        N = k["heads"] if "heads" in k else {256: 4, 1024: 16}[H]
        return gpt_torch(B, S, H, N)
    if name.startswith("matmul") and name.endswith("_bias_relu"):
        return lambda a, b, c: torch.relu(torch.addmm(c, a, b))
    if name.startswith("matmul"):
        return torch.mm
    if name.startswith("bmm"):
        return torch.bmm
    if name == "conv_3x3":  # NHWC input, HWCF filter: channels-last views
        return lambda x, w: F.conv2d(x.permute(0, 3, 1, 2),
                                     w.permute(3, 2, 0, 1)).permute(0, 2, 3, 1)
    if name == "conv_stem":
        return lambda x, w: F.conv2d(x, w, stride=2)
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
        "sum_all": lambda x: x.sum(),
    }[name]


def device_check(table, pairs, dev):
    """`check` on PEER_DEVICE: ours and torch-f32 against torch-f64 there."""
    print(f"torch {torch.__version__} on "
          f"{torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev}, "
          "f32 products without TF32", flush=True)
    failed = 0
    for name, path in pairs:
        try:
            k = table[name]
            xs = device_inputs(k, dev)
            check_inputs(k, xs)
            fn = torch_fn(name, k)
            with torch.no_grad():
                want = fn(*[x.double() for x in xs])
                theirs = fn(*xs)
            sync(dev)
            if not os.path.exists(path) or os.path.getsize(path) != 4 * want.numel():
                print(f"{name}: FAIL (no result of ours in {path})", flush=True)
                failed += 1
                continue
            ours = torch.from_numpy(np.fromfile(path, dtype=np.float32)).to(dev).reshape(want.shape)
            scale = max(1.0, want.abs().max().item())
            err = (ours.double() - want).abs().max().item() / scale
            terr = (theirs.double() - want).abs().max().item() / scale
            # The same bound as the CPU check (NaN fails it too).
            ok = err <= 1e-4
            print(f"{name}: ours vs torch-f64 {err:.2e}, torch-f32 vs torch-f64 {terr:.2e} "
                  f"(relative to max |torch-f64| = {scale:.3g}): {'ok' if ok else 'MISMATCH'}",
                  flush=True)
            failed += not ok
            del xs, want, theirs, ours
        except Exception as e:  # one kernel's failure must not hide the others'
            print(f"{name}: FAIL ({type(e).__name__}: {e})", flush=True)
            failed += 1
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    sys.exit(1 if failed else 0)


def device_time(table, names, peer, calls, dev):
    """`time` on PEER_DEVICE: one line per kernel, torch only."""
    failed = 0
    for name in names:
        if peer != "torch":
            print(f"{name} - - -", flush=True)
            continue
        try:
            k = table[name]
            args = device_inputs(k, dev)
            fn = torch_fn(name, k)
            sync(dev)
            times = []
            with torch.no_grad():
                for i in range(calls + 2):
                    t0 = time.perf_counter()
                    fn(*args)
                    sync(dev)
                    t1 = time.perf_counter()
                    if i >= 2:
                        times.append(t1 - t0)
            times.sort()
            med = times[len(times) // 2]
            print(f"{name} {med:.6e} {k['work'] / med / 1e9:.3f} {k['unit']}", flush=True)
            del args
        except Exception as e:
            print(f"{name} FAIL - -", flush=True)
            print(f"peers.py: {name}: {type(e).__name__}: {e}", file=sys.stderr)
            failed += 1
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    sys.exit(1 if failed else 0)


def main():
    table = {k["name"]: k for k in json.load(open(sys.argv[1]))}
    if DEVICE:
        dev = setup_device()
        if sys.argv[2] == "check":
            rest = sys.argv[3:]
            if not rest or len(rest) % 2:
                raise SystemExit("usage: peers.py kernels.json check NAME OURS.bin [NAME OURS.bin ...]")
            device_check(table, list(zip(rest[0::2], rest[1::2])), dev)
        device_time(table, sys.argv[3].split(","), sys.argv[4], int(sys.argv[5]), dev)
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
