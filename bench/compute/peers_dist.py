#!/usr/bin/env python3
"""The torch peer of the 2-rank GPT block (gen_dist.py): two processes
(torch.multiprocessing, gloo on 127.0.0.1), one thread each, each on its
shard: dp runs the block on its half of the batch (no communication in a
forward step); tp is Megatron's tensor parallelism: q/k/v and fc1 split by
output features, the out projection and fc2 by input features, one
torch.distributed.all_reduce after each, biases added once.

  peers_dist.py dp|tp CALLS   prints "gpt_<plan> <median s> <GFLOP/s per rank> GFLOP/s"
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

B, S, H, N = 2, 128, 1024, 16
D = H // N
F = torch.nn.functional


def rnd(*shape):
    g = torch.Generator().manual_seed(sum(shape))
    return torch.rand(*shape, generator=g) - 0.5


def attention(a, wq, bq, wk, bk, wv, bv, heads):
    b = a.shape[0]
    q, k, v = (F.linear(a, w, bb).view(b, S, heads, D).transpose(1, 2)
               for w, bb in ((wq, bq), (wk, bk), (wv, bv)))
    s = (q @ k.transpose(-2, -1)) * (1.0 / D ** 0.5)
    s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), -1e9)
    return (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, S, heads * D)


def run(rank, plan, calls):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29517",
                            rank=rank, world_size=2)
    ln = [torch.ones(H), torch.zeros(H)]
    if plan == "dp":
        x = rnd(B // 2, S, H)
        w = dict(wq=rnd(H, H), wk=rnd(H, H), wv=rnd(H, H), wo=rnd(H, H),
                 w1=rnd(4 * H, H), w2=rnd(H, 4 * H))
        bias = {k: rnd(n) for k, n in (("bq", H), ("bk", H), ("bv", H), ("bo", H),
                                       ("b1", 4 * H), ("b2", H))}

        def step():
            a = F.layer_norm(x, (H,), *ln, 1e-5)
            h = x + F.linear(attention(a, w["wq"], bias["bq"], w["wk"], bias["bk"],
                                       w["wv"], bias["bv"], N), w["wo"], bias["bo"])
            m = F.layer_norm(h, (H,), *ln, 1e-5)
            return h + F.linear(F.gelu(F.linear(m, w["w1"], bias["b1"]), approximate="tanh"),
                                w["w2"], bias["b2"])
    else:
        x = rnd(B, S, H)
        half, ff = H // 2, 2 * H
        w = dict(wq=rnd(half, H), wk=rnd(half, H), wv=rnd(half, H), wo=rnd(H, half),
                 w1=rnd(ff, H), w2=rnd(H, ff))
        bias = {k: rnd(n) for k, n in (("bq", half), ("bk", half), ("bv", half),
                                       ("bo", H), ("b1", ff), ("b2", H))}

        def step():
            a = F.layer_norm(x, (H,), *ln, 1e-5)
            y = F.linear(attention(a, w["wq"], bias["bq"], w["wk"], bias["bk"],
                                   w["wv"], bias["bv"], N // 2), w["wo"])
            dist.all_reduce(y)
            h = x + y + bias["bo"]
            m = F.layer_norm(h, (H,), *ln, 1e-5)
            z = F.linear(F.gelu(F.linear(m, w["w1"], bias["b1"]), approximate="tanh"), w["w2"])
            dist.all_reduce(z)
            return h + z + bias["b2"]

    times = []
    for i in range(calls + 2):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        if i >= 2:
            times.append(t1 - t0)
    times.sort()
    med = times[len(times) // 2]
    flops = (24 * B * S * H * H + 4 * B * S * S * H) / 2
    if rank == 0:
        print(f"gpt_{plan} {med:.6e} {flops / med / 1e9:.3f} GFLOP/s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1], int(sys.argv[2])), nprocs=2)
